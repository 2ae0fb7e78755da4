"""The scripted judge for tests: returns recorded verdicts (or failures) and counts its calls."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Union

from fmquality.judges.base import JudgeOutcome, JudgeRequest, JudgeVerdict

if TYPE_CHECKING:
    from fmquality.rubric import Rubric

# A script entry is a verdict, an error message (the judge failed), or a function of the request.
ScriptEntry = Union[JudgeVerdict, str, Callable[[JudgeRequest], Union[JudgeVerdict, str]]]


class ScriptedJudge:
    name = "scripted"

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

    def judge(self, request: JudgeRequest, rubric: "Rubric") -> JudgeOutcome:
        with self._lock:
            self.calls.append((request.case.test_id, request.dimension))
        entry = self.script.get((request.case.test_id, request.dimension), self.default)
        if entry is None:
            entry = JudgeVerdict(sub_scores={n: 1.0 for n in request.sub_scores}, rationale="scripted: agrees")
        if callable(entry) and not isinstance(entry, JudgeVerdict):
            entry = entry(request)
        if isinstance(entry, str):
            return JudgeOutcome(error=entry, calls=1)
        return JudgeOutcome(verdict=entry, calls=1)
