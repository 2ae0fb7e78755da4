"""The Bedrock judge's prompt data: the calibration casebook (typed, checked against the sub-scores
it grades and against its own text), the prose guidance (placeholders checked) and the MangaAssist
level descriptions, which live in the profile and reach the system text from there."""

from __future__ import annotations

import copy

import pytest
import yaml
from pydantic import ValidationError

from fmquality.config.profile import load_profile, parse_profile, profile_path
from fmquality.config.rubric import load_rubric
from fmquality.judges.bedrock.guidance import (
    CASEBOOK,
    CASEBOOK_FILE,
    GUIDANCE,
    GUIDANCE_FILE,
    Casebook,
    Guidance,
    load_casebook,
)
from fmquality.judges.bedrock.prompts import combined_system_text, system_text

PROFILE = load_profile("mangaassist")
SUB_SCORES = {name for names in PROFILE.sub_score_table().values() for name in names}


@pytest.fixture
def casebook_data() -> dict:
    return yaml.safe_load(CASEBOOK_FILE.read_text(encoding="utf-8"))


@pytest.fixture
def guidance_data() -> dict:
    return yaml.safe_load(GUIDANCE_FILE.read_text(encoding="utf-8"))


def refusal(data: dict) -> str:
    with pytest.raises(ValidationError) as caught:
        Casebook.model_validate(data)
    return str(caught.value)


# -- the casebook ------------------------------------------------------------------------------------


def test_the_shipped_casebook_grades_only_profile_sub_scores_on_levels_one_to_five():
    assert load_casebook() == CASEBOOK and len(CASEBOOK.examples) == 23
    graded = {(name, level) for example in CASEBOOK.examples for name, level in example.graded()}
    assert {name for name, _ in graded} <= SUB_SCORES
    assert {level for _, level in graded} <= {1, 2, 3, 4, 5}
    # Every sub-score of the store is illustrated by at least one example.
    assert {name for name, _ in graded} == SUB_SCORES


def test_the_casebook_text_numbers_the_examples_after_the_intro():
    text = CASEBOOK.text()
    assert text.startswith(CASEBOOK.intro + "\n\nExample 1 (" + CASEBOOK.examples[0].heading + "). ")
    assert f"\n\nExample 21 ({CASEBOOK.examples[20].heading}). " in text
    assert text.endswith(CASEBOOK.examples[-1].text)


def test_an_example_that_grades_an_unknown_sub_score_is_refused(casebook_data):
    data = copy.deepcopy(casebook_data)
    data["examples"][0]["grades"][0]["helpfulness"] = 5
    assert "example 1" in refusal(data) and "unknown sub-score 'helpfulness'" in refusal(data)


@pytest.mark.parametrize("level", [0, 6])
def test_an_example_that_grades_a_level_outside_one_to_five_is_refused(casebook_data, level):
    data = copy.deepcopy(casebook_data)
    data["examples"][0]["grades"][0]["tone"] = level
    assert f"grades tone {level}, not a level" in refusal(data)


def test_a_grade_the_text_does_not_state_is_refused(casebook_data):
    data = copy.deepcopy(casebook_data)
    data["examples"][0]["grades"][0]["tone"] = 4  # the text says "tone 5"
    message = refusal(data)
    assert "grades tone 4, but the text does not say so" in message
    assert "the text grades tone 5, the grades do not" in message


def test_a_level_the_text_gives_but_the_grades_leave_out_is_refused(casebook_data):
    data = copy.deepcopy(casebook_data)
    del data["examples"][2]["grades"][0]["no_hallucination"]
    assert "example 3" in refusal(data) and "the text grades no_hallucination 1, the grades do not" in refusal(data)


def test_a_text_that_names_an_unknown_sub_score_is_refused(casebook_data):
    data = copy.deepcopy(casebook_data)
    data["examples"][1]["text"] += " Levels: price_acuracy 2."
    assert "the text names unknown sub-scores ['price_acuracy']" in refusal(data)


def test_a_casebook_is_checked_against_the_profile_it_names(casebook_data):
    data = copy.deepcopy(casebook_data)
    data["profile"] = "research-agent"
    assert "unknown sub-score" in refusal(data)


# -- the guidance ------------------------------------------------------------------------------------


def test_a_guidance_text_must_name_exactly_its_placeholders(guidance_data):
    assert Guidance.model_validate(guidance_data) == GUIDANCE
    missing = copy.deepcopy(guidance_data)
    missing["store"]["data_rule"] = missing["store"]["data_rule"].replace("{case_end}", "the end marker")
    unknown = copy.deepcopy(guidance_data)
    unknown["store"]["scale"] += " {rubric_version}"
    for data, field in ((missing, "store.data_rule"), (unknown, "store.scale")):
        with pytest.raises(ValidationError) as caught:
            Guidance.model_validate(data)
        assert field in str(caught.value)


def test_the_guidance_describes_every_japanese_title_format_of_the_rubric(guidance_data):
    data = copy.deepcopy(guidance_data)
    del data["store"]["title_formats"]["original_only"]
    with pytest.raises(ValidationError, match="title formats"):
        Guidance.model_validate(data)


# -- the levels, in the profile ---------------------------------------------------------------------


def test_the_system_text_lists_each_sub_scores_five_levels_from_the_profile():
    rubric = load_rubric()
    combined = combined_system_text(rubric)
    for dimension in PROFILE.dimension_names:
        text = system_text(dimension, rubric)
        for name, descriptions in PROFILE.dimension(dimension).sub_score_levels.items():
            block = f"{name}:\n" + "\n".join(f"  {level}: {d}" for level, d in zip((5, 4, 3, 2, 1), descriptions))
            assert block in text and block in combined


def profile_text(**dimension_changes) -> str:
    raw = yaml.safe_load(profile_path("mangaassist").read_text(encoding="utf-8"))
    raw["dimensions"][0].update(dimension_changes)
    return yaml.safe_dump(raw, allow_unicode=True)


@pytest.mark.parametrize("levels, why", [
    ({"intent_relevance": ["a"] * 5, "product_relevance": ["b"] * 5}, "describe every sub-score"),
    ({"intent_relevance": ["a"] * 4, "product_relevance": ["b"] * 5, "context_relevance": ["c"] * 5},
     "five non-empty descriptions"),
])
def test_the_profile_refuses_levels_that_do_not_describe_every_sub_score_on_five_levels(levels, why):
    with pytest.raises(Exception, match=why):
        parse_profile(profile_text(sub_score_levels=levels))
