"""The targets of a run: resolved once when the run starts, then built per arm where answers are
generated.

``resolve_run_targets`` (Prepare) follows ``ssm:`` once per run, so every item asks the same target even
if the parameter changes meanwhile; what it returns is written to targets.json (``run.layout``).
``arm_target`` (Generate) builds an arm's target from those specs with its own clients. On AWS both
accept only the kinds the deployment allows (``targets.policy``); ``direct_target`` (the direct
engine, on the operator's machine) does not consult the policy.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from fmquality.domain.errors import TargetNotConfigured, TargetRejected
from fmquality.run.layout import RunTargets
from fmquality.targets import make_target, resolve_spec
from fmquality.targets.aws import default_client_factory
from fmquality.targets.base import Target, TargetSpec
from fmquality.targets.policy import allowed_target_kinds, check_target_kind

if TYPE_CHECKING:
    from fmquality.config.rubric import Rubric

logger = logging.getLogger(__name__)


def _resolve(field: str, spec: TargetSpec, allowed: frozenset[str], client: Callable[[str], Any] | None) -> TargetSpec:
    """``ssm:<parameter>`` becomes the spec the parameter holds; other specs are kept as given. A kind
    the deployment does not allow fails here, before any item, with TargetKindRefused."""
    check_target_kind(spec, allowed, field)
    if spec.kind != "ssm":
        return spec
    try:
        resolved = resolve_spec(spec, client)
    except Exception as exc:  # noqa: BLE001 - any failure is reported naming the field and the parameter
        raise TargetRejected(f"{field}: cannot resolve {spec.spec_string()}: {exc}") from exc
    check_target_kind(resolved, allowed, field)
    logger.info("target %s resolved from %s to %s", field, spec.spec_string(), resolved.spec_string())
    return resolved


def resolve_run_targets(candidate: TargetSpec | None, control: TargetSpec | None,
                        client: Callable[[str], Any] | None) -> RunTargets:
    """The run's targets as targets.json records them: the candidate (default: the recorded answers) and
    the control, resolved, with the ``ssm:`` parameter each came from."""
    allowed = allowed_target_kinds()
    requested = {"candidate": candidate or TargetSpec.parse(None), "control": control}
    fields = {"candidate": "target", "control": "control"}
    specs = {arm: _resolve(fields[arm], spec, allowed, client) if spec is not None else None
             for arm, spec in requested.items()}
    resolved_from = {arm: spec.spec_string() if spec is not None and spec.kind == "ssm" else None
                     for arm, spec in requested.items()}
    return RunTargets(specs=specs, resolved_from=resolved_from)


def arm_target(targets: RunTargets, arm: str, rubric: "Rubric | None", where: str) -> Target:
    """The target answering ``arm``, with its own clients (its timeout, one attempt per call: ``generate``
    owns the retries). The allowed kinds are read on every build: the deployment's setting, never the
    input's. ``where`` names the run's targets in the error of an arm it has none for."""
    spec = targets.specs.get(arm)
    if spec is None:
        raise TargetNotConfigured(f"{where} has no {arm} target")
    allowed = allowed_target_kinds()
    field = "target" if arm == "candidate" else arm
    check_target_kind(spec, allowed, field)
    client = default_client_factory(spec.timeout_s)
    if spec.kind == "ssm":  # Prepare resolves ssm: specs; one that reaches here is checked once resolved
        spec = resolve_spec(spec, client)
        check_target_kind(spec, allowed, field)
    return make_target(spec, client, rubric=rubric)


def direct_target(spec: TargetSpec, rubric: "Rubric", client: Callable[[str], Any] | None = None) -> Target:
    """The direct engine's target of a spec, ``ssm:`` resolved once for the run. ValueError (bad spec,
    unreadable parameter) and ImportError (a python: module that is not there) propagate."""
    client = client or default_client_factory(spec.timeout_s)
    return make_target(resolve_spec(spec, client), client, rubric=rubric)
