"""Stratified sampling of captured turns into an ordinary evaluation dataset.

Strata are intent x locale. Each stratum gets ``ceil(rate * size)`` turns, raised to
``min(min_per_stratum, size)``: the sample is at least ``rate`` of the window overall, and a small
stratum (Japanese returns) still has enough items to say something. Which turns are drawn depends
only on the seed, the stratum and the turn ids (never on the order files were read), so the same
window and seed always give the same sample.

The sample is a JSON Lines dataset in the ordinary test-case format: the turn's own answer is the
``response`` (the run uses the ``recorded`` target), tags ``production`` and ``dt:<day>``, and the
capture details (timestamp, model, prompt version, latency, session) under ``metadata``.

Turns read from files may come straight from a producer, so the sampled turns are redacted
(``redact_turns``) before they are written: the same redaction as the capture client and the stream
(idempotent over stored turns). Sampling happens first, on the ids as read, so which turns are drawn
does not depend on the hashing key.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import random
from collections import defaultdict
from collections.abc import Iterable
from datetime import date
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from fmquality.domain.case import TestCase
from fmquality.production.capture import TurnRecord, parse_turn_lines, partition_prefix, redact_record
from fmquality.production.redact import Redactor

# Every case of a production sample carries this tag; a run whose cases all do gets a monitor block.
PRODUCTION_TAG = "production"
DEFAULT_RATE = 0.01
DEFAULT_MIN_PER_STRATUM = 30


class StratumSample(BaseModel):
    intent: str
    locale: str
    user_tier: str | None = None
    population: int
    sampled: int


class SampleSummary(BaseModel):
    window_from: str
    window_to: str
    population: int
    sampled: int
    rate: float
    min_per_stratum: int
    seed: int
    strata: list[StratumSample] = Field(default_factory=list)


def stratum_size(population: int, rate: float, min_per_stratum: int) -> int:
    """The policy over a whole window (the weekly sample): max(rate x size, quota), capped by the size."""
    return min(population, max(math.ceil(rate * population), min_per_stratum))


def cell_of(turn: TurnRecord) -> tuple[str, ...]:
    """The sampling cell: intent x locale x user tier when the tier is known, else intent x locale."""
    base = (turn.intent.value, turn.locale)
    return (*base, turn.user_tier) if turn.user_tier else base


def drawn_by_rate(turn_id: str, rate: float, seed: int) -> bool:
    """The same policy one turn at a time (the online sampler): a turn is taken when its seeded hash
    falls below ``rate`` (order-free, the same answer on every delivery); the quota is claimed on top
    (``production.online.OnlineSampler``), so a window's cell gets about max(rate x size, quota)."""
    digest = hashlib.sha256(f"{seed}|{turn_id}".encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < rate


def stratified_sample(turns: Iterable[TurnRecord], *, rate: float = DEFAULT_RATE,
                      min_per_stratum: int = DEFAULT_MIN_PER_STRATUM, seed: int = 0,
                      day_from: date | None = None, day_to: date | None = None
                      ) -> tuple[list[TurnRecord], SampleSummary]:
    """The sampled turns (sorted by stratum, then timestamp and id) and a summary per stratum.
    Turns outside [day_from, day_to] are ignored; a turn id seen twice counts once (Firehose
    delivers at least once)."""
    if not 0 < rate <= 1:
        raise ValueError(f"rate must be in (0, 1], got {rate}")
    if min_per_stratum < 0:
        raise ValueError("min_per_stratum must be >= 0")
    unique: dict[str, TurnRecord] = {}
    for turn in turns:
        if (day_from and turn.day < day_from.isoformat()) or (day_to and turn.day > day_to.isoformat()):
            continue
        unique.setdefault(turn.turn_id, turn)
    strata: dict[tuple[str, ...], list[TurnRecord]] = defaultdict(list)
    for turn in unique.values():
        strata[cell_of(turn)].append(turn)
    chosen: list[TurnRecord] = []
    rows: list[StratumSample] = []
    for cell, members in sorted(strata.items()):
        intent, locale = cell[0], cell[1]
        members.sort(key=lambda t: t.turn_id)
        k = stratum_size(len(members), rate, min_per_stratum)
        rng = random.Random("|".join((str(seed), *cell)))
        picked = rng.sample(members, k)
        picked.sort(key=lambda t: (t.timestamp, t.turn_id))
        chosen.extend(picked)
        rows.append(StratumSample(intent=intent, locale=locale, user_tier=cell[2] if len(cell) > 2 else None,
                                 population=len(members), sampled=k))
    days = sorted(t.day for t in unique.values())
    summary = SampleSummary(
        window_from=day_from.isoformat() if day_from else (days[0] if days else ""),
        window_to=day_to.isoformat() if day_to else (days[-1] if days else ""),
        population=len(unique), sampled=len(chosen), rate=rate, min_per_stratum=min_per_stratum, seed=seed,
        strata=rows)
    return chosen, summary


def turn_to_case(turn: TurnRecord) -> dict[str, Any]:
    """One dataset line (DESIGN section 4) from one captured turn."""
    case: dict[str, Any] = {
        "test_id": turn.turn_id,
        "intent": turn.intent.value,
        "locale": turn.locale,
        "query": turn.query,
        "response": turn.response,
        "conversation_history": [m.model_dump() for m in turn.conversation_history],
        "page_context": turn.page_context.model_dump(exclude_none=True),
        "retrieved_chunks": list(turn.retrieved_chunks),
        "catalog": [c.model_dump(exclude_none=True) for c in turn.catalog],
        "tags": [PRODUCTION_TAG, f"dt:{turn.day}", f"captured:{turn.timestamp.isoformat()}",
                 f"version:{turn.prompt_version}@{turn.model_id}",
                 *([f"tier:{turn.user_tier}"] if turn.user_tier else [])],
        "metadata": {
            "captured_at": turn.timestamp.isoformat(),
            "session_id": turn.session_id,
            "model_id": turn.model_id,
            "prompt_version": turn.prompt_version,
            "latency_ms": turn.latency_ms,
            "user_tier": turn.user_tier,
        },
    }
    return case


def redact_turns(turns: Iterable[TurnRecord], redactor: Redactor) -> list[TurnRecord]:
    """The turns as they would have been stored: text redacted, ids as keyed tokens, the page
    context reduced to its allow-list (a stored turn comes back unchanged)."""
    return [redact_record(t, redactor) for t in turns]


def dataset_text(turns: Iterable[TurnRecord], redactor: Redactor | None = None) -> str:
    """The JSON Lines dataset of the sampled turns (redacted first when ``redactor`` is given), each
    line checked as a test case: a line the dataset loader would reject is a bug here, so it raises
    instead of writing it."""
    if redactor is not None:
        turns = redact_turns(turns, redactor)
    lines = [json.dumps(turn_to_case(t), ensure_ascii=False) + "\n" for t in turns]
    for number, line in enumerate(lines, start=1):
        try:
            TestCase.model_validate_json(line)
        except ValidationError as exc:
            raise ValueError(f"sampled dataset does not validate: line {number}: {exc.errors()[0]['msg']}") from exc
    return "".join(lines)


def _turns_in(body: bytes, source: str) -> tuple[list[TurnRecord], list[str]]:
    """The turns of one stored object or file (gzip-compressed or not) and its bad lines."""
    if body[:2] == b"\x1f\x8b":
        body = gzip.decompress(body)
    return parse_turn_lines(body.splitlines(), source)


def read_turn_files(paths: Iterable[str | Path]) -> tuple[list[TurnRecord], list[str]]:
    """Turns from files or folders (every *.jsonl / *.json / Firehose object below a folder)."""
    turns: list[TurnRecord] = []
    errors: list[str] = []
    for raw in paths:
        path = Path(raw)
        files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        if not path.exists():
            raise FileNotFoundError(f"{path}: no such file or folder")
        for file in files:
            got, bad = _turns_in(file.read_bytes(), str(file))
            turns.extend(got)
            errors.extend(bad)
    return turns, errors


SAMPLE_TRIGGER = "schedule:production-sample"


def sample_key(day: date) -> str:
    """Where the day's sample is written in the data bucket."""
    return f"datasets/production/sample-{day.isoformat()}.jsonl"


def read_turns_s3(s3_client: Any, bucket: str, days: Iterable[date]) -> tuple[list[TurnRecord], list[str]]:
    """Every turn stored under production/turns/dt=<day>/ for the given days."""
    turns: list[TurnRecord] = []
    errors: list[str] = []
    paginator = s3_client.get_paginator("list_objects_v2")
    for day in days:
        for page in paginator.paginate(Bucket=bucket, Prefix=partition_prefix(day.isoformat())):
            for obj in page.get("Contents", []):
                body = s3_client.get_object(Bucket=bucket, Key=obj["Key"])["Body"].read()
                got, bad = _turns_in(body, f"s3://{bucket}/{obj['Key']}")
                turns.extend(got)
                errors.extend(bad)
    return turns, errors
