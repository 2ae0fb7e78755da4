"""A run's baseline: which report a run compares with (Prepare), reading it (Aggregate), and approving
a finished run as its dataset's baseline (``fmquality approve-baseline``, the local state machine).

An approved baseline's report is frozen under its own key (``layout.baseline_key``, written once), and
the approval in the table points there: nothing that later rewrites the run's own report changes what
the baseline is.

Every run records its dataset's content hash (``dataset_sha256``); ``baseline: auto`` never compares
runs over different contents: an approved baseline over other (or unknown) contents is refused with a
note, and the run goes on without a baseline.
"""

from __future__ import annotations

import hashlib
from typing import Any

from fmquality.adapters.dynamodb import EvaluationTable
from fmquality.adapters.s3 import S3Store
from fmquality.domain.errors import BaselineNotFound, S3ObjectExists, S3ObjectNotFound
from fmquality.domain.report import RunReport
from fmquality.run.layout import Storage, baseline_key


def dataset_sha256(data: bytes) -> str:
    """A dataset's content hash, as runs record it: sha256 of its bytes, hex."""
    return hashlib.sha256(data).hexdigest()


def content_mismatch(baseline_run_id: str, baseline_sha256: str | None, sha256: str | None) -> str | None:
    """Why an approved baseline cannot be compared with this run (None: it can): its dataset content differs
    or is unknown (a run recorded before content hashes)."""
    if sha256 is None or baseline_sha256 == sha256:
        return None
    theirs = f"sha256 {baseline_sha256[:12]}" if baseline_sha256 else "no recorded content hash"
    return (f"baseline: auto: the approved baseline run {baseline_run_id!r} was over other dataset contents "
            f"({theirs}, this run's sha256 {sha256[:12]}); not compared, so the gate runs without a baseline "
            "(approve a run over these contents as the baseline)")


def resolve_baseline(baseline: str | None, dataset_id: str, table: EvaluationTable,
                     sha256: str | None = None) -> tuple[str | None, str | None, str | None]:
    """The baseline's run id and report key, and why an approved one was not taken. "auto": the approved
    baseline of the dataset, if any (its frozen copy), and only if its run was over the same dataset
    contents (``sha256``); a run id: that run's report, which must exist (the caller's explicit choice)."""
    if baseline is None:
        return None, None, None
    if baseline == "auto":
        approved = table.get_baseline(dataset_id)
        if not approved:
            return None, None, None
        note = content_mismatch(approved["run_id"], (table.get_run(approved["run_id"]) or {}).get("dataset_sha256"),
                                sha256)
        return (None, None, note) if note else (approved["run_id"], approved["report_key"], None)
    run = table.get_run(baseline)
    if run is None or not run.get("report_key"):
        raise BaselineNotFound(f"baseline run {baseline!r} has no finished report")
    return baseline, run["report_key"], None


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
