"""Online judge: captured turns (S3 "Object Created" events on production/turns/, EventBridge -> SQS) ->
the stratified online sampler -> the gate's scoring core with the recorded target -> results under
``online-YYYYMMDDHH``, window cells and per-minute metrics (``fmquality.run.online.judge_turns``).

One SQS message is one object-created event; a message whose object could not be read or judged is
reported back as a batch item failure (Powertools' partial batch response), so only it is redelivered
(the sampler's per-window counts make a redelivered turn count once)."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import unquote_plus

from aws_lambda_powertools import Logger, Tracer
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from fmquality.adapters.cloudwatch import MetricsPublisher
from fmquality.adapters.dynamodb import EvaluationTable
from fmquality.config.rubric import load_rubric
from fmquality.config.watch_loader import load_watch_config
from fmquality.production.capture import TURNS_PREFIX, parse_turn_lines
from fmquality.production.online import DynamoCellStore, DynamoWindowCounter, OnlineSampler
from fmquality.run.online import judge_turns
from handlers import aws_client, judge_for
from handlers.env import FunctionEnv, load_env

logger = Logger()
tracer = Tracer()
# A batch whose every message failed is reported like any other (each message redelivered on its own).
processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)


def objects_of(body: str) -> list[tuple[str, str]]:
    """(bucket, key) of every turns object a message names: an EventBridge "Object Created" event (the
    deployed path) or an S3 notification (``Records``; a test event has none)."""
    event = json.loads(body)
    if event.get("detail-type") == "Object Created":
        named = [(event["detail"]["bucket"]["name"], event["detail"]["object"]["key"])]
    else:
        named = [(r["s3"]["bucket"]["name"], unquote_plus(r["s3"]["object"]["key"]))
                 for r in event.get("Records", []) if "s3" in r]
    return [(bucket, key) for bucket, key in named if key.startswith(TURNS_PREFIX) and "/dt=invalid/" not in key]


@tracer.capture_method
def judge_record(record: SQSRecord) -> int:
    env = load_env(FunctionEnv)
    config = load_watch_config()
    ddb = aws_client("dynamodb")
    table = EvaluationTable(env.table_name, ddb)
    judged = 0
    for bucket, key in objects_of(record.body):
        body = aws_client("s3").get_object(Bucket=bucket, Key=key)["Body"].read()
        turns, errors = parse_turn_lines(body.splitlines(), f"s3://{bucket}/{key}")
        if errors:
            logger.warning("bad turn lines skipped", extra={"count": len(errors), "first": errors[:3]})
        results = judge_turns(
            turns, OnlineSampler(config.online, DynamoWindowCounter(env.table_name, ddb)), load_rubric(),
            judge_for(env.judge, env.judge_model_id), put_result=table.put_result,
            cells=DynamoCellStore(env.table_name, ddb), config=config,
            put_metrics=MetricsPublisher(env.metrics_namespace, boto3_client=aws_client("cloudwatch")).put)
        judged += len(results)
        logger.info("turns judged", extra={"key": key, "turns": len(turns), "judged": len(results)})
    return judged


@logger.inject_lambda_context(log_event=False, clear_state=True)
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return process_partial_response(event=event, record_handler=judge_record, processor=processor, context=context)
