"""ScoreCase: every dimension of one item with ONE combined judge call (the run's judge mode "combined"),
then the item's composite and result, recorded as Composite records them.

Each dimension's checks run as in the per-dimension scorers; the sub-scores they left open go to the
judge in one request and are split back per dimension (``fmquality.scoring.case.score_dimensions``):
one DimensionScore per dimension of the run rubric's profile, the Parallel's shape, which Composite's
own ``record`` weighs and stores. The output is Composite's small summary, what the Map collects. One
task and one invocation per item instead of two (a deployed run pays per state transition).

Judge throttling that outlived the judge's own retries raises ``JudgeThrottled`` so the state
machine's Retry (backoff with full jitter) tries the task again later; anything else the Catch
records as the item's error.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from fmquality.adapters.dynamodb import EvaluationTable
from fmquality.domain.errors import JudgeThrottled
from fmquality.domain.scores import DimensionScore, JudgeUsage
from fmquality.run import layout
from fmquality.schemes import scheme_for
from fmquality.scoring.case import score_dimensions
from handlers import aws_client, judge_for, resolved_item, run_rubric, run_storage
from handlers.composite import record, summary
from handlers.env import FunctionEnv, load_env
from handlers.events import CompositeEvent, ScoreCaseEvent, check_category

logger = Logger()
tracer = Tracer()
# service="" as in the scorers: the judge metrics are published without dimensions, so the alarm on
# JudgeThrottles covers this function too.
metrics = Metrics(service="")


def _record_metrics(scores: list[DimensionScore]) -> None:
    """The per-dimension scorers' judge metrics, summed over the item (a combined call is counted
    once: ``split_combined`` puts its count and tokens on one dimension)."""
    usage = JudgeUsage()
    for score in scores:
        usage = usage.add(score.usage)
    metrics.add_metric(name="JudgeCalls", unit=MetricUnit.Count, value=sum(s.judge_calls for s in scores))
    metrics.add_metric(name="JudgeInputTokens", unit=MetricUnit.Count, value=usage.input_tokens)
    metrics.add_metric(name="JudgeOutputTokens", unit=MetricUnit.Count, value=usage.output_tokens)
    metrics.add_metric(name="JudgeCachedVerdicts", unit=MetricUnit.Count, value=usage.cached_verdicts)


@tracer.capture_method
def score(event: ScoreCaseEvent, env: FunctionEnv) -> list[DimensionScore]:
    logger.append_keys(run_id=event.run_id, test_id=event.item.test_id, judge_mode=event.judge_mode)
    rubric = run_rubric(event.bucket, event.rubric_key)
    check_category(event.item, rubric.profile_spec.categories)
    judge = judge_for(env.judge, env.judge_model_id)
    try:
        by_dimension = score_dimensions(scheme_for(rubric), event.item, rubric, judge, mode=event.judge_mode,
                                        raise_on_throttle=True)
    except JudgeThrottled:
        metrics.add_metric(name="JudgeThrottles", unit=MetricUnit.Count, value=1)
        logger.warning("judge throttled after its retries; leaving the retry to Step Functions")
        raise
    scores = [by_dimension[d] for d in rubric.dimensions]
    _record_metrics(scores)
    unscored = {s.dimension: s.unscored_reason for s in scores if s.status == "unscored"}
    if unscored:
        logger.warning("dimensions unscored", extra={"reasons": unscored})
    return scores


@logger.inject_lambda_context(log_event=False, clear_state=True)
@metrics.log_metrics
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    env = load_env(FunctionEnv)
    event = resolved_item(event)
    parsed = ScoreCaseEvent.model_validate(event)
    # Bounded as the scorers' are (the result's DynamoDB item stays small): a cut score is stored whole
    # under runs/<run_id>/judge/ first and named in judge_trace_uri (run.layout.score_for_state).
    storage = run_storage(parsed.bucket)
    scores = [layout.score_for_state(s, storage, parsed.bucket, parsed.run_id, parsed.arm, parsed.item.test_id)
              for s in score(parsed, env)]
    # The state as it came, with the scores: what Composite reads from the Parallel's output.
    scored = CompositeEvent.model_validate({**event, "item": parsed.item, "scores": scores})
    return summary(record(scored, EvaluationTable(env.table_name, aws_client("dynamodb"))))
