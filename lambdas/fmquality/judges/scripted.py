"""The scripted judge for tests: returns recorded verdicts (or failures) and counts its calls."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Union

from fmquality.judges.base import (
    CombinedJudgeOutcome,
    CombinedJudgeRequest,
    JudgeOutcome,
    JudgeRequest,
    JudgeVerdict,
    canonical_request_json,
)

if TYPE_CHECKING:
    from fmquality.config.rubric import Rubric

# A script entry is a verdict, an error message (the judge failed), or a function of the request.
ScriptEntry = Union[JudgeVerdict, str, Callable[[JudgeRequest], Union[JudgeVerdict, str]]]
# The dimension name a script uses for a whole combined call: (test_id, COMBINED) -> entry, where a
# callable receives the CombinedJudgeRequest and may return {dimension: verdict} or an error string.
COMBINED = "combined"


class ScriptedJudge:
    name = "scripted"
    supports_combined = True

    def __init__(
        self,
        script: dict[tuple[str, str], ScriptEntry] | None = None,
        default: ScriptEntry | None = None,
        model_id: str = "scripted-v1",
    ) -> None:
        """``script`` maps (test_id, dimension) to an entry; ``default`` answers anything else.
        With neither, a request gets full marks on every asked sub-score, which tests use as an
        explicit, visible choice ("the judge agrees"), never as a fallback for a failure."""
        self.script = dict(script or {})
        self.default = default
        self.model_id = model_id
        self.calls: list[tuple[str, str]] = []
        self._lock = threading.Lock()

    def _entry(self, request: JudgeRequest) -> JudgeVerdict | str:
        entry = self.script.get((request.case.test_id, request.dimension), self.default)
        if entry is None:
            entry = JudgeVerdict(sub_scores={n: 1.0 for n in request.sub_scores}, rationale="scripted: agrees")
        if callable(entry) and not isinstance(entry, JudgeVerdict):
            entry = entry(request)
        return entry

    def judge(self, request: JudgeRequest, rubric: "Rubric") -> JudgeOutcome:
        with self._lock:
            self.calls.append((request.case.test_id, request.dimension))
        entry = self._entry(request)
        if isinstance(entry, str):
            return JudgeOutcome(error=entry, calls=1)
        return JudgeOutcome(verdict=entry, calls=1)

    def judge_combined(self, request: CombinedJudgeRequest, rubric: "Rubric") -> CombinedJudgeOutcome:
        """One call. A (test_id, "combined") entry answers the whole call; otherwise each dimension's
        own entry is used, and any error entry fails the whole call (one call, one failure)."""
        with self._lock:
            self.calls.append((request.case.test_id, COMBINED))
        whole = self.script.get((request.case.test_id, COMBINED))
        if whole is not None:
            answer = whole(request) if callable(whole) and not isinstance(whole, JudgeVerdict) else whole
            if isinstance(answer, str):
                return CombinedJudgeOutcome(error=answer, calls=1)
            return CombinedJudgeOutcome(verdicts=dict(answer), calls=1)
        verdicts: dict[str, JudgeVerdict] = {}
        for sub in request.requests:
            entry = self._entry(sub)
            if isinstance(entry, str):
                return CombinedJudgeOutcome(error=entry, calls=1)
            verdicts[sub.dimension] = entry
        return CombinedJudgeOutcome(verdicts=verdicts, calls=1)

    def request_text(self, request: JudgeRequest | CombinedJudgeRequest, rubric: "Rubric") -> str:
        return canonical_request_json(request)
