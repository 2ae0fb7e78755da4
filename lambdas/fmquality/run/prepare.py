"""Prepare a run: validate the execution input, read the dataset, catalog and rubric, resolve the targets
once, write the run's items, rubric and targets (``run.layout``), register the run and resolve its
baseline and its judge mode (``run_judge_mode``). What it returns drives the state machine's
Distributed Map: which scoring path each item takes (per_dimension: one scorer per dimension;
combined: one ScoreCase call) and how many items run at once (the deployment's default for that mode
unless the input names one).

``select_cases`` (the subset a run scores, and the dataset's spread) is shared with the direct engine.
"""

from __future__ import annotations

import logging
import re
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from fmquality.adapters.dynamodb import CATALOG_REF_PREFIX, EvaluationTable, catalog_ref_version, json_attribute
from fmquality.adapters.s3 import BucketStorage, S3Store, parse_s3_uri
from fmquality.config.rubric import Rubric, load_rubric, parse_rubric
from fmquality.domain.case import CatalogItem, TestCase
from fmquality.domain.errors import (DatasetError, DatasetRejected, FilterError, LineError, ProfileError,
                                     RunAlreadyExists, S3ObjectNotFound)
from fmquality.language.catalog_index import CatalogIndex
from fmquality.run import dataset, layout
from fmquality.run.baseline import resolve_baseline
from fmquality.run.subsets import Filter, apply_filter, distribution, filter_from_input
from fmquality.run.targets import resolve_run_targets
from fmquality.schemes import scheme_for
from fmquality.targets.base import TargetSpec

logger = logging.getLogger(__name__)

# The error message lists bad lines up to this many; rejected.jsonl always holds all of them.
MAX_LINES_IN_MESSAGE = 200
_S3_URI = re.compile(r"^s3://[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9]/.+")
_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._\-]{0,127}$")


def _s3_uri(value: str | None) -> str | None:
    if value is not None and not _S3_URI.match(value):
        raise ValueError(f"must be an s3://bucket/key URI, got {value!r}")
    return value


def _run_id(value: str | None) -> str | None:
    if value is not None and not _RUN_ID.match(value):
        raise ValueError("must be 1-128 characters of letters, digits, '.', '_' or '-', starting with a letter or digit")
    return value


def _target(value: Any) -> TargetSpec | None:
    """A spec string or object (targets.base), parsed so a bad one fails Prepare naming its field."""
    if value is None:
        return None
    try:
        return TargetSpec.parse(value)
    except ValueError as exc:  # pydantic's ValidationError included: flatten it to one readable line
        errors = getattr(exc, "errors", None)
        message = ("; ".join(f"{'.'.join(map(str, e['loc'])) or 'spec'}: {e['msg']}" for e in errors())
                   if callable(errors) else str(exc))
        raise ValueError(f"not a valid target spec ({message})") from None


class ExecutionInput(BaseModel):
    """The execution input (documented in the README), plus what the state machine adds (execution id
    and name). A malformed input raises ``pydantic.ValidationError`` naming the field."""

    # Callers (EventBridge input transformers, the pipeline) may add keys of their own: they are
    # kept in ``model_extra`` and logged, not refused.
    model_config = ConfigDict(extra="allow")

    trigger: str = Field(default="manual", min_length=1, max_length=64)
    dataset: str
    catalog: str | None = None
    rubric: str | None = None
    baseline: str | None = None
    candidate: dict[str, Any] | None = None
    # What answers the cases (default: the recorded responses) and, for a paired run, the control.
    target: TargetSpec | None = None
    control: TargetSpec | None = None
    skip_invalid: bool = False
    # A subset of the dataset (fmquality.run.subsets): an object {"tags": [...], ...} or the CLI grammar.
    filter: dict[str, Any] | str | None = None
    # How the judge is asked: "per_dimension" or "combined" (default: the rubric's judge.mode).
    judge_mode: Literal["per_dimension", "combined"] | None = None
    max_concurrency: int | None = Field(default=None, ge=1, le=10000)
    tolerated_failure_percentage: float | None = Field(default=None, ge=0.0, le=100.0)
    # A label of the caller's for the run (kept on the run record). The run id itself is the
    # execution's name: a given id could reuse, and mix its results into, an existing run.
    run_label: str | None = Field(default=None, max_length=128)
    run_id: str | None = None  # read as the label (`fmquality start --run-id`)
    dataset_id: str | None = Field(default=None, min_length=1, max_length=256)
    execution_id: str | None = None
    execution_name: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _flatten_execution_input(cls, data: Any) -> Any:
        """{"execution_input": <the execution input>, "execution_id": ..., "execution_name": ...}: the
        shape a Task's Parameters build from "$" and "$$.Execution" without merging objects."""
        if isinstance(data, dict) and isinstance(data.get("execution_input"), dict):
            rest = {k: v for k, v in data.items() if k != "execution_input"}
            return {**data["execution_input"], **rest}
        return data

    @field_validator("dataset", "rubric")
    @classmethod
    def _s3_uris(cls, value: str | None) -> str | None:
        return _s3_uri(value)

    @field_validator("target", "control", mode="before")
    @classmethod
    def _target_specs(cls, value: Any) -> TargetSpec | None:
        return _target(value)

    @field_validator("catalog")
    @classmethod
    def _catalog_source(cls, value: str | None) -> str | None:
        """A catalog file in S3, or a snapshot in the evaluation table (dynamodb:latest, dynamodb:<version>)."""
        if value is not None and value.startswith(CATALOG_REF_PREFIX):
            catalog_ref_version(value)
            return value
        return _s3_uri(value)

    @field_validator("run_id")
    @classmethod
    def _run_id_shape(cls, value: str | None) -> str | None:
        return _run_id(value)

    @field_validator("baseline")
    @classmethod
    def _baseline_shape(cls, value: str | None) -> str | None:
        if value in (None, "", "none", "null"):
            return None
        return value if value == "auto" else _run_id(value)


@dataclass(frozen=True)
class PrepareSettings:
    """The deployment's side of a run: where its files go, the judge it names, the Map's defaults."""

    bucket: str
    judge_label: str
    # Map children at once for a per_dimension run (and for a combined one without its own default).
    default_max_concurrency: int
    default_tolerated_failure_percentage: float
    # ... for a combined run: 1 judge call per item instead of ~3.2, so more items fit the same quota.
    combined_max_concurrency: int | None = None

    def max_concurrency_for(self, judge_mode: str) -> int:
        if judge_mode == "combined" and self.combined_max_concurrency:
            return self.combined_max_concurrency
        return self.default_max_concurrency


@dataclass(frozen=True)
class Selection:
    """The cases a run scores, the filter's description and the whole dataset's spread (for the report)."""

    cases: list[TestCase]
    filter_line: str
    distribution: dict[str, dict[str, int]]


def select_cases(cases: list[TestCase], subset: Filter) -> Selection:
    chosen, filter_line = apply_filter(cases, subset)
    return Selection(chosen, filter_line, distribution(cases))


def derive_run_id(request: ExecutionInput, now: datetime) -> str:
    """The execution's name (unique among its state machine's executions), else a timestamp and a random
    suffix. Never an id from the input (that is the run's label)."""
    if request.execution_name:
        # Execution names allow characters our S3 prefixes and keys should not carry.
        cleaned = re.sub(r"[^A-Za-z0-9._-]+", "-", request.execution_name).strip("-.")[:128]
        if cleaned:
            return cleaned
    return f"{now:%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:8]}"


def derive_dataset_id(request: ExecutionInput) -> str:
    if request.dataset_id:
        return request.dataset_id
    _, key = parse_s3_uri(request.dataset)
    return re.sub(r"\.(jsonl|ndjson|json)$", "", key, flags=re.IGNORECASE)


def rejection_message(source: str, errors: list[LineError], rejected_uri: str) -> str:
    lines = [str(e) for e in errors[:MAX_LINES_IN_MESSAGE]]
    if len(errors) > MAX_LINES_IN_MESSAGE:
        lines.append(f"... and {len(errors) - MAX_LINES_IN_MESSAGE} more problem(s), all in {rejected_uri}")
    return (f"{source}: {layout.rejected_line_count(errors)} invalid line(s) (set skip_invalid to evaluate the "
            f"valid ones):\n" + "\n".join(lines))


def table_catalog(ref: str, table: EvaluationTable) -> tuple[CatalogIndex, str]:
    """The snapshot ``dynamodb:latest`` or ``dynamodb:<version>`` names, as one index over its items,
    and the version it resolved to. Only a complete load (META written, every item there) is used."""
    version = catalog_ref_version(ref)
    if version == "latest":
        version = table.latest_catalog_version()
        if version is None:
            raise DatasetRejected(f"catalog {ref}: no catalog snapshot has been loaded into the table "
                                  "(fmquality catalog load)")
    meta = table.catalog_meta(version)
    if meta is None:
        raise DatasetRejected(f"catalog {ref}: version {version!r} does not exist in the table "
                              "(or its load did not finish)")
    items = table.catalog_items(version)
    if not items:
        raise DatasetRejected(f"catalog {ref}: version {version!r} is empty")
    if len(items) != meta["item_count"]:
        raise DatasetRejected(f"catalog {ref}: version {version!r} holds {len(items)} item(s) where its load "
                              f"wrote {meta['item_count']}; load the catalog again")
    return CatalogIndex(items), version


def _read(s3: S3Store, uri: str, what: str) -> bytes:
    try:
        return s3.read_uri(uri)
    except S3ObjectNotFound as exc:
        raise DatasetRejected(f"cannot read {what}: {exc}") from exc


def read_catalog(ref: str | None, s3: S3Store,
                 table: EvaluationTable) -> tuple[list[CatalogItem] | CatalogIndex | None, str | None]:
    """The run's catalog (a file in S3 or a snapshot in the table) and how the run record names it:
    ``dynamodb:latest`` as the version it resolved to, so the report names the snapshot."""
    if not ref:
        return None, ref
    if ref.startswith(CATALOG_REF_PREFIX):
        catalog, version = table_catalog(ref, table)
        logger.info("catalog snapshot %s from the table: %d items", version, len(catalog))
        return catalog, f"{CATALOG_REF_PREFIX}{version}"
    try:
        return dataset.parse_catalog(_read(s3, ref, "catalog"), ref), ref
    except DatasetError as exc:
        problems = "\n".join(str(e) for e in exc.errors)
        raise DatasetRejected(f"{exc}" + (f":\n{problems}" if problems else "")) from exc


def run_judge_mode(requested: str | None, rubric: Rubric) -> str:
    """The run's judge mode: the one asked for, else the rubric's; per_dimension whatever is asked
    when the rubric's scheme does not judge combined (its dimensions need their own prompts)."""
    mode = requested or rubric.judge.mode
    if mode != "combined":
        return mode
    try:
        combined = scheme_for(rubric).combined_judging
    except ProfileError:  # every item says so in its error record; the mode does not matter then
        combined = False
    if not combined:
        logger.warning("judge mode combined asked for, but profile %s does not judge combined: per_dimension",
                       rubric.profile)
        return "per_dimension"
    return mode


def map_max_concurrency(requested: int, specs: list[TargetSpec | None]) -> int:
    """The Map never runs more items at once than the most limited target of the run accepts."""
    limits = [s.max_concurrency for s in specs if s is not None and s.max_concurrency]
    return min([requested, *limits])


def map_items(cases: list[TestCase], targets: layout.RunTargets) -> list[dict[str, Any]]:
    """One element per (case, arm), the two arms of a case side by side so a pair is generated close in
    time. An arm whose target is not ``recorded`` gets the case without its recorded response: that
    answer is not the one to score, and leaving it out keeps it from an error record by mistake."""
    arms = [(arm, spec) for arm, spec in targets.specs.items() if spec is not None]
    items = []
    for case in cases:
        data = case.model_dump(mode="json")
        for arm, spec in arms:
            items.append({"arm": arm, "case": data if spec.kind == "recorded" else {**data, "response": None}})
    return items


def _write_rejected(request: ExecutionInput, loaded: dataset.LoadedDataset, storage: layout.Storage,
                 run_id: str) -> int:
    """Write rejected.jsonl (always, so a rejected run still shows every bad line) and return the
    number of bad lines; DatasetRejected when they stop the run or nothing valid is left."""
    rejected_uri = layout.write_text(storage, layout.run_key(run_id, layout.REJECTED),
                                     layout.rejected_text(loaded.errors))
    rejected = layout.rejected_line_count(loaded.errors)
    if loaded.errors and not request.skip_invalid:
        raise DatasetRejected(rejection_message(request.dataset, loaded.errors, rejected_uri))
    if not loaded.cases:
        raise DatasetRejected(f"{request.dataset}: the dataset has no valid test cases "
                              f"({rejected} rejected line(s), see {rejected_uri})")
    if loaded.errors:
        logger.warning("skipping %d invalid line(s), see %s", rejected, rejected_uri)
    return rejected


def _selection(request: ExecutionInput, cases: list[TestCase]) -> Selection:
    try:
        subset = filter_from_input(request.filter)
    except FilterError as exc:
        raise DatasetRejected(str(exc)) from exc
    selection = select_cases(cases, subset)
    if not selection.cases:
        raise DatasetRejected(f"{request.dataset}: the filter selects no case ({selection.filter_line})")
    return selection


def _described(spec: TargetSpec | None, resolved_from: str | None) -> str | None:
    if spec is None:
        return None
    described = spec.describe()
    return json_attribute(described | {"resolved_from": resolved_from} if resolved_from else described)


@dataclass(frozen=True)
class _Run:
    """What Prepare found and wrote, for the run record and the Map."""

    run_id: str
    dataset_id: str
    catalog: str | None
    rubric: Rubric
    targets: layout.RunTargets
    selection: Selection
    items: list[dict[str, Any]]
    rejected: int
    baseline: tuple[str | None, str | None]
    judge_mode: str


def _register(table: EvaluationTable, run: _Run, request: ExecutionInput, settings: PrepareSettings,
              now: datetime) -> None:
    key = lambda name: layout.run_key(run.run_id, name)  # noqa: E731
    table.register_run(
        run.run_id, run.dataset_id, started_at=now.isoformat(timespec="milliseconds"), status="RUNNING",
        dataset=request.dataset, catalog=run.catalog, trigger=request.trigger, rubric_version=run.rubric.version,
        rubric_key=key(layout.RUBRIC), items_key=key(layout.ITEMS), item_count=len(run.items),
        case_count=len(run.selection.cases), filter=run.selection.filter_line,
        distribution=json_attribute(run.selection.distribution), rejected_count=run.rejected,
        baseline_run_id=run.baseline[0], baseline_report_key=run.baseline[1],
        run_label=request.run_label or request.run_id, judge=settings.judge_label,
        execution_id=request.execution_id,
        candidate=json_attribute(request.candidate) if request.candidate is not None else None,
        target=_described(run.targets.specs["candidate"], run.targets.resolved_from["candidate"]),
        control_target=_described(run.targets.specs["control"], run.targets.resolved_from["control"]),
        targets_key=key(layout.TARGETS), judge_mode=run.judge_mode,
    )


def _map_input(run: _Run, request: ExecutionInput, settings: PrepareSettings) -> dict[str, Any]:
    specs = list(run.targets.specs.values())
    tolerated = (request.tolerated_failure_percentage if request.tolerated_failure_percentage is not None
                 else settings.default_tolerated_failure_percentage)
    key = lambda name: layout.run_key(run.run_id, name)  # noqa: E731
    return {
        "run_id": run.run_id, "bucket": settings.bucket, "items_key": key(layout.ITEMS),
        "item_count": len(run.items), "targets_key": key(layout.TARGETS),
        # Nothing to generate: the recorded answers are scored as they are, and the Map skips Generate.
        "generate": run.targets.specs["candidate"].kind != "recorded" or run.targets.specs["control"] is not None,
        "rejected_count": run.rejected, "rubric_key": key(layout.RUBRIC), "rubric_version": run.rubric.version,
        "dataset_id": run.dataset_id, "baseline_run_id": run.baseline[0], "judge_mode": run.judge_mode,
        "max_concurrency": map_max_concurrency(
            request.max_concurrency or settings.max_concurrency_for(run.judge_mode), specs),
        # A float: the Map's ToleratedFailurePercentagePath needs a number; the local engine a float.
        "tolerated_failure_percentage": float(tolerated),
        "trigger": request.trigger,
    }


def prepare_run(request: ExecutionInput, settings: PrepareSettings, s3: S3Store, table: EvaluationTable,
                clients: Any = None, now: datetime | None = None) -> dict[str, Any]:
    """The whole of Prepare. ``clients`` (service name -> boto3 client) reaches SSM for ``ssm:`` specs."""
    now = now or datetime.now(timezone.utc)
    run_id = derive_run_id(request, now)
    if table.get_run(run_id) is not None:  # checked first so nothing of the existing run is touched
        raise RunAlreadyExists(f"run {run_id!r} exists already; a run is never re-registered (start a new execution)")
    if request.model_extra:
        logger.warning("execution input has keys the gate does not use: %s", sorted(request.model_extra))
    # First, before the dataset is read or anything written: a target that cannot be resolved stops the run.
    targets = resolve_run_targets(request.target, request.control, clients)
    catalog, catalog_used = read_catalog(request.catalog, s3, table)
    # The rubric first: its profile's categories are the intents a case may name.
    rubric = parse_rubric(_read(s3, request.rubric, "rubric"), request.rubric) if request.rubric else load_rubric()
    loaded = dataset.parse_lines(_read(s3, request.dataset, "dataset").splitlines(), request.dataset, catalog,
                                 rubric.profile_spec.categories)
    storage = BucketStorage(s3, settings.bucket)
    rejected = _write_rejected(request, loaded, storage, run_id)
    layout.write_rubric(storage, layout.run_key(run_id, layout.RUBRIC), rubric)
    layout.write_targets(storage, layout.run_key(run_id, layout.TARGETS), targets)
    selection = _selection(request, loaded.cases)
    items = map_items(selection.cases, targets)
    layout.write_items(storage, layout.run_key(run_id, layout.ITEMS), items)
    dataset_id = derive_dataset_id(request)
    run = _Run(run_id, dataset_id, catalog_used, rubric, targets, selection, items, rejected,
               resolve_baseline(request.baseline, dataset_id, table), run_judge_mode(request.judge_mode, rubric))
    _register(table, run, request, settings, now)
    logger.info("run %s prepared: %d items, %d cases, %s, judge mode %s", run_id, len(items), len(selection.cases),
                selection.filter_line, run.judge_mode)
    return _map_input(run, request, settings)
