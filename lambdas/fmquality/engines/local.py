"""Run the real evaluation state machine on embedded AWS (moto, in-process): `fmquality run`'s default.

The same ASL (``engines.definition``), the same handlers and the same ``run`` code run here as in AWS,
and the run's files are where ``run.layout`` puts them. Only two things differ, each in one documented
place: ``definition.local_definition`` would run EXPRESS Map children as STANDARD (moto's grammar accepts
nothing else; the deployed children are STANDARD already), and ``moto_hooks`` routes Lambda tasks to the
handler functions in-process (``inprocess``). The Bedrock judge's calls, which moto cannot answer, pass
through to Bedrock with the user's own credentials (``real_judge_client``).

The handlers are imported by the name in the functions manifest at run time, never statically: the
core does not depend on them, it only needs a repository checkout (``lambdas/`` and ``statemachines/``
beside the package). A test replaces a handler by monkeypatching its module's ``handler``.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import logging
import os
import re
import sys
import time
import uuid
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fmquality.adapters.dynamodb import EvaluationTable, create_evaluation_table
from fmquality.adapters.s3 import BucketStorage, S3Store
from fmquality.engines.definition import (LAMBDAS_DIR, expanded_definition, function_specs, load_manifest,
                                          local_definition, render_definition, rubric_dimensions)
from fmquality.engines.inprocess import ACCOUNT, FUNCTION_PREFIX, REGION, HandlerDispatcher, handler_output_dropped
from fmquality.engines.moto_hooks import compressed_retry_waits, parsed_json_paths_kept, route_lambda_invocations
from fmquality.engines.outputs import named_as_given
from fmquality.judges.cache import LocalVerdictStore
from fmquality.run import layout
from fmquality.run.baseline import approve_baseline

TABLE_NAME = "fmquality-local"
BUCKET_NAME = "fmquality-local-data"
EVENT_BUS_NAME = "fmquality-local"
STATE_MACHINE_NAME = "fmquality-evaluation-local"
METRICS_NAMESPACE = "MangaAssist/Evaluation"
ENGINE_NAME = "stepfunctions-local"


@dataclass
class LocalRunResult:
    execution_arn: str
    status: str
    error: str | None
    cause: str | None
    failed_state: str | None
    run_id: str | None
    # The run's files as the execution left them in the embedded bucket (``layout.RUN_OUTPUTS``).
    outputs: dict[str, str | None]
    # The scores stored whole because their state copy was cut: key under the run's prefix
    # ("judge/<arm>/<test_id>/<dimension>.json") -> the object, read before the embedded bucket goes.
    judge_traces: dict[str, bytes]
    stage_seconds: dict[str, float]
    wall_seconds: float
    lambda_calls: dict[str, int]

    @property
    def execution(self) -> dict[str, Any]:
        return {"arn": self.execution_arn, "status": self.status, "error": self.error, "cause": self.cause}

    @property
    def report(self) -> dict[str, Any] | None:
        text = self.outputs.get(layout.REPORT_JSON)
        return json.loads(text) if text else None

    @property
    def results_jsonl(self) -> str | None:
        return self.outputs.get(layout.RESULTS)

    @property
    def control_results_jsonl(self) -> str | None:
        return self.outputs.get(layout.CONTROL_RESULTS)

    @property
    def report_html(self) -> str | None:
        return self.outputs.get(layout.REPORT_HTML)

    @property
    def rejected_jsonl(self) -> str | None:
        return self.outputs.get(layout.REJECTED)


@contextlib.contextmanager
def _quiet_logs() -> Iterator[None]:
    """moto's ASL interpreter logs every caught error (our QualityGateFailed included) at ERROR level;
    the log lines of Prepare and Aggregate (CloudWatch Logs' in AWS) are dropped, as the handlers' stdout is."""
    names = ("moto.stepfunctions.parser", "moto", "botocore.credentials", "fmquality.run")
    previous = {n: logging.getLogger(n).level for n in names}
    for name in names:
        logging.getLogger(name).setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for name, level in previous.items():
            logging.getLogger(name).setLevel(level)


@contextlib.contextmanager
def _no_warnings() -> Iterator[None]:
    """The handlers' warnings (Powertools' "no metrics to publish") are not the user's business."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


# The Bedrock judge's requests leave embedded AWS for Bedrock itself (moto has no Converse).
BEDROCK_PASSTHROUGH = r"https://bedrock-runtime(-fips)?\.[a-z0-9-]+\.amazonaws\.com(\.cn)?/.*"


class _Uncallable:
    """A judge client that cannot be made (no credentials, no region): every call raises why, which the
    Bedrock judge names JudgeMisconfigured, so the run stops on its first item (exit 3)."""

    def __init__(self, error: Exception) -> None:
        self._error = error

    def converse(self, **_params: Any) -> Any:
        raise self._error


def real_judge_client() -> Any:
    """The Bedrock judge's client from the user's own credentials and region, read before the engine
    puts embedded AWS's fake ones in the environment (which would sign every call with "local")."""
    import boto3
    from botocore.config import Config
    from botocore.exceptions import BotoCoreError, NoCredentialsError

    session = boto3.Session()
    try:
        credentials = session.get_credentials()
        frozen = credentials.get_frozen_credentials() if credentials is not None else None
        if frozen is None or not frozen.access_key:
            return _Uncallable(NoCredentialsError())
        return session.client("bedrock-runtime", aws_access_key_id=frozen.access_key,
                              aws_secret_access_key=frozen.secret_key, aws_session_token=frozen.token,
                              config=Config(read_timeout=60, connect_timeout=5,
                                            retries={"total_max_attempts": 1, "mode": "standard"}))
    except BotoCoreError as exc:  # NoRegionError, an unreadable profile, ...
        return _Uncallable(exc)


def _prepare_process_env() -> None:
    # Fake credentials and a region so nothing can reach a real endpoint.
    for key, value in {
        "AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local", "AWS_SESSION_TOKEN": "local",
        "AWS_DEFAULT_REGION": REGION, "AWS_REGION": REGION,
    }.items():
        os.environ[key] = value
    if str(LAMBDAS_DIR) not in sys.path:
        sys.path.insert(0, str(LAMBDAS_DIR))


@contextlib.contextmanager
def _quiet_powertools() -> Iterator[None]:
    """For the run (restored after it): no traces, warnings only, and no EMF metrics, which locally
    have no CloudWatch Logs to become metrics. Powertools keeps one metric set per process (in Lambda,
    one invocation at a time) and writes it out every 100 values whatever the switch says, so it
    needs its namespace (every function's)."""
    quiet = {"POWERTOOLS_TRACE_DISABLED": "true", "POWERTOOLS_METRICS_DISABLED": "true",
             "POWERTOOLS_METRICS_NAMESPACE": METRICS_NAMESPACE, "LOG_LEVEL": "WARNING",
             "POWERTOOLS_LOG_LEVEL": "WARNING"}
    saved = {key: os.environ.get(key) for key in quiet}
    for key, value in quiet.items():
        os.environ.setdefault(key, value)
    try:
        yield
    finally:
        from aws_lambda_powertools import Metrics

        Metrics().clear_metrics()  # the values the run left in the one metric set (never written out)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@dataclass(frozen=True)
class LocalRunInput:
    """The execution input, as a console user would give it, before its files are uploaded."""

    dataset_path: Path
    catalog_path: Path | None
    rubric_path: Path | None
    options: dict[str, Any]  # trigger, skip_invalid, filter, limits, run_id, target, control: as given


def _create_storage(client: Callable[[str], Any], verdicts: "_VerdictCacheSync | None") -> None:
    """The bucket, the table (seeded with the kept verdicts) and the event bus."""
    client("s3").create_bucket(Bucket=BUCKET_NAME)
    create_evaluation_table(client("dynamodb"), TABLE_NAME)
    if verdicts:
        verdicts.seed()
    client("events").create_event_bus(Name=EVENT_BUS_NAME)


def _create_machine(client: Callable[[str], Any], specs: dict[str, dict[str, Any]], manifest: dict[str, Any],
                    definition_text: str, judge: str, judge_model_id: str | None) -> str:
    """The functions (routed to the handlers in-process) and the state machine; its ARN."""
    role_arn = client("iam").create_role(
        RoleName="fmquality-local", AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": []})
    )["Role"]["Arn"]
    common_env = {
        "TABLE_NAME": TABLE_NAME, "BUCKET_NAME": BUCKET_NAME, "EVENT_BUS_NAME": EVENT_BUS_NAME,
        "JUDGE": judge, "JUDGE_MODEL_ID": judge_model_id or "",
        "POWERTOOLS_SERVICE_NAME": "fmquality-local", "POWERTOOLS_METRICS_NAMESPACE": METRICS_NAMESPACE,
        "ENGINE_NAME": ENGINE_NAME,
    }
    substitutions = {manifest["bucket_placeholder"]: BUCKET_NAME}
    for role, spec in specs.items():
        substitutions[spec["placeholder"]] = client("lambda").create_function(
            FunctionName=f"{FUNCTION_PREFIX}{role}", Runtime="python3.13", Role=role_arn,
            Handler=spec["handler"], Code={"ZipFile": b"in-process"},
            Environment={"Variables": {**common_env, **spec.get("environment", {})}},
        )["FunctionArn"]
    definition = local_definition(json.loads(render_definition(definition_text, substitutions)))
    return client("stepfunctions").create_state_machine(
        name=STATE_MACHINE_NAME, definition=json.dumps(definition), roleArn=role_arn)["stateMachineArn"]


def _upload(s3: Any, key: str, path: Path) -> str:
    s3.put_object(Bucket=BUCKET_NAME, Key=key, Body=path.read_bytes())
    return f"s3://{BUCKET_NAME}/{key}"


def _uploaded_as_given(run: LocalRunInput) -> dict[str, Path]:
    """The embedded bucket's copy (``_upload``) of each file the user gave, and the path they gave."""
    given = {run.dataset_path: "datasets/", run.catalog_path: "datasets/", run.rubric_path: "datasets/rubrics/"}
    return {f"s3://{BUCKET_NAME}/{folder}{path.name}": path for path, folder in given.items() if path}


def _execution_input(client: Callable[[str], Any], run: LocalRunInput,
                     baseline_report: dict[str, Any] | None) -> dict[str, Any]:
    """The input document, its dataset, catalog and rubric uploaded, its baseline approved."""
    s3 = client("s3")
    dataset_key = f"datasets/{run.dataset_path.name}"
    execution_input: dict[str, Any] = {"trigger": run.options.get("trigger", "manual"),
                                       "dataset": _upload(s3, dataset_key, run.dataset_path),
                                       "skip_invalid": run.options.get("skip_invalid", False)}
    if run.catalog_path:
        execution_input["catalog"] = _upload(s3, f"datasets/{run.catalog_path.name}", run.catalog_path)
    if run.rubric_path:
        execution_input["rubric"] = _upload(s3, f"datasets/rubrics/{run.rubric_path.name}", run.rubric_path)
    if baseline_report:
        execution_input["baseline"] = _install_baseline(client, baseline_report, dataset_key.rsplit(".", 1)[0])
    execution_input.update({k: v for k, v in run.options.items() if k not in execution_input and v is not None})
    return execution_input


def _install_baseline(client: Callable[[str], Any], report: dict[str, Any], dataset_id: str) -> str:
    """Put a baseline report where Prepare and Aggregate look for approved baselines; return its run id."""
    run_id = str(report["run_id"])
    key = layout.run_key(run_id, layout.REPORT_JSON)
    s3 = S3Store(client("s3"))
    s3.write_bytes(BUCKET_NAME, key, json.dumps(report).encode("utf-8"), "application/json")
    table = EvaluationTable(TABLE_NAME, client("dynamodb"))
    # A finished run record (Prepare and Aggregate read the report through it) and the approval.
    table.register_run(run_id, dataset_id, started_at=report.get("started_at"), status="SUCCEEDED", report_key=key,
                       gate_passed=bool(report.get("gate", {}).get("passed")))
    approve_baseline(table, s3, BUCKET_NAME, run_id, allow_failed_gate=True)
    return run_id


def _wait(sfn: Any, execution_arn: str, timeout_s: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    # Each poll goes through botocore and moto and holds the GIL the execution's threads need: poll
    # often at first (short runs), then at most every 0.1 s.
    pause = 0.01
    while True:
        described = sfn.describe_execution(executionArn=execution_arn)
        if described["status"] != "RUNNING":
            return described
        if time.monotonic() > deadline:
            sfn.stop_execution(executionArn=execution_arn, error="LocalTimeout", cause=f"no result in {timeout_s} s")
            return sfn.describe_execution(executionArn=execution_arn)
        time.sleep(pause)
        pause = min(0.1, pause * 1.5)


def _judge_traces(s3: Any, run_id: str) -> dict[str, bytes]:
    prefix = layout.run_key(run_id, layout.JUDGE_TRACES)
    keys = [entry["Key"] for page in s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET_NAME, Prefix=prefix)
            for entry in page.get("Contents", [])]
    cut = len(layout.run_prefix(run_id))
    return {key[cut:]: s3.get_object(Bucket=BUCKET_NAME, Key=key)["Body"].read() for key in keys}


def _history(sfn: Any, execution_arn: str) -> list[dict[str, Any]]:
    return sfn.get_execution_history(executionArn=execution_arn)["events"]


def _failed_state(events: list[dict[str, Any]]) -> str | None:
    entered = [e["stateEnteredEventDetails"]["name"] for e in events if e["type"].endswith("StateEntered")]
    return entered[-1] if entered else None


def _prepared_run_id(events: list[dict[str, Any]]) -> str | None:
    """The run id from Prepare's result in the execution history (it names the run)."""
    entered_prepare = False
    for event in events:
        details = event.get("stateEnteredEventDetails")
        if details:
            entered_prepare = details["name"] == "Prepare"
        succeeded = event.get("taskSucceededEventDetails") or event.get("lambdaFunctionSucceededEventDetails")
        if entered_prepare and succeeded:
            output = json.loads(succeeded.get("output") or "{}")
            return output.get("Payload", output).get("run_id")
    return None


class _VerdictCacheSync:
    """The embedded table's cached verdicts and the local verdict folder, kept in step: the table
    dies with the run, the folder is what the next run reads (the deployed table keeps its own)."""

    def __init__(self, folder: Path | None, dynamodb_client: Any) -> None:
        self.local = LocalVerdictStore(folder)
        self.table = EvaluationTable(TABLE_NAME, dynamodb_client)
        self.seeded: set[str] = set()

    def seed(self) -> None:
        for key, entry in self.local.entries():
            expires_at = entry.pop("expires_at")
            self.table.put_cached_verdict(key, json.dumps(entry, ensure_ascii=False), expires_at)
            self.seeded.add(key)

    def keep(self) -> None:
        for key, payload, _expires_at in self.table.cached_verdicts():
            if key not in self.seeded:
                self.local.put(key, json.loads(payload))


def _progress_events(on_progress: Callable[[int, int], None] | None) -> Callable[[str, Any], None]:
    """Items done of items to do: Prepare says how many; each Composite or ScoreCase (which ends its
    item's branch itself) is one done."""
    state = {"done": 0, "total": 0}

    def on_event(role: str, result: Any) -> None:
        if role == "prepare" and isinstance(result, dict):
            state["total"] = int(result.get("item_count") or 0)
        elif role in ("composite", "score_case"):
            state["done"] += 1
        if on_progress and role in ("prepare", "composite", "score_case"):
            on_progress(state["done"], state["total"])

    return on_event


def _execution_name(run_id: str | None, trigger: str) -> str:
    name = run_id or f"{trigger}-{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:6]}"
    return re.sub(r"[^A-Za-z0-9_-]", "-", name)[:80]


def run_local_execution(
    *,
    dataset_path: Path,
    catalog_path: Path | None = None,
    rubric_path: Path | None = None,
    baseline_report: dict[str, Any] | None = None,
    judge: str = "offline",
    judge_model_id: str | None = None,
    skip_invalid: bool = False,
    filter: str | dict[str, Any] | None = None,  # noqa: A002 - the execution input's key
    trigger: str = "manual",
    run_id: str | None = None,
    max_concurrency: int | None = None,
    judge_mode: str | None = None,
    tolerated_failure_percentage: float | None = None,
    on_progress: Callable[[int, int], None] | None = None,
    retry_wait_cap_s: float | None = None,
    inspect_aws: Callable[[Callable[[str], Any]], None] | None = None,
    timeout_s: float = 1800.0,
    target: str | dict[str, Any] | None = None,
    control: str | dict[str, Any] | None = None,
    verdict_cache_dir: Path | None = None,
) -> LocalRunResult:
    """Create the table, bucket and functions in moto, start one execution with the input a console
    user would give, wait for it, and read the run's files back from the embedded bucket.

    ``target`` and ``control`` are target specs (strings or objects), passed in the execution input
    as given: Prepare validates them. ``python:`` targets run in this process; ``http`` targets are
    reached with urllib, which moto does not intercept, so a chatbot on 127.0.0.1 answers.

    ``verdict_cache_dir`` keeps the Bedrock judge's verdicts between runs as the direct engine does:
    the embedded table is seeded from that folder and what the run cached is written back to it."""
    import boto3
    from moto import mock_aws

    judge_client = real_judge_client() if judge == "bedrock" else None  # before the fake credentials
    _prepare_process_env()
    manifest = load_manifest()
    # The scorers are the run rubric's profile dimensions: one function and one Parallel branch each.
    dimensions = rubric_dimensions(rubric_path)
    specs = function_specs(manifest, dimensions)
    run = LocalRunInput(dataset_path, catalog_path, rubric_path, {
        "trigger": trigger, "skip_invalid": skip_invalid, "filter": filter, "max_concurrency": max_concurrency,
        "judge_mode": judge_mode,
        "tolerated_failure_percentage": None if tolerated_failure_percentage is None
        else float(tolerated_failure_percentage),
        "run_id": run_id, "target": target, "control": control})
    t0 = time.perf_counter()
    dispatcher = HandlerDispatcher(on_event=_progress_events(on_progress))
    config: dict[str, Any] = {"stepfunctions": {"execute_state_machine": True}, "lambda": {"use_docker": False}}
    if judge_client is not None:
        config["core"] = {"passthrough": {"urls": [BEDROCK_PASSTHROUGH], "services": []}}
    waits = compressed_retry_waits(retry_wait_cap_s) if retry_wait_cap_s is not None else contextlib.nullcontext()

    with _quiet_logs(), _quiet_powertools(), _no_warnings(), handler_output_dropped(), mock_aws(config=config), \
            route_lambda_invocations(dispatcher, ACCOUNT, REGION), parsed_json_paths_kept(), waits:
        with contextlib.suppress(ImportError):  # a fresh account: nothing cached from an earlier one
            importlib.import_module("handlers").give_client("bedrock-runtime", judge_client)
        client = boto3.session.Session(region_name=REGION).client
        verdicts = _VerdictCacheSync(verdict_cache_dir, client("dynamodb")) if judge == "bedrock" else None
        _create_storage(client, verdicts)
        machine_arn = _create_machine(client, specs, manifest, expanded_definition(manifest, dimensions),
                                      judge, judge_model_id)
        sfn = client("stepfunctions")
        execution_arn = sfn.start_execution(
            stateMachineArn=machine_arn, name=_execution_name(run_id, trigger),
            input=json.dumps(_execution_input(client, run, baseline_report)))["executionArn"]
        described = _wait(sfn, execution_arn, timeout_s)
        events = _history(sfn, execution_arn)
        run_id_out = _prepared_run_id(events)
        storage = BucketStorage(S3Store(client("s3")), BUCKET_NAME)
        outputs = layout.read_outputs(storage, layout.run_prefix(run_id_out)) if run_id_out else {}
        outputs = named_as_given(outputs, _uploaded_as_given(run))
        judge_traces = _judge_traces(client("s3"), run_id_out) if run_id_out else {}
        if verdicts:
            verdicts.keep()
        if inspect_aws:
            inspect_aws(client)

    return LocalRunResult(
        execution_arn=execution_arn, status=described["status"], error=described.get("error"),
        cause=described.get("cause"),
        failed_state=_failed_state(events) if described["status"] != "SUCCEEDED" else None,
        run_id=run_id_out, outputs=outputs, judge_traces=judge_traces, stage_seconds=dispatcher.clock.stages(),
        wall_seconds=time.perf_counter() - t0, lambda_calls=dict(dispatcher.clock.calls))
