"""Tool-use scores: tool usage, keyword quality with negation (English and Japanese), error
handling, totals and grades."""

from __future__ import annotations

from pathlib import Path

import pytest

from fmquality.config.rubric import load_rubric
from fmquality.domain.case import TestCase
from fmquality.judges.offline import OfflineJudge
from fmquality.report.build import grade_block
from fmquality.run.evaluate import evaluate_case
from fmquality.schemes.profiles.tool_use import (
    error_handling_check,
    error_handling_signal,
    keyword_check,
    leaks,
    tool_usage_check,
)

RUBRIC = load_rubric(Path(__file__).resolve().parents[2] / "datasets" / "rubrics" / "tool-use-v1.yaml")
PROFILE = RUBRIC.profile_spec
LOOKUP = {"name": "lookup_ticket", "arguments": {"ticket": "T-88", "limit": 5}, "result": {"state": "open"}}


def _case(response="Ticket T-88 is open.", calls=(LOOKUP,), expected=None, forbidden=(), facts=(), keywords=(),
          category="order_lookup", locale="en-US"):
    return TestCase.model_validate({
        "test_id": "t", "intent": category, "locale": locale, "query": "Is ticket T-88 open?", "response": response,
        "tool_calls": list(calls), "expected_tools": expected if expected is not None else [{"name": "lookup_ticket"}],
        "forbidden_tools": list(forbidden), "required_facts": list(facts), "required_keywords": list(keywords)})


def test_expected_tool_with_normalised_arguments():
    case = _case(expected=[{"name": "lookup_ticket", "arguments": {"ticket": " t-88 ", "limit": "5"}}])
    assert tool_usage_check(case, PROFILE).value == 1.0
    case = _case(expected=[{"name": "lookup_ticket", "arguments": {"ticket": "T-89"}}])
    finding = tool_usage_check(case, PROFILE)
    assert finding.sub_scores["arguments"] == 0.0 and finding.value < 1


def test_missing_and_forbidden_tools():
    case = _case(calls=[])
    assert tool_usage_check(case, PROFILE).sub_scores["expected_tools"] == 0.0
    case = _case(calls=[LOOKUP, {"name": "close_ticket", "arguments": {"ticket": "T-88"}}], forbidden=["close_ticket"])
    assert tool_usage_check(case, PROFILE).sub_scores["no_forbidden_tools"] == 0.0


def test_no_expectations_is_the_judges():
    case = _case(expected=[])
    assert tool_usage_check(case, PROFILE).source == "judge"


def test_negation_does_not_satisfy_a_keyword():
    case = _case("The deposit is refundable within 30 days.", facts=["the deposit is refundable"])
    assert keyword_check(case, PROFILE).value == 1.0
    case = _case("The deposit is not refundable.", facts=["the deposit is refundable"])
    assert keyword_check(case, PROFILE).value == 0.0


def test_japanese_keywords_with_negation():
    fact = "未開封なら返品できる"
    case = _case("未開封なら返品できます。", facts=[fact], locale="ja-JP")
    assert keyword_check(case, PROFILE).value == 1.0
    case = _case("未開封でも返品できません。", facts=[fact], locale="ja-JP")
    assert keyword_check(case, PROFILE).value == 0.0


def test_absent_keyword_scores_zero_share():
    case = _case("Ticket T-88 is open.", keywords=["escalated to tier two"])
    assert keyword_check(case, PROFILE).value == 0.0


@pytest.mark.parametrize("text", [
    'Traceback (most recent call last):\n  File "x.py", line 3, in f',
    "KeyError: 'ticket'",
    "Upstream answered HTTP 502",
    '{"error": {"code": 500}}',
    "\tat com.acme.Svc.call(Svc.java:42)",
])
def test_leaked_error_text_is_found(text):
    assert leaks("Here you go. " + text)


def test_plain_text_is_not_a_leak():
    assert not leaks("Your ticket is open; there was an error in the form you sent earlier, so please resend it.")


def test_recovery_after_a_failed_call():
    failed = {"name": "lookup_ticket", "arguments": {"ticket": "T-88"}, "error": "TimeoutError"}
    case = _case(calls=[failed, LOOKUP])
    # Recovered, but no leak is only "none found": the dimension goes to the judge, who reads both.
    assert error_handling_check(case, PROFILE).source == "judge"
    assert error_handling_signal(case, PROFILE).sub_scores == {"no_leak": 1.0, "recovery": 1.0}
    case = _case(calls=[failed])
    unrecovered = error_handling_check(case, PROFILE)
    assert unrecovered.source == "check" and unrecovered.sub_scores["recovery"] == 0.0
    # Saying so may be about this failure or not: the judge decides, with the sentence as a hint.
    told = _case("I couldn't reach the ticket system just now; please try again in a few minutes.", calls=[failed])
    finding = error_handling_check(told, PROFILE)
    assert finding.source == "judge" and any("the answer says" in e for e in finding.evidence)
    assert error_handling_signal(told, PROFILE).sub_scores["recovery"] == 1.0
    # No failure and no leak found proves nothing: the check leaves the dimension to the judge.
    case = _case()
    assert error_handling_check(case, PROFILE).source == "judge"


def test_total_and_grade():
    result = evaluate_case(_case(facts=["ticket T-88 is open"]), RUBRIC, OfflineJudge())
    # Error handling (nothing found wrong, nothing proven) is the judge's: here the offline judge's reading.
    assert result.total_100 == 100 and result.grade == "A"
    assert "no_leak" in result.dimension_scores["error_handling"].judged
    result = evaluate_case(_case(facts=["ticket T-88 is open"], forbidden=["lookup_ticket"]), RUBRIC, OfflineJudge())
    assert result.total_100 < 90 and result.grade != "A"


def test_grades_by_category():
    results = [evaluate_case(_case(facts=["ticket T-88 is open"], category=c).model_copy(update={"test_id": f"t{n}"}),
                             RUBRIC, OfflineJudge()) for n, c in enumerate(("refund", "refund", "weather"))]
    block = grade_block(results, RUBRIC)
    assert block["categories"]["refund"]["cases"] == 2 and block["categories"]["refund"]["grades"] == {"A": 2}
    assert block["categories"]["weather"]["grade"] == "A" and block["cases"] == {"A": 3}
