"""The calibration report of ``fmquality calibrate``: per data set, how its scores track numeric human
ratings (rank correlations, ``stats.ranks``) and, when labelled, how the verdicts agree with the
labels (``report.agreement``); over the labelled sets, the checks that fire (``report.check_fires``),
the threshold fit (``report.threshold_fit``) and the judge's signals (``report.signal_agreement``);
and the summary rows the text table and the HTML page share.

A score that is missing (an unscored or failed item or dimension, a sub-score that did not apply) or
a rating that is missing leaves the item out of that pair; nothing is imputed.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, Field

from fmquality.domain.case import TestCase
from fmquality.domain.report import Calibration
from fmquality.domain.results import EvaluationResult
from fmquality.schemes.mangaassist import DIMENSIONS, SUB_SCORES
from fmquality.report.check_fires import CheckTable
from fmquality.report.signal_agreement import SignalReport
from fmquality.report.threshold_fit import ThresholdFit
from fmquality.stats.ranks import rank_correlation

COMPOSITE = "composite"
DEFAULT_SCORES: tuple[str, ...] = (*DIMENSIONS, COMPOSITE)


def check_score_name(name: str) -> str:
    """``composite``, a dimension, or ``dimension.sub_score``."""
    dimension, _, sub = name.partition(".")
    if name == COMPOSITE or (dimension in SUB_SCORES and (not sub or sub in SUB_SCORES[dimension])):
        return name
    known = [COMPOSITE, *DIMENSIONS, *(f"{d}.{s}" for d in DIMENSIONS for s in SUB_SCORES[d])]
    raise ValueError(f"unknown score {name!r}; expected one of {known}")


def score_value(result: EvaluationResult, name: str) -> float | None:
    """The named score of a result; None when it was not given (or, for a sub-score, did not apply)."""
    if name == COMPOSITE:
        return result.composite_score
    dimension, _, sub = name.partition(".")
    scored = result.dimension_scores.get(dimension)
    if scored is None or scored.score is None:
        return None
    return scored.sub_scores.get(sub) if sub else scored.score


def _not_applicable(result: EvaluationResult, name: str) -> bool:
    dimension, _, sub = name.partition(".")
    scored = result.dimension_scores.get(dimension)
    return bool(sub) and scored is not None and scored.score is not None and sub in scored.not_applicable


def rating_value(case: TestCase, path: str) -> float | None:
    """A numeric field of the dataset line by its dotted path (``human.naturalness``; unknown fields
    of a line live in ``metadata``, so ``human`` reads ``metadata["human"]``). A boolean reads as
    0/1; anything else that is not a finite number is None."""
    head, *rest = path.split(".")
    value: Any = getattr(case, head) if head in TestCase.model_fields else case.metadata.get(head)
    for part in rest:
        if isinstance(value, BaseModel):
            value = getattr(value, part, None)
        elif isinstance(value, dict):
            value = value.get(part)
        else:
            return None
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)) and math.isfinite(value):
        return float(value)
    return None


class PairCorrelation(BaseModel):
    """One (score, rating) pair over a data set, with the items it left out and why."""

    score: str
    human: str
    info: bool = False  # the plan lists this pair for information, not as one the score should track
    n: int
    rho: float | None
    tau_b: float | None
    undefined_reason: str | None = None
    unscored: int = 0  # no score: the item or the dimension unscored or failed, or no result for the line
    not_applicable: int = 0  # the sub-score did not apply to the item
    unrated: int = 0  # the line has no numeric value at ``human``


def correlate(joined: list[tuple[TestCase, EvaluationResult | None]], score: str, human: str,
              info: bool = False) -> PairCorrelation:
    scores: list[float] = []
    ratings: list[float] = []
    left_out = {"unscored": 0, "not_applicable": 0, "unrated": 0}
    for case, result in joined:
        rating = rating_value(case, human)
        value = None if result is None else score_value(result, score)
        if rating is None:
            left_out["unrated"] += 1
        elif value is None:
            left_out["not_applicable" if result and _not_applicable(result, score) else "unscored"] += 1
        else:
            scores.append(value)
            ratings.append(rating)
    stats = rank_correlation(scores, ratings)
    return PairCorrelation(score=score, human=human, info=info, **stats.model_dump(), **left_out)


class SetCalibration(BaseModel):
    """The calibration of one data set: its (score, rating) pairs and, when labelled, kappa and rates."""

    name: str
    dataset: str
    skipped: str | None = None
    judge: str | None = None
    rubric_version: str | None = None
    results_file: str | None = None  # the results.jsonl read instead of scoring
    items: int = 0
    missing_results: int = 0  # lines of the data set without a result in ``results_file``
    correlations: list[PairCorrelation] = Field(default_factory=list)
    calibration: Calibration | None = None


class CalibrationReport(BaseModel):
    """Everything ``fmquality calibrate`` measured: ``calibration.json``."""

    generated_at: str
    plan: str | None = None
    sets: list[SetCalibration]
    checks: CheckTable | None = None  # every labelled set: the checks that fired, by label
    fit: ThresholdFit | None = None  # --fit
    signals: SignalReport | None = None  # --signals-out


def _fixed(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _share(count: int, total: int, rate: float | None) -> str:
    return "–" if rate is None else f"{count}/{total} ({rate:.1%})"


SUMMARY_COLUMNS = ("set", "pair", "n", "left out", "rho", "tau", "kappa", "acceptable failed", "defective passed")


def _row(set_name: str, pair: str, **values: str) -> dict[str, str]:
    values = {"set": set_name, "pair": pair, **{k.replace("_", " "): v for k, v in values.items()}}
    return {column: values.get(column, "") for column in SUMMARY_COLUMNS}


def summary_rows(report: CalibrationReport) -> list[dict[str, str]]:
    """One row per measured pair and one per labelled set (its verdicts against label.acceptable),
    formatted for the text table and the HTML page alike."""
    rows: list[dict[str, str]] = []
    for s in report.sets:
        if s.skipped:
            rows.append(_row(s.name, f"skipped: {s.skipped}"))
            continue
        for c in s.correlations:
            rows.append(_row(s.name, f"{c.score} ~ {c.human}" + (" (info)" if c.info else ""), n=str(c.n),
                             left_out=str(c.unscored + c.not_applicable + c.unrated),
                             rho=_fixed(c.rho) if c.undefined_reason is None else c.undefined_reason,
                             tau=_fixed(c.tau_b)))
        cal = s.calibration
        if cal:
            kappa = cal.kappa
            rows.append(_row(s.name, "passed ~ label.acceptable", n=str(cal.labelled), left_out=str(s.missing_results),
                             kappa=kappa.undefined_reason if kappa.value is None else f"{kappa.value:.3f}",
                             acceptable_failed=_share(cal.acceptable_failed, cal.acceptable, cal.acceptable_failed_rate),
                             defective_passed=_share(cal.defective_passed, cal.defective, cal.defective_passed_rate)))
        if not s.correlations and not cal:
            rows.append(_row(s.name, "nothing to measure: no rating pair and no label"))
    return rows
