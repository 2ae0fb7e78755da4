"""Monitor status of a sampled run and the watch settings file."""

from datetime import datetime, timezone

from fmquality.domain.results import EvaluationResult
from fmquality.domain.report import RunReport
from fmquality.config.watch import MonitorThresholds, WatchConfig
from fmquality.config.watch_loader import load_watch_config
from fmquality.production.metrics import evaluation_metric_data, monitor_metric_data
from fmquality.production.monitor import monitor_status


def _items(intent, locale, passed, failed):
    return [EvaluationResult(test_id=f"{intent}{locale}{i}", intent=intent, locale=locale, status="scored",
                             passed=i < passed, composite_score=0.9 if i < passed else 0.4, threshold=0.7,
                             rubric_version="v") for i in range(passed + failed)]


def test_statuses_per_stratum_and_overall():
    results = (_items("faq", "en-US", 18, 2) + _items("faq", "ja-JP", 16, 4) + _items("promotion", "en-US", 6, 4)
               + _items("chitchat", "ja-JP", 3, 0))
    block = monitor_status(results, MonitorThresholds(warning_pass_rate=0.85, critical_pass_rate=0.7))
    by = {(s.intent, s.locale): s.status for s in block.strata}
    assert by == {("faq", "en-US"): "healthy", ("faq", "ja-JP"): "warning", ("promotion", "en-US"): "critical",
                  ("chitchat", "ja-JP"): "insufficient_data"}
    # 43 of 53 pass overall (0.81): below the warning rate 0.85, above the critical 0.70.
    assert block.overall.pass_rate == round(43 / 53, 4) and block.status == "warning"
    codes = {tuple(d.get("Dimensions", [])[0].values())[1] if d.get("Dimensions") else "all": d["Value"]
             for d in monitor_metric_data(block)}
    assert codes["promotion"] == 2 and codes["chitchat"] == 3


def test_shipped_file_matches_defaults():
    assert load_watch_config() == WatchConfig()


def test_latency_and_totals():
    results = _items("faq", "en-US", 2, 1) + _items("faq", "ja-JP", 1, 0)
    report = RunReport.model_construct(started_at="2026-11-16T00:00:00+00:00", finished_at="2026-11-16T00:01:00+00:00")
    done = {r.test_id: f"2026-11-16T00:00:{10 + i:02d}+00:00" for i, r in enumerate(results)}
    data = evaluation_metric_data(report, results, done, timestamp=datetime(2026, 11, 16, tzinfo=timezone.utc))
    overall = next(d for d in data if d["MetricName"] == "EvaluationLatency" and "Dimensions" not in d)
    assert overall["Values"] == [10.0, 11.0, 12.0, 13.0]
    totals = {(d.get("Dimensions") or [{"Value": "all"}])[0]["Value"]: d["Value"] for d in data
              if d["MetricName"] == "BatchTotalCases"}
    assert totals == {"all": 4, "en-US": 3, "ja-JP": 1}
