"""The Lambda functions of the local engine, run in this process: ``HandlerDispatcher`` is what
``moto_hooks.route_lambda_invocations`` calls for each Invoke; it runs the handler the function's
configuration names, with that function's environment, and times each role for the stage line.

Invocations run at once, on moto's Map and Parallel threads, as Lambda runs them in separate
environments: each gets its function's variables for the call only
(``fmquality.config.environment.invocation_environment``), and what it prints (Powertools' log lines,
CloudWatch Logs' in Lambda) is dropped by ``handler_output_dropped``, which lets every other thread's
output through. Nothing process-wide changes per call, so there is no lock.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import sys
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from fmquality.config.environment import invocation_environment

REGION = "us-east-1"
ACCOUNT = "123456789012"
FUNCTION_PREFIX = "fmquality-local-"

_IN_HANDLER: ContextVar[bool] = ContextVar("in_handler", default=False)


class _HandlerOutputFilter(io.TextIOBase):
    """sys.stdout while the local engine runs: drops what a handler writes, passes everything else."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        return len(text) if _IN_HANDLER.get() else self.stream.write(text)

    def flush(self) -> None:
        self.stream.flush()

    def __getattr__(self, name: str) -> Any:  # isatty, encoding, fileno: the real stream's
        return getattr(self.stream, name)


@contextlib.contextmanager
def handler_output_dropped() -> Iterator[None]:
    """For the run: handlers' stdout goes nowhere (in Lambda it is CloudWatch Logs'), the CLI's reaches
    the terminal."""
    original = sys.stdout
    sys.stdout = _HandlerOutputFilter(original)
    try:
        yield
    finally:
        sys.stdout = original


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
        self._clock_lock = threading.Lock()  # the stage clock's counters, updated from many threads

    def __call__(self, function_name: str, handler: str, environment: dict[str, str], event: Any) -> Any:
        role = function_name.removeprefix(FUNCTION_PREFIX)
        module_name, _, attr = handler.rpartition(".")
        function = getattr(importlib.import_module(module_name), attr)
        start = time.perf_counter()
        token = _IN_HANDLER.set(True)
        try:
            with invocation_environment(environment):
                result = function(event, FakeContext(function_name))
        finally:
            _IN_HANDLER.reset(token)
            with self._clock_lock:
                self.clock.record(role, start, time.perf_counter())
        if self.on_event:
            with self._clock_lock:  # progress counts, from many threads
                self.on_event(role, result)
        return result
