"""report.junit: the outcome of each item kind in JUnit terms, checked against the rules of the JUnit
schema CI systems read (Jenkins' junit.xsd, which GitHub, GitLab and CodeBuild reporters follow)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from fmquality.domain.report import Breakdown, GateResult, RunReport
from fmquality.domain.results import EvaluationResult
from fmquality.domain.scores import HardFailure
from fmquality.report.junit import render_junit
from fmquality.report.summary_md import render_summary_md


def _result(test_id: str, **fields) -> EvaluationResult:
    base = dict(test_id=test_id, intent="faq", locale="ja-JP", status="scored", passed=True, composite_score=0.9,
                threshold=0.85, rubric_version="v3")
    return EvaluationResult(**{**base, **fields})


def _report(passed: bool, reasons: list[str]) -> RunReport:
    row = Breakdown(total=4, passed=1, pass_rate=0.25, avg_score=0.7, unscored=1)
    return RunReport(run_id="r1", dataset="d.jsonl", rubric_version="v3", judge="offline", total_cases=4,
                     passed_cases=1, failed_cases=1, unscored_cases=1, error_cases=1, pass_rate=0.25,
                     dimension_averages={}, intent_breakdown={"faq": row}, locale_breakdown={"ja-JP": row},
                     tag_breakdown={}, gate=GateResult(passed=passed, reasons=reasons),
                     started_at="2026-11-25T09:00:00+00:00")


RESULTS = [
    _result("ok"),
    _result("bad", passed=False, composite_score=0.5, failure_reasons=["composite 0.500 below 0.85"],
            hard_failures=[HardFailure(rule="policy_contradiction", dimension="factual_accuracy",
                                       sub_score="policy_accuracy", detail="'7日' contradicts '3日'")]),
    _result("broken", status="error", passed=False, composite_score=None, error="generation failed: timeout"),
    _result("open", status="unscored", passed=False, composite_score=None, failure_reasons=["judge unavailable"]),
]

# Jenkins junit.xsd: the attributes each element requires and the children it may have.
REQUIRED = {"testsuite": {"name", "tests"}, "testcase": {"name", "classname"}, "failure": {"type"},
            "error": {"type"}}
CHILDREN = {"testsuites": {"testsuite"}, "testsuite": {"properties", "testcase", "system-out", "system-err"},
            "testcase": {"skipped", "error", "failure", "system-out", "system-err"}}
INTEGER = {"tests", "failures", "errors", "skipped"}


def _check_schema(element: ET.Element) -> None:
    assert REQUIRED.get(element.tag, set()) <= set(element.attrib), element.tag
    for key in INTEGER & set(element.attrib):
        assert element.get(key).isdigit(), (element.tag, key)
    if "time" in element.attrib:
        float(element.get("time"))
    for child in element:
        assert child.tag in CHILDREN.get(element.tag, set()), (element.tag, child.tag)
        _check_schema(child)


def test_each_item_kind_maps_to_its_junit_outcome_and_follows_the_schema():
    root = ET.fromstring(render_junit(_report(False, ["intent faq pass rate 0.25 below 0.90"]), RESULTS))
    _check_schema(root)
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert [child.tag for child in cases["ok"]] == []
    assert [child.tag for child in cases["bad"]] == ["failure"]
    failure = cases["bad"].find("failure").text
    assert "composite 0.500 below 0.85" in failure and "'7日' contradicts '3日'" in failure
    assert cases["broken"].find("error").text == "generation failed: timeout"
    assert cases["open"].find("skipped").get("message") == "judge unavailable"
    assert cases["quality gate"].find("failure").text == "intent faq pass rate 0.25 below 0.90"
    assert (root.get("tests"), root.get("failures"), root.get("errors"), root.get("skipped")) == ("5", "2", "1", "1")
    assert cases["bad"].get("classname") == "fmquality.faq.ja-JP"


def test_a_passed_gate_has_a_passing_gate_case():
    root = ET.fromstring(render_junit(_report(True, []), RESULTS[:1]))
    assert root.find(".//failure") is None and root.get("tests") == "2"


def test_summary_lists_failed_and_error_items_but_not_passed_or_unscored_ones():
    text = render_summary_md(_report(False, ["intent faq pass rate 0.25 below 0.90"]), RESULTS)
    failing = text.split("### Failing items (2)")[1]
    assert "`bad`" in failing and "`broken`" in failing and "generation failed: timeout" in failing
    assert "`ok`" not in failing and "`open`" not in failing
    assert "- intent faq pass rate 0.25 below 0.90" in text
    assert "| faq | 4 | 1 | 0.25 | 0.700 | 1 |" in text
