"""`python -m bench drift`: the stream drift detector (``fmquality.production.stream_drift``) on
simulated traffic, to tune its settings and state what it detects.

Traffic: 42 strata (7 intents x 2 locales x 3 user tiers) with uneven shares (intent 30 % .. 5 %,
en-US 75 %, tiers 70/25/5 %); ``TRAFFIC_PER_HOUR`` turns per hour, judged at the online sampler's
policy: 1 % of each cell plus a quota of 30 per cell per 5-minute window, which comes to about
50,000 judged turns per hour. Judged counts per window are Poisson; each judged item's composite is a
Beta draw (a per-stratum mean between 0.72 and 0.88, sd about 0.15) kept at 0.01, as the judge's
composites are. A drop of d multiplies the stratum's composites by (1 - d) from the change minute on.

The reference is a simulated day of the same traffic (approved as in production: mean, item sd,
up to 3,000 composites per stratum). The drift check runs every 5 minutes, 3 minutes past each
window's end (``check_offset``), with the shipped ``StreamDriftSettings``.

Scenarios (each repeated with its own seed):
  sudden    a 10 % drop in one stratum (the largest, a median one and the smallest) from a minute
            inside a day: minutes from the change to the first check that flags that stratum
            (target <= 30)
  sustained a 2 % drop, the same way (target <= 360)
  week      no change anywhere for a week: alarms per stratum-week (target <= 1; also the mean)
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone
from itertools import product
from typing import Any

import numpy as np

from fmquality.config.watch import OnlineSettings, StreamDriftSettings
from fmquality.production.drift import MeasureReference, Reference, StratumReference
from fmquality.production.stream_drift import BINS, WindowCell, check_stream, stream_stratum

INTENTS = {"recommendation": 0.30, "product_question": 0.20, "faq": 0.15, "order_tracking": 0.15,
           "return_request": 0.08, "promotion": 0.07, "checkout_help": 0.05}
LOCALES = {"en-US": 0.75, "ja-JP": 0.25}
TIERS = {"standard": 0.70, "prime": 0.25, "business": 0.05}
TRAFFIC_PER_HOUR = 4_700_000
SD = 0.15
DEFAULT_SEED = 20
DEFAULT_REPETITIONS = 10
START = datetime(2026, 11, 2, tzinfo=timezone.utc)
TARGETS_MINUTES = {"sudden": 30, "sustained": 360}
FALSE_ALARMS_PER_STRATUM_WEEK_MAX = 1.0


class Traffic:
    """The simulated judged stream: strata, their judged rate per window, their score distribution."""

    def __init__(self, rng: np.random.Generator, online: OnlineSettings, window_minutes: int) -> None:
        self.strata: list[str] = []
        self.per_window: dict[str, float] = {}
        self.mean: dict[str, float] = {}
        windows_per_hour = 60 / window_minutes
        for (intent, wi), (locale, wl), (tier, wt) in product(INTENTS.items(), LOCALES.items(), TIERS.items()):
            key = stream_stratum(intent, locale, tier)
            turns = TRAFFIC_PER_HOUR * wi * wl * wt / windows_per_hour
            self.strata.append(key)
            self.per_window[key] = min(turns, max(online.rate * turns, online.quota_per_cell))
            self.mean[key] = float(rng.uniform(0.72, 0.88))
        self.rng = rng

    def judged_per_hour(self, window_minutes: int) -> float:
        return sum(self.per_window.values()) * 60 / window_minutes

    def draw(self, stratum: str, n: int, factor: float = 1.0) -> np.ndarray:
        m = self.mean[stratum]
        concentration = m * (1 - m) / SD ** 2 - 1
        values = self.rng.beta(m * concentration, (1 - m) * concentration, size=n) * factor
        return np.rint(values * BINS).astype(int)

    def cell(self, stratum: str, start: datetime, factor: float = 1.0) -> WindowCell:
        bins = self.draw(stratum, int(self.rng.poisson(self.per_window[stratum])), factor)
        counts = np.bincount(bins, minlength=BINS + 1)
        hist = {int(b): int(c) for b, c in enumerate(counts) if c}
        return WindowCell(stratum=stratum, window_start=start, n=int(len(bins)), total=float(bins.sum()) / BINS, hist=hist)

    def reference(self, window_minutes: int, settings: StreamDriftSettings) -> Reference:
        """A simulated reference day, summarised as ``approve_reference`` does."""
        strata = {}
        for key in self.strata:
            n = int(self.per_window[key] * 24 * 60 / window_minutes)
            values = self.draw(key, n) / BINS
            kept = self.rng.choice(values, size=min(n, settings.reference_max_items), replace=False)
            measure = MeasureReference(mean=float(values.mean()), sigma=float(values.std()), runs=1,
                                       item_sigma=float(values.std()), items=n)
            strata[key] = StratumReference(measures={"composite": measure}, composites=sorted(float(v) for v in kept))
        return Reference(strata=strata, source={"simulated": "reference day"})


def simulate(traffic: Traffic, reference: Reference, settings: StreamDriftSettings, minutes: int,
             changed: str | None = None, change_minute: int = 0, drop: float = 0.0,
             check_offset: int = 3) -> list[tuple[int, str]]:
    """Run the stream for ``minutes`` and the drift check every window; (minute of the check, stratum)
    for every alarm. Windows are generated as the check reaches them (only the recent ones are kept)."""
    step = settings.window_minutes
    keep = settings.ks_window_minutes // step + 2
    cells: list[list[WindowCell]] = []
    state = None
    alarms: list[tuple[int, str]] = []
    for w in range(minutes // step):
        start = START + timedelta(minutes=w * step)
        row = []
        for key in traffic.strata:
            # A window the change falls into is affected from its next window on (items are not split).
            factor = 1.0 - drop if key == changed and w * step >= change_minute else 1.0
            row.append(traffic.cell(key, start, factor))
        cells.append(row)
        cells = cells[-keep:]
        now = start + timedelta(minutes=step + check_offset)
        report, state = check_stream([c for r in cells for c in r], reference, state, settings, now)
        alarms.extend(((w + 1) * step + check_offset, a.stratum) for a in report.alarms)
    return alarms


def _sized(traffic: Traffic) -> dict[str, str]:
    ordered = sorted(traffic.strata, key=lambda k: traffic.per_window[k])
    return {"largest": ordered[-1], "median": ordered[len(ordered) // 2], "smallest": ordered[0]}


def detection(seed: int, repetitions: int, drop: float, settings: StreamDriftSettings,
              online: OnlineSettings) -> dict[str, Any]:
    """Minutes to the first alarm of the changed stratum, per stratum size, over ``repetitions`` days."""
    out: dict[str, Any] = {}
    for size in ("largest", "median", "smallest"):
        minutes, others = [], 0
        for rep in range(repetitions):
            rng = np.random.default_rng([seed, rep, int(drop * 1000)])
            traffic = Traffic(rng, online, settings.window_minutes)
            stratum = _sized(traffic)[size]
            reference = traffic.reference(settings.window_minutes, settings)
            change = 8 * 60 + int(rng.integers(0, settings.window_minutes)) + 1  # mid-window, like real life
            horizon = change + 8 * 60
            alarms = simulate(traffic, reference, settings, horizon, stratum, change, drop)
            hits = [m - change for m, s in alarms if s == stratum and m >= change]
            minutes.append(hits[0] if hits else None)
            others += sum(1 for _, s in alarms if s != stratum)
        found = [m for m in minutes if m is not None]
        out[size] = {"stratum": stratum, "judged_per_hour": round(traffic.per_window[stratum] * 60 / settings.window_minutes),
                     "minutes": minutes, "median": float(np.median(found)) if found else None,
                     "max": max(found) if len(found) == len(minutes) else None,
                     "alarms_elsewhere": others}
    return out


def stationary_week(seed: int, repetitions: int, settings: StreamDriftSettings, online: OnlineSettings) -> dict[str, Any]:
    per_stratum_week: list[int] = []
    for rep in range(repetitions):
        rng = np.random.default_rng([seed, rep, 7])
        traffic = Traffic(rng, online, settings.window_minutes)
        alarms = simulate(traffic, traffic.reference(settings.window_minutes, settings), settings, 7 * 24 * 60)
        per_stratum_week.extend(sum(1 for _, s in alarms if s == key) for key in traffic.strata)
    return {"stratum_weeks": len(per_stratum_week), "alarms": sum(per_stratum_week),
            "mean_per_stratum_week": round(sum(per_stratum_week) / len(per_stratum_week), 4),
            "max_per_stratum_week": max(per_stratum_week)}


def run(args: Any = None) -> dict[str, Any]:
    seed = getattr(args, "drift_seed", DEFAULT_SEED)
    repetitions = getattr(args, "drift_repetitions", DEFAULT_REPETITIONS)
    settings, online = StreamDriftSettings(), OnlineSettings()
    started = time.perf_counter()
    traffic = Traffic(np.random.default_rng(seed), online, settings.window_minutes)
    sudden = detection(seed, repetitions, 0.10, settings, online)
    sustained = detection(seed, repetitions, 0.02, settings, online)
    week = stationary_week(seed, max(1, repetitions // 5), settings, online)
    worst = {name: max((r["max"] if r["max"] is not None else float("inf")) for r in result.values())
             for name, result in (("sudden", sudden), ("sustained", sustained))}
    return {
        "seed": seed, "repetitions": repetitions, "settings": settings.model_dump(), "online": online.model_dump(),
        "traffic_per_hour": TRAFFIC_PER_HOUR, "judged_per_hour": round(traffic.judged_per_hour(settings.window_minutes)),
        "strata": len(traffic.strata), "sudden_10pct": sudden, "sustained_2pct": sustained, "stationary_week": week,
        "wall_s": round(time.perf_counter() - started, 1),
        "targets": {"sudden_10pct_within_30_min": worst["sudden"] <= TARGETS_MINUTES["sudden"],
                    "sustained_2pct_within_6_h": worst["sustained"] <= TARGETS_MINUTES["sustained"],
                    "false_alarms_per_stratum_week_max_1": week["max_per_stratum_week"] <= FALSE_ALARMS_PER_STRATUM_WEEK_MAX},
    }


def format_summary(result: dict[str, Any]) -> str:
    lines = [f"drift: {result['strata']} strata, {result['judged_per_hour']:,} judged turns/hour "
             f"({result['traffic_per_hour']:,} turns/hour), seed {result['seed']}, {result['repetitions']} days each"]
    for name in ("sudden_10pct", "sustained_2pct"):
        for size, r in result[name].items():
            lines.append(f"  {name:15s} {size:8s} {r['judged_per_hour']:6,d}/h  minutes to flag: median "
                         f"{r['median']}, max {r['max']}  (alarms elsewhere: {r['alarms_elsewhere']})")
    w = result["stationary_week"]
    lines.append(f"  stationary week: {w['alarms']} alarm(s) over {w['stratum_weeks']} stratum-weeks "
                 f"(mean {w['mean_per_stratum_week']}, max {w['max_per_stratum_week']} per stratum-week)")
    lines.append(f"  targets: {result['targets']}  ({result['wall_s']} s)")
    return "\n".join(lines)


if __name__ == "__main__":
    import json

    outcome = run()
    print(format_summary(outcome))
    print(json.dumps(outcome["targets"]))
