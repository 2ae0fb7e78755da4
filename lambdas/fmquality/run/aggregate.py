"""Aggregate a run: from each arm's results to the report and the report files, the one assembly both
engines use (``assemble_report``, ``report_outputs``).

On AWS (``aggregate_run``) the results are collected from the evaluation table (an item without one
becomes an explicit error record), the baseline is read, the report files are written beside the run's
other files, the run record is closed, the run's metrics published once and "EvaluationCompleted"
emitted; a failed gate's failing items are queued for review (``run.gate_review``) and the report
links them. A replay run (its record has ``replay``) writes its per-turn diff beside the report and
queues the turns the candidate now fails among those that changed (``run.replay``) instead. A probe run
(trigger ``probe``) also publishes its probe failure rate (``production.probes``). Its ``summary`` is the Cause the state machine's Fail state shows.

A new report block goes in ``assemble_report``: both engines then have it.
"""

from __future__ import annotations

import json
import logging
import math
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from fmquality.adapters.cloudwatch import MetricsPublisher, run_metric_data
from fmquality.adapters.dynamodb import EvaluationTable
from fmquality.adapters.eventbridge import EventPublisher
from fmquality.adapters.review_queue import REVIEW_PK_PREFIX
from fmquality.adapters.s3 import BucketStorage, S3Store, s3_uri
from fmquality.config.rubric import Rubric
from fmquality.domain.errors import RUN_NOT_DONE_ERRORS
from fmquality.domain.report import RunReport
from fmquality.domain.results import EvaluationResult
from fmquality.production.metrics import evaluation_metric_data
from fmquality.production.monitor import monitor_status
from fmquality.production.probes import is_probe_run, probe_metric_data, probe_outcome
from fmquality.production.sample import PRODUCTION_TAG
from fmquality.report.build import build_report, gate_summary, results_to_jsonl
from fmquality.report.html import render_html
from fmquality.run import layout
from fmquality.run.baseline import load_baseline
from fmquality.run.gate_review import ReviewQueueStore, queue_failing_items
from fmquality.run.replay import replay_diff_outputs
from fmquality.scoring.composite import error_result
from fmquality.targets.base import TargetSpec

logger = logging.getLogger(__name__)

NO_RESULT = "no result recorded"


@dataclass(frozen=True)
class RunFacts:
    """What a report says about its run besides the results: where it came from and how it ran."""

    run_id: str
    dataset: str
    trigger: str
    judge: str
    engine: str
    started_at: str | None
    finished_at: str | None
    rejected_lines: int = 0
    catalog: str | None = None
    filter_line: str | None = None
    distribution: dict[str, dict[str, int]] | None = None
    execution: dict[str, Any] | None = None
    judge_model_id: str | None = None  # prices the judge's tokens (else the judge label's model)
    judge_mode: str | None = None  # the mode that ran (per_dimension or combined)
    dataset_sha256: str | None = None  # sha256 of the dataset's bytes (run.baseline.dataset_sha256)
    dataset_version: str | None = None
    baseline_note: str | None = None  # why an approved baseline was not compared with


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


def monitor_block(results: list[EvaluationResult], rubric: Rubric) -> dict[str, Any] | None:
    """The monitor status of a sampled production run (every item tagged ``production``), thresholds
    from the rubric; None for any other run."""
    if not results or not all(PRODUCTION_TAG in r.tags for r in results):
        return None
    return monitor_status(results, rubric).model_dump(mode="json")


def assemble_report(results_by_arm: dict[str, list[EvaluationResult]], rubric: Rubric, facts: RunFacts,
                    baseline: RunReport | None = None, target: dict[str, Any] | None = None,
                    control_target: dict[str, Any] | None = None) -> RunReport:
    """The run's report: the gate over the candidate's results (against the control's in a paired run,
    else against the baseline), with what answered each arm (``target``, ``control_target``) and every
    block a reader needs about the run."""
    results, control = results_by_arm.get("candidate", []), results_by_arm.get("control")
    report = build_report(
        results, rubric, run_id=facts.run_id, dataset=facts.dataset, trigger=facts.trigger, judge=facts.judge,
        engine=facts.engine, baseline=baseline, rejected_lines=facts.rejected_lines, started_at=facts.started_at,
        finished_at=facts.finished_at, judge_model_id=facts.judge_model_id, control_results=control or None,
        target=target, control_target=control_target, filter_description=facts.filter_line,
        distribution=facts.distribution)
    return report.model_copy(update={"catalog": facts.catalog, "monitor": monitor_block(results, rubric),
                                     "generation_summary": generation_summary(results_by_arm),
                                     "execution": facts.execution, "judge_mode": facts.judge_mode,
                                     "dataset_sha256": facts.dataset_sha256, "dataset_version": facts.dataset_version,
                                     "baseline_note": facts.baseline_note})


def report_outputs(report: RunReport, results_by_arm: dict[str, list[EvaluationResult]],
                   rubric: Rubric) -> dict[str, str | None]:
    """The report files of a run (``layout.RUN_OUTPUTS`` names), rejected.jsonl aside: it is Prepare's."""
    results, control = results_by_arm.get("candidate", []), results_by_arm.get("control")
    return {
        layout.RESULTS: results_to_jsonl(results),
        layout.CONTROL_RESULTS: results_to_jsonl(control) if control else None,
        **report_files(report, results, rubric),
    }


def report_files(report: RunReport, results: list[EvaluationResult], rubric: Rubric) -> dict[str, str]:
    """report.html and report.json, from the candidate's results or their summaries
    (``run.summary``: the direct engine streams the results files and keeps only those)."""
    return {
        layout.REPORT_HTML: render_html(report, results, rubric_min_pass_rate=rubric.gate.min_pass_rate),
        layout.REPORT_JSON: report.model_dump_json(indent=2),
    }


# ---- AWS: the Aggregate step of the state machine -----------------------------------------------------

class AggregateInput(BaseModel):
    """What the state machine gives Aggregate: Prepare's keys and the execution's ARN."""

    model_config = ConfigDict(extra="ignore")

    run_id: str
    bucket: str = Field(min_length=3)
    rubric_key: str = Field(min_length=1)
    items_key: str = Field(min_length=1)
    targets_key: str = Field(min_length=1)
    dataset_id: str = Field(min_length=1)
    baseline_run_id: str | None = None
    trigger: str = "manual"
    execution_arn: str | None = None
    # The Map's own failure (its Catch: {"Error", "Cause"}), e.g. more child executions failed than it
    # tolerates; None when it completed.
    map_error: dict[str, Any] | None = None


@dataclass(frozen=True)
class AggregateSettings:
    """The deployment's side of the report."""

    judge_label: str  # how the report names the judge: "bedrock:<model id>" or the judge's name
    engine_name: str  # "stepfunctions", or "stepfunctions-local" on embedded AWS


@dataclass(frozen=True)
class AwsAdapters:
    """Where Aggregate reads and writes on AWS, clients injected by the handler."""

    s3: S3Store
    table: EvaluationTable
    metrics: MetricsPublisher
    events: EventPublisher
    review_queue: ReviewQueueStore | None = None  # a failed gate's failing items go here (REVIEW#<run_id>)


def collect_results(run_id: str, items: list[tuple[str, dict[str, Any]]], rubric: Rubric, table: EvaluationTable,
                    recorded_at: dict[str, str]) -> dict[str, list[EvaluationResult]]:
    """Each arm's results in item order. An item without a result (its child execution failed inside
    the Map's tolerance, or timed out) gets an explicit error record: nothing is lost. ``recorded_at``
    is filled with when each candidate result was written (read in the same query)."""
    out: dict[str, list[EvaluationResult]] = {}
    for arm in sorted({arm for arm, _ in items}, key=lambda name: name != "candidate"):
        recorded = {r.test_id: r for r in table.results_for_run(
            run_id, arm=arm, recorded_at=recorded_at if arm == "candidate" else None)}
        results: list[EvaluationResult] = []
        for case in (case for item_arm, case in items if item_arm == arm):
            result = recorded.pop(str(case.get("test_id")), None)
            if result is None:
                result = error_result(case, rubric, NO_RESULT, run_id=run_id).model_copy(update={"arm": arm})
                table.put_result(run_id, result)
                logger.warning("item %s (%s) without a result recorded as an error", result.test_id, arm)
            results.append(result)
        if recorded:  # left over from an earlier execution that reused this run id with other items
            logger.warning("ignoring %s results of items not in this run: %s", arm, sorted(recorded)[:50])
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


def _aws_report(request: AggregateInput, settings: AggregateSettings, a: AwsAdapters, run: dict[str, Any],
                rubric: Rubric, by_arm: dict[str, list[EvaluationResult]]) -> RunReport:
    """The report, from the run record Prepare registered and the files it wrote beside the results."""
    storage = BucketStorage(a.s3, request.bucket)
    targets = layout.read_targets(storage, request.targets_key)
    candidate, control = targets.specs["candidate"], targets.specs["control"]
    # A plain run (recorded answers, no control) reports no target.
    plain = candidate.kind == "recorded" and control is None
    facts = RunFacts(
        run_id=request.run_id, dataset=run.get("dataset") or request.dataset_id, trigger=request.trigger,
        judge=settings.judge_label, engine=settings.engine_name, started_at=run.get("started_at"),
        finished_at=datetime.now(timezone.utc).isoformat(timespec="milliseconds"),
        rejected_lines=layout.count_rejected(storage, layout.run_key(request.run_id, layout.REJECTED)),
        catalog=run.get("catalog"), filter_line=run.get("filter"),
        distribution=json.loads(run["distribution"]) if run.get("distribution") else None,
        execution={"arn": request.execution_arn} if request.execution_arn else None,
        judge_mode=run.get("judge_mode"), dataset_sha256=run.get("dataset_sha256"),
        dataset_version=run.get("dataset_version"), baseline_note=run.get("baseline_note"))
    return assemble_report(
        by_arm, rubric, facts, baseline=load_baseline(request.baseline_run_id, run.get("baseline_report_key"),
                                                      storage, a.table),
        target=None if plain else describe_target(candidate, by_arm.get("candidate", []),
                                                  targets.resolved_from["candidate"]),
        control_target=describe_target(control, by_arm.get("control", []), targets.resolved_from["control"]))


def _probe_metrics(request: AggregateInput, results: list[EvaluationResult]) -> list[dict[str, Any]]:
    """A probe run's failure rate and counts (``production.probes``); nothing for any other run."""
    if not is_probe_run(request.trigger):
        return []
    outcome = probe_outcome(results)
    logger.info("probe run %s: %d of %d judged probe(s) failed, %d unjudged, by class %s", request.run_id,
                outcome.failed, outcome.judged, outcome.unjudged, outcome.failed_by_class)
    return probe_metric_data(outcome)


def _close_run(request: AggregateInput, a: AwsAdapters, run: dict[str, Any], report: RunReport,
               results: list[EvaluationResult], rubric: Rubric, recorded_at: dict[str, str]) -> None:
    """The run record closed, the metrics published once, "EvaluationCompleted" emitted."""
    report_key = layout.run_key(request.run_id, layout.REPORT_JSON)
    a.table.complete_run(
        request.run_id, status="SUCCEEDED" if report.gate.passed else "GATE_FAILED", gate_passed=report.gate.passed,
        pass_rate=report.pass_rate, mean_composite=report.mean_composite, total_cases=report.total_cases,
        unscored_cases=report.unscored_cases, report_key=report_key, finished_at=report.finished_at,
        execution_arn=request.execution_arn)
    # A retried Aggregate (failed after publishing) must not count the run twice in the alarms.
    if not run.get("metrics_published"):
        a.metrics.put(run_metric_data(report, results, rubric.gate.min_pass_rate)
                      + evaluation_metric_data(report, results, recorded_at) + _probe_metrics(request, results))
        a.table.complete_run(request.run_id, metrics_published=True)
    a.events.evaluation_completed(
        {"run_id": request.run_id, "dataset_id": request.dataset_id, "gate_passed": report.gate.passed,
         "pass_rate": report.pass_rate, "report_uri": s3_uri(request.bucket, report_key),
         "reasons": report.gate.reasons},
        resources=[request.execution_arn] if request.execution_arn else None)


def _replay_diff(run_id: str, replay: dict[str, Any], by_arm: dict[str, list[EvaluationResult]],
                 storage: BucketStorage, store: ReviewQueueStore | None, location: str) -> dict[str, Any] | None:
    """A replay's diff files under the run's prefix, its regressed turns queued; what the report says."""
    files, items = replay_diff_outputs(replay, by_arm.get("candidate", []), by_arm.get("control", []), run_id)
    for name, text in files.items():
        layout.write_text(storage, layout.run_key(run_id, name), text)
    if store is None or not items:
        return None
    added = store.add(items)
    return {"queued": len(items), "newly_added": added, "location": location,
            "test_ids": [i.test_id for i in items[:50]]}


def _error_name(result: EvaluationResult) -> str | None:
    """The run-not-done error an item's error record names ("JudgeMisconfigured: ..."), if any."""
    name = (result.error or "").split(":", 1)[0].strip()
    return name if result.status == "error" and name in RUN_NOT_DONE_ERRORS else None


def run_not_done(by_arm: dict[str, list[EvaluationResult]], map_error: dict[str, Any] | None) -> dict[str, str] | None:
    """Why the run could not be done ({"error": name, "cause": text}), or None when its results make a
    verdict. A misconfigured judge on any item (the same for every item); a target unavailable on items
    of an arm none of whose items it answered; a Map that failed (more child executions failed than it
    tolerates: the most frequent run error among the records, else the Map's own error)."""
    named = [(name, r) for results in by_arm.values() for r in results if (name := _error_name(r))]
    judge = next((r for name, r in named if name == "JudgeMisconfigured"), None)
    if judge is not None:
        return {"error": "JudgeMisconfigured", "cause": f"{judge.test_id}: {judge.error}"[:1000]}
    for arm, results in by_arm.items():
        down = [r for name, r in named if name == "TargetUnavailable" and r.arm == arm]
        answered = any(r.generation is not None and r.generation.error is None for r in results)
        if down and not answered:
            return {"error": "TargetUnavailable",
                    "cause": f"the {arm} target answered none of the run's {len(results)} item(s); "
                             f"{down[0].test_id}: {down[0].error}"[:1000]}
    if map_error is not None:
        if named:
            name, first = Counter(n for n, _ in named).most_common(1)[0][0], named[0][1]
            return {"error": name, "cause": f"{first.test_id}: {first.error}"[:1000]}
        return {"error": str(map_error.get("Error") or "States.MapRunFailed"),
                "cause": " ".join(str(map_error.get("Cause") or "the item map failed").split())[:1000]}
    return None


def _close_run_not_done(request: AggregateInput, a: AwsAdapters, why: dict[str, str]) -> dict[str, Any]:
    """A run that could not be done: its record closed with the error, no report, no metrics and no
    review items (a run error is never a verdict); what the state machine's RunNotDone Fail reads."""
    a.table.complete_run(request.run_id, status="RUN_NOT_DONE", run_error=why["error"], run_error_cause=why["cause"],
                         finished_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                         execution_arn=request.execution_arn)
    logger.warning("run %s could not be done: %s: %s", request.run_id, why["error"], why["cause"])
    return {"gate_passed": False, "summary": f"{why['error']}: {why['cause']}", "report_key": None,
            "pass_rate": None, "run_error": why}


def aggregate_run(request: AggregateInput, settings: AggregateSettings, a: AwsAdapters) -> dict[str, Any]:
    """The whole of Aggregate; returns what the state machine's Choices and Fail states read:
    ``run_error`` set when the run could not be done (``run_not_done``), else the gate's verdict."""
    storage = BucketStorage(a.s3, request.bucket)
    rubric = layout.read_rubric(storage, request.rubric_key)
    run = a.table.get_run(request.run_id) or {}
    recorded_at: dict[str, str] = {}
    by_arm = collect_results(request.run_id, layout.read_items(storage, request.items_key), rubric, a.table,
                             recorded_at)
    why = run_not_done(by_arm, request.map_error)
    if why is not None:
        return _close_run_not_done(request, a, why)
    report = _aws_report(request, settings, a, run, rubric, by_arm)
    # Before the report is written, so it links the queue (idempotent: a retried Aggregate adds nothing).
    location = f"dynamodb:{REVIEW_PK_PREFIX}{request.run_id}"
    if run.get("replay"):
        queued = _replay_diff(request.run_id, json.loads(run["replay"]), by_arm, storage, a.review_queue, location)
    else:
        queued = queue_failing_items(report, by_arm.get("candidate", []), a.review_queue, location)
    report = report.model_copy(update={"review_queue": queued})
    layout.write_outputs(storage, layout.run_prefix(request.run_id), report_outputs(report, by_arm, rubric))
    results = by_arm.get("candidate", [])
    _close_run(request, a, run, report, results, rubric, recorded_at)
    summary = "passed" if report.gate.passed else " ".join(gate_summary(report).split())
    logger.info("run %s aggregated: %s", request.run_id, summary)
    return {"gate_passed": report.gate.passed, "summary": summary,
            "report_key": layout.run_key(request.run_id, layout.REPORT_JSON), "pass_rate": report.pass_rate,
            "total_cases": report.total_cases, "unscored_cases": report.unscored_cases,
            "control_cases": len(by_arm.get("control", [])), "run_error": None}
