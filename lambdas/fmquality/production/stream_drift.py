"""Drift on the online stream: judged production turns, per stratum (intent x locale x user tier when
the tier is known, else intent x locale), against an approved reference.

The judged items are reduced to **window cells** (``WindowCell``: per stratum and aligned window of
``window_minutes``, the count, the sum of composites and a histogram at 0.01), which is what the
online judge adds to in DynamoDB and what the drift check reads; ``check_stream`` is pure over cells.

- **CUSUM** (mean shift, ``stats.cusum``): two one-sided downward sums per stratum, standardised by
  the reference's item standard deviation and updated once per window with all its items,
  ``S = max(0, S + (n * mu - total) / sigma - k * n)`` (k, h in item sigmas). The *fast* sum (large k)
  catches a large drop within minutes, the *slow* sum (small k) a small sustained one within hours.
- **KS** (shape, ``stats.ks``): at the end of every KS window, its composites (binned at 0.01, at most
  ``ks_max_items``) against the reference's; p < ``ks_alpha`` with a lower mean flags.

An alarm restarts the stratum's sums and silences it for ``cooldown_minutes``. A window is read
``lateness_minutes`` after it ends, and once (``StreamState.processed_to``).
The reference is ``production/drift/reference.json`` (``approve_reference``), shared with the weekly
drift of ``drift.py`` (which reads its intent x locale strata).
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

from pydantic import BaseModel, Field

from fmquality.config.watch import DriftSettings, StreamDriftSettings
from fmquality.domain.results import EvaluationResult
from fmquality.production.drift import COMPOSITE, Reference, build_reference, stratum_key
from fmquality.stats.cusum import cusum_down
from fmquality.stats.ks import KsResult, ks_2samp

TIER_TAG = "tier:"
VERSION_TAG = "version:"
CAPTURED_TAG = "captured:"
BINS = 100  # composites are kept at 0.01


def tag_value(tags: Iterable[str], prefix: str) -> str | None:
    return next((t[len(prefix):] for t in tags if t.startswith(prefix)), None)


def stream_stratum(intent: str, locale: str, tier: str | None) -> str:
    """``intent|locale|tier``, or ``intent|locale`` when the tier is not known."""
    return f"{stratum_key(intent, locale)}|{tier}" if tier else stratum_key(intent, locale)


def result_stream_stratum(result: EvaluationResult) -> str:
    return stream_stratum(result.intent, result.locale, tag_value(result.tags, TIER_TAG))


def captured_at(result: EvaluationResult) -> datetime | None:
    raw = tag_value(result.tags, CAPTURED_TAG)
    return _aware(datetime.fromisoformat(raw)) if raw else None


def _aware(when: datetime) -> datetime:
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def window_start(when: datetime, minutes: int) -> datetime:
    """The aligned window (UTC, from midnight) that ``when`` falls in."""
    when = _aware(when).astimezone(timezone.utc)
    day = when.replace(hour=0, minute=0, second=0, microsecond=0)
    elapsed = int((when - day).total_seconds() // 60)
    return day + timedelta(minutes=elapsed - elapsed % minutes)


def composite_bin(score: float) -> int:
    return max(0, min(BINS, round(score * BINS)))


# --------------------------------------------------------------------------------------------------
# Window cells
# --------------------------------------------------------------------------------------------------


class WindowCell(BaseModel):
    """The scored items of one stratum in one window: count, sum of composites, histogram (bin -> count)."""

    stratum: str
    window_start: datetime
    n: int = 0
    total: float = 0.0
    hist: dict[int, int] = Field(default_factory=dict)

    def add(self, score: float) -> None:
        self.n += 1
        self.total += score
        b = composite_bin(score)
        self.hist[b] = self.hist.get(b, 0) + 1


def cells_from_results(results: Iterable[EvaluationResult], window_minutes: int) -> list[WindowCell]:
    """Window cells of judged results (by capture time; unscored items are not a score and are left out)."""
    cells: dict[tuple[str, datetime], WindowCell] = {}
    for r in results:
        when = captured_at(r)
        if when is None or r.composite_score is None:
            continue
        key = (result_stream_stratum(r), window_start(when, window_minutes))
        cells.setdefault(key, WindowCell(stratum=key[0], window_start=key[1])).add(r.composite_score)
    return sorted(cells.values(), key=lambda c: (c.window_start, c.stratum))


# --------------------------------------------------------------------------------------------------
# Reference
# --------------------------------------------------------------------------------------------------


def approve_reference(results: Sequence[EvaluationResult], source: dict[str, Any],
                      settings: StreamDriftSettings | None = None, drift: DriftSettings | None = None) -> Reference:
    """The reference of a chosen window or run: intent x locale strata (the weekly drift's, and the
    stream's when the tier is unknown) and intent x locale x tier strata; composites at 0.01, at most
    ``reference_max_items`` per stratum (a seeded, even subsample). Raises ValueError when nothing is scored."""
    settings = settings or StreamDriftSettings()
    if not any(r.composite_score is not None for r in results):
        raise ValueError("no scored item in the chosen window or run: nothing to approve")
    reference = build_reference([results], drift, sorted({r.run_id for r in results if r.run_id}))
    tiered = [r for r in results if tag_value(r.tags, TIER_TAG)]
    if tiered:
        reference.strata.update(build_reference([tiered], drift, key=result_stream_stratum).strata)
    for key, stratum in reference.strata.items():
        values = [composite_bin(v) / BINS for v in stratum.composites]
        if len(values) > settings.reference_max_items:
            values = random.Random(key).sample(values, settings.reference_max_items)
        stratum.composites = sorted(values)
    versions = sorted({v for r in results if (v := tag_value(r.tags, VERSION_TAG))})
    reference.source = {**source, "items": len(results), "versions": versions}
    return reference


# --------------------------------------------------------------------------------------------------
# Detection
# --------------------------------------------------------------------------------------------------


class StratumStreamState(BaseModel):
    fast: float = 0.0
    slow: float = 0.0
    since: datetime | None = None  # start of the first window in the current sums
    silenced_until: datetime | None = None
    last_mean: float | None = None


class StreamState(BaseModel):
    processed_to: datetime | None = None  # end of the last window read
    strata: dict[str, StratumStreamState] = Field(default_factory=dict)


class StreamAlarm(BaseModel):
    stratum: str
    intent: str
    locale: str
    tier: str | None = None
    window_from: datetime
    window_to: datetime
    items: int
    mean: float
    reference_mean: float
    drop: float  # reference mean - mean (positive: worse)
    drop_relative: float  # drop / reference mean
    reasons: list[str]
    cusum: float  # the larger sum, as a share of its limit (1.0 = the limit)
    ks: KsResult | None = None


class StratumStatus(BaseModel):
    stratum: str
    intent: str
    locale: str
    tier: str | None = None
    cusum: float  # max(fast / fast_h, slow / slow_h)
    ks_statistic: float | None = None
    flag: bool = False


class StreamReport(BaseModel):
    checked_at: datetime
    windows: list[datetime] = Field(default_factory=list)
    strata: list[StratumStatus] = Field(default_factory=list)
    alarms: list[StreamAlarm] = Field(default_factory=list)
    unreferenced: list[str] = Field(default_factory=list)


def _parts(stratum: str) -> tuple[str, str, str | None]:
    intent, locale, *tier = stratum.split("|")
    return intent, locale, tier[0] if tier else None


def _reference_of(reference: Reference, stratum: str):
    """The stratum's reference, falling back from intent x locale x tier to intent x locale."""
    ref = reference.strata.get(stratum)
    if ref is None and stratum.count("|") == 2:
        ref = reference.strata.get(stratum.rsplit("|", 1)[0])
    return ref if ref is not None and COMPOSITE in ref.measures else None


def _ks_values(cells: Sequence[WindowCell], cap: int, seed: str) -> list[float]:
    values = [b / BINS for c in cells for b, count in c.hist.items() for _ in range(count)]
    if len(values) > cap:
        values = random.Random(seed).sample(values, cap)
    return values


def check_stream(cells: Iterable[WindowCell], reference: Reference, state: StreamState | None,
                 settings: StreamDriftSettings, now: datetime) -> tuple[StreamReport, StreamState]:
    """Read every window that closed (``lateness_minutes`` ago) since the state's ``processed_to``:
    update the CUSUMs, run KS at each KS window's end, raise alarms. The given state is not changed.
    Without a state, only the last closed window is read (a new deployment does not replay history)."""
    state = (state or StreamState()).model_copy(deep=True)
    step = timedelta(minutes=settings.window_minutes)
    last_end = window_start(_aware(now) - timedelta(minutes=settings.lateness_minutes), settings.window_minutes)
    start = state.processed_to or last_end - step
    by_window: dict[datetime, list[WindowCell]] = defaultdict(list)
    for cell in cells:
        by_window[_aware(cell.window_start)].append(cell)
    report = StreamReport(checked_at=now)
    alarms: dict[str, StreamAlarm] = {}
    ks_stats: dict[str, float] = {}
    unreferenced: set[str] = set()
    window = start
    while window + step <= last_end:
        report.windows.append(window)
        for cell in by_window.get(window, []):
            ref = _reference_of(reference, cell.stratum)
            if ref is None:
                unreferenced.add(cell.stratum)
                continue
            alarm = _cusum_update(cell, ref.measures[COMPOSITE], state.strata.setdefault(cell.stratum, StratumStreamState()),
                                  settings, window + step)
            if alarm:
                alarms[cell.stratum] = alarm
        if (window + step - window_start(window, settings.ks_window_minutes)) == timedelta(minutes=settings.ks_window_minutes):
            ks_from = window_start(window, settings.ks_window_minutes)
            _ks_check(by_window, ks_from, window + step, reference, state, settings, alarms, ks_stats)
        window += step
    state.processed_to = max(window, start)
    report.alarms = sorted(alarms.values(), key=lambda a: a.stratum)
    report.unreferenced = sorted(unreferenced)
    report.strata = [_status(key, s, settings, ks_stats.get(key), key in alarms) for key, s in sorted(state.strata.items())]
    return report, state


def _cusum_update(cell: WindowCell, mref, st: StratumStreamState, settings: StreamDriftSettings,
                  window_end: datetime) -> StreamAlarm | None:
    if cell.n == 0:
        return None
    sigma = mref.item_sigma or mref.sigma
    excess = (cell.n * mref.mean - cell.total) / sigma  # sum of standardised shortfalls
    if st.since is None or (st.fast == 0.0 and st.slow == 0.0):
        st.since = _aware(cell.window_start)
    st.fast = cusum_down(st.fast, -excess, 0.0, settings.fast_k * cell.n)
    st.slow = cusum_down(st.slow, -excess, 0.0, settings.slow_k * cell.n)
    st.last_mean = cell.total / cell.n
    reasons = [name for name, s, h in (("cusum:fast", st.fast, settings.fast_h), ("cusum:slow", st.slow, settings.slow_h))
               if s > h]
    if not reasons or (st.silenced_until and window_end <= st.silenced_until):
        return None
    # The size of the drop over the sums' span: estimated from the larger sum's evidence per item.
    span_from = st.since or _aware(cell.window_start)
    alarm = _alarm(cell.stratum, span_from, window_end, cell.n, st.last_mean, mref.mean, reasons,
                   max(st.fast / settings.fast_h, st.slow / settings.slow_h))
    _restart(st, window_end, settings)
    return alarm


def _restart(st: StratumStreamState, window_end: datetime, settings: StreamDriftSettings) -> None:
    st.fast = st.slow = 0.0
    st.since = None
    st.silenced_until = window_end + timedelta(minutes=settings.cooldown_minutes)


def _alarm(stratum: str, window_from: datetime, window_to: datetime, items: int, mean: float, reference_mean: float,
           reasons: list[str], cusum: float, ks: KsResult | None = None) -> StreamAlarm:
    intent, locale, tier = _parts(stratum)
    drop = reference_mean - mean
    return StreamAlarm(stratum=stratum, intent=intent, locale=locale, tier=tier, window_from=window_from,
                       window_to=window_to, items=items, mean=round(mean, 4), reference_mean=round(reference_mean, 4),
                       drop=round(drop, 4), drop_relative=round(drop / reference_mean, 4) if reference_mean else 0.0,
                       reasons=reasons, cusum=round(cusum, 3), ks=ks)


def _ks_check(by_window: dict[datetime, list[WindowCell]], ks_from: datetime, ks_to: datetime, reference: Reference,
              state: StreamState, settings: StreamDriftSettings, alarms: dict[str, StreamAlarm],
              ks_stats: dict[str, float]) -> None:
    """KS of each stratum's composites in [ks_from, ks_to) against its reference composites."""
    grouped: dict[str, list[WindowCell]] = defaultdict(list)
    step = timedelta(minutes=settings.window_minutes)
    at = ks_from
    while at < ks_to:
        for cell in by_window.get(at, []):
            grouped[cell.stratum].append(cell)
        at += step
    for stratum, cells in sorted(grouped.items()):
        ref = _reference_of(reference, stratum)
        n = sum(c.n for c in cells)
        if ref is None or n < settings.ks_min_items or not ref.composites:
            continue
        values = _ks_values(cells, settings.ks_max_items, f"{stratum}|{ks_from.isoformat()}")
        result = ks_2samp(values, ref.composites)
        ks_stats[stratum] = result.statistic
        mean = sum(c.total for c in cells) / n
        mref = ref.measures[COMPOSITE]
        st = state.strata.setdefault(stratum, StratumStreamState())
        if result.p_value < settings.ks_alpha and mean < mref.mean and stratum not in alarms \
                and not (st.silenced_until and ks_to <= st.silenced_until):
            alarms[stratum] = _alarm(stratum, ks_from, ks_to, n, mean, mref.mean, ["ks"],
                                     max(st.fast / settings.fast_h, st.slow / settings.slow_h), result)
            _restart(st, ks_to, settings)
        elif stratum in alarms and alarms[stratum].ks is None:
            alarms[stratum].ks = result


def _status(stratum: str, st: StratumStreamState, settings: StreamDriftSettings, ks: float | None,
            flag: bool) -> StratumStatus:
    intent, locale, tier = _parts(stratum)
    return StratumStatus(stratum=stratum, intent=intent, locale=locale, tier=tier,
                         cusum=round(max(st.fast / settings.fast_h, st.slow / settings.slow_h), 4),
                         ks_statistic=ks, flag=flag)

