"""Watching a finished production sample (the Watch Lambda's whole job): the monitor status, drift
against the approved reference (``production/drift/reference.json``; the CUSUM state is carried in
``production/drift/state.json``), items queued for human review, the DriftCusum / DriftKsStatistic /
DriftFlag / MonitorStatus / JudgeAgreementKappa metrics, ``runs/<run_id>/watch.json``, and an alert
naming the stratum, the shift and the worst items for every drifting stratum."""

from __future__ import annotations

import json
import logging
from typing import Any

from pydantic import BaseModel, Field

from fmquality.adapters.cloudwatch import MetricsPublisher
from fmquality.adapters.review_queue import DynamoReviewQueue
from fmquality.adapters.s3 import S3Store, parse_s3_uri
from fmquality.config.watch_loader import load_watch_config
from fmquality.domain.report import RunReport
from fmquality.domain.results import EvaluationResult
from fmquality.production.drift import DriftState, Reference, alert_message, detect_drift, drift_metric_data
from fmquality.production.metrics import monitor_metric_data
from fmquality.production.monitor import monitor_status
from fmquality.production.review import select_for_review
from fmquality.production.review_agreement import agreement_metric_data, judge_agreement
from fmquality.production.sample import SAMPLE_TRIGGER
from fmquality.run import layout

logger = logging.getLogger(__name__)

REFERENCE_KEY = "production/drift/reference.json"
STATE_KEY = "production/drift/state.json"
AGREEMENT_RUNS = 4  # kappa over the review verdicts of the last few sampled runs


class CompletedDetail(BaseModel):
    run_id: str = Field(min_length=1)
    report_uri: str


def watch_run(detail: CompletedDetail, alerts_topic_arn: str, s3: S3Store, queue: DynamoReviewQueue,
              metrics: MetricsPublisher, sns: Any) -> dict[str, Any]:
    """Watch one finished run (skipped unless it is a production sample); ``sns`` is a boto3 SNS client."""
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
            sns.publish(TopicArn=alerts_topic_arn, Subject=subject, Message=body)
    else:
        logger.warning("no approved drift reference at %s: drift not computed", REFERENCE_KEY)

    recent = (state.runs[-AGREEMENT_RUNS:] if state.runs else []) or [detail.run_id]
    agreement = judge_agreement([i for run_id in recent for i in queue.items(run_id)])
    data += agreement_metric_data(agreement, config.review.min_reviewed)
    metrics.put(data)
    s3.write_text(bucket, layout.run_key(detail.run_id, layout.WATCH), json.dumps({
        "monitor": monitor.model_dump(mode="json"),
        "drift": drift.model_dump(mode="json") if drift else None,
        "agreement": agreement.model_dump(mode="json"),
    }, ensure_ascii=False), "application/json")
    flagged = [f"{s.intent}|{s.locale}" for s in drift.flagged] if drift else []
    logger.info("sampled run watched: monitor %s, flagged %s, %d queued for review", monitor.status, flagged, added)
    return {"run_id": detail.run_id, "monitor": monitor.status, "flagged": flagged, "review_added": added,
            "metrics": len(data)}
