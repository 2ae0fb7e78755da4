"""The per-item events parsed in the core (``fmquality.run.item_events``), without AWS: a malformed
event is a ValidationError naming its field, the Catch's error record is read down to Lambda's message,
and the Lambda handlers stay thin entry points (<= 120 lines each; the parsing lives below them)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from fmquality.domain.case import TestCase
from fmquality.domain.scores import DimensionScore
from fmquality.run.item_events import (CompositeErrorEvent, CompositeEvent, GenerateEvent, ScoreCaseEvent,
                                        StepFunctionsError, check_category, check_dimension, parse_composite_event)

HANDLERS = Path(__file__).resolve().parents[2] / "lambdas" / "handlers"
ITEM = {"test_id": "faq-1", "intent": "faq", "query": "Returns?", "response": "Within 15 days."}
BASE = {"run_id": "r", "bucket": "data-bucket", "rubric_key": "runs/r/rubric.yaml", "item": ITEM}


def _score(dimension: str) -> dict:
    return DimensionScore(dimension=dimension, status="scored", score=0.9).model_dump()


def _loc(caught: pytest.ExceptionInfo) -> list[tuple]:
    return [tuple(e["loc"]) for e in caught.value.errors()]


def test_every_handler_module_stays_thin():
    long = {p.name: n for p in HANDLERS.glob("*.py") if (n := len(p.read_text(encoding="utf-8").splitlines())) > 120}
    assert long == {}


def test_a_malformed_item_names_the_field():
    with pytest.raises(ValidationError) as caught:
        GenerateEvent.model_validate({**BASE, "targets_key": "t", "item": {**ITEM, "query": None}})
    assert ("item", "query") in _loc(caught)
    with pytest.raises(ValidationError) as caught:
        CompositeEvent.model_validate({**BASE, "bucket": "x", "scores": [_score("fluency")]})
    assert ("bucket",) in _loc(caught)


def test_state_keys_the_step_does_not_use_are_kept_for_its_output():
    event = ScoreCaseEvent.model_validate({**BASE, "arm": "control", "targets_key": "t"})
    assert event.judge_mode == "combined" and event.model_dump()["targets_key"] == "t"
    assert GenerateEvent.model_validate({**BASE, "targets_key": "t", "generate": True}).model_dump()["generate"] is True


def test_composite_scores_are_one_per_dimension_of_the_profile():
    dims = ["relevance", "factual_accuracy", "consistency", "fluency"]
    with pytest.raises(ValidationError, match="one of each"):
        CompositeEvent.model_validate({**BASE, "scores": [_score("fluency"), _score("fluency")]})
    event = CompositeEvent.model_validate({**BASE, "scores": [_score(d) for d in dims[:3]]})
    with pytest.raises(ValidationError, match="exactly one of each of") as caught:
        event.check_dimensions(dims)
    assert _loc(caught) == [("scores",)]
    full = CompositeEvent.model_validate({**BASE, "scores": [_score(d) for d in dims]})
    full.check_dimensions(dims)
    assert set(full.scores_by_dimension()) == set(dims)


def test_an_error_record_keeps_a_broken_item_and_reads_lambdas_message():
    cause = json.dumps({"errorType": "JudgeThrottled", "errorMessage": "rate   exceeded\n on Converse"})
    event = parse_composite_event({**BASE, "mode": "error", "item": {"test_id": "x", "intent": 7},
                                   "error": {"Error": "JudgeThrottled", "Cause": cause}})
    assert isinstance(event, CompositeErrorEvent) and event.item["intent"] == 7
    assert event.error.describe() == "JudgeThrottled: rate exceeded on Converse"
    assert StepFunctionsError(Error="States.Timeout").describe() == "States.Timeout"
    assert StepFunctionsError(Error="E", Cause="plain text").describe() == "E: plain text"
    assert isinstance(parse_composite_event({**BASE, "scores": [_score("fluency")]}), CompositeEvent)


def test_intent_and_dimension_are_checked_against_the_run_profile():
    case = TestCase.model_validate({**ITEM, "intent": "weather"})
    with pytest.raises(ValidationError, match="got 'weather'") as caught:
        check_category(case, ["faq", "chitchat"])
    assert _loc(caught) == [("item", "intent")]
    check_category(TestCase.model_validate(ITEM), ["faq"])
    with pytest.raises(ValidationError, match="not a dimension of profile research") as caught:
        check_dimension("fluency", ["completeness"], "research")
    assert _loc(caught) == [("DIMENSION",)]
