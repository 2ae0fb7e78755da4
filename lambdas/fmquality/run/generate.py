"""Ask a target for the answer of one case: retries, timing and the ``Generation`` record.

``generate`` never raises for a target failure: after its attempts it returns the case unchanged
and a Generation with ``response=None`` and ``error``, which the caller turns into an error record
(a generation failure is never a score).

An answer the target did not finish (its stop reason is in the rubric's
``generation.incomplete_stop_reasons``: cut at max_tokens, blocked by a guardrail or a content
filter) is recorded with its ``stop_reason``. With ``generation.fail_incomplete`` (the default) it
is an error too, ``generation incomplete: stopped by <reason>``, never retried (the same request stops
the same way) and never scored; its partial text stays in ``Generation.response`` for a reviewer.
Otherwise it is scored, and the report flags it.
"""

from __future__ import annotations

import random
import socket
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from fmquality.domain.results import Generation
from fmquality.domain.case import TestCase
from fmquality.targets.base import Target, TargetReply
from fmquality.domain.errors import TargetError
from fmquality.retry import full_jitter

if TYPE_CHECKING:
    from fmquality.config.rubric import GenerationRules

# The pause before retry n (fmquality.retry.full_jitter) and the longest Retry-After honoured.
BASE_DELAY_S = 0.5
MAX_DELAY_S = 20.0
MAX_RETRY_AFTER_S = 30.0
INCOMPLETE_PREFIX = "generation incomplete: "


def generation_rules(target: Target, rules: "GenerationRules | None" = None) -> "GenerationRules":
    """The rules given, else those ``make_target`` kept from the run's rubric, else the defaults."""
    if rules is not None:
        return rules
    kept = getattr(target, "generation_rules", None)
    if kept is not None:
        return kept
    from fmquality.config.rubric import GenerationRules

    return GenerationRules()


def is_incomplete(generation: Generation, rules: "GenerationRules") -> bool:
    """The target stopped before finishing the answer (whether or not the run fails such answers)."""
    return generation.stop_reason is not None and generation.stop_reason in rules.incomplete_stop_reasons


def incomplete_error(generation: Generation) -> bool:
    """The generation is an error because its answer was incomplete (not because the target failed)."""
    return bool(generation.error) and generation.error.startswith(INCOMPLETE_PREFIX)


def backoff_delay(retry_index: int, rng: Callable[[], float] = random.random) -> float:
    return full_jitter(retry_index, BASE_DELAY_S, MAX_DELAY_S, rng)


def generate(
    case: TestCase,
    target: Target,
    *,
    sleep: Callable[[float], None] = time.sleep,
    rng: Callable[[], float] = random.random,
    clock: Callable[[], float] = time.perf_counter,
    rules: "GenerationRules | None" = None,
) -> tuple[TestCase, Generation]:
    """The case with ``response`` replaced by exactly what the target answered, and how it was got.
    ``rules`` (the rubric's ``generation``) default to the ones the target was built with."""
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
            unavailable = exc.unavailable
        except (TimeoutError, socket.timeout) as exc:
            error, retryable, retry_after, unavailable = f"timed out: {exc}".rstrip(": "), True, None, False
        except Exception as exc:  # noqa: BLE001 - a target's bug ends this case, never the run
            error, retryable, retry_after, unavailable = f"{type(exc).__name__}: {exc}", False, None, False
        else:
            return _answered(case, target, reply, attempts, (clock() - started) * 1000.0,
                             generation_rules(target, rules))
        if not retryable or attempts >= spec.max_attempts:
            reason = error if attempts == 1 else f"{error} (after {attempts} attempts)"
            return case, Generation(target_id=target.id, target_kind=spec.kind, target_version=target.version,
                                    attempts=attempts, error=reason, unavailable=unavailable)
        pause = min(retry_after, MAX_RETRY_AFTER_S) if retry_after is not None else backoff_delay(attempts - 1, rng)
        sleep(pause)


def _answered(case: TestCase, target: Target, reply: TargetReply, attempts: int, measured_ms: float,
              rules: "GenerationRules") -> tuple[TestCase, Generation]:
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
        stop_reason=reply.stop_reason,
    )
    if rules.fail_incomplete and is_incomplete(generation, rules):
        # Not retried: the same request stops the same way. The case keeps no answer to score.
        return case, generation.model_copy(update={"error": f"{INCOMPLETE_PREFIX}stopped by {reply.stop_reason}"})
    return case.model_copy(update={"response": reply.response}), generation
