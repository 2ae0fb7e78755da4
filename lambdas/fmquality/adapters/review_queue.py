"""The review queue's stores: ``review.jsonl`` in a run folder (local runs) and the evaluation table
(AWS). Both keep one item per (run id, test id); adding never resets an item already queued, so a
re-delivered event cannot undo a person's review.

Why the evaluation table (pk ``REVIEW#<run_id>``, sk ``ITEM#<test_id>``): the single-table design
already keys everything of a run by run id, the queue is read one run at a time (one Query), it
inherits the table's encryption, backups and on-demand capacity, and no new table or IAM surface is
needed.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from fmquality.production.review import ReviewItem

REVIEW_PK_PREFIX = "REVIEW#"
REVIEW_SK_PREFIX = "ITEM#"
LOCAL_QUEUE_FILE = "review.jsonl"


class LocalReviewQueue:
    """``review.jsonl`` in a run folder."""

    def __init__(self, run_dir: str | Path) -> None:
        self.path = Path(run_dir) / LOCAL_QUEUE_FILE

    def exists(self) -> bool:
        return self.path.is_file()

    def items(self, run_id: str | None = None) -> list[ReviewItem]:
        if not self.path.is_file():
            return []
        out = [ReviewItem.model_validate_json(line) for line in self.path.read_text(encoding="utf-8").splitlines()
               if line.strip()]
        return [i for i in out if run_id is None or i.run_id == run_id]

    def add(self, items: Iterable[ReviewItem]) -> int:
        """New items only: an item already queued (maybe reviewed) is kept as it is."""
        current = {(i.run_id, i.test_id): i for i in self.items()}
        added = 0
        for item in items:
            if (item.run_id, item.test_id) not in current:
                current[(item.run_id, item.test_id)] = item
                added += 1
        self._write(current.values())
        return added

    def update(self, items: Iterable[ReviewItem]) -> None:
        current = {(i.run_id, i.test_id): i for i in self.items()}
        for item in items:
            current[(item.run_id, item.test_id)] = item
        self._write(current.values())

    def _write(self, items: Iterable[ReviewItem]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        rows = sorted(items, key=lambda i: (i.run_id, i.test_id))
        self.path.write_text("".join(i.model_dump_json() + "\n" for i in rows), encoding="utf-8")


class DynamoReviewQueue:
    """The queue in the evaluation table: pk REVIEW#<run_id>, sk ITEM#<test_id>, ``status`` and the
    item as JSON in ``payload``."""

    def __init__(self, table_name: str, boto3_client: Any = None) -> None:
        if boto3_client is None:
            import boto3

            boto3_client = boto3.client("dynamodb")
        self.table_name = table_name
        self._ddb = boto3_client

    def _key(self, run_id: str, test_id: str) -> dict[str, Any]:
        return {"pk": {"S": f"{REVIEW_PK_PREFIX}{run_id}"}, "sk": {"S": f"{REVIEW_SK_PREFIX}{test_id}"}}

    def _row(self, item: ReviewItem) -> dict[str, Any]:
        return {**self._key(item.run_id, item.test_id), "status": {"S": item.status},
                "reason": {"S": item.reason}, "payload": {"S": item.model_dump_json()}}

    def add(self, items: Iterable[ReviewItem]) -> int:
        """Conditional puts: a re-delivered event never resets an item a person already reviewed."""
        added = 0
        for item in items:
            try:
                self._ddb.put_item(TableName=self.table_name, Item=self._row(item),
                                   ConditionExpression="attribute_not_exists(pk)")
                added += 1
            except self._ddb.exceptions.ConditionalCheckFailedException:
                continue
        return added

    def update(self, items: Iterable[ReviewItem]) -> None:
        for item in items:
            self._ddb.put_item(TableName=self.table_name, Item=self._row(item))

    def items(self, run_id: str | None = None) -> list[ReviewItem]:
        if run_id is None:
            raise ValueError("the DynamoDB queue is read one run at a time: give the run id")
        out: list[ReviewItem] = []
        paginator = self._ddb.get_paginator("query")
        for page in paginator.paginate(TableName=self.table_name,
                                       KeyConditionExpression="pk = :pk AND begins_with(sk, :sk)",
                                       ExpressionAttributeValues={":pk": {"S": f"{REVIEW_PK_PREFIX}{run_id}"},
                                                                  ":sk": {"S": REVIEW_SK_PREFIX}},
                                       ConsistentRead=True):
            out.extend(ReviewItem.model_validate_json(row["payload"]["S"]) for row in page["Items"])
        return out
