"""What a stream drift alarm says and publishes: the ``QualityDriftDetected`` event's detail (stratum,
window, size of the drop, the top failing items with their dimension scores, the report link, the
current and the previous version), its text for people (SNS), and the DriftCusum / DriftKsStatistic /
DriftFlag metrics of a stream check (Intent and Locale dimensions; tiers of one intent x locale are
published as one metric per statistic, the maximum is what the alarm reads)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime, timezone
from typing import Any

from pydantic import BaseModel, Field

from fmquality.domain.results import EvaluationResult
from fmquality.production.stream_drift import (VERSION_TAG, StreamAlarm, StreamReport, captured_at,
                                               result_stream_stratum, tag_value)

DRIFT_DETECTED = "QualityDriftDetected"
ROLLBACK_RECOMMENDED = "QualityRollbackRecommended"


class TopItem(BaseModel):
    test_id: str
    run_id: str | None = None
    composite_score: float | None
    passed: bool
    dimensions: dict[str, float | None] = Field(default_factory=dict)
    reasons: list[str] = Field(default_factory=list)


def top_failing_items(results: Iterable[EvaluationResult], alarm: StreamAlarm, count: int = 5) -> list[TopItem]:
    """The stratum's worst items of the alarm's window: failed first, then by composite (unscored lowest)."""
    chosen = []
    for r in results:
        when = captured_at(r)
        if result_stream_stratum(r) != alarm.stratum or when is None:
            continue
        if alarm.window_from <= when < alarm.window_to:
            chosen.append(r)
    chosen.sort(key=lambda r: (r.passed, r.composite_score if r.composite_score is not None else -1.0, r.test_id))
    return [TopItem(test_id=r.test_id, run_id=r.run_id, composite_score=r.composite_score, passed=r.passed,
                    dimensions={d: s.score for d, s in sorted(r.dimension_scores.items())},
                    reasons=r.failure_reasons[:3]) for r in chosen[:count]]


def current_version(results: Iterable[EvaluationResult]) -> str | None:
    """The answering version most items of the window carry (``version:<prompt>@<model>``)."""
    counts: dict[str, int] = defaultdict(int)
    for r in results:
        if version := tag_value(r.tags, VERSION_TAG):
            counts[version] += 1
    return max(sorted(counts), key=lambda v: counts[v]) if counts else None


def drift_detail(alarm: StreamAlarm, top: list[TopItem], report_link: str, current: str | None,
                 previous: str | None) -> dict[str, Any]:
    """The ``QualityDriftDetected`` detail (JSON-ready)."""
    return {
        "stratum": {"key": alarm.stratum, "intent": alarm.intent, "locale": alarm.locale, "tier": alarm.tier},
        "window": {"from": alarm.window_from.isoformat(), "to": alarm.window_to.isoformat()},
        "drop": {"absolute": alarm.drop, "relative": alarm.drop_relative, "mean": alarm.mean,
                 "reference_mean": alarm.reference_mean, "items": alarm.items},
        "reasons": alarm.reasons,
        "cusum": alarm.cusum,
        "ks": alarm.ks.model_dump() if alarm.ks else None,
        "top_items": [t.model_dump() for t in top],
        "report_link": report_link,
        "current_version": current,
        "previous_version": previous,
    }


def drift_text(detail: dict[str, Any]) -> tuple[str, str]:
    """(subject, body) for people: the stratum, the window, the drop, the top items and the link."""
    s, w, d = detail["stratum"], detail["window"], detail["drop"]
    where = " x ".join(v for v in (s["intent"], s["locale"], s["tier"]) if v)
    subject = f"fmquality drift: {where} composite -{d['relative']:.1%}"[:100]
    lines = [f"Quality drift in stratum {where} over {w['from']} .. {w['to']} ({', '.join(detail['reasons'])}).",
             f"Composite {d['reference_mean']:.3f} -> {d['mean']:.3f}: drop {d['absolute']:.3f} "
             f"({d['relative']:.1%}) over {d['items']} item(s) of the last window.",
             f"Answering version {detail['current_version'] or 'unknown'}; reference {detail['previous_version'] or 'unknown'}."]
    if detail.get("ks"):
        lines.append(f"KS D={detail['ks']['statistic']:.3f}, p={detail['ks']['p_value']:.2g}.")
    lines.append(f"Top {len(detail['top_items'])} failing item(s):")
    for t in detail["top_items"]:
        score = "n/a" if t["composite_score"] is None else f"{t['composite_score']:.3f}"
        dims = ", ".join(f"{k} {'n/a' if v is None else f'{v:.2f}'}" for k, v in t["dimensions"].items())
        lines.append(f"  {t['test_id']}: {score} [{dims}] {'; '.join(t['reasons'])}".rstrip())
    lines.append(f"Report: {detail['report_link']}")
    return subject, "\n".join(lines)


def stream_metric_data(report: StreamReport, timestamp: datetime | None = None) -> list[dict[str, Any]]:
    """DriftCusum (share of the limit), DriftKsStatistic and DriftFlag per intent x locale (max over tiers)."""
    when = timestamp or datetime.now(timezone.utc)
    merged: dict[tuple[str, str], dict[str, float]] = defaultdict(dict)
    for s in report.strata:
        m = merged[(s.intent, s.locale)]
        m["DriftCusum"] = max(m.get("DriftCusum", 0.0), s.cusum)
        m["DriftFlag"] = max(m.get("DriftFlag", 0.0), 1.0 if s.flag else 0.0)
        if s.ks_statistic is not None:
            m["DriftKsStatistic"] = max(m.get("DriftKsStatistic", 0.0), s.ks_statistic)
    return [{"MetricName": name, "Dimensions": [{"Name": "Intent", "Value": intent}, {"Name": "Locale", "Value": locale}],
             "Value": float(value), "Unit": "None", "Timestamp": when}
            for (intent, locale), values in sorted(merged.items()) for name, value in sorted(values.items())]
