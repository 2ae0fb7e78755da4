"""Drift detection: the CUSUM (downward, state carried across runs) and the KS rule per stratum, metrics
and alerts (the statistics themselves: test_stats.py)."""

import random

import pytest

from fmquality.domain.results import EvaluationResult
from fmquality.config.watch import DriftSettings
from fmquality.production.drift import DriftState, alert_message, build_reference, detect_drift, drift_metric_data


def _run(mean, n=30, seed=0, intent="faq", locale="en-US", run="r", sd=0.05):
    rng = random.Random(seed)
    scores = [max(0.0, min(1.0, rng.gauss(mean, sd))) for _ in range(n)]
    return [EvaluationResult(run_id=run, test_id=f"{run}-{intent}-{locale}-{i}", intent=intent, locale=locale,
                             status="scored", passed=score >= 0.7, threshold=0.7, rubric_version="v",
                             composite_score=score) for i, score in enumerate(scores)]


REFERENCE = build_reference([_run(0.9, seed=s, run=f"ref{s}") for s in range(6)], run_ids=[f"ref{s}" for s in range(6)])


def test_stable_runs_never_signal_and_a_drop_signals_after_accumulating():
    state = DriftState()
    for day in range(5):
        report, state = detect_drift(_run(0.9, seed=100 + day, run=f"d{day}"), REFERENCE, state, run_id=f"d{day}")
        assert not report.flagged
    sigma = REFERENCE.strata["faq|en-US"].measures["composite"].sigma
    report, state = detect_drift(_run(REFERENCE.strata["faq|en-US"].measures["composite"].mean - 3 * sigma, run="drop1", sd=0), REFERENCE, state, run_id="drop1")
    first = report.strata[0]
    assert first.cusum == pytest.approx(2.5, abs=0.01) and "cusum:composite" not in first.reasons
    report, state = detect_drift(_run(REFERENCE.strata["faq|en-US"].measures["composite"].mean - 3 * sigma, run="drop2", sd=0), REFERENCE, state, run_id="drop2")
    assert "cusum:composite" in report.strata[0].reasons and report.strata[0].flag


def test_state_is_not_counted_twice_for_the_same_run():
    bad = _run(0.6, run="x")
    _, s1 = detect_drift(bad, REFERENCE, None, run_id="x")
    _, s2 = detect_drift(bad, REFERENCE, s1, run_id="x")
    assert s1.strata["faq|en-US"]["composite"].cusum == s2.strata["faq|en-US"]["composite"].cusum


def test_small_strata_are_not_tested_and_metrics_alert():
    report, _ = detect_drift(_run(0.5, n=5) + _run(0.5, n=30, seed=2), REFERENCE, run_id="x",
                             settings=DriftSettings(min_items=10))
    assert report.strata[0].items == 35 and report.strata[0].flag
    small, _ = detect_drift(_run(0.5, n=5), REFERENCE, run_id="y")
    assert not small.strata[0].tested
    names = {d["MetricName"] for d in drift_metric_data(report)}
    assert {"DriftCusum", "DriftKsStatistic", "DriftFlag"} <= names
    flag = next(d for d in drift_metric_data(report) if d["MetricName"] == "DriftFlag")
    assert flag["Dimensions"] == [{"Name": "Intent", "Value": "faq"}, {"Name": "Locale", "Value": "en-US"}]
    subject, body = alert_message(report, report.strata[0])
    assert "faq" in subject and "en-US" in body and body.count("\n  ") >= 5  # five worst items
