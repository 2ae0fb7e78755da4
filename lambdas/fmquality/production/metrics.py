"""CloudWatch metric data of a run for the watch (namespace MangaAssist/Evaluation), pure functions
that build PutMetricData datums; publishing goes through ``adapters.cloudwatch.MetricsPublisher``.

- ``EvaluationLatency`` (Seconds): per item, from the run's start to the item's finish
  (``finished_at - report.started_at``); one statistic-set datum per Locale (Values/Counts, up to
  150 distinct values each) and one without dimensions for the run. Item finish times come from the
  result records (read with them by ``EvaluationTable.results_for_run``: when Composite wrote each);
  without them each item is given the run's own end (``report.finished_at``), an upper bound.
- ``BatchTotalCases`` (Count): the run's items, overall and per Locale.
- ``BatchPassRate`` and ``CompositeScore`` per Locale.
- ``MonitorStatus``: 0 healthy, 1 warning, 2 critical, 3 insufficient_data; overall and per Intent x Locale.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from statistics import fmean
from typing import Any

from fmquality.domain.results import EvaluationResult
from fmquality.domain.report import RunReport
from fmquality.production.monitor import STATUS_CODES, MonitorBlock

_MAX_VALUES = 150  # PutMetricData: at most 150 distinct values in one datum


def _parse(ts: str | None) -> datetime | None:
    if not ts:
        return None
    value = datetime.fromisoformat(ts.replace("Z", "+00:00"))
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)


def _datum(name: str, value: float, unit: str, when: datetime, dims: list[dict[str, str]] | None = None) -> dict[str, Any]:
    d: dict[str, Any] = {"MetricName": name, "Value": float(value), "Unit": unit, "Timestamp": when}
    if dims:
        d["Dimensions"] = dims
    return d


def _statistic_values(name: str, values: list[float], unit: str, when: datetime,
                      dims: list[dict[str, str]] | None) -> list[dict[str, Any]]:
    counts = Counter(round(v, 3) for v in values)
    pairs = sorted(counts.items())
    out = []
    for start in range(0, len(pairs), _MAX_VALUES):
        chunk = pairs[start:start + _MAX_VALUES]
        d: dict[str, Any] = {"MetricName": name, "Values": [v for v, _ in chunk],
                             "Counts": [float(c) for _, c in chunk], "Unit": unit, "Timestamp": when}
        if dims:
            d["Dimensions"] = dims
        out.append(d)
    return out


def item_latencies(report: RunReport, results: Sequence[EvaluationResult],
                   finished_at: Mapping[str, str] | None = None) -> dict[str, float]:
    """Seconds from the run's start to each item's finish (test_id -> seconds); empty when the
    report has no start time."""
    start = _parse(report.started_at)
    if start is None:
        return {}
    run_end = _parse(report.finished_at)
    out: dict[str, float] = {}
    for r in results:
        end = _parse((finished_at or {}).get(r.test_id)) or run_end
        if end is not None:
            out[r.test_id] = max(0.0, (end - start).total_seconds())
    return out


def evaluation_metric_data(report: RunReport, results: Sequence[EvaluationResult],
                           finished_at: Mapping[str, str] | None = None,
                           timestamp: datetime | None = None) -> list[dict[str, Any]]:
    """EvaluationLatency, BatchTotalCases and the per-Locale pass rate and composite of one run."""
    when = timestamp or datetime.now(timezone.utc)
    data: list[dict[str, Any]] = []
    latencies = item_latencies(report, results, finished_at)
    by_locale: dict[str, list[EvaluationResult]] = defaultdict(list)
    for r in results:
        by_locale[r.locale].append(r)
    if latencies:
        data.extend(_statistic_values("EvaluationLatency", list(latencies.values()), "Seconds", when, None))
    data.append(_datum("BatchTotalCases", len(results), "Count", when))
    for locale, items in sorted(by_locale.items()):
        dims = [{"Name": "Locale", "Value": locale}]
        values = [latencies[r.test_id] for r in items if r.test_id in latencies]
        if values:
            data.extend(_statistic_values("EvaluationLatency", values, "Seconds", when, dims))
        data.append(_datum("BatchTotalCases", len(items), "Count", when, dims))
        data.append(_datum("BatchPassRate", sum(1 for r in items if r.passed) / len(items), "None", when, dims))
        scores = [r.composite_score for r in items if r.composite_score is not None]
        if scores:
            data.append(_datum("CompositeScore", fmean(scores), "None", when, dims))
    return data


def monitor_metric_data(block: MonitorBlock, timestamp: datetime | None = None) -> list[dict[str, Any]]:
    when = timestamp or datetime.now(timezone.utc)
    data = [_datum("MonitorStatus", STATUS_CODES[block.status], "None", when)]
    for s in block.strata:
        data.append(_datum("MonitorStatus", STATUS_CODES[s.status], "None", when,
                           [{"Name": "Intent", "Value": s.intent or ""}, {"Name": "Locale", "Value": s.locale or ""}]))
    return data
