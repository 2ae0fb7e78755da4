"""`fmquality approve-baseline` against moto DynamoDB and S3: only finished, passing runs become
baselines, and an approved baseline's report is frozen under its own key, never rewritten."""

from __future__ import annotations

import boto3
import pytest
from moto import mock_aws

from fmquality.adapters.dynamodb import EvaluationTable, create_evaluation_table
from fmquality.cli.main import main

TABLE_NAME = "fmq-approve-test"
BUCKET = "fmq-approve-data"


@pytest.fixture
def table():
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        create_evaluation_table(client, TABLE_NAME)
        table = EvaluationTable(TABLE_NAME, client)
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket=BUCKET)
        for run in ("good", "blocked"):
            s3.put_object(Bucket=BUCKET, Key=f"runs/{run}/report.json", Body=f'{{"run_id": "{run}"}}'.encode())
        table.register_run("good", "datasets/golden", status="SUCCEEDED", report_key="runs/good/report.json",
                           gate_passed=True)
        table.register_run("blocked", "datasets/golden", status="GATE_FAILED",
                           report_key="runs/blocked/report.json", gate_passed=False)
        table.register_run("running", "datasets/golden")
        yield table


def _approve(*args: str) -> int:
    return main(["approve-baseline", "--table", TABLE_NAME, "--bucket", BUCKET, "--region", "us-east-1", *args])


def test_a_passing_run_becomes_the_datasets_baseline(table, capsys):
    assert table.get_baseline("datasets/golden") is None
    assert _approve("--run-id", "good", "--approved-by", "release-manager") == 0
    baseline = table.get_baseline("datasets/golden")
    assert (baseline["run_id"], baseline["report_key"], baseline["approved_by"]) == (
        "good", "baselines/datasets/golden/good/report.json", "release-manager")
    assert "run good" in capsys.readouterr().out


def test_an_approved_baseline_is_frozen_and_a_rewritten_run_report_changes_nothing(table):
    s3 = boto3.client("s3", region_name="us-east-1")
    assert _approve("--run-id", "good") == 0
    frozen = s3.get_object(Bucket=BUCKET, Key="baselines/datasets/golden/good/report.json")["Body"].read()
    # Something rewrites the run's own report (a redriven execution, a tamperer): the baseline stays.
    s3.put_object(Bucket=BUCKET, Key="runs/good/report.json", Body=b'{"run_id": "good", "tampered": true}')
    assert s3.get_object(Bucket=BUCKET, Key="baselines/datasets/golden/good/report.json")["Body"].read() == frozen
    # Approving it again with the changed report is refused: the frozen copy is never rewritten.
    assert _approve("--run-id", "good") == 2
    assert s3.get_object(Bucket=BUCKET, Key="baselines/datasets/golden/good/report.json")["Body"].read() == frozen


@pytest.mark.parametrize(("run_id", "why"), [("blocked", "failed its own gate"), ("running", "has no report"),
                                             ("nope", "does not exist")])
def test_runs_that_cannot_be_baselines_are_refused(table, capsys, run_id, why):
    assert _approve("--run-id", run_id) == 2
    assert why in capsys.readouterr().err
    assert table.get_baseline("datasets/golden") is None


def test_a_failed_run_is_approved_only_when_asked_explicitly(table):
    assert _approve("--run-id", "blocked", "--allow-failed-gate") == 0
    assert table.get_baseline("datasets/golden")["run_id"] == "blocked"
