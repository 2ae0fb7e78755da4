"""The Generate step through the real ASL on the local engine: targets answer each (case, arm) item,
a regressed target fails the gate naming its intent, a target that never answers leaves error records
only, and a control arm lands in control_results.jsonl.

Each scenario runs twice: with a minimal double of ``fmquality.run.generate`` and of the target
builder, and with the real ones.
"""

from __future__ import annotations

import importlib
import json
import time
from pathlib import Path
from typing import Any

import pytest

from fmquality.engines.local import TABLE_NAME, run_local_execution
from fmquality.domain.results import Generation
from fmquality.domain.case import TestCase

REPO = Path(__file__).resolve().parents[2]
GOOD = REPO / "tests" / "fixtures" / "cli_good.jsonl"
FAST = {"retry_wait_cap_s": 0.01}
CHATBOT = "python:tests.e2e.chatbot_double"


class _DoubleTarget:
    """Only what the handler and the double generate use: spec, id, version and the function."""

    def __init__(self, spec: Any) -> None:
        module, _, name = spec.ref.partition(":")
        self.spec = spec
        self.id = spec.ref
        self.version = None
        self.fn = getattr(importlib.import_module(module), name)


def _double_make_target(spec: Any, client: Any = None, *, rubric: Any = None) -> _DoubleTarget:
    assert spec.kind == "python", f"the double knows python: targets only, got {spec.kind}"
    return _DoubleTarget(spec)


def _double_generate(case: TestCase, target: _DoubleTarget) -> tuple[TestCase, Generation]:
    """The contract of fmquality.run.generate.generate, minimally: never raises for a target failure."""
    from fmquality.targets.base import TargetReply, request_for

    start = time.perf_counter()
    try:
        reply = TargetReply.model_validate(target.fn(request_for(case)))
    except Exception as exc:  # noqa: BLE001 - the double reports every failure as a failed generation
        return case.model_copy(update={"response": None}), Generation(
            target_id=target.id, target_kind=target.spec.kind, error=f"{type(exc).__name__}: {exc}", attempts=1,
            unavailable=isinstance(exc, ConnectionError))  # a chatbot that cannot be reached is down
    generation = Generation(target_id=target.id, target_kind=target.spec.kind, response=reply.response,
                            latency_ms=(time.perf_counter() - start) * 1000, usage=reply.usage)
    return case.model_copy(update={"response": reply.response}), generation


@pytest.fixture(params=["double", "real"])
def generation(request, monkeypatch):
    """handlers.generate wired to the double or to the real generation code."""
    import fmquality.run.targets as run_targets
    import handlers

    handlers.target_for.cache_clear()
    if request.param == "double":
        monkeypatch.setattr(run_targets, "make_target", _double_make_target)
        monkeypatch.setattr(importlib.import_module("handlers.generate"), "generate", _double_generate)
    yield request.param
    handlers.target_for.cache_clear()  # its targets must not outlive the test


def _rows(text: str | None) -> dict[str, dict[str, Any]]:
    rows = [json.loads(line) for line in (text or "").splitlines() if line.strip()]
    by_id = {r["test_id"]: r for r in rows}
    assert len(by_id) == len(rows), "a test case has more than one result"
    return by_id


def test_a_target_regressed_on_one_intent_fails_the_gate_naming_that_intent(generation):
    outcome = run_local_execution(dataset_path=GOOD, target=f"{CHATBOT}:regressed_on_faq", run_id="regressed", **FAST)

    assert outcome.status == "FAILED" and outcome.error == "QualityGateFailed"
    assert outcome.failed_state == "GateFailed"
    assert "intent faq pass rate 0.00" in outcome.cause
    assert "product_question" not in outcome.cause
    results = _rows(outcome.results_jsonl)
    faq, pq = results["faq-returns-good"], results["pq-uzumaki-good"]
    # What was scored is what the target said, and the result says who said it.
    assert faq["response"].startswith("You can return unopened items within 30 days")
    assert faq["generation"]["target_kind"] == "python" and faq["generation"]["error"] is None
    assert faq["status"] == "scored" and faq["passed"] is False
    assert pq["status"] == "scored" and pq["passed"] is True and pq["arm"] == "candidate"
    assert outcome.report["target"]["spec"] == f"{CHATBOT}:regressed_on_faq"
    assert outcome.report["generation_summary"]["candidate"]["generated"] == 2
    assert outcome.control_results_jsonl is None
    assert outcome.lambda_calls["generate"] == 2


def test_a_target_that_never_answers_ends_the_run_as_not_done(generation):
    """Issue 32.1: a chatbot that is down is no verdict. Every item is recorded (by the error's name) and
    the execution fails with TargetUnavailable, not QualityGateFailed; no report is written."""
    outcome = run_local_execution(dataset_path=GOOD, target=f"{CHATBOT}:down", run_id="down", **FAST)

    # None was scored: the scorers never ran; no verdict, a named run error.
    assert not {"relevance", "factual_accuracy", "consistency", "fluency"} & set(outcome.lambda_calls)
    assert outcome.lambda_calls["generate"] == 2 and outcome.lambda_calls["composite"] == 2  # both recorded
    assert outcome.status == "FAILED" and outcome.error == "TargetUnavailable" and outcome.report is None
    assert outcome.failed_state == "RunNotDone"
    assert "ConnectionError" in outcome.cause


def test_a_control_arm_is_generated_scored_and_kept_apart(generation):
    stored: dict[str, Any] = {}

    def inspect(client):
        for prefix in ("RESULT#", "CONTROL#"):
            stored[prefix] = client("dynamodb").query(
                TableName=TABLE_NAME, KeyConditionExpression="pk = :pk AND begins_with(sk, :p)",
                ExpressionAttributeValues={":pk": {"S": "RUN#paired"}, ":p": {"S": prefix}}, Select="COUNT",
            )["Count"]

    outcome = run_local_execution(dataset_path=GOOD, target=f"{CHATBOT}:regressed_on_faq",
                                  control=f"{CHATBOT}:recorded", run_id="paired", inspect_aws=inspect, **FAST)

    assert stored == {"RESULT#": 2, "CONTROL#": 2}
    candidate, control = _rows(outcome.results_jsonl), _rows(outcome.control_results_jsonl)
    assert {r["arm"] for r in candidate.values()} == {"candidate"}
    assert {r["arm"] for r in control.values()} == {"control"}
    assert control["faq-returns-good"]["passed"] is True and candidate["faq-returns-good"]["passed"] is False
    assert outcome.report["control_target"]["spec"] == f"{CHATBOT}:recorded"
    summary = outcome.report["generation_summary"]
    assert summary["candidate"]["generated"] == 2 and summary["control"]["generated"] == 2
    assert summary["control"]["input_tokens"] == 200
    assert outcome.lambda_calls["generate"] == 4 and outcome.report["total_cases"] == 2
    assert outcome.error == "QualityGateFailed" and "intent faq" in outcome.cause


def test_the_recorded_target_with_no_control_skips_generate():
    outcome = run_local_execution(dataset_path=GOOD, target="recorded", run_id="recorded", **FAST)
    assert outcome.status == "SUCCEEDED"
    assert "generate" not in outcome.lambda_calls
    assert all(r["generation"] is None for r in _rows(outcome.results_jsonl).values())
    assert outcome.report["target"] is None and outcome.report["generation_summary"] is None


def test_a_bad_target_spec_fails_the_run_in_prepare_naming_the_field():
    outcome = run_local_execution(dataset_path=GOOD, control="carrier-pigeon:coo", **FAST)
    assert outcome.status == "FAILED" and outcome.failed_state == "Prepare"
    assert "control" in outcome.cause and "unknown target 'carrier-pigeon:coo'" in outcome.cause
