"""Percentile-bootstrap intervals of a mean, in pure Python and fast enough for every subset of a run.

The resampling draws depend only on the sample's size: for each size the index tuples of all
resamples are drawn once (seeded by the caller's seed and the size, so an interval does not change
when another sample of another size appears) and compiled into ``operator.itemgetter`` objects, so
one resample is one C-level gather and one ``sum``.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from operator import itemgetter
from typing import Callable

Gather = Callable[[Sequence[float]], Sequence[float]]


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Linear interpolation between the closest ranks (numpy's default), q in [0, 1]."""
    if len(sorted_values) == 1:
        return sorted_values[0]
    position = q * (len(sorted_values) - 1)
    low = math.floor(position)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (position - low)


def _gather(indices: list[int]) -> Gather:
    if len(indices) == 1:  # itemgetter of one index returns the item, not a tuple
        only = indices[0]
        return lambda values: (values[only],)
    return itemgetter(*indices)


class BootstrapMeans:
    """``resamples`` bootstrap means of a sample; the index draws for a size are made once and
    shared by every sample of that size. ``seed`` names the stream (``label:seed:size``)."""

    def __init__(self, resamples: int, seed: int, label: str) -> None:
        self.resamples = resamples
        self.seed = seed
        self.label = label
        self._gathers: dict[int, list[Gather]] = {}

    def _gathers_of(self, n: int) -> list[Gather]:
        cached = self._gathers.get(n)
        if cached is None:
            # A string seed is hashed deterministically (random's version-2 seeding), unlike hash().
            rng = random.Random(f"{self.label}:{self.seed}:{n}")
            draw = rng.choices(range(n), k=n * self.resamples)
            cached = [_gather(draw[start:start + n]) for start in range(0, n * self.resamples, n)]
            self._gathers[n] = cached
        return cached

    def means(self, values: Sequence[float]) -> list[float]:
        """The mean of each resample of ``values`` (drawn with replacement, same size)."""
        n = len(values)
        return [sum(g(values)) / n for g in self._gathers_of(n)]

    def interval(self, values: Sequence[float], confidence: float) -> tuple[float, float]:
        """The percentile interval of the mean: the (1 - confidence) / 2 and (1 + confidence) / 2
        percentiles of the resampled means."""
        means = sorted(self.means(values))
        tail = (1.0 - confidence) / 2.0
        return percentile(means, tail), percentile(means, 1.0 - tail)
