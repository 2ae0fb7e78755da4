"""Issue 20, item 5 on AWS (moto): a probe run (trigger "probe": the shipped probes file answered by the
production target) is prepared like any run, and its Aggregate publishes the probe failure rate
(failed / judged, percent) that the ProbeFailureRate alarm watches."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

from moto_env import BUCKET, TABLE, load_event, read_json

PROBES = Path(__file__).resolve().parents[2] / "datasets" / "mangaassist" / "probes.jsonl"
PROBES_KEY = "datasets/mangaassist/probes.jsonl"


def _metric(aws, name: str) -> list[float]:
    now = datetime.now(timezone.utc)
    stats = aws.cloudwatch.get_metric_statistics(
        Namespace="MangaAssist/Evaluation", MetricName=name, StartTime=now - timedelta(hours=1),
        EndTime=now + timedelta(hours=1), Period=3600, Statistics=["Maximum", "SampleCount"])
    return [p["Maximum"] for p in stats["Datapoints"]]


def _aggregate_probe_run(aws, lambda_context, monkeypatch, failing: set[str], unjudged: set[str] = frozenset(),
                         trigger: str = "probe") -> dict:
    """Prepare the shipped probes against the production target, record a result per probe (those in
    ``failing`` fail, those in ``unjudged`` are error records), aggregate."""
    from fmquality.adapters.dynamodb import EvaluationTable
    from fmquality.config.rubric import load_rubric
    from fmquality.domain.case import TestCase
    from fmquality.domain.scores import DimensionScore
    from fmquality.schemes.mangaassist import DIMENSIONS
    from fmquality.scoring.composite import combine, error_result
    from handlers.aggregate import handler as aggregate
    from handlers.prepare import handler as prepare

    monkeypatch.setenv("ALLOWED_TARGET_KINDS", "lambda,recorded")
    aws.s3.put_object(Bucket=BUCKET, Key=PROBES_KEY, Body=PROBES.read_bytes())
    out = prepare(load_event("prepare.json", dataset=f"s3://{BUCKET}/{PROBES_KEY}", trigger=trigger,
                             target="lambda:mangaassist-prod", execution_name=f"{trigger}-run"), lambda_context)
    rubric, table = load_rubric(), EvaluationTable(TABLE, aws.ddb)
    for item in read_json(aws.s3, out["items_key"]):
        case = TestCase.model_validate(item["case"])
        if case.test_id in unjudged:
            result = error_result(case, rubric, "target gave no answer", run_id=out["run_id"])
        else:
            score = 0.1 if case.test_id in failing else 0.95
            result = combine(case, rubric, {d: DimensionScore(dimension=d, status="scored", score=score)
                                            for d in DIMENSIONS}, run_id=out["run_id"])
        table.put_result(out["run_id"], result)
    return aggregate({k: out[k] for k in ("run_id", "bucket", "rubric_key", "items_key", "targets_key",
                                          "dataset_id", "baseline_run_id", "trigger")}, lambda_context)


def test_a_probe_runs_failures_become_the_probe_failure_rate(aws, lambda_context, monkeypatch):
    ids = [line.split('"test_id": "')[1].split('"')[0] for line in PROBES.read_text(encoding="utf-8").splitlines()]
    failing, unjudged = set(ids[:3]), {ids[-1]}

    _aggregate_probe_run(aws, lambda_context, monkeypatch, failing, unjudged)

    judged = len(ids) - len(unjudged)
    assert _metric(aws, "ProbeFailureRate") == [100.0 * len(failing) / judged]
    assert _metric(aws, "ProbesJudged") == [float(judged)]
    # A probe that could not be judged is neither a pass nor a failure: it is counted apart.
    assert _metric(aws, "ProbeUnjudged") == [1.0]


def test_an_ordinary_run_publishes_no_probe_rate(aws, lambda_context, monkeypatch):
    _aggregate_probe_run(aws, lambda_context, monkeypatch, failing=set(), trigger="manual")
    assert _metric(aws, "ProbeFailureRate") == []
