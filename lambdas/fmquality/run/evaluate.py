"""Evaluate many test cases in-process (the "direct" engine) and one dimension for the scorer Lambda.

Scoring a case is ``scoring.case`` with the rubric's scheme (``fmquality.schemes.scheme_for``); this
module runs many cases:

Throughput (``evaluate_cases``): a worker pool gated by an AIMD controller (``judges.concurrency``)
that the judge tells about every throttle. A dimension whose judge was still throttled after the
judge's own retries is asked again (``throttle_requeues`` times, after a full-jitter pause) before it
is left unscored, as the state machine's Retry does for the Lambda scorers. Every case yields exactly
one result, in input order.

``iter_evaluated`` yields the same results as a stream, for a caller that writes each and lets it go.

Targets (``target``): the answer is generated inside the worker, so generation runs as concurrently
as scoring (bounded by the target's ``max_concurrency``). A failed generation is an error record,
never a score. Without a target the dataset's own responses are scored, and results carry no
``generation``.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from fmquality.domain.case import TestCase
from fmquality.domain.errors import ProfileError, RunNotDone, TargetUnavailable
from fmquality.domain.results import Arm, EvaluationResult
from fmquality.domain.scores import DimensionScore
from fmquality.judges.concurrency import AimdController
from fmquality.run.generate import generate
from fmquality.schemes import scheme_for
from fmquality.scoring.case import JUDGE_MODES, JudgeMode, OutcomeT, score_case, score_dimension
from fmquality.scoring.composite import error_result

if TYPE_CHECKING:
    from fmquality.config.rubric import Rubric
    from fmquality.judges.base import Judge
    from fmquality.targets.base import Target

DEFAULT_THROTTLE_REQUEUES = 2
# A target unavailable (down, HTTP 5xx after its retries, uncallable) on this many of a run's first
# items, with none answered, is a target the run cannot use: the run stops (TargetUnavailable).
TARGET_DOWN_AFTER = 3
# Pause before asking a throttled dimension again: full jitter, uniform in [0, min(cap, base * 2**n)].
REQUEUE_BASE_S = 2.0
REQUEUE_CAP_S = 30.0


def score_one_dimension(
    dimension: str, case: TestCase, rubric: "Rubric", judge: "Judge", raise_on_throttle: bool = False
) -> DimensionScore:
    """One dimension of one case with the rubric's scheme (the scorer Lambda's whole job, see
    ``scoring.case.score_dimension``)."""
    return score_dimension(scheme_for(rubric), dimension, case, rubric, judge, raise_on_throttle=raise_on_throttle)


def requeue_pause(attempt: int, rng: Callable[[], float] = random.random) -> float:
    return rng() * min(REQUEUE_CAP_S, REQUEUE_BASE_S * (2**attempt))


def _ask(call: Callable[[], OutcomeT], requeues: int, sleep: Callable[[float], None]) -> OutcomeT:
    """One judge request; asked again while it comes back throttled, at most ``requeues`` times.
    The calls and tokens of every attempt are kept on the outcome."""
    outcome = call()
    for attempt in range(requeues):
        if not outcome.throttled:
            break
        sleep(requeue_pause(attempt))
        spent_calls, spent_usage = outcome.calls, outcome.usage
        outcome = call()
        outcome = outcome.model_copy(update={"calls": outcome.calls + spent_calls,
                                             "usage": outcome.usage.add(spent_usage)})
    return outcome


def evaluate_case(
    case: TestCase,
    rubric: "Rubric",
    judge: "Judge",
    run_id: str | None = None,
    *,
    mode: JudgeMode | None = None,
    throttle_requeues: int = 0,
    sleep: Callable[[float], None] = time.sleep,
    target: "Target | None" = None,
    arm: Arm = "candidate",
) -> EvaluationResult:
    """One item end to end: the target's answer (when a target is given), then the scores. An
    unexpected exception becomes an explicit error record, not a score."""
    mode = mode or rubric.judge.mode
    if mode not in JUDGE_MODES:
        raise ValueError(f"unknown judge mode {mode!r}; expected one of {list(JUDGE_MODES)}")
    if target is None:
        result = _score_case(case, rubric, judge, run_id, mode, throttle_requeues, sleep)
        return result if result.arm == arm else result.model_copy(update={"arm": arm})
    try:
        case, generation = generate(case, target, sleep=sleep, rules=rubric.generation)
    except RunNotDone:
        raise
    except Exception as exc:  # noqa: BLE001 - generate reports target failures itself; this is a bug
        return error_result(case, rubric, f"generation failed: {type(exc).__name__}: {exc}", run_id=run_id
                            ).model_copy(update={"arm": arm, "response": None})
    if generation.error is not None:
        # The recorded response (if any) was not this target's answer: the record shows none.
        # "generation incomplete: stopped by max_tokens" names itself; anything else is a failure.
        error = generation.error if generation.error.startswith("generation ") else f"generation failed: {generation.error}"
        return error_result(case, rubric, error, run_id=run_id
                            ).model_copy(update={"arm": arm, "generation": generation, "response": None})
    result = _score_case(case, rubric, judge, run_id, mode, throttle_requeues, sleep)
    return result.model_copy(update={"arm": arm, "generation": generation})


def _score_case(case: TestCase, rubric: "Rubric", judge: "Judge", run_id: str | None, mode: JudgeMode,
                throttle_requeues: int, sleep: Callable[[float], None]) -> EvaluationResult:
    try:
        scheme = scheme_for(rubric)
    except ProfileError as exc:  # a profile naming no known scheme: every item says so
        return error_result(case, rubric, f"{type(exc).__name__}: {exc}", run_id=run_id)
    return score_case(scheme, case, rubric, judge, mode=mode, run_id=run_id,
                      ask=lambda call: _ask(call, throttle_requeues, sleep))


def evaluate_cases(cases: Iterable[TestCase], rubric: "Rubric", judge: "Judge", run_id: str | None = None,
                   concurrency: int = 1, on_result: Callable[[EvaluationResult], None] | None = None,
                   **options: Any) -> list[EvaluationResult]:
    """Every case evaluated, in input order (``iter_evaluated``, collected; the same options)."""
    return list(iter_evaluated(list(cases), rubric, judge, run_id, concurrency, on_result, **options))


def iter_evaluated(
    cases: Sequence[TestCase],
    rubric: "Rubric",
    judge: "Judge",
    run_id: str | None = None,
    concurrency: int = 1,
    on_result: Callable[[EvaluationResult], None] | None = None,
    *,
    mode: JudgeMode | None = None,
    adaptive: bool = True,
    max_concurrency: int | None = None,
    controller: AimdController | None = None,
    throttle_requeues: int = DEFAULT_THROTTLE_REQUEUES,
    sleep: Callable[[float], None] = time.sleep,
    target: "Target | None" = None,
    arm: Arm = "candidate",
) -> Iterator[EvaluationResult]:
    """Evaluate every case, each result yielded in input order as soon as it and every case before it
    are done, so a caller can write it and let it go. ``on_result`` is called as each finishes.

    ``concurrency`` is where the AIMD controller starts (``adaptive``, the default) or the fixed pool
    size; ``max_concurrency`` bounds the controller (default: 64, or ``concurrency`` if larger). Pass
    a ``controller`` to read its counters afterwards. ``target`` answers each case first (``arm``
    labels the results); its ``spec.max_concurrency`` caps how many cases run at once, whatever the
    other settings say, so a chatbot endpoint is never asked more than it allows.
    """
    target_cap = target.spec.max_concurrency if target is not None else None
    if target_cap is not None:
        concurrency = min(concurrency, target_cap)
        max_concurrency = min(max_concurrency or 64, target_cap)

    stop = RunStop(target, len(cases))

    def run(case: TestCase) -> EvaluationResult:
        stop.check()  # a run that cannot be done starts no further case
        try:
            result = evaluate_case(case, rubric, judge, run_id=run_id, mode=mode,
                                   throttle_requeues=throttle_requeues, sleep=sleep, target=target, arm=arm)
        except RunNotDone as exc:
            stop.fail(exc)
            raise
        stop.observe(result)
        if on_result:
            on_result(result)
        return result

    if controller is None and (concurrency <= 1 or not adaptive):
        if concurrency <= 1:
            yield from _checked(cases, map(run, cases))
        else:
            pool = ThreadPoolExecutor(max_workers=concurrency)
            try:
                yield from _checked(cases, pool.map(run, cases))
            finally:
                pool.shutdown(wait=True, cancel_futures=True)
        return

    if controller is None:
        controller = AimdController(concurrency, maximum=max(concurrency, max_concurrency or 64))
    yield from _checked(cases, _gated(cases, run, judge, controller, target_cap))


class RunStop:
    """What stops a run on its first items instead of recording every item as an error: the first
    ``RunNotDone`` any case raised (a misconfigured judge), or a target unavailable on each of the
    first ``TARGET_DOWN_AFTER`` cases to finish (fewer in a smaller run) before any answered
    (``TargetUnavailable``). Once the target has answered one case, its later failures are those
    cases' error records. Shared by the worker threads."""

    def __init__(self, target: "Target | None", cases: int) -> None:
        self._lock = threading.Lock()
        self._error: RunNotDone | None = None
        self._watch_target = target is not None
        self._down_after = max(1, min(TARGET_DOWN_AFTER, cases))
        self._down: list[str] = []

    def check(self) -> None:
        with self._lock:
            if self._error is not None:
                raise self._error

    def fail(self, error: RunNotDone) -> None:
        with self._lock:
            self._error = self._error or error

    def observe(self, result: EvaluationResult) -> None:
        generation = result.generation
        if not self._watch_target or generation is None:
            return
        with self._lock:
            if not self._watch_target:
                return
            if generation.error is None:
                self._watch_target = False  # the target answers: later failures are the cases'
                return
            if not generation.unavailable:
                return
            self._down.append(f"{result.test_id}: {generation.error}")
            if len(self._down) >= self._down_after and self._error is None:
                self._error = TargetUnavailable(
                    f"the {result.arm} target {generation.target_kind}:{generation.target_id} answered none of "
                    f"the first {len(self._down)} case(s), each failing after its retries ({self._down[0]})")
        self.check()


def _gated(cases: Sequence[TestCase], run: Callable[[TestCase], EvaluationResult], judge: "Judge",
           controller: AimdController, target_cap: int | None) -> Iterator[EvaluationResult]:
    """Every case in a worker pool whose admissions the AIMD controller gates; the judge reports
    its throttles to the controller while the pool runs."""
    set_observer = getattr(judge, "set_observer", None)
    if set_observer is not None:
        set_observer(controller)

    def gated(case: TestCase) -> EvaluationResult:
        with controller.slot():
            return run(case)

    try:
        workers = max(1, min(len(cases), controller.maximum, target_cap or controller.maximum))
        pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="fmq-case")
        try:
            yield from pool.map(gated, cases)
        finally:  # a run stopped (RunNotDone) leaves the cases not started unstarted
            pool.shutdown(wait=True, cancel_futures=True)
    finally:
        if set_observer is not None:
            set_observer(None)


def _checked(cases: Sequence[TestCase], results: Iterable[Any]) -> Iterator[EvaluationResult]:
    """Exactly one result per case, in input order: a lost or doubled case is a bug, never a result."""
    count = 0
    for case, result in zip(cases, results):
        if result.test_id != case.test_id:
            raise RuntimeError("the engine lost or reordered test cases")
        count += 1
        yield result
    if count != len(cases):
        raise RuntimeError("the engine lost or reordered test cases")
