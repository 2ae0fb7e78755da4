"""Targets that produce the answers a run scores (see ``targets.base`` for the spec grammar).

``resolve_spec`` follows ``ssm:`` indirection once per run; ``make_target`` builds the target of a
spec. Both take ``client(service_name) -> boto3 client`` (injected; by default boto3 clients are
created on first use, never at import).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from fmquality.targets.aws import ClientFactory, default_client_factory, target_error
from fmquality.targets.base import RECORDED, Target, TargetReply, TargetRequest, TargetSpec, request_for
from fmquality.domain.errors import TargetError
from fmquality.domain.errors import TargetKindRefused
from fmquality.targets.policy import allowed_target_kinds, check_target_kind

if TYPE_CHECKING:
    from fmquality.config.rubric import Rubric

MAX_SSM_HOPS = 3

__all__ = ["MAX_SSM_HOPS", "RECORDED", "Target", "TargetError", "TargetKindRefused", "TargetReply",
           "TargetRequest", "TargetSpec", "allowed_target_kinds", "check_target_kind", "make_target", "request_for",
           "resolve_spec"]


def resolve_spec(spec: TargetSpec, client: ClientFactory | None = None) -> TargetSpec:
    """The spec an ``ssm:<name>`` spec points at: the parameter's value is a spec string or a JSON
    object (``{"spec": …, options}``), itself possibly ``ssm:`` (at most 3 hops). Options given on the
    outer spec win over the parameter's (a run may cap concurrency of the production target). Any
    other spec is returned as is. ValueError names the parameter and the problem."""
    if spec.kind != "ssm":
        return spec
    if client is None:
        client = default_client_factory(spec.timeout_s)
    overrides = {k: getattr(spec, k) for k in spec.model_fields_set - {"kind", "ref"}}
    seen: list[str] = []
    current = spec
    while current.kind == "ssm":
        if current.ref in seen:
            raise ValueError(f"target ssm:{current.ref}: parameters point at each other ({' -> '.join(seen)})")
        if len(seen) == MAX_SSM_HOPS:
            raise ValueError(f"target ssm:{seen[0]}: more than {MAX_SSM_HOPS} ssm: hops ({' -> '.join(seen)} -> "
                             f"{current.ref})")
        seen.append(current.ref)
        value = _parameter_value(current.ref, client)
        try:
            current = TargetSpec.parse(_spec_value(value))
        except ValueError as exc:
            raise ValueError(f"target ssm:{current.ref}: the parameter's value is not a target spec: {exc}") from exc
    return current.model_copy(update=overrides) if overrides else current


def _parameter_value(name: str, client: ClientFactory) -> str:
    try:
        return client("ssm").get_parameter(Name=name, WithDecryption=True)["Parameter"]["Value"]
    except Exception as exc:  # noqa: BLE001 - the run cannot start without knowing its target
        raise ValueError(f"target ssm:{name}: {target_error(exc, 'GetParameter')}") from exc


def _spec_value(value: str) -> str | dict[str, Any]:
    text = value.strip()
    if text.startswith("{"):
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("expected a JSON object")
        return data
    return text


def make_target(spec: TargetSpec, client: ClientFactory | None = None, *, rubric: "Rubric | None" = None,
                allowed_kinds: frozenset[str] | None = None) -> Target:
    """The target of ``spec`` (an ``ssm:`` spec is resolved first). ``rubric`` prices Bedrock answers
    with its ``judge.prices`` and says which stop reasons make an answer incomplete
    (``generation``; kept on the target as ``generation_rules`` for ``generate``). ``allowed_kinds``
    (a deployment's ``targets.policy``; None: any) refuses other kinds with TargetKindRefused, the
    spec an ``ssm:`` parameter holds included. ValueError when the target cannot be built (bad
    bundle, unknown function, missing headers): a run should stop before its first case."""
    if allowed_kinds is not None:
        check_target_kind(spec, allowed_kinds)
    if spec.kind == "ssm":
        spec = resolve_spec(spec, client)
        if allowed_kinds is not None:
            check_target_kind(spec, allowed_kinds)
    target = _build(spec, client, rubric)
    if rubric is not None:
        target.generation_rules = rubric.generation  # type: ignore[attr-defined]
    return target


def _build(spec: TargetSpec, client: ClientFactory | None, rubric: "Rubric | None") -> Target:
    if spec.kind == "recorded":
        from fmquality.targets.recorded import RecordedTarget

        return RecordedTarget(spec)
    if spec.kind == "http":
        from fmquality.targets.http_endpoint import HttpTarget

        return HttpTarget(spec, client)
    if spec.kind == "python":
        from fmquality.targets.python_function import PythonTarget

        return PythonTarget(spec)
    if spec.kind == "lambda":
        from fmquality.targets.lambda_function import LambdaTarget

        return LambdaTarget(spec, client)
    if spec.kind == "bedrock":
        from fmquality.targets.bedrock import BedrockTarget

        return BedrockTarget(spec, client, price_for=rubric.judge.price_for if rubric is not None else None)
    raise ValueError(f"unknown target kind {spec.kind!r}")
