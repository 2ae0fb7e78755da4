"""Drift of sampled production runs against an approved reference period.

Per intent x locale stratum and per measure (the composite and each of the four dimensions):

- **CUSUM** (one-sided, downward, ``stats.cusum``) on the run means: with mu and sigma the mean and
  standard deviation of the reference runs' means for that stratum and measure, after each run
  ``S = max(0, S_prev + (mu - x) - k)``, ``k = cusum_k_sigma * sigma``; it signals when
  ``S > h = cusum_h_sigma * sigma`` (defaults k = 0.5 sigma, h = 4 sigma). ``S`` is carried across
  runs in a DriftState (a JSON document); the metric DriftCusum is ``S / sigma`` so one alarm
  threshold (h in sigmas) serves every stratum. sigma is floored at ``min_sigma`` (reference runs that
  agree exactly) and, with a single reference run, estimated from its items (sd / sqrt(n)).
- **Kolmogorov-Smirnov**, two-sample, between this run's composite scores in the stratum and the
  pooled reference items: the statistic D and its asymptotic p-value (``stats.ks``). A p-value
  below ``ks_alpha`` with a lower mean also flags the stratum.

Each rule is one function (``_cusum_rule``, ``_ks_rule``) called by ``detect_drift``; a rule adds a
reason to the stratum, and any reason flags it.

A stratum with fewer than ``min_items`` items in a run is not tested and its CUSUM is left as it was.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timezone
from statistics import fmean, pstdev, stdev
from typing import Any

from pydantic import BaseModel, Field

from fmquality.config.watch import DriftSettings
from fmquality.domain.results import EvaluationResult
from fmquality.schemes.mangaassist import DIMENSIONS
from fmquality.stats.cusum import cusum_down
from fmquality.stats.ks import KsResult, ks_2samp

COMPOSITE = "composite"
MEASURES: tuple[str, ...] = (COMPOSITE, *DIMENSIONS)


# --------------------------------------------------------------------------------------------------
# Reference, state, detection
# --------------------------------------------------------------------------------------------------


def stratum_key(intent: str, locale: str) -> str:
    return f"{intent}|{locale}"


def _values(items: Iterable[EvaluationResult], measure: str) -> list[float]:
    if measure == COMPOSITE:
        return [r.composite_score for r in items if r.composite_score is not None]
    out = []
    for r in items:
        score = r.dimension_scores.get(measure)
        if score is not None and score.score is not None:
            out.append(score.score)
    return out


def result_stratum(result: EvaluationResult) -> str:
    return stratum_key(result.intent, result.locale)


def _by_stratum(results: Iterable[EvaluationResult],
                key: Callable[[EvaluationResult], str] = result_stratum) -> dict[str, list[EvaluationResult]]:
    groups: dict[str, list[EvaluationResult]] = defaultdict(list)
    for r in results:
        groups[key(r)].append(r)
    return groups


class MeasureReference(BaseModel):
    mean: float
    sigma: float  # of run means (the weekly CUSUM's unit)
    runs: int
    # Of single items, and how many: the stream CUSUM's unit (production.stream_drift).
    item_sigma: float | None = None
    items: int = 0


class StratumReference(BaseModel):
    measures: dict[str, MeasureReference] = Field(default_factory=dict)
    composites: list[float] = Field(default_factory=list)  # pooled reference items, for KS


class Reference(BaseModel):
    run_ids: list[str] = Field(default_factory=list)
    strata: dict[str, StratumReference] = Field(default_factory=dict)
    # What was approved, by whom and when (``stream_drift.approve_reference``); empty for older files.
    source: dict[str, Any] = Field(default_factory=dict)


def build_reference(runs: Sequence[Sequence[EvaluationResult]], settings: DriftSettings | None = None,
                    run_ids: Sequence[str] | None = None,
                    key: Callable[[EvaluationResult], str] = result_stratum) -> Reference:
    """Mean and standard deviation of the reference runs' means per stratum (``key``: intent x locale
    unless told) and measure, and each measure's item-level standard deviation."""
    settings = settings or DriftSettings()
    per_stratum: dict[str, list[list[EvaluationResult]]] = defaultdict(list)
    for run in runs:
        for key_value, items in _by_stratum(run, key).items():
            per_stratum[key_value].append(items)
    strata: dict[str, StratumReference] = {}
    for key_value, run_items in sorted(per_stratum.items()):
        ref = StratumReference()
        for measure in MEASURES:
            means, pooled = [], []
            for items in run_items:
                values = _values(items, measure)
                if values:
                    means.append(fmean(values))
                    pooled.extend(values)
            if not means:
                continue
            if len(means) >= 2:
                sigma = stdev(means)
            else:
                sigma = pstdev(pooled) / math.sqrt(len(pooled)) if len(pooled) > 1 else 0.0
            item_sigma = pstdev(pooled) if len(pooled) > 1 else 0.0
            ref.measures[measure] = MeasureReference(
                mean=round(fmean(means), 6), sigma=round(max(sigma, settings.min_sigma), 6), runs=len(means),
                item_sigma=round(max(item_sigma, settings.min_sigma), 6), items=len(pooled))
        ref.composites = [v for items in run_items for v in _values(items, COMPOSITE)]
        strata[key_value] = ref
    return Reference(run_ids=list(run_ids or []), strata=strata)


class MeasureState(BaseModel):
    cusum: float = 0.0  # in score units
    runs: int = 0


class DriftState(BaseModel):
    """CUSUM sums carried from run to run, per stratum and measure."""

    strata: dict[str, dict[str, MeasureState]] = Field(default_factory=dict)
    runs: list[str] = Field(default_factory=list)


class WorstItem(BaseModel):
    test_id: str
    composite_score: float | None
    reasons: list[str] = Field(default_factory=list)


class MeasureDrift(BaseModel):
    mean: float
    reference_mean: float
    sigma: float
    shift: float  # run mean - reference mean (negative: worse)
    cusum: float  # S / sigma
    signalled: bool


class StratumDrift(BaseModel):
    intent: str
    locale: str
    items: int
    tested: bool
    note: str | None = None
    measures: dict[str, MeasureDrift] = Field(default_factory=dict)
    ks: KsResult | None = None
    flag: bool = False
    reasons: list[str] = Field(default_factory=list)
    worst_items: list[WorstItem] = Field(default_factory=list)

    @property
    def cusum(self) -> float:
        m = self.measures.get(COMPOSITE)
        return m.cusum if m else 0.0


class DriftReport(BaseModel):
    run_id: str
    reference_runs: list[str] = Field(default_factory=list)
    settings: DriftSettings
    strata: list[StratumDrift] = Field(default_factory=list)

    @property
    def flagged(self) -> list[StratumDrift]:
        return [s for s in self.strata if s.flag]


def _cusum_rule(drift: StratumDrift, items: list[EvaluationResult], ref: StratumReference,
                stratum_state: dict[str, MeasureState], settings: DriftSettings, count_run: bool) -> None:
    """Each measure's CUSUM updated with this run's mean (unless the run was counted before); a sum
    past h sigmas flags the stratum (reason ``cusum:<measure>``)."""
    for measure, mref in ref.measures.items():
        values = _values(items, measure)
        if not values:
            continue
        mean = fmean(values)
        ms = stratum_state.setdefault(measure, MeasureState())
        if count_run:
            ms.cusum = cusum_down(ms.cusum, mean, mref.mean, settings.cusum_k_sigma * mref.sigma)
            ms.runs += 1
        signalled = ms.cusum > settings.cusum_h_sigma * mref.sigma
        drift.measures[measure] = MeasureDrift(
            mean=round(mean, 4), reference_mean=mref.mean, sigma=mref.sigma,
            shift=round(mean - mref.mean, 4), cusum=round(ms.cusum / mref.sigma, 3), signalled=signalled)
        if signalled:
            drift.reasons.append(f"cusum:{measure}")


def _ks_rule(drift: StratumDrift, items: list[EvaluationResult], ref: StratumReference,
             settings: DriftSettings) -> None:
    """The run's composites against the pooled reference items: a KS p-value below ``ks_alpha``
    with a lower mean flags the stratum (reason ``ks``). Runs after the CUSUM rule (it reads the shift)."""
    current = _values(items, COMPOSITE)
    if current and ref.composites:
        drift.ks = ks_2samp(current, ref.composites)
        lower = COMPOSITE in drift.measures and drift.measures[COMPOSITE].shift < 0
        if drift.ks.p_value < settings.ks_alpha and lower:
            drift.reasons.append("ks")


def _untested_stratum(intent: str, locale: str, items: list[EvaluationResult], settings: DriftSettings) -> StratumDrift:
    worst = sorted(items, key=lambda r: (r.composite_score if r.composite_score is not None else -1.0, r.test_id))
    return StratumDrift(intent=intent, locale=locale, items=len(items), tested=False,
                        worst_items=[WorstItem(test_id=r.test_id, composite_score=r.composite_score,
                                               reasons=r.failure_reasons[:3])
                                     for r in worst[:settings.worst_items]])


def detect_drift(results: Sequence[EvaluationResult], reference: Reference, state: DriftState | None = None,
                 settings: DriftSettings | None = None, run_id: str = "run") -> tuple[DriftReport, DriftState]:
    """Update the CUSUMs with this run and test each stratum against the drift rules (``_cusum_rule``,
    ``_ks_rule``); returns the report and the new state (the given state is not modified). A run id
    already in the state is not counted twice."""
    settings = settings or DriftSettings()
    state = (state or DriftState()).model_copy(deep=True)
    repeated = run_id in state.runs
    out: list[StratumDrift] = []
    for key, items in sorted(_by_stratum(results).items()):
        intent, locale = key.split("|", 1)
        drift = _untested_stratum(intent, locale, items, settings)
        ref = reference.strata.get(key)
        if ref is None:
            drift.note = "no reference for this stratum"
        elif len(items) < settings.min_items:
            drift.note = f"{len(items)} item(s), fewer than {settings.min_items}: not tested"
        else:
            drift.tested = True
            _cusum_rule(drift, items, ref, state.strata.setdefault(key, {}), settings, count_run=not repeated)
            _ks_rule(drift, items, ref, settings)
            drift.flag = bool(drift.reasons)
        out.append(drift)
    if not repeated:
        state.runs.append(run_id)
    return DriftReport(run_id=run_id, reference_runs=reference.run_ids, settings=settings, strata=out), state


# --------------------------------------------------------------------------------------------------
# Publication
# --------------------------------------------------------------------------------------------------


def drift_metric_data(report: DriftReport, timestamp: datetime | None = None) -> list[dict[str, Any]]:
    """DriftCusum (composite, in sigmas), DriftKsStatistic and DriftFlag (0/1) per tested stratum,
    with the dimensions Intent and Locale; DriftCusum_<dimension> per dimension."""
    when = timestamp or datetime.now(timezone.utc)
    data: list[dict[str, Any]] = []
    for s in report.strata:
        if not s.tested:
            continue
        dims = [{"Name": "Intent", "Value": s.intent}, {"Name": "Locale", "Value": s.locale}]

        def datum(name: str, value: float) -> dict[str, Any]:
            return {"MetricName": name, "Dimensions": dims, "Value": float(value), "Unit": "None", "Timestamp": when}

        data.append(datum("DriftCusum", s.cusum))
        for measure, m in s.measures.items():
            if measure != COMPOSITE:
                data.append(datum(f"DriftCusum_{measure}", m.cusum))
        if s.ks is not None:
            data.append(datum("DriftKsStatistic", s.ks.statistic))
        data.append(datum("DriftFlag", 1.0 if s.flag else 0.0))
    return data


def alert_message(report: DriftReport, stratum: StratumDrift) -> tuple[str, str]:
    """(subject, body) of the SNS alert for a flagged stratum: the stratum, the size of the shift
    and the worst items."""
    comp = stratum.measures.get(COMPOSITE)
    shift = f"{comp.shift:+.3f} ({comp.shift / comp.sigma:+.1f} sigma; {comp.reference_mean:.3f} -> {comp.mean:.3f})" if comp else "n/a"
    subject = f"fmquality drift: {stratum.intent} x {stratum.locale} composite {shift.split(' ')[0]}"[:100]
    lines = [
        f"Quality drift in stratum intent={stratum.intent} locale={stratum.locale} (run {report.run_id}).",
        f"Composite shift: {shift}; CUSUM {stratum.cusum:.2f} sigma (threshold {report.settings.cusum_h_sigma:g}).",
        f"Signals: {', '.join(stratum.reasons)}.",
    ]
    if stratum.ks:
        lines.append(f"KS D={stratum.ks.statistic:.3f}, p={stratum.ks.p_value:.2g} (n={stratum.ks.n}, reference {stratum.ks.m}).")
    for name, m in stratum.measures.items():
        if name != COMPOSITE and m.signalled:
            lines.append(f"  {name}: {m.reference_mean:.3f} -> {m.mean:.3f} (CUSUM {m.cusum:.2f} sigma)")
    lines.append(f"Worst {len(stratum.worst_items)} item(s):")
    for w in stratum.worst_items:
        score = "n/a" if w.composite_score is None else f"{w.composite_score:.3f}"
        lines.append(f"  {w.test_id}: {score} {'; '.join(w.reasons)}".rstrip())
    return subject, "\n".join(lines)
