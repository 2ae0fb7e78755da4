"""The two places where the local engine reaches into moto's internals. Both are small on purpose.

* ``route_lambda_invocations``: moto's docker-less Lambda backend answers every ``Invoke`` with a canned
  payload; we replace its ``invoke`` so a Step Functions task runs our real handler in-process.
* ``compressed_retry_waits``: moto's Step Functions engine really sleeps for a Retry's interval; tests
  shrink those sleeps so a retried item does not cost seconds.

moto is pinned in requirements-dev.txt. ``check_moto_compatibility`` fails loudly (and a test calls it)
if an upgrade moves either attribute, instead of the local engine silently returning canned payloads.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import time
import types
from collections.abc import Callable, Iterator
from typing import Any
from fmquality.domain.errors import MotoHookError

# (function name, handler string, environment, event) -> payload dict; raising = a function error.
Dispatch = Callable[[str, str, dict[str, str], Any], Any]

EXPECTED_INVOKE_PARAMETERS = ["self", "function_name", "qualifier", "body", "headers", "response_headers"]


def _simple_backend_class():
    try:
        from moto.awslambda_simple.models import LambdaSimpleBackend
    except ImportError as exc:  # pragma: no cover - only on an incompatible moto
        raise MotoHookError(f"moto.awslambda_simple.models.LambdaSimpleBackend is gone: {exc}") from exc
    return LambdaSimpleBackend


def _retrier_module():
    try:
        from moto.stepfunctions.parser.asl.component.common.retry import retrier_decl
    except ImportError as exc:  # pragma: no cover
        raise MotoHookError(f"moto's Step Functions retrier module moved: {exc}") from exc
    return retrier_decl


def check_moto_compatibility() -> None:
    backend = _simple_backend_class()
    params = list(inspect.signature(backend.invoke).parameters)
    if params != EXPECTED_INVOKE_PARAMETERS:
        raise MotoHookError(f"LambdaSimpleBackend.invoke{params} is not {EXPECTED_INVOKE_PARAMETERS}: "
                            "update fmquality/engines/moto_hooks.py for this moto version")
    if not hasattr(backend, "get_function"):
        raise MotoHookError("LambdaSimpleBackend.get_function is gone")
    if getattr(_retrier_module(), "time", None) is not time:
        raise MotoHookError("moto's retrier no longer sleeps through the time module")


@contextlib.contextmanager
def route_lambda_invocations(dispatch: Dispatch) -> Iterator[None]:
    """While active, every Lambda Invoke in moto runs ``dispatch`` with the function's configuration.
    An exception becomes an unhandled function error whose ``errorType`` is the exception's class name,
    which is what Step Functions matches in Retry and Catch."""
    check_moto_compatibility()
    backend = _simple_backend_class()
    original = backend.invoke

    def invoke(self, function_name, qualifier, body, headers, response_headers):
        fn = self.get_function(function_name, qualifier)
        environment = dict((fn.environment_vars or {}) if hasattr(fn, "environment_vars") else {})
        event = json.loads(body) if body else {}
        try:
            result = dispatch(fn.function_name, fn.handler, environment, event)
        except Exception as exc:  # noqa: BLE001 - reported to the state machine as the function's error
            response_headers["x-amz-function-error"] = "Unhandled"
            return json.dumps({"errorType": type(exc).__name__, "errorMessage": str(exc)[:4000]}).encode()
        return json.dumps(result).encode()

    backend.invoke = invoke
    try:
        yield
    finally:
        backend.invoke = original


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
