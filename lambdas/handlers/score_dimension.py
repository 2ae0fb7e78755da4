"""A scorer: one quality dimension (env DIMENSION) of one item. One function per dimension of the
rubric profile, all with this handler; DIMENSION must be a dimension of the run rubric's profile.

Judge throttling that outlived the judge's own retries raises ``JudgeThrottled`` so the state
machine's Retry (backoff with full jitter) tries the task again later.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from fmquality.run.evaluate import score_one_dimension
from fmquality.domain.errors import JudgeThrottled
from fmquality.domain.scores import DimensionScore
from fmquality.run import layout
from handlers import judge_for, resolved_item, run_rubric, run_storage
from handlers.env import ScorerEnv, load_env
from handlers.events import ScoreEvent, check_category, check_dimension

logger = Logger()
tracer = Tracer()
# service="" keeps Powertools from adding its default "service" dimension: the judge metrics are
# published without dimensions, so one alarm covers every scorer function.
metrics = Metrics(service="")


@tracer.capture_method
def score(event: ScoreEvent, env: ScorerEnv) -> DimensionScore:
    dimension = env.dimension
    logger.append_keys(run_id=event.run_id, test_id=event.item.test_id, dimension=dimension)
    rubric = run_rubric(event.bucket, event.rubric_key)
    check_dimension(dimension, rubric.dimensions, rubric.profile)
    check_category(event.item, rubric.profile_spec.categories)
    judge = judge_for(env.judge, env.judge_model_id)
    try:
        result = score_one_dimension(dimension, event.item, rubric, judge, raise_on_throttle=True)
    except JudgeThrottled:
        metrics.add_metric(name="JudgeThrottles", unit=MetricUnit.Count, value=1)
        logger.warning("judge throttled after its retries; leaving the retry to Step Functions")
        raise
    metrics.add_metric(name="JudgeCalls", unit=MetricUnit.Count, value=result.judge_calls)
    metrics.add_metric(name="JudgeInputTokens", unit=MetricUnit.Count, value=result.usage.input_tokens)
    metrics.add_metric(name="JudgeOutputTokens", unit=MetricUnit.Count, value=result.usage.output_tokens)
    # Verdicts served by the cache: JudgeCalls is 0 for them, so this shows the cache working.
    metrics.add_metric(name="JudgeCachedVerdicts", unit=MetricUnit.Count, value=result.usage.cached_verdicts)
    if result.status == "unscored":
        logger.warning("dimension unscored", extra={"reason": result.unscored_reason})
    return result


@logger.inject_lambda_context(log_event=False, clear_state=True)
@metrics.log_metrics
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    parsed = ScoreEvent.model_validate(resolved_item(event))
    scored = score(parsed, load_env(ScorerEnv))
    # The score as the Parallel's output carries it: bounded, and when cut stored whole first under
    # runs/<run_id>/judge/ and named in judge_trace_uri (run.layout; Composite stores what it gets).
    return layout.score_for_state(scored, run_storage(parsed.bucket), parsed.bucket, parsed.run_id, parsed.arm,
                                  parsed.item.test_id).model_dump(mode="json")
