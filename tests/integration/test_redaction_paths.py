"""The planted personal-data set through every way a turn reaches storage or a dataset:

(a) ``CaptureClient`` (what it hands to Firehose), (b) the Firehose transform on a valid record,
(c) the transform's failure path, for a record the schema refuses (an unknown field) and for one that
is not JSON at all, both sent as ``json.dumps`` sends them (ASCII escapes: Japanese and full-width
digits become ``\\uXXXX``), and (d) ``fmquality sample`` reading a turn file a producer wrote.

Each path must store no planted value (0 leaks), change no benign text (0 over-redactions), keep
neither the turn id nor the session id in clear, and keep only the allow-listed page context.
The ``run_*`` functions return what each path stored per fixture row; /tmp-style measurement
scripts import them too (they use only the long-standing public API).
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from tests.unit.test_redaction_planted import (KEY, benign_count, leaks_in, load_benign, load_planted,
                                               over_redactions_in, planted_count, turn_for)

DAY = "2026-11-16"


def _turns(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for i, row in enumerate(rows):
        turn = turn_for(row, i)
        turn["latency_ms"] = 1000.0 + i  # a per-row marker that every path keeps (sample: metadata)
        out.append(turn)
    return out


class RecordingFirehose:
    def __init__(self) -> None:
        self.records: list[bytes] = []

    def put_record_batch(self, DeliveryStreamName: str, Records: list[dict[str, bytes]]) -> dict[str, Any]:
        self.records.extend(r["Data"] for r in Records)
        return {"FailedPutCount": 0, "RequestResponses": [{"RecordId": str(i)} for i in range(len(Records))]}


def run_capture(rows: list[dict[str, Any]], redactor: Any) -> dict[str, str]:
    """(a) what CaptureClient sends to the stream, per row."""
    from fmquality.production.capture import CaptureClient

    fake = RecordingFirehose()
    with CaptureClient(fake, "turns", redactor=redactor, sleep=lambda s: None) as client:
        for turn in _turns(rows):
            client.send(turn)
    assert len(fake.records) == len(rows)
    return {row["id"]: data.decode("utf-8") for row, data in zip(rows, fake.records)}


def _transform(rows: list[dict[str, Any]], redactor: Any, encode) -> dict[str, str]:
    from fmquality.production.capture import transform_firehose_records

    records = [{"recordId": row["id"], "data": base64.b64encode(encode(turn)).decode("ascii")}
               for row, turn in zip(rows, _turns(rows))]
    out = transform_firehose_records(records, redactor)
    assert [o["recordId"] for o in out] == [row["id"] for row in rows]
    return {o["recordId"]: base64.b64decode(o["data"]).decode("utf-8", "replace") for o in out}


def _valid(turn: dict[str, Any]) -> bytes:
    return json.dumps(turn).encode("utf-8")  # json.dumps' default: ASCII escapes


def _refused_by_schema(turn: dict[str, Any]) -> bytes:
    return json.dumps({**turn, "debug_note": "from app v2"}).encode("utf-8")  # an unknown field


def _not_json(turn: dict[str, Any]) -> bytes:
    return json.dumps(turn).encode("utf-8")[:-1]  # a record cut short


def run_transform_valid(rows: list[dict[str, Any]], redactor: Any) -> dict[str, str]:
    """(b) the transform Lambda on valid turns (sent with json.dumps' default ASCII escapes)."""
    return _transform(rows, redactor, _valid)


def run_transform_refused(rows: list[dict[str, Any]], redactor: Any) -> dict[str, str]:
    """(c) the refusal path: a turn the schema refuses (an unknown field), ASCII-escaped JSON."""
    return _transform(rows, redactor, _refused_by_schema)


def run_transform_not_json(rows: list[dict[str, Any]], redactor: Any) -> dict[str, str]:
    """(c') the refusal path for bytes that are not JSON (a record cut short), ASCII-escaped."""
    return _transform(rows, redactor, _not_json)


def run_sample_cli(rows: list[dict[str, Any]], workdir: Path) -> dict[str, str]:
    """(d) ``fmquality sample`` over a turn file written by a producer (everything sampled)."""
    from fmquality.cli.main import main

    workdir.mkdir(parents=True, exist_ok=True)
    turns = workdir / "turns.jsonl"
    turns.write_text("".join(json.dumps(t) + "\n" for t in _turns(rows)), encoding="utf-8")
    config = workdir / "watch.yaml"
    config.write_text("production: {}\n", encoding="utf-8")
    out = workdir / "sample.jsonl"
    code = main(["sample", "--turns", str(turns), "--from", DAY, "--to", DAY, "--out", str(out), "--rate", "1",
                 "--min-per-stratum", "100000", "--seed", "1", "--watch-config", str(config)])
    assert code == 0
    by_marker = {1000.0 + i: row["id"] for i, row in enumerate(rows)}
    stored = {}
    for line in out.read_text(encoding="utf-8").splitlines():
        stored[by_marker[json.loads(line)["metadata"]["latency_ms"]]] = line
    assert len(stored) == len(rows)
    return stored


def raw_ids_in(rows: list[dict[str, Any]], stored: dict[str, str]) -> list[str]:
    """Turn and session ids still stored in clear."""
    return [raw for row in rows for raw in (f"turn-{row['id']}", f"sess-{row['id']}-raw") if raw in stored[row["id"]]]


def test_refused_records_are_stored_redacted_under_dt_invalid_never_processing_failed(redactor):
    """A ProcessingFailed record goes to the error prefix as Firehose received it, so a refusal is
    an Ok record: a redacted envelope, partition dt=invalid, with reasons that quote no value."""
    from fmquality.production.capture import transform_firehose_records

    turn = _turns(load_planted()[:1])[0]
    records = [{"recordId": str(i), "data": base64.b64encode(encode(turn)).decode()}
               for i, encode in enumerate((_valid, _refused_by_schema, _not_json))]
    records.append({"recordId": "3", "data": base64.b64encode("田中様 090-1234-5678".encode("cp932")).decode()})
    records.append({"recordId": "4", "data": "not base64 at all!"})
    out = transform_firehose_records(records, redactor)
    assert {o["result"] for o in out} == {"Ok"}
    assert [o["metadata"]["partitionKeys"]["dt"] for o in out] == ["2026-11-16"] + ["invalid"] * 4
    schema, not_json, cp932, garbage = (json.loads(base64.b64decode(o["data"])) for o in out[1:])
    assert schema["refused"] == ["debug_note: extra_forbidden"] and "from app v2" not in json.dumps(schema["refused"])
    assert schema["record"]["turn_id"] == redactor.turn_token(turn["turn_id"])
    assert schema["record"]["query"] == redactor.redact_text(turn["query"])  # decoded, then redacted
    assert not_json["refused"][0].startswith("not JSON") and isinstance(not_json["record"], str)
    assert cp932["record"] == "[NAME]様 [PHONE]"  # a Shift_JIS producer is decoded, not mangled
    assert garbage["refused"] and garbage["record"] in ("", None)


PATHS = {
    "capture_client": lambda rows, r, tmp: run_capture(rows, r),
    "transform_valid": lambda rows, r, tmp: run_transform_valid(rows, r),
    "transform_refused_schema": lambda rows, r, tmp: run_transform_refused(rows, r),
    "transform_refused_not_json": lambda rows, r, tmp: run_transform_not_json(rows, r),
    "sample_cli": lambda rows, r, tmp: run_sample_cli(rows, tmp),
}


@pytest.fixture
def redactor(monkeypatch):
    from fmquality.production.redact import Redactor

    monkeypatch.setenv("FMQ_ORDER_HASH_KEY", KEY)
    monkeypatch.delenv("ORDER_HASH_SECRET_ID", raising=False)
    return Redactor(KEY)


@pytest.mark.parametrize("path", sorted(PATHS))
def test_no_planted_value_reaches_storage(path, redactor, tmp_path):
    rows = load_planted()
    stored = PATHS[path](rows, redactor, tmp_path)
    found = leaks_in(rows, stored)
    assert found == [], f"{path}: {len(found)} of {planted_count(rows)} planted values leak: {found}"


@pytest.mark.parametrize("path", sorted(PATHS))
def test_benign_text_survives_every_path(path, redactor, tmp_path):
    rows = load_benign()
    stored = PATHS[path](rows, redactor, tmp_path)
    found = over_redactions_in(rows, stored)
    assert found == [], f"{path}: {len(found)} of {benign_count(rows)} benign strings changed: {found}"


@pytest.mark.parametrize("path", sorted(PATHS))
def test_turn_and_session_ids_are_stored_as_keyed_tokens(path, redactor, tmp_path):
    rows = load_planted()[:6]
    stored = PATHS[path](rows, redactor, tmp_path)
    assert raw_ids_in(rows, stored) == []
    for row in rows:  # (a dataset line has the turn id as its test_id and the session under metadata)
        assert redactor.turn_token(f"turn-{row['id']}") in stored[row["id"]]
        assert redactor.session_token(f"sess-{row['id']}-raw") in stored[row["id"]]


PAGE = {
    "current_asin": "B0ABC12345", "store_section": "shonen",
    "order": {"order_id": "MAQ7K29XB", "status": "shipped", "ship_date": "2026-11-10", "eta": "2026-11-14",
              "carrier": "Yamato", "tracking_number": "4567-8901-2345", "shipping_address": "東京都渋谷区神南1-2-3",
              "items": [{"asin": "B0X1234567", "title": "Vol. 1", "price": 5.0, "qty": 1, "status": "shipped",
                         "gift_message": "田中様へ"}]},
    "cart": {"items": [{"asin": "B0Y1234567", "title": "Vol. 2", "price": 12.99, "qty": 2, "note": "call 090-1234-5678"}],
             "coupon": "SAVE10"},
    "customer_email": "a@example.com", "user_agent": "Mozilla/5.0", "client_ip": "203.0.113.9",
}


def test_page_context_keeps_the_allow_list_and_counts_what_it_drops(redactor):
    from fmquality.production.capture import CaptureClient, transform_firehose_records

    turn = {**_turns(load_benign()[:1])[0], "page_context": PAGE}
    fake = RecordingFirehose()
    with CaptureClient(fake, "turns", redactor=redactor, sleep=lambda s: None) as client:
        client.send(turn)
    sent = json.loads(fake.records[0])
    [again] = transform_firehose_records([{"recordId": "1", "data": base64.b64encode(json.dumps(turn).encode()).decode()}],
                                         redactor)
    transformed = json.loads(base64.b64decode(again["data"]))
    expected = {
        "current_asin": "B0ABC12345", "store_section": "shonen",
        "order": {"order_id": redactor.order_token("MAQ7K29XB"), "status": "shipped", "ship_date": "2026-11-10",
                  "eta": "2026-11-14", "carrier": "Yamato",
                  "items": [{"asin": "B0X1234567", "title": "Vol. 1", "price": 5.0, "qty": 1, "status": "shipped"}]},
        "cart": {"items": [{"asin": "B0Y1234567", "title": "Vol. 2", "price": 12.99, "qty": 2}]},
    }
    for stored in (sent, transformed):
        assert stored["page_context"] == expected
        # order.tracking_number, order.shipping_address, order.items[0].gift_message, cart.items[0].note,
        # cart.coupon, customer_email, user_agent, client_ip
        assert stored["redactions"]["page_context_dropped"] == 8
    # The transform over the client's output drops nothing more and hashes nothing twice.
    [twice] = transform_firehose_records([{"recordId": "1", "data": base64.b64encode(fake.records[0]).decode()}],
                                         redactor)
    assert json.loads(base64.b64decode(twice["data"])) == sent
