"""Research-agent checks: each fires on a constructed defect and is silent without evidence."""

from __future__ import annotations

from pathlib import Path

import pytest

from fmquality.config.rubric import load_rubric
from fmquality.domain.case import TestCase
from fmquality.judges.offline import OfflineJudge
from fmquality.run.evaluate import evaluate_case
from fmquality.schemes.profiles.research_agent import citation_check, completeness_check, tool_efficiency_check

RUBRIC = load_rubric(Path(__file__).resolve().parents[2] / "datasets" / "rubrics" / "research-agent-v1.yaml")
PROFILE = RUBRIC.profile_spec
SOURCE = ("Municipal libraries in the region lent 4.2 million books in 2022. Digital loans grew by 18 percent "
          "over the year, driven by audiobooks.")
OTHER = "The regional museum reopened in May after a two-year renovation of its east wing."


def _case(response, citations=(), facts=(), calls=None, sources=None):
    data = {"test_id": "t", "intent": "factual_lookup", "query": "How many books did libraries lend in 2022?",
            "response": response, "citations": list(citations), "required_facts": list(facts),
            "sources": sources if sources is not None else [
                {"id": "lib", "title": "Library statistics 2022", "kind": "kb", "text": SOURCE},
                {"id": "mus", "title": "Museum news", "kind": "web", "text": OTHER}]}
    if calls is not None:
        data["tool_calls"] = calls
    return TestCase.model_validate(data)


GOOD = "Municipal libraries in the region lent 4.2 million books in 2022."


def test_supported_citation_is_excellent():
    case = _case(GOOD, [{"source_id": "lib", "sentence": GOOD}])
    assert citation_check(case, PROFILE).level == "excellent"


def test_dangling_citation_is_a_finding():
    case = _case(GOOD, [{"source_id": "ref-9", "sentence": GOOD}])
    finding = citation_check(case, PROFILE)
    assert finding.source == "check" and finding.value < 0.6 and "never retrieved" in finding.evidence[0]


def test_citation_to_a_source_that_says_something_else():
    case = _case(GOOD, [{"source_id": "mus", "sentence": GOOD}])
    finding = citation_check(case, PROFILE)
    assert finding.value is not None and finding.value < 1 and "not supported by mus" in finding.evidence[0]


def test_cited_number_the_source_does_not_give():
    wrong = "Digital loans grew by 35 percent over the year, driven by audiobooks."
    case = _case(wrong, [{"source_id": "lib", "sentence": wrong}])
    assert citation_check(case, PROFILE).value < 1


def test_no_citations_no_finding():
    case = _case(GOOD)
    finding = citation_check(case, PROFILE)
    assert finding.source == "judge" and finding.value is None


def test_missing_and_negated_required_facts():
    # A regular verb: alignment stems "increased"/"increase" together, not "grew"/"grow" (known limit).
    facts = ["libraries lent 4.2 million books in 2022", "digital loans increased by 18 percent"]
    case = _case(GOOD, facts=facts)
    assert completeness_check(case, PROFILE).level == "acceptable"  # one of two missing
    case = _case(GOOD + " Digital loans did not increase by 18 percent.", facts=facts)
    assert completeness_check(case, PROFILE).level == "poor"  # stated with the opposite meaning
    case = _case(GOOD + " Digital loans increased by 18 percent.", facts=facts)
    assert completeness_check(case, PROFILE).level == "excellent"
    case = _case(GOOD)
    assert completeness_check(case, PROFILE).source == "judge"


def test_japanese_required_fact_negated():
    fact = "電子書籍の貸出は18パーセント増えた"
    case = _case("電子書籍の貸出は18パーセント増えました。", facts=[fact])
    assert completeness_check(case, PROFILE).level == "excellent"
    case = _case("電子書籍の貸出は18パーセント増えていません。", facts=[fact])
    assert completeness_check(case, PROFILE).value < 1


FETCH = {"name": "fetch", "arguments": {"id": "lib"}, "result": SOURCE}


def test_tool_efficiency_repeats_retries_and_unused_results():
    cites = [{"source_id": "lib", "sentence": GOOD}]
    case = _case(GOOD, cites, calls=[FETCH])
    assert tool_efficiency_check(case, PROFILE).level == "excellent"
    case = _case(GOOD, cites, calls=[FETCH, FETCH])
    assert "repeats" in tool_efficiency_check(case, PROFILE).evidence[0]
    failed = {"name": "fetch", "arguments": {"id": "lib", "page": 2}, "error": "HTTP 503"}
    case = _case(GOOD, cites, calls=[failed, failed, FETCH])
    assert "retries a failed call" in tool_efficiency_check(case, PROFILE).evidence[0]
    stray = {"name": "fetch", "arguments": {"id": "mus"}, "result": OTHER}
    case = _case(GOOD, cites, calls=[FETCH, stray])
    assert "not used" in tool_efficiency_check(case, PROFILE).evidence[0]


def test_the_composite_is_renormalised_without_tool_calls():
    case = _case(GOOD, [{"source_id": "lib", "sentence": GOOD}], facts=["libraries lent 4.2 million books"])
    result = evaluate_case(case, RUBRIC, OfflineJudge())
    scores = result.dimension_scores
    assert scores["tool_efficiency"].status == "not_applicable"
    weights = RUBRIC.weights_for("factual_lookup")
    applied = {d: s.score for d, s in scores.items() if s.status == "scored"}
    assert "tool_efficiency" not in applied and applied
    expected = sum(weights[d] * v for d, v in applied.items()) / sum(weights[d] for d in applied)
    assert result.composite_score == pytest.approx(expected, abs=1e-4)
    with_tools = evaluate_case(_case(GOOD, [{"source_id": "lib", "sentence": GOOD}], calls=[FETCH]), RUBRIC, OfflineJudge())
    assert with_tools.dimension_scores["tool_efficiency"].status == "scored"


def test_checks_never_give_a_default_full_mark():
    result = evaluate_case(_case(GOOD, sources=[]), RUBRIC, OfflineJudge())
    assert all(s.status != "scored" for s in result.dimension_scores.values())
    assert result.composite_score is None and not result.passed
