"""Which target kinds a deployment accepts.

A target spec comes from an execution input, which anyone allowed to start the state machine writes.
``python:<module>:<function>`` imports and runs code in the Lambda's own process: fine on a laptop
and in tests, never from an execution input on AWS. So the functions that build targets (Prepare,
Generate) accept only the kinds their environment allows:

  ``ALLOWED_TARGET_KINDS``  comma-separated names among ``recorded, bedrock, lambda, http, https,
                            python`` (``http`` is a plain ``http://`` URL, ``https`` an ``https://`` one)

Unset or empty, the default is ``recorded, bedrock, lambda, http, https``, plus ``python`` only on
the local engine (``ENGINE_NAME=stepfunctions-local``, and not inside a real Lambda runtime). An
``ssm:`` spec is an indirection: what it resolves to is checked. The direct engine (``fmquality run
--engine direct``) runs on the operator's machine and does not consult this.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from fmquality.config.environment import function_environment
from fmquality.targets.base import TargetSpec
from fmquality.domain.errors import TargetKindRefused

ALLOWED_KINDS_ENV = "ALLOWED_TARGET_KINDS"
KIND_NAMES = ("recorded", "bedrock", "lambda", "http", "https", "python")
DEFAULT_ALLOWED = frozenset({"recorded", "bedrock", "lambda", "http", "https"})
LOCAL_ENGINE = "stepfunctions-local"


def allowed_target_kinds(environ: Mapping[str, str] | None = None) -> frozenset[str]:
    """The kinds the environment allows. ValueError names an unknown kind in ``ALLOWED_TARGET_KINDS``
    (a typo must not silently allow nothing, or everything)."""
    env = function_environment() if environ is None else environ
    raw = (env.get(ALLOWED_KINDS_ENV) or "").strip()
    if raw:
        kinds = {k.strip().lower() for k in raw.split(",") if k.strip()}
        unknown = sorted(kinds - set(KIND_NAMES))
        if unknown:
            raise ValueError(f"{ALLOWED_KINDS_ENV}: unknown target kind(s) {unknown}; expected some of "
                             f"{list(KIND_NAMES)}")
        return frozenset(kinds)
    # The local engine runs the handlers in this process, where python: targets are the test doubles.
    # A real Lambda runtime (AWS_EXECUTION_ENV=AWS_Lambda_…) never gets that exemption.
    in_lambda = (env.get("AWS_EXECUTION_ENV") or os.environ.get("AWS_EXECUTION_ENV") or "").startswith("AWS_Lambda")
    if env.get("ENGINE_NAME") == LOCAL_ENGINE and not in_lambda:
        return DEFAULT_ALLOWED | {"python"}
    return DEFAULT_ALLOWED


def kind_name(spec: TargetSpec) -> str:
    """The name ``ALLOWED_TARGET_KINDS`` uses for the spec's kind (``http`` or ``https`` by scheme)."""
    if spec.kind == "http":
        return "https" if spec.ref.lower().startswith("https://") else "http"
    return spec.kind


def check_target_kind(spec: TargetSpec, allowed: frozenset[str], where: str = "target") -> None:
    """Raise TargetKindRefused when ``spec`` is of a kind ``allowed`` does not hold. ``ssm:`` passes:
    check the spec it resolves to."""
    if spec.kind == "ssm":
        return
    name = kind_name(spec)
    if name not in allowed:
        raise TargetKindRefused(
            f"{where}: {name} targets are not allowed in this deployment ({spec.spec_string()}); allowed: "
            f"{', '.join(sorted(allowed)) or 'none'} (environment variable {ALLOWED_KINDS_ENV})")
