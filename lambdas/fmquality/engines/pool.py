"""Cases scored in worker processes: the direct engine on every core for the judges that compute
rather than wait (offline, scripted).

Scoring with such a judge is pure Python, so threads share one core (the GIL); processes do not. Each
worker builds its judge once (``judge_factory``, pickled by reference), scores batches of cases with
``run.evaluate.evaluate_case`` and sends back, per case, the ``results.jsonl`` line and the
``ResultSummary`` the report is built from: the parent writes and counts, the workers do the work.

``score_in_processes`` yields one ``ScoredCase`` per case, in input order, whatever order the workers
finish in; at most ``2 x workers`` batches are out at a time, so memory does not grow with the run.
Every case ends with a result or an error record:

- a case whose scoring raises is an error record (``evaluate_case`` already makes one of any scoring
  failure; anything else failing in a worker makes one for each case of its batch);
- a worker that dies (killed, out of memory, a crash in native code) breaks the pool: the cases out at
  that moment are scored again, one at a time, in a new pool; a case that kills its worker alone is an
  error record naming the death; after ``MAX_LONE_DEATHS`` such deaths in a row the pool is given up
  and every case left is an error record.

Workers start from a fork server where the platform has one (a clean process, not a copy of a parent
with threads), else they are spawned; either way each worker maps the Japanese dictionary once.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from itertools import islice
from typing import TYPE_CHECKING, Any

from fmquality.domain.case import TestCase
from fmquality.run.evaluate import evaluate_case
from fmquality.run.summary import ResultSummary, result_line, summarize
from fmquality.scoring.composite import error_result

if TYPE_CHECKING:
    from fmquality.config.rubric import Rubric
    from fmquality.domain.results import Arm, EvaluationResult
    from fmquality.judges.base import Judge

MAX_BATCH = 8
BATCHES_PER_WORKER = 2
MAX_LONE_DEATHS = 3
WORKER_DIED = "the worker process scoring this case died"


@dataclass(frozen=True)
class ScoredCase:
    """One case's outcome as the parent needs it: its position, its results.jsonl line, its summary."""

    index: int
    line: str
    summary: ResultSummary


@dataclass(frozen=True)
class ArmScoring:
    """What every worker needs to score the cases of one arm."""

    rubric: "Rubric"
    judge_factory: Callable[[], "Judge"]
    run_id: str | None
    mode: str | None
    arm: "Arm"


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity where the platform tells it)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def scored(index: int, result: "EvaluationResult") -> ScoredCase:
    return ScoredCase(index, result_line(result), summarize(result))


def error_case(index: int, case: TestCase, scoring: ArmScoring, error: str) -> ScoredCase:
    record = error_result(case, scoring.rubric, error, run_id=scoring.run_id)
    return scored(index, record.model_copy(update={"arm": scoring.arm}))


# ---- in a worker ----------------------------------------------------------------------------------

_WORKER: dict[str, Any] = {}


def _start_worker(scoring: ArmScoring) -> None:
    _WORKER["scoring"], _WORKER["judge"] = scoring, scoring.judge_factory()


def _score_batch(batch: list[tuple[int, TestCase]]) -> list[ScoredCase]:
    scoring: ArmScoring = _WORKER["scoring"]
    out = []
    for index, case in batch:
        try:
            result = evaluate_case(case, scoring.rubric, _WORKER["judge"], run_id=scoring.run_id,
                                   mode=scoring.mode, arm=scoring.arm)
            out.append(scored(index, result))
        except Exception as exc:  # noqa: BLE001 - every case ends with a result or an error record
            out.append(error_case(index, case, scoring, f"{type(exc).__name__}: {exc}"))
    return out


# ---- in the parent --------------------------------------------------------------------------------

def _context() -> Any:
    if "forkserver" in multiprocessing.get_all_start_methods():
        context = multiprocessing.get_context("forkserver")
        # Imported once by the server; every worker forked from it starts with them.
        context.set_forkserver_preload([__name__])
        return context
    return multiprocessing.get_context("spawn")


class _Pool:
    """A ProcessPoolExecutor started again after a worker's death."""

    def __init__(self, workers: int, scoring: ArmScoring) -> None:
        self.workers, self.scoring = workers, scoring
        self.executor: ProcessPoolExecutor | None = None

    def submit(self, batch: list[tuple[int, TestCase]]) -> Future:
        if self.executor is None:
            self.executor = ProcessPoolExecutor(self.workers, mp_context=_context(), initializer=_start_worker,
                                                initargs=(self.scoring,))
        return self.executor.submit(_score_batch, batch)

    def restart(self) -> None:
        self.close(wait=False)

    def close(self, wait: bool = True) -> None:
        if self.executor is not None:
            self.executor.shutdown(wait=wait, cancel_futures=True)
            self.executor = None


class _Outcomes:
    """Finished cases by position, handed out in input order."""

    def __init__(self) -> None:
        self.ready: dict[int, ScoredCase] = {}
        self.next = 0

    def add(self, case: ScoredCase) -> None:
        self.ready[case.index] = case

    def in_order(self) -> Iterator[ScoredCase]:
        while self.next in self.ready:
            yield self.ready.pop(self.next)
            self.next += 1


def _batches(cases: Iterable[TestCase], size: int) -> Iterator[list[tuple[int, TestCase]]]:
    numbered = enumerate(cases)
    while batch := list(islice(numbered, size)):
        yield batch


def _collect(future: Future, batch: list[tuple[int, TestCase]], scoring: ArmScoring,
             outcomes: _Outcomes) -> bool:
    """The batch's outcomes into ``outcomes``; False when its worker died (the pool is broken)."""
    error = future.exception()
    if isinstance(error, BrokenProcessPool):
        return False
    if error is not None:  # failed outside the scoring (e.g. a result that could not be sent back)
        for index, case in batch:
            outcomes.add(error_case(index, case, scoring, f"{type(error).__name__}: {error}"))
    else:
        for case in future.result():
            outcomes.add(case)
    return True


def _alone(suspects: list[tuple[int, TestCase]], pool: _Pool, outcomes: _Outcomes) -> bool:
    """Each case that was out when a worker died, scored alone in a pool; a case whose worker dies
    again is an error record. False when workers died ``MAX_LONE_DEATHS`` times in a row."""
    deaths = 0
    for index, case in suspects:
        if deaths >= MAX_LONE_DEATHS:
            outcomes.add(error_case(index, case, pool.scoring, f"{WORKER_DIED}: workers kept dying, pool given up"))
            continue
        try:
            future = pool.submit([(index, case)])
            wait([future])
            survived = _collect(future, [(index, case)], pool.scoring, outcomes)
        except BrokenProcessPool:
            survived = False
        if survived:
            deaths = 0
            continue
        deaths += 1
        outcomes.add(error_case(index, case, pool.scoring, WORKER_DIED))
        pool.restart()
    return deaths < MAX_LONE_DEATHS


def score_in_processes(cases: Iterable[TestCase], scoring: ArmScoring, workers: int,
                       batch_size: int = MAX_BATCH) -> Iterator[ScoredCase]:
    """Every case scored by ``workers`` processes, yielded in input order (see the module's docstring)."""
    pool, outcomes = _Pool(workers, scoring), _Outcomes()
    batches = _batches(cases, batch_size)
    out: dict[Future, list[tuple[int, TestCase]]] = {}
    try:
        while True:
            suspects = _fill(out, batches, pool, BATCHES_PER_WORKER * workers)
            if not out and not suspects:
                break
            if out:
                done, _ = wait(out, return_when=FIRST_COMPLETED)
                for future in done:
                    batch = out.pop(future)
                    if not _collect(future, batch, scoring, outcomes):
                        suspects += batch
            if suspects and not _after_death(suspects, out, pool, outcomes):
                for index, case in (item for batch in batches for item in batch):
                    outcomes.add(error_case(index, case, scoring, f"{WORKER_DIED}: workers kept dying, pool given up"))
            yield from outcomes.in_order()
    finally:
        pool.close(wait=not out)


def _fill(out: dict[Future, list[tuple[int, TestCase]]], batches: Iterator[list[tuple[int, TestCase]]],
          pool: _Pool, limit: int) -> list[tuple[int, TestCase]]:
    """Batches submitted until ``limit`` are out; the cases a broken pool refused."""
    refused: list[tuple[int, TestCase]] = []
    while len(out) < limit and not refused:
        batch = next(batches, None)
        if batch is None:
            break
        try:
            out[pool.submit(batch)] = batch
        except BrokenProcessPool:  # a worker died since the last wait
            refused += batch
    return refused


def _after_death(suspects: list[tuple[int, TestCase]], out: dict[Future, list[tuple[int, TestCase]]],
                 pool: _Pool, outcomes: _Outcomes) -> bool:
    """A worker died: every batch still out ends (the executor fails them all, or they had finished);
    the cases it failed are scored again one at a time in a new pool. False when the pool was given up."""
    wait(out)
    for future, batch in out.items():
        if not _collect(future, batch, pool.scoring, outcomes):
            suspects = suspects + batch
    out.clear()
    pool.restart()
    return _alone(sorted(suspects, key=lambda item: item[0]), pool, outcomes)
