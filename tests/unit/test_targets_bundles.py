"""Prompt bundles as Converse will take them: temperature with topP refused when the bundle is read;
Prompt Management CHAT templates mapped (system, messages, their variables) or refused by name; the
prompt version as GetPrompt takes it, the working draft's recorded; the conversation normalised.

GetPrompt and Converse go through real boto3 clients held by botocore's Stubber (shapes checked
against the service models)."""

from __future__ import annotations

import boto3
import pytest
from botocore.stub import ANY, Stubber

from fmquality.run.generate import generate
from fmquality.domain.case import TestCase
from fmquality.targets import TargetSpec, make_target
from fmquality.domain.errors import BundleRejected, ConversationRejected, UnsupportedPromptTemplate
from fmquality.targets.bedrock_bundle import bundle_from_prompt, load_bundle
from fmquality.targets.bedrock import normalise_messages

MODEL_ID = "us.anthropic.claude-haiku-4-5-20251001-v1:0"
PROMPT_ARN = "arn:aws:bedrock:us-east-1:123456789012:prompt/PROMPT12AB"


def make_case(history=None, **overrides) -> TestCase:
    data = {"test_id": "faq-returns-001", "intent": "faq", "locale": "en-US", "query": "Can I still return it?",
            "response": "recorded", "conversation_history": history or []}
    data.update(overrides)
    return TestCase.model_validate(data)


def converse_reply(text="ok", stop_reason="end_turn"):
    return {"output": {"message": {"role": "assistant", "content": [{"text": text}]}}, "stopReason": stop_reason,
            "usage": {"inputTokens": 10, "outputTokens": 3, "totalTokens": 13}, "metrics": {"latencyMs": 5}}


def clients(**named):
    return lambda service: named[service]


@pytest.fixture
def runtime():
    client = boto3.client("bedrock-runtime", region_name="us-east-1")
    with Stubber(client) as stubber:
        yield client, stubber
        stubber.assert_no_pending_responses()


@pytest.fixture
def agent():
    client = boto3.client("bedrock-agent", region_name="us-east-1")
    with Stubber(client) as stubber:
        yield client, stubber
        stubber.assert_no_pending_responses()


# -- 4. temperature with topP ---------------------------------------------------------------------------


def test_a_bundle_with_temperature_and_top_p_is_refused_when_read(tmp_path):
    path = tmp_path / "assist.yaml"
    path.write_text(f"id: mangaassist-chat\nmodel_id: {MODEL_ID}\n"
                    "inference_config: {maxTokens: 400, temperature: 0.2, topP: 0.9}\nsystem_prompt: hi\n")
    with pytest.raises(BundleRejected) as info:
        load_bundle(str(path), clients())
    message = str(info.value)
    assert str(path) in message and "mangaassist-chat" in message
    assert "temperature" in message and "topP" in message


def test_one_sampling_parameter_is_fine(tmp_path):
    for line in ("{maxTokens: 400, temperature: 0.2}", "{maxTokens: 400, topP: 0.9}"):
        path = tmp_path / "assist.yaml"
        path.write_text(f"id: b\nmodel_id: {MODEL_ID}\ninference_config: {line}\nsystem_prompt: hi\n")
        assert load_bundle(str(path), clients()).bundle.id == "b"


@pytest.mark.parametrize(("text", "named"), [
    (f"id: b\nmodel_id: {MODEL_ID}\nsystem_prompt: hi\nsystem_prompt: bye\n", "key 'system_prompt' appears twice"),
    (f"id: b\nmodel_id: {MODEL_ID}\ninference_config: {{temperature: .nan}}\nsystem_prompt: hi\n",
     "inference_config.temperature: not a finite number"),
])
def test_a_bundle_is_read_strictly(tmp_path, text, named):
    path = tmp_path / "assist.yaml"
    path.write_text(text)
    with pytest.raises(ValueError, match=named):
        load_bundle(str(path), clients())


def test_a_prompt_management_variant_with_both_is_refused_naming_the_prompt():
    prompt = {"name": "assist", "version": "3", "variants": [
        {"name": "main", "templateType": "TEXT", "modelId": MODEL_ID,
         "templateConfiguration": {"text": {"text": "Be MangaAssist."}},
         "inferenceConfiguration": {"text": {"temperature": 0.5, "topP": 0.9}}}]}
    with pytest.raises(BundleRejected, match=f"bedrock prompt {PROMPT_ARN}:3 \\(id assist\\).*temperature and topP"):
        bundle_from_prompt(prompt, f"{PROMPT_ARN}:3")


# -- 5. the conversation as Converse takes it ---------------------------------------------------------


def _text(role, *texts):
    return {"role": role, "content": [{"text": t} for t in texts]}


def test_normalise_drops_a_leading_assistant_turn_and_blank_turns_and_merges_same_role_turns():
    turns = [_text("assistant", "Welcome to MangaAssist!"), _text("user", "Hi"), _text("user", "  "),
             _text("user", "I bought Uzumaki."), _text("assistant", "Great pick!"),
             _text("assistant", "Anything else?"),
             _text("user", "Can I return it?")]
    assert normalise_messages(turns) == [
        _text("user", "Hi", "I bought Uzumaki."), _text("assistant", "Great pick!", "Anything else?"),
        _text("user", "Can I return it?")]


def test_the_bedrock_target_sends_a_normalised_conversation(tmp_path, runtime):
    client, stubber = runtime
    path = tmp_path / "b.yaml"
    path.write_text(f"id: b\nmodel_id: {MODEL_ID}\nsystem_prompt: 'Answer in {{{{ locale }}}}.'\n")
    history = [{"role": "assistant", "content": "Welcome!"}, {"role": "user", "content": "I bought Uzumaki."},
               {"role": "assistant", "content": "Great pick!"}, {"role": "user", "content": "It arrived damaged."}]
    stubber.add_response("converse", converse_reply(), {
        "modelId": MODEL_ID, "system": [{"text": "Answer in en-US."}],
        "messages": [_text("user", "I bought Uzumaki."), _text("assistant", "Great pick!"),
                     _text("user", "It arrived damaged.", "Can I still return it?")]})
    target = make_target(TargetSpec.parse(f"bedrock:{path}"), clients(**{"bedrock-runtime": client}))
    assert target.answer(make_case(history)).response == "ok"


def test_a_case_with_nothing_left_to_send_is_refused_by_name(tmp_path):
    path = tmp_path / "b.yaml"
    path.write_text(f"id: b\nmodel_id: {MODEL_ID}\nsystem_prompt: hi\n"
                    "messages: [{role: user, content: '{% if query == \"never\" %}{{ query }}{% endif %}'}]\n")
    target = make_target(TargetSpec.parse(f"bedrock:{path}"), clients())
    with pytest.raises(ConversationRejected, match="ConversationRejected") as info:
        target.converse_params(make_case())
    assert not info.value.retryable
    _, generation = generate(make_case(), target, sleep=pytest.fail)
    assert generation.error.startswith("ConversationRejected") and generation.attempts == 1


# -- 7. Prompt Management CHAT templates, versions -------------------------------------------------


def chat_prompt(messages, system=None, variables=None, version="4", **variant):
    chat = {"messages": messages, "inputVariables": [{"name": v} for v in (variables or ["query"])]}
    if system is not None:
        chat["system"] = system
    return {"name": "mangaassist-chat", "id": "PROMPT12AB", "arn": PROMPT_ARN, "version": version,
            "createdAt": "2026-11-01T00:00:00Z", "updatedAt": "2026-11-02T00:00:00Z",
            "variants": [{"name": "main", "templateType": "CHAT", "modelId": MODEL_ID,
                          "templateConfiguration": {"chat": chat},
                          "inferenceConfiguration": {"text": {"temperature": 0.1, "maxTokens": 300}}, **variant}]}


def test_a_chat_template_maps_system_and_messages_with_their_variables(agent, runtime):
    agent_client, agent_stub = agent
    client, stubber = runtime
    prompt = chat_prompt(
        [{"role": "user", "content": [{"text": "Hi, I shop in {{locale}}."}]},
         {"role": "assistant", "content": [{"text": "Welcome! Ask me anything."}]},
         {"role": "user", "content": [{"text": "Question: {{query}}"}, {"cachePoint": {"type": "default"}}]}],
        system=[{"text": "You are MangaAssist."}, {"cachePoint": {"type": "default"}}],
        variables=["locale", "query"])
    agent_stub.add_response("get_prompt", prompt, {"promptIdentifier": PROMPT_ARN, "promptVersion": "4"})
    history = [{"role": "user", "content": "I bought Uzumaki."}, {"role": "assistant", "content": "Great pick!"}]
    stubber.add_response("converse", converse_reply("Yes, within 15 days."), {
        "modelId": MODEL_ID, "system": [{"text": "You are MangaAssist."}],
        # The template's turns, the history, the template's current turn with the query in it.
        "messages": [_text("user", "Hi, I shop in en-US."), _text("assistant", "Welcome! Ask me anything."),
                     _text("user", "I bought Uzumaki."), _text("assistant", "Great pick!"),
                     _text("user", "Question: Can I still return it?")],
        "inferenceConfig": {"temperature": 0.1, "maxTokens": 300}})
    target = make_target(TargetSpec.parse(f"bedrock:{PROMPT_ARN}:4"),
                         clients(**{"bedrock-agent": agent_client, "bedrock-runtime": client}))
    assert target.answer(make_case(history)).response == "Yes, within 15 days."
    assert target.version == "4"


def test_a_chat_template_without_system_and_no_history():
    bundle = bundle_from_prompt(chat_prompt([{"role": "user", "content": [{"text": "Question: {{query}}"}]}]), "p")
    assert bundle.system_prompt == "" and [m.role for m in bundle.messages] == ["user"]


@pytest.mark.parametrize("messages, variables, message", [
    ([{"role": "user", "content": [{"text": "Tier {{customer_tier}}: {{query}}"}]}], ["customer_tier", "query"],
     "customer_tier"),
    ([{"role": "user", "content": [{"text": "{{query}}"}]}], ["query", "order_id"], "order_id"),
    ([{"role": "user", "content": [{"text": "{{query}}"}]}, {"role": "assistant", "content": [{"text": "Sure:"}]}],
     ["query"], "last message must be the user's turn"),
    ([{"role": "user", "content": [{"text": "Tell me about manga."}]}], [], "last message must be the user's turn"),
    ([{"role": "user", "content": [{"image": {"format": "png"}}, {"text": "{{query}}"}]}], ["query"],
     "\\['image'\\] content is not supported"),
])
def test_unsupported_chat_constructs_are_refused_by_name(messages, variables, message):
    with pytest.raises(UnsupportedPromptTemplate, match=message):
        bundle_from_prompt(chat_prompt(messages, variables=variables), "p")


def test_an_agent_prompt_is_refused():
    prompt = chat_prompt([{"role": "user", "content": [{"text": "{{query}}"}]}],
                         genAiResource={"agent": {"agentIdentifier": "arn:aws:bedrock:x"}})
    with pytest.raises(UnsupportedPromptTemplate, match="agent"):
        bundle_from_prompt(prompt, "p")


def test_additional_model_request_fields_are_passed_on(agent, runtime):
    agent_client, agent_stub = agent
    client, stubber = runtime
    prompt = chat_prompt([{"role": "user", "content": [{"text": "{{query}}"}]}],
                         additionalModelRequestFields={"top_k": 50})
    agent_stub.add_response("get_prompt", prompt, {"promptIdentifier": PROMPT_ARN, "promptVersion": "4"})
    stubber.add_response("converse", converse_reply(), {
        "modelId": MODEL_ID, "messages": ANY, "inferenceConfig": ANY, "additionalModelRequestFields": {"top_k": 50}})
    target = make_target(TargetSpec.parse(f"bedrock:{PROMPT_ARN}:4"),
                         clients(**{"bedrock-agent": agent_client, "bedrock-runtime": client}))
    target.answer(make_case())


@pytest.mark.parametrize("version", ["abc", "0", "00", "123456", "draft", "v1"])
def test_a_prompt_version_is_draft_or_a_number_as_get_prompt_takes_it(version):
    with pytest.raises(BundleRejected, match=f"version '{version}' is not DRAFT or a number"):
        load_bundle(f"{PROMPT_ARN}:{version}", clients())


@pytest.mark.parametrize("version", ["DRAFT", "1", "12", "99999"])
def test_valid_versions_are_asked_for(agent, version):
    agent_client, agent_stub = agent
    prompt = chat_prompt([{"role": "user", "content": [{"text": "{{query}}"}]}], version=version)
    agent_stub.add_response("get_prompt", prompt, {"promptIdentifier": PROMPT_ARN, "promptVersion": version})
    loaded = load_bundle(f"{PROMPT_ARN}:{version}", clients(**{"bedrock-agent": agent_client}))
    assert loaded.target_version == (version if version != "DRAFT" else "DRAFT@2026-11-02T00:00:00Z")


def test_a_versionless_arn_is_resolved_and_the_version_recorded_in_the_generation(agent, runtime):
    agent_client, agent_stub = agent
    client, stubber = runtime
    prompt = chat_prompt([{"role": "user", "content": [{"text": "Question: {{query}}"}]}], version="DRAFT")
    agent_stub.add_response("get_prompt", prompt, {"promptIdentifier": PROMPT_ARN})  # no promptVersion
    stubber.add_response("converse", converse_reply("Yes."), {
        "modelId": MODEL_ID, "messages": [_text("user", "Question: Can I still return it?")], "inferenceConfig": ANY})
    target = make_target(TargetSpec.parse(f"bedrock:{PROMPT_ARN}"),
                         clients(**{"bedrock-agent": agent_client, "bedrock-runtime": client}))
    _, generation = generate(make_case(), target, sleep=pytest.fail)
    # The working draft changes in place: its version names when it was last changed.
    assert generation.target_version == "DRAFT@2026-11-02T00:00:00Z" and generation.response == "Yes."


def test_a_versionless_arn_records_the_number_get_prompt_answers(agent):
    agent_client, agent_stub = agent
    prompt = chat_prompt([{"role": "user", "content": [{"text": "{{query}}"}]}], version="7")
    agent_stub.add_response("get_prompt", prompt, {"promptIdentifier": PROMPT_ARN})
    assert load_bundle(PROMPT_ARN, clients(**{"bedrock-agent": agent_client})).target_version == "7"
