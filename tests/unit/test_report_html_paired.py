"""report.html of a paired run: failing items show what was asked and answered by both arms, escaped,
and the paired comparison is charted (one SVG row per subset, regressed rows highlighted)."""

from __future__ import annotations

import random
import re

from fmquality.domain.results import EvaluationResult
from fmquality.report.build import build_report
from fmquality.report.html import render_html
from fmquality.config.rubric import load_rubric

RUBRIC = load_rubric()
INTENTS = ("faq", "chitchat")


def _arm(arm, shift=0.0):
    rng = random.Random(2)
    out = []
    for intent in INTENTS:
        for i in range(10):
            test_id = f"{intent}-{i}"
            drop = shift if intent == "faq" else 0.0
            score = round(rng.uniform(0.93, 0.99) + drop, 4)
            threshold = RUBRIC.threshold_for(intent)
            out.append(EvaluationResult(
                test_id=test_id, arm=arm, intent=intent, locale="en-US", status="scored",
                passed=score >= threshold, composite_score=score, threshold=threshold, rubric_version="t",
                failure_reasons=[] if score >= threshold else [f"composite below <{intent}> threshold & more"],
                query=f"Is <b>{test_id}</b> in stock?",
                response=f"{arm} says: <script>alert('{test_id}')</script> & ships today",
            ))
    return out


def test_failing_items_show_query_answer_and_control_answer_escaped():
    candidate, control = _arm("candidate", shift=-0.2), _arm("control")
    report = build_report(candidate, RUBRIC, run_id="r", dataset="d", control_results=control)
    page = render_html(report, candidate, RUBRIC.gate.min_pass_rate, control_results=control)
    assert "<script>" not in page and "<b>faq-0</b>" not in page
    assert "Is &lt;b&gt;faq-0&lt;/b&gt; in stock?" in page
    assert "candidate says: &lt;script&gt;alert(&#39;faq-0&#39;)&lt;/script&gt; &amp; ships today" in page
    assert "control says: &lt;script&gt;alert(&#39;faq-0&#39;)&lt;/script&gt; &amp; ships today" in page
    assert "composite below &lt;faq&gt; threshold &amp; more" in page
    # Without the control's results the page takes the control's answer from report.json.
    page = render_html(report, candidate, RUBRIC.gate.min_pass_rate)
    assert "control says: &lt;script&gt;" in page


def test_the_paired_chart_has_one_row_per_subset_and_highlights_regressions():
    candidate, control = _arm("candidate", shift=-0.2), _arm("control")
    report = build_report(candidate, RUBRIC, run_id="r", dataset="d", control_results=control)
    page = render_html(report, candidate, RUBRIC.gate.min_pass_rate)
    subsets = ["overall", *(s.subset for s in report.paired.subsets)]
    assert {"overall", "intent:faq", "intent:chitchat", "locale:en-US"} <= set(subsets)
    for subset in subsets:
        assert f">{subset} (n=" in page
    highlighted = set(re.findall(r'data-subset="([^"]+)" class="regressed"', page))
    assert highlighted == {i.subset for i in [report.paired.overall, *report.paired.subsets] if i.regressed}
    assert "intent:faq" in highlighted and "intent:chitchat" not in highlighted
    assert 'aria-label="per-case differences"' in page
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")  # nothing fetched


def test_an_unpaired_report_has_no_paired_section():
    candidate = _arm("candidate", shift=-0.2)
    report = build_report(candidate, RUBRIC, run_id="r", dataset="d")
    page = render_html(report, candidate, RUBRIC.gate.min_pass_rate)
    assert "paired differences by subset" not in page and "control&#39;s answer" not in page
    assert "candidate says: &lt;script&gt;" in page
