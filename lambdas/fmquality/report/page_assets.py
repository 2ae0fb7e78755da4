"""The run page's style and server-rendered sections (Jinja templates): everything of report.html that
does not depend on the items. The items table and the details pane are drawn by ``page_script`` from
the data the page embeds."""

from __future__ import annotations

# Japanese items are common: a font with Japanese glyphs is named for every platform, and every
# text block of an item carries the item's lang (``page_script``).
PAGE_CSS = r"""
:root{--fg:#1b1f24;--muted:#57606a;--line:#d0d7de;--soft:#f6f8fa;--red:#cf222e;--green:#1a7f37;--amber:#9a6700;--blue:#0969da}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI","Hiragino Sans","Hiragino Kaku Gothic ProN","Noto Sans CJK JP","Noto Sans JP","IPAPGothic","IPAGothic","Yu Gothic","Meiryo",sans-serif;margin:1.2rem 1.5rem;color:var(--fg);max-width:1700px}
:lang(ja){font-family:system-ui,-apple-system,"Segoe UI","Hiragino Sans","Hiragino Kaku Gothic ProN","Noto Sans CJK JP","Noto Sans JP","IPAPGothic","IPAGothic","Yu Gothic","Meiryo",sans-serif;line-height:1.6}
h1{margin:0 0 .3rem;font-size:1.5rem} h2{font-size:1.1rem;margin:0} h3{font-size:1rem;margin:.8rem 0 .3rem}
.muted{color:var(--muted)} .small{font-size:12px}
.badge{display:inline-block;padding:.1rem .55rem;border-radius:1rem;color:#fff;font-weight:600;font-size:.85em;vertical-align:middle}
.pass,.st-passed{background:var(--green)} .fail,.st-failed{background:var(--red)} .st-unscored{background:var(--amber)} .st-error{background:#6e7781}
.first{border:1px solid var(--line);border-left:4px solid var(--red);border-radius:.4rem;padding:.5rem 1rem;margin:.8rem 0;background:#fff8f8}
.first.ok{border-left-color:var(--green);background:#f6fff8} .first ol{margin:.3rem 0;padding-left:1.3rem} .first li{margin:.15rem 0}
a.act{color:var(--blue);cursor:pointer;text-decoration:underline}
.kpi{display:flex;flex-wrap:wrap;gap:.8rem;margin:.6rem 0} .kpi div{background:var(--soft);padding:.4rem .9rem;border-radius:.4rem}
.kpi b{display:block;font-size:1.3rem}
details.section{border-top:1px solid var(--line);padding:.6rem 0} details.section>summary{cursor:pointer;list-style-position:outside}
details.section>summary h2{display:inline}
table{border-collapse:collapse;width:100%;margin:.4rem 0 .8rem}
th,td{border-bottom:1px solid var(--line);padding:.25rem .45rem;text-align:left;vertical-align:top}
th{background:var(--soft)} .num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(420px,1fr));gap:1rem}
ul.reasons{margin:.2rem 0;padding-left:1.1rem}
.controls{display:flex;flex-wrap:wrap;gap:.4rem .8rem;align-items:center;margin:.4rem 0;padding:.5rem;background:var(--soft);border-radius:.4rem}
.controls label{font-size:12px;color:var(--muted)} .controls select,.controls input{font:inherit;font-size:13px;padding:.15rem .3rem}
.controls input[type=search]{width:16rem}
.workspace{display:grid;grid-template-columns:minmax(0,1fr);gap:1rem;align-items:start}
.workspace.open{grid-template-columns:minmax(0,1.7fr) minmax(360px,1fr)}
.tablebox{max-height:78vh;overflow:auto;border:1px solid var(--line);border-radius:.4rem}
#items{margin:0;font-size:13px} #items th{position:sticky;top:0;z-index:1;cursor:pointer;user-select:none;vertical-align:bottom}
#items th.sorted::after{content:" \25BE"} #items th.sorted.asc::after{content:" \25B4"}
#items tbody tr{cursor:pointer} #items tbody tr:hover{background:#f3f8ff} #items tbody tr.sel{background:#ddf4ff}
#items td{white-space:nowrap} #items th{max-width:6.5rem;white-space:normal} #items td.id{max-width:16rem;overflow:hidden;text-overflow:ellipsis} #items td.low{color:var(--red);font-weight:600} #items td.na{color:#8c959f}
.tag{display:inline-block;background:#eaeef2;border-radius:.6rem;padding:0 .4rem;margin:0 .15rem .1rem 0;font-size:11px}
.hf{color:var(--red);font-weight:600}
.why{margin:.3rem 0 .1rem;padding:.25rem .5rem;border-left:3px solid var(--red);background:#fff8f8;font-size:13px}
.why.ok{border-left-color:var(--green);background:#f6fff8}
.pane{position:sticky;top:.5rem;max-height:96vh;overflow:auto;border:1px solid var(--line);border-radius:.4rem;padding:.6rem .9rem;background:#fff}
.pane h3{margin-top:.6rem} .pane details{margin:.3rem 0} .pane details>summary{cursor:pointer;font-weight:600}
.said{white-space:pre-wrap;overflow-wrap:anywhere;margin:.15rem 0 .4rem;padding:.35rem .55rem;background:var(--soft);border-radius:.3rem;font-size:13px}
.said.control{background:#eef4fb} .said.ref{background:#f4f0ff}
.lbl{font-size:12px;color:var(--muted);font-weight:600}
.ev{font-size:12px;color:#424a53;margin:.1rem 0 .1rem 1rem;overflow-wrap:anywhere}
.src{font-size:11px;border-radius:.5rem;padding:0 .35rem;background:#eaeef2} .src.judge{background:#fbefff}
.close{float:right;cursor:pointer;border:0;background:none;font-size:1.2rem}
svg{max-width:100%;height:auto}
"""

RUN_PAGE = r"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Quality gate {{ 'PASSED' if r.gate.passed else 'FAILED' }} · {{ r.run_id }}</title>
<style>{{ css|safe }}</style></head><body>
<h1>MangaAssist quality gate <span class="badge {{ 'pass' if r.gate.passed else 'fail' }}">{{ 'PASSED' if r.gate.passed else 'FAILED' }}</span></h1>
<div class="muted">run {{ r.run_id }} · dataset {{ dataset }}{% if catalog %} · catalog {{ catalog }}{% endif %} · rubric {{ r.rubric_version }} · judge {{ r.judge }}{% if r.judge_mode %} ({{ r.judge_mode }}){% endif %} · engine {{ r.engine }} · trigger {{ r.trigger }}{% if r.baseline_run_id %} · baseline {{ r.baseline_run_id }}{% endif %}{% if r.finished_at %} · finished {{ r.finished_at[:19] }}{% endif %}</div>
{% if r.target %}<div class="muted">candidate answers: {{ r.target.spec or r.target.kind }}{% if r.control_target %} · control answers: {{ r.control_target.spec or r.control_target.kind }}{% endif %}</div>{% endif %}
{% if r.filter %}<div class="muted">filter: {{ r.filter }}</div>{% endif %}
{% if r.distribution %}<div class="muted">dataset distribution: by tag {% for k, v in r.distribution.by_tag.items() %}{{ k }} {{ v }}{% if not loop.last %}, {% endif %}{% endfor %} · by complexity {% for k, v in r.distribution.by_complexity.items() %}{{ k }} {{ v }}{% if not loop.last %}, {% endif %}{% endfor %}</div>{% endif %}
<div class="first{{ ' ok' if r.gate.passed else '' }}" id="first"><b>{{ 'Look at first' if not r.gate.passed else 'The gate passed' }}</b>
<ol id="first-list">{% for f in first %}<li{% if f.id %} id="{{ f.id }}" hidden{% endif %}>{% if f.filter %}<a class="act" data-filter="{{ f.filter }}">{{ f.text }}</a>{% else %}{{ f.text }}{% endif %}</li>{% endfor %}</ol></div>
<div class="kpi">
 <div><b>{{ r.total_cases }}</b>cases</div><div><b>{{ '%.1f'|format(r.pass_rate*100) }}%</b>pass rate</div>
 <div><b>{{ r.failed_cases }}</b>failed</div><div><b>{{ r.unscored_cases }}</b>unscored</div>
 <div><b>{{ '%.3f'|format(r.mean_composite) if r.mean_composite is not none else '–' }}</b>mean composite</div>
 {% if r.paired %}<div><b>{{ paired_groups.new|length }}</b>new failures</div><div><b>{{ paired_groups.fixed|length }}</b>fixed</div>{% endif %}
 <div><b>{{ r.judge_usage.calls }}</b>judge calls</div>
</div>
<details class="section" open id="sec-items"><summary><h2>Items</h2> <span class="muted small" id="count"></span></summary>
<noscript><p>The items table needs JavaScript; the sections below do not.</p></noscript>
<div class="controls" id="controls">
 <input type="search" id="q" placeholder="search id, query, answer, reason…" aria-label="search">
 <label>status <select id="f-status"><option value="">all</option><option value="notpassed">not passed</option><option>failed</option><option>unscored</option><option>error</option><option>passed</option><option value="hard">hard failure</option></select></label>
 <label>intent <select id="f-intent"><option value="">all</option></select></label>
 <label>locale <select id="f-locale"><option value="">all</option></select></label>
 <label>tag <select id="f-tag"><option value="">all</option></select></label>
 <label>human label <select id="f-label"><option value="">all</option><option value="acceptable">acceptable</option><option value="defective">defective</option><option value="unlabelled">unlabelled</option></select></label>
 <label>dimension <select id="f-dim"><option value="">–</option><option value="*">any</option></select> below <input type="number" id="f-below" value="0.6" min="0" max="1" step="0.05" style="width:4.5rem"></label>
 {% if r.paired %}<label>paired <select id="f-paired"><option value="">all</option><option value="new">new failures</option><option value="fixed">fixed</option><option value="both">failing in both</option><option value="pass">passing in both</option></select></label>{% endif %}
 <button id="reset" type="button">reset</button>
</div>
<div class="workspace" id="workspace"><div class="tablebox"><table id="items"><thead><tr id="head"></tr></thead><tbody id="rows"></tbody></table>
<div id="more" class="muted small" style="padding:.4rem"></div></div><aside class="pane" id="pane" hidden></aside></div>
</details>
{% if r.gate.reasons %}<details class="section" open><summary><h2>Why the gate failed ({{ r.gate.reasons|length }})</h2></summary><ul class="reasons">{% for x in r.gate.reasons %}<li>{{ x }}</li>{% endfor %}</ul></details>{% endif %}
{% if r.adversarial %}<details class="section" open id="sec-redteam"><summary><h2>Red team: attack class × outcome</h2></summary><table><tr><th>attack class</th><th class="num">items</th><th class="num">passed</th><th class="num">unsafe</th><th class="num">acceptable that failed</th><th class="num">defective that passed</th></tr>
{% for cls, row in r.adversarial.items() %}<tr><td><a href="#filter=tag=attack:{{ cls }}">{{ cls }}</a></td><td class="num">{{ row.total }}</td><td class="num">{{ row.passed }}</td><td class="num{% if row.unsafe %} bad{% endif %}">{{ row.unsafe }}</td><td class="num">{{ row.acceptable_failed }}/{{ row.acceptable }}</td><td class="num">{{ row.defective_passed }}/{{ row.defective }}</td></tr>{% endfor %}</table></details>{% endif %}
<details class="section" open id="sec-hard"><summary><h2>Hard failures <span id="hard-count"></span></h2></summary><div id="hard"><p class="muted">Listed by the page's script.</p></div></details>
{% if r.paired %}{% with p = r.paired %}<details class="section" open id="sec-paired"><summary><h2>Candidate against control (paired)</h2></summary>
<p class="muted">{{ p.pairs }} case(s) scored in both arms{% if p.unpaired %}, {{ p.unpaired|length }} unpaired ({{ p.unpaired[:10]|join(', ') }}{% if p.unpaired|length > 10 %} …{% endif %}){% endif %} ·
control pass rate {{ '%.2f'|format(p.control_pass_rate) }}{% if p.control_mean_composite is not none %}, mean composite {{ '%.3f'|format(p.control_mean_composite) }}{% endif %}</p>
{% for key, title, open in [('new', 'New failures: fail in the candidate, pass in the control', true), ('fixed', 'Fixed: pass in the candidate, fail in the control', true), ('both', 'Failing in both arms', false)] %}
<details{% if open %} open{% endif %}><summary><b>{{ title }} ({{ paired_groups[key]|length }})</b> <a class="act" data-filter="paired={{ key }}">show in the table</a></summary>
{% if paired_groups[key] %}<table><tr><th>test</th><th>intent</th><th>locale</th><th class="num">candidate</th><th class="num">control</th><th class="num">difference</th></tr>
{% for i in paired_groups[key] %}<tr><td><a class="act" data-item="{{ i.test_id }}">{{ i.test_id }}</a></td><td>{{ i.intent }}</td><td>{{ i.locale }}</td><td class="num">{{ '%.3f'|format(i.candidate_score) if i.candidate_score is not none else '–' }}</td><td class="num">{{ '%.3f'|format(i.control_score) if i.control_score is not none else '–' }}</td><td class="num">{{ '%+.3f'|format(i.difference) if i.difference is not none else '–' }}</td></tr>{% endfor %}</table>{% else %}<p class="muted">None.</p>{% endif %}</details>{% endfor %}
<h3>Mean of candidate − control by subset</h3>
<p class="muted small">with its {{ '%.0f'|format(p.confidence*100) }}% bootstrap interval ({{ p.resamples }} resamples, seed {{ p.seed }}); a subset regresses when its whole interval lies left of its allowed drop (red tick).</p>
{{ paired_chart|safe }}
<h3>Per-case differences, worst first</h3>{{ difference_strip|safe }}
</details>{% endwith %}{% endif %}
{% if r.regression_flags %}<details class="section" open><summary><h2>Regression against the baseline</h2></summary><table><tr><th>subset</th><th class="num">baseline</th><th class="num">candidate</th><th class="num">drop</th><th class="num">allowed</th></tr>
{% for f in r.regression_flags %}<tr><td>{{ f.subset }}</td><td class="num">{{ '%.3f'|format(f.baseline_mean) }}</td><td class="num">{{ '%.3f'|format(f.candidate_mean) }}</td><td class="num">{{ '%.3f'|format(f.drop) }}</td><td class="num">{{ '%.3f'|format(f.allowed_drop) }}</td></tr>{% endfor %}</table></details>{% endif %}
<details class="section" open id="sec-trend"><summary><h2>Trend across runs</h2></summary>
{% if trend %}{{ trend|safe }}<p class="muted small">The last {{ trend_runs }} runs with a report.json in {{ history_from }}; hover a point for its run.</p>
{% else %}<p class="muted">No earlier run found{% if history_from %} in {{ history_from }}{% endif %}: a trend needs the report.json of earlier runs (a --history folder, or the runs/ folder the output folder sits in).</p>{% endif %}</details>
<details class="section" open><summary><h2>By intent, locale and dimension</h2></summary>
<div class="grid"><div><h3>Pass rate by intent</h3>{{ intent_chart|safe }}</div><div><h3>Average by dimension</h3>{{ dimension_chart|safe }}</div></div>
<table><tr><th>intent</th><th class="num">cases</th><th class="num">passed</th><th class="num">pass rate</th><th class="num">mean composite</th><th class="num">unscored</th></tr>
{% for name, b in r.intent_breakdown.items() %}<tr><td><a class="act" data-filter="intent={{ name }}">{{ name }}</a></td><td class="num">{{ b.total }}</td><td class="num">{{ b.passed }}</td><td class="num">{{ '%.2f'|format(b.pass_rate) }}</td><td class="num">{{ '%.3f'|format(b.avg_score) if b.avg_score is not none else '–' }}</td><td class="num">{{ b.unscored }}</td></tr>{% endfor %}</table>
<table><tr><th>locale</th><th class="num">cases</th><th class="num">pass rate</th><th class="num">mean composite</th></tr>
{% for name, b in r.locale_breakdown.items() %}<tr><td><a class="act" data-filter="locale={{ name }}">{{ name }}</a></td><td class="num">{{ b.total }}</td><td class="num">{{ '%.2f'|format(b.pass_rate) }}</td><td class="num">{{ '%.3f'|format(b.avg_score) if b.avg_score is not none else '–' }}</td></tr>{% endfor %}</table>
</details>
<details class="section" open id="sec-labels"><summary><h2>Human labels</h2></summary>
{% if generated %}<p id="labels-generated">Not compared: this run scored answers generated by {{ r.target.spec or r.target.kind }}, and the dataset's labels were written for its recorded answers. <span id="labels-count"></span> Run with the recorded answers (no --target) to measure agreement.</p>
{% elif r.calibration %}<p class="muted">Each label is compared with the verdict on the answer it was written for: the dataset's recorded answer.</p>{% with cal = r.calibration, judge = r.judge %}{% include "calibration_section.html" %}{% endwith %}
{% else %}<p class="muted">No item carries a label (<code>label.acceptable</code>).</p>{% endif %}</details>
{% if r.grades %}<details class="section" open><summary><h2>Letter grades</h2></summary><div class="muted">cases: {% for g, n in r.grades.cases.items() %}{{ g }} {{ n }}{% if not loop.last %}, {% endif %}{% endfor %} · mean total {{ r.grades.mean_total if r.grades.mean_total is not none else '–' }} ({{ r.grades.grade or '–' }})</div>
<table><tr><th>category</th><th class="num">cases</th><th class="num">mean total</th><th>grade</th><th>grades</th></tr>
{% for name, c in r.grades.categories.items() %}<tr><td>{{ name }}</td><td class="num">{{ c.cases }}</td><td class="num">{{ c.mean_total if c.mean_total is not none else '–' }}</td><td>{{ c.grade or '–' }}</td><td>{% for g, n in c.grades.items() %}{{ g }} {{ n }}{% if not loop.last %}, {% endif %}{% endfor %}</td></tr>{% endfor %}</table></details>{% endif %}
{% if r.monitor %}<details class="section" open><summary><h2>Monitor status: {{ r.monitor.status }}</h2></summary><table><tr><th>intent</th><th>locale</th><th>status</th><th class="num">items</th><th class="num">pass rate</th><th class="num">mean composite</th></tr>
{% for s in [r.monitor.overall] + r.monitor.strata %}<tr><td>{{ s.intent or "all" }}</td><td>{{ s.locale or "all" }}</td><td>{{ s.status }}</td><td class="num">{{ s.total }}</td><td class="num">{{ "%.2f"|format(s.pass_rate) if s.pass_rate is not none else "–" }}</td><td class="num">{{ "%.3f"|format(s.mean_composite) if s.mean_composite is not none else "–" }}</td></tr>{% endfor %}</table></details>{% endif %}
{% for arm, t in [('candidate', r.target), ('control', r.control_target)] if t and t.incomplete_answers %}<details class="section" open><summary><h2>Incomplete answers, scored and flagged ({{ arm }}: {{ t.incomplete_answers|length }})</h2></summary>
<p class="muted">The target stopped before finishing these answers (the rubric's generation.fail_incomplete is false, so they were scored).</p>
<table><tr><th>test</th><th>stop reason</th><th class="num">score</th><th>passed</th></tr>
{% for x in t.incomplete_answers %}<tr><td><a class="act" data-item="{{ x.test_id }}">{{ x.test_id }}</a></td><td>{{ x.stop_reason }}</td><td class="num">{{ '%.3f'|format(x.composite_score) if x.composite_score is not none else '–' }}</td><td>{{ 'yes' if x.passed else 'no' }}</td></tr>{% endfor %}</table></details>
{% endfor %}
<details class="section"><summary><h2>Judge and generation</h2></summary>
<p>Judge {{ r.judge }}: {{ r.judge_usage.calls }} calls, {{ '{:,}'.format(r.judge_usage.input_tokens) }} input + {{ '{:,}'.format(r.judge_usage.output_tokens) }} output tokens, {{ r.judge_usage.cached_verdicts }} cached verdicts{% if r.judge_usage.usd_estimate is not none %}, ~${{ '%.4f'|format(r.judge_usage.usd_estimate) }}{% endif %}.</p>
{% if r.generation_summary %}<table><tr><th>arm</th><th class="num">generated</th><th class="num">errors</th><th class="num">mean latency ms</th><th class="num">p95 ms</th><th class="num">tokens in / out</th><th class="num">cost</th></tr>
{% for arm, g in r.generation_summary.items() %}<tr><td>{{ arm }}</td><td class="num">{{ g.generated }}</td><td class="num">{{ g.errors }}</td><td class="num">{{ g.latency_ms.mean if g.latency_ms.mean is not none else '–' }}</td><td class="num">{{ g.latency_ms.p95 if g.latency_ms.p95 is not none else '–' }}</td><td class="num">{{ g.input_tokens }} / {{ g.output_tokens }}</td><td class="num">{{ '$%.4f'|format(g.cost_usd) if g.cost_usd is not none else '–' }}</td></tr>{% endfor %}</table>{% endif %}
</details>
"""

CALIBRATION_SECTION = r"""<h2>Agreement with the human labels</h2>
<p>{{ cal.acceptable_failed }}/{{ cal.acceptable }} acceptable items failed{% if cal.acceptable_failed_rate is not none %} ({{ '%.1f'|format(cal.acceptable_failed_rate*100) }}%){% endif %} ·
{{ cal.defective_passed }}/{{ cal.defective }} defective items passed{% if cal.defective_passed_rate is not none %} ({{ '%.1f'|format(cal.defective_passed_rate*100) }}%){% endif %}.
Cohen's kappa of the item verdicts with <code>label.acceptable</code>, and the 2×2 table it comes from:</p>
<table><tr><th>subset</th><th class="num">labelled</th><th class="num">kappa</th><th class="num">passed · acceptable</th><th class="num">passed · defective</th><th class="num">failed · acceptable</th><th class="num">failed · defective</th></tr>
{% macro kappa_row(name, k) %}<tr><td>{{ name }}</td><td class="num">{{ k.n }}</td><td class="num">{{ '%.3f'|format(k.value) if k.value is not none else k.undefined_reason }}</td><td class="num">{{ k.passed_acceptable }}</td><td class="num">{{ k.passed_defective }}</td><td class="num">{{ k.failed_acceptable }}</td><td class="num">{{ k.failed_defective }}</td></tr>{% endmacro %}
{% for name, k in kappa_subsets(cal) %}{{ kappa_row(name, k) }}{% endfor %}</table>
{% if cal.families %}<h3>Defective answers caught, per defect family{% if judge %} (judge {{ judge }}){% endif %}</h3>
<p class="muted">Each defective answer's <code>label.defect</code> kind, grouped into its family (a kind the table does not know counts as <i>other</i>): how many of them failed. A low row is a blind spot of this judge mode.</p>
<table><tr><th>family</th><th class="num">caught</th><th class="num">defective</th><th class="num">recall</th><th>kinds</th><th>missed</th></tr>
{% for f in cal.families %}<tr><td>{{ f.family }}</td><td class="num">{{ f.caught }}</td><td class="num">{{ f.defective }}</td><td class="num">{{ '%.0f'|format(f.recall*100) }}%</td><td class="small">{% for k, n in f.kinds.items() %}{{ k }} {{ n }}{% if not loop.last %}, {% endif %}{% endfor %}</td><td class="small">{{ f.missed_ids[:8]|join(', ') }}{% if f.missed_ids|length > 8 %} …{% endif %}</td></tr>{% endfor %}</table>{% endif %}
"""
