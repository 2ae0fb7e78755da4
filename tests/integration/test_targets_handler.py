"""The Generate handler (moto S3) and the deployment's rules: only the target kinds its environment
allows are built (python: never from an execution input on AWS), and an answer the target did not
finish comes back as the named error GenerationIncomplete, never as an answer to score."""

from __future__ import annotations

import json

import pytest

from fmquality.domain.errors import TargetKindRefused
from moto_env import BUCKET, load_event

TARGETS_KEY = "runs/run-fixture/targets.json"
CUT = "You can return unopened items within 15 days of"


def _put(aws, candidate: dict, rubric=None) -> None:
    from fmquality.config.rubric import load_rubric

    aws.s3.put_object(Bucket=BUCKET, Key=TARGETS_KEY,
                      Body=json.dumps({"candidate": candidate, "control": None}).encode())
    rubric_key = load_event("generate.json")["rubric_key"]
    aws.s3.put_object(Bucket=BUCKET, Key=rubric_key, Body=(rubric or load_rubric()).model_dump_json().encode())


@pytest.fixture
def chatbot_module(tmp_path, monkeypatch):
    """A python: chatbot on the path that says it ran, and answers cut short."""
    (tmp_path / "planted_bot.py").write_text(
        "import os\n"
        "def answer(request):\n"
        "    os.environ['PLANTED_BOT_RAN'] = '1'\n"
        f"    return {{'response': {CUT!r}, 'stop_reason': 'max_tokens'}}\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("PLANTED_BOT_RAN", raising=False)
    return {"kind": "python", "ref": "planted_bot:answer"}


@pytest.fixture
def module(aws):
    """handlers.generate, with no target cached from an earlier test."""
    import importlib

    import handlers

    handlers.target_for.cache_clear()
    yield importlib.import_module("handlers.generate")
    handlers.target_for.cache_clear()


@pytest.fixture
def deployment(monkeypatch):
    """As deployed: no ALLOWED_TARGET_KINDS (the default), not the local engine."""
    monkeypatch.delenv("ALLOWED_TARGET_KINDS", raising=False)
    monkeypatch.setenv("ENGINE_NAME", "stepfunctions")


def test_a_python_target_from_an_execution_input_is_refused_on_aws(aws, lambda_context, chatbot_module,
                                                                    deployment, module):
    import os

    _put(aws, chatbot_module)
    with pytest.raises(TargetKindRefused, match="target: python targets are not allowed in this deployment"):
        module.handler(load_event("generate.json"), lambda_context)
    assert "PLANTED_BOT_RAN" not in os.environ


def test_the_allowed_kinds_come_from_the_environment(aws, lambda_context, deployment, monkeypatch, module):
    monkeypatch.setenv("ALLOWED_TARGET_KINDS", "recorded,bedrock,https")
    _put(aws, {"kind": "lambda", "ref": "mangaassist-chat:live"})
    with pytest.raises(TargetKindRefused, match="lambda targets are not allowed.*allowed: bedrock, https, "
                                                        "recorded"):
        module.handler(load_event("generate.json"), lambda_context)


def test_an_unfinished_answer_is_the_named_error_generation_incomplete(aws, lambda_context, chatbot_module,
                                                                       monkeypatch, module):
    monkeypatch.setenv("ALLOWED_TARGET_KINDS", "recorded,python")  # a local deployment
    _put(aws, chatbot_module)
    out = module.handler(load_event("generate.json"), lambda_context)
    assert out["item"]["response"] is None  # nothing to score
    assert out["generation"]["stop_reason"] == "max_tokens" and out["generation"]["attempts"] == 1
    assert out["generation"]["error"] == "generation incomplete: stopped by max_tokens"
    assert out["error"] == {"Error": "GenerationIncomplete",
                            "Cause": "generation incomplete: stopped by max_tokens (python target "
                                     "python:planted_bot:answer)"}


def test_with_fail_incomplete_false_the_answer_goes_on_to_be_scored_with_its_stop_reason(
        aws, lambda_context, chatbot_module, monkeypatch, module):
    from fmquality.config.rubric import GenerationRules, load_rubric
    monkeypatch.setenv("ALLOWED_TARGET_KINDS", "recorded,python")
    lenient = load_rubric().model_copy(update={"generation": GenerationRules(fail_incomplete=False)})
    _put(aws, chatbot_module, lenient)
    out = module.handler(load_event("generate.json"), lambda_context)
    assert "error" not in out and out["item"]["response"] == CUT
    assert out["generation"]["stop_reason"] == "max_tokens" and out["generation"]["error"] is None
