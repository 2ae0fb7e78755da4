"""The judge protocol shared by the offline, Bedrock and scripted judges.

A judge answers one ``JudgeRequest`` (one dimension of one test case, listing the sub-scores that
the deterministic checks could not settle) with a ``JudgeOutcome``. An outcome either carries a
validated ``JudgeVerdict`` or an ``error`` saying why there is none. It never carries a made-up score.

Combined mode (direct engine only): a judge that also has ``judge_combined`` answers a
``CombinedJudgeRequest`` (every dimension of one case that needs the judge) with ONE call and a
``CombinedJudgeOutcome`` holding one verdict per dimension, or one error for all of them.

Optional judge methods (looked up with getattr, so a minimal judge needs only ``judge``):
    judge_combined(request: CombinedJudgeRequest, rubric) -> CombinedJudgeOutcome
    request_text(request: JudgeRequest | CombinedJudgeRequest, rubric) -> str
        the exact text the judge would send (the verdict cache hashes it)
    set_observer(observer)    receives call_started()/call_finished(token, throttled) per model call
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from fmquality.domain.scores import JudgeUsage
from fmquality.domain.case import TestCase

if TYPE_CHECKING:
    from fmquality.config.rubric import Rubric


class JudgeRequest(BaseModel):
    """What a judge is asked for one dimension of one case."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    dimension: str
    sub_scores: list[str] = Field(min_length=1)
    case: TestCase
    rubric_version: str
    # Static rubric text for this dimension (cacheable prefix), and the case as data for the judge:
    # the scheme's rendering of it (JSON-ready; a model judge fences it once, with the hints).
    guidance: str
    case_data: dict[str, Any]
    # What the deterministic checks already found, so the judge does not re-decide it.
    check_findings: list[str] = Field(default_factory=list)


class JudgeVerdict(BaseModel):
    """The structured verdict a judge returns. Extra keys are refused: output that does not
    validate is not a verdict.

    ``abstained`` names sub-scores the judge found no evidence to grade, each with the reason (the
    offline judge, which reads signals and may find none); such a sub-score is left unscored and out
    of the weighting, never given a made-up number. A model judge must answer every sub-score asked.
    """

    model_config = ConfigDict(extra="forbid")

    sub_scores: dict[str, float]
    rationale: str = Field(min_length=1)
    evidence: list[str] = Field(default_factory=list)
    # None: the judge gave no measure of its confidence (the offline judge has none), not a default.
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    abstained: dict[str, str] = Field(default_factory=dict)
    # The weight a heuristic reading earns in the composite, 0..1: the offline judge's measured
    # agreement with people per sub-score (judges/offline/agreement.yaml). Absent: full weight, as a
    # model judge's verdict has.
    weights: dict[str, float] = Field(default_factory=dict)

    @field_validator("sub_scores")
    @classmethod
    def _in_range(cls, scores: dict[str, float]) -> dict[str, float]:
        for name, value in scores.items():
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"sub-score {name}={value} is outside 0..1")
        return scores

    @model_validator(mode="after")
    def _scored_or_abstained(self) -> "JudgeVerdict":
        both = set(self.sub_scores) & set(self.abstained)
        if both:
            raise ValueError(f"sub-scores both scored and abstained: {sorted(both)}")
        if any(not reason.strip() for reason in self.abstained.values()):
            raise ValueError("an abstained sub-score needs its reason")
        return self


class _OutcomeBase(BaseModel):
    """What every judge call reports besides its verdict(s)."""

    error: str | None = None
    calls: int = 0
    usage: JudgeUsage = Field(default_factory=JudgeUsage)
    prompt: str | None = None
    raw: str | None = None
    from_cache: bool = False
    # True when the failure was throttling that outlived the judge's own retries: an orchestrator
    # (Step Functions) may retry the whole task later instead of recording the dimension unscored.
    throttled: bool = False


class JudgeOutcome(_OutcomeBase):
    verdict: JudgeVerdict | None = None

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
    """Sub-scores asked for and neither scored nor abstained with a reason (which makes the verdict
    unusable)."""
    return [name for name in request.sub_scores if name not in verdict.sub_scores and name not in verdict.abstained]


# -------------------------------------------------------------------------------------------------
# Combined mode: one call per case for every dimension that needs the judge
# -------------------------------------------------------------------------------------------------


class CombinedJudgeRequest(BaseModel):
    """The per-dimension requests of ONE case, answered by one call."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    requests: list[JudgeRequest] = Field(min_length=1)

    @model_validator(mode="after")
    def _one_case_distinct_dimensions(self) -> "CombinedJudgeRequest":
        ids = {r.case.test_id for r in self.requests}
        versions = {r.rubric_version for r in self.requests}
        dimensions = [r.dimension for r in self.requests]
        if len(ids) != 1 or len(versions) != 1:
            raise ValueError("a combined request holds the dimensions of one case under one rubric version")
        if len(set(dimensions)) != len(dimensions):
            raise ValueError(f"a combined request names each dimension once, got {dimensions}")
        return self

    @property
    def case(self) -> TestCase:
        return self.requests[0].case

    @property
    def rubric_version(self) -> str:
        return self.requests[0].rubric_version

    @property
    def dimensions(self) -> list[str]:
        return [r.dimension for r in self.requests]

    @property
    def cache_dimension(self) -> str:
        """How the verdict cache names what was asked: "combined:relevance+fluency"."""
        return "combined:" + "+".join(self.dimensions)

    def sub_scores(self) -> dict[str, list[str]]:
        return {r.dimension: list(r.sub_scores) for r in self.requests}


class CombinedJudgeOutcome(_OutcomeBase):
    """One call's result: a verdict per requested dimension, or an error for all of them."""

    verdicts: dict[str, JudgeVerdict] | None = None

    @property
    def ok(self) -> bool:
        return self.verdicts is not None and self.error is None


def split_combined(request: CombinedJudgeRequest, outcome: CombinedJudgeOutcome) -> dict[str, JudgeOutcome]:
    """One ``JudgeOutcome`` per dimension of a combined call.

    The rules are those of a per-dimension verdict, applied to the call as a whole: a failed call,
    a missing dimension or a missing requested sub-score leaves EVERY dimension of the request
    without a verdict, with the same reason (one call, one verdict: a partial answer is not
    trusted). The call's count, tokens, prompt and raw reply are recorded once, on the first
    dimension, so summing over dimensions counts the call once.
    """
    reason = outcome.error
    verdicts = outcome.verdicts or {}
    if not reason and outcome.verdicts is None:
        reason = "judge returned no verdict"
    if not reason:
        lacking = {
            r.dimension: missing_sub_scores(r, verdicts[r.dimension]) if r.dimension in verdicts else list(r.sub_scores)
            for r in request.requests
        }
        lacking = {d: names for d, names in lacking.items() if names}
        if lacking:
            reason = f"combined judge verdict lacks sub-scores {lacking}"
    out: dict[str, JudgeOutcome] = {}
    for index, sub in enumerate(request.requests):
        first = index == 0
        common: dict[str, Any] = {
            "calls": outcome.calls if first else 0,
            "usage": outcome.usage if first else JudgeUsage(),
            "prompt": outcome.prompt if first else None,
            "raw": outcome.raw if first else None,
            "from_cache": outcome.from_cache,
        }
        if reason:
            out[sub.dimension] = JudgeOutcome(error=reason, throttled=outcome.throttled, **common)
        else:
            out[sub.dimension] = JudgeOutcome(verdict=verdicts[sub.dimension], **common)
    return out


def supports_combined(judge: Any) -> bool:
    flag = getattr(judge, "supports_combined", None)
    if isinstance(flag, bool):
        return flag
    return callable(getattr(judge, "judge_combined", None))


def canonical_request_json(request: JudgeRequest | CombinedJudgeRequest) -> str:
    """A stable text of a request, for judges that send no prompt (offline, scripted): the verdict
    cache hashes it. Sorted keys and fixed separators, so equal requests give equal text."""
    return json.dumps(request.model_dump(mode="json"), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
