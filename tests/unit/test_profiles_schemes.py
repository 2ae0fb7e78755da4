"""Scoring schemes: every profile names one, the registry finds it by that name, and a scheme's code
covers the dimensions and sub-scores its profile describes (the profile YAML is their one home)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from fmquality.config.profile import REPO_PROFILES, available_profiles, load_profile, parse_profile
from fmquality.config.rubric import load_rubric, parse_rubric
from fmquality.domain.case import TestCase
from fmquality.domain.errors import ProfileError
from fmquality.judges.offline import OfflineJudge
from fmquality.run.evaluate import evaluate_case
from fmquality.schemes import SCHEMES, scheme_for, scheme_named
from fmquality.schemes.mangaassist import DIMENSIONS, MANGAASSIST, SUB_SCORES
from fmquality.scoring.plan import plan_case
from fmquality.scoring.signal import DimensionSignal, SubScoreSignals

ROOT = Path(__file__).resolve().parents[2]
RUBRICS = {"mangaassist": ROOT / "datasets/rubrics/mangaassist-v3.yaml",
           "research-agent": ROOT / "datasets/rubrics/research-agent-v1.yaml",
           "tool-use": ROOT / "datasets/rubrics/tool-use-v1.yaml"}
EXAMPLES = {"mangaassist": ROOT / "datasets/mangaassist/golden.jsonl",
            "research-agent": ROOT / "datasets/research_agent/examples.jsonl",
            "tool-use": ROOT / "datasets/tool_use/examples.jsonl"}


def test_every_shipped_profile_names_a_registered_scheme():
    assert {load_profile(name).scheme for name in available_profiles()} == set(SCHEMES)
    for name, scheme in SCHEMES.items():
        assert scheme.name == name and scheme_named(name) is scheme


def test_mangaassist_names_are_read_from_its_profile():
    profile = load_profile("mangaassist")
    assert DIMENSIONS == tuple(profile.dimension_names) and SUB_SCORES == profile.sub_score_table()


def test_a_profile_must_name_its_scheme_by_name():
    data = yaml.safe_load((REPO_PROFILES / "tool-use.yaml").read_text(encoding="utf-8"))
    del data["scheme"]
    with pytest.raises(ProfileError, match="scheme"):
        parse_profile(yaml.safe_dump(data), "x.yaml")
    data["scheme"] = "fmquality.schemes.profiles.tool_use"  # a module path is not a scheme name
    with pytest.raises(ProfileError, match="scheme"):
        parse_profile(yaml.safe_dump(data), "x.yaml")


def test_an_unknown_scheme_is_refused_naming_the_known_ones():
    with pytest.raises(ProfileError, match="no scoring scheme named 'nope'.*mangaassist, research-agent, tool-use"):
        scheme_named("nope")


def test_an_unknown_scheme_makes_every_case_an_error_record(tmp_path):
    profile = yaml.safe_load((REPO_PROFILES / "tool-use.yaml").read_text(encoding="utf-8"))
    (tmp_path / "odd.yaml").write_text(yaml.safe_dump({**profile, "name": "odd", "scheme": "nope"}), encoding="utf-8")
    rubric = yaml.safe_load(RUBRICS["tool-use"].read_text(encoding="utf-8"))
    odd = parse_rubric(yaml.safe_dump({**rubric, "profile": str(tmp_path / "odd.yaml")}), "odd-rubric")
    case = TestCase(test_id="t", intent="refund", query="Can I get a refund?", response="Yes, within 30 days.")
    result = evaluate_case(case, odd, OfflineJudge())
    assert result.status == "error" and "no scoring scheme named 'nope'" in result.error


@pytest.mark.parametrize("profile", sorted(RUBRICS))
def test_each_scheme_places_every_sub_score_of_its_profile(profile):
    """Over the shipped examples, each dimension's check report places each sub-score the profile
    describes exactly once (``plan_dimension`` validates it), and the offline signals the scheme gives
    are keyed by the profile's names."""
    rubric = load_rubric(RUBRICS[profile])
    scheme = scheme_for(rubric)
    lines = [line for line in EXAMPLES[profile].read_text(encoding="utf-8").splitlines() if line.strip()]
    for line in lines[::10]:
        plans = plan_case(scheme, TestCase.model_validate(json.loads(line)), rubric)
        assert list(plans) == rubric.dimensions
    for dimension in rubric.dimensions:
        signals = scheme.signals(dimension)
        if isinstance(signals, SubScoreSignals):
            assert set(signals.by_sub_score) <= set(rubric.profile_spec.dimension(dimension).sub_scores)
        else:
            assert isinstance(signals, DimensionSignal)


def test_only_the_mangaassist_scheme_grades_dimensions_in_one_call():
    assert [s.name for s in SCHEMES.values() if s.combined_judging] == [MANGAASSIST.name]
    assert {s.name: s.judge_prompt for s in SCHEMES.values()} == {
        "mangaassist": "mangaassist", "research-agent": "profile_levels", "tool-use": "profile_levels"}
