"""The places where the local engine reaches into moto's internals. All are small on purpose.

* ``route_lambda_invocations``: moto's docker-less Lambda backend answers every ``Invoke`` with a canned
  payload; we replace its ``invoke`` so an Invoke runs our real handler in-process. A Step Functions
  task's Invoke takes a shorter way: moto's interpreter builds a new boto3 client for every task and
  sends the call through botocore and moto's request dispatch (most of the engine's time, and all of
  it under moto's backend lock); its ``boto_client_for`` is replaced, for Lambda only, by
  ``_InProcessLambdaClient``, which answers ``invoke`` the way the Lambda API does (a payload stream,
  ``FunctionError`` on an error) by calling the same dispatch, with the function's configuration read
  from moto once per function.
* ``parsed_json_paths_kept``: moto's interpreter parses a state's JSONPath again at every evaluation
  (building a new parser each time); the parse is a pure function of the path, so it is kept.
* ``compressed_retry_waits``: moto's Step Functions engine really sleeps for a Retry's interval; tests
  shrink those sleeps so a retried item does not cost seconds.
* ``batch_tasks_left_out``: moto's interpreter imports every service integration it knows; its Batch
  one imports moto's Batch and EC2 models, which load EC2's region and instance-type catalogs (0.5 s
  of every local run). Our definition has no Batch task, so a stand-in takes that module's place.

moto is pinned in requirements-dev.txt. ``check_moto_compatibility`` fails loudly (and a test calls it)
if an upgrade moves either attribute, instead of the local engine silently returning canned payloads.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import inspect
import io
import json
import sys
import time
import types
from collections.abc import Callable, Iterator
from typing import Any
from fmquality.domain.errors import MotoHookError

# (function name, handler string, environment, event) -> payload dict; raising = a function error.
Dispatch = Callable[[str, str, dict[str, str], Any], Any]

EXPECTED_INVOKE_PARAMETERS = ["self", "function_name", "qualifier", "body", "headers", "response_headers"]


def _moto_part(module: str, what: str, attribute: str | None = None) -> Any:
    """A module of moto's (or one of its attributes) the hooks patch; MotoHookError naming ``what`` when
    an upgrade moved it."""
    try:
        found = importlib.import_module(module)
        return getattr(found, attribute) if attribute else found
    except (ImportError, AttributeError) as exc:  # pragma: no cover - only on an incompatible moto
        raise MotoHookError(f"{what} moved or is gone: {exc}") from exc


def _simple_backend_class():
    return _moto_part("moto.awslambda_simple.models", "moto's docker-less Lambda backend", "LambdaSimpleBackend")


def _lambda_eval_module():
    return _moto_part("moto.stepfunctions.parser.asl.component.state.exec.state_task.lambda_eval_utils",
                      "moto's Step Functions Lambda task module")


def _json_path_module():
    return _moto_part("moto.stepfunctions.parser.asl.utils.json_path", "moto's Step Functions JSONPath module")


def _retrier_module():
    return _moto_part("moto.stepfunctions.parser.asl.component.common.retry.retrier_decl",
                      "moto's Step Functions retrier module")


_BATCH_TASKS = "moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_batch"


def batch_tasks_left_out() -> None:
    """Put a stand-in for moto's Step Functions Batch integration in its place, before moto's
    interpreter is imported (nothing changes once moto's own is loaded). The stand-in's task refuses
    to run, so a definition with a Batch task fails loudly instead of running without it."""
    if _BATCH_TASKS in sys.modules:
        return

    class StateTaskServiceBatch:  # the name moto's task factory imports
        def __init__(self, *_args: Any, **_kwargs: Any) -> None:
            raise MotoHookError("the local engine leaves out moto's Batch task integration "
                                "(fmquality/engines/moto_hooks.py): a Batch task cannot run locally")

    stand_in = types.ModuleType(_BATCH_TASKS)
    stand_in.StateTaskServiceBatch = StateTaskServiceBatch  # type: ignore[attr-defined]
    sys.modules[_BATCH_TASKS] = stand_in


def check_moto_compatibility() -> None:
    backend = _simple_backend_class()
    params = list(inspect.signature(backend.invoke).parameters)
    if params != EXPECTED_INVOKE_PARAMETERS:
        raise MotoHookError(f"LambdaSimpleBackend.invoke{params} is not {EXPECTED_INVOKE_PARAMETERS}: "
                            "update fmquality/engines/moto_hooks.py for this moto version")
    if not hasattr(backend, "get_function"):
        raise MotoHookError("LambdaSimpleBackend.get_function is gone")
    if not callable(getattr(_lambda_eval_module(), "boto_client_for", None)):
        raise MotoHookError("moto's Step Functions Lambda tasks no longer build their client with boto_client_for")
    if not callable(getattr(_json_path_module(), "parse", None)):
        raise MotoHookError("moto's Step Functions JSONPath module no longer calls parse")
    if getattr(_retrier_module(), "time", None) is not time:
        raise MotoHookError("moto's retrier no longer sleeps through the time module")


def _function_error(exc: Exception) -> bytes:
    return json.dumps({"errorType": type(exc).__name__, "errorMessage": str(exc)[:4000]}).encode()


def _configuration(fn: Any) -> tuple[str, str, dict[str, str]]:
    """(function name, handler, environment) of a moto Lambda function."""
    return fn.function_name, fn.handler, dict(getattr(fn, "environment_vars", None) or {})


class _InProcessLambdaClient:
    """What a Step Functions Lambda task calls ``invoke`` on: the dispatch, without botocore and moto's
    request handling in between."""

    def __init__(self, dispatch: Dispatch, backend_for: Callable[[str], Any]) -> None:
        self.dispatch, self.backend_for = dispatch, backend_for
        self.functions: dict[str, tuple[str, str, dict[str, str]]] = {}

    def invoke(self, FunctionName: str, Payload: Any = None, **_ignored: Any) -> dict[str, Any]:  # noqa: N803 - the API's
        if FunctionName not in self.functions:
            self.functions[FunctionName] = _configuration(self.backend_for(FunctionName).get_function(FunctionName))
        name, handler, environment = self.functions[FunctionName]
        event = json.loads(Payload) if isinstance(Payload, (str, bytes)) and Payload else (Payload or {})
        response: dict[str, Any] = {"StatusCode": 200, "ExecutedVersion": "$LATEST"}
        try:
            body = json.dumps(self.dispatch(name, handler, environment, event)).encode()
        except Exception as exc:  # noqa: BLE001 - reported to the state machine as the function's error
            body, response["FunctionError"] = _function_error(exc), "Unhandled"
        return {**response, "Payload": io.BytesIO(body)}


@contextlib.contextmanager
def route_lambda_invocations(dispatch: Dispatch, account_id: str, region: str) -> Iterator[None]:
    """While active, every Lambda Invoke in moto runs ``dispatch`` with the function's configuration.
    An exception becomes an unhandled function error whose ``errorType`` is the exception's class name,
    which is what Step Functions matches in Retry and Catch."""
    batch_tasks_left_out()  # before the check imports moto's interpreter
    check_moto_compatibility()
    backend = _simple_backend_class()
    original = backend.invoke

    def invoke(self, function_name, qualifier, body, headers, response_headers):
        name, handler, environment = _configuration(self.get_function(function_name, qualifier))
        event = json.loads(body) if body else {}
        try:
            result = dispatch(name, handler, environment, event)
        except Exception as exc:  # noqa: BLE001 - reported to the state machine as the function's error
            response_headers["x-amz-function-error"] = "Unhandled"
            return _function_error(exc)
        return json.dumps(result).encode()

    from moto.awslambda.utils import get_backend

    tasks = _lambda_eval_module()
    original_client_for = tasks.boto_client_for
    lambda_client = _InProcessLambdaClient(dispatch, lambda _arn: get_backend(account_id, region))

    def client_for(region: str, service: str, state_credentials: Any = None) -> Any:
        if service == "lambda":
            return lambda_client
        return original_client_for(region=region, service=service, state_credentials=state_credentials)

    backend.invoke, tasks.boto_client_for = invoke, client_for
    try:
        yield
    finally:
        backend.invoke, tasks.boto_client_for = original, original_client_for


@contextlib.contextmanager
def parsed_json_paths_kept(max_paths: int = 4096) -> Iterator[None]:
    """While active, each distinct JSONPath is parsed once (the definition has a few dozen)."""
    module = _json_path_module()
    original = module.parse
    module.parse = functools.lru_cache(maxsize=max_paths)(original)
    try:
        yield
    finally:
        module.parse = original


@contextlib.contextmanager
def compressed_retry_waits(max_wait_s: float = 0.01) -> Iterator[None]:
    """Cap every Retry wait of moto's engine at ``max_wait_s`` (tests only; the ASL is unchanged)."""
    module = _retrier_module()
    original = module.time
    module.time = types.SimpleNamespace(**{**vars(time), "sleep": lambda s: time.sleep(min(s, max_wait_s))})
    try:
        yield
    finally:
        module.time = original
