"""Issue 20, item 4 on embedded AWS: the deployed state machine given ``"replay": {"from", "to"}``, a
candidate regressed on FAQ answers and the production control: Prepare reads the window's captured turns
from the bucket, every target request is marked a replay, Aggregate writes the per-turn diff (the
regressed stratum shows) and queues the regressed turns for review.

The local engine's input has no replay option: the test wraps its execution input (the dataset it
uploads is dropped, the captured turns are put where the capture stream writes them)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fmquality.engines import local
from fmquality.engines.local import BUCKET_NAME, TABLE_NAME, run_local_execution

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
GOOD = FIXTURES / "cli_good.jsonl"
CHATBOT = "python:tests.e2e.chatbot_double"
WINDOW = {"from": "2026-11-23T10:00:00Z", "to": "2026-11-23T11:00:00Z"}


def _turn_lines() -> str:
    """The fixture's cases as turns captured one a minute from 10:00 UTC, and one after the window."""
    rows = [json.loads(line) for line in GOOD.read_text(encoding="utf-8").splitlines() if line]
    turns = [{"turn_id": row["test_id"], "timestamp": f"2026-11-23T10:{minute:02d}:00+00:00",
              "locale": row.get("locale", "en-US"), "intent": row["intent"], "query": row["query"],
              "response": row["response"], "catalog": row.get("catalog", []),
              "retrieved_chunks": row.get("retrieved_chunks", []), "page_context": row.get("page_context", {}),
              "model_id": "prod-model", "prompt_version": "v7", "latency_ms": 420.0}
             for minute, row in enumerate(rows)]
    turns.append(dict(turns[0], turn_id="after-window", timestamp="2026-11-23T12:00:00+00:00"))
    return "".join(json.dumps(t, ensure_ascii=False) + "\n" for t in turns)


def replay_noting_flag(request: Any) -> dict[str, Any]:
    """The production chatbot, noting in $REPLAY_FLAGS_FILE whether it was told the turn is a replay."""
    import os

    from tests.e2e.chatbot_double import recorded

    with open(os.environ["REPLAY_FLAGS_FILE"], "a", encoding="utf-8") as flags:
        flags.write(f"{json.dumps(request['replay'])}\n")
    return recorded(request)


@pytest.fixture
def replay_input(monkeypatch):
    original = local._execution_input

    def with_replay(client, run, baseline_report):
        execution_input = original(client, run, baseline_report)
        client("s3").put_object(Bucket=BUCKET_NAME, Key="production/turns/dt=2026-11-23/fmq-turns-1.jsonl",
                                Body=_turn_lines().encode("utf-8"))
        for key in ("dataset", "trigger", "skip_invalid"):
            execution_input.pop(key, None)
        return {**execution_input, "replay": WINDOW}

    monkeypatch.setattr(local, "_execution_input", with_replay)


def test_a_replay_on_the_state_machine_diffs_the_window_and_queues_the_regressed_stratum(replay_input, tmp_path,
                                                                                            monkeypatch):
    from fmquality.adapters.review_queue import DynamoReviewQueue

    flags = tmp_path / "flags.jsonl"
    monkeypatch.setenv("REPLAY_FLAGS_FILE", str(flags))
    seen: dict[str, Any] = {}

    def inspect(client):
        s3 = client("s3")
        for name in ("replay-diff.jsonl", "replay-summary.json"):
            seen[name] = s3.get_object(Bucket=BUCKET_NAME, Key=f"runs/replay-sm/{name}")["Body"].read().decode()
        seen["queued"] = DynamoReviewQueue(TABLE_NAME, client("dynamodb")).items("replay-sm")

    outcome = run_local_execution(dataset_path=GOOD, target=f"{CHATBOT}:regressed_on_faq",
                                  control="python:tests.e2e.test_replay_state_machine:replay_noting_flag",
                                  run_id="replay-sm", retry_wait_cap_s=0.01, inspect_aws=inspect)

    # The candidate regressed against the control: the paired gate fails, and the diff says where.
    assert outcome.error == "QualityGateFailed", (outcome.error, outcome.cause)
    rows = [json.loads(line) for line in seen["replay-diff.jsonl"].splitlines()]
    regressions = {r["test_id"] for r in rows if r["change"] == "regression"}
    faq = {json.loads(line)["test_id"] for line in GOOD.read_text().splitlines() if line and json.loads(line)["intent"] == "faq"}
    assert regressions and regressions <= faq
    summary = json.loads(seen["replay-summary.json"])
    assert summary["window"] == WINDOW
    assert {name for name, counts in summary["strata"].items() if counts["regression"]} <= {f"faq|{loc}" for loc in
                                                                                            ("en-US", "ja-JP")}
    assert sum(c["turns"] for c in summary["strata"].values()) == len(GOOD.read_text().splitlines())
    assert regressions <= {q.test_id for q in seen["queued"]}
    # Every request the control got was marked a replay; the turn after the window was never asked.
    told = [json.loads(line) for line in flags.read_text(encoding="utf-8").splitlines()]
    assert told and all(flag is True for flag in told)
    report = json.loads(outcome.outputs["report.json"])
    assert report["trigger"] == "replay" and report["review_queue"]["queued"] >= len(regressions)
    assert "after-window" not in outcome.outputs["results.jsonl"]
