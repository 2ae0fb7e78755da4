"""The targets of a run: resolved once when the run starts, then built per arm where answers are
generated.

``resolve_run_targets`` (Prepare) follows ``ssm:`` once per run, so every item asks the same target even
if the parameter changes meanwhile; what it returns is written to targets.json (``run.layout``).
``arm_target`` (Generate) builds an arm's target from those specs with its own clients. On AWS both
accept only the kinds the deployment allows (``targets.policy``); ``direct_target`` (the direct
engine, on the operator's machine) does not consult the policy.

``check_judge_is_not_generator``: the judge may not grade its own answers. A run whose Bedrock
judge's model is the model a ``bedrock`` target generates with is refused before any item (Prepare,
the direct engine), the two ids compared once normalised (``normalised_model_id``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from fmquality.domain.errors import DatasetRejected, TargetNotConfigured, TargetRejected
from fmquality.run.layout import RunTargets
from fmquality.targets import make_target, resolve_spec
from fmquality.targets.aws import default_client_factory
from fmquality.targets.base import Target, TargetSpec
from fmquality.targets.policy import allowed_target_kinds, check_target_kind
from fmquality.targets.replay import ReadOnlyTarget

if TYPE_CHECKING:
    from fmquality.config.rubric import Rubric

logger = logging.getLogger(__name__)

# Cross-region inference profiles put a geography before the model id ("us.anthropic.claude-…"):
# the same model answers, so the prefix is not part of what is compared.
INFERENCE_PROFILE_PREFIXES = frozenset({"us", "eu", "apac", "global", "us-gov", "jp", "au", "ca", "ap"})


def normalised_model_id(model_id: str) -> str:
    """A model id as compared: lower case, an ARN's last path part, no inference-profile prefix."""
    text = model_id.strip().lower()
    if text.startswith("arn:"):
        text = text.rsplit("/", 1)[-1]
    head, dot, rest = text.partition(".")
    return rest if dot and head in INFERENCE_PROFILE_PREFIXES and "." in rest else text


def generating_model_id(spec: TargetSpec | None, client: Callable[[str], Any] | None) -> str | None:
    """The model a ``bedrock`` target answers with: the spec's model_id, else its bundle's (read
    here); None for other kinds (a chatbot's own model is not known to the gate)."""
    if spec is None or spec.kind != "bedrock":
        return None
    if spec.model_id:
        return spec.model_id
    from fmquality.targets.bedrock_bundle import load_bundle

    try:
        return load_bundle(spec.ref, client or default_client_factory(spec.timeout_s)).bundle.model_id
    except Exception as exc:  # noqa: BLE001 - the check cannot be made: the run does not start
        raise TargetRejected(f"{spec.spec_string()}: cannot read the bundle to compare its model with the "
                             f"judge's: {exc}") from exc


def check_judge_is_not_generator(judge_model_id: str | None, specs: dict[str, TargetSpec | None],
                                 client: Callable[[str], Any] | None = None) -> None:
    """Refuse a run whose judge model generates an arm's answers: DatasetRejected naming both (the
    name a failed Prepare shows and `fmquality run` reads as bad input, exit 2).
    ``specs``: the option or field naming each target ("": named by the caller) -> its spec (resolved:
    no ``ssm:``)."""
    if not judge_model_id:
        return
    for field, spec in specs.items():
        model_id = generating_model_id(spec, client)
        if model_id and normalised_model_id(model_id) == normalised_model_id(judge_model_id):
            raise DatasetRejected(
                f"{field + ': ' if field else ''}the judge model {judge_model_id!r} is the model this target generates with "
                f"({model_id!r}, {spec.spec_string()}): a judge may not grade its own answers; choose "
                "another judge model (--judge-model-id, the rubric's judge.model_id) or another target model")


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
    # A replayed case's answer may call read-side tools only (targets.replay); other cases pass through.
    return ReadOnlyTarget(make_target(spec, client, rubric=rubric))


def direct_target(spec: TargetSpec, rubric: "Rubric", client: Callable[[str], Any] | None = None,
                  judge_model_id: str | None = None) -> Target:
    """The direct engine's target of a spec, ``ssm:`` resolved once for the run. ValueError (bad spec,
    unreadable parameter, the judge's own model: DatasetRejected) and ImportError (a python: module
    that is not there) propagate."""
    client = client or default_client_factory(spec.timeout_s)
    resolved = resolve_spec(spec, client)
    check_judge_is_not_generator(judge_model_id, {"": resolved}, client)  # the caller names the option
    return make_target(resolved, client, rubric=rubric)
