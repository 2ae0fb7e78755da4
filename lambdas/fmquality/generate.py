"""Ask a target for the answer of one case: retries, timing and the ``Generation`` record.

``generate`` never raises for a target failure: after its attempts it returns the case unchanged
and a Generation with ``response=None`` and ``error``, which the caller turns into an error record
(a generation failure is never a score).
"""

from __future__ import annotations

import random
import socket
import time
from collections.abc import Callable

from fmquality.models import Generation, TestCase
from fmquality.targets.base import Target, TargetError, TargetReply

# Full jitter: the pause before retry n (0-based) is uniform in [0, min(cap, base * 2**n)].
BASE_DELAY_S = 0.5
MAX_DELAY_S = 20.0
MAX_RETRY_AFTER_S = 30.0


def backoff_delay(retry_index: int, rng: Callable[[], float] = random.random) -> float:
    return rng() * min(MAX_DELAY_S, BASE_DELAY_S * (2**retry_index))


def generate(
    case: TestCase,
    target: Target,
    *,
    sleep: Callable[[float], None] = time.sleep,
    rng: Callable[[], float] = random.random,
    clock: Callable[[], float] = time.perf_counter,
) -> tuple[TestCase, Generation]:
    """The case with ``response`` replaced by exactly what the target answered, and how it was got."""
    spec = target.spec
    if spec.kind == "recorded":
        if case.response is None:
            return case, Generation(target_id=target.id, target_kind="recorded", error="no recorded response")
        return case, Generation(target_id=target.id, target_kind="recorded", response=case.response)

    attempts = 0
    while True:
        attempts += 1
        started = clock()
        try:
            reply = target.answer(case)
        except TargetError as exc:
            error, retryable, retry_after = str(exc), exc.retryable, exc.retry_after_s
        except (TimeoutError, socket.timeout) as exc:
            error, retryable, retry_after = f"timed out: {exc}".rstrip(": "), True, None
        except Exception as exc:  # noqa: BLE001 - a target's bug ends this case, never the run
            error, retryable, retry_after = f"{type(exc).__name__}: {exc}", False, None
        else:
            return _answered(case, target, reply, attempts, (clock() - started) * 1000.0)
        if not retryable or attempts >= spec.max_attempts:
            reason = error if attempts == 1 else f"{error} (after {attempts} attempts)"
            return case, Generation(target_id=target.id, target_kind=spec.kind, target_version=target.version,
                                    attempts=attempts, error=reason)
        pause = min(retry_after, MAX_RETRY_AFTER_S) if retry_after is not None else backoff_delay(attempts - 1, rng)
        sleep(pause)


def _answered(case: TestCase, target: Target, reply: TargetReply, attempts: int, measured_ms: float
              ) -> tuple[TestCase, Generation]:
    generation = Generation(
        target_id=target.id,
        target_kind=target.spec.kind,
        target_version=reply.served_version or target.version,
        response=reply.response,
        latency_ms=reply.latency_ms if reply.latency_ms is not None else round(measured_ms, 3),
        usage=reply.usage,
        cost_usd=reply.cost_usd,
        citations=reply.citations,
        tool_calls=reply.tool_calls,
        attempts=attempts,
    )
    return case.model_copy(update={"response": reply.response}), generation
