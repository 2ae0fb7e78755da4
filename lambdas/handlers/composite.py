"""Composite: weigh the dimension scores (one per profile dimension) of one item, decide pass/fail, record the result.
With ``"mode": "error"`` (the Map's Catch) it records an explicit error result instead."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Tracer
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import ValidationError

from fmquality.adapters.dynamodb import EvaluationTable
from fmquality.scoring.composite import combine, error_result
from fmquality.domain.results import EvaluationResult, Generation
from handlers import aws_client, resolved_item, run_rubric
from handlers.env import FunctionEnv, load_env
from handlers.events import CompositeErrorEvent, CompositeEvent, parse_composite_event

logger = Logger()
tracer = Tracer()


def summary(result: EvaluationResult) -> dict[str, Any]:
    """What the Map collects per item: small, the full result lives in DynamoDB."""
    return {"test_id": result.test_id, "arm": result.arm, "status": result.status, "passed": result.passed,
            "composite_score": result.composite_score}


def _generation_or_none(raw: dict[str, Any] | None) -> Generation | None:
    """The error record keeps the generation when it is readable; a malformed one is logged, not fatal."""
    if raw is None:
        return None
    try:
        return Generation.model_validate(raw)
    except ValidationError as exc:
        logger.warning("unreadable generation record left off the error record", extra={"error": str(exc)[:500]})
        return None


def _with_answer(generation: Generation | None, response: str | None) -> Generation | None:
    """The generation record with its answer: Generate leaves it out of the state when the item carries
    it (the answer once per state, ``domain.payload``)."""
    if generation is None or generation.error or generation.response is not None:
        return generation
    return generation.model_copy(update={"response": response})


@tracer.capture_method
def record(event: CompositeEvent | CompositeErrorEvent, table: EvaluationTable) -> EvaluationResult:
    rubric = run_rubric(event.bucket, event.rubric_key)
    if isinstance(event, CompositeErrorEvent):
        generation = _with_answer(_generation_or_none(event.generation), event.item.get("response"))
        result = error_result(event.item, rubric, event.error.describe(), run_id=event.run_id)
        result = result.model_copy(update={"arm": event.arm, "generation": generation})
        logger.warning("item recorded as an error", extra={"test_id": result.test_id, "arm": event.arm,
                                                           "error": result.error})
    else:
        event.check_dimensions(rubric.dimensions)
        result = combine(event.item, rubric, event.scores_by_dimension(), run_id=event.run_id)
        result = result.model_copy(update={"arm": event.arm, "generation": _with_answer(event.generation,
                                                                                       event.item.response)})
    table.put_result(event.run_id, result)
    return result


@logger.inject_lambda_context(log_event=False, clear_state=True)
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    env = load_env(FunctionEnv)
    parsed = parse_composite_event(resolved_item(event))
    return summary(record(parsed, EvaluationTable(env.table_name, aws_client("dynamodb"))))
