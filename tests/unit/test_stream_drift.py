"""Drift on the online stream (production.stream_drift, drift_alerts, online sampler): what alarms,
what an alarm says, what the reference holds, how the sampler takes turns."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone

import pytest

from fmquality.config.watch import OnlineSettings, StreamDriftSettings
from fmquality.domain.results import EvaluationResult
from fmquality.domain.scores import DimensionScore
from fmquality.production.capture import TurnRecord
from fmquality.production.drift_alerts import drift_detail, drift_text, stream_metric_data, top_failing_items
from fmquality.production.online import MemoryCellStore, MemoryWindowCounter, OnlineSampler, online_run_id
from fmquality.production.sample import stratified_sample
from fmquality.production.stream_drift import approve_reference, cells_from_results, check_stream

T0 = datetime(2026, 11, 2, 8, 0, tzinfo=timezone.utc)
SETTINGS = StreamDriftSettings()


def result(i: int, at: datetime, score: float, intent: str = "faq", locale: str = "en-US", tier: str | None = "prime",
           version: str = "p1@m") -> EvaluationResult:
    tags = ["production", f"captured:{at.isoformat()}", f"version:{version}"] + ([f"tier:{tier}"] if tier else [])
    dims = {"accuracy": DimensionScore(dimension="accuracy", status="scored", score=min(1.0, score + 0.05)),
            "relevance": DimensionScore(dimension="relevance", status="scored", score=score)}
    return EvaluationResult(run_id=online_run_id(at), test_id=f"t{i:06d}", intent=intent, locale=locale, status="scored",
                            passed=score >= 0.7, composite_score=round(score, 2), threshold=0.7, rubric_version="1",
                            tags=tags, dimension_scores=dims)


def stream(start: datetime, minutes: int, per_minute: int, mean: float, seed: int, **kw) -> list[EvaluationResult]:
    rng = random.Random(seed)
    out = []
    for m in range(minutes):
        for j in range(per_minute):
            at = start + timedelta(minutes=m, seconds=j * 60 // per_minute)
            out.append(result(seed * 10**5 + m * per_minute + j, at, min(1.0, max(0.0, rng.gauss(mean, 0.12))), **kw))
    return out


def run_checks(results, reference, start: datetime, minutes: int):
    cells, state, alarms = cells_from_results(results, SETTINGS.window_minutes), None, []
    for m in range(0, minutes + 1, 5):
        report, state = check_stream(cells, reference, state, SETTINGS, start + timedelta(minutes=m + 3))
        alarms += [(m + 3, a) for a in report.alarms]
    return alarms, report


@pytest.fixture(scope="module")
def reference():
    base = stream(T0 - timedelta(days=1), 240, 10, 0.82, seed=1)
    return approve_reference(base, {"window": "reference day"}, SETTINGS)


def test_reference_keeps_tier_and_intent_locale_strata_and_versions(reference):
    assert {"faq|en-US", "faq|en-US|prime"} <= set(reference.strata)
    stratum = reference.strata["faq|en-US|prime"]
    assert abs(stratum.measures["composite"].mean - 0.82) < 0.01
    assert 0.10 < stratum.measures["composite"].item_sigma < 0.14
    assert len(stratum.composites) == 2400
    assert reference.source["versions"] == ["p1@m"] and reference.source["window"] == "reference day"


def test_reference_composites_are_capped_by_an_even_subsample():
    base = stream(T0, 60, 10, 0.82, seed=1)
    capped = approve_reference(base, {}, StreamDriftSettings(reference_max_items=100)).strata["faq|en-US"]
    assert len(capped.composites) == 100 and capped.composites == sorted(capped.composites)


def test_nothing_scored_is_nothing_to_approve():
    with pytest.raises(ValueError, match="nothing to approve"):
        approve_reference([], {}, SETTINGS)


def test_a_stationary_stream_raises_no_alarm(reference):
    alarms, report = run_checks(stream(T0, 180, 10, 0.82, seed=2), reference, T0, 180)
    assert alarms == []
    assert report.strata and report.strata[0].stratum == "faq|en-US|prime" and report.strata[0].cusum < 1


def test_a_ten_percent_drop_is_flagged_within_minutes_and_named(reference):
    before = stream(T0, 60, 10, 0.82, seed=3)
    after = stream(T0 + timedelta(minutes=60), 60, 10, 0.82 * 0.9, seed=4)
    alarms, _ = run_checks(before + after, reference, T0, 120)
    assert alarms, "no alarm"
    minute, alarm = alarms[0]
    assert 60 < minute <= 90 and alarm.stratum == "faq|en-US|prime" and alarm.tier == "prime"
    assert alarm.window_to <= T0 + timedelta(minutes=minute - SETTINGS.lateness_minutes)
    assert alarm.window_from >= T0  # the span of the sums that crossed the limit
    assert 0.04 < alarm.drop < 0.13 and "cusum:fast" in alarm.reasons
    assert len(alarms) == 1  # the cooldown keeps one drift from alarming every window


def test_alarm_message_names_stratum_window_drop_top_items_and_link(reference):
    results = stream(T0, 60, 10, 0.82, seed=3) + stream(T0 + timedelta(minutes=60), 60, 10, 0.70, seed=4)
    (_, alarm), *_ = run_checks(results, reference, T0, 120)[0]
    top = top_failing_items(results, alarm, 5)
    assert len(top) == 5 and all(not t.passed for t in top)
    assert [t.composite_score for t in top] == sorted(t.composite_score for t in top)
    detail = drift_detail(alarm, top, "s3://b/production/drift/alarms/x.json", "p2@m", "p1@m")
    subject, body = drift_text(detail)
    assert "faq x en-US x prime" in subject
    assert alarm.window_from.isoformat() in body and f"{alarm.drop:.3f}" in body
    assert top[0].test_id in body and "accuracy" in body and "s3://b/production/drift/alarms/x.json" in body


def test_metrics_carry_intent_and_locale_with_the_worst_tier(reference):
    # "standard" has no tier reference of its own: it is held to the intent x locale reference.
    results = stream(T0, 20, 10, 0.82, seed=5) + stream(T0, 20, 10, 0.60, seed=6, tier="standard")
    report, _ = check_stream(cells_from_results(results, 5), reference, None, SETTINGS, T0 + timedelta(minutes=18))
    assert [a.stratum for a in report.alarms] == ["faq|en-US|standard"]
    data = {d["MetricName"]: d for d in stream_metric_data(report)}
    assert data["DriftFlag"]["Value"] == 1.0
    assert data["DriftFlag"]["Dimensions"] == [{"Name": "Intent", "Value": "faq"}, {"Name": "Locale", "Value": "en-US"}]


def test_a_shape_change_the_cusum_cannot_see_is_flagged_by_ks_at_the_hour(reference):
    # Half the answers perfect, half poor: the mean barely moves (CUSUM stays quiet), the shape does.
    mean = reference.strata["faq|en-US|prime"].measures["composite"].mean
    low = round(2 * mean - 1.0 - 0.004, 2)
    bimodal = [result(900000 + i, T0 + timedelta(seconds=i * 6), 1.0 if i % 2 else low) for i in range(600)]
    alarms, _ = run_checks(bimodal, reference, T0, 65)
    assert [(m, a.reasons) for m, a in alarms] == [(63, ["ks"])]
    assert alarms[0][1].ks.p_value < SETTINGS.ks_alpha and alarms[0][1].window_from == T0


def turn(i: int, at: datetime, intent: str = "faq", tier: str | None = "prime") -> TurnRecord:
    return TurnRecord(turn_id=f"turn-{i}", timestamp=at, locale="en-US", intent=intent, query="q?", response="a.",
                      model_id="m", prompt_version="p", latency_ms=5, user_tier=tier)


def test_online_sampler_takes_the_rate_plus_a_quota_per_cell_and_window_once():
    settings = OnlineSettings(rate=0.01, quota_per_cell=30, window_minutes=5)
    sampler = OnlineSampler(settings, MemoryWindowCounter())
    big = [turn(i, T0 + timedelta(seconds=i % 300)) for i in range(5000)]
    small = [turn(10**6 + i, T0 + timedelta(seconds=i), tier="business") for i in range(12)]
    chosen = sampler.select(big + small)
    by_cell = {}
    for t, reason in chosen:
        by_cell.setdefault(t.user_tier, []).append(reason)
    assert len(by_cell["business"]) == 12  # a small cell: everything, under its quota
    assert by_cell["prime"].count("quota") == 30 and 25 <= by_cell["prime"].count("rate") <= 80
    assert sampler.select(big[:100]) == []  # redelivered turns are not taken twice


def test_weekly_sample_is_the_same_policy_with_tier_strata():
    turns = [turn(i, T0, tier="prime") for i in range(50)] + [turn(100 + i, T0, tier=None) for i in range(50)]
    _, summary = stratified_sample(turns, rate=0.01, min_per_stratum=10)
    assert {(s.user_tier, s.sampled) for s in summary.strata} == {("prime", 10), (None, 10)}


def test_memory_cells_match_cells_from_results():
    results = stream(T0, 20, 3, 0.8, seed=9)
    store = MemoryCellStore()
    store.add(results, 5)
    assert [c.model_dump() for c in store.between(T0, T0 + timedelta(minutes=20))] == \
        [c.model_dump() for c in cells_from_results(results, 5)]


def test_drift_approve_command_writes_the_reference_from_a_window_or_a_run(tmp_path, capsys):
    import json as jsonlib

    from fmquality.cli.main import main

    results = stream(T0, 90, 2, 0.8, seed=11)  # 08:00-09:30: runs online-2026110208 and -09
    for run_id in {r.run_id for r in results}:
        folder = tmp_path / "runs" / run_id
        folder.mkdir(parents=True)
        (folder / "results.jsonl").write_text("".join(r.model_dump_json() + "\n" for r in results if r.run_id == run_id))
    common = ["--runs-dir", str(tmp_path / "runs"), "--out-dir", str(tmp_path / "out")]
    assert main(["drift", "approve", "--from", "2026-11-02T08:30:00Z", "--to", "2026-11-02T09:15:00Z",
                 "--approved-by", "qa", *common]) == 0
    written = jsonlib.loads((tmp_path / "out/production/drift/reference.json").read_text())
    assert written["source"]["items"] == 90 and written["source"]["approved_by"] == "qa"  # 45 minutes x 2
    assert written["source"]["window"] == {"from": "2026-11-02T08:30:00+00:00", "to": "2026-11-02T09:15:00+00:00"}
    assert main(["drift", "approve", "--run", "online-2026110208", *common]) == 0
    by_run = jsonlib.loads((tmp_path / "out/production/drift/reference.json").read_text())
    assert by_run["source"]["run_id"] == "online-2026110208" and by_run["source"]["items"] == 120
    assert main(["drift", "approve", "--run", "x", "--from", "2026-11-02T08:00:00Z", *common]) == 2
    assert main(["drift", "approve", "--run", "no-such-run", *common]) == 2
    assert "nothing to approve" in capsys.readouterr().err
