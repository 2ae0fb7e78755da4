"""Profiles: the YAML spec, the three shipped profiles, grade bands and the profile fields of a test case."""

from __future__ import annotations

import filecmp
from pathlib import Path

import pytest

from fmquality.domain.case import TestCase
from fmquality.domain.scores import DimensionScore
from fmquality.scoring.composite import combine
from fmquality.config.profile import (
    PACKAGE_PROFILES,
    REPO_PROFILES,
    available_profiles,
    load_profile,
    parse_profile,
)
from fmquality.domain.errors import ProfileError
from fmquality.config.rubric import load_rubric


def test_packaged_profiles_are_the_datasets_profiles():
    names = sorted(p.name for p in REPO_PROFILES.glob("*.yaml"))
    assert names == sorted(p.name for p in PACKAGE_PROFILES.glob("*.yaml")) and len(names) == 3
    for name in names:
        assert filecmp.cmp(REPO_PROFILES / name, PACKAGE_PROFILES / name, shallow=False), name


def test_mangaassist_profile_is_todays_rubric():
    profile, rubric = load_profile("mangaassist"), load_rubric()
    for intent in profile.categories:
        assert profile.weights_for(intent) == rubric.weights_for(intent)
    for dim in profile.dimensions:
        assert dim.sub_scores == rubric.sub_score_weights[dim.name]
    assert load_profile("mangaassist").dimension("fluency").check_settled == ["formatting"]


def test_research_agent_weights_and_levels():
    profile = load_profile("research-agent")
    assert profile.weights_for("synthesis") == {"factual_accuracy": 0.30, "completeness": 0.25, "tool_efficiency": 0.20,
                                                "citation_accuracy": 0.15, "source_quality": 0.10}
    for dim in profile.dimensions:
        assert [(lv.name, lv.value) for lv in dim.levels] == [("excellent", 1.0), ("good", 0.8), ("acceptable", 0.6),
                                                             ("poor", 0.3), ("failed", 0.0)]
        assert all(len(lv.description) > 40 for lv in dim.levels)
    assert profile.dimension("tool_efficiency").applies_when == "tool_calls_present"


def test_a_case_where_no_dimension_applies_has_no_composite():
    rubric = load_rubric(Path(__file__).resolve().parents[2] / "datasets" / "rubrics" / "research-agent-v1.yaml")
    case = TestCase(test_id="t", intent="synthesis", query="q?", response="a.")
    scores = {d: DimensionScore(dimension=d, status="not_applicable", unscored_reason="does not apply (test)")
              for d in rubric.dimensions}
    result = combine(case, rubric, scores)
    assert result.status == "unscored" and result.composite_score is None and result.grade is None


@pytest.mark.parametrize("total, grade", [(100, "A"), (90, "A"), (89.99, "B"), (80, "B"), (79.99, "C"), (70, "C"),
                                          (69.99, "D"), (60, "D"), (59.99, "F"), (0, "F")])
def test_grade_band_edges(total, grade):
    assert load_profile("tool-use").grade_for(total) == grade


def test_every_profile_loads_by_name():
    assert set(available_profiles()) >= {"mangaassist", "research-agent", "tool-use"}


@pytest.mark.parametrize("mutation, fragment", [
    (lambda d: d["dimensions"][0].update(weight=0.5), "must sum to 1"),
    (lambda d: d["dimensions"][0].update(check_settled=["nope"]), "unknown sub-scores"),
    (lambda d: d.update(grades=[{"grade": "A", "min": 90}, {"grade": "B", "min": 95}]), "decreasing"),
    (lambda d: d["dimensions"][0].update(sub_scores={"a": 0.5}), "sum to 1"),
])
def test_invalid_profiles_are_rejected_with_the_field(mutation, fragment):
    import yaml
    data = yaml.safe_load((REPO_PROFILES / "tool-use.yaml").read_text(encoding="utf-8"))
    mutation(data)
    with pytest.raises(ProfileError, match=fragment):
        parse_profile(yaml.safe_dump(data), "x.yaml")


def test_field_errors_name_file_line_and_field():
    import json

    from fmquality.run.dataset import parse_lines

    line = json.dumps({
        "test_id": "t", "intent": "faq", "query": "q",
        "sources": [{"id": "s1", "title": "T", "kind": "blog"}],
        "tool_calls": [{"name": "get_order", "arguments": "112"}],
        "citations": [{"sentence": "x"}],
        "expected_tools": [{"name": ""}],
        "complexity": "hard"}).encode()
    loaded = parse_lines([b""] * 6 + [line], "cases.jsonl")
    assert not loaded.cases
    text = [str(e) for e in loaded.errors]
    for field in ("sources[0].kind", "tool_calls[0].arguments", "citations[0].source_id", "expected_tools[0].name",
                  "complexity"):
        assert any(t.startswith(f"cases.jsonl:7: {field}:") for t in text), (field, text)
    assert any("'blog'" in t for t in text)


def test_valid_fields_parse_and_span_means_sentence():
    case = TestCase.model_validate({"test_id": "t", "intent": "refund", "query": "q",
                                    "citations": [{"source_id": "s1", "span": "a claim"}],
                                    "forbidden_tools": ["issue_refund"], "complexity": "simple"})
    assert case.citations[0].sentence == "a claim"
    assert case.forbidden_tools == ["issue_refund"] and case.complexity == "simple"
