"""Where a Lambda function's variables come from.

In Lambda a process serves one function, one invocation at a time: its variables are ``os.environ``.
The local engine runs many functions' invocations at once in one process (moto's Map iterations on
threads), so each invocation carries its own mapping in a context variable for the duration of the
call (``invocation_environment``) and no invocation sees another's ``DIMENSION``; nothing process-wide
is swapped, so no lock is needed.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from contextvars import ContextVar

_INVOCATION_ENVIRONMENT: ContextVar[Mapping[str, str] | None] = ContextVar("invocation_environment", default=None)


@contextlib.contextmanager
def invocation_environment(environment: Mapping[str, str]) -> Iterator[None]:
    """The variables of the function being invoked, for this call (this thread or task) only; the
    process's variables (credentials, region) show through where the function sets none."""
    token = _INVOCATION_ENVIRONMENT.set({**os.environ, **environment})
    try:
        yield
    finally:
        _INVOCATION_ENVIRONMENT.reset(token)


def function_environment() -> Mapping[str, str]:
    """The invoked function's variables: the invocation's own when set, else the process's."""
    environment = _INVOCATION_ENVIRONMENT.get()
    return os.environ if environment is None else environment
