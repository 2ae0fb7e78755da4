"""The bedrock: target against the local Converse stand-in (bench/standin.py), through a real boto3
bedrock-runtime client: the stand-in refuses what Converse refuses (a conversation that starts with
the assistant, roles that do not alternate, temperature with topP on Claude 4.5), the target sends
what Converse accepts, and the stop reason comes back into the generation. Nothing leaves 127.0.0.1."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError

from bench.standin import converse_rejection
from fmquality.run.generate import generate
from fmquality.domain.case import TestCase
from fmquality.targets import TargetSpec, make_target

CLAUDE_45 = "us.anthropic.claude-haiku-4-5-20251001-v1:0"
OLDER = "anthropic.claude-3-5-haiku-20241022-v1:0"
ANSWER = "Unopened manga can be returned within 15 days of delivery; refunds take 5-7 business days."


def _text(role, text):
    return {"role": role, "content": [{"text": text}]}


@pytest.mark.parametrize("messages, inference, model, message", [
    ([_text("assistant", "Welcome!"), _text("user", "Hi")], {}, CLAUDE_45, "must start with a user message"),
    ([_text("user", "Hi"), _text("user", "Anyone?")], {}, CLAUDE_45, "must alternate between user and assistant"),
    ([_text("user", "Hi"), _text("assistant", "Hello"), _text("assistant", "Still there?"), _text("user", "Yes")],
     {}, OLDER, "must alternate"),
    ([_text("user", "Hi")], {"temperature": 0.2, "topP": 0.9}, CLAUDE_45,
     "`temperature` and `top_p` cannot both be specified"),
    ([_text("user", "Hi")], {"temperature": 0.2, "topP": 0.9}, "global.anthropic.claude-sonnet-4-5-20250929-v1:0",
     "cannot both be specified"),
])
def test_the_standin_refuses_what_converse_refuses(bedrock_standin, messages, inference, model, message):
    client = bedrock_standin.client()
    params = {"modelId": model, "messages": messages}
    if inference:
        params["inferenceConfig"] = inference
    with pytest.raises(ClientError, match=message) as info:
        client.converse(**params)
    assert info.value.response["Error"]["Code"] == "ValidationException"
    assert info.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400


def test_the_standin_accepts_what_converse_accepts():
    assert converse_rejection(OLDER, {"messages": [_text("user", "Hi")],
                                      "inferenceConfig": {"temperature": 0.2, "topP": 0.9}}) is None
    assert converse_rejection(CLAUDE_45, {"messages": [_text("user", "Hi"), _text("assistant", "Hello"),
                                                       _text("user", "Bye")],
                                          "inferenceConfig": {"temperature": 0.2}}) is None


@pytest.fixture
def bundle(tmp_path):
    path = tmp_path / "assist.yaml"
    path.write_text(f"id: mangaassist-chat\nversion: '7'\nmodel_id: {CLAUDE_45}\n"
                    "inference_config: {maxTokens: 300, temperature: 0.2}\n"
                    "system_prompt: 'You are MangaAssist. Answer in {{ locale }}.'\n", encoding="utf-8")
    return path


def _case(history) -> TestCase:
    return TestCase.model_validate({"test_id": "faq-returns-001", "intent": "faq", "query": "Can I return it?",
                                    "response": "recorded", "conversation_history": history})


# Histories a chatbot's log gives: the bot's greeting first, a shopper who sends two messages in a
# row, the bot answering in two bubbles.
MESSY_HISTORY = [{"role": "assistant", "content": "Welcome to MangaAssist!"},
                 {"role": "user", "content": "Hi"}, {"role": "user", "content": "I bought Uzumaki last week."},
                 {"role": "assistant", "content": "Great pick!"}, {"role": "assistant", "content": "How can I help?"},
                 {"role": "user", "content": "It arrived with a torn cover."}]


def test_a_messy_history_is_sent_as_converse_accepts_it(bedrock_standin, bundle):
    bedrock_standin.answer_fn = lambda _request: ANSWER
    target = make_target(TargetSpec.parse(f"bedrock:{bundle}"), lambda _service: bedrock_standin.client())
    case, generation = generate(_case(MESSY_HISTORY), target, sleep=pytest.fail)
    assert generation.error is None and case.response == ANSWER and generation.stop_reason == "end_turn"
    [sent] = bedrock_standin.requests()
    assert [m["role"] for m in sent["messages"]] == ["user", "assistant", "user"]
    assert [b["text"] for b in sent["messages"][0]["content"]] == ["Hi", "I bought Uzumaki last week."]
    assert [b["text"] for b in sent["messages"][-1]["content"]] == ["It arrived with a torn cover.", "Can I return it?"]


def test_a_history_sent_as_is_would_have_been_refused(bedrock_standin):
    """What the target used to send (every turn as its own message) is what Converse refuses."""
    raw = [_text(m["role"], m["content"]) for m in MESSY_HISTORY] + [_text("user", "Can I return it?")]
    with pytest.raises(ClientError, match="must start with a user message"):
        bedrock_standin.client().converse(modelId=CLAUDE_45, messages=raw)


@pytest.mark.parametrize("scripted, reason", [("max_tokens", "max_tokens"),
                                              ("guardrail_intervened", "guardrail_intervened"),
                                              ("content_filtered", "content_filtered")])
def test_an_unfinished_answer_is_an_incomplete_generation(bedrock_standin, bundle, scripted, reason):
    bedrock_standin.answer_fn = lambda _request: ANSWER
    bedrock_standin.inject([scripted])
    target = make_target(TargetSpec.parse(f"bedrock:{bundle}"), lambda _service: bedrock_standin.client())
    _, generation = generate(_case([]), target, sleep=pytest.fail)
    assert generation.stop_reason == reason and generation.attempts == 1
    assert generation.error == f"generation incomplete: stopped by {reason}"
    assert bedrock_standin.stats()["requests"] == 1  # never asked again
