"""Issue 31 item 9 and issue 32 item 1: a run whose judge or target cannot work is a run error, on both
local engines: exit 3 with the error's name (JudgeMisconfigured, TargetUnavailable), found on the first
items, no report and no verdict; never 159 unscored items and exit 1. Bedrock's error shapes come from
botocore's Stubber on a real bedrock-runtime client; no request leaves the machine."""

from __future__ import annotations

import http.server
import json
import socket
import threading
from pathlib import Path

import boto3
import pytest
from botocore.stub import Stubber

from fmquality.cli.common import EXIT_RUN_FAILED
from fmquality.cli.main import main

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "datasets" / "mangaassist" / "golden.jsonl"
GOOD = REPO / "tests" / "fixtures" / "cli_good.jsonl"
MODEL = "us.anthropic.claude-haiku-4-5-20251001-v1:0"
ENGINES = ["direct", "stepfunctions-local"]
QUEUED = 400
MISCONFIGURED = {
    "ValidationException": (400, "The provided model identifier is invalid."),
    "AccessDeniedException": (403, "You don't have access to the model with the specified model ID."),
    "ResourceNotFoundException": (404, "Model use case details have not been submitted for this account."),
    "UnrecognizedClientException": (403, "The security token included in the request is invalid."),
}


class StubbedBedrock:
    """Every Converse call answered by the same modelled error, counted."""

    def __init__(self, code: str) -> None:
        status, message = MISCONFIGURED[code]
        self.client = boto3.client("bedrock-runtime", region_name="us-east-1")
        self.stubber = Stubber(self.client)
        for _ in range(QUEUED):
            self.stubber.add_client_error("converse", service_error_code=code, service_message=message,
                                          http_status_code=status)
        self.stubber.activate()

    @property
    def calls(self) -> int:
        return QUEUED - len(self.stubber._queue)


def _run(tmp_path: Path, engine: str, dataset: Path = GOLDEN, *extra: str) -> int:
    args = ["run", "--dataset", str(dataset), "--out", str(tmp_path / "out"), "--quiet", "--engine", engine,
            "--no-cache", *extra]
    if dataset == GOLDEN:
        args += ["--catalog", str(REPO / "datasets" / "mangaassist" / "catalog.json")]
    return main(args)


def _bedrock(tmp_path: Path, engine: str, dataset: Path = GOLDEN) -> int:
    return _run(tmp_path, engine, dataset, "--judge", "bedrock", "--judge-model-id", MODEL)


def _assert_not_done(tmp_path: Path, code: int, err: str, name: str) -> None:
    assert code == EXIT_RUN_FAILED, err
    assert name in err
    out = tmp_path / "out"
    # No verdict: no report (and so no gate) is written for a run that could not be done.
    assert not (out / "report.json").exists() and not (out / "report.html").exists()


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("code", sorted(MISCONFIGURED))
def test_a_judge_bedrock_refuses_ends_the_run_with_exit_3_on_its_first_items(tmp_path, monkeypatch, capsys,
                                                                             engine, code):
    from fmquality.judges.bedrock.judge import BedrockJudge

    bedrock = StubbedBedrock(code)
    monkeypatch.setattr(BedrockJudge, "_client", lambda self: bedrock.client)
    # The state machine on the whole golden set for one code (the others on two cases: the same path).
    dataset = GOLDEN if engine == "direct" or code == "AccessDeniedException" else GOOD
    exit_code = _bedrock(tmp_path, engine, dataset)
    _assert_not_done(tmp_path, exit_code, capsys.readouterr().err, "JudgeMisconfigured")
    # Found on the first items: one refused call each for the few in flight, not one per dimension of
    # each of the 159 cases (about 600 calls), and never retried.
    print(f"{engine} {code}: {bedrock.calls} judge calls before the run stopped")
    assert 1 <= bedrock.calls <= (12 if engine == "direct" else 60)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("missing", ["credentials", "region"])
def test_no_credentials_or_no_region_ends_the_run_with_exit_3(tmp_path, monkeypatch, capsys, engine, missing):
    names = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN")
    if missing == "region":
        names = ("AWS_REGION", "AWS_DEFAULT_REGION")
    for name in names:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)  # credentials an earlier test's session resolved
    exit_code = _bedrock(tmp_path, engine, GOOD)
    err = capsys.readouterr().err
    _assert_not_done(tmp_path, exit_code, err, "JudgeMisconfigured")
    assert ("NoCredentialsError" if missing == "credentials" else "NoRegionError") in err


class _Failing(http.server.BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802 - http.server's name
        self.send_response(500)
        self.end_headers()
        self.wfile.write(b"internal error")

    def log_message(self, *args):
        pass


@pytest.fixture
def failing_endpoint():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Failing)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/chat"
    server.shutdown()


def _closed_port() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/chat"  # nothing listens: connection refused


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("kind", ["refused", "http_500"])
def test_a_chatbot_that_is_down_or_answers_5xx_ends_the_run_with_exit_3(tmp_path, capsys, failing_endpoint,
                                                                        engine, kind):
    url = _closed_port() if kind == "refused" else failing_endpoint
    target = json.dumps({"spec": url, "max_attempts": 2, "timeout_s": 5})
    exit_code = _run(tmp_path, engine, GOOD, "--target", target)
    err = capsys.readouterr().err
    _assert_not_done(tmp_path, exit_code, err, "TargetUnavailable")
    assert ("connection failed" if kind == "refused" else "HTTP 500") in err


def test_the_direct_engine_stops_a_down_target_after_its_first_cases(tmp_path, capsys):
    """159 cases against a chatbot that refuses every connection: TARGET_DOWN_AFTER cases, not 159."""
    from fmquality.run.evaluate import TARGET_DOWN_AFTER

    target = json.dumps({"spec": _closed_port(), "max_attempts": 1, "max_concurrency": 1})
    exit_code = _run(tmp_path, "direct", GOLDEN, "--target", target)
    err = capsys.readouterr().err
    _assert_not_done(tmp_path, exit_code, err, "TargetUnavailable")
    assert f"none of the first {TARGET_DOWN_AFTER} case(s)" in err


def test_aggregate_names_the_run_error_only_when_the_run_could_not_be_done(rubric):
    """The state machine's rule (run.aggregate.run_not_done): a misconfigured judge on any item; a target
    unavailable on items of an arm it answered none of; a failed Map. A target that failed a few items
    but answered others leaves ordinary error records (the gate then fails closed on them)."""
    from fmquality.domain.case import TestCase
    from fmquality.domain.results import Generation
    from fmquality.run.aggregate import run_not_done
    from fmquality.scoring.composite import error_result

    def case(i):
        return TestCase(test_id=f"c{i}", intent="faq", query="q?", response="a.")

    def failed(i, error):
        return error_result(case(i), rubric, error).model_copy(
            update={"generation": Generation(target_id="t", target_kind="http", error=error.split(": ", 1)[1])})

    def answered(i):
        return error_result(case(i), rubric, "ScoreError: x").model_copy(
            update={"generation": Generation(target_id="t", target_kind="http", response="a.")})

    down = [failed(i, "TargetUnavailable: HTTP 503") for i in range(3)]
    assert run_not_done({"candidate": down}, None)["error"] == "TargetUnavailable"
    assert run_not_done({"candidate": [*down, answered(9)]}, None) is None
    judge = error_result(case(5), rubric, "JudgeMisconfigured: AccessDeniedException: no grant")
    assert run_not_done({"candidate": [answered(9), judge]}, None) == {
        "error": "JudgeMisconfigured", "cause": "c5: JudgeMisconfigured: AccessDeniedException: no grant"}
    # The Map failed (more children failed than tolerated): the records' run error, else the Map's own.
    assert run_not_done({"candidate": [*down, answered(9)]}, {"Error": "States.ExceedToleratedFailureThreshold"}
                        )["error"] == "TargetUnavailable"
    assert run_not_done({"candidate": [answered(9)]}, {"Error": "States.ExceedToleratedFailureThreshold",
                                                       "Cause": "too many"}) == {
        "error": "States.ExceedToleratedFailureThreshold", "cause": "too many"}
