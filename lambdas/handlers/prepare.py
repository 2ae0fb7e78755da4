"""Prepare: validate the dataset, write the normalized items and the resolved rubric to S3,
register the run, resolve the baseline. Its output drives the Distributed Map."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from aws_lambda_powertools import Logger, Tracer
from aws_lambda_powertools.utilities.typing import LambdaContext

from fmquality.adapters import s3 as layout
from fmquality.adapters.dynamodb import CATALOG_REF_PREFIX, EvaluationTable, catalog_ref_version, json_attribute
from fmquality.domain.errors import S3ObjectNotFound
from fmquality.adapters.s3 import S3Store, parse_s3_uri
from fmquality.run import dataset
from fmquality.language.catalog_index import CatalogIndex
from fmquality.domain.errors import LineError
from fmquality.run.dataset import parse_lines
from fmquality.domain.case import CatalogItem, TestCase
from fmquality.config.rubric import Rubric, load_rubric, parse_rubric
from fmquality.domain.errors import FilterError
from fmquality.run.subsets import apply_filter, distribution, filter_from_input
from fmquality.targets.base import TargetSpec
from fmquality.targets.policy import allowed_target_kinds, check_target_kind
from handlers import aws_client
from handlers.env import PrepareEnv, load_env
from handlers.events import PrepareEvent

logger = Logger()
tracer = Tracer()

# The error message lists bad lines up to this many; rejected.jsonl always holds all of them.
MAX_LINES_IN_MESSAGE = 200


class DatasetRejected(ValueError):
    """The dataset (or catalog) has bad lines and skip_invalid is false, or cannot be read.
    The state machine fails with this error name; the message lists file:line: field: reason."""


class BaselineNotFound(LookupError):
    """An explicit baseline run id names no finished run."""


def _now() -> datetime:
    return datetime.now(timezone.utc)


class RunAlreadyExists(ValueError):
    """The run id (the execution's name) is a run's that exists: a run is registered once."""


def derive_run_id(event: PrepareEvent, now: datetime) -> str:
    """The run's id: the execution's name (unique among its state machine's executions), else a
    timestamp and a random suffix. Never an id from the input (that is the run's label)."""
    if event.execution_name:
        # Execution names allow characters our S3 prefixes and keys should not carry.
        cleaned = re.sub(r"[^A-Za-z0-9._-]+", "-", event.execution_name).strip("-.")[:128]
        if cleaned:
            return cleaned
    return f"{now:%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:8]}"


def derive_dataset_id(event: PrepareEvent) -> str:
    if event.dataset_id:
        return event.dataset_id
    _, key = parse_s3_uri(event.dataset)
    return re.sub(r"\.(jsonl|ndjson|json)$", "", key, flags=re.IGNORECASE)


def _rejection_message(source: str, errors: list[LineError], rejected_uri: str) -> str:
    lines = [str(e) for e in errors[:MAX_LINES_IN_MESSAGE]]
    if len(errors) > MAX_LINES_IN_MESSAGE:
        lines.append(f"... and {len(errors) - MAX_LINES_IN_MESSAGE} more problem(s), all in {rejected_uri}")
    bad_lines = len({(e.file, e.line) for e in errors})
    return (f"{source}: {bad_lines} invalid line(s) (set skip_invalid to evaluate the valid ones):\n"
            + "\n".join(lines))


def parse_catalog(raw: bytes, source: str) -> list[CatalogItem]:
    """A catalog snapshot from S3, validated by the same parser as the local loader."""
    try:
        return dataset.parse_catalog(raw, source)
    except dataset.DatasetError as exc:
        problems = "\n".join(str(e) for e in exc.errors)
        raise DatasetRejected(f"{exc}" + (f":\n{problems}" if problems else "")) from exc


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


class TargetRejected(ValueError):
    """An ssm: target spec whose parameter cannot be read or does not hold a valid spec."""


def resolve_target(field: str, spec: TargetSpec, client: Callable[[str], Any] | None) -> TargetSpec:
    """``ssm:<parameter>`` becomes the spec the parameter holds, once per run, so every item of the
    run asks the same target even if the parameter changes meanwhile. Other specs are kept as given.
    A kind this deployment does not allow (``ALLOWED_TARGET_KINDS``; never ``python:`` on AWS) fails
    the run here, before any item, with TargetKindRefused; an ``ssm:`` spec is checked once resolved."""
    allowed = allowed_target_kinds()
    check_target_kind(spec, allowed, field)
    if spec.kind != "ssm":
        return spec
    # Imported here: the target implementations are needed only when a spec points elsewhere.
    from fmquality.targets import resolve_spec

    try:
        resolved = resolve_spec(spec, client)
    except Exception as exc:  # noqa: BLE001 - any failure is reported naming the field and the parameter
        raise TargetRejected(f"{field}: cannot resolve {spec.spec_string()}: {exc}") from exc
    check_target_kind(resolved, allowed, field)
    logger.info("target resolved", extra={"field": field, "from": spec.spec_string(), "to": resolved.spec_string()})
    return resolved


def _with_origin(described: dict[str, Any], resolved_from: str | None) -> dict[str, Any]:
    return described | {"resolved_from": resolved_from} if resolved_from else described


def map_max_concurrency(requested: int, specs: list[TargetSpec | None]) -> int:
    """The Map never runs more items at once than the most limited target of the run accepts."""
    limits = [s.max_concurrency for s in specs if s is not None and s.max_concurrency]
    return min([requested, *limits])


def map_items(cases: list[TestCase], candidate: TargetSpec, control: TargetSpec | None) -> list[dict[str, Any]]:
    """One element per (case, arm), the two arms of a case side by side so a pair is generated close in
    time. An arm whose target is not ``recorded`` gets the case without its recorded response: that
    answer is not the one to score, and leaving it out keeps it from an error record by mistake."""
    arms = [("candidate", candidate)] + ([("control", control)] if control is not None else [])
    items = []
    for case in cases:
        data = case.model_dump(mode="json")
        for arm, spec in arms:
            items.append({"arm": arm, "case": data if spec.kind == "recorded" else {**data, "response": None}})
    return items


def _read(s3: S3Store, uri: str, what: str) -> bytes:
    try:
        return s3.read_uri(uri)
    except S3ObjectNotFound as exc:
        raise DatasetRejected(f"cannot read {what}: {exc}") from exc


@tracer.capture_method
def prepare_run(event: PrepareEvent, env: PrepareEnv, s3: S3Store, table: EvaluationTable,
                now: datetime | None = None, clients: Callable[[str], Any] | None = None) -> dict[str, Any]:
    """``clients`` (service name -> boto3 client) reaches SSM for ``ssm:`` target specs."""
    now = now or _now()
    run_id = derive_run_id(event, now)
    if table.get_run(run_id) is not None:  # checked first so nothing of the existing run is touched
        raise RunAlreadyExists(f"run {run_id!r} exists already; a run is never re-registered (start a new execution)")
    dataset_id = derive_dataset_id(event)
    bucket = env.bucket_name
    logger.append_keys(run_id=run_id, dataset_id=dataset_id)
    if event.model_extra:
        logger.warning("execution input has keys the gate does not use", extra={"keys": sorted(event.model_extra)})

    # First, before the dataset is read or anything written: a target that cannot be resolved stops the run.
    requested = {"candidate": event.target or TargetSpec.parse(None), "control": event.control}
    candidate = resolve_target("target", requested["candidate"], clients)
    control = resolve_target("control", event.control, clients) if event.control is not None else None
    # The ssm: parameter each arm came from, so the report names it beside what it pointed at.
    resolved_from = {arm: spec.spec_string() if spec is not None and spec.kind == "ssm" else None
                     for arm, spec in requested.items()}

    catalog: list[CatalogItem] | CatalogIndex | None = None
    catalog_used = event.catalog
    if event.catalog and event.catalog.startswith(CATALOG_REF_PREFIX):
        catalog, version = table_catalog(event.catalog, table)
        catalog_used = f"{CATALOG_REF_PREFIX}{version}"
        logger.info("catalog snapshot from the table", extra={"catalog_version": version, "items": len(catalog)})
    elif event.catalog:
        catalog = parse_catalog(_read(s3, event.catalog, "catalog"), event.catalog)
    # The rubric first: its profile's categories are the intents a case may name.
    rubric: Rubric = (parse_rubric(_read(s3, event.rubric, "rubric"), event.rubric)
                      if event.rubric else load_rubric())
    loaded = parse_lines(_read(s3, event.dataset, "dataset").splitlines(), event.dataset, catalog,
                         rubric.profile_spec.categories)

    # rejected.jsonl is written whatever happens next, so a rejected run still shows every bad line.
    rejected_key = layout.run_key(run_id, layout.REJECTED)
    rejected_uri = s3.write_jsonl(bucket, rejected_key, [e.model_dump() for e in loaded.errors])
    rejected_count = len({(e.file, e.line) for e in loaded.errors})
    if loaded.errors and not event.skip_invalid:
        raise DatasetRejected(_rejection_message(event.dataset, loaded.errors, rejected_uri))
    if not loaded.cases:
        raise DatasetRejected(f"{event.dataset}: the dataset has no valid test cases "
                              f"({rejected_count} rejected line(s), see {rejected_uri})")
    if loaded.errors:
        logger.warning("skipping invalid lines", extra={"rejected_lines": rejected_count, "rejected": rejected_uri})

    rubric_key = layout.run_key(run_id, layout.RUBRIC)
    s3.write_json(bucket, rubric_key, rubric.model_dump(mode="json"))
    targets_key = layout.run_key(run_id, layout.TARGETS)
    s3.write_json(bucket, targets_key, {"candidate": candidate.model_dump(mode="json"),
                                        "control": control.model_dump(mode="json") if control else None,
                                        "resolved_from": resolved_from})
    # The subset to score (the dataset's spread is recorded before it, for the report).
    try:
        subset = filter_from_input(event.filter)
    except FilterError as exc:
        raise DatasetRejected(str(exc)) from exc
    spread = distribution(loaded.cases)
    cases, filter_line = apply_filter(loaded.cases, subset)
    if not cases:
        raise DatasetRejected(f"{event.dataset}: the filter selects no case ({filter_line})")
    items = map_items(cases, candidate, control)
    items_key = layout.run_key(run_id, layout.ITEMS)
    s3.write_json(bucket, items_key, items)
    # Nothing to generate: the recorded answers are scored as they are, and the Map skips Generate.
    needs_generation = candidate.kind != "recorded" or control is not None

    baseline_run_id, baseline_report_key = resolve_baseline(event.baseline, dataset_id, table)
    max_concurrency = map_max_concurrency(event.max_concurrency or env.default_max_concurrency, [candidate, control])
    tolerated = (event.tolerated_failure_percentage if event.tolerated_failure_percentage is not None
                 else env.default_tolerated_failure_percentage)

    table.register_run(
        run_id,
        dataset_id,
        started_at=now.isoformat(timespec="milliseconds"),
        status="RUNNING",
        dataset=event.dataset,
        # dynamodb:latest is recorded as the version it resolved to, so the report names the snapshot.
        catalog=catalog_used,
        trigger=event.trigger,
        rubric_version=rubric.version,
        rubric_key=rubric_key,
        items_key=items_key,
        item_count=len(items),
        case_count=len(cases),
        filter=filter_line,
        distribution=json_attribute(spread),
        rejected_count=rejected_count,
        baseline_run_id=baseline_run_id,
        baseline_report_key=baseline_report_key,
        run_label=event.run_label or event.run_id,
        judge=env.judge_label,
        execution_id=event.execution_id,
        candidate=json_attribute(event.candidate) if event.candidate is not None else None,
        target=json_attribute(_with_origin(candidate.describe(), resolved_from["candidate"])),
        control_target=json_attribute(_with_origin(control.describe(), resolved_from["control"])) if control else None,
        targets_key=targets_key,
    )
    logger.info("run prepared", extra={"items": len(items), "cases": len(cases), "filter": filter_line,
                                       "rejected_lines": rejected_count, "baseline_run_id": baseline_run_id,
                                       "target": candidate.spec_string(),
                                       "control": control.spec_string() if control else None})
    return {
        "run_id": run_id,
        "bucket": bucket,
        "items_key": items_key,
        "item_count": len(items),
        "targets_key": targets_key,
        "generate": needs_generation,
        "rejected_count": rejected_count,
        "rubric_key": rubric_key,
        "rubric_version": rubric.version,
        "dataset_id": dataset_id,
        "baseline_run_id": baseline_run_id,
        # Floats: the Map's ToleratedFailurePercentagePath needs a number; the local engine a float.
        "max_concurrency": max_concurrency,
        "tolerated_failure_percentage": float(tolerated),
        "trigger": event.trigger,
    }


def resolve_baseline(baseline: str | None, dataset_id: str, table: EvaluationTable) -> tuple[str | None, str | None]:
    """The baseline's run id and report key. "auto": the approved baseline of the dataset, if any, read
    from its frozen copy (``adapters.s3.baseline_key``); a run id: that run's report, which must exist."""
    if baseline is None:
        return None, None
    if baseline == "auto":
        approved = table.get_baseline(dataset_id)
        return (approved["run_id"], approved["report_key"]) if approved else (None, None)
    run = table.get_run(baseline)
    if run is None or not run.get("report_key"):
        raise BaselineNotFound(f"baseline run {baseline!r} has no finished report")
    return baseline, run["report_key"]


@logger.inject_lambda_context(log_event=False, clear_state=True)
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    env = load_env(PrepareEnv)
    return prepare_run(PrepareEvent.model_validate(event), env, S3Store(aws_client("s3")),
                       EvaluationTable(env.table_name, aws_client("dynamodb")), clients=aws_client)
