"""The evaluation table (single-table design).

    item            pk                  sk                 gsi1pk / gsi1sk
    run             RUN#<run_id>        RUN                DATASET#<dataset_id> / <started_at>#<run_id>
    item result     RUN#<run_id>        RESULT#<test_id>   -
    baseline        DATASET#<id>        BASELINE           -
    cached verdict  VERDICT#<hash>      VERDICT            -   (expires_at: TTL)

The three reads it serves: every result of a run (query pk, sk begins_with RESULT#), the runs of a
dataset over time (query gsi1), the latest approved baseline of a dataset (get_item).
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from decimal import Decimal
from typing import Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer

from fmquality.models import EvaluationResult

GSI1 = "gsi1"
RUN_SK = "RUN"
BASELINE_SK = "BASELINE"
RESULT_PREFIX = "RESULT#"
VERDICT_SK = "VERDICT"

_serializer = TypeSerializer()
_deserializer = TypeDeserializer()


def run_pk(run_id: str) -> str:
    return f"RUN#{run_id}"


def dataset_pk(dataset_id: str) -> str:
    return f"DATASET#{dataset_id}"


def verdict_pk(key_hash: str) -> str:
    return f"VERDICT#{key_hash}"


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
        """Create (or reset, when an execution is re-driven with the same run id) the run record."""
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
        self._ddb.put_item(TableName=self.table_name, Item=_marshal(item))
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
        """One item per (run, test case): evaluating the same case again overwrites its result."""
        self._ddb.put_item(
            TableName=self.table_name,
            Item=_marshal({
                "pk": run_pk(run_id),
                "sk": f"{RESULT_PREFIX}{result.test_id}",
                "test_id": result.test_id,
                "intent": result.intent,
                "status": result.status,
                "passed": result.passed,
                "composite_score": result.composite_score,
                "recorded_at": _now_iso(),
                "payload": result.model_dump_json(),
            }),
        )

    def results_for_run(self, run_id: str, page_size: int | None = None) -> list[EvaluationResult]:
        """Every result of the run, across as many query pages as it takes."""
        kwargs: dict[str, Any] = {
            "TableName": self.table_name,
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :prefix)",
            "ExpressionAttributeValues": _marshal({":pk": run_pk(run_id), ":prefix": RESULT_PREFIX}),
            # Strongly consistent: Aggregate reads right after the last Composite wrote.
            "ConsistentRead": True,
        }
        if page_size:
            kwargs["PaginationConfig"] = {"PageSize": page_size}
        out: list[EvaluationResult] = []
        for page in self._ddb.get_paginator("query").paginate(**kwargs):
            for raw in page["Items"]:
                out.append(EvaluationResult.model_validate_json(raw["payload"]["S"]))
        return out

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


def json_attribute(value: Any) -> str:
    """Nested, schemaless input (e.g. a run's candidate description) is kept as one JSON string."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True)
