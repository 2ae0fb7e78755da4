"""Adaptive concurrency for the direct engine: an AIMD controller over the worker pool.

The controller is a semaphore whose limit moves: workers take a slot per test case
(``with controller.slot():``), and the judge reports every model call to it
(``call_started() -> token`` / ``call_finished(token, outcome)``, see ``BedrockJudge.set_observer``):

- additive increase: each successful call adds ``increase / limit`` to the limit, so the limit grows
  by about ``increase`` per window of ``limit`` calls (TCP's congestion avoidance);
- multiplicative decrease: a throttled call multiplies the limit by ``decrease`` (0.5 by default),
  once per window: the token says which window a call was sent in, and throttles of calls sent
  before the last decrease are counted but do not cut again (they were sent under the old limit).
  Nor do throttles while more slots are still in use than the cut allows: cases that held a slot
  before the cut keep making their calls until they finish, so the cut has not taken effect yet;
- the limit stays within [minimum, maximum]; errors other than throttling leave it alone.

The judge's own retries (full jitter) run inside a case's slot, so a case that is backing off keeps
its slot: under throttling the work in flight shrinks twice, by the cut and by the waiting cases.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal

CallOutcome = Literal["ok", "throttled", "error"]


class AimdController:
    def __init__(
        self,
        initial: int,
        *,
        minimum: int = 1,
        maximum: int = 64,
        increase: float = 1.0,
        decrease: float = 0.5,
    ) -> None:
        if minimum < 1 or maximum < minimum:
            raise ValueError("need 1 <= minimum <= maximum")
        if not 0.0 < decrease < 1.0:
            raise ValueError("decrease must be within (0, 1)")
        if increase <= 0:
            raise ValueError("increase must be positive")
        self.minimum = minimum
        self.maximum = maximum
        self.increase = increase
        self.decrease = decrease
        self._limit = float(min(maximum, max(minimum, initial)))
        self._in_use = 0
        self._epoch = 0
        self._cond = threading.Condition()
        self.initial = int(self._limit)
        self.successes = 0
        self.throttles = 0
        self.errors = 0
        self.decreases = 0
        self.peak_limit = int(self._limit)
        self.lowest_limit = int(self._limit)
        self.peak_in_use = 0

    # -- the pool's side ---------------------------------------------------------------------------

    @property
    def limit(self) -> int:
        """Slots currently allowed (the float limit, rounded down, never below the minimum)."""
        return max(self.minimum, math.floor(self._limit))

    @property
    def in_use(self) -> int:
        return self._in_use

    def acquire(self) -> None:
        with self._cond:
            while self._in_use >= self.limit:
                self._cond.wait()
            self._in_use += 1
            self.peak_in_use = max(self.peak_in_use, self._in_use)

    def release(self) -> None:
        with self._cond:
            if self._in_use <= 0:
                raise RuntimeError("release() without acquire()")
            self._in_use -= 1
            self._cond.notify()

    @contextmanager
    def slot(self) -> Iterator[None]:
        self.acquire()
        try:
            yield
        finally:
            self.release()

    # -- the judge's side (the observer protocol) ----------------------------------------------------

    def call_started(self) -> int:
        with self._cond:
            return self._epoch

    def call_finished(self, token: Any, outcome: CallOutcome | bool) -> None:
        """``outcome`` "ok", "throttled" or "error" (a bool means throttled / not throttled)."""
        if isinstance(outcome, bool):
            outcome = "throttled" if outcome else "ok"
        with self._cond:
            if outcome == "throttled":
                self.throttles += 1
                # The first throttle of a window cuts, once the previous cut has taken effect.
                if token == self._epoch and self._in_use <= self.limit:
                    self._limit = max(float(self.minimum), self._limit * self.decrease)
                    self._epoch += 1
                    self.decreases += 1
                    self.lowest_limit = min(self.lowest_limit, self.limit)
            elif outcome == "ok":
                self.successes += 1
                before = self.limit
                self._limit = min(float(self.maximum), self._limit + self.increase / self._limit)
                self.peak_limit = max(self.peak_limit, self.limit)
                if self.limit > before:
                    self._cond.notify_all()
            else:
                self.errors += 1

    def snapshot(self) -> dict[str, Any]:
        with self._cond:
            return {
                "initial": self.initial,
                "limit": self.limit,
                "minimum": self.minimum,
                "maximum": self.maximum,
                "peak_limit": self.peak_limit,
                "lowest_limit": self.lowest_limit,
                "peak_in_use": self.peak_in_use,
                "successes": self.successes,
                "throttles": self.throttles,
                "errors": self.errors,
                "decreases": self.decreases,
            }
