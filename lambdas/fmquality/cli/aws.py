"""The commands that talk to the deployed gate: `fmquality start` (start the evaluation state machine
and optionally wait for it), `fmquality approve-baseline` (``run.baseline.approve_baseline``) and
`fmquality catalog load`.

Exit codes of `start`: 0 the execution succeeded (or was started, without --wait), 1 the quality gate
failed (error ``QualityGateFailed``), 3 the execution failed otherwise (timed out, aborted, other error).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import uuid
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any

from fmquality.cli.common import EXIT_BAD_INPUT, EXIT_GATE_FAILED, EXIT_PASSED, EXIT_RUN_FAILED

GATE_FAILED_ERROR = "QualityGateFailed"
_FINAL_STATES = {"SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED"}


def _parse_output(raw: str | None) -> Any:
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def execution_name(trigger: str, now: datetime | None = None) -> str:
    """A readable, unique execution name; Prepare derives the run id from it."""
    now = now or datetime.now(timezone.utc)
    prefix = re.sub(r"[^A-Za-z0-9_-]+", "-", trigger).strip("-")[:30] or "run"
    return f"{prefix}-{now:%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:6]}"


def start_run(
    sfn_client: Any,
    state_machine_arn: str,
    execution_input: dict[str, Any],
    wait: bool,
    poll_s: float = 5.0,
    timeout_s: float | None = None,
    name: str | None = None,
) -> dict[str, Any]:
    """Start one execution; with ``wait``, poll until it ends (or ``timeout_s`` passes, which
    leaves status "RUNNING"). Returns {arn, status, error, cause, output}."""
    arn = sfn_client.start_execution(
        stateMachineArn=state_machine_arn,
        name=name or execution_name(str(execution_input.get("trigger") or "run")),
        input=json.dumps(execution_input),
    )["executionArn"]
    outcome: dict[str, Any] = {"arn": arn, "status": "RUNNING", "error": None, "cause": None, "output": None}
    if not wait:
        return outcome
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while True:
        described = sfn_client.describe_execution(executionArn=arn)
        status = described["status"]
        if status in _FINAL_STATES:
            return {
                "arn": arn,
                "status": status,
                "error": described.get("error"),
                "cause": described.get("cause"),
                "output": _parse_output(described.get("output")),
            }
        if deadline is not None and time.monotonic() >= deadline:
            return outcome
        time.sleep(poll_s)


def exit_code(outcome: dict[str, Any]) -> int:
    if outcome["status"] in ("SUCCEEDED", "RUNNING"):
        return EXIT_PASSED
    if outcome["status"] == "FAILED" and outcome.get("error") == GATE_FAILED_ERROR:
        return EXIT_GATE_FAILED
    return EXIT_RUN_FAILED


def _s3_uri(value: str) -> str:
    if not value.startswith("s3://") or len(value) <= len("s3://") or "/" not in value[len("s3://"):]:
        raise argparse.ArgumentTypeError(f"expected an s3://bucket/key URI, got {value!r}")
    return value


def _catalog_uri(value: str) -> str:
    from fmquality.adapters.dynamodb import CATALOG_REF_PREFIX, catalog_ref_version

    if value.startswith(CATALOG_REF_PREFIX):
        try:
            catalog_ref_version(value)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
        return value
    return _s3_uri(value)


def _target_spec(value: str) -> str:
    """A target spec string, checked here so a typo fails before an execution starts; Prepare checks
    it again (and resolves ssm:) since the execution input may come from elsewhere too."""
    from fmquality.targets.base import TargetSpec

    try:
        TargetSpec.parse(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(" ".join(str(exc).split())) from None
    return value


def _state_machine_arn(value: str) -> str:
    parts = value.split(":")
    if len(parts) < 7 or parts[0] != "arn" or parts[2] != "states" or parts[5] != "stateMachine":
        raise argparse.ArgumentTypeError(f"expected a state machine ARN (arn:aws:states:REGION:ACCOUNT:stateMachine:NAME), got {value!r}")
    return value


def register(sub: Any) -> None:
    add_start_command(sub)
    add_approve_command(sub)
    add_catalog_command(sub)


def add_start_command(subparsers: Any) -> argparse.ArgumentParser:
    start = subparsers.add_parser(
        "start", help="start the deployed evaluation state machine (Step Functions) and print its outcome"
    )
    start.add_argument("--state-machine", required=True, type=_state_machine_arn, help="state machine ARN")
    start.add_argument("--dataset", required=True, type=_s3_uri, help="s3:// URI of the JSON Lines dataset")
    start.add_argument("--catalog", type=_catalog_uri,
                       help="s3:// URI of a catalog snapshot JSON, or dynamodb:latest | dynamodb:<version> "
                            "(a snapshot loaded with `fmquality catalog load`)")
    start.add_argument("--rubric", type=_s3_uri, help="s3:// URI of a rubric YAML (default: the embedded one)")
    start.add_argument("--baseline", help='"auto" (the dataset\'s approved baseline) or a run id')
    start.add_argument("--target", type=_target_spec,
                       help="what answers the cases: recorded (default), bedrock:<bundle>, lambda:<function>, "
                            "http(s)://<endpoint>, python:<module>:<function> or ssm:<parameter>")
    start.add_argument("--control", type=_target_spec,
                       help="a second target answering the same cases; the gate compares the two pairwise")
    start.add_argument("--trigger", default="manual", help="recorded with the run (default: manual)")
    start.add_argument("--run-id", help="run id (default: derived from the execution name)")
    start.add_argument("--skip-invalid", action="store_true", help="evaluate the valid lines, reject the others")
    start.add_argument("--judge-mode", choices=["per_dimension", "combined"],
                       help="one judge call per dimension, or one per case for every dimension "
                            "(default: the rubric's judge.mode)")
    start.add_argument("--max-concurrency", type=int,
                       help="Map concurrency (default: the deployment's for the run's judge mode)")
    start.add_argument("--tolerated-failure-percentage", type=float,
                       help="items allowed to fail in the Map before the run fails (default: the deployment's)")
    start.add_argument("--wait", action="store_true", help="wait for the execution to end and print its outcome")
    start.add_argument("--poll-seconds", type=float, default=5.0, help=argparse.SUPPRESS)
    start.set_defaults(command_fn=run_start_command)
    return start


def execution_input_from_args(args: argparse.Namespace) -> dict[str, Any]:
    execution_input: dict[str, Any] = {"trigger": args.trigger, "dataset": args.dataset}
    optional = {
        "catalog": args.catalog,
        "rubric": args.rubric,
        "baseline": args.baseline,
        "target": args.target,
        "control": args.control,
        "run_id": args.run_id,
        "judge_mode": args.judge_mode,
        "max_concurrency": args.max_concurrency,
        "tolerated_failure_percentage": args.tolerated_failure_percentage,
    }
    execution_input.update({k: v for k, v in optional.items() if v is not None})
    if args.skip_invalid:
        execution_input["skip_invalid"] = True
    return execution_input


def print_outcome(outcome: dict[str, Any], out: Any = None) -> None:
    out = out or sys.stdout
    print(f"execution: {outcome['arn']}", file=out)
    print(f"status:    {outcome['status']}", file=out)
    if outcome.get("error"):
        print(f"error:     {outcome['error']}", file=out)
    if outcome.get("cause"):
        print(f"cause:     {outcome['cause']}", file=out)
    output = outcome.get("output")
    if isinstance(output, dict):
        # The evaluation state machine ends with the execution input plus "prepare" and "aggregate".
        shown = {**output.get("prepare", {}), **output.get("aggregate", {}), **output}
        for key in ("run_id", "summary", "pass_rate", "report_key"):
            if isinstance(shown.get(key), (str, int, float)):
                print(f"{key + ':':<10} {shown[key]}", file=out)
    elif output is not None:
        print(f"output:    {output}", file=out)


def run_start_command(args: argparse.Namespace, sfn_client: Any = None) -> int:
    if sfn_client is None:
        import boto3

        # The region is the state machine's, whatever the local profile says.
        sfn_client = boto3.client("stepfunctions", region_name=args.state_machine.split(":")[3])
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        outcome = start_run(sfn_client, args.state_machine, execution_input_from_args(args), wait=args.wait,
                            poll_s=args.poll_seconds)
    except (ClientError, BotoCoreError) as exc:
        print(f"fmquality start: {exc}", file=sys.stderr)
        return EXIT_RUN_FAILED
    if not args.wait:
        print(outcome["arn"])
        return EXIT_PASSED
    print_outcome(outcome)
    return exit_code(outcome)


# --------------------------------------------------------------------------------------------------
# fmquality approve-baseline
# --------------------------------------------------------------------------------------------------

def add_approve_command(subparsers: Any) -> argparse.ArgumentParser:
    approve = subparsers.add_parser(
        "approve-baseline",
        help="make a finished run the approved baseline of its dataset (what \"baseline\": \"auto\" compares with)",
    )
    approve.add_argument("--table", required=True, help="the evaluation table's name")
    approve.add_argument("--bucket", required=True, help="the data bucket (the approved report is frozen there)")
    approve.add_argument("--run-id", required=True, help="the run to approve")
    approve.add_argument("--region", help="the table's region (default: the AWS configuration's)")
    approve.add_argument("--approved-by", help="recorded with the approval (default: $USER)")
    approve.add_argument("--allow-failed-gate", action="store_true",
                         help="approve a run whose own gate failed (by default only passing runs are approved)")
    approve.set_defaults(command_fn=run_approve_command)
    return approve


def run_approve_command(args: argparse.Namespace, dynamodb_client: Any = None, s3_client: Any = None) -> int:
    import os

    from botocore.exceptions import BotoCoreError, ClientError

    from fmquality.adapters.dynamodb import EvaluationTable
    from fmquality.adapters.s3 import S3Store
    from fmquality.domain.errors import S3ObjectNotFound
    from fmquality.run.baseline import approve_baseline

    if dynamodb_client is None or s3_client is None:
        import boto3

        dynamodb_client = dynamodb_client or boto3.client("dynamodb", region_name=args.region)
        s3_client = s3_client or boto3.client("s3", region_name=args.region)
    table = EvaluationTable(args.table, dynamodb_client)
    try:
        approved = approve_baseline(table, S3Store(s3_client), args.bucket, args.run_id,
                                    args.approved_by or os.environ.get("USER"), args.allow_failed_gate)
    except (S3ObjectNotFound, ValueError) as exc:
        print(f"fmquality approve-baseline: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except (ClientError, BotoCoreError) as exc:
        print(f"fmquality approve-baseline: {exc}", file=sys.stderr)
        return EXIT_RUN_FAILED
    print(f"baseline of {approved['dataset_id']}: run {approved['run_id']} ({approved['report_key']})")
    return EXIT_PASSED


# --------------------------------------------------------------------------------------------------
# fmquality catalog load
# --------------------------------------------------------------------------------------------------

def _snapshot_date(value: str) -> date:
    try:
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
            return date.fromisoformat(value)
    except ValueError:
        pass
    raise argparse.ArgumentTypeError(f"expected a date YYYY-MM-DD, got {value!r}")


def add_catalog_command(subparsers: Any) -> argparse.ArgumentParser:
    catalog = subparsers.add_parser("catalog", help="catalog snapshots in the evaluation table "
                                                    "(what \"catalog\": \"dynamodb:latest\" reads)")
    commands = catalog.add_subparsers(dest="catalog_command", required=True)
    load = commands.add_parser(
        "load", help="validate a catalog JSON file and load it as a new snapshot, then make it the latest")
    load.add_argument("file", help="catalog JSON: an array of items, or {\"items\": [...]}")
    load.add_argument("--table", required=True, help="the evaluation table's name")
    load.add_argument("--snapshot-date", type=_snapshot_date,
                      help="the snapshot's date, YYYY-MM-DD, which names its version (default: today, UTC); "
                           "a second load with the same date becomes <date>.2, <date>.3, ...")
    load.add_argument("--region", help="the table's region (default: the AWS configuration's)")
    catalog.set_defaults(command_fn=run_catalog_command)
    return catalog


def run_catalog_command(args: argparse.Namespace, dynamodb_client: Any = None) -> int:
    from botocore.exceptions import BotoCoreError, ClientError

    from fmquality.adapters.dynamodb import EvaluationTable
    from fmquality.domain.errors import CatalogLoadError, DatasetError
    from fmquality.run.dataset import load_catalog

    try:
        items = load_catalog(args.file)  # validated as a run's catalog file is
    except DatasetError as exc:
        print(f"fmquality catalog load: {exc}", file=sys.stderr)
        for line_error in exc.errors:
            print(f"  {line_error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if dynamodb_client is None:
        import boto3

        dynamodb_client = boto3.client("dynamodb", region_name=args.region)
    snapshot_date = args.snapshot_date or datetime.now(timezone.utc).date()
    try:
        meta = EvaluationTable(args.table, dynamodb_client).put_catalog(items, snapshot_date, Path(args.file).name)
    except (CatalogLoadError, ClientError, BotoCoreError) as exc:
        print(f"fmquality catalog load: {exc}; the latest snapshot is unchanged", file=sys.stderr)
        return EXIT_RUN_FAILED
    print(f"catalog {meta['version']}: {meta['item_count']} items from {meta['source']} loaded into {args.table}; "
          f"it is now dynamodb:latest (also dynamodb:{meta['version']})")
    return EXIT_PASSED
