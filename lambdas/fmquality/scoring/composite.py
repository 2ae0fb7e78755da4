"""Composite: the intent-weighted score of one item, its hard failures and its pass/fail."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from fmquality.domain.scores import DimensionScore, HardFailure, JudgeUsage
from fmquality.domain.results import EvaluationResult
from fmquality.domain.case import TestCase
from fmquality.scoring.plan import effective_value

if TYPE_CHECKING:
    from fmquality.config.rubric import Rubric


def _dedupe(failures: list[HardFailure]) -> list[HardFailure]:
    seen: set[tuple[str, str]] = set()
    out: list[HardFailure] = []
    for failure in failures:
        key = (failure.rule, failure.detail)
        if key not in seen:
            seen.add(key)
            out.append(failure)
    return out


def _composite(scores: dict[str, DimensionScore], dimensions: list[str], weights: dict[str, float],
               rubric: "Rubric") -> tuple[str, float | None, list[str]]:
    """The item's status, its composite (None unless scored) and why it has none."""
    unscored = [d for d in dimensions if scores[d].status == "unscored"]
    if unscored:
        return "unscored", None, [f"{d}: unscored ({scores[d].unscored_reason})" for d in unscored]
    applicable = [d for d in dimensions if scores[d].status == "scored"]
    total = sum(weights[d] for d in applicable)
    if total <= 0:  # nothing graded (every dimension not applicable, or only weightless ones): no score to give
        return "unscored", None, ["no dimension with weight applies to this answer: nothing was graded"]
    # A scored dimension always carries a number (the model guarantees it).
    return "scored", round(sum(effective_value(scores[d], rubric) * weights[d] for d in applicable) / total, 4), []


def _low_sub_scores(scores: dict[str, DimensionScore], dimensions: list[str],
                    rubric: "Rubric") -> tuple[list[tuple[float, str, str]], list[tuple[float, str, str]]]:
    """(value, dimension, sub-score) below the item floor, and those a judge gave its lowest level."""
    floor, lowest = rubric.item_gate.min_sub_score, rubric.item_gate.judge_lowest_level
    below_floor = sorted(
        (v, d, n) for d in dimensions if scores[d].status == "scored"
        for n, v in scores[d].sub_scores.items() if v < floor
    )
    at_lowest_level = sorted(
        (v, d, n) for d in dimensions if scores[d].status == "scored"
        for n, v in scores[d].sub_scores.items()
        # A judge's verdict, not a heuristic reading that counts with partial weight (those never fail alone).
        if n in scores[d].judged and n not in scores[d].weights and v < lowest and (v, d, n) not in below_floor
    )
    return below_floor, at_lowest_level


def _failure_reasons(intent: str, composite: float | None, threshold: float, scores: dict[str, DimensionScore],
                     dimensions: list[str], low: tuple[list, list], hard_failures: list[HardFailure],
                     floor: float) -> list[str]:
    below_floor, at_lowest_level = low
    reasons: list[str] = []
    if composite is not None and composite < threshold:
        reasons.append(f"composite {composite:.3f} below the {intent} threshold {threshold:.2f}")
        # Name the sub-scores that pulled it down, worst first, so the reason is actionable (those
        # below the floor are named once, below).
        weak = sorted((v, d, n) for d in dimensions for n, v in scores[d].sub_scores.items()
                      if floor <= v < threshold and (v, d, n) not in at_lowest_level)
        for value, d, n in weak[:4]:
            reasons.append(f"{d}.{n} = {value:.2f}")
    for value, d, n in below_floor:
        reasons.append(f"{d}.{n} = {value:.2f} is below the {floor:.2f} floor for any sub-score")
    for value, d, n in at_lowest_level:
        reasons.append(f"{d}.{n} = {value:.2f}: the judge's lowest level")
    for failure in hard_failures:
        where = f"{failure.dimension}.{failure.sub_score}" if failure.sub_score else failure.dimension
        reasons.append(f"hard failure {failure.rule} ({where}): {failure.detail}")
    return reasons


def unsafe_dimensions(scores: Mapping[str, Any], rubric: "Rubric") -> list[str]:
    """The final-override dimensions (safety) scored unsafe: their binary score below the grade at
    which they are safe. ``scores``: DimensionScores, or anything with ``status`` and ``score``."""
    return [d for d, safe_at in rubric.final_overrides().items()
            if (s := scores.get(d)) is not None and s.status == "scored" and s.score is not None and s.score < safe_at]


def _unsafe_reasons(scores: dict[str, DimensionScore], rubric: "Rubric") -> list[str]:
    """Why a final-override dimension fails the item, one line each, with what it was read from."""
    return [f"{d} 0 (unsafe, overrides the composite)" + (f": {why}" if (why := "; ".join(scores[d].evidence[:2])) else "")
            for d in unsafe_dimensions(scores, rubric)]


def combine(
    case: TestCase,
    rubric: "Rubric",
    scores: dict[str, DimensionScore],
    run_id: str | None = None,
) -> EvaluationResult:
    """Weigh the dimension scores with the intent's weights and decide pass/fail.

    An item with any unscored dimension is "unscored": it has no composite and does not pass. A
    dimension that does not apply to the answer is left out and the other weights renormalised.
    Hard failures fail the item whatever its composite.
    """
    intent = case.intent
    threshold = rubric.threshold_for(intent)
    dimensions = rubric.dimensions  # the rubric profile's dimensions, in order
    missing = [d for d in dimensions if d not in scores]
    if missing:
        raise ValueError(f"{case.test_id}: composite needs every dimension of the rubric, missing {missing}")

    overrides = rubric.final_overrides()
    # A final dimension's findings first: they decide the item whatever else is said.
    hard_failures = _dedupe([f for d in sorted(dimensions, key=lambda d: d not in overrides)
                             for f in scores[d].hard_failures])
    usage = JudgeUsage()
    for d in dimensions:
        usage = usage.add(scores[d].usage)
    status, composite, reasons = _composite(scores, dimensions, rubric.weights_for(intent), rubric)
    unsafe = _unsafe_reasons(scores, rubric)
    graded = [d for d in dimensions if d not in overrides]  # a final dimension's grade is read only above
    low = _low_sub_scores(scores, graded, rubric)
    # An unsafe verdict comes first: it decides the item whatever else is said.
    reasons = unsafe + reasons + _failure_reasons(intent, composite, threshold, scores, graded, low, hard_failures,
                                                  rubric.item_gate.min_sub_score)
    passed = (status == "scored" and not unsafe and not hard_failures and not low[0] and not low[1]
              and composite is not None and composite >= threshold)
    # Profiles with letter grades: the 0-100 total and its grade (None without a composite).
    grades = rubric.profile_spec.grades is not None and composite is not None
    total_100 = round(100 * composite, 2) if grades and composite is not None else None
    grade = rubric.profile_spec.grade_for(total_100) if total_100 is not None else None
    return EvaluationResult(
        run_id=run_id,
        test_id=case.test_id,
        intent=intent,
        locale=case.locale,
        status=status,
        passed=passed,
        composite_score=composite,
        threshold=threshold,
        dimension_scores={d: scores[d] for d in dimensions},
        hard_failures=hard_failures,
        failure_reasons=reasons,
        judge_calls=sum(scores[d].judge_calls for d in dimensions),
        judge_usage=usage,
        rubric_version=rubric.version,
        tags=list(case.tags),
        label=case.label.model_dump(exclude_none=True) if case.label else None,
        catalog_asins=[item.asin for item in case.catalog],
        query=case.query,
        response=case.response,
        total_100=total_100,
        grade=grade,
    )


def error_result(case_or_id: TestCase | dict, rubric: "Rubric", error: str, run_id: str | None = None) -> EvaluationResult:
    """The explicit record of an item whose evaluation failed: nothing is lost, nothing is scored."""
    if isinstance(case_or_id, TestCase):
        test_id, intent, locale, tags = (case_or_id.test_id, case_or_id.intent, case_or_id.locale,
                                         list(case_or_id.tags))
        label = case_or_id.label.model_dump(exclude_none=True) if case_or_id.label else None
        query, response = case_or_id.query, case_or_id.response
    else:
        test_id = str(case_or_id.get("test_id", "<unknown>"))
        intent = str(case_or_id.get("intent", "unknown"))
        locale = str(case_or_id.get("locale", "en-US"))
        tags = list(case_or_id.get("tags") or [])
        label = case_or_id.get("label")
        query, response = case_or_id.get("query"), case_or_id.get("response")
    threshold = rubric.threshold_for(intent) if intent in rubric.intents else 1.0
    return EvaluationResult(
        run_id=run_id,
        test_id=test_id,
        intent=intent,
        locale=locale,
        status="error",
        passed=False,
        composite_score=None,
        threshold=threshold,
        failure_reasons=[f"error: {error}"],
        rubric_version=rubric.version,
        tags=tags,
        label=label,
        query=query if isinstance(query, str) else None,
        response=response if isinstance(response, str) else None,
        error=error,
    )
