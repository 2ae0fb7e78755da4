"""Watch: on "EvaluationCompleted" of a sampled production run, compute the monitor status and the
drift (against the approved reference in production/drift/reference.json, CUSUM state carried in
production/drift/state.json), queue items for human review, publish DriftCusum / DriftKsStatistic /
DriftFlag / MonitorStatus / JudgeAgreementKappa, write runs/<run_id>/watch.json, and send an alert
naming the stratum, the shift and the worst items for every drifting stratum."""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools import Logger, Tracer
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel, Field

from fmquality.adapters import s3 as layout
from fmquality.adapters.cloudwatch import MetricsPublisher
from fmquality.adapters.s3 import S3Store, parse_s3_uri
from fmquality.domain.report import RunReport
from fmquality.production.drift import DriftState, Reference, alert_message, detect_drift, drift_metric_data
from fmquality.production.metrics import monitor_metric_data
from fmquality.production.monitor import monitor_status
from fmquality.production.review import DynamoReviewQueue, agreement_metric_data, judge_agreement, select_for_review
from fmquality.production.sample import SAMPLE_TRIGGER
from fmquality.config.watch import load_watch_config
from fmquality.domain.results import EvaluationResult
from handlers import aws_client
from handlers.env import FunctionEnv, load_env

logger = Logger()
tracer = Tracer()

REFERENCE_KEY = "production/drift/reference.json"
STATE_KEY = "production/drift/state.json"
AGREEMENT_RUNS = 4  # kappa over the review verdicts of the last few sampled runs


class WatchEnv(FunctionEnv):
    alerts_topic_arn: str = Field(alias="ALERTS_TOPIC_ARN", min_length=1)


class CompletedDetail(BaseModel):
    run_id: str = Field(min_length=1)
    report_uri: str


@tracer.capture_method
def watch_run(detail: CompletedDetail, env: WatchEnv, s3: S3Store, queue: DynamoReviewQueue,
              metrics: MetricsPublisher, sns: Any) -> dict[str, Any]:
    bucket, report_key = parse_s3_uri(detail.report_uri)
    report = RunReport.model_validate_json(s3.read_bytes(bucket, report_key))
    if report.trigger != SAMPLE_TRIGGER:
        return {"run_id": detail.run_id, "skipped": f"trigger {report.trigger} is not {SAMPLE_TRIGGER}"}
    config = load_watch_config()
    text = s3.read_text(bucket, layout.run_key(detail.run_id, layout.RESULTS))
    results = [EvaluationResult.model_validate_json(line) for line in text.splitlines() if line.strip()]
    monitor = monitor_status(results, config)
    data = monitor_metric_data(monitor)

    added = queue.add(select_for_review(results, config.review, detail.run_id))
    raw_state = s3.read_text_if_exists(bucket, STATE_KEY)
    state = DriftState.model_validate_json(raw_state) if raw_state else DriftState()
    raw_reference = s3.read_text_if_exists(bucket, REFERENCE_KEY)
    drift = None
    if raw_reference:
        drift, state = detect_drift(results, Reference.model_validate_json(raw_reference), state, config.drift,
                                    detail.run_id)
        s3.write_text(bucket, STATE_KEY, state.model_dump_json(), "application/json")
        data += drift_metric_data(drift)
        for stratum in drift.flagged:
            subject, body = alert_message(drift, stratum)
            sns.publish(TopicArn=env.alerts_topic_arn, Subject=subject, Message=body)
    else:
        logger.warning("no approved drift reference: drift not computed", extra={"key": REFERENCE_KEY})

    recent = (state.runs[-AGREEMENT_RUNS:] if state.runs else []) or [detail.run_id]
    agreement = judge_agreement([i for run_id in recent for i in queue.items(run_id)])
    data += agreement_metric_data(agreement, config.review.min_reviewed)
    metrics.put(data)
    s3.write_text(bucket, layout.run_key(detail.run_id, "watch.json"), json.dumps({
        "monitor": monitor.model_dump(mode="json"),
        "drift": drift.model_dump(mode="json") if drift else None,
        "agreement": agreement.model_dump(mode="json"),
    }, ensure_ascii=False), "application/json")
    flagged = [f"{s.intent}|{s.locale}" for s in drift.flagged] if drift else []
    logger.info("sampled run watched", extra={"monitor": monitor.status, "flagged": flagged, "review_added": added})
    return {"run_id": detail.run_id, "monitor": monitor.status, "flagged": flagged, "review_added": added,
            "metrics": len(data)}


@logger.inject_lambda_context(log_event=False, clear_state=True)
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    env = load_env(WatchEnv)
    detail = CompletedDetail.model_validate(event.get("detail", event))
    return watch_run(detail, env, S3Store(aws_client("s3")), DynamoReviewQueue(env.table_name, aws_client("dynamodb")),
                     MetricsPublisher(env.metrics_namespace, aws_client("cloudwatch")), aws_client("sns"))
