"""The input event of each handler. A malformed event raises ``pydantic.ValidationError`` whose
message names the field (e.g. ``item.intent`` or ``dataset``)."""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from fmquality.adapters.dynamodb import CATALOG_REF_PREFIX, catalog_ref_version
from fmquality.domain.results import Arm, Generation
from fmquality.domain.scores import DimensionScore
from fmquality.domain.case import TestCase
from fmquality.targets.base import TargetSpec

_S3_URI = re.compile(r"^s3://[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9]/.+")
_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._\-]{0,127}$")


def _check_s3_uri(value: str | None) -> str | None:
    if value is not None and not _S3_URI.match(value):
        raise ValueError(f"must be an s3://bucket/key URI, got {value!r}")
    return value


def _parse_target(value: Any) -> TargetSpec | None:
    """A spec string or object (targets.base), parsed so a bad one fails Prepare naming its field."""
    if value is None:
        return None
    try:
        return TargetSpec.parse(value)
    except ValueError as exc:  # pydantic's ValidationError included: flatten it to one readable line
        errors = getattr(exc, "errors", None)
        message = ("; ".join(f"{'.'.join(map(str, e['loc'])) or 'spec'}: {e['msg']}" for e in errors())
                   if callable(errors) else str(exc))
        raise ValueError(f"not a valid target spec ({message})") from None


def _check_run_id(value: str | None) -> str | None:
    if value is not None and not _RUN_ID.match(value):
        raise ValueError("must be 1-128 characters of letters, digits, '.', '_' or '-', starting with a letter or digit")
    return value


class PrepareEvent(BaseModel):
    """The execution input (documented in the README), plus what the state machine adds."""

    # Callers (EventBridge input transformers, the pipeline) may add keys of their own: they are
    # kept in ``model_extra`` and logged, not refused.
    model_config = ConfigDict(extra="allow")

    trigger: str = Field(default="manual", min_length=1, max_length=64)
    dataset: str
    catalog: str | None = None
    rubric: str | None = None
    baseline: str | None = None
    candidate: dict[str, Any] | None = None
    # What answers the cases (default: the recorded responses) and, for a paired run, the control.
    target: TargetSpec | None = None
    control: TargetSpec | None = None
    skip_invalid: bool = False
    # A subset of the dataset (fmquality.run.subsets): an object {"tags": [...], ...} or the CLI grammar.
    filter: dict[str, Any] | str | None = None
    max_concurrency: int | None = Field(default=None, ge=1, le=10000)
    tolerated_failure_percentage: float | None = Field(default=None, ge=0.0, le=100.0)
    # A label of the caller's for the run (kept on the run record). The run id itself is generated:
    # the execution's name, or a timestamp and a random suffix; a given id could reuse, and mix its
    # results into, an existing run (an approved baseline among them).
    run_label: str | None = Field(default=None, max_length=128)
    run_id: str | None = None  # older input: read as the label
    dataset_id: str | None = Field(default=None, min_length=1, max_length=256)
    execution_id: str | None = None
    execution_name: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _flatten_execution_input(cls, data: Any) -> Any:
        """Also accept {"execution_input": <the execution input>, "execution_id": ..., "execution_name": ...}:
        the shape a Task's Parameters can build from "$" and "$$.Execution" without merging objects."""
        if isinstance(data, dict) and isinstance(data.get("execution_input"), dict):
            rest = {k: v for k, v in data.items() if k != "execution_input"}
            return {**data["execution_input"], **rest}
        return data

    @field_validator("dataset", "rubric")
    @classmethod
    def _s3_uris(cls, value: str | None) -> str | None:
        return _check_s3_uri(value)

    @field_validator("target", "control", mode="before")
    @classmethod
    def _target_specs(cls, value: Any) -> TargetSpec | None:
        return _parse_target(value)

    @field_validator("catalog")
    @classmethod
    def _catalog_source(cls, value: str | None) -> str | None:
        """A catalog file in S3, or a snapshot in the evaluation table (dynamodb:latest, dynamodb:<version>)."""
        if value is not None and value.startswith(CATALOG_REF_PREFIX):
            catalog_ref_version(value)
            return value
        return _check_s3_uri(value)

    @field_validator("run_id")
    @classmethod
    def _run_id_shape(cls, value: str | None) -> str | None:
        return _check_run_id(value)

    @field_validator("baseline")
    @classmethod
    def _baseline_shape(cls, value: str | None) -> str | None:
        if value in (None, "", "none", "null"):
            return None
        if value == "auto":
            return value
        return _check_run_id(value)


class ScoreEvent(BaseModel):
    """One dimension of one item (the scorer functions)."""

    model_config = ConfigDict(extra="ignore")

    run_id: str
    bucket: str = Field(min_length=3)
    rubric_key: str = Field(min_length=1)
    item: TestCase


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


class AggregateEvent(BaseModel):
    model_config = ConfigDict(extra="ignore")

    run_id: str
    bucket: str = Field(min_length=3)
    rubric_key: str = Field(min_length=1)
    items_key: str = Field(min_length=1)
    # Absent for a run prepared before targets existed: its answers were the recorded ones.
    targets_key: str | None = None
    dataset_id: str = Field(min_length=1)
    baseline_run_id: str | None = None
    trigger: str = "manual"
    execution_arn: str | None = None


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
