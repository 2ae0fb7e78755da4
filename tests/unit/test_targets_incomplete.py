"""Stop reasons: recorded in ``Generation.stop_reason`` (Converse's stopReason; a chatbot's own
``stop_reason`` / ``finish_reason``); an answer the target did not finish is an error record
("generation incomplete: stopped by max_tokens", never scored) unless the rubric's
``generation.fail_incomplete`` is false, in which case it is scored and report.json / report.html
flag it."""

from __future__ import annotations

import io
import json

import boto3
import pytest
from botocore.response import StreamingBody
from botocore.stub import Stubber

from fmquality.run.evaluate import evaluate_case
from fmquality.run.generate import generate
from fmquality.judges.scripted import ScriptedJudge
from fmquality.domain.case import TestCase
from fmquality.report.build import build_report
from fmquality.report.html import render_html
from fmquality.config.rubric import GenerationRules
from fmquality.targets import TargetReply, TargetSpec, make_target
from fmquality.targets.http_endpoint import parse_reply
from fmquality.targets.python_function import PythonTarget

MODEL_ID = "us.anthropic.claude-haiku-4-5-20251001-v1:0"
CUT = "You can return unopened items within 15 days of"


def make_case(test_id="faq-returns-window") -> TestCase:
    return TestCase.model_validate({
        "test_id": test_id, "intent": "faq", "query": "How long do I have to return a manga?",
        "response": "Returns are accepted within 30 days.",
        "retrieved_chunks": ["Returns: unopened items can be returned within 15 days of delivery."],
        "expected_facts": ["unopened items can be returned within 15 days of delivery"], "tags": ["policy"]})


def python_target(reply: dict, rubric=None) -> PythonTarget:
    """A target answering ``reply``; with ``rubric``, carrying its generation rules as make_target's do."""
    target = PythonTarget(TargetSpec(kind="python", ref="tests:cut"), function=lambda _request: reply)
    if rubric is not None:
        target.generation_rules = rubric.generation
    return target


def test_a_chatbots_stop_reason_or_finish_reason_is_read():
    assert TargetReply(response="x", stop_reason="max_tokens").stop_reason == "max_tokens"
    assert parse_reply(json.dumps({"response": "x", "finish_reason": "length"}), "http").stop_reason == "max_tokens"
    assert parse_reply(json.dumps({"response": "x", "finish_reason": "content_filter"}), "http").stop_reason == \
        "content_filtered"
    assert parse_reply(json.dumps({"response": "x", "stop_reason": "end_turn"}), "http").stop_reason == "end_turn"
    assert parse_reply(json.dumps({"response": "x"}), "http").stop_reason is None


def test_the_bedrock_target_records_converse_stop_reason(tmp_path):
    path = tmp_path / "b.yaml"
    path.write_text(f"id: b\nmodel_id: {MODEL_ID}\ninference_config: {{maxTokens: 12}}\nsystem_prompt: hi\n")
    client = boto3.client("bedrock-runtime", region_name="us-east-1")
    with Stubber(client) as stubber:
        stubber.add_response("converse", {
            "output": {"message": {"role": "assistant", "content": [{"text": CUT}]}}, "stopReason": "max_tokens",
            "usage": {"inputTokens": 40, "outputTokens": 12, "totalTokens": 52}, "metrics": {"latencyMs": 9}})
        target = make_target(TargetSpec.parse(f"bedrock:{path}"), lambda _s: client)
        case, generation = generate(make_case(), target, sleep=pytest.fail)
    assert generation.stop_reason == "max_tokens"
    assert generation.error == "generation incomplete: stopped by max_tokens"
    assert generation.attempts == 1  # not retried: the same request stops the same way
    assert generation.response == CUT and case.response == make_case().response  # nothing new to score


def test_the_lambda_target_records_a_payloads_finish_reason():
    client = boto3.client("lambda", region_name="us-east-1")
    raw = json.dumps({"response": CUT, "finish_reason": "length"}).encode()
    with Stubber(client) as stubber:
        stubber.add_response("invoke", {"StatusCode": 200, "ExecutedVersion": "7",
                                        "Payload": StreamingBody(io.BytesIO(raw), len(raw))})
        _, generation = generate(make_case(), make_target(TargetSpec.parse("lambda:chat"), lambda _s: client))
    assert generation.stop_reason == "max_tokens" and generation.error.startswith("generation incomplete")


@pytest.mark.parametrize("reason", ["max_tokens", "guardrail_intervened", "content_filtered"])
def test_every_incomplete_reason_fails_by_default(reason):
    case, generation = generate(make_case(), python_target({"response": CUT, "stop_reason": reason}))
    assert generation.error == f"generation incomplete: stopped by {reason}" and generation.stop_reason == reason


def test_a_finished_answer_keeps_its_stop_reason_and_is_answered():
    case, generation = generate(make_case(), python_target({"response": CUT, "stop_reason": "end_turn"}))
    assert generation.error is None and generation.stop_reason == "end_turn" and case.response == CUT


def test_with_fail_incomplete_false_the_answer_is_kept_and_the_reason_recorded():
    rules = GenerationRules(fail_incomplete=False)
    case, generation = generate(make_case(), python_target({"response": CUT, "stop_reason": "max_tokens"}),
                                rules=rules)
    assert generation.error is None and generation.stop_reason == "max_tokens" and case.response == CUT


def test_the_rules_come_from_the_rubric_the_target_was_built_with(rubric, tmp_path, monkeypatch):
    (tmp_path / "cut_bot.py").write_text(
        f"def answer(request):\n    return {{'response': {CUT!r}, 'stop_reason': 'max_tokens'}}\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    lenient = rubric.model_copy(update={"generation": GenerationRules(fail_incomplete=False)})
    _, strict_generation = generate(make_case(), make_target(TargetSpec.parse("python:cut_bot:answer"), rubric=rubric))
    _, lenient_generation = generate(make_case(), make_target(TargetSpec.parse("python:cut_bot:answer"),
                                                              rubric=lenient))
    assert strict_generation.error == "generation incomplete: stopped by max_tokens"
    assert lenient_generation.error is None and lenient_generation.stop_reason == "max_tokens"


def test_the_direct_engine_records_an_incomplete_answer_as_an_error_never_a_score(rubric):
    result = evaluate_case(make_case(), rubric, ScriptedJudge(),
                           target=python_target({"response": CUT, "stop_reason": "max_tokens"}))
    assert result.status == "error" and result.composite_score is None and result.judge_calls == 0
    assert "generation incomplete: stopped by max_tokens" in result.error
    assert result.response is None and result.generation.stop_reason == "max_tokens"


def test_a_scored_incomplete_answer_is_flagged_in_report_json_and_html(rubric):
    lenient = rubric.model_copy(update={"generation": GenerationRules(fail_incomplete=False)})
    cut = evaluate_case(make_case("faq-cut"), lenient, ScriptedJudge(),
                        target=python_target({"response": CUT, "stop_reason": "max_tokens"}, lenient))
    whole = evaluate_case(make_case("faq-whole"), lenient, ScriptedJudge(),
                          target=python_target({"response": CUT + " delivery.", "stop_reason": "end_turn"}, lenient))
    assert cut.status == "scored" and cut.generation.stop_reason == "max_tokens"
    report = build_report([cut, whole], lenient, run_id="r1", dataset="d.jsonl",
                          target={"spec": "python:tests:cut", "id": "tests:cut"},
                          control_target={"spec": "recorded"}, control_results=[whole])
    flagged = report.target["incomplete_answers"]
    assert flagged == [{"test_id": "faq-cut", "stop_reason": "max_tokens", "passed": cut.passed,
                        "composite_score": cut.composite_score}]
    assert "incomplete_answers" not in report.control_target
    assert json.loads(report.model_dump_json())["target"]["incomplete_answers"][0]["test_id"] == "faq-cut"
    page = render_html(report, [cut, whole])
    assert "Incomplete answers, scored and flagged (candidate: 1)" in page and "faq-cut" in page


def test_nothing_is_flagged_when_every_answer_finished(rubric):
    whole = evaluate_case(make_case(), rubric, ScriptedJudge(),
                          target=python_target({"response": CUT + " delivery.", "stop_reason": "end_turn"}))
    report = build_report([whole], rubric, run_id="r1", dataset="d.jsonl", target={"spec": "python:tests:cut"})
    assert "incomplete_answers" not in report.target
    assert "Incomplete answers" not in render_html(report, [whole])
