"""Drift check, every few minutes (EventBridge Scheduler): the stream drift of online judgments against
the approved reference (``fmquality.run.online.check_drift``). Reads ``production/drift/reference.json``
(none approved yet: nothing to check, said in the log) and carries its state in
``production/drift/stream-state.json``; publishes DriftCusum / DriftKsStatistic / DriftFlag; per alarm,
writes the alarm's report under ``production/drift/alarms/`` (the event's link), puts
``QualityDriftDetected`` on the project bus and sends its text to the alerts topic."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

from aws_lambda_powertools import Logger, Tracer
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import Field

from fmquality.adapters.cloudwatch import MetricsPublisher
from fmquality.adapters.dynamodb import EvaluationTable
from fmquality.adapters.eventbridge import EventPublisher
from fmquality.adapters.s3 import S3Store, s3_uri
from fmquality.config.watch_loader import load_watch_config
from fmquality.production.drift import Reference
from fmquality.production.online import DynamoCellStore
from fmquality.production.stream_drift import StreamAlarm, StreamState
from fmquality.run.online import REFERENCE_KEY, STREAM_STATE_KEY, check_drift
from handlers import aws_client
from handlers.env import FunctionEnv, load_env

logger = Logger()
tracer = Tracer()
ALARMS_PREFIX = "production/drift/alarms/"


class DriftCheckEnv(FunctionEnv):
    alerts_topic_arn: str | None = Field(alias="ALERTS_TOPIC_ARN", default=None)


def alarm_key(alarm: StreamAlarm) -> str:
    """production/drift/alarms/<window end, UTC>-<intent_locale[_tier]>.json"""
    end = alarm.window_to.astimezone(timezone.utc).strftime("%Y%m%dT%H%M")
    return f"{ALARMS_PREFIX}{end}-{alarm.stratum.replace('|', '_')}.json"


@tracer.capture_method
def run_check(now: datetime, env: DriftCheckEnv) -> dict[str, Any]:
    store = S3Store(aws_client("s3"))
    raw_reference = store.read_text_if_exists(env.bucket_name, REFERENCE_KEY)
    if raw_reference is None:
        logger.warning("no approved drift reference: run `fmquality drift approve` first", extra={"key": REFERENCE_KEY})
        return {"checked": False, "reason": "no reference"}
    raw_state = store.read_text_if_exists(env.bucket_name, STREAM_STATE_KEY)
    table = EvaluationTable(env.table_name, aws_client("dynamodb"))
    events = EventPublisher(env.event_bus_name, aws_client("events"))

    def link(alarm: StreamAlarm) -> str:
        return s3_uri(env.bucket_name, alarm_key(alarm))

    def put_event(detail_type: str, detail: dict[str, Any]) -> None:
        # The alarm's report (the link) is written before the event that names it.
        _, key = detail["report_link"].split(f"s3://{env.bucket_name}/", 1)
        store.write_text(env.bucket_name, key, json.dumps(detail, ensure_ascii=False, indent=1), "application/json")
        events.put(detail_type, detail)

    def notify(subject: str, body: str) -> None:
        if env.alerts_topic_arn:
            aws_client("sns").publish(TopicArn=env.alerts_topic_arn, Subject=subject, Message=body)

    details, state = check_drift(
        now, reference=Reference.model_validate_json(raw_reference),
        state=StreamState.model_validate_json(raw_state) if raw_state else None,
        cells=DynamoCellStore(env.table_name, aws_client("dynamodb")), read_run=table.results_for_run,
        config=load_watch_config(), report_link=link, put_event=put_event,
        put_metrics=MetricsPublisher(env.metrics_namespace, boto3_client=aws_client("cloudwatch")).put, notify=notify)
    store.write_text(env.bucket_name, STREAM_STATE_KEY, state.model_dump_json(), "application/json")
    flagged = [d["stratum"]["key"] for d in details]
    logger.info("drift checked", extra={"flagged": flagged, "processed_to": str(state.processed_to)})
    return {"checked": True, "flagged": flagged, "processed_to": state.processed_to.isoformat() if state.processed_to else None}


@logger.inject_lambda_context(log_event=False, clear_state=True)
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    raw = (event or {}).get("time")
    now = datetime.fromisoformat(raw.replace("Z", "+00:00")) if raw else datetime.now(timezone.utc)
    return run_check(now, load_env(DriftCheckEnv))
