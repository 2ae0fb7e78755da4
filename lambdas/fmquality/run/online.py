"""Online judging and the stream drift check, end to end, over injected stores (the Lambda handlers
and the CLI pass the AWS or the local ones).

- ``judge_turns``: captured turns -> the stratified online sampler -> the gate's scoring core with the
  recorded target (``run.evaluate.evaluate_cases``, no target: the turn's own answer is scored) ->
  results stored like any run's items under ``online-YYYYMMDDHH`` -> window cells -> metrics.
- ``check_drift``: window cells since the last check -> ``stream_drift.check_stream`` against the
  approved reference -> DriftCusum / DriftKsStatistic / DriftFlag -> per alarm, the top failing items
  and a ``QualityDriftDetected`` event (and an SNS text).
- ``approve_window`` / ``approve_run``: the reference of a window of online results or of one run,
  written to ``production/drift/reference.json`` (the command and the deployed action share it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

from fmquality.config.watch import WatchConfig
from fmquality.domain.case import TestCase
from fmquality.domain.results import EvaluationResult
from fmquality.production.capture import TurnRecord
from fmquality.production.drift import Reference
from fmquality.production.drift_alerts import (DRIFT_DETECTED, current_version, drift_detail, drift_text,
                                               stream_metric_data, top_failing_items)
from fmquality.production.online import OnlineSampler, online_metric_data, online_run_id, online_run_ids
from fmquality.production.sample import turn_to_case
from fmquality.production.stream_drift import StreamAlarm, StreamState, approve_reference, captured_at, check_stream
from fmquality.run.evaluate import evaluate_cases

if TYPE_CHECKING:
    from fmquality.config.rubric import Rubric
    from fmquality.judges.base import Judge

REFERENCE_KEY = "production/drift/reference.json"
STREAM_STATE_KEY = "production/drift/stream-state.json"
ReadRun = Callable[[str], list[EvaluationResult]]


def judge_turns(turns: Iterable[TurnRecord], sampler: OnlineSampler, rubric: "Rubric", judge: "Judge", *,
                put_result: Callable[[str, EvaluationResult], None], cells: Any, config: WatchConfig,
                put_metrics: Callable[[list[dict[str, Any]]], None], concurrency: int = 4) -> list[EvaluationResult]:
    """Sample, judge (recorded target), store and count; returns the results (one per sampled turn)."""
    chosen = sampler.select(turns)
    by_run: dict[str, list[TestCase]] = {}
    for turn, reason in chosen:
        case = TestCase.model_validate(turn_to_case(turn))
        case = case.model_copy(update={"tags": [*case.tags, "online", f"sampled:{reason}"]})
        by_run.setdefault(online_run_id(turn.timestamp), []).append(case)
    results: list[EvaluationResult] = []
    for run_id, cases in sorted(by_run.items()):
        for result in evaluate_cases(cases, rubric, judge, run_id=run_id, concurrency=concurrency):
            put_result(run_id, result)
            results.append(result)
    cells.add(results, config.stream_drift.window_minutes)
    if results:
        put_metrics(online_metric_data(results))
    return results


def window_results(read_run: ReadRun, start: datetime, end: datetime) -> list[EvaluationResult]:
    """The stored online results captured in [start, end)."""
    out = []
    for run_id in online_run_ids(start, end):
        out.extend(r for r in read_run(run_id) if (when := captured_at(r)) is not None and start <= when < end)
    return out


def approve_window(read_run: ReadRun, start: datetime, end: datetime, config: WatchConfig,
                   approved_by: str | None = None) -> Reference:
    results = window_results(read_run, start, end)
    source = {"window": {"from": start.isoformat(), "to": end.isoformat()}, "approved_by": approved_by,
              "approved_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    return approve_reference(results, source, config.stream_drift, config.drift)


def approve_run(read_run: ReadRun, run_id: str, config: WatchConfig, approved_by: str | None = None) -> Reference:
    source = {"run_id": run_id, "approved_by": approved_by,
              "approved_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    return approve_reference(read_run(run_id), source, config.stream_drift, config.drift)


def check_drift(now: datetime, *, reference: Reference, state: StreamState | None, cells: Any, read_run: ReadRun,
                config: WatchConfig, report_link: Callable[[StreamAlarm], str],
                put_event: Callable[[str, dict[str, Any]], Any], put_metrics: Callable[[list[dict[str, Any]]], None],
                notify: Callable[[str, str], Any] | None = None) -> tuple[list[dict[str, Any]], StreamState]:
    """One drift check; returns the details of the ``QualityDriftDetected`` events it emitted and the new state."""
    settings = config.stream_drift
    span = timedelta(minutes=max(settings.ks_window_minutes, settings.window_minutes) + settings.window_minutes)
    since = min(state.processed_to, now - span) if state and state.processed_to else now - span
    report, new_state = check_stream(cells.between(since - span, now), reference, state, settings, now)
    put_metrics(stream_metric_data(report, now))
    previous = (reference.source.get("versions") or [None])[-1]
    details = []
    for alarm in report.alarms:
        results = window_results(read_run, alarm.window_from, alarm.window_to)
        top = top_failing_items(results, alarm, settings.top_items)
        detail = drift_detail(alarm, top, report_link(alarm), current_version(results), previous)
        put_event(DRIFT_DETECTED, detail)
        if notify:
            notify(*drift_text(detail))
        details.append(detail)
    return details, new_state


def results_from(rows: Sequence[EvaluationResult]) -> ReadRun:
    """A ``ReadRun`` over results in memory (tests, the CLI over local folders)."""
    def read(run_id: str) -> list[EvaluationResult]:
        return [r for r in rows if r.run_id == run_id]
    return read
