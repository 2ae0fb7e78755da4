"""The evaluation table (single-table design).

    item            pk                  sk                 gsi1pk / gsi1sk
    run             RUN#<run_id>        RUN                DATASET#<dataset_id> / <started_at>#<run_id>
    item result     RUN#<run_id>        RESULT#<test_id>   -   (the candidate arm)
    control result  RUN#<run_id>        CONTROL#<test_id>  -   (the control arm of a paired run)
    baseline        DATASET#<id>        BASELINE           -
    cached verdict  VERDICT#<hash>      VERDICT            -   (expires_at: TTL)
    catalog load    CATALOG#<version>   LOAD               -   (claims the version: started_at, source)
    catalog item    CATALOG#<version>   ITEM#<asin>        -   (item: the CatalogItem JSON, title_keys)
    catalog meta    CATALOG#<version>   META               -   (item_count, loaded_at, source, snapshot_date)
    latest catalog  CATALOG#LATEST      POINTER            -   (version)

The reads it serves: every result of a run's arm (query pk, sk begins_with RESULT# or CONTROL#), the runs of a
dataset over time (query gsi1), the latest approved baseline of a dataset (get_item), the items of a
catalog snapshot (query pk, sk begins_with ITEM#) and the current snapshot (get_item on the pointer).

A catalog version is its snapshot date (``2026-11-23``); a second load with the same date gets the
next free suffix (``2026-11-23.2``), claimed by a conditional put of its LOAD item, so a load never
overwrites a snapshot a run may be reading. The items go first, then META, then the pointer: a
version without META is a load that did not finish, and the pointer only ever names complete ones.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import date, datetime, timezone
from decimal import Decimal
from typing import Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer

from fmquality.language.catalog_index import title_keys
from fmquality.domain.case import CatalogItem
from fmquality.domain.results import EvaluationResult
from fmquality.domain.errors import CatalogLoadError, RunExists
from fmquality.retry import full_jitter

GSI1 = "gsi1"
RUN_SK = "RUN"
BASELINE_SK = "BASELINE"


RESULT_PREFIX = "RESULT#"
CONTROL_PREFIX = "CONTROL#"
# A paired run keeps each arm under its own sort-key prefix: the candidate's keys are the ones every
# run always had, so reading a run without a control is unchanged.
RESULT_PREFIXES: dict[str, str] = {"candidate": RESULT_PREFIX, "control": CONTROL_PREFIX}
VERDICT_SK = "VERDICT"
CATALOG_LOAD_SK = "LOAD"
CATALOG_META_SK = "META"
CATALOG_ITEM_PREFIX = "ITEM#"
CATALOG_POINTER = ("CATALOG#LATEST", "POINTER")
# The execution input's "catalog" may name a snapshot in this table: dynamodb:latest or dynamodb:<version>.
CATALOG_REF_PREFIX = "dynamodb:"
_CATALOG_VERSION = re.compile(r"^\d{4}-\d{2}-\d{2}(?:\.[1-9]\d{0,2})?$")
BATCH_WRITE_LIMIT = 25  # items per BatchWriteItem request

_serializer = TypeSerializer()
_deserializer = TypeDeserializer()


def run_pk(run_id: str) -> str:
    return f"RUN#{run_id}"


def dataset_pk(dataset_id: str) -> str:
    return f"DATASET#{dataset_id}"


def verdict_pk(key_hash: str) -> str:
    return f"VERDICT#{key_hash}"


def catalog_pk(version: str) -> str:
    return f"CATALOG#{version}"


def _result_prefix(arm: str) -> str:
    try:
        return RESULT_PREFIXES[arm]
    except KeyError:
        raise ValueError(f"unknown arm {arm!r}: expected one of {sorted(RESULT_PREFIXES)}") from None


def catalog_ref_version(ref: str) -> str:
    """``dynamodb:latest`` -> "latest", ``dynamodb:2026-11-23.2`` -> "2026-11-23.2"; ValueError otherwise."""
    version = ref[len(CATALOG_REF_PREFIX):] if ref.startswith(CATALOG_REF_PREFIX) else None
    if version != "latest" and not (version and _CATALOG_VERSION.match(version)):
        raise ValueError(f"expected dynamodb:latest or dynamodb:<version> (YYYY-MM-DD[.N]), got {ref!r}")
    return version


def _now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def to_dynamo_value(value: Any) -> Any:
    """DynamoDB refuses Python floats: convert them (recursively) to Decimal through their repr,
    so 0.85 stays 0.85 and does not become 0.84999999999999997779553950749686919152736663818359375."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, float):
        return Decimal(repr(value))
    if isinstance(value, dict):
        return {k: to_dynamo_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_dynamo_value(v) for v in value]
    return value


def from_dynamo_value(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() and "." not in str(value) else float(value)
    if isinstance(value, dict):
        return {k: from_dynamo_value(v) for k, v in value.items()}
    if isinstance(value, (list, set)):
        return [from_dynamo_value(v) for v in value]
    return value


def _marshal(item: dict[str, Any]) -> dict[str, Any]:
    # Absent beats NULL: an attribute whose value is None is left out.
    return {k: _serializer.serialize(to_dynamo_value(v)) for k, v in item.items() if v is not None}


def _unmarshal(item: dict[str, Any]) -> dict[str, Any]:
    return {k: from_dynamo_value(_deserializer.deserialize(v)) for k, v in item.items()}


def create_evaluation_table(boto3_client: Any, table_name: str) -> None:
    """The table layout the adapter expects (pk/sk, GSI gsi1, TTL expires_at), for embedded AWS: the
    local engine and the moto tests. infra/constructs/storage.py declares the same layout for AWS."""
    boto3_client.create_table(
        TableName=table_name,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": n, "AttributeType": "S"} for n in ("pk", "sk", "gsi1pk", "gsi1sk")],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        GlobalSecondaryIndexes=[{
            "IndexName": GSI1,
            "KeySchema": [{"AttributeName": "gsi1pk", "KeyType": "HASH"}, {"AttributeName": "gsi1sk", "KeyType": "RANGE"}],
            "Projection": {"ProjectionType": "ALL"},
        }],
    )
    boto3_client.update_time_to_live(TableName=table_name,
                                     TimeToLiveSpecification={"Enabled": True, "AttributeName": "expires_at"})


class EvaluationTable:
    def __init__(self, table_name: str, boto3_client: Any = None) -> None:
        if boto3_client is None:
            import boto3

            boto3_client = boto3.client("dynamodb")
        self.table_name = table_name
        self._ddb = boto3_client

    # ---------------------------------------------------------------------------------- runs

    def register_run(
        self,
        run_id: str,
        dataset_id: str,
        started_at: str | None = None,
        status: str = "RUNNING",
        **attributes: Any,
    ) -> dict[str, Any]:
        """Create the run record, once: a run id that is taken raises ``RunExists`` (a conditional
        write), so no second execution can register under, and mix its results into, an existing run.

        Idempotent for the execution that registered it: with an ``execution_id``, the same execution
        registering again (Step Functions retrying Prepare after its first attempt wrote the record)
        succeeds while that run is still RUNNING, in the same conditional write; any other execution,
        or a run that has finished, is refused."""
        started_at = started_at or _now_iso()
        item = {
            "pk": run_pk(run_id),
            "sk": RUN_SK,
            "gsi1pk": dataset_pk(dataset_id),
            "gsi1sk": f"{started_at}#{run_id}",
            "run_id": run_id,
            "dataset_id": dataset_id,
            "started_at": started_at,
            "status": status,
            **attributes,
        }
        condition: dict[str, Any] = {"ConditionExpression": "attribute_not_exists(pk)"}
        execution_id = attributes.get("execution_id")
        if execution_id:
            condition = {
                "ConditionExpression": "attribute_not_exists(pk) OR (execution_id = :execution AND #status = :running)",
                "ExpressionAttributeNames": {"#status": "status"},
                "ExpressionAttributeValues": _marshal({":execution": execution_id, ":running": "RUNNING"}),
            }
        try:
            self._ddb.put_item(TableName=self.table_name, Item=_marshal(item), **condition)
        except self._ddb.exceptions.ConditionalCheckFailedException as exc:
            raise RunExists(f"run {run_id!r} is registered already") from exc
        return item

    def get_run(self, run_id: str) -> dict[str, Any] | None:
        response = self._ddb.get_item(
            TableName=self.table_name, Key=_marshal({"pk": run_pk(run_id), "sk": RUN_SK}), ConsistentRead=True
        )
        return _unmarshal(response["Item"]) if "Item" in response else None

    def complete_run(self, run_id: str, **attributes: Any) -> None:
        """Set the outcome attributes (status, gate_passed, pass_rate, report_key, ...) of a run."""
        values = {k: v for k, v in attributes.items() if v is not None}
        if not values:
            return
        names = {f"#a{i}": name for i, name in enumerate(values)}
        expression = "SET " + ", ".join(f"#a{i} = :v{i}" for i in range(len(values)))
        self._ddb.update_item(
            TableName=self.table_name,
            Key=_marshal({"pk": run_pk(run_id), "sk": RUN_SK}),
            UpdateExpression=expression,
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=_marshal({f":v{i}": v for i, v in enumerate(values.values())}),
            # Never create a half run record: the run must have been registered by Prepare.
            ConditionExpression="attribute_exists(pk)",
        )

    def runs_for_dataset(self, dataset_id: str, newest_first: bool = True, limit: int | None = None) -> list[dict[str, Any]]:
        """The runs of a dataset in start order (gsi1sk begins with the ISO start time)."""
        kwargs: dict[str, Any] = {
            "TableName": self.table_name,
            "IndexName": GSI1,
            "KeyConditionExpression": "gsi1pk = :pk",
            "ExpressionAttributeValues": _marshal({":pk": dataset_pk(dataset_id)}),
            "ScanIndexForward": not newest_first,
        }
        out: list[dict[str, Any]] = []
        for page in self._ddb.get_paginator("query").paginate(**kwargs):
            out.extend(_unmarshal(i) for i in page["Items"])
            if limit is not None and len(out) >= limit:
                return out[:limit]
        return out

    # ---------------------------------------------------------------------------------- results

    def put_result(self, run_id: str, result: EvaluationResult) -> None:
        """One item per (run, arm, test case): evaluating the same case again overwrites its result."""
        self._ddb.put_item(
            TableName=self.table_name,
            Item=_marshal({
                "pk": run_pk(run_id),
                "sk": f"{_result_prefix(result.arm)}{result.test_id}",
                "test_id": result.test_id,
                "arm": result.arm,
                "intent": result.intent,
                "status": result.status,
                "passed": result.passed,
                "composite_score": result.composite_score,
                "recorded_at": _now_iso(),
                "payload": result.model_dump_json(),
            }),
        )

    def results_for_run(self, run_id: str, arm: str = "candidate", page_size: int | None = None,
                        recorded_at: dict[str, str] | None = None) -> list[EvaluationResult]:
        """Every result of one arm of the run, across as many query pages as it takes. ``recorded_at``,
        when given, is filled in the same pass with test_id -> when the result was written (the
        item's finish, for EvaluationLatency)."""
        out: list[EvaluationResult] = []
        for raw in self._result_items(run_id, arm, page_size):
            out.append(EvaluationResult.model_validate_json(raw["payload"]["S"]))
            if recorded_at is not None and "recorded_at" in raw:
                recorded_at[out[-1].test_id] = raw["recorded_at"]["S"]
        return out

    def _result_items(self, run_id: str, arm: str, page_size: int | None = None) -> Iterator[dict[str, Any]]:
        kwargs: dict[str, Any] = {
            "TableName": self.table_name,
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :prefix)",
            "ExpressionAttributeValues": _marshal({":pk": run_pk(run_id), ":prefix": _result_prefix(arm)}),
            # Strongly consistent: Aggregate reads right after the last Composite wrote.
            "ConsistentRead": True,
        }
        if page_size:
            kwargs["PaginationConfig"] = {"PageSize": page_size}
        for page in self._ddb.get_paginator("query").paginate(**kwargs):
            yield from page["Items"]

    # ---------------------------------------------------------------------------------- baselines

    def approve_baseline(self, dataset_id: str, run_id: str, report_key: str, approved_at: str | None = None,
                         approved_by: str | None = None) -> dict[str, Any]:
        """Make ``run_id`` the baseline of its dataset (replacing the previous one)."""
        item = {
            "pk": dataset_pk(dataset_id),
            "sk": BASELINE_SK,
            "dataset_id": dataset_id,
            "run_id": run_id,
            "report_key": report_key,
            "approved_at": approved_at or _now_iso(),
            "approved_by": approved_by,
        }
        self._ddb.put_item(TableName=self.table_name, Item=_marshal(item))
        return {k: v for k, v in item.items() if v is not None}

    def get_baseline(self, dataset_id: str) -> dict[str, Any] | None:
        response = self._ddb.get_item(
            TableName=self.table_name,
            Key=_marshal({"pk": dataset_pk(dataset_id), "sk": BASELINE_SK}),
            ConsistentRead=True,
        )
        return _unmarshal(response["Item"]) if "Item" in response else None

    # ---------------------------------------------------------------------------------- verdict cache

    def put_cached_verdict(self, key_hash: str, payload: str, expires_at: int) -> None:
        """One judge verdict, kept until ``expires_at`` (epoch seconds; the table's TTL attribute)."""
        self._ddb.put_item(
            TableName=self.table_name,
            Item=_marshal({
                "pk": verdict_pk(key_hash),
                "sk": VERDICT_SK,
                "payload": payload,
                "expires_at": int(expires_at),
                "recorded_at": _now_iso(),
            }),
        )

    def cached_verdicts(self) -> Iterator[tuple[str, str, int]]:
        """(key hash, payload, expires_at) of every cached verdict: a scan, for the local engine's
        table of a few hundred items (never called on a deployed table)."""
        pages = self._ddb.get_paginator("scan").paginate(
            TableName=self.table_name, FilterExpression="begins_with(pk, :prefix)",
            ExpressionAttributeValues={":prefix": {"S": verdict_pk("")}})
        for page in pages:
            for item in page.get("Items", []):
                yield (item["pk"]["S"][len(verdict_pk("")):], item["payload"]["S"],
                       int(item.get("expires_at", {}).get("N", "0")))

    def get_cached_verdict(self, key_hash: str, now: float | None = None) -> str | None:
        """The payload of an unexpired cached verdict, or None. DynamoDB deletes expired items
        lazily (within days), so ``expires_at`` is checked here too."""
        response = self._ddb.get_item(
            TableName=self.table_name, Key=_marshal({"pk": verdict_pk(key_hash), "sk": VERDICT_SK})
        )
        item = response.get("Item")
        if not item:
            return None
        expires_at = int(item.get("expires_at", {}).get("N", "0"))
        current = datetime.now(timezone.utc).timestamp() if now is None else now
        if expires_at and expires_at <= current:
            return None
        return item["payload"]["S"]

    # ---------------------------------------------------------------------------------- catalog

    def put_catalog(self, items: Sequence[CatalogItem], snapshot_date: date, source: str,
                    sleep: Callable[[float], None] = time.sleep, max_attempts: int = 8) -> dict[str, Any]:
        """Load a validated catalog as a new version (see the module docstring) and make it the latest.
        Returns its META item. ASINs must be unique (one item per key). Raises CatalogLoadError when
        BatchWriteItem leaves items unprocessed after ``max_attempts`` tries (backoff, full jitter)."""
        if not items:
            raise ValueError("refusing to load an empty catalog")
        if len({i.asin for i in items}) != len(items):
            raise ValueError("the catalog holds an ASIN more than once")
        loaded_at = _now_iso()
        version = self._claim_catalog_version(snapshot_date, source, loaded_at)
        pk = catalog_pk(version)
        requests = [{"PutRequest": {"Item": _marshal({
            "pk": pk,
            "sk": f"{CATALOG_ITEM_PREFIX}{item.asin}",
            "asin": item.asin,
            "item": item.model_dump_json(),
            "title_keys": sorted(title_keys(item)),
        })}} for item in items]
        for start in range(0, len(requests), BATCH_WRITE_LIMIT):
            self._batch_write(requests[start:start + BATCH_WRITE_LIMIT], version, sleep, max_attempts)
        meta = {"pk": pk, "sk": CATALOG_META_SK, "version": version, "item_count": len(items),
                "loaded_at": loaded_at, "source": source, "snapshot_date": snapshot_date.isoformat()}
        self._ddb.put_item(TableName=self.table_name, Item=_marshal(meta))
        pointer_pk, pointer_sk = CATALOG_POINTER
        self._ddb.put_item(TableName=self.table_name, Item=_marshal(
            {"pk": pointer_pk, "sk": pointer_sk, "version": version, "updated_at": _now_iso()}))
        return meta

    def _claim_catalog_version(self, snapshot_date: date, source: str, started_at: str) -> str:
        """The snapshot date, or its first free ``.N`` suffix: a conditional put, so two loads never share one."""
        for n in range(1, 1000):
            version = snapshot_date.isoformat() + (f".{n}" if n > 1 else "")
            try:
                self._ddb.put_item(
                    TableName=self.table_name,
                    Item=_marshal({"pk": catalog_pk(version), "sk": CATALOG_LOAD_SK, "started_at": started_at,
                                   "source": source}),
                    ConditionExpression="attribute_not_exists(pk)",
                )
                return version
            except self._ddb.exceptions.ConditionalCheckFailedException:
                continue
        raise CatalogLoadError(f"every version of {snapshot_date.isoformat()} is taken")

    def _batch_write(self, requests: list[dict[str, Any]], version: str, sleep: Callable[[float], None],
                     max_attempts: int) -> None:
        pending = requests
        for attempt in range(max_attempts):
            response = self._ddb.batch_write_item(RequestItems={self.table_name: pending})
            pending = response.get("UnprocessedItems", {}).get(self.table_name, [])
            if not pending:
                return
            sleep(full_jitter(attempt, 0.05, 20.0))
        raise CatalogLoadError(f"catalog version {version}: {len(pending)} item(s) still unprocessed after "
                               f"{max_attempts} BatchWriteItem attempts")

    def latest_catalog_version(self) -> str | None:
        pk, sk = CATALOG_POINTER
        response = self._ddb.get_item(TableName=self.table_name, Key=_marshal({"pk": pk, "sk": sk}),
                                      ConsistentRead=True)
        return response["Item"]["version"]["S"] if "Item" in response else None

    def catalog_meta(self, version: str) -> dict[str, Any] | None:
        """The META item of a complete load, or None (no such version, or its load did not finish)."""
        response = self._ddb.get_item(TableName=self.table_name,
                                      Key=_marshal({"pk": catalog_pk(version), "sk": CATALOG_META_SK}),
                                      ConsistentRead=True)
        return _unmarshal(response["Item"]) if "Item" in response else None

    def catalog_items(self, version: str, page_size: int | None = None) -> list[CatalogItem]:
        """Every item of a catalog version, in ASIN order, across as many query pages as it takes."""
        kwargs: dict[str, Any] = {
            "TableName": self.table_name,
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :prefix)",
            "ExpressionAttributeValues": _marshal({":pk": catalog_pk(version), ":prefix": CATALOG_ITEM_PREFIX}),
            "ProjectionExpression": "#item",
            "ExpressionAttributeNames": {"#item": "item"},
            # Strongly consistent, so the count matches META right after a load.
            "ConsistentRead": True,
        }
        if page_size:
            kwargs["PaginationConfig"] = {"PageSize": page_size}
        out: list[CatalogItem] = []
        for page in self._ddb.get_paginator("query").paginate(**kwargs):
            out.extend(CatalogItem.model_validate_json(raw["item"]["S"]) for raw in page["Items"])
        return out


def json_attribute(value: Any) -> str:
    """Nested, schemaless input (e.g. a run's candidate description) is kept as one JSON string."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True)
