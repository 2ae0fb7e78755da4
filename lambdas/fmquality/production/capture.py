"""The captured production turn (the record schema of the Firehose stream) and the chatbot-side
client that sends turns to the stream.

One turn is one JSON object on one line. Firehose (through the redaction transform) stores it under
``production/turns/dt=YYYY-MM-DD/`` of the data bucket, the day being the turn's own timestamp (UTC).
A record the schema refuses is stored redacted under ``production/turns/dt=invalid/`` (see
``transform_firehose_records``), never as sent.
"""

from __future__ import annotations

import json
import math
import random
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from datetime import timezone
from pathlib import Path
from typing import Any

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, ValidationError, field_validator

from fmquality.domain.case import CatalogItem, Intent, Message, PageContext, check_locale
from fmquality.production.redact import Redactor, decode_bytes, order_key_from_environment, refused_envelope
from fmquality.domain.errors import CaptureError
from fmquality.retry import full_jitter

TURNS_PREFIX = "production/turns/"
SCHEMA_VERSION = 1
# PutRecordBatch: at most 500 records and 4 MiB per call, 1,000 KiB per record.
MAX_BATCH_RECORDS = 500
MAX_BATCH_BYTES = 4 * 1024 * 1024
MAX_RECORD_BYTES = 1000 * 1024


class TurnRecord(BaseModel):
    """One chatbot turn as a shopper saw it. Everything here is stored, so free text is redacted
    before it leaves the chatbot (CaptureClient) and again in the stream (redact_transform)."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = SCHEMA_VERSION
    turn_id: str = Field(min_length=1, max_length=128,
                         description="unique per turn; stored as turn_<16 hex> (keyed HMAC), which becomes the test_id")
    session_id: str | None = Field(default=None, max_length=128, description="stored as sess_<16 hex> (keyed HMAC)")
    timestamp: AwareDatetime = Field(description="when the answer was returned (ISO 8601 with offset)")
    locale: str = Field(default="en-US", description="en-US or ja-JP")
    intent: Intent = Field(description="the chatbot's intent classification of the turn")
    query: str = Field(min_length=1, description="the shopper's last message")
    conversation_history: list[Message] = Field(default_factory=list, description="earlier turns, oldest first")
    page_context: PageContext = Field(default_factory=PageContext,
                                      description="stored reduced to redact.PAGE_CONTEXT_ALLOWED")
    response: str = Field(description="the answer the shopper was shown")
    catalog: list[CatalogItem] = Field(default_factory=list, description="catalog entries in play, as the bot saw them")
    retrieved_chunks: list[str] = Field(default_factory=list, description="knowledge passages the answer used")
    model_id: str = Field(min_length=1)
    prompt_version: str = Field(min_length=1)
    # The shopper's tier (e.g. standard, prime), a coarse label, never an identifier: one of the
    # online sampler's and the stream drift's strata dimensions when given.
    user_tier: str | None = Field(default=None, max_length=32, pattern=r"^[a-z][a-z0-9_-]*$")
    latency_ms: float = Field(ge=0)
    # Filled by the redaction: how many spans of each kind were replaced (never the values), and
    # page_context_dropped: how many page-context keys outside the allow-list were dropped.
    redactions: dict[str, int] = Field(default_factory=dict)

    @field_validator("locale")
    @classmethod
    def _locale_shape(cls, value: str) -> str:
        return check_locale(value)

    @property
    def day(self) -> str:
        return self.timestamp.astimezone(timezone.utc).date().isoformat()


def partition_prefix(day: str) -> str:
    """``production/turns/dt=2026-11-23/``: the Hive-style partition of one UTC day."""
    return f"{TURNS_PREFIX}dt={day}/"


def redact_record(turn: TurnRecord | Mapping[str, Any], redactor: Redactor) -> TurnRecord:
    """Redact and validate one turn (ids as keyed tokens, page context reduced to its allow-list);
    the counts of this pass are added to ``redactions``. A second pass changes nothing."""
    data = turn.model_dump(mode="json") if isinstance(turn, TurnRecord) else dict(turn)
    redacted, counts = redactor.redact_turn(data)
    merged = Counter(redacted.get("redactions") or {})
    merged.update(counts)
    redacted["redactions"] = dict(sorted(merged.items()))
    return TurnRecord.model_validate(redacted)


def record_line(turn: TurnRecord) -> bytes:
    return (turn.model_dump_json(exclude_none=True) + "\n").encode("utf-8")


class CaptureClient:
    """Sends turns to the Firehose delivery stream, redacted first.

    ``send`` buffers; a full batch (500 records or 4 MiB) is sent with PutRecordBatch, and
    ``flush`` (or leaving a ``with`` block) sends the rest. Records that PutRecordBatch reports as
    failed (FailedPutCount / per-record ErrorCode, e.g. throttling) are sent again, alone, with
    exponential backoff and full jitter (``fmquality.retry``), up to ``max_attempts``; then CaptureError names them (by the
    producer's own turn ids: only the stream gets the hashed ones).
    The redactor defaults to one keyed from the environment (FMQ_ORDER_HASH_KEY, or the secret in
    ORDER_HASH_SECRET_ID read with ``secrets_client``)."""

    def __init__(self, firehose_client: Any, stream_name: str, *, redactor: Redactor | None = None,
                 secrets_client: Any = None, max_attempts: int = 5, base_delay_s: float = 0.1,
                 sleep: Callable[[float], None] = time.sleep, rng: Callable[[], float] = random.random) -> None:
        self._firehose = firehose_client
        self.stream_name = stream_name
        self.redactor = redactor or Redactor(order_key_from_environment(secrets_client=secrets_client))
        self.max_attempts = max_attempts
        self.base_delay_s = base_delay_s
        self._sleep = sleep
        self._rng = rng
        self._buffer: list[tuple[str, bytes]] = []
        self._buffer_bytes = 0
        self.sent = 0
        self.calls = 0
        self.retried = 0

    def __enter__(self) -> "CaptureClient":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.flush()

    def send(self, turn: TurnRecord | Mapping[str, Any]) -> None:
        own_id = turn.turn_id if isinstance(turn, TurnRecord) else str(turn.get("turn_id", ""))
        record = redact_record(turn, self.redactor)
        data = record_line(record)
        if len(data) > MAX_RECORD_BYTES:
            raise ValueError(f"turn {own_id}: {len(data)} bytes, above Firehose's {MAX_RECORD_BYTES} per record")
        if len(self._buffer) >= MAX_BATCH_RECORDS or self._buffer_bytes + len(data) > MAX_BATCH_BYTES:
            self.flush()
        self._buffer.append((own_id, data))
        self._buffer_bytes += len(data)
        if len(self._buffer) >= MAX_BATCH_RECORDS:
            self.flush()

    def send_many(self, turns: Iterable[TurnRecord | Mapping[str, Any]]) -> int:
        count = 0
        for turn in turns:
            self.send(turn)
            count += 1
        self.flush()
        return count

    def flush(self) -> None:
        pending, self._buffer, self._buffer_bytes = self._buffer, [], 0
        attempt = 0
        while pending:
            self.calls += 1
            try:
                response = self._firehose.put_record_batch(
                    DeliveryStreamName=self.stream_name, Records=[{"Data": data} for _, data in pending])
                failed = [item for item, result in zip(pending, response.get("RequestResponses", []))
                          if result.get("ErrorCode")]
                if response.get("FailedPutCount") and not failed:
                    failed = pending  # a count without per-record detail: resend everything
            except Exception as exc:  # noqa: BLE001 - throttling or a transient service error: retry the batch
                if not _retryable(exc):
                    raise
                failed = pending
            self.sent += len(pending) - len(failed)
            pending = failed
            if not pending:
                return
            attempt += 1
            if attempt >= self.max_attempts:
                raise CaptureError(f"{len(pending)} turn(s) not accepted by {self.stream_name} after "
                                   f"{self.max_attempts} attempts", [turn_id for turn_id, _ in pending])
            self.retried += len(pending)
            # Uncapped: max_attempts bounds the wait (0.1 s x 2^4 = 1.6 s at most by default).
            self._sleep(full_jitter(attempt, self.base_delay_s, math.inf, self._rng))


def _retryable(exc: Exception) -> bool:
    code = getattr(exc, "response", {}).get("Error", {}).get("Code", "") if hasattr(exc, "response") else ""
    return code in {"ServiceUnavailableException", "ThrottlingException", "InternalFailure",
                    "LimitExceededException"} or type(exc).__name__ in {"EndpointConnectionError", "ReadTimeoutError",
                                                                         "ConnectTimeoutError"}


def parse_turn_lines(lines: Iterable[bytes | str], source: str) -> tuple[list[TurnRecord], list[str]]:
    """Turns of one stored object (JSON Lines); bad lines are returned as "source:line: reason"."""
    turns: list[TurnRecord] = []
    errors: list[str] = []
    for number, raw in enumerate(lines, start=1):
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
        text = text.strip()
        if not text:
            continue
        try:
            turns.append(TurnRecord.model_validate(json.loads(text)))
        except (ValueError, TypeError) as exc:
            errors.append(f"{source}:{number}: {str(exc).splitlines()[0][:200]}")
    return turns, errors


class LocalTurnStore:
    """The stream's local equivalent: the same redaction and the same key layout
    (``<root>/production/turns/dt=YYYY-MM-DD/<name>.jsonl``) as Firehose with the transform Lambda."""

    def __init__(self, root: str | Path, redactor: Redactor) -> None:
        self.root = Path(root)
        self.redactor = redactor

    def write(self, turns: Iterable[TurnRecord | Mapping[str, Any]], name: str = "part-0000") -> dict[str, int]:
        by_day: dict[str, list[bytes]] = {}
        for turn in turns:
            record = redact_record(turn, self.redactor)
            by_day.setdefault(record.day, []).append(record_line(record))
        written: dict[str, int] = {}
        for day, lines in sorted(by_day.items()):
            path = self.root / partition_prefix(day) / f"{name}.jsonl"
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("ab") as handle:
                handle.writelines(lines)
            written[day] = len(lines)
        return written

    def day_files(self, day: str) -> list[Path]:
        return sorted((self.root / partition_prefix(day)).glob("*.jsonl"))


REFUSED_PARTITION = "invalid"


def transform_firehose_records(records: Iterable[Mapping[str, Any]], redactor: Redactor) -> list[dict[str, Any]]:
    """The Firehose data-transformation contract: each input record (base64 ``data``) comes back
    with the same ``recordId``, ``result`` Ok and its redacted JSON line, plus the partition key
    ``dt`` (the turn's UTC day) for dynamic partitioning.

    A record that is not a valid turn is also returned ``Ok``, as a redacted envelope
    (``{"refused": [reasons], "record": <decoded, redacted>}``) under the partition ``dt=invalid``:
    a ``ProcessingFailed`` record goes to the error prefix as Firehose received it (its ``rawData``),
    whatever data the function returns, so refusing it that way would store the personal data this
    function exists to remove. The envelope is built from the decoded record (JSON parsed, or its
    ``\\uXXXX`` escapes decoded), never from escaped bytes. No record makes the batch fail."""
    return [transform_record(record, redactor) for record in records]


def transform_record(record: Mapping[str, Any], redactor: Redactor) -> dict[str, Any]:
    import base64

    record_id = record["recordId"]
    raw = b""
    try:
        raw = base64.b64decode(record.get("data", ""))
        turn = redact_record(json.loads(decode_bytes(raw)), redactor)
        return {"recordId": record_id, "result": "Ok", "data": base64.b64encode(record_line(turn)).decode("ascii"),
                "metadata": {"partitionKeys": {"dt": turn.day}}}
    except Exception as exc:  # noqa: BLE001 - any refusal is stored redacted, never raised to Firehose
        try:
            text, _ = refused_envelope(raw, refusal_reasons(exc), redactor)
        except Exception:  # noqa: BLE001 - not even decodable: keep that it was refused, nothing of it
            text = json.dumps({"refused": ["unreadable record"], "record": None})
        return {"recordId": record_id, "result": "Ok", "data": base64.b64encode((text + "\n").encode("utf-8")).decode("ascii"),
                "metadata": {"partitionKeys": {"dt": REFUSED_PARTITION}}}


def refusal_reasons(exc: Exception) -> list[str]:
    """Why a record was refused, without the values it carried (pydantic's messages quote the input)."""
    if isinstance(exc, ValidationError):
        return [f"{'.'.join(str(p) for p in e['loc']) or '<record>'}: {e['type']}" for e in exc.errors()][:20]
    if isinstance(exc, json.JSONDecodeError):
        return [f"not JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"]
    return [type(exc).__name__]
