"""Candidate against control, paired: both arms answered the same cases in one run, so the per-case
difference of their composites removes what the cases themselves contribute (easy or hard lines,
intents, locales) and leaves what the candidate changed.

Per subset (overall, and every intent, locale and tag with at least ``min_pairs`` pairs): the mean of
the differences with a percentile-bootstrap interval (the pairs resampled with replacement). A subset
regresses when the whole interval lies below ``-allowed_drop``: a drop the data cannot explain as
noise, and larger than the rubric tolerates.

The intervals come from ``stats.bootstrap`` (the resamples of one size are drawn once and shared by
every subset of that size, seeded by the rubric's seed).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from statistics import fmean

from fmquality.config.rubric import PairedRules, Rubric
from fmquality.domain.report import PairedComparison, PairedInterval, PairedItem
from fmquality.domain.results import EvaluationResult
from fmquality.stats.bootstrap import BootstrapMeans


def _interval(subset: str, pairs: list["_Pair"], bootstrap: BootstrapMeans, confidence: float,
              allowed_drop: float) -> PairedInterval:
    differences = [p.difference for p in pairs]
    low, high = bootstrap.interval(differences, confidence)
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


def _pair_arms(cand: dict[str, EvaluationResult], ctrl: dict[str, EvaluationResult]
               ) -> tuple[list[_Pair], list[PairedItem], list[str]]:
    """(pairs with both composites, every id in both arms as an item, worst difference first, the
    unpaired ids)."""
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
    return pairs, items, unpaired


def _subset_intervals(pairs: list[_Pair], bootstrap: BootstrapMeans, rules: PairedRules) -> list[PairedInterval]:
    """The interval of every intent, locale and tag with at least ``min_pairs`` pairs."""
    by_subset: dict[str, list[_Pair]] = defaultdict(list)
    for pair in pairs:
        for name in pair.subsets:
            by_subset[name].append(pair)
    return [
        _interval(name, members, bootstrap, rules.bootstrap_confidence, rules.max_subset_drop)
        for name, members in sorted(by_subset.items(), key=lambda kv: _subset_order(kv[0]))
        if len(members) >= rules.min_pairs
    ]


def compare_arms(
    candidate: Iterable[EvaluationResult],
    control: Iterable[EvaluationResult],
    rubric: Rubric | None = None,
    *,
    rules: PairedRules | None = None,
) -> PairedComparison:
    """Pair the two arms by test id and compare them (see the module docstring).

    A pair counts when both arms have a composite score; every other id (missing from an arm, or
    unscored/error in either) is listed in ``unpaired``. ``rules`` overrides the rubric's
    ``gate.paired`` (tests, experiments)."""
    if rules is None:
        rules = PairedRules() if rubric is None else rubric.gate.paired
    ctrl = {r.test_id: r for r in control}
    pairs, items, unpaired = _pair_arms({r.test_id: r for r in candidate}, ctrl)
    bootstrap = BootstrapMeans(rules.bootstrap_resamples, rules.bootstrap_seed, label="fmquality-paired")
    confidence = rules.bootstrap_confidence
    overall = (_interval("overall", pairs, bootstrap, confidence, rules.max_mean_drop)
               if len(pairs) >= rules.min_pairs else None)
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
        subsets=_subset_intervals(pairs, bootstrap, rules),
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
