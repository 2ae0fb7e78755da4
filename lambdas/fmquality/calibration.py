"""Calibration: how the scores and the gate's verdicts agree with human judgments.

Pure Python (the core also runs inside Lambda, so no numpy or scipy):
- rank correlation between a score and a numeric human rating: Spearman's rho on average ranks and
  Kendall's tau-b, both correct under ties, each with its n;
- Cohen's kappa between the item verdicts (``passed``) and ``label.acceptable``, overall and per
  intent and locale, with its 2x2 table, beside the acceptable-failed / defective-passed rates;
- the calibration plan (``datasets/calibration.yaml``): which data sets and (score, rating) pairs
  ``fmquality calibrate --plan`` measures.

A score that is missing (an unscored or failed item or dimension, a sub-score that did not apply) or
a rating that is missing leaves the item out of that pair; nothing is imputed.
"""

from __future__ import annotations

import math
import os
import string
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator, model_validator

from fmquality.models import DIMENSIONS, SUB_SCORES, Calibration, EvaluationResult, Kappa, TestCase
from fmquality.yamldoc import validation_problems

COMPOSITE = "composite"
DEFAULT_SCORES: tuple[str, ...] = (*DIMENSIONS, COMPOSITE)

# --------------------------------------------------------------------------------------------------
# Statistics
# --------------------------------------------------------------------------------------------------


def average_ranks(values: Sequence[float]) -> list[float]:
    """1-based ranks; tied values share the mean of the ranks they span (1, 2.5, 2.5, 4)."""
    order = sorted(range(len(values)), key=values.__getitem__)
    ranks = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        rank = (start + end) / 2 + 1
        for k in range(start, end + 1):
            ranks[order[k]] = rank
        start = end + 1
    return ranks


def _pearson(x: Sequence[float], y: Sequence[float]) -> float:
    """Pearson's r; the caller has ruled out a constant side."""
    n = len(x)
    mx, my = sum(x) / n, sum(y) / n
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y))
    sxx = sum((a - mx) ** 2 for a in x)
    syy = sum((b - my) ** 2 for b in y)
    return max(-1.0, min(1.0, sxy / math.sqrt(sxx * syy)))


def _undefined(x: Sequence[float], y: Sequence[float]) -> str | None:
    if len(x) != len(y):
        raise ValueError(f"paired samples differ in length ({len(x)} and {len(y)})")
    if len(x) < 2:
        return f"{len(x)} paired item(s): a correlation needs at least 2"
    if len(set(x)) == 1:
        return "every score is the same"
    if len(set(y)) == 1:
        return "every rating is the same"
    return None


def spearman_rho(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman's rho: Pearson's r of the average ranks (the tie-corrected form). None when fewer
    than two pairs or one side is constant."""
    if _undefined(x, y):
        return None
    return _pearson(average_ranks(x), average_ranks(y))


def _tied_pairs(values: Iterable[Any]) -> int:
    return sum(c * (c - 1) // 2 for c in Counter(values).values())


def _count_inversions(values: list[float]) -> int:
    """Pairs i < j with values[i] > values[j] (strictly), by merge sort; sorts ``values`` in place."""
    if len(values) < 2:
        return 0
    middle = len(values) // 2
    left, right = values[:middle], values[middle:]
    inversions = _count_inversions(left) + _count_inversions(right)
    i = j = k = 0
    while i < len(left) and j < len(right):
        if left[i] <= right[j]:
            values[k] = left[i]
            i += 1
        else:
            values[k] = right[j]
            inversions += len(left) - i
            j += 1
        k += 1
    values[k:] = left[i:] + right[j:]
    return inversions


def kendall_tau_b(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Kendall's tau-b = (C - D) / sqrt((n0 - n1) (n0 - n2)), with n0 = n(n-1)/2 and n1, n2 the pairs
    tied in x, in y. C - D comes from Knight's O(n log n) method: sort by (x, y); the pairs out of
    order in y are then exactly the discordant ones, so C - D = n0 - n1 - n2 + n3 - 2 D, where n3
    counts the pairs tied in both. None when fewer than two pairs or one side is constant."""
    if _undefined(x, y):
        return None
    n0 = len(x) * (len(x) - 1) // 2
    n1, n2 = _tied_pairs(x), _tied_pairs(y)
    n3 = _tied_pairs(zip(x, y))
    ordered = sorted(zip(x, y))
    discordant = _count_inversions([b for _, b in ordered])
    tau = (n0 - n1 - n2 + n3 - 2 * discordant) / math.sqrt((n0 - n1) * (n0 - n2))
    return max(-1.0, min(1.0, tau))


class RankCorrelation(BaseModel):
    n: int
    rho: float | None  # Spearman
    tau_b: float | None  # Kendall
    undefined_reason: str | None = None


def rank_correlation(x: Sequence[float], y: Sequence[float]) -> RankCorrelation:
    reason = _undefined(x, y)
    if reason:
        return RankCorrelation(n=len(x), rho=None, tau_b=None, undefined_reason=reason)
    return RankCorrelation(n=len(x), rho=round(spearman_rho(x, y), 4), tau_b=round(kendall_tau_b(x, y), 4))


def cohen_kappa(pairs: Iterable[tuple[bool, bool]]) -> Kappa:
    """Cohen's kappa of (passed, acceptable) pairs: (p_o - p_e) / (1 - p_e), with p_o the observed
    agreement and p_e the agreement expected from the two sides' marginals. Undefined when a side
    has one class only: kappa is then 0 or 0/0 whatever the agreement, so it is not reported."""
    table = {(True, True): 0, (True, False): 0, (False, True): 0, (False, False): 0}
    for passed, acceptable in pairs:
        table[(bool(passed), bool(acceptable))] += 1
    counts = dict(passed_acceptable=table[(True, True)], passed_defective=table[(True, False)],
                  failed_acceptable=table[(False, True)], failed_defective=table[(False, False)])
    n = sum(table.values())
    passed = table[(True, True)] + table[(True, False)]
    acceptable = table[(True, True)] + table[(False, True)]
    reason = None
    if n == 0:
        reason = "no labelled item"
    elif passed in (0, n):
        reason = f"every item {'passed' if passed else 'failed'}"
    elif acceptable in (0, n):
        reason = f"every label is {'acceptable' if acceptable else 'defective'}"
    if reason:
        return Kappa(n=n, value=None, undefined_reason=reason, **counts)
    observed = (table[(True, True)] + table[(False, False)]) / n
    expected = (passed * acceptable + (n - passed) * (n - acceptable)) / (n * n)
    return Kappa(n=n, value=round((observed - expected) / (1 - expected), 4), **counts)


# --------------------------------------------------------------------------------------------------
# Verdicts against labels (report.json `calibration`)
# --------------------------------------------------------------------------------------------------


def _kappa_by(labelled: list[EvaluationResult], key: str) -> dict[str, Kappa]:
    groups: dict[str, list[EvaluationResult]] = defaultdict(list)
    for result in labelled:
        groups[getattr(result, key)].append(result)
    return {name: cohen_kappa((r.passed, r.label["acceptable"]) for r in items)
            for name, items in sorted(groups.items())}


def calibrate(results: list[EvaluationResult]) -> Calibration | None:
    """Agreement of pass/fail with the human labels; None when no case is labelled. An unscored or
    failed item counts with the verdict the gate gave it: failed."""
    labelled = [r for r in results if r.label and isinstance(r.label.get("acceptable"), bool)]
    if not labelled:
        return None
    good = [r for r in labelled if r.label["acceptable"]]
    bad = [r for r in labelled if not r.label["acceptable"]]
    good_failed = [r.test_id for r in good if not r.passed]
    bad_passed = [r.test_id for r in bad if r.passed]
    return Calibration(
        labelled=len(labelled),
        acceptable=len(good),
        defective=len(bad),
        acceptable_failed=len(good_failed),
        defective_passed=len(bad_passed),
        acceptable_failed_rate=round(len(good_failed) / len(good), 4) if good else None,
        defective_passed_rate=round(len(bad_passed) / len(bad), 4) if bad else None,
        agreement=round(1 - (len(good_failed) + len(bad_passed)) / len(labelled), 4),
        acceptable_failed_ids=good_failed,
        defective_passed_ids=bad_passed,
        kappa=cohen_kappa((r.passed, r.label["acceptable"]) for r in labelled),
        kappa_by_intent=_kappa_by(labelled, "intent"),
        kappa_by_locale=_kappa_by(labelled, "locale"),
    )


def kappa_subsets(cal: Calibration) -> list[tuple[str, Kappa]]:
    """("all", kappa), then ("intent <name>", kappa) and ("locale <name>", kappa): the rows shown."""
    return ([("all", cal.kappa)] if cal.kappa else []) + \
        [(f"intent {name}", k) for name, k in cal.kappa_by_intent.items()] + \
        [(f"locale {name}", k) for name, k in cal.kappa_by_locale.items()]


# --------------------------------------------------------------------------------------------------
# Scores against numeric ratings
# --------------------------------------------------------------------------------------------------


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


def measure_set(name: str, dataset: str, cases: list[TestCase], results: list[EvaluationResult],
                pairs: Iterable[tuple[str, str, bool]], **provenance: Any) -> SetCalibration:
    """Join results to the data set's lines by test_id; the line's own label and ratings are the
    human side, whatever a results file recorded. ``pairs`` are (score, human field, info)."""
    by_id = {r.test_id: r for r in results}
    joined = [(case, by_id.get(case.test_id)) for case in cases]
    verdicts = [result.model_copy(update={"label": case.label.model_dump(exclude_none=True) if case.label else None})
                for case, result in joined if result is not None]
    return SetCalibration(
        name=name, dataset=dataset, items=len(cases), missing_results=len(cases) - len(verdicts),
        correlations=[correlate(joined, score, human, info) for score, human, info in pairs],
        calibration=calibrate(verdicts), **provenance,
    )


class CalibrationReport(BaseModel):
    generated_at: str
    plan: str | None = None
    sets: list[SetCalibration]


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


# --------------------------------------------------------------------------------------------------
# The calibration plan
# --------------------------------------------------------------------------------------------------


class PlanError(ValueError):
    """The plan file is missing or invalid; the message names the file and the field."""


class PlanPair(BaseModel):
    model_config = ConfigDict(extra="forbid")

    score: str
    human: str
    info: bool = False

    @field_validator("score")
    @classmethod
    def _score_known(cls, value: str) -> str:
        return check_score_name(value)


class PlanSet(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    dataset: str
    catalog: str | None = None
    pairs: list[PlanPair] = Field(default_factory=list)


class CalibrationPlan(BaseModel):
    """``base``: the folder relative paths start from, itself relative to the plan file's folder.
    ``vars``: defaults of the ``${NAME}`` variables the paths use; the environment overrides them."""

    model_config = ConfigDict(extra="forbid")

    base: str = "."
    vars: dict[str, str] = Field(default_factory=dict)
    sets: list[PlanSet] = Field(min_length=1)
    _root: Path = PrivateAttr(default_factory=Path.cwd)

    @model_validator(mode="after")
    def _names_unique(self) -> "CalibrationPlan":
        names = [s.name for s in self.sets]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"set names must be unique: {duplicates}")
        return self

    def path(self, raw: str) -> Path:
        """A plan path with its ``${NAME}`` variables filled in. A value from the environment that is
        relative is read from the current folder; anything else relative from ``base``. Shown relative
        to the current folder when it lies below it."""
        template = string.Template(raw)
        values: dict[str, str] = {}
        for name in template.get_identifiers():
            if name in os.environ:
                values[name] = os.path.abspath(os.environ[name])
            elif name in self.vars:
                values[name] = self.vars[name]
            else:
                raise PlanError(f"{raw}: ${{{name}}} is neither in the environment nor under vars")
        path = Path(os.path.normpath(self._root / Path(template.substitute(values)).expanduser()))
        return path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path


def load_plan(path: str | Path) -> CalibrationPlan:
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise PlanError(f"{path}: cannot read the calibration plan: {exc.strerror or exc}") from exc
    except yaml.YAMLError as exc:
        raise PlanError(f"{path}: not valid YAML: {exc}") from exc
    try:
        plan = CalibrationPlan.model_validate(data)
    except ValidationError as exc:
        raise PlanError(f"{path}: invalid calibration plan: {validation_problems(exc)}") from exc
    plan._root = (path.parent / plan.base).resolve()
    return plan
