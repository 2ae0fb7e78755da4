"""`fmquality run --engine direct --target <url>` end to end against the local chatbot (bench.chatbot):
the run scores what the chatbot answers, a regressed chatbot fails the gate for the right reason,
a failing chatbot leaves error records (never scores), and the chatbot is told nothing it must not see."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

from bench.chatbot import REGRESSED_ANSWER, REGRESSED_ANSWER_JA, serve
from fmquality.cli.common import EXIT_BAD_INPUT, EXIT_GATE_FAILED, EXIT_PASSED, EXIT_RUN_FAILED
from fmquality.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "datasets" / "mangaassist" / "golden.jsonl"
CATALOG = ROOT / "datasets" / "mangaassist" / "catalog.json"
# "replay": whether the turn replays captured traffic (issue 20); false in a gate run.
ALLOWED_REQUEST_FIELDS = {"test_id", "query", "conversation_history", "locale", "page_context", "replay"}
PER_INTENT = 3
# Written into the run's lines where only the gate may read them: a label, and an unknown field (kept
# in metadata). Neither may reach the chatbot.
LABEL_MARKER = "LABEL-MARKER-7f3a"
METADATA_MARKER = "METADATA-MARKER-91c2"


@pytest.fixture(scope="module")
def good_lines() -> list[dict]:
    """A few golden cases per intent that the gate accepts as they were answered."""
    lines = [json.loads(raw) for raw in GOLDEN.read_text(encoding="utf-8").splitlines() if raw.strip()]
    chosen: dict[str, list[dict]] = defaultdict(list)
    for line in lines:
        if line["test_id"].endswith("-good") and len(chosen[line["intent"]]) < PER_INTENT:
            chosen[line["intent"]].append(line)
    return [line for group in chosen.values() for line in group]


@pytest.fixture
def datasets(tmp_path, good_lines):
    """(what the chatbot answers from, what the run reads): the run's lines carry no response at all,
    so whatever gets scored can only have come from the chatbot."""
    answers = tmp_path / "chatbot.jsonl"
    answers.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in good_lines), encoding="utf-8")
    questions = tmp_path / "questions.jsonl"
    questions.write_text("".join(json.dumps({**{k: v for k, v in line.items() if k != "response"},
                                             "label": {"acceptable": True, "notes": LABEL_MARKER},
                                             "internal_note": METADATA_MARKER}, ensure_ascii=False)
                                 + "\n" for line in good_lines), encoding="utf-8")
    return answers, questions


@pytest.fixture
def chatbot():
    servers = []

    def start(dataset, **options):
        server, _thread, url = serve(dataset, **options)
        servers.append(server)
        return server, url

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def run(tmp_path, dataset, *extra) -> tuple[int, Path]:
    out = tmp_path / "out"
    code = main(["run", "--engine", "direct", "--dataset", str(dataset), "--catalog", str(CATALOG),
                 "--out", str(out), "--quiet", *extra])
    return code, out


def read_jsonl(path: Path) -> dict[str, dict]:
    return {r["test_id"]: r for r in map(json.loads, path.read_text(encoding="utf-8").splitlines())}


def test_the_run_scores_exactly_what_the_chatbot_answers(tmp_path, datasets, good_lines, chatbot):
    answers, questions = datasets
    server, url = chatbot(answers)
    code, out = run(tmp_path, questions, "--target", url)
    assert code == EXIT_PASSED
    results = read_jsonl(out / "results.jsonl")
    expected = {line["test_id"]: line["response"] for line in good_lines}
    assert {tid: r["response"] for tid, r in results.items()} == expected
    for result in results.values():
        assert result["status"] == "scored" and result["arm"] == "candidate"
        generation = result["generation"]
        assert generation["response"] == result["response"] and generation["error"] is None
        assert (generation["target_kind"], generation["target_id"], generation["target_version"]) == \
            ("http", url, "bench-chatbot-1")
    report = json.loads((out / "report.json").read_text())
    assert report["target"] == {"kind": "http", "ref": url, "spec": url, "id": url, "version": "bench-chatbot-1"}
    assert report["control_target"] is None and not (out / "control_results.jsonl").exists()
    # The same report blocks as the state machine's Aggregate writes (run.aggregate on both engines).
    summary = report["generation_summary"]["candidate"]
    assert summary["generated"] == len(good_lines) and summary["errors"] == 0 and "control" not in \
        report["generation_summary"]

    # What travelled: the five fields of a shopper's turn, never labels, expected facts or products,
    # reference answers, metadata or the recorded answer. (An expected fact may legitimately appear in
    # an earlier turn of the conversation, so the facts are checked by field, not by text.)
    assert len(server.requests) == len(good_lines)
    lines = {line["test_id"]: line for line in good_lines}
    for request in server.requests:
        assert set(request) == ALLOWED_REQUEST_FIELDS
        line = lines[request["test_id"]]
        assert request["query"] == line["query"] and request["locale"] == line.get("locale", "en-US")
        sent = json.dumps(request, ensure_ascii=False)
        assert LABEL_MARKER not in sent and METADATA_MARKER not in sent and line["response"] not in sent


def test_a_chatbot_regressed_on_one_intent_fails_the_gate_naming_it(tmp_path, datasets, chatbot):
    answers, questions = datasets
    _server, url = chatbot(answers, regress="intent=faq")
    code, out = run(tmp_path, questions, "--target", url)
    assert code == EXIT_GATE_FAILED
    results = read_jsonl(out / "results.jsonl")
    faq = [r for r in results.values() if r["intent"] == "faq"]
    assert faq and all(r["response"] in (REGRESSED_ANSWER, REGRESSED_ANSWER_JA) and not r["passed"] for r in faq)
    assert all(r["passed"] for r in results.values() if r["intent"] != "faq")
    reasons = json.loads((out / "report.json").read_text())["gate"]["reasons"]
    assert any("intent faq" in reason for reason in reasons)
    assert not any(f"intent {intent} " in reason for reason in reasons
                   for intent in {r["intent"] for r in results.values()} - {"faq"})


def test_a_chatbot_answering_500_stops_the_run_as_unavailable(tmp_path, datasets, good_lines, chatbot, capsys):
    """Issue 32.1: HTTP 5xx after the retries on the first cases, none answered: TargetUnavailable, exit 3,
    no results and no verdict (the run stops instead of recording every case)."""
    answers, _questions = datasets
    few = tmp_path / "few.jsonl"
    few.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in good_lines[:3]), encoding="utf-8")
    _server, url = chatbot(answers, status=500)
    code, out = run(tmp_path, few, "--target", json.dumps({"spec": url, "max_attempts": 2}))
    assert code == EXIT_RUN_FAILED
    err = capsys.readouterr().err
    assert "TargetUnavailable" in err and "HTTP 500" in err and "(after 2 attempts)" in err
    assert not (out / "results.jsonl").exists() and not (out / "report.json").exists()


@pytest.mark.parametrize("options, spec_options, reason", [
    ({"latency_ms": 1500}, {"max_attempts": 1, "timeout_s": 0.2}, "timed out"),
])
def test_a_failing_chatbot_leaves_error_records_never_scores(tmp_path, datasets, good_lines, chatbot,
                                                             options, spec_options, reason):
    answers, _questions = datasets
    few = tmp_path / "few.jsonl"
    few.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in good_lines[:3]), encoding="utf-8")
    _server, url = chatbot(answers, **options)
    code, out = run(tmp_path, few, "--target", json.dumps({"spec": url, **spec_options}))
    assert code == EXIT_RUN_FAILED  # nothing was answered: the run could not be done, no gate verdict
    results = read_jsonl(out / "results.jsonl")
    assert len(results) == 3
    for result in results.values():
        assert result["status"] == "error" and result["composite_score"] is None and not result["passed"]
        assert result["dimension_scores"] == {} and result["response"] is None
        assert reason in result["error"] and result["error"].startswith("generation failed: ")
        assert result["generation"]["response"] is None and reason in result["generation"]["error"]
        assert result["generation"]["attempts"] == spec_options["max_attempts"]


def test_control_arm_answers_the_same_cases_into_control_results(tmp_path, datasets, good_lines, chatbot):
    answers, questions = datasets
    _candidate, candidate_url = chatbot(answers, regress="intent=faq")
    _control, control_url = chatbot(answers)
    code, out = run(tmp_path, questions, "--target", candidate_url, "--control", control_url)
    assert code == EXIT_GATE_FAILED  # the candidate's faq answers fail
    candidate = read_jsonl(out / "results.jsonl")
    control = read_jsonl(out / "control_results.jsonl")
    assert set(candidate) == set(control) == {line["test_id"] for line in good_lines}
    assert {r["arm"] for r in candidate.values()} == {"candidate"}
    assert {r["arm"] for r in control.values()} == {"control"}
    assert all(r["passed"] and r["generation"]["target_id"] == control_url for r in control.values())
    report = json.loads((out / "report.json").read_text())
    assert report["target"]["id"] == candidate_url and report["control_target"]["id"] == control_url


def test_control_with_the_same_url(tmp_path, datasets, chatbot):
    answers, questions = datasets
    server, url = chatbot(answers)
    code, out = run(tmp_path, questions, "--target", url, "--control", url)
    assert code == EXIT_PASSED
    candidate, control = read_jsonl(out / "results.jsonl"), read_jsonl(out / "control_results.jsonl")
    assert {t: r["response"] for t, r in candidate.items()} == {t: r["response"] for t, r in control.items()}
    assert len(server.requests) == 2 * len(candidate)


@pytest.mark.parametrize("spec, message", [
    ("gopher://chat", "unknown target"),
    ('{"spec": "http://127.0.0.1:9/chat", "max_attempts": 0}', "max_attempts"),
    ("bedrock:/no/such/bundle.yaml", "bundle"),
])
def test_a_bad_target_spec_is_refused_with_exit_2(tmp_path, datasets, capsys, spec, message):
    _answers, questions = datasets
    code, out = run(tmp_path, questions, "--target", spec)
    assert code == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "--target" in err and message in err
    assert not (out / "results.jsonl").exists()


def test_a_bad_control_spec_is_refused_with_exit_2(tmp_path, datasets, capsys):
    _answers, questions = datasets
    code, _out = run(tmp_path, questions, "--control", "nope:x")
    assert code == EXIT_BAD_INPUT and "--control" in capsys.readouterr().err
