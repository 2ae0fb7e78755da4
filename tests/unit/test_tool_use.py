"""Tool-use scores: tool usage, keyword quality with negation (English and Japanese), error
handling, totals and grades."""

from __future__ import annotations

import pytest

from fmquality.schemes.profiles.cases import ProfileCase
from fmquality.schemes.profiles.fields import fields_of
from fmquality.schemes.profiles.tool_use import (
    error_handling_check,
    error_handling_signal,
    grade_distribution,
    keyword_check,
    leaks,
    score_tool_case,
    tool_usage_check,
)
from fmquality.config.profile import load_profile

PROFILE = load_profile("tool-use")
LOOKUP = {"name": "lookup_ticket", "arguments": {"ticket": "T-88", "limit": 5}, "result": {"state": "open"}}


def _case(response="Ticket T-88 is open.", calls=(LOOKUP,), expected=None, forbidden=(), facts=(), keywords=(),
          category="order_lookup", locale="en-US"):
    case = ProfileCase.model_validate({
        "test_id": "t", "intent": category, "locale": locale, "query": "Is ticket T-88 open?", "response": response,
        "tool_calls": list(calls), "expected_tools": expected if expected is not None else [{"name": "lookup_ticket"}],
        "forbidden_tools": list(forbidden), "required_facts": list(facts), "required_keywords": list(keywords)})
    fields, errors = fields_of(case), []
    assert not errors
    return case, fields


def test_expected_tool_with_normalised_arguments():
    case, fields = _case(expected=[{"name": "lookup_ticket", "arguments": {"ticket": " t-88 ", "limit": "5"}}])
    assert tool_usage_check(case, fields, PROFILE).value == 1.0
    case, fields = _case(expected=[{"name": "lookup_ticket", "arguments": {"ticket": "T-89"}}])
    finding = tool_usage_check(case, fields, PROFILE)
    assert finding.sub_scores["arguments"] == 0.0 and finding.value < 1


def test_missing_and_forbidden_tools():
    case, fields = _case(calls=[])
    assert tool_usage_check(case, fields, PROFILE).sub_scores["expected_tools"] == 0.0
    case, fields = _case(calls=[LOOKUP, {"name": "close_ticket", "arguments": {"ticket": "T-88"}}], forbidden=["close_ticket"])
    assert tool_usage_check(case, fields, PROFILE).sub_scores["no_forbidden_tools"] == 0.0


def test_no_expectations_is_the_judges():
    case, fields = _case(expected=[])
    assert tool_usage_check(case, fields, PROFILE).source == "judge"


def test_negation_does_not_satisfy_a_keyword():
    case, fields = _case("The deposit is refundable within 30 days.", facts=["the deposit is refundable"])
    assert keyword_check(case, fields, PROFILE).value == 1.0
    case, fields = _case("The deposit is not refundable.", facts=["the deposit is refundable"])
    assert keyword_check(case, fields, PROFILE).value == 0.0


def test_japanese_keywords_with_negation():
    fact = "未開封なら返品できる"
    case, fields = _case("未開封なら返品できます。", facts=[fact], locale="ja-JP")
    assert keyword_check(case, fields, PROFILE).value == 1.0
    case, fields = _case("未開封でも返品できません。", facts=[fact], locale="ja-JP")
    assert keyword_check(case, fields, PROFILE).value == 0.0


def test_absent_keyword_scores_zero_share():
    case, fields = _case("Ticket T-88 is open.", keywords=["escalated to tier two"])
    assert keyword_check(case, fields, PROFILE).value == 0.0


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
    case, fields = _case(calls=[failed, LOOKUP])
    # Recovered, but no leak is only "none found": the dimension goes to the judge, who reads both.
    assert error_handling_check(case, fields, PROFILE).source == "judge"
    assert error_handling_signal(case, fields, PROFILE).sub_scores == {"no_leak": 1.0, "recovery": 1.0}
    case, fields = _case(calls=[failed])
    unrecovered = error_handling_check(case, fields, PROFILE)
    assert unrecovered.source == "check" and unrecovered.sub_scores["recovery"] == 0.0
    # Saying so may be about this failure or not: the judge decides, with the sentence as a hint.
    told, fields = _case("I couldn't reach the ticket system just now; please try again in a few minutes.", calls=[failed])
    finding = error_handling_check(told, fields, PROFILE)
    assert finding.source == "judge" and any("the answer says" in e for e in finding.evidence)
    assert error_handling_signal(told, fields, PROFILE).sub_scores["recovery"] == 1.0
    # No failure and no leak found proves nothing: the check leaves the dimension to the judge.
    case, fields = _case()
    assert error_handling_check(case, fields, PROFILE).source == "judge"


def test_total_and_grade():
    case, fields = _case(facts=["ticket T-88 is open"])
    score = score_tool_case(case, fields, PROFILE)
    # Error handling (nothing found wrong, nothing proven) waits for the judge: the grade is provisional.
    assert score.total == 100 and score.grade == "A" and score.pending == ["error_handling"]
    case, fields = _case(facts=["ticket T-88 is open"], forbidden=["lookup_ticket"])
    score = score_tool_case(case, fields, PROFILE)
    assert score.total < 90 and score.grade != "A"


def test_grade_distribution_by_category():
    scores = [score_tool_case(*_case(facts=["ticket T-88 is open"], category=c), PROFILE) for c in ("refund", "refund", "weather")]
    dist = grade_distribution(scores, profile=PROFILE)
    assert dist["refund"]["cases"] == 2 and dist["refund"]["grades"] == {"A": 2} and dist["weather"]["grade"] == "A"
    assert grade_distribution(scores, by="all")["all"]["cases"] == 3
