"""report.html of a paired run: items carry what was asked and answered by both arms, inert in the
page, and the paired comparison is charted (one SVG row per subset, regressed rows highlighted)."""

from __future__ import annotations

import json
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


def _embedded(page, element_id):
    data = re.search(rf'<script type="application/json" id="{element_id}">(.*?)</script>', page, re.S).group(1)
    assert "<" not in data  # no answer can close the script element it is embedded in
    return {x["id"]: x for x in json.loads(data)}


def test_items_carry_what_was_asked_and_answered_by_both_arms_inert():
    candidate, control = _arm("candidate", shift=-0.2), _arm("control")
    report = build_report(candidate, RUBRIC, run_id="r", dataset="d", control_results=control)
    page = render_html(report, candidate, RUBRIC.gate.min_pass_rate, control_results=control)
    assert "<script>alert" not in page and "<b>faq-0</b>" not in page
    items, answers = _embedded(page, "fmq-items"), _embedded(page, "fmq-control")
    assert items["faq-0"]["query"] == "Is <b>faq-0</b> in stock?"
    assert items["faq-0"]["answer"] == "candidate says: <script>alert('faq-0')</script> & ships today"
    assert answers["faq-0"]["answer"] == "control says: <script>alert('faq-0')</script> & ships today"
    assert items["faq-0"]["reasons"] == ["composite below <faq> threshold & more"]
    # Without the control's results (Aggregate's call) the control's answers come from report.json.
    page = render_html(report, candidate, RUBRIC.gate.min_pass_rate)
    assert _embedded(page, "fmq-control")["faq-0"]["answer"].startswith("control says: <script>")


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
    assert "paired differences by subset" not in page and "New failures" not in page
    assert _embedded(page, "fmq-control") == {}
    assert _embedded(page, "fmq-items")["faq-0"]["answer"].startswith("candidate says: <script>")
