"""The input events of the per-item steps of a run (Generate, the scorers, ScoreCase, Composite), parsed
here in the core so that the Lambda handlers stay thin (``handlers.events`` re-exports them). A
malformed event raises ``pydantic.ValidationError`` whose message names the field (e.g.
``item.intent``). Prepare's and Aggregate's inputs are ``run.prepare.ExecutionInput`` and
``run.aggregate.AggregateInput``."""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from fmquality.domain.results import Arm, Generation
from fmquality.domain.scores import DimensionScore
from fmquality.domain.case import TestCase


class ScoreEvent(BaseModel):
    """One dimension of one item (the scorer functions)."""

    model_config = ConfigDict(extra="ignore")

    run_id: str
    bucket: str = Field(min_length=3)
    rubric_key: str = Field(min_length=1)
    item: TestCase
    # Names a cut score's stored trace (run.layout.judge_trace_key): a paired run scores each case twice.
    arm: Arm = "candidate"


class ScoreCaseEvent(ScoreEvent):
    """Every dimension of one item with ONE combined judge call (the ScoreCase function): the Map item's
    whole state. Keys the handler does not use (arm, generation, targets_key, ...) are kept and returned
    with ``scores`` added, since its output replaces the state."""

    model_config = ConfigDict(extra="allow")

    # Prepare resolved it for the run; the ASL only routes "combined" runs here.
    judge_mode: Literal["per_dimension", "combined"] = "combined"


class GenerateEvent(BaseModel):
    """One (case, arm) item before scoring: the Map item's whole state. Keys the handler does not use
    (rubric_key, generate, ...) are kept and returned, since its output replaces the state."""

    model_config = ConfigDict(extra="allow")

    run_id: str
    bucket: str = Field(min_length=3)
    targets_key: str = Field(min_length=1)
    arm: Arm = "candidate"
    item: TestCase


class StepFunctionsError(BaseModel):
    """What a Catch puts in ResultPath: {"Error": name, "Cause": text (often Lambda's JSON)}."""

    model_config = ConfigDict(extra="ignore")

    Error: str = "States.Unknown"
    Cause: str | None = None

    def describe(self) -> str:
        """"<Error>: <message>", reading Lambda's JSON cause down to its errorMessage."""
        message = self.Cause or ""
        try:
            parsed = json.loads(message)
        except (TypeError, ValueError):
            parsed = None
        if isinstance(parsed, dict) and parsed.get("errorMessage"):
            message = str(parsed["errorMessage"])
        message = " ".join(message.split())[:1000]
        return f"{self.Error}: {message}" if message else self.Error


class CompositeEvent(BaseModel):
    """The dimension scores of one item (the Parallel's output, in any order): one per dimension of the
    run rubric's profile, checked with ``check_dimensions`` once the rubric is read."""

    model_config = ConfigDict(extra="ignore")

    mode: Literal["score"] = "score"
    run_id: str
    bucket: str = Field(min_length=3)
    rubric_key: str = Field(min_length=1)
    item: TestCase
    arm: Arm = "candidate"
    generation: Generation | None = None  # None: the item's own recorded response was scored
    scores: list[DimensionScore] = Field(min_length=1)

    @model_validator(mode="after")
    def _one_score_per_dimension(self) -> "CompositeEvent":
        names = [s.dimension for s in self.scores]
        if len(set(names)) != len(names):
            raise ValueError(f"scores must hold one of each dimension, each once; got {sorted(names)}")
        return self

    def check_dimensions(self, dimensions: list[str]) -> None:
        """The scores must be exactly one per dimension of the run rubric's profile; raised as a
        ValidationError naming ``scores``, like every other malformed event."""
        names = sorted(s.dimension for s in self.scores)
        if names == sorted(dimensions):
            return
        from pydantic_core import InitErrorDetails, PydanticCustomError

        message = f"scores must hold exactly one of each of {list(dimensions)}, got {names}"
        raise ValidationError.from_exception_data("event", [InitErrorDetails(
            type=PydanticCustomError("dimension_mismatch", message), loc=("scores",), input=names)])

    def scores_by_dimension(self) -> dict[str, DimensionScore]:
        return {s.dimension: s for s in self.scores}


class CompositeErrorEvent(BaseModel):
    """An item whose scoring failed after its retries (the Catch): recorded as an explicit error."""

    model_config = ConfigDict(extra="ignore")

    mode: Literal["error"]
    run_id: str
    bucket: str = Field(min_length=3)
    rubric_key: str = Field(min_length=1)
    # Kept as a dict: the error record needs only test_id/intent/locale/tags, and must be written
    # even if the item itself was what broke.
    item: dict[str, Any]
    arm: Arm = "candidate"
    # Kept as a dict too, for the same reason: the record must be written whatever broke.
    generation: dict[str, Any] | None = None
    error: StepFunctionsError = Field(default_factory=StepFunctionsError)


def parse_composite_event(event: dict[str, Any]) -> CompositeEvent | CompositeErrorEvent:
    if isinstance(event, dict) and event.get("mode") == "error":
        return CompositeErrorEvent.model_validate(event)
    return CompositeEvent.model_validate(event)


def check_dimension(dimension: str, dimensions: list[str], profile: str) -> None:
    """A scorer's DIMENSION must be a dimension of the run rubric's profile; raised as a
    ValidationError naming the variable."""
    if dimension in dimensions:
        return
    from pydantic_core import InitErrorDetails, PydanticCustomError

    message = f"not a dimension of profile {profile}: expected one of {', '.join(map(repr, dimensions))}"
    raise ValidationError.from_exception_data("ScorerEnv", [InitErrorDetails(
        type=PydanticCustomError("unknown_dimension", message), loc=("DIMENSION",), input=dimension)])


def check_category(item: TestCase, categories: list[str], loc: tuple[str, ...] = ("item", "intent")) -> None:
    """The item's intent must be a category of the run rubric's profile (TestCase takes any string;
    the rubric is only known once the event names it). Raised as a ValidationError naming the field,
    like every other malformed event."""
    if item.intent in categories:
        return
    from pydantic_core import InitErrorDetails, PydanticCustomError

    message = f"Input should be one of {', '.join(repr(c) for c in categories)} (got {item.intent!r})"
    raise ValidationError.from_exception_data("event", [InitErrorDetails(
        type=PydanticCustomError("unknown_category", message), loc=loc, input=item.intent)])
