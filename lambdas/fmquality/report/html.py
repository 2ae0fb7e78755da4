"""A single-file HTML report (no network use): summary, inline SVG charts, failing items with reasons."""

from __future__ import annotations

import html

from jinja2 import DictLoader, Environment, select_autoescape

from fmquality.report.agreement import kappa_subsets
from fmquality.report.calibration import SUMMARY_COLUMNS, CalibrationReport, summary_rows
from fmquality.schemes.mangaassist import DIMENSIONS
from fmquality.domain.results import EvaluationResult
from fmquality.domain.report import PairedComparison, PairedInterval, RunReport
from fmquality.report.build import MAX_TEXT_IN_REPORT, clip_text

# Every page shares the frame (style and layout); the calibration section appears in the run's
# report and in `fmquality calibrate`'s page.
_TEMPLATES = {
    "page.html": r"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>{% block title %}{% endblock %}</title>
<style>
 body{font:14px/1.45 system-ui,-apple-system,"Segoe UI","Hiragino Sans","Noto Sans JP",sans-serif;margin:2rem;color:#1b1f24;max-width:1100px}
 h1{margin:0 0 .3rem} .muted{color:#57606a} .badge{display:inline-block;padding:.15rem .6rem;border-radius:1rem;color:#fff;font-weight:600}
 .pass{background:#1a7f37} .fail{background:#cf222e} table{border-collapse:collapse;width:100%;margin:.6rem 0 1.4rem}
 th,td{border-bottom:1px solid #d0d7de;padding:.3rem .5rem;text-align:left;vertical-align:top} th{background:#f6f8fa}
 .num{text-align:right;font-variant-numeric:tabular-nums} .grid{display:grid;grid-template-columns:1fr 1fr;gap:1.5rem}
 ul.reasons{margin:.2rem 0;padding-left:1.1rem} .kpi{display:flex;gap:1.5rem;margin:1rem 0} .kpi div{background:#f6f8fa;padding:.6rem 1rem;border-radius:.4rem}
 .kpi b{display:block;font-size:1.4rem}
 .said{white-space:pre-wrap;margin:.15rem 0 .4rem;padding:.3rem .5rem;background:#f6f8fa;border-radius:.3rem;font-size:13px}
 .said.control{background:#eef4fb} .lbl{font-size:12px;color:#57606a;font-weight:600}
</style></head><body>
{% block body %}{% endblock %}
</body></html>
""",
    "report.html": r"""{% extends "page.html" %}
{% block title %}Quality gate {{ 'PASSED' if r.gate.passed else 'FAILED' }} · {{ r.run_id }}{% endblock %}
{% block body %}
<h1>MangaAssist quality gate <span class="badge {{ 'pass' if r.gate.passed else 'fail' }}">{{ 'PASSED' if r.gate.passed else 'FAILED' }}</span></h1>
<div class="muted">run {{ r.run_id }} · dataset {{ r.dataset }}{% if r.catalog %} · catalog {{ r.catalog }}{% endif %} · rubric {{ r.rubric_version }} · judge {{ r.judge }} · engine {{ r.engine }} · trigger {{ r.trigger }}{% if r.baseline_run_id %} · baseline {{ r.baseline_run_id }}{% endif %}</div>
{% if r.filter %}<div class="muted">filter: {{ r.filter }}</div>{% endif %}
{% if r.distribution %}<div class="muted">dataset distribution: by tag {% for k, v in r.distribution.by_tag.items() %}{{ k }} {{ v }}{% if not loop.last %}, {% endif %}{% endfor %} · by complexity {% for k, v in r.distribution.by_complexity.items() %}{{ k }} {{ v }}{% if not loop.last %}, {% endif %}{% endfor %}</div>{% endif %}
<div class="kpi">
 <div><b>{{ r.total_cases }}</b>cases</div><div><b>{{ '%.1f'|format(r.pass_rate*100) }}%</b>pass rate</div>
 <div><b>{{ r.failed_cases }}</b>failed</div><div><b>{{ r.unscored_cases }}</b>unscored</div>
 <div><b>{{ '%.3f'|format(r.mean_composite) if r.mean_composite is not none else '–' }}</b>mean composite</div>
 <div><b>{{ r.judge_usage.calls }}</b>judge calls</div>
</div>
{% if r.grades %}<h2>Letter grades</h2><div class="muted">cases: {% for g, n in r.grades.cases.items() %}{{ g }} {{ n }}{% if not loop.last %}, {% endif %}{% endfor %} · mean total {{ r.grades.mean_total if r.grades.mean_total is not none else '–' }} ({{ r.grades.grade or '–' }})</div>
<table><tr><th>category</th><th class="num">cases</th><th class="num">mean total</th><th>grade</th><th>grades</th></tr>
{% for name, c in r.grades.categories.items() %}<tr><td>{{ name }}</td><td class="num">{{ c.cases }}</td><td class="num">{{ c.mean_total if c.mean_total is not none else '–' }}</td><td>{{ c.grade or '–' }}</td><td>{% for g, n in c.grades.items() %}{{ g }} {{ n }}{% if not loop.last %}, {% endif %}{% endfor %}</td></tr>{% endfor %}</table>{% endif %}
{% if r.gate.reasons %}<h2>Why the gate failed</h2><ul class="reasons">{% for x in r.gate.reasons %}<li>{{ x }}</li>{% endfor %}</ul>{% endif %}
{% if r.regression_flags %}<h2>Regression against the baseline</h2><table><tr><th>subset</th><th class="num">baseline</th><th class="num">candidate</th><th class="num">drop</th><th class="num">allowed</th></tr>
{% for f in r.regression_flags %}<tr><td>{{ f.subset }}</td><td class="num">{{ '%.3f'|format(f.baseline_mean) }}</td><td class="num">{{ '%.3f'|format(f.candidate_mean) }}</td><td class="num">{{ '%.3f'|format(f.drop) }}</td><td class="num">{{ '%.3f'|format(f.allowed_drop) }}</td></tr>{% endfor %}</table>{% endif %}
<div class="grid">
 <div><h2>Pass rate by intent</h2>{{ intent_chart|safe }}</div>
 <div><h2>Average by dimension</h2>{{ dimension_chart|safe }}</div>
</div>
<h2>By intent</h2><table><tr><th>intent</th><th class="num">cases</th><th class="num">passed</th><th class="num">pass rate</th><th class="num">mean composite</th><th class="num">unscored</th></tr>
{% for name, b in r.intent_breakdown.items() %}<tr><td>{{ name }}</td><td class="num">{{ b.total }}</td><td class="num">{{ b.passed }}</td><td class="num">{{ '%.2f'|format(b.pass_rate) }}</td><td class="num">{{ '%.3f'|format(b.avg_score) if b.avg_score is not none else '–' }}</td><td class="num">{{ b.unscored }}</td></tr>{% endfor %}</table>
<h2>By locale</h2><table><tr><th>locale</th><th class="num">cases</th><th class="num">pass rate</th><th class="num">mean composite</th></tr>
{% for name, b in r.locale_breakdown.items() %}<tr><td>{{ name }}</td><td class="num">{{ b.total }}</td><td class="num">{{ '%.2f'|format(b.pass_rate) }}</td><td class="num">{{ '%.3f'|format(b.avg_score) if b.avg_score is not none else '–' }}</td></tr>{% endfor %}</table>
{% if r.monitor %}<h2>Monitor status: {{ r.monitor.status }}</h2><table><tr><th>intent</th><th>locale</th><th>status</th><th class="num">items</th><th class="num">pass rate</th><th class="num">mean composite</th></tr>
{% for s in [r.monitor.overall] + r.monitor.strata %}<tr><td>{{ s.intent or "all" }}</td><td>{{ s.locale or "all" }}</td><td>{{ s.status }}</td><td class="num">{{ s.total }}</td><td class="num">{{ "%.2f"|format(s.pass_rate) if s.pass_rate is not none else "–" }}</td><td class="num">{{ "%.3f"|format(s.mean_composite) if s.mean_composite is not none else "–" }}</td></tr>{% endfor %}</table>{% endif %}
{% if r.calibration %}{% with cal = r.calibration %}{% include "calibration_section.html" %}{% endwith %}{% endif %}
{% if r.paired %}{% with p = r.paired %}<h2>Candidate against control (paired)</h2>
<p class="muted">{{ p.pairs }} case(s) scored in both arms{% if p.unpaired %}, {{ p.unpaired|length }} unpaired ({{ p.unpaired[:10]|join(', ') }}{% if p.unpaired|length > 10 %} …{% endif %}){% endif %} ·
control pass rate {{ '%.2f'|format(p.control_pass_rate) }}{% if p.control_mean_composite is not none %}, mean composite {{ '%.3f'|format(p.control_mean_composite) }}{% endif %} ·
mean of candidate − control with its {{ '%.0f'|format(p.confidence*100) }}% bootstrap interval ({{ p.resamples }} resamples, seed {{ p.seed }});
a subset regresses when its whole interval lies left of its allowed drop (red tick).</p>
{{ paired_chart|safe }}
<h3>Per-case differences, worst first</h3>{{ difference_strip|safe }}
{% endwith %}{% endif %}
{% for arm, t in [('candidate', r.target), ('control', r.control_target)] if t and t.incomplete_answers %}<h2>Incomplete answers, scored and flagged ({{ arm }}: {{ t.incomplete_answers|length }})</h2>
<p class="muted">The target stopped before finishing these answers (the rubric's generation.fail_incomplete is false, so they were scored).</p>
<table><tr><th>test</th><th>stop reason</th><th class="num">score</th><th>passed</th></tr>
{% for x in t.incomplete_answers %}<tr><td>{{ x.test_id }}</td><td>{{ x.stop_reason }}</td><td class="num">{{ '%.3f'|format(x.composite_score) if x.composite_score is not none else '–' }}</td><td>{{ 'yes' if x.passed else 'no' }}</td></tr>{% endfor %}</table>
{% endfor %}<h2>Failing items ({{ failing|length }})</h2>
<table><tr><th>test</th><th>intent</th><th>locale</th><th class="num">score</th><th class="num">threshold</th><th>what was said</th><th>reasons</th></tr>
{% for x in failing %}<tr><td>{{ x.test_id }}</td><td>{{ x.intent }}</td><td>{{ x.locale }}</td><td class="num">{{ '%.3f'|format(x.composite_score) if x.composite_score is not none else x.status }}</td><td class="num">{{ '%.2f'|format(x.threshold) }}</td>
<td>{% if x.query is not none %}<div class="lbl">query</div><div class="said">{{ clip(x.query) }}</div>{% endif %}<div class="lbl">answer</div><div class="said">{{ clip(x.response) if x.response is not none else '(no answer)' }}</div>{% if paired_run %}<div class="lbl">control's answer{% if control_scores.get(x.test_id) is not none %} ({{ '%.3f'|format(control_scores[x.test_id]) }}){% endif %}</div><div class="said control">{{ clip(control_answers[x.test_id]) if control_answers.get(x.test_id) is not none else '(no answer)' }}</div>{% endif %}</td>
<td><ul class="reasons">{% for why in x.failure_reasons %}<li>{{ why }}</li>{% endfor %}</ul></td></tr>{% endfor %}
</table>
{% endblock %}
""",
    "calibration_section.html": r"""<h2>Agreement with the human labels</h2>
<p>{{ cal.acceptable_failed }}/{{ cal.acceptable }} acceptable items failed{% if cal.acceptable_failed_rate is not none %} ({{ '%.1f'|format(cal.acceptable_failed_rate*100) }}%){% endif %} ·
{{ cal.defective_passed }}/{{ cal.defective }} defective items passed{% if cal.defective_passed_rate is not none %} ({{ '%.1f'|format(cal.defective_passed_rate*100) }}%){% endif %}.
Cohen's kappa of the item verdicts with <code>label.acceptable</code>, and the 2×2 table it comes from:</p>
<table><tr><th>subset</th><th class="num">labelled</th><th class="num">kappa</th><th class="num">passed · acceptable</th><th class="num">passed · defective</th><th class="num">failed · acceptable</th><th class="num">failed · defective</th></tr>
{% macro kappa_row(name, k) %}<tr><td>{{ name }}</td><td class="num">{{ k.n }}</td><td class="num">{{ '%.3f'|format(k.value) if k.value is not none else k.undefined_reason }}</td><td class="num">{{ k.passed_acceptable }}</td><td class="num">{{ k.passed_defective }}</td><td class="num">{{ k.failed_acceptable }}</td><td class="num">{{ k.failed_defective }}</td></tr>{% endmacro %}
{% for name, k in kappa_subsets(cal) %}{{ kappa_row(name, k) }}{% endfor %}</table>
""",
    "calibration.html": r"""{% extends "page.html" %}
{% block title %}Calibration · {{ c.generated_at }}{% endblock %}
{% block body %}
<h1>Calibration against human judgments</h1>
<div class="muted">{% if c.plan %}plan {{ c.plan }} · {% endif %}generated {{ c.generated_at }} · Spearman's rho and Kendall's tau-b of a score with a rating; items without a score or a rating are left out, never imputed</div>
<h2>Summary</h2><table><tr>{% for h in columns %}<th{% if h not in ('set', 'pair') %} class="num"{% endif %}>{{ h }}</th>{% endfor %}</tr>
{% for row in rows %}<tr>{% for h in columns %}<td{% if h not in ('set', 'pair') %} class="num"{% endif %}>{{ row[h] }}</td>{% endfor %}</tr>{% endfor %}</table>
{% for s in c.sets if not s.skipped %}<h2>{{ s.name }}</h2>
<div class="muted">{{ s.dataset }} · {{ s.items }} lines · {% if s.results_file %}results {{ s.results_file }}{% else %}scored with judge {{ s.judge }}{% endif %}{% if s.rubric_version %} · rubric {{ s.rubric_version }}{% endif %}{% if s.missing_results %} · {{ s.missing_results }} line(s) without a result{% endif %}</div>
{% if s.correlations %}<table><tr><th>score</th><th>rating</th><th class="num">n</th><th class="num">rho</th><th class="num">tau-b</th><th class="num">unscored</th><th class="num">not applicable</th><th class="num">unrated</th></tr>
{% for x in s.correlations %}<tr><td>{{ x.score }}{% if x.info %} (info){% endif %}</td><td>{{ x.human }}</td><td class="num">{{ x.n }}</td><td class="num">{{ '%.3f'|format(x.rho) if x.rho is not none else x.undefined_reason }}</td><td class="num">{{ '%.3f'|format(x.tau_b) if x.tau_b is not none else '–' }}</td><td class="num">{{ x.unscored }}</td><td class="num">{{ x.not_applicable }}</td><td class="num">{{ x.unrated }}</td></tr>{% endfor %}</table>{% endif %}
{% if s.calibration %}{% with cal = s.calibration %}{% include "calibration_section.html" %}{% endwith %}{% endif %}
{% endfor %}
{% if c.checks %}<h2>Checks on the labelled answers</h2>
<p class="muted">Each hard-failure rule, and each sub-score a check (not a judge) set below 1.0: the acceptable and defective answers it fired on. A highlighted row fired on an acceptable answer: the check must be fixed or demoted.</p>
{% if c.checks.rows %}<table><tr><th>check</th><th>kind</th>{% for name in c.checks.sets %}<th class="num">{{ name }} · acceptable</th><th class="num">{{ name }} · defective</th>{% endfor %}</tr>
{% for row in c.checks.rows %}<tr{% if row.flagged %} class="flagged" style="background:#ffebe9"{% endif %}><td>{% if row.flagged %}<b>! {{ row.check }}</b>{% else %}{{ row.check }}{% endif %}</td><td>{{ 'hard failure' if row.kind == 'hard_failure' else 'sub-score' }}</td>{% for name in c.checks.sets %}{% with x = row.by_set[name] %}<td class="num">{{ x.fired_acceptable }}/{{ x.acceptable }}</td><td class="num">{{ x.fired_defective }}/{{ x.defective }}</td>{% endwith %}{% endfor %}</tr>{% endfor %}</table>
{% else %}<p>No check fired on a labelled answer.</p>{% endif %}{% endif %}
{% if c.fit %}{% with f = c.fit %}<h2>Threshold fit</h2>
<p class="muted">Per intent, on {{ f.sets|join(', ') or 'no set' }} pooled: the highest threshold at which at most ⌊{{ f.target_fpr }} × acceptable⌋ acceptable items fail (searched over the intent's composites rounded down to 2 decimals and its current threshold); items failing for another reason than their composite fail whatever the threshold. Rubric {{ f.rubric }}{% if f.rubric_version %} ({{ f.rubric_version }}){% endif %}; the edit below is proposed, never applied.</p>
{% macro fit_counts(x) %}<td class="num">{{ x.acceptable_failed_now }}/{{ x.acceptable }}</td><td class="num">{{ x.acceptable_failed_proposed }}/{{ x.acceptable }}</td><td class="num">{{ x.defective_passed_now }}/{{ x.defective }}</td><td class="num">{{ x.defective_passed_proposed }}/{{ x.defective }}</td>{% endmacro %}
<table><tr><th>intent</th><th class="num">current</th><th class="num">proposed</th><th class="num">allowed</th><th class="num">fixed failures</th><th class="num">acceptable failing now</th><th class="num">at the proposal</th><th class="num">defective passing now</th><th class="num">at the proposal</th><th>note</th></tr>
{% for x in f.intents %}<tr><td>{% if x.changed %}<b>{{ x.name }}</b>{% else %}{{ x.name }}{% endif %}</td><td class="num">{{ '%.2f'|format(x.current) }}</td><td class="num">{{ '%.2f'|format(x.proposed) }}</td><td class="num">{{ x.allowed }}</td><td class="num">{{ x.fixed_failures }}</td>{{ fit_counts(x) }}<td>{{ x.note or '' }}</td></tr>{% endfor %}
<tr><td><b>all</b></td><td></td><td></td><td></td><td></td>{{ fit_counts(f.overall) }}<td></td></tr></table>
<table><tr><th>locale</th><th class="num">acceptable failing now</th><th class="num">at the proposal</th><th class="num">defective passing now</th><th class="num">at the proposal</th></tr>
{% for x in f.locales %}<tr><td>{{ x.name }}</td>{{ fit_counts(x) }}</tr>{% endfor %}</table>
{% for note in f.notes %}<p class="muted">{{ note }}</p>{% endfor %}
{% if f.diff %}<pre class="said">{{ f.diff }}</pre>{% else %}<p>No threshold changes.</p>{% endif %}
{% endwith %}{% endif %}
{% if c.signals %}{% with g = c.signals %}<h2>Agreement of the judge's signals with the labels</h2>
<p class="muted">Judge {{ g.judge }}, on {{ g.measured_on|join(', ') or 'no set' }}: the AUC of each judged sub-score's value, acceptable against defective answers (ties one half); weight = max(0, 2 × AUC − 1), 0 below 10 answers a side.</p>
<table><tr><th>sub-score</th><th class="num">AUC</th><th class="num">acceptable</th><th class="num">defective</th><th class="num">weight</th></tr>
{% for name, x in g.signals.items() %}<tr><td>{{ name }}</td><td class="num">{{ '%.3f'|format(x.auc) if x.auc is not none else '–' }}</td><td class="num">{{ x.acceptable }}</td><td class="num">{{ x.defective }}</td><td class="num">{{ '%.3f'|format(x.weight) }}</td></tr>{% endfor %}</table>
{% endwith %}{% endif %}
{% endblock %}
""",
}

_ENV = Environment(loader=DictLoader(_TEMPLATES), autoescape=select_autoescape(default=True, default_for_string=True))
_ENV.globals["kappa_subsets"] = kappa_subsets


def bar_chart_svg(values: dict[str, float | None], *, threshold: float | None = None, width: int = 480) -> str:
    """Horizontal bars for 0..1 values, with an optional threshold line."""
    row, label_w, pad = 22, 140, 6
    height = row * max(len(values), 1) + pad * 2
    plot_w = width - label_w - 50
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img">']
    for i, (name, value) in enumerate(values.items()):
        y = pad + i * row
        v = 0.0 if value is None else max(0.0, min(1.0, value))
        colour = "#1a7f37" if threshold is None or v >= threshold else "#cf222e"
        parts.append(f'<text x="{label_w - 6}" y="{y + 15}" text-anchor="end" font-size="12">{_esc(name)}</text>')
        parts.append(f'<rect x="{label_w}" y="{y + 3}" width="{plot_w * v:.1f}" height="{row - 8}" fill="{colour}"/>')
        text = "–" if value is None else f"{value:.2f}"
        parts.append(f'<text x="{label_w + plot_w * v + 4:.1f}" y="{y + 15}" font-size="12">{text}</text>')
    if threshold is not None:
        x = label_w + plot_w * threshold
        parts.append(f'<line x1="{x:.1f}" y1="0" x2="{x:.1f}" y2="{height}" stroke="#57606a" stroke-dasharray="4 3"/>')
    parts.append("</svg>")
    return "".join(parts)


def _esc(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def paired_chart_svg(paired: PairedComparison, width: int = 900) -> str:
    """One row per subset (overall first): its bootstrap interval as a horizontal bar, the mean as a
    dot, against zero (solid line) and the subset's allowed drop (red tick). Regressed rows are
    highlighted."""
    rows: list[PairedInterval] = ([paired.overall] if paired.overall else []) + list(paired.subsets)
    if not rows:
        return '<p class="muted">Too few pairs for an interval.</p>'
    row, label_w, text_w, pad = 22, 190, 230, 8
    plot_w = width - label_w - text_w
    low = min(min(i.ci_low for i in rows), min(-i.allowed_drop for i in rows), 0.0)
    high = max(max(i.ci_high for i in rows), 0.0)
    span = (high - low) or 0.01
    low, high = low - span * 0.05, high + span * 0.05

    def x(value: float) -> float:
        return label_w + (value - low) / (high - low) * plot_w

    height = pad * 2 + row * len(rows) + 16
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
             f'aria-label="paired differences by subset">']
    for i, interval in enumerate(rows):
        y = pad + i * row
        if interval.regressed:
            parts.append(f'<rect x="0" y="{y}" width="{width}" height="{row}" fill="#ffebe9" '
                         f'data-subset="{html.escape(interval.subset, quote=True)}" class="regressed"/>')
        colour = "#cf222e" if interval.regressed else "#0969da"
        parts.append(f'<text x="{label_w - 8}" y="{y + 15}" text-anchor="end" font-size="12">'
                     f'{_esc(interval.subset)} (n={interval.n})</text>')
        parts.append(f'<rect x="{x(interval.ci_low):.1f}" y="{y + 7}" '
                     f'width="{max(1.0, x(interval.ci_high) - x(interval.ci_low)):.1f}" height="{row - 14}" '
                     f'fill="{colour}" opacity="0.55"/>')
        parts.append(f'<circle cx="{x(interval.mean_difference):.1f}" cy="{y + row / 2}" r="3.5" fill="{colour}"/>')
        tick = x(-interval.allowed_drop)
        parts.append(f'<line x1="{tick:.1f}" y1="{y + 3}" x2="{tick:.1f}" y2="{y + row - 3}" stroke="#cf222e" '
                     f'stroke-width="1.5" stroke-dasharray="3 2"/>')
        parts.append(f'<text x="{label_w + plot_w + 8}" y="{y + 15}" font-size="12">'
                     f'{interval.mean_difference:+.3f} [{interval.ci_low:+.3f}, {interval.ci_high:+.3f}]'
                     f'{" regressed" if interval.regressed else ""}</text>')
    zero = x(0.0)
    bottom = pad + row * len(rows)
    parts.append(f'<line x1="{zero:.1f}" y1="{pad}" x2="{zero:.1f}" y2="{bottom}" stroke="#1b1f24"/>')
    for value in (low, 0.0, high):
        parts.append(f'<text x="{x(value):.1f}" y="{bottom + 13}" text-anchor="middle" font-size="11" '
                     f'fill="#57606a">{value:+.3f}</text>')
    parts.append("</svg>")
    return "".join(parts)


def difference_strip_svg(paired: PairedComparison, width: int = 900, height: int = 120) -> str:
    """The per-case differences sorted ascending, one bar each from zero (red below, green above)."""
    values = [i.difference for i in paired.items if i.difference is not None]
    if not values:
        return '<p class="muted">No case scored in both arms.</p>'
    extent = max(abs(v) for v in values) or 0.01
    pad, axis_w = 6, 50
    plot_w, mid = width - axis_w - pad, height / 2
    step = plot_w / len(values)
    scale = (height / 2 - pad) / extent
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
             f'aria-label="per-case differences">']
    for k, value in enumerate(values):
        if value == 0:
            continue
        h = abs(value) * scale
        y = mid - h if value > 0 else mid
        colour = "#1a7f37" if value > 0 else "#cf222e"
        parts.append(f'<rect x="{axis_w + k * step:.2f}" y="{y:.1f}" width="{max(step - 0.5, 0.5):.2f}" '
                     f'height="{max(h, 0.5):.1f}" fill="{colour}"/>')
    parts.append(f'<line x1="{axis_w}" y1="{mid}" x2="{width - pad}" y2="{mid}" stroke="#1b1f24"/>')
    parts.append(f'<text x="{axis_w - 4}" y="{pad + 9}" text-anchor="end" font-size="11" fill="#57606a">+{extent:.2f}</text>')
    parts.append(f'<text x="{axis_w - 4}" y="{mid + 4}" text-anchor="end" font-size="11" fill="#57606a">0</text>')
    parts.append(f'<text x="{axis_w - 4}" y="{height - pad}" text-anchor="end" font-size="11" fill="#57606a">−{extent:.2f}</text>')
    zeros = sum(1 for v in values if v == 0)
    parts.append(f'<text x="{width - pad}" y="{height - pad}" text-anchor="end" font-size="11" fill="#57606a">'
                 f'{len(values)} pairs, {zeros} unchanged</text>')
    parts.append("</svg>")
    return "".join(parts)


def render_html(report: RunReport, results: list[EvaluationResult], rubric_min_pass_rate: float = 0.9,
                control_results: list[EvaluationResult] | None = None) -> str:
    """``control_results`` (a paired run) gives the control's answer beside each failing item; without
    it the answer comes from report.json's failing items (clipped there)."""
    failing = sorted((r for r in results if not r.passed), key=lambda r: (r.intent, r.test_id))
    paired_run = report.paired is not None or control_results is not None
    if control_results is not None:
        control_answers = {r.test_id: r.response for r in control_results}
        control_scores = {r.test_id: r.composite_score for r in control_results}
    else:
        control_answers = {x["test_id"]: x.get("control_response") for x in report.failing_items}
        control_scores = {x["test_id"]: x.get("control_score") for x in report.failing_items}
    return _ENV.get_template("report.html").render(
        r=report,
        failing=failing,
        intent_chart=bar_chart_svg({k: b.pass_rate for k, b in report.intent_breakdown.items()},
                                   threshold=rubric_min_pass_rate),
        dimension_chart=bar_chart_svg(dict(report.dimension_averages) or {d: None for d in DIMENSIONS}),
        paired_chart=paired_chart_svg(report.paired) if report.paired else "",
        difference_strip=difference_strip_svg(report.paired) if report.paired else "",
        paired_run=paired_run,
        control_answers=control_answers,
        control_scores=control_scores,
        clip=lambda text: clip_text(text, MAX_TEXT_IN_REPORT),
    )


def render_calibration_html(report: CalibrationReport) -> str:
    return _ENV.get_template("calibration.html").render(c=report, rows=summary_rows(report), columns=SUMMARY_COLUMNS)
