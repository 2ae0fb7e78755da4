"""The offline judge: deterministic, no network. Each dimension module supplies the evidence-based
verdict for the sub-scores its checks left open (``offline_verdict``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fmquality.dimensions import dimension_module
from fmquality.judges.base import JudgeOutcome, JudgeRequest

if TYPE_CHECKING:
    from fmquality.rubric import Rubric


class OfflineJudge:
    name = "offline"
    model_id = "offline-heuristic-v1"

    def judge(self, request: JudgeRequest, rubric: "Rubric") -> JudgeOutcome:
        module = dimension_module(request.dimension)
        verdict = module.offline_verdict(request.case, rubric, list(request.sub_scores))
        # The offline judge is local computation, not a model call: it counts no judge calls.
        return JudgeOutcome(verdict=verdict, calls=0)
