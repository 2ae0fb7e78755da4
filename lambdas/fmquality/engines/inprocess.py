"""The Lambda functions of the local engine, run in this process: ``HandlerDispatcher`` is what
``moto_hooks.route_lambda_invocations`` calls for each Invoke; it runs the handler the function's
configuration names, with that function's environment, and times each role for the stage line.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import os
import threading
import time
import uuid
import warnings
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

REGION = "us-east-1"
ACCOUNT = "123456789012"
FUNCTION_PREFIX = "fmquality-local-"

# Handlers run one at a time: they read their configuration from os.environ, which is process-wide.
_INVOKE_LOCK = threading.Lock()


@dataclass
class FakeContext:
    """What Powertools reads from a Lambda context."""

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
    calls: dict[str, int] = field(default_factory=lambda: defaultdict(int))

    def record(self, role: str, start: float, end: float) -> None:
        self.first.setdefault(role, start)
        self.last[role] = end
        self.calls[role] += 1

    def stages(self) -> dict[str, float]:
        """Seconds of prepare, of evaluate (first scorer or generator call to the last), of aggregate."""
        out = {}
        if "prepare" in self.first:
            out["prepare"] = self.last["prepare"] - self.first["prepare"]
        item_roles = [r for r in self.first if r not in ("prepare", "aggregate")]
        if item_roles:
            out["evaluate"] = max(self.last[r] for r in item_roles) - min(self.first[r] for r in item_roles)
        if "aggregate" in self.first:
            out["aggregate"] = self.last["aggregate"] - self.first["aggregate"]
        return out


class HandlerDispatcher:
    """Runs the handler named in a function's configuration with that function's environment."""

    def __init__(self, on_event: Callable[[str, Any], None] | None = None) -> None:
        self.on_event = on_event
        self.clock = StageClock()

    def __call__(self, function_name: str, handler: str, environment: dict[str, str], event: Any) -> Any:
        role = function_name.removeprefix(FUNCTION_PREFIX)
        module_name, _, attr = handler.rpartition(".")
        with _INVOKE_LOCK:
            # Values are overwritten, keys never removed mid-run: other threads (moto's engine,
            # botocore) iterate os.environ, and a key vanishing under them raises KeyError.
            os.environ.update(environment)
            start = time.perf_counter()
            try:
                # In Lambda, stdout (Powertools' EMF metrics) goes to CloudWatch Logs; locally it is dropped.
                with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    function = getattr(importlib.import_module(module_name), attr)
                    result = function(event, FakeContext(function_name))
            finally:
                self.clock.record(role, start, time.perf_counter())
        if self.on_event:
            self.on_event(role, result)
        return result
