"""Research-agent checks: each fires on a constructed defect and is silent without evidence."""

from __future__ import annotations

import pytest

from fmquality.schemes.profiles.cases import ProfileCase
from fmquality.schemes.profiles.fields import fields_of
from fmquality.schemes.profiles.research_agent import (
    citation_check,
    completeness_check,
    score_research_case,
    tool_efficiency_check,
)
from fmquality.config.profile import load_profile

PROFILE = load_profile("research-agent")
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
    case = ProfileCase.model_validate(data)
    fields, errors = fields_of(case), []
    assert not errors
    return case, fields


GOOD = "Municipal libraries in the region lent 4.2 million books in 2022."


def test_supported_citation_is_excellent():
    case, fields = _case(GOOD, [{"source_id": "lib", "sentence": GOOD}])
    assert citation_check(case, fields, PROFILE).level == "excellent"


def test_dangling_citation_is_a_finding():
    case, fields = _case(GOOD, [{"source_id": "ref-9", "sentence": GOOD}])
    finding = citation_check(case, fields, PROFILE)
    assert finding.source == "check" and finding.value < 0.6 and "never retrieved" in finding.evidence[0]


def test_citation_to_a_source_that_says_something_else():
    case, fields = _case(GOOD, [{"source_id": "mus", "sentence": GOOD}])
    finding = citation_check(case, fields, PROFILE)
    assert finding.value is not None and finding.value < 1 and "not supported by mus" in finding.evidence[0]


def test_cited_number_the_source_does_not_give():
    wrong = "Digital loans grew by 35 percent over the year, driven by audiobooks."
    case, fields = _case(wrong, [{"source_id": "lib", "sentence": wrong}])
    assert citation_check(case, fields, PROFILE).value < 1


def test_no_citations_no_finding():
    case, fields = _case(GOOD)
    finding = citation_check(case, fields, PROFILE)
    assert finding.source == "judge" and finding.value is None


def test_missing_and_negated_required_facts():
    # A regular verb: alignment stems "increased"/"increase" together, not "grew"/"grow" (known limit).
    facts = ["libraries lent 4.2 million books in 2022", "digital loans increased by 18 percent"]
    case, fields = _case(GOOD, facts=facts)
    assert completeness_check(case, fields, PROFILE).level == "acceptable"  # one of two missing
    case, fields = _case(GOOD + " Digital loans did not increase by 18 percent.", facts=facts)
    assert completeness_check(case, fields, PROFILE).level == "poor"  # stated with the opposite meaning
    case, fields = _case(GOOD + " Digital loans increased by 18 percent.", facts=facts)
    assert completeness_check(case, fields, PROFILE).level == "excellent"
    case, fields = _case(GOOD)
    assert completeness_check(case, fields, PROFILE).source == "judge"


def test_japanese_required_fact_negated():
    fact = "電子書籍の貸出は18パーセント増えた"
    case, fields = _case("電子書籍の貸出は18パーセント増えました。", facts=[fact])
    assert completeness_check(case, fields, PROFILE).level == "excellent"
    case, fields = _case("電子書籍の貸出は18パーセント増えていません。", facts=[fact])
    assert completeness_check(case, fields, PROFILE).value < 1


FETCH = {"name": "fetch", "arguments": {"id": "lib"}, "result": SOURCE}


def test_tool_efficiency_repeats_retries_and_unused_results():
    cites = [{"source_id": "lib", "sentence": GOOD}]
    case, fields = _case(GOOD, cites, calls=[FETCH])
    assert tool_efficiency_check(case, fields, PROFILE).level == "excellent"
    case, fields = _case(GOOD, cites, calls=[FETCH, FETCH])
    assert "repeats" in tool_efficiency_check(case, fields, PROFILE).evidence[0]
    failed = {"name": "fetch", "arguments": {"id": "lib", "page": 2}, "error": "HTTP 503"}
    case, fields = _case(GOOD, cites, calls=[failed, failed, FETCH])
    assert "retries a failed call" in tool_efficiency_check(case, fields, PROFILE).evidence[0]
    stray = {"name": "fetch", "arguments": {"id": "mus"}, "result": OTHER}
    case, fields = _case(GOOD, cites, calls=[FETCH, stray])
    assert "not used" in tool_efficiency_check(case, fields, PROFILE).evidence[0]


def test_overall_is_renormalised_without_tool_calls():
    case, fields = _case(GOOD, [{"source_id": "lib", "sentence": GOOD}], facts=["libraries lent 4.2 million books"])
    score = score_research_case(case, fields, PROFILE)
    assert "tool_efficiency" not in score.applicable
    assert score.dimensions["tool_efficiency"].source == "not_applicable"
    values = {d: score.dimensions[d].value for d in score.applicable}
    assert score.overall == pytest.approx(PROFILE.weighted_mean(values, "factual_lookup"))
    with_tools = score_research_case(*_case(GOOD, [{"source_id": "lib", "sentence": GOOD}], calls=[FETCH]), PROFILE)
    assert "tool_efficiency" in with_tools.applicable


def test_checks_never_give_a_default_full_mark():
    case, fields = _case(GOOD, sources=[])
    score = score_research_case(case, fields, PROFILE)
    assert all(d.value is None for d in score.dimensions.values())
    assert score.overall is None
