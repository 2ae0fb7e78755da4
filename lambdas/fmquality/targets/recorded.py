"""The ``recorded`` target: the dataset line's own ``response`` (production samples, old answers)."""

from __future__ import annotations

from fmquality.domain.case import TestCase
from fmquality.targets.base import RECORDED, TargetReply, TargetSpec
from fmquality.domain.errors import TargetError


class RecordedTarget:
    def __init__(self, spec: TargetSpec | None = None) -> None:
        self.spec = spec or TargetSpec(kind="recorded")

    @property
    def id(self) -> str:
        return RECORDED

    @property
    def version(self) -> str | None:
        return None

    def answer(self, case: TestCase) -> TargetReply:
        if case.response is None:
            raise TargetError("no recorded response")
        return TargetReply(response=case.response)
