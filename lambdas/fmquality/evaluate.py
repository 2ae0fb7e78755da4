"""Evaluate test cases in-process (the "direct" engine): four dimensions, then the composite."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from fmquality.composite import combine, error_result
from fmquality.dimensions import dimension_module
from fmquality.dimensions.base import score_dimension
from fmquality.models import DIMENSIONS, DimensionScore, EvaluationResult, TestCase

if TYPE_CHECKING:
    from fmquality.judges.base import Judge
    from fmquality.rubric import Rubric


def score_one_dimension(
    dimension: str, case: TestCase, rubric: "Rubric", judge: "Judge", raise_on_throttle: bool = False
) -> DimensionScore:
    return score_dimension(dimension_module(dimension), case, rubric, judge, raise_on_throttle=raise_on_throttle)


def evaluate_case(case: TestCase, rubric: "Rubric", judge: "Judge", run_id: str | None = None) -> EvaluationResult:
    """One item end to end. An unexpected exception becomes an explicit error record, not a score."""
    try:
        scores = {d: score_one_dimension(d, case, rubric, judge) for d in DIMENSIONS}
        return combine(case, rubric, scores, run_id=run_id)
    except Exception as exc:  # noqa: BLE001 - every item must end with a result or an error record
        return error_result(case, rubric, f"{type(exc).__name__}: {exc}", run_id=run_id)


def evaluate_cases(
    cases: Iterable[TestCase],
    rubric: "Rubric",
    judge: "Judge",
    run_id: str | None = None,
    concurrency: int = 1,
    on_result: Callable[[EvaluationResult], None] | None = None,
) -> list[EvaluationResult]:
    """Evaluate every case, keeping the input order. ``on_result`` is called as each finishes."""
    case_list = list(cases)

    def run(case: TestCase) -> EvaluationResult:
        result = evaluate_case(case, rubric, judge, run_id=run_id)
        if on_result:
            on_result(result)
        return result

    if concurrency <= 1:
        return [run(c) for c in case_list]
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        return list(pool.map(run, case_list))
