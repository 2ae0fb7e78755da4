"""The judge protocol shared by the offline, Bedrock and scripted judges.

A judge answers one ``JudgeRequest`` (one dimension of one test case, listing the sub-scores that
the deterministic checks could not settle) with a ``JudgeOutcome``. An outcome either carries a
validated ``JudgeVerdict`` or an ``error`` saying why there is none. It never carries a made-up score.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, field_validator

from fmquality.models import JudgeUsage, TestCase

if TYPE_CHECKING:
    from fmquality.rubric import Rubric


class JudgeThrottled(RuntimeError):
    """The judge service throttled us after every retry. Step Functions retries on this name."""


class JudgeRequest(BaseModel):
    """What a judge is asked for one dimension of one case."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    dimension: str
    sub_scores: list[str] = Field(min_length=1)
    case: TestCase
    rubric_version: str
    # Static rubric text for this dimension (cacheable prefix) and the case rendered as data.
    guidance: str
    case_text: str
    # What the deterministic checks already found, so the judge does not re-decide it.
    check_findings: list[str] = Field(default_factory=list)


class JudgeVerdict(BaseModel):
    """The structured verdict a judge returns. Extra keys are refused: output that does not
    validate is not a verdict."""

    model_config = ConfigDict(extra="forbid")

    sub_scores: dict[str, float]
    rationale: str = Field(min_length=1)
    evidence: list[str] = Field(default_factory=list)
    confidence: float = Field(default=0.8, ge=0.0, le=1.0)

    @field_validator("sub_scores")
    @classmethod
    def _in_range(cls, scores: dict[str, float]) -> dict[str, float]:
        for name, value in scores.items():
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"sub-score {name}={value} is outside 0..1")
        return scores


class JudgeOutcome(BaseModel):
    verdict: JudgeVerdict | None = None
    error: str | None = None
    calls: int = 0
    usage: JudgeUsage = Field(default_factory=JudgeUsage)
    prompt: str | None = None
    raw: str | None = None
    from_cache: bool = False
    # True when the failure was throttling that outlived the judge's own retries: an orchestrator
    # (Step Functions) may retry the whole task later instead of recording the dimension unscored.
    throttled: bool = False

    @property
    def ok(self) -> bool:
        return self.verdict is not None and self.error is None


@runtime_checkable
class Judge(Protocol):
    """Anything that can judge one dimension of one case."""

    name: str
    model_id: str

    def judge(self, request: JudgeRequest, rubric: "Rubric") -> JudgeOutcome: ...


def missing_sub_scores(request: JudgeRequest, verdict: JudgeVerdict) -> list[str]:
    """Sub-scores asked for but absent from the verdict (which makes the verdict unusable)."""
    return [name for name in request.sub_scores if name not in verdict.sub_scores]
