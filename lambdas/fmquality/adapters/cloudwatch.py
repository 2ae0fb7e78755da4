"""Run metrics in CloudWatch (namespace ``MangaAssist/Evaluation``), published with PutMetricData.

Per intent, with the single dimension ``Intent``: ``CompositeScore`` (mean composite of the intent's
scored items), ``DimensionScore_<dimension>`` (mean of that dimension) and ``QualityGateResult``
(1 when the intent's pass rate meets the rubric's ``gate.min_pass_rate``, else 0).
Per run, with no dimensions: ``BatchPassRate``, ``BatchAvg_<dimension>``, ``UnscoredCases``.
A paired run (a control answered the same cases) adds ``PairedMeanDifference`` (mean of candidate -
control composites) and ``PairedCiLow`` (the low end of its bootstrap interval, what the gate compares
with the allowed drop), per run and per intent with enough pairs for an interval.

A mean over nothing is not published: no data is not a score of 0.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timezone
from statistics import fmean
from typing import Any

from fmquality.schemes.mangaassist import DIMENSIONS
from fmquality.domain.results import EvaluationResult
from fmquality.domain.report import RunReport

NAMESPACE = "MangaAssist/Evaluation"
# PutMetricData accepts up to 1000 datums per call; stay well below it.
_DATUMS_PER_CALL = 500


def _datum(name: str, value: float, unit: str, timestamp: datetime, intent: str | None = None) -> dict[str, Any]:
    datum: dict[str, Any] = {"MetricName": name, "Value": float(value), "Unit": unit, "Timestamp": timestamp}
    if intent is not None:
        datum["Dimensions"] = [{"Name": "Intent", "Value": intent}]
    return datum


def _mean(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return fmean(present) if present else None


def run_metric_data(
    report: RunReport,
    results: list[EvaluationResult],
    min_pass_rate: float,
    timestamp: datetime | None = None,
) -> list[dict[str, Any]]:
    """The PutMetricData datums of one run (pure: no AWS)."""
    when = timestamp or datetime.now(timezone.utc)
    data: list[dict[str, Any]] = []

    by_intent: dict[str, list[EvaluationResult]] = defaultdict(list)
    for result in results:
        by_intent[result.intent].append(result)
    for intent, items in sorted(by_intent.items()):
        composite = _mean([r.composite_score for r in items])
        if composite is not None:
            data.append(_datum("CompositeScore", composite, "None", when, intent))
        for dimension in DIMENSIONS:
            mean = _mean([r.dimension_scores[dimension].score for r in items if dimension in r.dimension_scores])
            if mean is not None:
                data.append(_datum(f"DimensionScore_{dimension}", mean, "None", when, intent))
        pass_rate = sum(1 for r in items if r.passed) / len(items)
        data.append(_datum("QualityGateResult", 1.0 if pass_rate >= min_pass_rate else 0.0, "None", when, intent))

    data.append(_datum("BatchPassRate", report.pass_rate, "None", when))
    for dimension in DIMENSIONS:
        average = report.dimension_averages.get(dimension)
        if average is not None:
            data.append(_datum(f"BatchAvg_{dimension}", average, "None", when))
    # Unscored = no composite score: the judge could not score it, or its evaluation failed.
    data.append(_datum("UnscoredCases", sum(1 for r in results if r.status != "scored"), "Count", when))
    data.extend(paired_metric_data(report, when))
    return data


def paired_metric_data(report: RunReport, timestamp: datetime) -> list[dict[str, Any]]:
    """The paired comparison's datums: overall without dimensions, intents with ``Intent``. Locale and
    tag subsets stay in report.json: every extra dimension value is a metric billed on its own."""
    paired = report.paired
    if paired is None:
        return []
    data: list[dict[str, Any]] = []
    intervals = [(None, paired.overall)] if paired.overall is not None else []
    intervals += [(s.subset.split(":", 1)[1], s) for s in paired.subsets if s.subset.startswith("intent:")]
    for intent, interval in intervals:
        data.append(_datum("PairedMeanDifference", interval.mean_difference, "None", timestamp, intent))
        data.append(_datum("PairedCiLow", interval.ci_low, "None", timestamp, intent))
    return data


class MetricsPublisher:
    """PutMetricData in batches under one namespace."""

    def __init__(self, namespace: str = NAMESPACE, *, boto3_client: Any) -> None:
        self.namespace = namespace
        self._cw = boto3_client

    def put(self, metric_data: list[dict[str, Any]]) -> int:
        for start in range(0, len(metric_data), _DATUMS_PER_CALL):
            self._cw.put_metric_data(Namespace=self.namespace, MetricData=metric_data[start:start + _DATUMS_PER_CALL])
        return len(metric_data)
