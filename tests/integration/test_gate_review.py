"""Issue 20, item 7: a failing gate run queues its failing items for human review (the evaluation table
on AWS, review.jsonl in a local run's folder) and its report links them; every report records the
dataset's content hash and version."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from moto_env import BUCKET, CASES, DATASET_KEY, TABLE, all_scores, load_event, put_dataset, read_json

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _run_on_aws(aws, context, run_id: str, scores: dict[str, float]) -> dict:
    from handlers.aggregate import handler as aggregate
    from handlers.composite import handler as composite
    from handlers.prepare import handler as prepare

    put_dataset(aws.s3, CASES)
    prepared = prepare(load_event("prepare.json", execution_name=run_id), context)
    for case in CASES:
        composite(load_event("composite.json", run_id=run_id, rubric_key=prepared["rubric_key"], item=case,
                             scores=all_scores(scores[case["test_id"]]), arm="candidate"), context)
    return aggregate(load_event("aggregate.json", run_id=run_id, rubric_key=prepared["rubric_key"],
                                items_key=prepared["items_key"], targets_key=prepared["targets_key"],
                                dataset_id=prepared["dataset_id"], baseline_run_id=None,
                                trigger="manual"), context)


def test_a_failed_gate_queues_its_failing_items_and_the_report_links_them(aws, lambda_context):
    from fmquality.adapters.review_queue import DynamoReviewQueue
    from fmquality.domain.report import RunReport

    scores = {case["test_id"]: 1.0 for case in CASES} | {CASES[0]["test_id"]: 0.1}
    out = _run_on_aws(aws, lambda_context, "gate-failed", scores)
    assert out["gate_passed"] is False

    queued = DynamoReviewQueue(TABLE, aws.ddb).items("gate-failed")
    assert [(i.test_id, i.reason, i.status) for i in queued] == [(CASES[0]["test_id"], "failing", "pending")]
    assert queued[0].judge_passed is False and queued[0].query == CASES[0]["query"]
    report = RunReport.model_validate(read_json(aws.s3, out["report_key"]))
    assert report.review_queue == {"queued": 1, "newly_added": 1, "location": "dynamodb:REVIEW#gate-failed",
                                   "test_ids": [CASES[0]["test_id"]]}
    contents = aws.s3.get_object(Bucket=BUCKET, Key=DATASET_KEY)["Body"].read()
    assert report.dataset_sha256 == hashlib.sha256(contents).hexdigest()
    assert report.dataset_version == f"sha256:{report.dataset_sha256[:12]}"


def test_a_passing_gate_queues_nothing(aws, lambda_context):
    from fmquality.adapters.review_queue import DynamoReviewQueue
    from fmquality.domain.report import RunReport

    out = _run_on_aws(aws, lambda_context, "gate-passed", {case["test_id"]: 1.0 for case in CASES})
    assert out["gate_passed"] is True
    assert DynamoReviewQueue(TABLE, aws.ddb).items("gate-passed") == []
    assert RunReport.model_validate(read_json(aws.s3, out["report_key"])).review_queue is None


def test_a_local_failed_run_queues_into_its_folder(tmp_path):
    from fmquality.adapters.review_queue import LocalReviewQueue
    from fmquality.cli.main import main

    out = tmp_path / "out"
    dataset = FIXTURES / "cli_regressed.jsonl"
    assert main(["run", "--engine", "direct", "--dataset", str(dataset), "--out", str(out), "--quiet"]) == 1
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    failing = {row["test_id"] for row in map(json.loads, (out / "results.jsonl").read_text().splitlines())
               if not row["passed"]}
    queued = LocalReviewQueue(out).items()
    assert failing and {i.test_id for i in queued} == failing and {i.reason for i in queued} == {"failing"}
    assert report["review_queue"]["location"] == "review.jsonl" and report["review_queue"]["queued"] == len(failing)
    assert report["dataset_sha256"] == hashlib.sha256(dataset.read_bytes()).hexdigest()
