"""Aggregate: read every item result of the run, build the report and apply the run-level gate,
write results.jsonl / report.json / report.html, close the run record, publish the metrics and
emit "EvaluationCompleted". Its ``summary`` is the Cause the Fail state shows."""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from aws_lambda_powertools import Logger, Tracer
from aws_lambda_powertools.utilities.typing import LambdaContext

from fmquality.adapters import s3 as layout
from fmquality.adapters.cloudwatch import MetricsPublisher, run_metric_data
from fmquality.adapters.dynamodb import EvaluationTable
from fmquality.adapters.eventbridge import EventPublisher
from fmquality.domain.errors import S3ObjectNotFound
from fmquality.adapters.s3 import S3Store, s3_uri
from fmquality.scoring.composite import error_result
from fmquality.domain.results import EvaluationResult
from fmquality.domain.report import RunReport
from fmquality.production.metrics import evaluation_metric_data
from fmquality.report.build import build_report, gate_summary, results_to_jsonl
from fmquality.report.html import render_html
from fmquality.config.rubric import Rubric
from fmquality.targets.base import TargetSpec
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


def read_items(event: AggregateEvent, a: Adapters) -> list[tuple[str, dict[str, Any]]]:
    """(arm, case) per element of items.json. A bare case (items.json written before paired runs)
    is a candidate item, so an old execution can still be aggregated."""
    items: list[dict[str, Any]] = a.s3.read_json(event.bucket, event.items_key)
    return [(str(item["arm"]), item["case"]) if isinstance(item.get("case"), dict) else ("candidate", item)
            for item in items]


@dataclass
class RunTargets:
    """targets.json: each arm's (resolved) spec and the ssm: parameter it came from, if any."""

    specs: dict[str, TargetSpec | None]
    resolved_from: dict[str, str | None]


def read_targets(event: AggregateEvent, a: Adapters) -> RunTargets:
    """targets.json; a run prepared before targets existed scored its recorded answers."""
    text = a.s3.read_text_if_exists(event.bucket, event.targets_key or layout.run_key(event.run_id, layout.TARGETS))
    raw = json.loads(text) if text else {}
    return RunTargets(
        specs={arm: TargetSpec.model_validate(raw[arm]) if raw.get(arm) else None for arm in ("candidate", "control")},
        resolved_from={arm: (raw.get("resolved_from") or {}).get(arm) for arm in ("candidate", "control")},
    )


def collect_results(event: AggregateEvent, rubric: Rubric, a: Adapters,
                    items: list[tuple[str, dict[str, Any]]] | None = None,
                    recorded_at: dict[str, str] | None = None) -> dict[str, list[EvaluationResult]]:
    """Each arm's results in item order. An item without a result (its child execution failed
    inside the Map's tolerance, or timed out) gets an explicit error record: nothing is lost.
    ``recorded_at`` is filled with when each candidate result was written (read in the same query)."""
    items = read_items(event, a) if items is None else items
    out: dict[str, list[EvaluationResult]] = {}
    for arm in sorted({arm for arm, _ in items}, key=lambda name: name != "candidate"):
        times = recorded_at if arm == "candidate" else None
        recorded = {r.test_id: r for r in a.table.results_for_run(event.run_id, arm=arm, recorded_at=times)}
        results: list[EvaluationResult] = []
        for item_arm, case in items:
            if item_arm != arm:
                continue
            result = recorded.pop(str(case.get("test_id")), None)
            if result is None:
                result = error_result(case, rubric, NO_RESULT, run_id=event.run_id).model_copy(update={"arm": arm})
                a.table.put_result(event.run_id, result)
                logger.warning("item without a result recorded as an error",
                               extra={"test_id": result.test_id, "arm": arm})
            results.append(result)
        if recorded:
            # Left over from an earlier execution that reused this run id with other items.
            logger.warning("ignoring results of items not in this run",
                           extra={"arm": arm, "test_ids": sorted(recorded)[:50]})
        out[arm] = results
    return out


def describe_target(spec: TargetSpec | None, results: list[EvaluationResult],
                    resolved_from: str | None = None) -> dict[str, Any] | None:
    """What answered an arm: the spec (never a secret), the ssm: parameter it was resolved from, and
    the id and version its generations name."""
    if spec is None:
        return None
    described = spec.describe()
    if resolved_from:
        described["resolved_from"] = resolved_from
    generations = [r.generation for r in results if r.generation is not None]
    ids = Counter(g.target_id for g in generations)
    versions = Counter(g.target_version for g in generations if g.target_version)
    if ids:
        described["id"] = ids.most_common(1)[0][0]
    if versions:
        described["version"] = versions.most_common(1)[0][0]
        if len(versions) > 1:
            # A target redeployed during the run: say so rather than name one version.
            described["versions"] = sorted(versions)
    return described


def _percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile: a latency that some item really had."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def generation_summary(results_by_arm: dict[str, list[EvaluationResult]]) -> dict[str, Any] | None:
    """Per arm: answers generated, generation errors, latency (mean, p95), tokens and cost.
    None when nothing was generated (the recorded answers were scored)."""
    summary: dict[str, Any] = {}
    for arm, results in results_by_arm.items():
        generations = [r.generation for r in results if r.generation is not None]
        if not generations:
            continue
        latencies = [g.latency_ms for g in generations if g.latency_ms is not None and not g.error]
        costs = [g.cost_usd for g in generations if g.cost_usd is not None]
        summary[arm] = {
            "items": len(results),
            "generated": sum(1 for g in generations if not g.error),
            "errors": sum(1 for g in generations if g.error),
            # Items that never reached Generate's answer (their task failed): no generation record at all.
            "without_generation": len(results) - len(generations),
            "attempts": sum(g.attempts for g in generations),
            "latency_ms": {"mean": round(sum(latencies) / len(latencies), 1) if latencies else None,
                           "p95": _percentile(latencies, 0.95)},
            "input_tokens": sum(g.usage.input_tokens for g in generations),
            "output_tokens": sum(g.usage.output_tokens for g in generations),
            "cost_usd": round(sum(costs), 6) if costs else None,
        }
    return summary or None


def load_baseline(baseline_run_id: str | None, bucket: str, a: Adapters, key: str | None = None) -> RunReport | None:
    """The baseline's report: ``key`` when Prepare resolved one (an approved baseline's frozen copy),
    else the baseline run's own report."""
    if not baseline_run_id:
        return None
    key = key or (a.table.get_run(baseline_run_id) or {}).get("report_key")
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
    targets = read_targets(event, a)
    recorded_at: dict[str, str] = {}
    by_arm = collect_results(event, rubric, a, recorded_at=recorded_at)
    results, control = by_arm.get("candidate", []), by_arm.get("control", [])
    baseline = load_baseline(event.baseline_run_id, event.bucket, a, run.get("baseline_report_key"))
    candidate_spec = targets.specs["candidate"] or TargetSpec.parse(None)
    # A plain run (recorded answers, no control) reports no target, as before targets existed.
    plain = candidate_spec.kind == "recorded" and targets.specs["control"] is None

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
        control_results=control or None,
        target=None if plain else describe_target(candidate_spec, results, targets.resolved_from["candidate"]),
        control_target=describe_target(targets.specs["control"], control, targets.resolved_from["control"]),
    )
    report = report.model_copy(update={"catalog": run.get("catalog"),
                                       # Prepare's record of the subset scored and the dataset's spread.
                                       "filter": run.get("filter"),
                                       "distribution": json.loads(run["distribution"]) if run.get("distribution") else None,
                                       "generation_summary": generation_summary(by_arm),
                                       "execution": {"arn": event.execution_arn} if event.execution_arn else None})

    report_key = layout.run_key(event.run_id, layout.REPORT_JSON)
    a.s3.write_text(event.bucket, layout.run_key(event.run_id, layout.RESULTS), results_to_jsonl(results),
                    "application/x-ndjson")
    if control:
        a.s3.write_text(event.bucket, layout.run_key(event.run_id, layout.CONTROL_RESULTS),
                        results_to_jsonl(control), "application/x-ndjson")
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
        a.metrics.put(run_metric_data(report, results, rubric.gate.min_pass_rate)
                      + evaluation_metric_data(report, results, recorded_at))
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
        "control_cases": len(control),
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
