"""Rubric validation: every intent, weights summing to 1, thresholds within 0..1."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from fmquality.domain.case import Intent
from fmquality.domain.errors import RubricError
from fmquality.config.rubric import default_rubric_path, load_rubric, parse_rubric

DESIGN_TABLE = {  # DESIGN.md section 5
    "recommendation": (0.40, 0.20, 0.20, 0.20, 0.75),
    "product_question": (0.25, 0.40, 0.20, 0.15, 0.80),
    "faq": (0.20, 0.40, 0.25, 0.15, 0.85),
    "order_tracking": (0.15, 0.50, 0.25, 0.10, 0.90),
    "return_request": (0.15, 0.50, 0.25, 0.10, 0.90),
    "promotion": (0.30, 0.35, 0.20, 0.15, 0.80),
    "checkout_help": (0.20, 0.40, 0.25, 0.15, 0.85),
    "chitchat": (0.30, 0.10, 0.30, 0.30, 0.70),
}


def _raw() -> dict:
    return yaml.safe_load(default_rubric_path().read_text(encoding="utf-8"))


def test_shipped_rubric_matches_the_design_table():
    rubric = load_rubric()
    for intent, (rel, fa, con, flu, threshold) in DESIGN_TABLE.items():
        w = rubric.weights_for(intent)
        assert (w["relevance"], w["factual_accuracy"], w["consistency"], w["fluency"]) == (rel, fa, con, flu)
        assert rubric.threshold_for(intent) == threshold
    assert rubric.gate.min_pass_rate == 0.9 and rubric.gate.max_unscored_rate == 0.02
    assert rubric.gate.baseline.max_mean_drop == 0.005 and rubric.gate.baseline.max_subset_drop == 0.02


def test_embedded_rubric_is_the_datasets_rubric():
    repo_copy = Path(__file__).resolve().parents[2] / "datasets" / "rubrics" / "mangaassist-v3.yaml"
    assert default_rubric_path().read_bytes() == repo_copy.read_bytes()


def test_missing_intent_is_rejected():
    raw = _raw()
    del raw["intents"]["chitchat"]
    with pytest.raises(RubricError, match="intents.*chitchat"):
        parse_rubric(yaml.safe_dump(raw), "r.yaml")


def test_weights_must_sum_to_one():
    raw = _raw()
    raw["intents"]["faq"]["weights"]["fluency"] = 0.5
    with pytest.raises(RubricError, match=r"r\.yaml.*intents\.faq\.weights.*sum to 1"):
        parse_rubric(yaml.safe_dump(raw), "r.yaml")


@pytest.mark.parametrize("threshold", [-0.1, 1.2])
def test_threshold_out_of_range_is_rejected(threshold):
    raw = _raw()
    raw["intents"]["promotion"]["threshold"] = threshold
    with pytest.raises(RubricError, match="intents.promotion.threshold"):
        parse_rubric(yaml.safe_dump(raw), "r.yaml")


def test_unknown_sub_score_is_rejected():
    raw = _raw()
    raw["sub_score_weights"]["fluency"]["style"] = 0.1
    with pytest.raises(RubricError, match="sub_score_weights"):
        parse_rubric(yaml.safe_dump(raw), "r.yaml")


def test_unreadable_rubric_names_the_file(tmp_path):
    with pytest.raises(RubricError, match="nope.yaml"):
        load_rubric(tmp_path / "nope.yaml")


def test_every_intent_enum_has_a_rule():
    rubric = load_rubric()
    assert {i.value for i in Intent} == set(rubric.intents)
