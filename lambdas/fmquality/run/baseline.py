"""A run's baseline: which report a run compares with (Prepare), reading it (Aggregate), and approving
a finished run as its dataset's baseline (``fmquality approve-baseline``, the local state machine).

An approved baseline's report is frozen under its own key (``layout.baseline_key``, written once), and
the approval in the table points there: nothing that later rewrites the run's own report changes what
the baseline is.
"""

from __future__ import annotations

from typing import Any

from fmquality.adapters.dynamodb import EvaluationTable
from fmquality.adapters.s3 import S3Store
from fmquality.domain.errors import BaselineNotFound, S3ObjectExists, S3ObjectNotFound
from fmquality.domain.report import RunReport
from fmquality.run.layout import Storage, baseline_key


def resolve_baseline(baseline: str | None, dataset_id: str, table: EvaluationTable) -> tuple[str | None, str | None]:
    """The baseline's run id and report key. "auto": the approved baseline of the dataset, if any (its
    frozen copy); a run id: that run's report, which must exist."""
    if baseline is None:
        return None, None
    if baseline == "auto":
        approved = table.get_baseline(dataset_id)
        return (approved["run_id"], approved["report_key"]) if approved else (None, None)
    run = table.get_run(baseline)
    if run is None or not run.get("report_key"):
        raise BaselineNotFound(f"baseline run {baseline!r} has no finished report")
    return baseline, run["report_key"]


def load_baseline(baseline_run_id: str | None, key: str | None, storage: Storage,
                  table: EvaluationTable) -> RunReport | None:
    """The baseline's report: ``key`` when Prepare resolved one, else the baseline run's own report."""
    if not baseline_run_id:
        return None
    key = key or (table.get_run(baseline_run_id) or {}).get("report_key")
    if not key:
        raise BaselineNotFound(f"baseline run {baseline_run_id!r} has no report")
    try:
        return RunReport.model_validate_json(storage.read_bytes(key))
    except S3ObjectNotFound as exc:
        raise BaselineNotFound(f"baseline run {baseline_run_id!r}: {exc}") from exc


def approve_baseline(table: EvaluationTable, s3: S3Store, bucket: str, run_id: str, approved_by: str | None = None,
                     allow_failed_gate: bool = False) -> dict[str, Any]:
    """Approve a finished run as its dataset's baseline: freeze its report, then point the approval at
    the frozen copy. Raises ValueError saying why a run cannot be approved."""
    run = table.get_run(run_id)
    if run is None:
        raise ValueError(f"run {run_id!r} does not exist in the table")
    if not run.get("report_key"):
        raise ValueError(f"run {run_id!r} has no report yet (status {run.get('status', 'unknown')})")
    if run.get("gate_passed") is not True and not allow_failed_gate:
        raise ValueError(f"run {run_id!r} failed its own gate; pass --allow-failed-gate to approve it anyway")
    report = s3.read_bytes(bucket, run["report_key"])
    frozen = baseline_key(run["dataset_id"], run_id)
    try:
        s3.write_bytes_once(bucket, frozen, report, "application/json")
    except S3ObjectExists:
        if s3.read_bytes(bucket, frozen) != report:
            raise ValueError(f"run {run_id!r} was approved before with another report; its frozen copy "
                             f"s3://{bucket}/{frozen} stays as it is") from None
    return table.approve_baseline(run["dataset_id"], run_id, frozen, approved_by=approved_by)
