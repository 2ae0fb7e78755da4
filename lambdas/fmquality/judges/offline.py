"""The offline judge: deterministic, no network. Each dimension module supplies the evidence-based
verdict for the sub-scores its checks left open (``offline_verdict``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fmquality.dimensions import dimension_module
from fmquality.judges.base import (
    CombinedJudgeOutcome,
    CombinedJudgeRequest,
    JudgeOutcome,
    JudgeRequest,
    NoEvidence,
    canonical_request_json,
)

if TYPE_CHECKING:
    from fmquality.rubric import Rubric


class OfflineJudge:
    name = "offline"
    model_id = "offline-heuristic-v1"
    supports_combined = True

    def judge(self, request: JudgeRequest, rubric: "Rubric") -> JudgeOutcome:
        module = dimension_module(request.dimension)
        try:
            verdict = module.offline_verdict(request.case, rubric, list(request.sub_scores))
        except NoEvidence as exc:
            return JudgeOutcome(error=f"offline judge: {exc}", calls=0)
        # The offline judge is local computation, not a model call: it counts no judge calls.
        return JudgeOutcome(verdict=verdict, calls=0)

    def judge_combined(self, request: CombinedJudgeRequest, rubric: "Rubric") -> CombinedJudgeOutcome:
        """Each dimension module's own offline verdict: the same numbers as per-dimension mode."""
        try:
            verdicts = {
                r.dimension: dimension_module(r.dimension).offline_verdict(r.case, rubric, list(r.sub_scores))
                for r in request.requests
            }
        except NoEvidence as exc:
            return CombinedJudgeOutcome(error=f"offline judge: {exc}", calls=0)
        return CombinedJudgeOutcome(verdicts=verdicts, calls=0)

    def request_text(self, request: JudgeRequest | CombinedJudgeRequest, rubric: "Rubric") -> str:
        return canonical_request_json(request)
