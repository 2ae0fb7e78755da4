"""Calibration: how the scores and the gate's verdicts agree with human judgments.

Pure Python (the core also runs inside Lambda, so no numpy or scipy):
- rank correlation between a score and a numeric human rating: Spearman's rho on average ranks and
  Kendall's tau-b, both correct under ties, each with its n;
- Cohen's kappa between the item verdicts (``passed``) and ``label.acceptable``, overall and per
  intent and locale, with its 2x2 table, beside the acceptable-failed / defective-passed rates.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import BaseModel

from fmquality.models import Calibration, EvaluationResult, Kappa

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


def _pearson(x: Sequence[float], y: Sequence[float]) -> float | None:
    n = len(x)
    mx, my = sum(x) / n, sum(y) / n
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y))
    sxx = sum((a - mx) ** 2 for a in x)
    syy = sum((b - my) ** 2 for b in y)
    if sxx == 0 or syy == 0:
        return None
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
    counts: dict[Any, int] = defaultdict(int)
    for value in values:
        counts[value] += 1
    return sum(c * (c - 1) // 2 for c in counts.values())


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
