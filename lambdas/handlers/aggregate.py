"""Aggregate: read every item result of the run, build the report and apply the run-level gate,
write results.jsonl / report.json / report.html, close the run record, publish the metrics and
emit "EvaluationCompleted". Its ``summary`` is the Cause the Fail state shows."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from aws_lambda_powertools import Logger, Tracer
from aws_lambda_powertools.utilities.typing import LambdaContext

from fmquality.adapters import s3 as layout
from fmquality.adapters.cloudwatch import MetricsPublisher, run_metric_data
from fmquality.adapters.dynamodb import EvaluationTable
from fmquality.adapters.eventbridge import EventPublisher
from fmquality.adapters.s3 import S3ObjectNotFound, S3Store, s3_uri
from fmquality.composite import error_result
from fmquality.models import EvaluationResult, RunReport
from fmquality.report import build_report, gate_summary, results_to_jsonl
from fmquality.report_html import render_html
from fmquality.rubric import Rubric
from handlers import aws_client, run_rubric
from handlers.env import FunctionEnv, load_env
from handlers.events import AggregateEvent

logger = Logger()
tracer = Tracer()

NO_RESULT = "no result recorded"


class BaselineNotFound(LookupError):
    """The run was prepared with a baseline whose report can no longer be read."""


@dataclass
class Adapters:
    s3: S3Store
    table: EvaluationTable
    metrics: MetricsPublisher
    events: EventPublisher


def _now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def collect_results(event: AggregateEvent, rubric: Rubric, a: Adapters) -> list[EvaluationResult]:
    """The run's results in item order. An item without a result (its child execution failed
    inside the Map's tolerance, or timed out) gets an explicit error record: nothing is lost."""
    items: list[dict[str, Any]] = a.s3.read_json(event.bucket, event.items_key)
    recorded = {r.test_id: r for r in a.table.results_for_run(event.run_id)}
    results: list[EvaluationResult] = []
    for item in items:
        result = recorded.pop(str(item.get("test_id")), None)
        if result is None:
            result = error_result(item, rubric, NO_RESULT, run_id=event.run_id)
            a.table.put_result(event.run_id, result)
            logger.warning("item without a result recorded as an error", extra={"test_id": result.test_id})
        results.append(result)
    if recorded:
        # Left over from an earlier execution that reused this run id with other items.
        logger.warning("ignoring results of items not in this run", extra={"test_ids": sorted(recorded)[:50]})
    return results


def load_baseline(baseline_run_id: str | None, bucket: str, a: Adapters) -> RunReport | None:
    if not baseline_run_id:
        return None
    run = a.table.get_run(baseline_run_id)
    key = (run or {}).get("report_key")
    if not key:
        raise BaselineNotFound(f"baseline run {baseline_run_id!r} has no report")
    try:
        return RunReport.model_validate_json(a.s3.read_bytes(bucket, key))
    except S3ObjectNotFound as exc:
        raise BaselineNotFound(f"baseline run {baseline_run_id!r}: {exc}") from exc


def count_rejected_lines(bucket: str, run_id: str, a: Adapters) -> int:
    text = a.s3.read_text_if_exists(bucket, layout.run_key(run_id, layout.REJECTED)) or ""
    rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    return len({(row.get("file"), row.get("line")) for row in rows})


def one_line(text: str) -> str:
    return " ".join(text.split())


@tracer.capture_method
def aggregate_run(event: AggregateEvent, env: FunctionEnv, a: Adapters) -> dict[str, Any]:
    logger.append_keys(run_id=event.run_id, dataset_id=event.dataset_id)
    rubric = run_rubric(event.bucket, event.rubric_key)
    run = a.table.get_run(event.run_id) or {}
    results = collect_results(event, rubric, a)
    baseline = load_baseline(event.baseline_run_id, event.bucket, a)

    report = build_report(
        results,
        rubric,
        run_id=event.run_id,
        dataset=run.get("dataset") or event.dataset_id,
        trigger=event.trigger,
        judge=env.judge_label,
        engine=env.engine_name,
        baseline=baseline,
        rejected_lines=count_rejected_lines(event.bucket, event.run_id, a),
        started_at=run.get("started_at"),
        finished_at=_now_iso(),
    )
    report = report.model_copy(update={"catalog": run.get("catalog"),
                                       "execution": {"arn": event.execution_arn} if event.execution_arn else None})

    report_key = layout.run_key(event.run_id, layout.REPORT_JSON)
    a.s3.write_text(event.bucket, layout.run_key(event.run_id, layout.RESULTS), results_to_jsonl(results),
                    "application/x-ndjson")
    a.s3.write_text(event.bucket, report_key, report.model_dump_json(indent=2), "application/json")
    a.s3.write_text(event.bucket, layout.run_key(event.run_id, layout.REPORT_HTML),
                    render_html(report, results, rubric_min_pass_rate=rubric.gate.min_pass_rate),
                    "text/html; charset=utf-8")

    unscored = sum(1 for r in results if r.status != "scored")
    a.table.complete_run(
        event.run_id,
        status="SUCCEEDED" if report.gate.passed else "GATE_FAILED",
        gate_passed=report.gate.passed,
        pass_rate=report.pass_rate,
        mean_composite=report.mean_composite,
        total_cases=report.total_cases,
        unscored_cases=unscored,
        report_key=report_key,
        finished_at=report.finished_at,
        execution_arn=event.execution_arn,
    )
    # A retried Aggregate (failed after publishing) must not count the run twice in the alarms.
    if not run.get("metrics_published"):
        a.metrics.put(run_metric_data(report, results, rubric.gate.min_pass_rate))
        a.table.complete_run(event.run_id, metrics_published=True)
    a.events.evaluation_completed(
        {
            "run_id": event.run_id,
            "dataset_id": event.dataset_id,
            "gate_passed": report.gate.passed,
            "pass_rate": report.pass_rate,
            "report_uri": s3_uri(event.bucket, report_key),
            "reasons": report.gate.reasons,
        },
        resources=[event.execution_arn] if event.execution_arn else None,
    )
    summary = "passed" if report.gate.passed else one_line(gate_summary(report))
    logger.info("run aggregated", extra={"gate_passed": report.gate.passed, "pass_rate": report.pass_rate,
                                         "summary": summary})
    return {
        "gate_passed": report.gate.passed,
        "summary": summary,
        "report_key": report_key,
        "pass_rate": report.pass_rate,
        "total_cases": report.total_cases,
        "unscored_cases": unscored,
    }


@logger.inject_lambda_context(log_event=False, clear_state=True)
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    env = load_env(FunctionEnv)
    adapters = Adapters(
        s3=S3Store(aws_client("s3")),
        table=EvaluationTable(env.table_name, aws_client("dynamodb")),
        metrics=MetricsPublisher(env.metrics_namespace, aws_client("cloudwatch")),
        events=EventPublisher(env.event_bus_name, aws_client("events")),
    )
    return aggregate_run(AggregateEvent.model_validate(event), env, adapters)
