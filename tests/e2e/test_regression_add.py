"""`fmquality regression add` round-trips an incident into a case that validates and runs."""

from __future__ import annotations

import json

from fmquality.cli.main import main
from fmquality.production.capture import LocalTurnStore
from fmquality.production.redact import Redactor
from fmquality.run.dataset import load_dataset

TURN = {"turn_id": "t-incident-7", "timestamp": "2026-11-20T10:00:00+00:00", "locale": "en-US", "intent": "faq",
        "query": "How long do I have to return a manga? My email is jane.doe@example.com",
        "response": "You have 30 days to return anything, jane.doe@example.com!",
        "retrieved_chunks": ["Returns: unopened items can be returned within 15 days of delivery."],
        "model_id": "m", "prompt_version": "p7", "latency_ms": 800}


def test_a_captured_turn_becomes_a_redacted_labelled_regression_case_that_runs(tmp_path, monkeypatch):
    monkeypatch.setenv("FMQ_ORDER_HASH_KEY", "k" * 32)
    LocalTurnStore(tmp_path / "store", Redactor(b"k" * 32)).write([TURN])
    stored_id = next((tmp_path / "store").rglob("*.jsonl")).read_text(encoding="utf-8")
    turn_token = json.loads(stored_id.splitlines()[0])["turn_id"]
    dataset = tmp_path / "regression.jsonl"
    assert main(["regression", "add", "--from-turn", turn_token, "--turns", str(tmp_path / "store"),
                 "--expect", "says unopened items can be returned within 15 days of delivery",
                 "--dataset", str(dataset)]) == 0
    (line,) = [json.loads(x) for x in dataset.read_text(encoding="utf-8").splitlines()]
    assert "regression" in line["tags"] and line["label"]["acceptable"] is False
    assert "jane.doe@example.com" not in json.dumps(line)  # redacted, as the stream stores turns
    assert load_dataset(dataset).cases[0].reference_response.startswith("says unopened")
    # and it runs: the incident's answer fails, and a failing regression item fails the gate
    assert main(["run", "--engine", "direct", "--dataset", str(dataset), "--out", str(tmp_path / "out"),
                 "--quiet"]) == 1
    report = json.loads((tmp_path / "out" / "report.json").read_text(encoding="utf-8"))
    assert any(r.startswith("regression item regression-") for r in report["gate"]["reasons"])
    # a second add of the same incident is refused, the file untouched
    before = dataset.read_text(encoding="utf-8")
    assert main(["regression", "add", "--from-turn", turn_token, "--turns", str(tmp_path / "store"),
                 "--expect", "x", "--dataset", str(dataset)]) == 2
    assert dataset.read_text(encoding="utf-8") == before
