"""One case's outcome: how its answer was obtained (``Generation``) and its ``results.jsonl`` line."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from fmquality.domain.scores import DimensionScore, HardFailure, JudgeUsage


ResultStatus = Literal["scored", "unscored", "error"]


Arm = Literal["candidate", "control"]


ARMS: tuple[str, ...] = ("candidate", "control")


class GenerationUsage(BaseModel):
    input_tokens: int = 0
    output_tokens: int = 0


class Generation(BaseModel):
    """How the answer of one case was obtained from a target (``recorded``: the dataset line's own).

    ``response`` is exactly what the target returned; None (with ``error``) when generation failed
    after its retries, and such an item is an error record, never scored."""

    target_id: str
    target_kind: str
    target_version: str | None = None
    response: str | None = None
    latency_ms: float | None = None
    usage: GenerationUsage = Field(default_factory=GenerationUsage)
    cost_usd: float | None = None
    citations: list[Any] = Field(default_factory=list)
    tool_calls: list[Any] = Field(default_factory=list)
    attempts: int = 1
    error: str | None = None
    # Why the target stopped: "end_turn" for a complete answer; "max_tokens", "guardrail_intervened",
    # "content_filtered" for one it cut or blocked (the rubric's ``generation.incomplete_stop_reasons``).
    stop_reason: str | None = None
    # The failure was the target's being down or uncallable (``TargetError.unavailable``), not this
    # case's: what the run's target check counts. Never serialized (a Lambda says it by its error name).
    unavailable: bool = Field(default=False, exclude=True)


class EvaluationResult(BaseModel):
    """The result of one test case: the ``results.jsonl`` line (``control_results.jsonl`` for the
    control arm of a paired run)."""

    run_id: str | None = None
    test_id: str
    arm: Arm = "candidate"
    intent: str
    locale: str
    status: ResultStatus
    passed: bool
    composite_score: float | None = None
    threshold: float
    dimension_scores: dict[str, DimensionScore] = Field(default_factory=dict)
    hard_failures: list[HardFailure] = Field(default_factory=list)
    failure_reasons: list[str] = Field(default_factory=list)
    judge_calls: int = 0
    judge_usage: JudgeUsage = Field(default_factory=JudgeUsage)
    rubric_version: str
    tags: list[str] = Field(default_factory=list)
    label: dict[str, Any] | None = None  # the case's label as given, for calibration
    # Profiles with letter grades (tool-use): 100 x the composite and its grade; None otherwise.
    total_100: float | None = None
    grade: str | None = None
    # The catalog entries the case was scored with (its own snapshot and the products in play), so a
    # reviewer sees what the checks and the judge were given.
    catalog_asins: list[str] = Field(default_factory=list)
    # What was said: the shopper's last query and the answer that was scored (None: no answer).
    query: str | None = None
    response: str | None = None
    generation: Generation | None = None
    error: str | None = None
