"""The ``python:<module>:<function>`` target: a function in this process (local runs, tests, demos).

The function receives the TargetRequest as a dict and returns a TargetReply-shaped dict or the
answer as a str. A TargetError it raises is kept as is; a TimeoutError is retryable; any other
exception is a final failure of that case."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from fmquality.domain.case import TestCase
from fmquality.domain.errors import TargetError
from fmquality.targets.base import TargetReply, TargetSpec, request_for
from fmquality.targets.http_endpoint import reply_from_object


def load_function(ref: str) -> Callable[[dict[str, Any]], Any]:
    module_name, _, function_name = ref.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        # A missing module is "the run could not be done" (exit 3), not a malformed spec.
        raise ImportError(f"python target: cannot import {module_name}: {exc}") from exc
    function = getattr(module, function_name, None)
    if not callable(function):
        raise ValueError(f"python target: {module_name} has no function {function_name}")
    return function


class PythonTarget:
    def __init__(self, spec: TargetSpec, function: Callable[[dict[str, Any]], Any] | None = None) -> None:
        self.spec = spec
        self._function = function or load_function(spec.ref)
        # Imported already by load_function: this only reads the module's version, if it declares one.
        module = importlib.import_module(spec.ref.partition(":")[0]) if function is None else None
        self._version = getattr(module, "__version__", None)

    @property
    def id(self) -> str:
        return self.spec.spec_string()

    @property
    def version(self) -> str | None:
        """The module's ``__version__`` when it has one."""
        return self._version if isinstance(self._version, str) else None

    def answer(self, case: TestCase) -> TargetReply:
        try:
            value = self._function(request_for(case).model_dump(mode="json"))
        except TargetError:
            raise
        except TimeoutError as exc:
            raise TargetError(f"timed out: {exc}", retryable=True) from exc
        except ConnectionError as exc:  # the chatbot behind the function cannot be reached: it is down
            raise TargetError(f"python target raised {type(exc).__name__}: {exc}", unavailable=True) from exc
        except Exception as exc:  # noqa: BLE001 - the function's bug ends this case, not the run
            raise TargetError(f"python target raised {type(exc).__name__}: {exc}") from exc
        if isinstance(value, str):
            return TargetReply(response=value)
        return reply_from_object(value, "python")
