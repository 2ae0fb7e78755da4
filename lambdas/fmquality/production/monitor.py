"""The ``monitor`` block of a sampled production run's report: its status overall and per intent x
locale stratum (a run is a production sample when every case carries ``sample.PRODUCTION_TAG``).

- ``insufficient_data``: fewer than ``min_items_per_stratum`` items (scored or not) in the stratum;
- ``critical``: pass rate below ``critical_pass_rate`` (0.70);
- ``warning``: pass rate below ``warning_pass_rate`` (0.85);
- ``healthy`` otherwise.
An unscored or errored item counts as not passed (the gate's rule: fail closed).
The metric ``MonitorStatus`` carries the code: healthy 0, warning 1, critical 2, insufficient_data 3.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, Field

from fmquality.config.rubric import Rubric
from fmquality.config.watch import MonitorThresholds, WatchConfig
from fmquality.domain.results import EvaluationResult

Status = Literal["healthy", "warning", "critical", "insufficient_data"]
STATUS_CODES: dict[str, int] = {"healthy": 0, "warning": 1, "critical": 2, "insufficient_data": 3}


class StratumStatus(BaseModel):
    intent: str | None = None
    locale: str | None = None
    status: Status
    total: int
    passed: int
    pass_rate: float | None
    mean_composite: float | None = None


class MonitorBlock(BaseModel):
    """The report's ``monitor`` block."""

    status: Status
    overall: StratumStatus
    strata: list[StratumStatus] = Field(default_factory=list)
    thresholds: MonitorThresholds

    def by_key(self) -> dict[tuple[str, str], StratumStatus]:
        return {(s.intent or "", s.locale or ""): s for s in self.strata}


def thresholds_from(source: Rubric | WatchConfig | MonitorThresholds | None) -> MonitorThresholds:
    """The thresholds of a rubric's or a watch config's ``monitor`` section; None: the defaults."""
    if source is None:
        return MonitorThresholds()
    if isinstance(source, MonitorThresholds):
        return source
    if isinstance(source, WatchConfig):
        return source.monitor
    return source.production.monitor


def classify(total: int, passed: int, thresholds: MonitorThresholds) -> Status:
    """The status of a stratum of ``total`` items of which ``passed`` passed."""
    if total < thresholds.min_items_per_stratum:
        return "insufficient_data"
    rate = passed / total
    if rate < thresholds.critical_pass_rate:
        return "critical"
    if rate < thresholds.warning_pass_rate:
        return "warning"
    return "healthy"


def _status(items: list[EvaluationResult], thresholds: MonitorThresholds, intent: str | None = None,
            locale: str | None = None) -> StratumStatus:
    passed = sum(1 for r in items if r.passed)
    scores = [r.composite_score for r in items if r.composite_score is not None]
    return StratumStatus(
        intent=intent, locale=locale, status=classify(len(items), passed, thresholds), total=len(items),
        passed=passed, pass_rate=round(passed / len(items), 4) if items else None,
        mean_composite=round(sum(scores) / len(scores), 4) if scores else None)


def monitor_status(results: Iterable[EvaluationResult],
                   rubric_or_thresholds: Rubric | WatchConfig | MonitorThresholds | None = None) -> MonitorBlock:
    """The ``monitor`` block of a sampled run's report (pure)."""
    thresholds = thresholds_from(rubric_or_thresholds)
    items = list(results)
    groups: dict[tuple[str, str], list[EvaluationResult]] = defaultdict(list)
    for r in items:
        groups[(r.intent, r.locale)].append(r)
    strata = [_status(members, thresholds, intent, locale) for (intent, locale), members in sorted(groups.items())]
    overall = _status(items, thresholds)
    return MonitorBlock(status=overall.status, overall=overall, strata=strata, thresholds=thresholds)
