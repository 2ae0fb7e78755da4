"""Watch: on "EvaluationCompleted" of a sampled production run, watch it (``fmquality.run.watch``)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Tracer
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import Field

from fmquality.adapters.cloudwatch import MetricsPublisher
from fmquality.adapters.review_queue import DynamoReviewQueue
from fmquality.adapters.s3 import S3Store
from fmquality.run.watch import CompletedDetail, watch_run
from handlers import aws_client
from handlers.env import FunctionEnv, load_env

logger = Logger()
tracer = Tracer()


class WatchEnv(FunctionEnv):
    alerts_topic_arn: str = Field(alias="ALERTS_TOPIC_ARN", min_length=1)


@logger.inject_lambda_context(log_event=False, clear_state=True)
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    env = load_env(WatchEnv)
    detail = CompletedDetail.model_validate(event.get("detail", event))
    outcome = watch_run(detail, env.alerts_topic_arn, S3Store(aws_client("s3")),
                        DynamoReviewQueue(env.table_name, aws_client("dynamodb")),
                        MetricsPublisher(env.metrics_namespace, boto3_client=aws_client("cloudwatch")), aws_client("sns"))
    logger.info("run watched", extra=outcome)
    return outcome
