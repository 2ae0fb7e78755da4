"""Candidate against control, paired: both arms answered the same cases in one run, so the per-case
difference of their composites removes what the cases themselves contribute (easy or hard lines,
intents, locales) and leaves what the candidate changed.

Per subset (overall, and every intent, locale and tag with at least ``min_pairs`` pairs): the mean of
the differences with a percentile-bootstrap interval (the pairs resampled with replacement). A subset
regresses when the whole interval lies below ``-allowed_drop``: a drop the data cannot explain as
noise, and larger than the rubric tolerates.

Pure Python (the core also runs inside Lambda, where there is no numpy). The resampling is fast
because the bootstrap draws depend only on the subset's size: for each size the index tuples of all
resamples are drawn once (seeded by the rubric's seed and the size, so an interval does not change
when another subset appears) and compiled into ``operator.itemgetter`` objects, so one resample of a
subset is one C-level gather and one ``sum``.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Iterable, Sequence
from operator import itemgetter
from statistics import fmean
from typing import TYPE_CHECKING, Callable

from fmquality.domain.results import EvaluationResult
from fmquality.domain.report import PairedComparison, PairedInterval, PairedItem

if TYPE_CHECKING:
    from fmquality.config.rubric import PairedRules, Rubric

Gather = Callable[[Sequence[float]], Sequence[float]]


class _Resampler:
    """Bootstrap index draws per subset size, drawn once and shared by every subset of that size."""

    def __init__(self, resamples: int, seed: int) -> None:
        self.resamples = resamples
        self.seed = seed
        self._gathers: dict[int, list[Gather]] = {}

    def gathers(self, n: int) -> list[Gather]:
        cached = self._gathers.get(n)
        if cached is None:
            # A string seed is hashed deterministically (random's version-2 seeding), unlike hash().
            rng = random.Random(f"fmquality-paired:{self.seed}:{n}")
            draw = rng.choices(range(n), k=n * self.resamples)
            cached = [_gather(draw[start:start + n]) for start in range(0, n * self.resamples, n)]
            self._gathers[n] = cached
        return cached

    def means(self, values: Sequence[float]) -> list[float]:
        n = len(values)
        return [sum(g(values)) / n for g in self.gathers(n)]


def _gather(indices: list[int]) -> Gather:
    if len(indices) == 1:  # itemgetter of one index returns the item, not a tuple
        only = indices[0]
        return lambda values: (values[only],)
    return itemgetter(*indices)


def _percentile(sorted_values: Sequence[float], q: float) -> float:
    """Linear interpolation between the closest ranks (numpy's default), q in [0, 1]."""
    if len(sorted_values) == 1:
        return sorted_values[0]
    position = q * (len(sorted_values) - 1)
    low = math.floor(position)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (position - low)


def _interval(subset: str, pairs: list["_Pair"], resampler: _Resampler, confidence: float,
              allowed_drop: float) -> PairedInterval:
    differences = [p.difference for p in pairs]
    means = sorted(resampler.means(differences))
    tail = (1.0 - confidence) / 2.0
    low, high = _percentile(means, tail), _percentile(means, 1.0 - tail)
    mean = fmean(differences)
    return PairedInterval(
        subset=subset,
        n=len(pairs),
        candidate_mean=round(fmean(p.candidate for p in pairs), 4),
        control_mean=round(fmean(p.control for p in pairs), 4),
        mean_difference=round(mean, 4),
        ci_low=round(low, 4),
        ci_high=round(high, 4),
        allowed_drop=allowed_drop,
        # Decided on the unrounded bound: rounding must not move an interval across the line.
        regressed=high < -allowed_drop,
    )


class _Pair:
    __slots__ = ("test_id", "candidate", "control", "difference", "subsets")

    def __init__(self, test_id: str, candidate: float, control: float, subsets: list[str]) -> None:
        self.test_id = test_id
        self.candidate = candidate
        self.control = control
        self.difference = candidate - control
        self.subsets = subsets


def _subsets_of(result: EvaluationResult) -> list[str]:
    return [f"intent:{result.intent}", f"locale:{result.locale}", *(f"tag:{t}" for t in sorted(set(result.tags)))]


def _subset_order(name: str) -> tuple[int, str]:
    return ({"intent": 0, "locale": 1, "tag": 2}.get(name.split(":", 1)[0], 3), name)


def compare_arms(
    candidate: Iterable[EvaluationResult],
    control: Iterable[EvaluationResult],
    rubric: "Rubric | None" = None,
    *,
    rules: "PairedRules | None" = None,
) -> PairedComparison:
    """Pair the two arms by test id and compare them (see the module docstring).

    A pair counts when both arms have a composite score; every other id (missing from an arm, or
    unscored/error in either) is listed in ``unpaired``. ``rules`` overrides the rubric's
    ``gate.paired`` (tests, experiments)."""
    if rules is None:
        if rubric is None:
            from fmquality.config.rubric import PairedRules

            rules = PairedRules()
        else:
            rules = rubric.gate.paired
    cand = {r.test_id: r for r in candidate}
    ctrl = {r.test_id: r for r in control}

    pairs: list[_Pair] = []
    items: list[PairedItem] = []
    unpaired: list[str] = []
    for test_id in sorted(set(cand) | set(ctrl)):
        a, b = cand.get(test_id), ctrl.get(test_id)
        if a is None or b is None or a.composite_score is None or b.composite_score is None:
            unpaired.append(test_id)
        if a is None or b is None:
            continue
        difference = None
        if a.composite_score is not None and b.composite_score is not None:
            pair = _Pair(test_id, a.composite_score, b.composite_score, _subsets_of(a))
            pairs.append(pair)
            difference = round(pair.difference, 4)
        items.append(PairedItem(
            test_id=test_id, intent=a.intent, locale=a.locale,
            candidate_score=a.composite_score, control_score=b.composite_score, difference=difference,
            candidate_passed=a.passed, control_passed=b.passed,
        ))
    # Worst first; pairs without a difference last.
    items.sort(key=lambda i: (i.difference is None, i.difference if i.difference is not None else 0.0, i.test_id))

    resampler = _Resampler(rules.bootstrap_resamples, rules.bootstrap_seed)
    confidence = rules.bootstrap_confidence
    overall = (_interval("overall", pairs, resampler, confidence, rules.max_mean_drop)
               if len(pairs) >= rules.min_pairs else None)
    by_subset: dict[str, list[_Pair]] = defaultdict(list)
    for pair in pairs:
        for name in pair.subsets:
            by_subset[name].append(pair)
    subsets = [
        _interval(name, members, resampler, confidence, rules.max_subset_drop)
        for name, members in sorted(by_subset.items(), key=lambda kv: _subset_order(kv[0]))
        if len(members) >= rules.min_pairs
    ]

    control_list = list(ctrl.values())
    control_scores = [r.composite_score for r in control_list if r.composite_score is not None]
    return PairedComparison(
        confidence=confidence,
        resamples=rules.bootstrap_resamples,
        seed=rules.bootstrap_seed,
        pairs=len(pairs),
        unpaired=unpaired,
        control_pass_rate=round(sum(1 for r in control_list if r.passed) / len(control_list), 4) if control_list else 0.0,
        control_mean_composite=round(fmean(control_scores), 4) if control_scores else None,
        overall=overall,
        subsets=subsets,
        items=items,
    )


def regressed_intervals(comparison: PairedComparison) -> list[PairedInterval]:
    """The intervals that break the gate, overall first."""
    out = [comparison.overall] if comparison.overall is not None and comparison.overall.regressed else []
    return out + [s for s in comparison.subsets if s.regressed]


def describe_interval(interval: PairedInterval, confidence: float) -> str:
    """One gate reason: the subset, the mean difference, its interval and the line it is below."""
    return (f"{interval.subset}: candidate − control {_num(interval.mean_difference)} "
            f"({confidence:.0%} CI {_num(interval.ci_low)} … {_num(interval.ci_high)}) "
            f"below {_num(-interval.allowed_drop)} (n={interval.n} pairs)")


def _num(value: float) -> str:
    """Three decimals with a typographic minus, as the report prints differences."""
    return f"{value:.3f}".replace("-", "−")
