"""Generate: ask the target of the item's arm for the answer, before the item is scored.

The target's own retries (backoff with full jitter) run inside ``fmquality.run.generate.generate``; a
generation that still failed comes back as a Generation with ``error`` set, which this handler turns
into ``error`` on its output so the state machine records the item as an error, never a score.

The output is the Map item's state with ``item.response`` and ``generation`` filled in: the ASL uses
it as the state (OutputPath), so keys this handler does not read are returned unchanged.

Only the target kinds the deployment allows are built (``ALLOWED_TARGET_KINDS``, see
``fmquality.targets.policy``; ``python:`` never on AWS by default; ``run.targets.arm_target``): any
other raises ``TargetKindRefused``, which the Map's Catch records as the item's error. An answer the
target did not finish comes back as ``GenerationIncomplete`` when the run's rubric fails such answers.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from fmquality.domain.results import Generation
from fmquality.run.generate import generate, incomplete_error
from fmquality.run.layout import is_case_stub
from handlers import resolved_item, target_for
from handlers.events import GenerateEvent

logger = Logger()
tracer = Tracer()
# service="" as for the judge metrics: published without dimensions, one alarm covers the function.
metrics = Metrics(service="")

GENERATION_FAILED = "GenerationFailed"
GENERATION_INCOMPLETE = "GenerationIncomplete"
TARGET_UNAVAILABLE = "TargetUnavailable"


def _record_metrics(generation: Generation) -> None:
    metrics.add_metric(name="GenerationErrors", unit=MetricUnit.Count, value=1 if generation.error else 0)
    if generation.stop_reason is not None:
        metrics.add_metric(name="GenerationIncomplete", unit=MetricUnit.Count,
                           value=1 if incomplete_error(generation) else 0)
    if generation.latency_ms is not None:
        metrics.add_metric(name="GenerationLatencyMs", unit=MetricUnit.Milliseconds, value=generation.latency_ms)
    metrics.add_metric(name="GenerationInputTokens", unit=MetricUnit.Count, value=generation.usage.input_tokens)
    metrics.add_metric(name="GenerationOutputTokens", unit=MetricUnit.Count, value=generation.usage.output_tokens)


def failure_cause(generation: Generation) -> str:
    if incomplete_error(generation):
        return f"{generation.error} ({generation.target_kind} target {generation.target_id})"
    return (f"{generation.target_kind} target {generation.target_id} gave no answer after "
            f"{generation.attempts} attempt(s): {generation.error}")


@tracer.capture_method
def generate_item(event: GenerateEvent) -> dict[str, Any]:
    logger.append_keys(run_id=event.run_id, test_id=event.item.test_id, arm=event.arm)
    target = target_for(event.bucket, event.targets_key, event.arm, (event.model_extra or {}).get("rubric_key"))
    case, generation = generate(event.item, target)
    # What is scored is exactly what the target answered: nothing when it failed.
    case = case.model_copy(update={"response": generation.response if not generation.error else None})
    _record_metrics(generation)
    out = {**event.model_dump(mode="json"), "item": case.model_dump(mode="json"),
           "generation": generation.model_dump(mode="json")}
    if generation.error:
        incomplete = incomplete_error(generation)
        logger.warning("generation incomplete" if incomplete else "generation failed after its retries",
                       extra={"error": generation.error, "attempts": generation.attempts,
                              "stop_reason": generation.stop_reason})
        # The shape a Catch gives, so RecordItemError reads it the same way. A target that is down or
        # uncallable is named TargetUnavailable: the ASL records the item and fails its child by that name.
        name = GENERATION_INCOMPLETE if incomplete else TARGET_UNAVAILABLE if generation.unavailable else GENERATION_FAILED
        out["error"] = {"Error": name, "Cause": failure_cause(generation)}
    return out


@logger.inject_lambda_context(log_event=False, clear_state=True)
@metrics.log_metrics
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    stub = event.get("item") if is_case_stub(event.get("item")) else None
    out = generate_item(GenerateEvent.model_validate(resolved_item(event)))
    # The answer once in the state (domain.payload): for a case stub in the generation record (the handlers
    # set it as the stub's response), else in the item (Composite puts it back in the generation record).
    if stub is not None:
        return {**out, "item": stub}
    if not out["generation"].get("error"):
        out["generation"] = {**out["generation"], "response": None}
    return out
