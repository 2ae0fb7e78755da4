"""The HTML pages: the run's report.html (built by ``report.page``: items table, details, paired
views, trend) and the calibration page of `fmquality calibrate`. The charts are ``report.charts``'."""

from __future__ import annotations

from jinja2 import DictLoader, Environment, select_autoescape

from fmquality.domain.report import RunReport
from fmquality.domain.results import EvaluationResult
from fmquality.report.agreement import kappa_subsets
from fmquality.report.calibration import SUMMARY_COLUMNS, CalibrationReport, summary_rows
from fmquality.report.page import render_report_html
from fmquality.report.page_assets import CALIBRATION_SECTION

# The calibration page's frame; its per-set agreement section is the run page's too (page_assets).
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
{% if s.calibration %}{% with cal = s.calibration, judge = s.judge %}{% include "calibration_section.html" %}{% endwith %}{% endif %}
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

_TEMPLATES["calibration_section.html"] = CALIBRATION_SECTION

_ENV = Environment(loader=DictLoader(_TEMPLATES), autoescape=select_autoescape(default=True, default_for_string=True))
_ENV.globals["kappa_subsets"] = kappa_subsets


def render_html(report: RunReport, results: list[EvaluationResult], rubric_min_pass_rate: float = 0.9,
                control_results: list[EvaluationResult] | None = None) -> str:
    """The run's report.html from results in memory (``report.page``); ``control_results`` (a paired
    run) gives the control's answer beside each item."""
    return render_report_html(report, results, rubric_min_pass_rate, control_results)


def render_calibration_html(report: CalibrationReport) -> str:
    return _ENV.get_template("calibration.html").render(c=report, rows=summary_rows(report), columns=SUMMARY_COLUMNS)
