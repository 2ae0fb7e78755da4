"""Prepare, the state machine's first step: ``run.prepare.prepare_run`` over S3 and the evaluation table.
Its output drives the Distributed Map; its errors (DatasetRejected, RunAlreadyExists, TargetRejected,
TargetKindRefused, BaselineNotFound) fail the execution by name; a judge model that is the
generating target's model is a DatasetRejected, and so is a replay estimated above REPLAY_BUDGET_USD
without "approve_cost": true."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Tracer
from aws_lambda_powertools.utilities.typing import LambdaContext

from fmquality.adapters.dynamodb import EvaluationTable
from fmquality.adapters.s3 import S3Store
from fmquality.run.prepare import ExecutionInput, PrepareSettings, prepare_run
from handlers import aws_client
from handlers.env import PrepareEnv, load_env

logger = Logger()
tracer = Tracer()


@logger.inject_lambda_context(log_event=False, clear_state=True)
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    env = load_env(PrepareEnv)
    request = ExecutionInput.model_validate(event)
    settings = PrepareSettings(bucket=env.bucket_name, judge_label=env.judge_label,
                               default_max_concurrency=env.default_max_concurrency,
                               combined_max_concurrency=env.default_combined_max_concurrency,
                               default_tolerated_failure_percentage=env.default_tolerated_failure_percentage,
                               judge=env.judge, judge_model_id=env.judge_model_id,
                               replay_budget_usd=env.replay_budget_usd)
    prepared = prepare_run(request, settings, S3Store(aws_client("s3")),
                           EvaluationTable(env.table_name, aws_client("dynamodb")), clients=aws_client)
    logger.info("run prepared", extra=prepared)
    return prepared
