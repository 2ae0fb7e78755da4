"""Records the AWS calls our Lambda handlers make during the embedded-AWS (moto) test runs.

    python -m tests.infrastructure.iam.record            # runs tests/e2e and tests/integration, rewrites
                                                         # tests/infrastructure/iam/recorded_calls.json

As a pytest plugin (``-p tests.infrastructure.iam.record`` with FMQ_IAM_RECORD=<file>) it wraps
``botocore.client.BaseClient._make_api_call`` and keeps every call made while a handler runs: which
function made it (the handler, and DIMENSION for the scorers), the service and operation, and the
request parameters IAM authorizes on (bucket, key, version, prefix, table, index, partition key, parameter
name, bus, namespace, model, ...). Values equal to one of the function's environment variables
(BUCKET_NAME, TABLE_NAME, EVENT_BUS_NAME, PRODUCTION_TARGET_PARAMETER, STATE_MACHINE_ARN, ...) are
written as ``${VARIABLE}``: test_iam_evaluation.py fills them from the synthesized template's
environment of that function, so the recorded call is evaluated against the resources the deployed
function would touch. Bodies and other payloads are never recorded.

A handler is attributed from the local engine's dispatcher (``HandlerDispatcher``: the function it
invokes) or, for handler tests that call ``handler(event, context)`` directly, from the call stack (the
innermost ``handlers.<module>`` frame that defines ``handler``). Calls outside a handler (a test's own
setup) are not recorded. The recording is de-duplicated by shape: one example per (function, operation,
resource with its run ids and hashes generalised, partition-key prefix).
"""

from __future__ import annotations

import contextvars
import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
FIXTURE = Path(__file__).resolve().parent / "recorded_calls.json"
ENV_FLAG = "FMQ_IAM_RECORD"

# Parameters IAM decides on (resource names, condition keys); everything else is left out.
SCALAR_PARAMS = (
    "Bucket", "Key", "VersionId", "Prefix", "CopySource", "TableName", "IndexName", "Name", "Namespace", "modelId",
    "stateMachineArn", "executionArn", "QueueUrl", "TopicArn", "FunctionName", "Qualifier", "SecretId",
    "promptIdentifier", "promptVersion", "DeliveryStreamName", "LogGroupName", "AlarmNames", "ScheduleName",
    "GroupName",
)
# Environment variables whose values stand for a deployed resource (longer values only: no "INFO").
_MIN_PLACEHOLDER_VALUE = 3
_SKIP_ENV = {"AWS_DEFAULT_REGION", "AWS_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
             "LOG_LEVEL", "JUDGE", "DIMENSION", "POWERTOOLS_SERVICE_NAME", "PYTHONPATH", "PATH", "HOME", "PWD"}

_FUNCTION: contextvars.ContextVar[tuple[str, str | None] | None] = contextvars.ContextVar("iam_function", default=None)
_LOCK = threading.Lock()
_CALLS: list[dict[str, Any]] = []


# ---- what a call is recorded as --------------------------------------------------------------------


def _partition_keys(operation: str, params: dict[str, Any]) -> list[str] | None:
    """The partition-key values of a DynamoDB request (dynamodb:LeadingKeys), else None."""
    def pk(item: dict[str, Any] | None) -> str | None:
        value = (item or {}).get("pk")
        return value.get("S") if isinstance(value, dict) else value

    if operation in ("GetItem", "DeleteItem", "UpdateItem"):
        return [k for k in [pk(params.get("Key"))] if k]
    if operation == "PutItem":
        return [k for k in [pk(params.get("Item"))] if k]
    if operation == "Query":
        expression = params.get("KeyConditionExpression", "")
        names = params.get("ExpressionAttributeNames", {})
        values = params.get("ExpressionAttributeValues", {})
        for name, value in re.findall(r"(#?\w+)\s*=\s*(:\w+)", expression):
            if names.get(name, name) in ("pk", "gsi1pk"):
                entry = values.get(value)
                return [entry.get("S") if isinstance(entry, dict) else entry]
        return []
    if operation in ("BatchWriteItem", "BatchGetItem"):
        keys = []
        for requests in params.get("RequestItems", {}).values():
            if isinstance(requests, dict):  # BatchGetItem: {"Keys": [...]}
                keys += [pk(k) for k in requests.get("Keys", [])]
            else:
                for request in requests:
                    keys.append(pk((request.get("PutRequest") or {}).get("Item") or (request.get("DeleteRequest") or {}).get("Key")))
        return [k for k in keys if k]
    return None


def _batch_tables(params: dict[str, Any]) -> list[str]:
    return list(params.get("RequestItems", {}))


# When two variables hold the same value (a test's table and bus may share a name), the parameter says
# which one the code meant.
_PARAMETER_HINTS = {"Bucket": "BUCKET", "TableName": "TABLE", "Tables": "TABLE", "EventBusNames": "BUS",
                    "Name": "PARAMETER", "stateMachineArn": "STATE_MACHINE", "TopicArn": "TOPIC", "QueueUrl": "QUEUE",
                    "modelId": "MODEL"}


def _placeholders(value: Any, environment: dict[str, str], parameter: str = "") -> Any:
    if isinstance(value, list):
        return [_placeholders(v, environment, parameter) for v in value]
    if not isinstance(value, str):
        return value
    names = sorted(name for name, env_value in environment.items() if env_value == value)
    if not names:
        return value
    hint = _PARAMETER_HINTS.get(parameter, "")
    hinted = [name for name in names if hint and hint in name]
    return f"${{{(hinted or names)[0]}}}"


def call_record(function: tuple[str, str | None], service: str, operation: str, params: dict[str, Any],
                environment: dict[str, str]) -> dict[str, Any]:
    """The recorded form of one call (see the module docstring)."""
    env = {k: v for k, v in environment.items()
           if k not in _SKIP_ENV and isinstance(v, str) and len(v) >= _MIN_PLACEHOLDER_VALUE}
    recorded: dict[str, Any] = {}
    for name in SCALAR_PARAMS:
        if name in params and isinstance(params[name], (str, list)):
            recorded[name] = _placeholders(params[name], env, name)
    if service == "dynamodb":
        keys = _partition_keys(operation, params)
        if keys is not None:
            recorded["LeadingKeys"] = keys
        if operation in ("BatchWriteItem", "BatchGetItem"):
            recorded["Tables"] = [_placeholders(t, env, "Tables") for t in _batch_tables(params)]
    if service == "events" and operation == "PutEvents":
        recorded["EventBusNames"] = sorted({_placeholders(e.get("EventBusName", "default"), env, "EventBusNames")
                                            for e in params.get("Entries", [])})
    if service == "cloudwatch" and "Namespace" in params:
        recorded["Namespace"] = params["Namespace"]
    handler, dimension = function
    return {"handler": handler, "dimension": dimension, "service": service, "operation": operation,
            "params": recorded}


_RUN_ID = re.compile(r"(runs/|RUN#|REVIEW#|CATALOG#|VERDICT#|DATASET#|dt=|sample-)[^/#]+")


def shape(record: dict[str, Any]) -> str:
    """The de-duplication key: run ids, hashes, days and versions generalised."""
    text = json.dumps({k: v for k, v in record.items() if k != "params"}, sort_keys=True)
    params = {k: v for k, v in record["params"].items() if k != "VersionId"}
    params["has_version"] = "VersionId" in record["params"]
    return text + _RUN_ID.sub(lambda m: m.group(1) + "*", json.dumps(params, sort_keys=True))


# ---- the plugin ----------------------------------------------------------------------------------


# Core functions a handler calls with everything it read from its environment, which handler tests call
# directly (without the handler's environment): the calls inside them are that handler's.
ENTRY_POINTS = {("fmquality.run.watch", "watch_run"): "handlers.watch.handler"}


def _env_models(frame: Any) -> dict[str, str]:
    """Variables of a typed environment model (handlers.env.FunctionEnv and friends) a frame holds, as
    the function's environment would have given them (by alias): a test may build the model itself."""
    found: dict[str, str] = {}
    for value in list(frame.f_locals.values()):
        fields = getattr(type(value), "model_fields", None)
        if fields and type(value).__name__.endswith("Env"):
            for name, info in fields.items():
                if info.alias and isinstance(getattr(value, name, None), str):
                    found[info.alias] = getattr(value, name)
    return found


def _current_function() -> tuple[tuple[str, str | None] | None, dict[str, str]]:
    """The function making the call, and environment variables its frames hold in typed models."""
    extra: dict[str, str] = {}
    function = _FUNCTION.get()
    frame = sys._getframe(2)
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module.startswith("handlers.") or module.startswith("fmquality.run."):
            extra = {**_env_models(frame), **extra}
        if function is None:
            entry = ENTRY_POINTS.get((module, frame.f_code.co_name))
            if entry:
                function = (entry, None)
            elif module.startswith("handlers.") and callable(frame.f_globals.get("handler")):
                from fmquality.config.environment import function_environment

                dimension = function_environment().get("DIMENSION") if module.endswith(".score_dimension") else None
                function = (f"{module}.handler", dimension)
        frame = frame.f_back
    return function, extra


def _install() -> None:
    import botocore.client

    from fmquality.config.environment import function_environment
    from fmquality.engines import inprocess

    original_call = botocore.client.BaseClient._make_api_call

    def recording_call(self, operation_name, api_params):  # noqa: ANN001 - botocore's signature
        function, extra = _current_function()
        if function is not None:
            record = call_record(function, self.meta.service_model.service_name, operation_name,
                                 dict(api_params or {}), {**function_environment(), **extra})
            with _LOCK:
                _CALLS.append(record)
        return original_call(self, operation_name, api_params)

    original_dispatch = inprocess.HandlerDispatcher.__call__

    def dispatch(self, function_name, handler, environment, event):  # noqa: ANN001
        token = _FUNCTION.set((handler, environment.get("DIMENSION") if handler.endswith("score_dimension.handler") else None))
        try:
            return original_dispatch(self, function_name, handler, environment, event)
        finally:
            _FUNCTION.reset(token)

    botocore.client.BaseClient._make_api_call = recording_call
    inprocess.HandlerDispatcher.__call__ = dispatch


def pytest_configure(config) -> None:  # noqa: ANN001
    if os.environ.get(ENV_FLAG):
        _install()


def pytest_sessionfinish(session, exitstatus) -> None:  # noqa: ANN001
    target = os.environ.get(ENV_FLAG)
    if not target:
        return
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    unique: dict[str, dict[str, Any]] = {}
    for record in _CALLS:
        unique.setdefault(shape(record), record)
    Path(f"{target}.{worker}").write_text(json.dumps(list(unique.values())), encoding="utf-8")


# ---- the generator -------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    folders = argv or ["tests/e2e", "tests/integration"]
    out = FIXTURE.with_suffix(".parts")
    for stale in out.parent.glob(out.name + ".*"):
        stale.unlink()
    env = {**os.environ, ENV_FLAG: str(out), "FMQ_SKIP_LAYER_BUNDLING": "1",
           "PYTHONPATH": os.pathsep.join([str(ROOT / "lambdas"), str(ROOT), os.environ.get("PYTHONPATH", "")])}
    status = subprocess.call([sys.executable, "-m", "pytest", "-q", "-n", "2", "-p", "tests.infrastructure.iam.record",
                              *folders], cwd=ROOT, env=env)
    unique: dict[str, dict[str, Any]] = {}
    for part in sorted(out.parent.glob(out.name + ".*")):
        for record in json.loads(part.read_text(encoding="utf-8")):
            unique.setdefault(shape(record), record)
        part.unlink()
    records = sorted(unique.values(), key=lambda r: (r["handler"], r["dimension"] or "", r["service"], r["operation"],
                                                     json.dumps(r["params"], sort_keys=True)))
    FIXTURE.write_text(json.dumps({"generated_by": "python -m tests.infrastructure.iam.record " + " ".join(folders),
                                   "test_status": status, "calls": records}, indent=1, sort_keys=True) + "\n",
                       encoding="utf-8")
    print(f"{len(records)} distinct calls -> {FIXTURE.relative_to(ROOT)} (pytest exit {status})")
    return 0 if status == 0 else status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
