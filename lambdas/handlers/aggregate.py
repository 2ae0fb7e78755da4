"""Aggregate, the state machine's last step: ``run.aggregate.aggregate_run`` over S3, the evaluation
table (the run and, for a failed gate, its failing items' review queue), CloudWatch and EventBridge. Its ``summary`` is the Cause the Fail state shows."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Tracer
from aws_lambda_powertools.utilities.typing import LambdaContext

from fmquality.adapters.cloudwatch import MetricsPublisher
from fmquality.adapters.dynamodb import EvaluationTable
from fmquality.adapters.eventbridge import EventPublisher
from fmquality.adapters.review_queue import DynamoReviewQueue
from fmquality.adapters.s3 import S3Store
from fmquality.run.aggregate import AggregateInput, AggregateSettings, AwsAdapters, aggregate_run
from handlers import aws_client
from handlers.env import FunctionEnv, load_env

logger = Logger()
tracer = Tracer()


@logger.inject_lambda_context(log_event=False, clear_state=True)
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    env = load_env(FunctionEnv)
    request = AggregateInput.model_validate(event)
    logger.append_keys(run_id=request.run_id, dataset_id=request.dataset_id)
    adapters = AwsAdapters(
        s3=S3Store(aws_client("s3")),
        table=EvaluationTable(env.table_name, aws_client("dynamodb")),
        metrics=MetricsPublisher(env.metrics_namespace, boto3_client=aws_client("cloudwatch")),
        events=EventPublisher(env.event_bus_name, aws_client("events")),
        review_queue=DynamoReviewQueue(env.table_name, aws_client("dynamodb")),
    )
    aggregated = aggregate_run(request, AggregateSettings(env.judge_label, env.engine_name), adapters)
    logger.info("run aggregated", extra=aggregated)
    return aggregated
