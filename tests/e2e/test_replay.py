"""Issue 20, item 4: `fmquality replay` answers a window of captured turns with a candidate and a control
(the local chatbot double), judges both and diffs them turn by turn; the regressed stratum shows, its
turns are queued for review, the cost is stated first and the budget holds, targets are told it is a
replay and a write-side tool call is refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fmquality.cli.main import main

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CANDIDATE = "python:tests.e2e.chatbot_double:regressed_on_faq"
CONTROL = "python:tests.e2e.chatbot_double:recorded"


def recorded_noting_replay(request: Any) -> dict[str, Any]:
    """The production chatbot, noting in $REPLAY_FLAGS_FILE whether it was told the turn is a replay (a
    file: the target imports this module anew)."""
    import os

    from tests.e2e.chatbot_double import recorded

    with open(os.environ["REPLAY_FLAGS_FILE"], "a", encoding="utf-8") as flags:
        flags.write(f"{json.dumps(request['replay'])}\n")
    return recorded(request)


def cancels_orders(request: Any) -> dict[str, Any]:
    """A candidate that would act on a replayed turn: it calls a write-side tool."""
    from tests.e2e.chatbot_double import recorded

    return {**recorded(request), "tool_calls": [{"toolUse": {"name": "cancel_order", "input": {"order": "x"}}},
                                                {"name": "search_catalog"}]}


@pytest.fixture
def turns(tmp_path) -> Path:
    """The fixture's turns as captured (redacted already) on 2026-11-23, one a minute from 10:00 UTC,
    and one turn outside the window."""
    rows = [json.loads(line) for line in (FIXTURES / "cli_good.jsonl").read_text(encoding="utf-8").splitlines() if line]
    folder = tmp_path / "turns" / "dt=2026-11-23"
    folder.mkdir(parents=True)
    lines = []
    for minute, row in enumerate(rows):
        lines.append({"turn_id": row["test_id"], "timestamp": f"2026-11-23T10:{minute:02d}:00+00:00",
                      "locale": row.get("locale", "en-US"), "intent": row["intent"], "query": row["query"],
                      "response": row["response"], "catalog": row.get("catalog", []),
                      "retrieved_chunks": row.get("retrieved_chunks", []),
                      "page_context": row.get("page_context", {}), "model_id": "prod-model",
                      "prompt_version": "v7", "latency_ms": 420.0})
    late = dict(lines[0], turn_id="after-window", timestamp="2026-11-23T12:00:00+00:00")
    (folder / "part-0000.jsonl").write_text("".join(json.dumps(t) + "\n" for t in lines + [late]), encoding="utf-8")
    return tmp_path / "turns"


def _replay(turns: Path, out: Path, *extra: str, target: str = CANDIDATE, control: str = CONTROL) -> int:
    return main(["replay", "--from", "2026-11-23T10:00:00Z", "--to", "2026-11-23T11:00:00Z", "--turns", str(turns),
                 "--target", target, "--control", control, "--out", str(out), "--workers", "1", *extra])


def test_replay_against_a_regressed_candidate_shows_the_regressed_stratum(turns, tmp_path, capsys):
    out = tmp_path / "replay"
    assert _replay(turns, out) == 0
    rows = [json.loads(line) for line in (out / "replay-diff.jsonl").read_text(encoding="utf-8").splitlines()]
    faq = {json.loads(line)["test_id"] for line in (FIXTURES / "cli_good.jsonl").read_text().splitlines()
           if line and json.loads(line)["intent"] == "faq"}
    regressions = {r["test_id"] for r in rows if r["change"] == "regression"}
    assert regressions and regressions <= faq  # only the stratum the candidate regressed on
    assert all(r["control_passed"] and not r["candidate_passed"] for r in rows if r["test_id"] in regressions)
    summary = json.loads((out / "replay-summary.json").read_text(encoding="utf-8"))
    regressed_strata = {name for name, counts in summary["strata"].items() if counts["regression"]}
    assert regressed_strata and all(name.startswith("faq|") for name in regressed_strata)
    turns_in_window = len((FIXTURES / "cli_good.jsonl").read_text().splitlines())
    assert sum(c["turns"] for c in summary["strata"].values()) == turns_in_window
    assert "after-window" not in (out / "results.jsonl").read_text(encoding="utf-8")
    queued = [json.loads(line) for line in (out / "review.jsonl").read_text(encoding="utf-8").splitlines()]
    assert regressions <= {q["test_id"] for q in queued}
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert report["trigger"] == "replay" and report["control_target"]["spec"] == CONTROL
    printed = capsys.readouterr().out
    assert printed.startswith("replay of ") and "estimated cost $" in printed.splitlines()[0]


def test_targets_are_told_it_is_a_replay(turns, tmp_path, monkeypatch):
    flags = tmp_path / "flags.jsonl"
    monkeypatch.setenv("REPLAY_FLAGS_FILE", str(flags))
    assert _replay(turns, tmp_path / "out", control="python:tests.e2e.test_replay:recorded_noting_replay") == 0
    seen = [json.loads(line) for line in flags.read_text(encoding="utf-8").splitlines()]
    assert seen and all(flag is True for flag in seen)


def test_a_write_side_tool_call_is_refused_as_an_error_record(turns, tmp_path):
    out = tmp_path / "out"
    assert _replay(turns, out, target="python:tests.e2e.test_replay:cancels_orders") == 0
    results = [json.loads(line) for line in (out / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    assert results and all(r["status"] == "error" and not r["passed"] for r in results)
    assert all("write-side tool refused in replay: cancel_order" in r["error"] for r in results)
    assert all("search_catalog" not in r["error"] for r in results)  # a read-side tool is fine


def test_above_the_budget_nothing_starts_without_approval(turns, tmp_path, capsys):
    out = tmp_path / "out"
    assert _replay(turns, out, "--judge", "bedrock", "--budget", "0") == 2
    err = capsys.readouterr().err
    assert "above the budget $0.00" in err and "--approve-cost" in err
    assert not (out / "results.jsonl").exists()


def test_an_empty_window_is_bad_input(turns, tmp_path, capsys):
    code = main(["replay", "--from", "2026-11-24T00:00:00Z", "--to", "2026-11-24T01:00:00Z", "--turns", str(turns),
                 "--target", CANDIDATE, "--control", CONTROL, "--out", str(tmp_path / "o")])
    assert code == 2 and "no captured turn" in capsys.readouterr().err
