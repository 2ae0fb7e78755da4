"""The verdict cache's store in DynamoDB: the evaluation table's items ``pk=VERDICT#<key>``,
``sk=VERDICT``, with ``expires_at`` (epoch seconds, the table's TTL attribute). What is cached, and
when, is ``fmquality.judges.cache`` (``CachingJudge``, the ``VerdictStore`` protocol this store
fulfils, and the local store of the CLI)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from fmquality.adapters.dynamodb import EvaluationTable
from fmquality.judges.cache import DEFAULT_TTL_DAYS

_DAY_S = 86_400


class DynamoVerdictStore:
    """Entries kept ``ttl_days``; an expired entry is a miss even before DynamoDB deletes it."""

    def __init__(
        self,
        table_name: str,
        boto3_client: Any = None,
        ttl_days: float = DEFAULT_TTL_DAYS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.table = EvaluationTable(table_name, boto3_client)
        self.ttl_s = ttl_days * _DAY_S
        self._clock = clock

    def get(self, key: str) -> dict[str, Any] | None:
        payload = self.table.get_cached_verdict(key, now=self._clock())
        return json.loads(payload) if payload else None

    def put(self, key: str, entry: dict[str, Any]) -> None:
        self.table.put_cached_verdict(key, json.dumps(entry, ensure_ascii=False), int(self._clock() + self.ttl_s))
