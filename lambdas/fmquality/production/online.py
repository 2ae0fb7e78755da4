"""Online judging's bookkeeping: which captured turns are judged (the stratified online sampler), the
per-window counts it keeps, the window cells the stream drift reads, and the per-minute metrics.

**Sampler.** The policy of the weekly sample (``sample.stratum_size``: max(rate x size, quota) per
cell) taken one turn at a time: a turn is judged when its seeded hash falls below ``rate``
(``sample.drawn_by_rate``), or else while its cell (intent x locale x user tier, ``sample.cell_of``)
has fewer than ``quota_per_cell`` judged turns in the current window. Each taken turn is counted in
the DynamoDB table with one conditional ``UpdateItem`` per turn: a quota claim succeeds only while the
count is below the quota, so concurrent invocations never hand out more than the quota between them,
and a turn id is recorded once per window (a redelivered S3 event does not count it twice).

Evaluation table items (prefix ``ONLINE#``, expiring after ``RETENTION_DAYS``):

  per-window counts  ONLINE#QUOTA#<window start>   <cell>            taken, turns (string set)
  window cells       ONLINE#CELLS#<YYYY-MM-DD>     <window>#<stratum> n, total, b<bin> (ADD)
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any, Literal, Protocol

from fmquality.config.watch import OnlineSettings
from fmquality.domain.results import EvaluationResult
from fmquality.production.capture import TurnRecord
from fmquality.production.sample import cell_of, drawn_by_rate
from fmquality.production.stream_drift import (BINS, VERSION_TAG, WindowCell, captured_at, composite_bin,
                                               result_stream_stratum, tag_value, window_start)

PK_PREFIX = "ONLINE#"
RETENTION_DAYS = 30
ONLINE_RUN_PREFIX = "online-"
ONLINE_TRIGGER = "online"
Reason = Literal["rate", "quota"]


def online_run_id(when: datetime) -> str:
    """The run the online results of ``when``'s hour are stored under: ``online-YYYYMMDDHH`` (UTC)."""
    return ONLINE_RUN_PREFIX + when.astimezone(timezone.utc).strftime("%Y%m%d%H")


def online_run_ids(start: datetime, end: datetime) -> list[str]:
    """The hourly online run ids covering [start, end)."""
    at = start.astimezone(timezone.utc).replace(minute=0, second=0, microsecond=0)
    out = []
    while at < end:
        out.append(online_run_id(at))
        at += timedelta(hours=1)
    return out


def _expires(now: float | None = None) -> int:
    return int((now or time.time()) + RETENTION_DAYS * 86400)


# --------------------------------------------------------------------------------------------------
# Sampler
# --------------------------------------------------------------------------------------------------


class WindowCounter(Protocol):
    def take(self, window: str, cell: str, turn_id: str, quota: int | None) -> bool:
        """Record ``turn_id`` as taken in the window's cell; with a ``quota``, only while fewer than
        ``quota`` were taken. False: not taken (quota full, or this turn taken already)."""


class MemoryWindowCounter:
    """The local (and test) counter: the same rule as the table's, in one process."""

    def __init__(self) -> None:
        self.turns: dict[tuple[str, str], set[str]] = defaultdict(set)

    def take(self, window: str, cell: str, turn_id: str, quota: int | None) -> bool:
        taken = self.turns[(window, cell)]
        if turn_id in taken or (quota is not None and len(taken) >= quota):
            return False
        taken.add(turn_id)
        return True


class DynamoWindowCounter:
    """Per-window counts in the evaluation table, changed only by conditional updates."""

    def __init__(self, table_name: str, dynamodb_client: Any) -> None:
        self.table_name = table_name
        self._ddb = dynamodb_client

    def take(self, window: str, cell: str, turn_id: str, quota: int | None) -> bool:
        condition = "(attribute_not_exists(#turns) OR NOT contains(#turns, :turn))"
        values: dict[str, Any] = {":one": {"N": "1"}, ":turn": {"S": turn_id}, ":turns": {"SS": [turn_id]},
                                  ":exp": {"N": str(_expires())}}
        if quota is not None:
            condition += " AND (attribute_not_exists(#taken) OR #taken < :quota)"
            values[":quota"] = {"N": str(quota)}
        try:
            self._ddb.update_item(
                TableName=self.table_name,
                Key={"pk": {"S": f"{PK_PREFIX}QUOTA#{window}"}, "sk": {"S": cell}},
                UpdateExpression="ADD #taken :one, #turns :turns SET expires_at = :exp",
                ExpressionAttributeNames={"#taken": "taken", "#turns": "turns"},
                ConditionExpression=condition, ExpressionAttributeValues=values)
        except self._ddb.exceptions.ConditionalCheckFailedException:
            return False
        return True


class OnlineSampler:
    """Decides per turn, in the turn's own window (by capture time): "rate", "quota" or None."""

    def __init__(self, settings: OnlineSettings, counter: WindowCounter) -> None:
        self.settings = settings
        self.counter = counter

    def decide(self, turn: TurnRecord) -> Reason | None:
        window = window_start(turn.timestamp, self.settings.window_minutes).isoformat()
        cell = "|".join(cell_of(turn))
        if drawn_by_rate(turn.turn_id, self.settings.rate, self.settings.seed):
            return "rate" if self.counter.take(window, cell, turn.turn_id, None) else None
        if self.settings.quota_per_cell and self.counter.take(window, cell, turn.turn_id, self.settings.quota_per_cell):
            return "quota"
        return None

    def select(self, turns: Iterable[TurnRecord]) -> list[tuple[TurnRecord, Reason]]:
        out = []
        for turn in sorted(turns, key=lambda t: (t.timestamp, t.turn_id)):
            reason = self.decide(turn)
            if reason:
                out.append((turn, reason))
        return out


# --------------------------------------------------------------------------------------------------
# Window cells
# --------------------------------------------------------------------------------------------------


def cell_entries(results: Sequence[EvaluationResult], window_minutes: int) -> Iterator[tuple[datetime, str, float]]:
    """(window start, stratum, composite) of every result a cell counts: scored, with its capture time."""
    for r in results:
        when = captured_at(r)
        if when is not None and r.composite_score is not None:
            yield window_start(when, window_minutes), result_stream_stratum(r), r.composite_score


class MemoryCellStore:
    def __init__(self) -> None:
        self.cells: dict[tuple[datetime, str], WindowCell] = {}

    def add(self, results: Sequence[EvaluationResult], window_minutes: int) -> int:
        added = 0
        for window, stratum, score in cell_entries(results, window_minutes):
            self.cells.setdefault((window, stratum), WindowCell(stratum=stratum, window_start=window)).add(score)
            added += 1
        return added

    def between(self, start: datetime, end: datetime) -> list[WindowCell]:
        return [c for (w, _), c in sorted(self.cells.items()) if start <= w < end]


class DynamoCellStore:
    """Window cells in the evaluation table, one atomic ADD per scored item (no read-modify-write)."""

    def __init__(self, table_name: str, dynamodb_client: Any) -> None:
        self.table_name = table_name
        self._ddb = dynamodb_client

    def add(self, results: Sequence[EvaluationResult], window_minutes: int) -> int:
        added = 0
        for window, stratum, score in cell_entries(results, window_minutes):
            self._ddb.update_item(
                TableName=self.table_name,
                Key={"pk": {"S": f"{PK_PREFIX}CELLS#{window.date().isoformat()}"},
                     "sk": {"S": f"{window.isoformat()}#{stratum}"}},
                UpdateExpression=f"ADD #n :one, #total :score, b{composite_bin(score)} :one SET expires_at = :exp",
                ExpressionAttributeNames={"#n": "n", "#total": "total"},
                ExpressionAttributeValues={":one": {"N": "1"}, ":score": {"N": repr(round(score, 6))},
                                           ":exp": {"N": str(_expires())}})
            added += 1
        return added

    def between(self, start: datetime, end: datetime) -> list[WindowCell]:
        cells: list[WindowCell] = []
        day = start.date()
        while day <= end.date():
            paginator = self._ddb.get_paginator("query")
            for page in paginator.paginate(
                    TableName=self.table_name, KeyConditionExpression="pk = :pk AND sk BETWEEN :a AND :b",
                    ExpressionAttributeValues={":pk": {"S": f"{PK_PREFIX}CELLS#{day.isoformat()}"},
                                               ":a": {"S": start.isoformat()}, ":b": {"S": end.isoformat()}},
                    ConsistentRead=True):
                cells.extend(_cell(item) for item in page["Items"])
            day += timedelta(days=1)
        return [c for c in cells if start <= c.window_start < end]


def _cell(item: dict[str, Any]) -> WindowCell:
    window, _, stratum = item["sk"]["S"].partition("#")
    hist = {int(k[1:]): int(v["N"]) for k, v in item.items() if k[:1] == "b" and k[1:].isdigit() and int(k[1:]) <= BINS}
    return WindowCell(stratum=stratum, window_start=datetime.fromisoformat(window), n=int(item["n"]["N"]),
                      total=float(item["total"]["N"]), hist=hist)


# --------------------------------------------------------------------------------------------------
# Metrics
# --------------------------------------------------------------------------------------------------


def online_metric_data(results: Sequence[EvaluationResult]) -> list[dict[str, Any]]:
    """Per minute of capture and per Locale x Intent x Version: OnlineJudged (Count), OnlineCompositeScore
    (statistic set of the composites) and OnlinePassRate; unscored items count as judged, not as a score."""
    groups: dict[tuple[datetime, str, str, str], list[EvaluationResult]] = defaultdict(list)
    for r in results:
        when = captured_at(r) or datetime.now(timezone.utc)
        minute = when.astimezone(timezone.utc).replace(second=0, microsecond=0)
        groups[(minute, r.locale, r.intent, tag_value(r.tags, VERSION_TAG) or "unknown")].append(r)
    data: list[dict[str, Any]] = []
    for (minute, locale, intent, version), items in sorted(groups.items()):
        dims = [{"Name": "Locale", "Value": locale}, {"Name": "Intent", "Value": intent},
                {"Name": "Version", "Value": version[:255]}]
        data.append({"MetricName": "OnlineJudged", "Dimensions": dims, "Value": float(len(items)), "Unit": "Count",
                     "Timestamp": minute})
        scores = [r.composite_score for r in items if r.composite_score is not None]
        if scores:
            data.append({"MetricName": "OnlineCompositeScore", "Dimensions": dims, "Unit": "None", "Timestamp": minute,
                         "StatisticValues": {"SampleCount": float(len(scores)), "Sum": float(sum(scores)),
                                             "Minimum": float(min(scores)), "Maximum": float(max(scores))}})
            data.append({"MetricName": "OnlinePassRate", "Dimensions": dims, "Unit": "None", "Timestamp": minute,
                         "Value": sum(1 for r in items if r.passed) / len(items)})
    return data
