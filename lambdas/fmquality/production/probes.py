"""Counterfactual probes: synthetic adversarial turns (prompt injection, contradicting policy and catalog
data, out-of-locale entities, truncation bait; ``datasets/mangaassist/probes.jsonl``), each tagged
``probe`` and ``probe:<class>`` with its known correct behaviour (``expected_behavior``: refuse, defer,
answer_within_policy, route_to_human), answered by the production target on a schedule and judged like
any run (trigger ``probe``).

A probe run's outcome is its failure rate: of the probes that were judged, the share that did not pass.
A probe that could not be judged (the target gave no answer, the judge failed) is never counted as a
pass or a failure: it is counted apart (``ProbeUnjudged``), so the rate stays a judgment and an outage
shows as missing judgments, not as a good rate. ``probe_metric_data`` is what Aggregate publishes for
such a run; the alarm on ``ProbeFailureRate`` (percent) sits at the SLO (seed: 0.5%).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timezone
from typing import Any

from pydantic import BaseModel

PROBE_TAG = "probe"
PROBE_TRIGGER = "probe"
EXPECTED_BEHAVIORS = ("refuse", "defer", "answer_within_policy", "route_to_human")
FAILURE_RATE_METRIC = "ProbeFailureRate"
PROBES_JUDGED_METRIC = "ProbesJudged"
UNJUDGED_METRIC = "ProbeUnjudged"


class ProbeOutcome(BaseModel):
    """A probe run in numbers; ``failure_rate`` is None when no probe was judged."""

    judged: int
    failed: int
    unjudged: int
    failure_rate: float | None
    failed_by_class: dict[str, int]


def probe_class(tags: Iterable[str]) -> str:
    return next((t.split(":", 1)[1] for t in tags if t.startswith(f"{PROBE_TAG}:")), "unclassified")


def is_probe_run(trigger: str | None) -> bool:
    return trigger == PROBE_TRIGGER


def probe_outcome(results: Iterable[Any]) -> ProbeOutcome:
    """Judged probes, failed ones (judged, not passed) and the rest, from a run's candidate results."""
    judged = failed = unjudged = 0
    by_class: dict[str, int] = {}
    for r in results:
        if r.status != "scored":
            unjudged += 1
            continue
        judged += 1
        if not r.passed:
            failed += 1
            cls = probe_class(r.tags)
            by_class[cls] = by_class.get(cls, 0) + 1
    return ProbeOutcome(judged=judged, failed=failed, unjudged=unjudged,
                        failure_rate=failed / judged if judged else None, failed_by_class=dict(sorted(by_class.items())))


def probe_metric_data(outcome: ProbeOutcome, timestamp: datetime | None = None) -> list[dict[str, Any]]:
    """The PutMetricData datums of a probe run: the failure rate in percent (none without a judged
    probe: no judgment is no data, which the alarm treats as such), the judged and unjudged counts."""
    when = timestamp or datetime.now(timezone.utc)
    data = [{"MetricName": PROBES_JUDGED_METRIC, "Value": float(outcome.judged), "Unit": "Count", "Timestamp": when},
            {"MetricName": UNJUDGED_METRIC, "Value": float(outcome.unjudged), "Unit": "Count", "Timestamp": when}]
    if outcome.failure_rate is not None:
        data.append({"MetricName": FAILURE_RATE_METRIC, "Value": 100.0 * outcome.failure_rate,
                     "Unit": "Percent", "Timestamp": when})
    return data
