"""Rank statistics: average ranks, Spearman's rho and Kendall's tau-b (both correct under ties), and
the AUC of a value between two groups (Mann-Whitney U). Each correlation is undefined (None) with
fewer than two pairs or a constant side; ``rank_correlation`` says why.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import BaseModel


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
    """Why a rank correlation of ``x`` (scores) and ``y`` (ratings) is undefined, or None.
    Raises ValueError when the samples are not paired (different lengths)."""
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
    """Both rank correlations of one paired sample, rounded to 4 decimals, or why they are undefined."""

    n: int
    rho: float | None  # Spearman
    tau_b: float | None  # Kendall
    undefined_reason: str | None = None


def rank_correlation(x: Sequence[float], y: Sequence[float]) -> RankCorrelation:
    """Spearman's rho and Kendall's tau-b of the pairs (x[i], y[i])."""
    reason = _undefined(x, y)
    if reason:
        return RankCorrelation(n=len(x), rho=None, tau_b=None, undefined_reason=reason)
    return RankCorrelation(n=len(x), rho=round(spearman_rho(x, y), 4), tau_b=round(kendall_tau_b(x, y), 4))


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
