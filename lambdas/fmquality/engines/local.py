"""Run the real evaluation state machine on embedded AWS (moto, in-process): `fmquality run`'s default.

The same ASL (statemachines/evaluation.asl.json, its scorer branch expanded to the run rubric's profile
dimensions by statemachines/expand.py, as CDK does), the same placeholder mapping as CDK
(statemachines/evaluation.functions.json), the same handlers and the same storage code run here as in
AWS. Only two things differ, each in one documented place: ``local_definition`` runs the Map's EXPRESS
children as STANDARD (moto's grammar accepts nothing else), and ``moto_hooks`` routes Lambda tasks to
the handler functions in-process.

This module imports the handlers by the name in the functions manifest at run time, never statically:
the core does not depend on them, it only needs a repository checkout (``lambdas/`` and
``statemachines/`` beside the package).
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import logging
import os
import re
import sys
import threading
import time
import uuid
import warnings
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fmquality.adapters.dynamodb import create_evaluation_table
from fmquality.engines.moto_hooks import compressed_retry_waits, route_lambda_invocations
from fmquality.domain.errors import LocalEngineError

LAMBDAS_DIR = Path(__file__).resolve().parents[2]
REPO_ROOT = LAMBDAS_DIR.parent
STATEMACHINES_DIR = REPO_ROOT / "statemachines"
FUNCTIONS_MANIFEST = STATEMACHINES_DIR / "evaluation.functions.json"

REGION = "us-east-1"
ACCOUNT = "123456789012"
TABLE_NAME = "fmquality-local"
BUCKET_NAME = "fmquality-local-data"
EVENT_BUS_NAME = "fmquality-local"
STATE_MACHINE_NAME = "fmquality-evaluation-local"
ENGINE_NAME = "stepfunctions-local"

_PLACEHOLDER = re.compile(r"\$\{([A-Za-z0-9_]+)\}")
# Handlers run one at a time: they read their configuration from os.environ, which is process-wide.
_INVOKE_LOCK = threading.Lock()


# --------------------------------------------------------------------------------------------------
# Definition
# --------------------------------------------------------------------------------------------------

def load_manifest(path: Path = FUNCTIONS_MANIFEST) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def _expand_module() -> Any:
    """statemachines/expand.py, loaded by path: CDK (infra/asl.py) loads the same file, so the scorer
    branches and roles are derived by one implementation (the core may not import infra/)."""
    import importlib.util

    name = "fmquality_statemachines_expand"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, STATEMACHINES_DIR / "expand.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules[name] = module
    return sys.modules[name]


def function_specs(manifest: dict[str, Any], dimensions: list[str]) -> dict[str, dict[str, Any]]:
    """Role -> {placeholder, handler, environment}: the fixed functions and one scorer per dimension."""
    return _expand_module().function_specs(manifest, dimensions)


def expanded_definition(manifest: dict[str, Any], dimensions: list[str]) -> str:
    """The ASL text with one ScoreDimensions branch per dimension (placeholders still unfilled)."""
    text = (STATEMACHINES_DIR / manifest["definition"]).read_text(encoding="utf-8")
    return _expand_module().expand_definition_text(text, dimensions)


def rubric_dimensions(rubric_path: Path | None) -> list[str]:
    """The dimensions of the run rubric's profile (the default rubric without ``--rubric``)."""
    from fmquality.config.rubric import load_rubric

    return list(load_rubric(rubric_path).dimensions)


def render_definition(text: str, substitutions: dict[str, str]) -> str:
    """Fill ${Placeholders} the way DefinitionSubstitutions does; every one must have a value.
    infra/asl.py has its own copy for the CDK side: the core may not import infra/ (DESIGN section 2);
    the mapping they fill from is the one shared file."""
    missing = sorted(set(_PLACEHOLDER.findall(text)) - set(substitutions))
    if missing:
        raise LocalEngineError(f"ASL placeholders without a value: {missing}")
    return _PLACEHOLDER.sub(lambda m: json.dumps(substitutions[m.group(1)])[1:-1], text)


def local_definition(definition: dict[str, Any]) -> dict[str, Any]:
    """The one rewrite the embedded engine needs, applied to the local copy only: moto accepts only
    ``ExecutionType: STANDARD`` for a Distributed Map's children, so EXPRESS children run as STANDARD.
    Scoring, retries, catches and paths are untouched."""
    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            out = {k: walk(v) for k, v in node.items()}
            config = out.get("ProcessorConfig")
            if isinstance(config, dict) and config.get("ExecutionType") == "EXPRESS":
                out["ProcessorConfig"] = {**config, "ExecutionType": "STANDARD"}
            return out
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    return walk(definition)


# --------------------------------------------------------------------------------------------------
# In-process Lambda
# --------------------------------------------------------------------------------------------------

@dataclass
class _FakeContext:
    function_name: str
    function_version: str = "$LATEST"
    memory_limit_in_mb: int = 1024
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    log_group_name: str = "/aws/lambda/local"
    log_stream_name: str = "local"

    @property
    def invoked_function_arn(self) -> str:
        return f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{self.function_name}"

    def get_remaining_time_in_millis(self) -> int:
        return 900_000


@dataclass
class StageClock:
    """Wall-clock windows per Lambda role, for the "how long each stage took" line."""

    first: dict[str, float] = field(default_factory=dict)
    last: dict[str, float] = field(default_factory=dict)
    busy: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    calls: dict[str, int] = field(default_factory=lambda: defaultdict(int))

    def record(self, role: str, start: float, end: float) -> None:
        self.first.setdefault(role, start)
        self.last[role] = end
        self.busy[role] += end - start
        self.calls[role] += 1


class HandlerDispatcher:
    """Runs the handler named in a function's configuration with that function's environment."""

    def __init__(self, roles_by_function: dict[str, str], on_event: Callable[[str, dict, Any], None] | None = None,
                 overrides: dict[str, Callable[[dict], Any]] | None = None) -> None:
        self.roles_by_function = roles_by_function
        self.on_event = on_event
        # role -> replacement callable (tests inject failing scorers this way).
        self.overrides = overrides or {}
        self.clock = StageClock()
        self._handlers: dict[str, Callable] = {}

    def _handler(self, handler: str) -> Callable:
        if handler not in self._handlers:
            module_name, _, attr = handler.rpartition(".")
            self._handlers[handler] = getattr(importlib.import_module(module_name), attr)
        return self._handlers[handler]

    def __call__(self, function_name: str, handler: str, environment: dict[str, str], event: Any) -> Any:
        role = self.roles_by_function.get(function_name, function_name)
        with _INVOKE_LOCK:
            # Values are overwritten, keys never removed mid-run: other threads (moto's engine,
            # botocore) iterate os.environ, and a key vanishing under them raises KeyError.
            os.environ.update(environment)
            start = time.perf_counter()
            try:
                # In Lambda, stdout (Powertools' EMF metrics) goes to CloudWatch Logs; locally it is dropped.
                with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    if role in self.overrides:
                        result = self.overrides[role](event)
                    else:
                        result = self._handler(handler)(event, _FakeContext(function_name))
            finally:
                self.clock.record(role, start, time.perf_counter())
        if self.on_event:
            self.on_event(role, event, result)
        return result


# --------------------------------------------------------------------------------------------------
# The run
# --------------------------------------------------------------------------------------------------

@dataclass
class LocalRunResult:
    execution_arn: str
    status: str
    error: str | None
    cause: str | None
    failed_state: str | None
    run_id: str | None
    report: dict[str, Any] | None
    results_jsonl: str | None
    report_html: str | None
    rejected_jsonl: str | None
    stage_seconds: dict[str, float]
    wall_seconds: float
    lambda_calls: dict[str, int]
    # The control arm's results of a paired run (control_results.jsonl); None without a control.
    control_results_jsonl: str | None = None

    @property
    def execution(self) -> dict[str, Any]:
        return {"arn": self.execution_arn, "status": self.status, "error": self.error, "cause": self.cause}


@contextlib.contextmanager
def _quiet_moto() -> Iterator[None]:
    """moto's ASL interpreter logs every caught error (our QualityGateFailed included) at ERROR level."""
    names = ("moto.stepfunctions.parser", "moto", "botocore.credentials")
    previous = {n: logging.getLogger(n).level for n in names}
    for name in names:
        logging.getLogger(name).setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for name, level in previous.items():
            logging.getLogger(name).setLevel(level)


@contextlib.contextmanager
def _function_environment(specs: dict[str, dict[str, Any]]) -> Iterator[None]:
    """Every variable a function sets exists for the whole run and is restored afterwards."""
    keys = {k for spec in specs.values() for k in spec.get("environment", {})}
    keys |= {"TABLE_NAME", "BUCKET_NAME", "EVENT_BUS_NAME", "JUDGE", "JUDGE_MODEL_ID", "ENGINE_NAME",
             "POWERTOOLS_SERVICE_NAME", "POWERTOOLS_METRICS_NAMESPACE"}
    saved = {k: os.environ.get(k) for k in keys}
    for key in keys:
        os.environ.setdefault(key, "")
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _prepare_process_env() -> None:
    # Fake credentials and a region so nothing can reach a real endpoint; quiet Powertools output.
    for key, value in {
        "AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local", "AWS_SESSION_TOKEN": "local",
        "AWS_DEFAULT_REGION": REGION, "AWS_REGION": REGION,
    }.items():
        os.environ[key] = value
    for key, value in {
        "POWERTOOLS_TRACE_DISABLED": "true", "LOG_LEVEL": "WARNING",
        "POWERTOOLS_LOG_LEVEL": "WARNING",
    }.items():
        os.environ.setdefault(key, value)
    if str(LAMBDAS_DIR) not in sys.path:
        sys.path.insert(0, str(LAMBDAS_DIR))


def _failed_state(sfn, execution_arn: str) -> str | None:
    events = sfn.get_execution_history(executionArn=execution_arn)["events"]
    entered = [e["stateEnteredEventDetails"]["name"] for e in events if e["type"].endswith("StateEntered")]
    return entered[-1] if entered else None


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
    tolerated_failure_percentage: float | None = None,
    on_progress: Callable[[int, int], None] | None = None,
    overrides: dict[str, Callable[[dict], Any]] | None = None,
    retry_wait_cap_s: float | None = None,
    inspect_aws: Callable[[Callable[[str], Any]], None] | None = None,
    timeout_s: float = 1800.0,
    target: str | dict[str, Any] | None = None,
    control: str | dict[str, Any] | None = None,
    verdict_cache_dir: Path | None = None,
) -> LocalRunResult:
    """Create the table, bucket and functions in moto, start one execution with the input a console
    user would give, wait for it, and read the run's outputs back from the embedded S3.

    ``target`` and ``control`` are target specs (strings or objects), passed in the execution input
    as given: Prepare validates them. ``python:`` targets run in this process; ``http`` targets are
    reached with urllib, which moto does not intercept, so a chatbot on 127.0.0.1 answers.

    ``verdict_cache_dir`` keeps the Bedrock judge's verdicts between runs as the direct engine does:
    the embedded table is seeded from that folder and what the run cached is written back to it."""
    import boto3
    from moto import mock_aws

    _prepare_process_env()
    manifest = load_manifest()
    # The scorers are the run rubric's profile dimensions: one function and one Parallel branch each.
    dimensions = rubric_dimensions(rubric_path)
    specs = function_specs(manifest, dimensions)
    definition_text = expanded_definition(manifest, dimensions)
    t0 = time.perf_counter()
    state = {"done": 0, "total": 0}

    def on_event(role: str, event: Any, result: Any) -> None:
        if role == "prepare" and isinstance(result, dict):
            state["total"] = int(result.get("item_count") or 0)
        elif role == "composite":
            state["done"] += 1
        if on_progress and role in ("prepare", "composite"):
            on_progress(state["done"], state["total"])

    roles_by_function = {f"fmquality-local-{role}": role for role in specs}
    dispatcher = HandlerDispatcher(roles_by_function, on_event=on_event, overrides=overrides)
    config = {"stepfunctions": {"execute_state_machine": True}, "lambda": {"use_docker": False}}
    waits = compressed_retry_waits(retry_wait_cap_s) if retry_wait_cap_s is not None else contextlib.nullcontext()

    with _quiet_moto(), _function_environment(specs), mock_aws(config=config), \
            route_lambda_invocations(dispatcher), waits:
        with contextlib.suppress(ImportError):
            importlib.import_module("handlers").reset_caches()
        session = boto3.session.Session(region_name=REGION)
        client = session.client
        s3, sfn = client("s3"), client("stepfunctions")
        s3.create_bucket(Bucket=BUCKET_NAME)
        create_evaluation_table(client("dynamodb"), TABLE_NAME)
        verdicts = _VerdictCacheSync(verdict_cache_dir, client("dynamodb")) if judge == "bedrock" else None
        if verdicts:
            verdicts.seed()
        client("events").create_event_bus(Name=EVENT_BUS_NAME)
        role_arn = client("iam").create_role(
            RoleName="fmquality-local", AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": []})
        )["Role"]["Arn"]

        common_env = {
            "TABLE_NAME": TABLE_NAME, "BUCKET_NAME": BUCKET_NAME, "EVENT_BUS_NAME": EVENT_BUS_NAME,
            "JUDGE": judge, "JUDGE_MODEL_ID": judge_model_id or "",
            "POWERTOOLS_SERVICE_NAME": "fmquality-local", "POWERTOOLS_METRICS_NAMESPACE": "MangaAssist/Evaluation",
            "ENGINE_NAME": ENGINE_NAME,
        }
        substitutions = {manifest["bucket_placeholder"]: BUCKET_NAME}
        lam = client("lambda")
        for role, spec in specs.items():
            arn = lam.create_function(
                FunctionName=f"fmquality-local-{role}", Runtime="python3.13", Role=role_arn,
                Handler=spec["handler"], Code={"ZipFile": b"in-process"},
                Environment={"Variables": {**common_env, **spec.get("environment", {})}},
            )["FunctionArn"]
            substitutions[spec["placeholder"]] = arn

        definition = local_definition(json.loads(render_definition(definition_text, substitutions)))
        machine_arn = sfn.create_state_machine(
            name=STATE_MACHINE_NAME, definition=json.dumps(definition), roleArn=role_arn
        )["stateMachineArn"]

        dataset_key = f"datasets/{dataset_path.name}"
        s3.put_object(Bucket=BUCKET_NAME, Key=dataset_key, Body=dataset_path.read_bytes())
        execution_input: dict[str, Any] = {"trigger": trigger, "dataset": f"s3://{BUCKET_NAME}/{dataset_key}",
                                           "skip_invalid": skip_invalid}
        if filter is not None:
            execution_input["filter"] = filter
        if catalog_path:
            key = f"datasets/{catalog_path.name}"
            s3.put_object(Bucket=BUCKET_NAME, Key=key, Body=catalog_path.read_bytes())
            execution_input["catalog"] = f"s3://{BUCKET_NAME}/{key}"
        if rubric_path:
            key = f"datasets/rubrics/{rubric_path.name}"
            s3.put_object(Bucket=BUCKET_NAME, Key=key, Body=rubric_path.read_bytes())
            execution_input["rubric"] = f"s3://{BUCKET_NAME}/{key}"
        if baseline_report:
            execution_input["baseline"] = _install_baseline(s3, client("dynamodb"), baseline_report,
                                                           dataset_key.rsplit(".", 1)[0])
        if max_concurrency is not None:
            execution_input["max_concurrency"] = max_concurrency
        if tolerated_failure_percentage is not None:
            execution_input["tolerated_failure_percentage"] = float(tolerated_failure_percentage)
        if run_id:
            execution_input["run_id"] = run_id
        if target is not None:
            execution_input["target"] = target
        if control is not None:
            execution_input["control"] = control

        name = re.sub(r"[^A-Za-z0-9_-]", "-", run_id or f"{trigger}-{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:6]}")[:80]
        execution_arn = sfn.start_execution(stateMachineArn=machine_arn, name=name,
                                            input=json.dumps(execution_input))["executionArn"]
        deadline = time.monotonic() + timeout_s
        while True:
            described = sfn.describe_execution(executionArn=execution_arn)
            if described["status"] != "RUNNING":
                break
            if time.monotonic() > deadline:
                sfn.stop_execution(executionArn=execution_arn, error="LocalTimeout", cause=f"no result in {timeout_s} s")
                described = sfn.describe_execution(executionArn=execution_arn)
                break
            time.sleep(0.02)

        status = described["status"]
        error, cause = described.get("error"), described.get("cause")
        failed_state = _failed_state(sfn, execution_arn) if status != "SUCCEEDED" else None
        report = results = html = rejected = control_results = None
        run_id_out = None
        prepare_output = _prepare_output(sfn, execution_arn)
        if prepare_output:
            run_id_out = prepare_output.get("run_id")
            prefix = f"runs/{run_id_out}/"
            report_text = _read(s3, prefix + "report.json")
            report = json.loads(report_text) if report_text else None
            results = _read(s3, prefix + "results.jsonl")
            html = _read(s3, prefix + "report.html")
            rejected = _read(s3, prefix + "rejected.jsonl")
            control_results = _read(s3, prefix + "control_results.jsonl")
        if verdicts:
            verdicts.keep()
        if inspect_aws:
            inspect_aws(client)

    wall = time.perf_counter() - t0
    clock = dispatcher.clock
    stages = {}
    if "prepare" in clock.first:
        stages["prepare"] = clock.last["prepare"] - clock.first["prepare"]
    scorer_roles = [r for r in clock.first if r not in ("prepare", "aggregate")]
    if scorer_roles:
        stages["evaluate"] = max(clock.last[r] for r in scorer_roles) - min(clock.first[r] for r in scorer_roles)
    if "aggregate" in clock.first:
        stages["aggregate"] = clock.last["aggregate"] - clock.first["aggregate"]
    return LocalRunResult(
        execution_arn=execution_arn, status=status, error=error, cause=cause, failed_state=failed_state,
        run_id=run_id_out, report=report, results_jsonl=results, report_html=html, rejected_jsonl=rejected,
        stage_seconds=stages, wall_seconds=wall, lambda_calls=dict(clock.calls),
        control_results_jsonl=control_results,
    )


class _VerdictCacheSync:
    """The embedded table's cached verdicts and the local verdict folder, kept in step: the table
    dies with the run, the folder is what the next run reads (the deployed table keeps its own)."""

    def __init__(self, folder: Path | None, dynamodb_client: Any) -> None:
        from fmquality.adapters.dynamodb import EvaluationTable
        from fmquality.judges.cache import LocalVerdictStore

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


def _read(s3, key: str) -> str | None:
    try:
        return s3.get_object(Bucket=BUCKET_NAME, Key=key)["Body"].read().decode("utf-8")
    except s3.exceptions.NoSuchKey:
        return None


def _prepare_output(sfn, execution_arn: str) -> dict[str, Any] | None:
    """Prepare's result, read from the execution history (it names the run)."""
    events = sfn.get_execution_history(executionArn=execution_arn)["events"]
    entered_prepare = False
    for event in events:
        details = event.get("stateEnteredEventDetails")
        if details:
            entered_prepare = details["name"] == "Prepare"
        succeeded = event.get("taskSucceededEventDetails") or event.get("lambdaFunctionSucceededEventDetails")
        if entered_prepare and succeeded:
            output = json.loads(succeeded.get("output") or "{}")
            return output.get("Payload", output)
    return None


def _install_baseline(s3, dynamodb, report: dict[str, Any], dataset_id: str) -> str:
    """Put a baseline report where Prepare and Aggregate look for approved baselines; return its run id."""
    from fmquality.adapters.dynamodb import EvaluationTable

    from fmquality.adapters.s3 import S3Store
    from fmquality.cli.aws import approve_baseline

    run_id = str(report["run_id"])
    key = f"runs/{run_id}/report.json"
    s3.put_object(Bucket=BUCKET_NAME, Key=key, Body=json.dumps(report).encode("utf-8"))
    table = EvaluationTable(TABLE_NAME, boto3_client=dynamodb)
    # A finished run record (Prepare and Aggregate read the report through it) and the approval.
    table.register_run(run_id, dataset_id, started_at=report.get("started_at"), status="SUCCEEDED", report_key=key,
                       gate_passed=bool(report.get("gate", {}).get("passed")))
    approve_baseline(table, S3Store(s3), BUCKET_NAME, run_id, allow_failed_gate=True)
    return run_id
