"""Prepare a run: validate the execution input, read the dataset, catalog and rubric, resolve the targets
once, write the run's items, rubric and targets (``run.layout``), register the run and resolve its
baseline and its judge mode (``run_judge_mode``). What it returns drives the state machine's
Distributed Map: which scoring path each item takes (per_dimension: one scorer per dimension;
combined: one ScoreCase call) and how many items run at once (the deployment's default for that mode
unless the input names one).

A replay (``"replay": {"from", "to", "filter"?}``, ``run.replay``) takes its cases from the captured turns
of the window instead of a dataset, states its estimated cost and is refused above the deployment's
budget unless ``"approve_cost": true``.

``select_cases`` (the subset a run scores, and the dataset's spread) is shared with the direct engine.
"""

from __future__ import annotations

import logging
import re
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from fmquality.adapters.dynamodb import CATALOG_REF_PREFIX, EvaluationTable, catalog_ref_version, json_attribute
from fmquality.adapters.s3 import BucketStorage, S3Store, parse_s3_uri
from fmquality.config.rubric import Rubric, load_rubric, parse_rubric
from fmquality.domain.case import TestCase
from fmquality.domain.errors import DatasetRejected, FilterError, LineError, ProfileError, RunAlreadyExists
from fmquality.run import dataset, layout
from fmquality.run.baseline import dataset_sha256, resolve_baseline
from fmquality.run.catalog_source import _read, read_catalog, table_catalog  # noqa: F401 - Prepare's readers
from fmquality.domain.payload import INLINE_CASE_BYTES
from fmquality.run.replay import (DEFAULT_BUDGET_USD, REPLAY_CASES, REPLAY_TRIGGER, ReplayRequest, cases_text,
                                  priced_replay, window_cases)
from fmquality.run.subsets import Filter, apply_filter, distribution, filter_from_input
from fmquality.run.targets import check_judge_is_not_generator, generating_model_id, resolve_run_targets
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
    # A window of captured turns answered by target and control (run.replay); default trigger "replay".
    replay: ReplayRequest | None = None
    dataset: str | None = Field(default=None, validate_default=True)  # required unless the run is a replay
    approve_cost: bool = False  # a replay above the deployment's budget starts only with this
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
    # The caller's name for this version of the dataset (default: "sha256:" and the first 12 of its hash).
    dataset_version: str | None = Field(default=None, min_length=1, max_length=128)
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

    @model_validator(mode="after")
    def _dataset_or_replay(self) -> "ExecutionInput":
        if self.replay is not None:
            if self.dataset is not None:
                raise ValueError("give a dataset or a replay window, not both")
            if self.target is None or self.control is None:
                raise ValueError("replay: needs a target (the candidate) and a control")
            if "trigger" not in self.model_fields_set:
                self.trigger = REPLAY_TRIGGER
        return self

    @field_validator("rubric")
    @classmethod
    def _s3_uris(cls, value: str | None) -> str | None:
        return _s3_uri(value)

    @field_validator("dataset")
    @classmethod
    def _dataset_unless_replay(cls, value: str | None, info: ValidationInfo) -> str | None:
        # An invalid replay (absent from info.data) has its own error: no second one here.
        if value is None and "replay" in info.data and info.data["replay"] is None:
            raise ValueError("Field required (an s3://bucket/key URI, unless the input is a replay)")
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
    # The deployment's judge and its model (None: the rubric's judge.model_id, for a bedrock judge).
    judge: str = "offline"
    judge_model_id: str | None = None
    # A replay estimated above this starts only with "approve_cost": true (REPLAY_BUDGET_USD).
    replay_budget_usd: float = DEFAULT_BUDGET_USD

    def judge_model_for(self, rubric: Rubric) -> str | None:
        """The model that judges this run: only a Bedrock judge is a model (offline/scripted compute)."""
        if self.judge != "bedrock":
            return None
        return self.judge_model_id or rubric.judge.model_id

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
    if request.dataset is None:  # a replay: the captured turns
        return "production/turns"
    _, key = parse_s3_uri(request.dataset)
    return re.sub(r"\.(jsonl|ndjson|json)$", "", key, flags=re.IGNORECASE)


def rejection_message(source: str, errors: list[LineError], rejected_uri: str) -> str:
    lines = [str(e) for e in errors[:MAX_LINES_IN_MESSAGE]]
    if len(errors) > MAX_LINES_IN_MESSAGE:
        lines.append(f"... and {len(errors) - MAX_LINES_IN_MESSAGE} more problem(s), all in {rejected_uri}")
    return (f"{source}: {layout.rejected_line_count(errors)} invalid line(s) (set skip_invalid to evaluate the "
            f"valid ones):\n" + "\n".join(lines))


# Judges that compute their verdicts instead of calling a model: fanning an item out to one task per
# dimension spreads no calls for them, it only runs more states (the scores are the same either way).
_NO_CALL_JUDGES = frozenset({"offline", "scripted"})


def run_judge_mode(requested: str | None, rubric: Rubric, judge: str | None = None) -> str:
    """The run's judge mode: the one asked for, else the rubric's, except that a judge that makes no
    calls (``judge``: offline, scripted) scores each item in one task unless per_dimension is asked
    for by name; per_dimension whatever is asked when the rubric's scheme does not judge combined
    (its dimensions need their own prompts)."""
    mode = requested or ("combined" if judge in _NO_CALL_JUDGES else rubric.judge.mode)
    if mode != "combined":
        return mode
    try:
        combined = scheme_for(rubric).combined_judging
    except ProfileError:  # every item says so in its error record; the mode does not matter then
        combined = False
    if not combined:
        if requested == "combined":
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


def _selection(cases: list[TestCase], subset_input: dict[str, Any] | str | None, source: str) -> Selection:
    try:
        subset = filter_from_input(subset_input)
    except FilterError as exc:
        raise DatasetRejected(str(exc)) from exc
    selection = select_cases(cases, subset)
    if not selection.cases:
        raise DatasetRejected(f"{source}: the filter selects no case ({selection.filter_line})")
    return selection


def _replay_selection(request: ExecutionInput, settings: PrepareSettings, rubric: Rubric, targets: layout.RunTargets,
                      judge_mode: str, clients: Any) -> tuple[Selection, dict[str, Any], str]:
    """A replay's cases (the window's turns in the data bucket, filtered), its record with the estimated
    cost (DatasetRejected above the budget unless approved) and how the run names its source."""
    replay = request.replay
    assert replay is not None and clients is not None, "a replay reads the turns with the clients' S3"
    source = f"s3://{settings.bucket}/production/turns/ [{replay.start}, {replay.end})"
    selection = _selection(window_cases(replay, clients("s3"), settings.bucket),
                           replay.filter if replay.filter is not None else request.filter, source)
    record = priced_replay(
        selection.cases, rubric, replay, judge=settings.judge, judge_model_id=settings.judge_model_for(rubric),
        generating_models={arm: generating_model_id(spec, clients) for arm, spec in targets.specs.items() if spec},
        mode=judge_mode, budget_usd=settings.replay_budget_usd, approved=request.approve_cost)
    return selection, record, source


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
    baseline: tuple[str | None, str | None, str | None]  # run id, report key, why an approved one was refused
    judge_mode: str
    dataset_sha256: str
    dataset_version: str
    dataset: str | None = None  # the dataset's URI, or the replayed window's
    replay: dict[str, Any] | None = None  # run.replay.replay_record: window, estimated cost, budget


def _register(table: EvaluationTable, run: _Run, request: ExecutionInput, settings: PrepareSettings,
              now: datetime) -> None:
    key = lambda name: layout.run_key(run.run_id, name)  # noqa: E731
    table.register_run(
        run.run_id, run.dataset_id, started_at=now.isoformat(timespec="milliseconds"), status="RUNNING",
        dataset=run.dataset, catalog=run.catalog, trigger=request.trigger, rubric_version=run.rubric.version,
        rubric_key=key(layout.RUBRIC), items_key=key(layout.ITEMS), item_count=len(run.items),
        case_count=len(run.selection.cases), filter=run.selection.filter_line,
        distribution=json_attribute(run.selection.distribution), rejected_count=run.rejected,
        baseline_run_id=run.baseline[0], baseline_report_key=run.baseline[1],
        run_label=request.run_label or request.run_id, judge=settings.judge_label,
        execution_id=request.execution_id,
        candidate=json_attribute(request.candidate) if request.candidate is not None else None,
        target=_described(run.targets.specs["candidate"], run.targets.resolved_from["candidate"]),
        control_target=_described(run.targets.specs["control"], run.targets.resolved_from["control"]),
        targets_key=key(layout.TARGETS), judge_mode=run.judge_mode, dataset_sha256=run.dataset_sha256,
        dataset_version=run.dataset_version, baseline_note=run.baseline[2],
        replay=json_attribute(run.replay) if run.replay else None,
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
        "replay": run.replay,
    }


def prepare_run(request: ExecutionInput, settings: PrepareSettings, s3: S3Store, table: EvaluationTable,
                clients: Any = None, now: datetime | None = None) -> dict[str, Any]:
    """The whole of Prepare. ``clients`` (service name -> boto3 client) reaches SSM for ``ssm:`` specs."""
    now = now or datetime.now(timezone.utc)
    run_id = derive_run_id(request, now)
    existing = table.get_run(run_id)
    # Checked first so nothing of another execution's run is touched. A retry of Prepare by the execution
    # that registered the run (same ARN, still RUNNING) redoes the same work and keeps its start time.
    retry = existing is not None and bool(request.execution_id) and (
        existing.get("execution_id"), existing.get("status")) == (request.execution_id, "RUNNING")
    if existing is not None and not retry:
        raise RunAlreadyExists(f"run {run_id!r} exists already; a run is never re-registered (start a new execution)")
    now = datetime.fromisoformat(existing["started_at"]) if existing is not None else now
    if request.model_extra:
        logger.warning("execution input has keys the gate does not use: %s", sorted(request.model_extra))
    # First, before the dataset is read or anything written: a target that cannot be resolved stops the run.
    targets = resolve_run_targets(request.target, request.control, clients)
    catalog, catalog_used = read_catalog(request.catalog, s3, table)
    # The rubric first: its profile's categories are the intents a case may name.
    rubric = parse_rubric(_read(s3, request.rubric, "rubric"), request.rubric) if request.rubric else load_rubric()
    check_judge_is_not_generator(settings.judge_model_for(rubric),
                                 {"target": targets.specs["candidate"], "control": targets.specs["control"]}, clients)
    judge_mode = run_judge_mode(request.judge_mode, rubric, settings.judge)
    storage = BucketStorage(s3, settings.bucket)
    replay = None
    if request.replay is None:
        raw = _read(s3, request.dataset, "dataset")
        loaded = dataset.parse_lines(raw.splitlines(), request.dataset, catalog, rubric.profile_spec.categories)
        rejected = _write_rejected(request, loaded, storage, run_id)
        source, selection = request.dataset, _selection(loaded.cases, request.filter, request.dataset)
    else:  # before anything is written: a replay over its budget leaves no trace
        selection, replay, source = _replay_selection(request, settings, rubric, targets, judge_mode, clients)
        raw, rejected = cases_text(selection.cases).encode("utf-8"), 0
        layout.write_text(storage, layout.run_key(run_id, REPLAY_CASES), raw.decode("utf-8"))
    sha256 = dataset_sha256(raw)
    layout.write_rubric(storage, layout.run_key(run_id, layout.RUBRIC), rubric)
    layout.write_targets(storage, layout.run_key(run_id, layout.TARGETS), targets)
    # A large case is written to its own file and named by a stub: no state of the run carries it.
    items = layout.cases_by_reference(storage, run_id, map_items(selection.cases, targets), INLINE_CASE_BYTES)
    layout.write_items(storage, layout.run_key(run_id, layout.ITEMS), items)
    dataset_id = derive_dataset_id(request)
    run = _Run(run_id, dataset_id, catalog_used, rubric, targets, selection, items, rejected,
               resolve_baseline(request.baseline, dataset_id, table, sha256), judge_mode,
               sha256, request.dataset_version or f"sha256:{sha256[:12]}", dataset=source, replay=replay)
    if run.baseline[2]:
        logger.warning("%s", run.baseline[2])
    _register(table, run, request, settings, now)
    logger.info("run %s prepared: %d items, %d cases, %s, judge mode %s", run_id, len(items), len(selection.cases),
                selection.filter_line, run.judge_mode)
    return _map_input(run, request, settings)
