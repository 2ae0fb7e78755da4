"""`fmquality start` against moto Step Functions (executions really run: execute_state_machine)."""

from __future__ import annotations

import argparse
import json

import boto3
import pytest
from moto import mock_aws

from fmquality.cli.aws import add_start_command, run_start_command, start_run

ROLE = "arn:aws:iam::123456789012:role/fmquality-sfn"
DATASET = "s3://fmq-data-test/datasets/mangaassist/golden.jsonl"


def _definition(terminal: dict) -> str:
    return json.dumps({"StartAt": "Gate", "States": {"Gate": terminal}})


# Shaped like the evaluation state machine's final output: the input plus Prepare's and Aggregate's.
PASSED = {"Type": "Pass", "End": True, "Result": {
    "dataset": "s3://fmq-data-test/datasets/mangaassist/golden.jsonl",
    "prepare": {"run_id": "r1", "item_count": 3},
    "aggregate": {"gate_passed": True, "summary": "passed", "report_key": "runs/r1/report.json", "pass_rate": 1.0},
}}
GATE_FAILED = {"Type": "Fail", "Error": "QualityGateFailed",
               "Cause": "2 gate rule(s) broken: intent faq pass rate 0.50 below 0.90 (1/2)"}
CRASHED = {"Type": "Fail", "Error": "DatasetRejected", "Cause": "golden.jsonl:3: intent: Input should be ..."}


@pytest.fixture
def sfn():
    with mock_aws(config={"stepfunctions": {"execute_state_machine": True}}):
        yield boto3.client("stepfunctions", region_name="us-east-1")


def _machine(sfn, name: str, terminal: dict) -> str:
    return sfn.create_state_machine(name=name, definition=_definition(terminal), roleArn=ROLE)["stateMachineArn"]


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="fmquality")
    add_start_command(parser.add_subparsers(dest="command"))
    return parser.parse_args(["start", *argv])


def test_start_without_wait_prints_the_execution_arn(sfn, capsys):
    arn = _machine(sfn, "gate-pass", PASSED)
    code = run_start_command(_args("--state-machine", arn, "--dataset", DATASET, "--baseline", "auto",
                                   "--trigger", "ci", "--skip-invalid"), sfn)
    printed = capsys.readouterr().out.strip()
    assert code == 0 and printed.startswith("arn:aws:states:us-east-1:")
    assert ":execution:gate-pass:ci-" in printed  # a readable name: Prepare derives the run id from it
    started = sfn.describe_execution(executionArn=printed)
    assert json.loads(started["input"]) == {"trigger": "ci", "dataset": DATASET, "baseline": "auto",
                                            "skip_invalid": True}


@pytest.mark.parametrize(
    ("terminal", "expected_code", "expected_lines"),
    [
        (PASSED, 0, ["status:    SUCCEEDED", "run_id:    r1", "summary:   passed", "report_key: runs/r1/report.json"]),
        (GATE_FAILED, 1, ["status:    FAILED", "error:     QualityGateFailed", "cause:     2 gate rule(s) broken"]),
        (CRASHED, 3, ["status:    FAILED", "error:     DatasetRejected"]),
    ],
)
def test_start_with_wait_prints_the_outcome(sfn, capsys, terminal, expected_code, expected_lines):
    arn = _machine(sfn, f"gate-{expected_code}", terminal)
    code = run_start_command(_args("--state-machine", arn, "--dataset", DATASET, "--wait", "--poll-seconds", "0.05"), sfn)
    printed = capsys.readouterr().out
    assert code == expected_code
    for line in expected_lines:
        assert line in printed


def test_start_run_returns_the_outcome(sfn):
    arn = _machine(sfn, "gate-fn", GATE_FAILED)
    outcome = start_run(sfn, arn, {"dataset": DATASET}, wait=True, poll_s=0.05)
    assert outcome["status"] == "FAILED" and outcome["error"] == "QualityGateFailed"
    assert outcome["arn"].startswith("arn:aws:states:") and outcome["cause"].startswith("2 gate rule(s)")


def test_the_cli_wires_start_and_builds_its_own_client(sfn, capsys):
    from fmquality.cli.main import main

    arn = _machine(sfn, "gate-cli", PASSED)
    assert main(["start", "--state-machine", arn, "--dataset", DATASET, "--wait", "--poll-seconds", "0.05"]) == 0
    assert "SUCCEEDED" in capsys.readouterr().out


def test_start_against_a_missing_state_machine_fails_cleanly(sfn, capsys):
    missing = "arn:aws:states:us-east-1:123456789012:stateMachine:nope"
    assert run_start_command(_args("--state-machine", missing, "--dataset", DATASET), sfn) == 3
    assert "fmquality start:" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [
    ["--state-machine", "not-an-arn", "--dataset", DATASET],
    ["--state-machine", "arn:aws:states:us-east-1:123456789012:stateMachine:x", "--dataset", "golden.jsonl"],
    ["--state-machine", "arn:aws:states:us-east-1:123456789012:stateMachine:x", "--dataset", DATASET,
     "--catalog", "dynamodb:yesterday"],
])
def test_start_refuses_bad_arguments(argv):
    with pytest.raises(SystemExit) as caught:
        _args(*argv)
    assert caught.value.code == 2


@pytest.mark.parametrize("catalog", ["dynamodb:latest", "dynamodb:2026-11-20.2", "s3://fmq-data-test/datasets/catalog.json"])
def test_start_passes_a_catalog_file_or_table_snapshot(catalog):
    assert _args("--state-machine", "arn:aws:states:us-east-1:123456789012:stateMachine:x", "--dataset", DATASET,
                 "--catalog", catalog).catalog == catalog
