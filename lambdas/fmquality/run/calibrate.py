"""Calibration: how the scores and the gate's verdicts agree with human judgments.

Pure Python (the core also runs inside Lambda, so no numpy or scipy):
- rank correlation between a score and a numeric human rating: Spearman's rho on average ranks and
  Kendall's tau-b, both correct under ties, each with its n;
- Cohen's kappa between the item verdicts (``passed``) and ``label.acceptable``, overall and per
  intent and locale, with its 2x2 table, beside the acceptable-failed / defective-passed rates;
- the AUC of a value between acceptable and defective answers (Mann-Whitney), for the agreement of
  each judged signal with the labels (``--signals-out``);
- on the labelled sets: which checks fire on acceptable and defective answers, and per-intent pass
  thresholds fitted to a target false-alarm rate (``--fit``), with the rubric edit they imply as a diff;
- the calibration plan (``datasets/calibration.yaml``): which data sets and (score, rating) pairs
  ``fmquality calibrate --plan`` measures.

A score that is missing (an unscored or failed item or dimension, a sub-score that did not apply) or
a rating that is missing leaves the item out of that pair; nothing is imputed.
"""

from __future__ import annotations

import difflib
import math
import os
import re
import string
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator, model_validator

from fmquality.domain.scores import DIMENSIONS, SUB_SCORES
from fmquality.domain.report import Calibration, Kappa
from fmquality.domain.results import EvaluationResult
from fmquality.domain.case import TestCase
from fmquality.config.yamldoc import validation_problems, yaml_mapping
from fmquality.domain.errors import PlanError

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


def auc(acceptable: Sequence[float], defective: Sequence[float]) -> float | None:
    """The probability that an acceptable item's value is higher than a defective item's, a tie
    counting one half (the Mann-Whitney U over n_a x n_d): U = R_a - n_a (n_a + 1) / 2, with R_a the
    sum of the acceptable values' average ranks in the pooled sample; AUC = U / (n_a n_d). 1 when the
    value separates the two perfectly, 0.5 when it says nothing. None when a side is empty."""
    if not acceptable or not defective:
        return None
    ranks = average_ranks([*acceptable, *defective])
    n_a, n_d = len(acceptable), len(defective)
    u = sum(ranks[:n_a]) - n_a * (n_a + 1) / 2
    return u / (n_a * n_d)


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


def with_line_labels(cases: list[TestCase], results: list[EvaluationResult]) -> list[EvaluationResult]:
    """The results of the data set's lines (joined by test_id, in the lines' order), each carrying its
    line's label, whatever a results file recorded."""
    by_id = {r.test_id: r for r in results}
    return [by_id[case.test_id].model_copy(
                update={"label": case.label.model_dump(exclude_none=True) if case.label else None})
            for case in cases if case.test_id in by_id]


def is_labelled(result: EvaluationResult) -> bool:
    return bool(result.label) and isinstance(result.label.get("acceptable"), bool)


def measure_set(name: str, dataset: str, cases: list[TestCase], results: list[EvaluationResult],
                pairs: Iterable[tuple[str, str, bool]], **provenance: Any) -> SetCalibration:
    """Join results to the data set's lines by test_id; the line's own label and ratings are the
    human side, whatever a results file recorded. ``pairs`` are (score, human field, info)."""
    by_id = {r.test_id: r for r in results}
    joined = [(case, by_id.get(case.test_id)) for case in cases]
    verdicts = with_line_labels(cases, results)
    return SetCalibration(
        name=name, dataset=dataset, items=len(cases), missing_results=len(cases) - len(verdicts),
        correlations=[correlate(joined, score, human, info) for score, human, info in pairs],
        calibration=calibrate(verdicts), **provenance,
    )


# --------------------------------------------------------------------------------------------------
# Checks on the labelled sets: which fire on acceptable answers
# --------------------------------------------------------------------------------------------------

CheckKind = Literal["hard_failure", "sub_score"]


def checks_fired(result: EvaluationResult) -> dict[str, CheckKind]:
    """The checks that fired on one answer: each hard-failure rule (by its name), and each sub-score a
    check settled below 1.0 (``dimension.sub_score``: in ``sub_scores``, not ``judged``)."""
    fired: dict[str, CheckKind] = {failure.rule: "hard_failure" for failure in result.hard_failures}
    for dimension, scored in result.dimension_scores.items():
        for name, value in scored.sub_scores.items():
            if name not in scored.judged and value < 1.0:
                fired[f"{dimension}.{name}"] = "sub_score"
    return fired


class CheckFires(BaseModel):
    """How often one check fired on one labelled set: answers it fired on, of how many."""

    fired_acceptable: int = 0
    acceptable: int = 0
    fired_defective: int = 0
    defective: int = 0


class CheckRow(BaseModel):
    check: str  # a hard-failure rule, or dimension.sub_score
    kind: CheckKind
    by_set: dict[str, CheckFires]  # every set of the table, in its order
    fired_acceptable: int  # over every set
    fired_defective: int
    flagged: bool  # fired on an acceptable answer: to be fixed or demoted


class CheckTable(BaseModel):
    """Every check that fired on a labelled answer, most false alarms (acceptable answers) first."""

    sets: list[str]
    rows: list[CheckRow]


def check_table(labelled_sets: dict[str, list[EvaluationResult]]) -> CheckTable:
    """Per check and per labelled set, the acceptable and defective answers it fired on (a check counts
    once per answer). Only labelled results count."""
    sizes: dict[str, CheckFires] = {}
    fires: dict[str, dict[str, CheckFires]] = defaultdict(dict)
    kinds: dict[str, CheckKind] = {}
    for set_name, results in labelled_sets.items():
        labelled = [r for r in results if is_labelled(r)]
        good = sum(1 for r in labelled if r.label["acceptable"])
        sizes[set_name] = CheckFires(acceptable=good, defective=len(labelled) - good)
        for result in labelled:
            for check, kind in checks_fired(result).items():
                kinds[check] = kind
                counts = fires[check].setdefault(set_name, sizes[set_name].model_copy())
                if result.label["acceptable"]:
                    counts.fired_acceptable += 1
                else:
                    counts.fired_defective += 1
    rows = []
    for check, by_set in fires.items():
        full = {name: by_set.get(name, size) for name, size in sizes.items()}
        on_good = sum(c.fired_acceptable for c in full.values())
        rows.append(CheckRow(check=check, kind=kinds[check], by_set=full, fired_acceptable=on_good,
                             fired_defective=sum(c.fired_defective for c in full.values()), flagged=on_good > 0))
    rows.sort(key=lambda row: (-row.fired_acceptable, row.check))
    return CheckTable(sets=list(sizes), rows=rows)


# --------------------------------------------------------------------------------------------------
# Per-intent thresholds fitted to a target false-alarm rate (--fit)
# --------------------------------------------------------------------------------------------------

# The reason combine() gives a composite below the threshold, and the weak sub-scores it names after
# it ("fluency.tone = 0.60", nothing more): both go when the threshold is lowered. Any other reason (a
# hard failure, a sub-score below the floor or at the judge's lowest level, unscored, an error) fails
# the item whatever the threshold.
_COMPOSITE_REASON = "composite "
_NAMED_WEAK_SUB_SCORE = re.compile(r"^[\w-]+\.[\w-]+ = -?\d+(?:\.\d+)?$")


def fails_whatever_the_threshold(result: EvaluationResult) -> bool:
    """True when the item fails for a reason other than its composite: a hard failure, no composite
    (unscored or error), a failure reason other than the composite's, or a failed verdict with the
    composite at or above the threshold it was scored with."""
    if result.status != "scored" or result.composite_score is None or result.hard_failures:
        return True
    if result.passed:
        return False
    if result.composite_score >= result.threshold:
        return True
    return any(not (reason.startswith(_COMPOSITE_REASON) or _NAMED_WEAK_SUB_SCORE.match(reason))
               for reason in result.failure_reasons)


def fails_at(result: EvaluationResult, threshold: float) -> bool:
    """The item's verdict were its intent's threshold ``threshold``."""
    return fails_whatever_the_threshold(result) or result.composite_score < threshold


def round_down_2(value: float) -> float:
    """Down to two decimals (0.8567 -> 0.85; 0.29 stays 0.29 despite 0.29 * 100 = 28.999...)."""
    return math.floor(round(value * 100, 6)) / 100


class FitCounts(BaseModel):
    """Labelled items of one subset and their verdicts at the current and at the proposed thresholds."""

    name: str
    acceptable: int = 0
    defective: int = 0
    acceptable_failed_now: int = 0
    acceptable_failed_proposed: int = 0
    defective_passed_now: int = 0  # misses
    defective_passed_proposed: int = 0


class IntentFit(FitCounts):
    current: float
    proposed: float
    changed: bool
    allowed: int  # floor(target_fpr x acceptable): the acceptable items allowed to fail
    fixed_failures: int  # acceptable items failing whatever the threshold
    note: str | None = None


class ThresholdFit(BaseModel):
    """Per-intent thresholds proposed from the labelled sets, pooled: the highest threshold at which
    at most floor(target_fpr x acceptable) acceptable items of the intent fail (or, when the items
    failing whatever the threshold are already more, none more), searched over the intent's composites
    rounded down to 2 decimals and its current threshold. ``diff``: the rubric edit, never applied."""

    target_fpr: float
    sets: list[str]
    rubric: str
    rubric_version: str | None = None
    intents: list[IntentFit]
    locales: list[FitCounts]
    overall: FitCounts
    diff: str = ""
    notes: list[str] = Field(default_factory=list)


def _propose(items: list[EvaluationResult], current: float, target_fpr: float) -> tuple[float, int, int, str | None]:
    """(proposed threshold, allowed, fixed failures, note) for one intent's labelled items."""
    good = [r for r in items if r.label["acceptable"]]
    if not good:
        return current, 0, 0, "no acceptable item: threshold kept"
    allowed = math.floor(target_fpr * len(good) + 1e-9)
    fixed = sum(1 for r in good if fails_whatever_the_threshold(r))
    if fixed == len(good):
        return current, allowed, fixed, (f"every acceptable item fails whatever the threshold ({fixed} fixed "
                                         "failure(s)): threshold kept")
    candidates = {round_down_2(current)} | {round_down_2(r.composite_score) for r in items
                                            if r.composite_score is not None}
    limit = max(allowed, fixed)
    proposed = max((t for t in candidates if sum(1 for r in good if fails_at(r, t)) <= limit), default=current)
    note = None
    if fixed > allowed:
        note = (f"the target cannot be met because of {fixed} fixed failure(s) (allowed {allowed}): proposed "
                "the highest threshold that adds no false alarm, just below the lowest acceptable composite")
    return proposed, allowed, fixed, note


def _tally(counts: FitCounts, result: EvaluationResult, now: float, proposed: float) -> None:
    if result.label["acceptable"]:
        counts.acceptable += 1
        counts.acceptable_failed_now += fails_at(result, now)
        counts.acceptable_failed_proposed += fails_at(result, proposed)
    else:
        counts.defective += 1
        counts.defective_passed_now += not fails_at(result, now)
        counts.defective_passed_proposed += not fails_at(result, proposed)


def fit_thresholds(results: list[EvaluationResult], current: dict[str, float], target_fpr: float,
                   sets: list[str], rubric: str, rubric_version: str | None = None) -> ThresholdFit:
    """Propose a threshold per intent of ``current`` (the rubric's) from the labelled ``results``.
    Items of an intent the rubric does not know are left out, with a note."""
    if not 0 <= target_fpr < 1:
        raise ValueError(f"the target false-alarm rate must lie in [0, 1), not {target_fpr}")
    labelled = [r for r in results if is_labelled(r)]
    by_intent: dict[str, list[EvaluationResult]] = defaultdict(list)
    for result in labelled:
        by_intent[result.intent].append(result)
    notes = [f"{len(items)} item(s) of intent {name!r}, which the rubric does not know, left out"
             for name, items in sorted(by_intent.items()) if name not in current]
    intents: list[IntentFit] = []
    proposals: dict[str, float] = {}
    for name, items in sorted(by_intent.items()):
        if name not in current:
            continue
        proposed, allowed, fixed, note = _propose(items, current[name], target_fpr)
        proposals[name] = proposed
        row = IntentFit(name=name, current=current[name], proposed=proposed,
                        changed=round(proposed, 6) != round(current[name], 6), allowed=allowed,
                        fixed_failures=fixed, note=note)
        for result in items:
            _tally(row, result, current[name], proposed)
        intents.append(row)
    locales: dict[str, FitCounts] = {}
    overall = FitCounts(name="all")
    for result in labelled:
        if result.intent not in proposals:
            continue
        locale = locales.setdefault(result.locale, FitCounts(name=result.locale))
        for counts in (locale, overall):
            _tally(counts, result, current[result.intent], proposals[result.intent])
    return ThresholdFit(target_fpr=target_fpr, sets=sets, rubric=rubric, rubric_version=rubric_version,
                        intents=intents, locales=[locales[k] for k in sorted(locales)], overall=overall, notes=notes)


_YAML_KEY = re.compile(r"""^(?P<indent> *)(?P<q>["']?)(?P<key>[^\s"':#][^"':#]*?)(?P=q)\s*:(?:\s|$)""")
_THRESHOLD_VALUE = re.compile(r"(?<![\w-])(?P<head>threshold\s*:\s*)(?P<value>[-+]?(?:\d+\.?\d*|\.\d+))")


def _code_part(line: str) -> str:
    """The line without its comment (a # after a blank or at the start; rubric values hold no #)."""
    match = re.search(r"(^|\s)#", line)
    return line[:match.start()] if match else line


def edit_thresholds(text: str, thresholds: dict[str, float], source: str = "<rubric>") -> str:
    """The rubric text with ``intents.<name>.threshold`` set for the given intents and every other
    character as it was (flow or block style). Raises ValueError when an intent or its threshold
    cannot be found, or the edited text does not parse to the same rubric with only those changed."""
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if re.match(r"^intents\s*:\s*(#.*)?$", line.rstrip("\r\n"))),
                 None)
    if start is None:
        raise ValueError(f"{source}: no top-level 'intents:' block to edit")
    end = next((i for i in range(start + 1, len(lines))
                if _code_part(lines[i]).strip() and not lines[i].startswith((" ", "\t"))), len(lines))
    entries: list[tuple[str, int]] = []  # (intent, first line) at the block's child indentation
    child_indent = None
    for i in range(start + 1, end):
        match = _YAML_KEY.match(_code_part(lines[i]))
        if not match:
            continue
        indent = len(match["indent"])
        if child_indent is None:
            child_indent = indent
        if indent == child_indent:
            entries.append((match["key"].strip(), i))
    spans = {key: (first, entries[k + 1][1] if k + 1 < len(entries) else end) for k, (key, first) in enumerate(entries)}
    edited = list(lines)
    for intent, value in sorted(thresholds.items()):
        if intent not in spans:
            raise ValueError(f"{source}: intent {intent!r} not found under intents")
        first, stop = spans[intent]
        for i in range(first, stop):
            code = _code_part(edited[i])
            match = _THRESHOLD_VALUE.search(code)
            if match:
                edited[i] = edited[i][:match.start("value")] + f"{value:.2f}" + edited[i][match.end("value"):]
                break
        else:
            raise ValueError(f"{source}: no threshold found for intent {intent!r}")
    new_text = "".join(edited)
    before, after = yaml.safe_load(text), yaml.safe_load(new_text)
    for intent, value in thresholds.items():
        before["intents"][intent]["threshold"] = round(value, 2)
    if before != after:
        raise ValueError(f"{source}: editing the thresholds changed something else; no diff written")
    return new_text


def threshold_diff(text: str, path: str, thresholds: dict[str, float]) -> str:
    """A unified diff of the rubric file with only the given intents' thresholds changed ("" when
    none is)."""
    new_text = edit_thresholds(text, thresholds, path)
    return "".join(difflib.unified_diff(text.splitlines(keepends=True), new_text.splitlines(keepends=True),
                                        fromfile=f"a/{path}", tofile=f"b/{path}"))


# --------------------------------------------------------------------------------------------------
# Agreement of the judge's signals with the labels (--signals-out)
# --------------------------------------------------------------------------------------------------

MIN_ANSWERS_PER_SIDE = 10


class SignalAgreement(BaseModel):
    """One judged sub-score against the labels: its AUC (acceptable vs defective), the answers on each
    side, and the weight that agreement earns: max(0, 2 x AUC - 1), 0 below MIN_ANSWERS_PER_SIDE."""

    auc: float | None
    acceptable: int
    defective: int
    weight: float


class SignalReport(BaseModel):
    judge: str
    measured_on: list[str]
    signals: dict[str, SignalAgreement]


def signal_weight(value: float | None, acceptable: int, defective: int) -> float:
    if value is None or min(acceptable, defective) < MIN_ANSWERS_PER_SIDE:
        return 0.0
    return round(max(0.0, 2 * value - 1), 3)


def signal_agreement(results: Iterable[EvaluationResult], judge: str, measured_on: list[str]) -> SignalReport:
    """Pool the heuristic readings of every judged sub-score (those that count with an earned weight,
    ``DimensionScore.weights``; a finding graded as a verdict is not one) over the labelled
    ``results``, by label, and measure how they separate acceptable from defective answers. A
    sub-score is named by itself, or as ``dimension.sub_score`` when two dimensions have one of that
    name."""
    values: dict[tuple[str, str], tuple[list[float], list[float]]] = defaultdict(lambda: ([], []))
    for result in results:
        if not is_labelled(result):
            continue
        for dimension, scored in result.dimension_scores.items():
            for name in scored.judged:
                if name in scored.sub_scores and name in scored.weights:
                    values[(dimension, name)][0 if result.label["acceptable"] else 1].append(scored.sub_scores[name])
    bare = Counter(name for _, name in values)
    signals = {}
    for (dimension, name), (good, bad) in values.items():
        value = auc(good, bad)
        signals[name if bare[name] == 1 else f"{dimension}.{name}"] = SignalAgreement(
            auc=None if value is None else round(value, 3), acceptable=len(good), defective=len(bad),
            weight=signal_weight(value, len(good), len(bad)))
    return SignalReport(judge=judge, measured_on=measured_on, signals=dict(sorted(signals.items())))


def signals_yaml(report: SignalReport, command: str) -> str:
    """The agreement file the offline judge reads its weights from."""
    lines = [
        "# Agreement of the offline judge's signals with people: AUC of each sub-score's value, acceptable vs",
        "# defective answers, on the labelled sets below; weight = max(0, 2 x AUC - 1) "
        f"(0 below {MIN_ANSWERS_PER_SIDE} answers a side).",
        f"# Written by: {command}",
        f"judge: {report.judge}",
        f"measured_on: [{', '.join(report.measured_on)}]",
        "signals:" if report.signals else "signals: {}",
    ]
    for name, s in report.signals.items():
        value = "null" if s.auc is None else f"{s.auc:.3f}"
        lines.append(f"  {name}: {{auc: {value}, acceptable: {s.acceptable}, defective: {s.defective}, "
                     f"weight: {s.weight!r}}}")
    return "\n".join(lines) + "\n"


class CalibrationReport(BaseModel):
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


# --------------------------------------------------------------------------------------------------
# The calibration plan
# --------------------------------------------------------------------------------------------------


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
    # The labelled sets the judge's signals are measured on (--signals-out); None: every labelled set.
    agreement_sets: list[str] | None = None
    _root: Path = PrivateAttr(default_factory=Path.cwd)

    @model_validator(mode="after")
    def _names_unique(self) -> "CalibrationPlan":
        names = [s.name for s in self.sets]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"set names must be unique: {duplicates}")
        unknown = [n for n in self.agreement_sets or [] if n not in names]
        if unknown:
            raise ValueError(f"agreement_sets names sets the plan does not have: {unknown}")
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
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise PlanError(f"{path}: cannot read the calibration plan: {exc.strerror or exc}") from exc
    data = yaml_mapping(text, str(path), PlanError, "the calibration plan")
    try:
        plan = CalibrationPlan.model_validate(data)
    except ValidationError as exc:
        raise PlanError(f"{path}: invalid calibration plan: {validation_problems(exc)}") from exc
    plan._root = (path.parent / plan.base).resolve()
    return plan
