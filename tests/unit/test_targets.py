"""Targets one by one: what they send, what they accept back, which failures are worth retrying.

AWS calls go through real boto3 clients held by botocore's Stubber (request and reply shapes are
checked against the service models; nothing leaves the process); HTTP goes to a scripted local
server on 127.0.0.1."""

from __future__ import annotations

import io
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import boto3
import pytest
from botocore.response import StreamingBody
from botocore.stub import ANY, Stubber

from fmquality.domain.case import TestCase
from fmquality.targets import MAX_SSM_HOPS, TargetError, TargetSpec, make_target, request_for, resolve_spec
from fmquality.targets.bedrock import BedrockTarget
from fmquality.targets.bedrock_bundle import LoadedBundle, PromptBundle, bundle_from_prompt, load_bundle
from fmquality.targets.http_endpoint import HttpTarget, retry_after_seconds
from fmquality.targets.lambda_function import LambdaTarget
from fmquality.targets.python_function import PythonTarget
from fmquality.targets.recorded import RecordedTarget

# "replay": whether the turn is a replay of captured traffic (issue 20), false for a gate run.
ALLOWED_REQUEST_FIELDS = {"test_id", "query", "conversation_history", "locale", "page_context", "replay"}
MODEL_ID = "anthropic.claude-haiku-4-5-20251001-v1:0"
SECRET_FACT = "unopened items can be returned within 15 days of delivery"
RECORDED_ANSWER = "You can return unopened items within 15 days of delivery."
REFERENCE = "Unopened manga can be returned within 15 days."


def make_case(**overrides) -> TestCase:
    """A case carrying everything the chatbot must NOT see (labels, expected facts and products, a
    reference answer, the recorded answer) beside what it may see."""
    data = {
        "test_id": "faq-returns-001",
        "intent": "faq",
        "locale": "en-US",
        "query": "Can I still return it?",
        "response": RECORDED_ANSWER,
        "conversation_history": [{"role": "user", "content": "I bought Uzumaki last week."},
                                 {"role": "assistant", "content": "Great pick! How can I help?"}],
        "page_context": {"current_asin": "B0UZUMAKI1", "store_section": "horror"},
        "expected_products": ["B0UZUMAKI1"],
        "expected_facts": [SECRET_FACT],
        "forbidden_content": ["30 days"],
        "reference_response": REFERENCE,
        "retrieved_chunks": ["Returns: unopened items within 15 days of delivery."],
        "catalog": [{"asin": "B0UZUMAKI1", "title": "Uzumaki", "price": 22.99, "availability": "in_stock",
                     "author": "Junji Ito"}],
        "tags": ["policy"],
        "label": {"acceptable": True, "notes": "gold"},
    }
    data.update(overrides)
    return TestCase.model_validate(data)


def assert_only_allowed(request: dict) -> None:
    assert set(request) == ALLOWED_REQUEST_FIELDS
    text = json.dumps(request)
    for secret in (SECRET_FACT, RECORDED_ANSWER, REFERENCE, "30 days", "gold", "policy", "acceptable"):
        assert secret not in text


def client_factory(**clients):
    return lambda service: clients[service]


# -- specs --------------------------------------------------------------------------------------------


def test_request_for_carries_only_what_a_shopper_turn_carries():
    request = request_for(make_case()).model_dump(mode="json")
    assert_only_allowed(request)
    assert request["query"] == "Can I still return it?" and request["page_context"]["current_asin"] == "B0UZUMAKI1"
    assert [m["role"] for m in request["conversation_history"]] == ["user", "assistant"]


@pytest.mark.parametrize("bad", ["nope:x", "bedrock:", "python:onlymodule", "ftp://x"])
def test_bad_specs_are_refused_with_a_reason(bad):
    with pytest.raises(ValueError):
        TargetSpec.parse(bad)


# -- recorded -----------------------------------------------------------------------------------------


def test_recorded_answers_the_lines_own_response_and_refuses_a_line_without_one():
    target = make_target(TargetSpec.parse("recorded"))
    assert isinstance(target, RecordedTarget) and target.id == "recorded" and target.version is None
    assert target.answer(make_case()).response == RECORDED_ANSWER
    with pytest.raises(TargetError, match="no recorded response") as info:
        target.answer(make_case(response=None))
    assert not info.value.retryable


# -- python -------------------------------------------------------------------------------------------


def test_python_target_from_a_module_on_the_path(tmp_path, monkeypatch):
    (tmp_path / "fake_chatbot_mod.py").write_text(
        "__version__ = '2.1'\nseen = []\n"
        "def answer(request):\n    seen.append(request)\n    return {'response': 'hi ' + request['query'], "
        "'citations': ['doc-1']}\n"
        "def plain(request):\n    return 'plain answer'\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    target = make_target(TargetSpec.parse("python:fake_chatbot_mod:answer"))
    reply = target.answer(make_case())
    assert reply.response == "hi Can I still return it?" and reply.citations == ["doc-1"]
    assert target.version == "2.1" and target.id == "python:fake_chatbot_mod:answer"
    import fake_chatbot_mod

    assert_only_allowed(fake_chatbot_mod.seen[0])
    assert make_target(TargetSpec.parse("python:fake_chatbot_mod:plain")).answer(make_case()).response == "plain answer"
    with pytest.raises(ValueError, match="no function"):
        make_target(TargetSpec.parse("python:fake_chatbot_mod:missing"))
    with pytest.raises(ImportError, match="cannot import"):  # the run cannot be done: exit 3, not 2
        make_target(TargetSpec.parse("python:no_such_module_xyz:f"))


@pytest.mark.parametrize("returned, message", [
    ({"answer": "x"}, "response"),
    ({"response": 42}, "response"),
    (["a list"], "list"),
])
def test_python_target_reply_must_be_a_str_or_an_object_with_a_string_response(returned, message):
    target = PythonTarget(TargetSpec(kind="python", ref="m:f"), function=lambda _request: returned)
    with pytest.raises(TargetError, match=message) as info:
        target.answer(make_case())
    assert not info.value.retryable


def test_python_target_exceptions_timeouts_retryable_bugs_final():
    def slow(_request):
        raise TimeoutError("model took too long")

    def buggy(_request):
        raise KeyError("locale")

    with pytest.raises(TargetError) as slow_info:
        PythonTarget(TargetSpec(kind="python", ref="m:f"), function=slow).answer(make_case())
    assert slow_info.value.retryable
    with pytest.raises(TargetError, match="KeyError") as bug_info:
        PythonTarget(TargetSpec(kind="python", ref="m:f"), function=buggy).answer(make_case())
    assert not bug_info.value.retryable


# -- http ---------------------------------------------------------------------------------------------


class ScriptedChatbot(ThreadingHTTPServer):
    """Answers each POST with the next (status, body, headers) of its script (the last one repeats)."""

    daemon_threads = True

    def __init__(self, script):
        super().__init__(("127.0.0.1", 0), _ScriptedHandler)
        self.script = list(script)
        self.received: list[tuple[dict, dict]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/chat"


class _ScriptedHandler(BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.received.append((body, dict(self.headers)))
        status, reply, headers = self.server.script.pop(0) if len(self.server.script) > 1 else self.server.script[0]
        if status == "hang":
            self.server.hang.wait(5)
            status = 200
        data = reply if isinstance(reply, bytes) else json.dumps(reply).encode()
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def scripted():
    servers = []

    def start(*script):
        server = ScriptedChatbot(script)
        server.hang = threading.Event()
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.hang.set()
        server.shutdown()
        server.server_close()


def test_http_target_posts_the_request_and_reads_the_reply_and_version(scripted, monkeypatch):
    server = scripted((200, {"response": "Yes, within 15 days.", "latency_ms": 12.5, "usage": {"output_tokens": 7},
                             "extra": "ignored"}, {"X-Chatbot-Version": "v42"}))
    monkeypatch.setenv("CHATBOT_HEADERS", json.dumps({"allowed_hosts": ["127.0.0.1"],
                                                      "headers": {"Authorization": "Bearer t0ken"}}))
    target = make_target(TargetSpec.parse({"spec": server.url, "headers_env": "CHATBOT_HEADERS"}))
    reply = target.answer(make_case())
    assert reply.response == "Yes, within 15 days." and reply.latency_ms == 12.5 and reply.usage.output_tokens == 7
    assert reply.served_version == "v42" and target.version == "v42" and target.id == server.url
    body, headers = server.received[0]
    assert_only_allowed(body)
    assert headers["Authorization"] == "Bearer t0ken" and headers["Content-Type"] == "application/json"
    assert "t0ken" not in json.dumps(target.spec.describe())


def test_http_target_headers_env_must_be_a_json_object(monkeypatch):
    monkeypatch.setenv("BAD_HEADERS", "[1, 2]")
    with pytest.raises(ValueError, match="JSON object"):
        make_target(TargetSpec.parse({"spec": "http://127.0.0.1:9/chat", "headers_env": "BAD_HEADERS"}))
    with pytest.raises(ValueError, match="not set"):
        make_target(TargetSpec.parse({"spec": "http://127.0.0.1:9/chat", "headers_env": "NO_SUCH_VAR_FMQ"}))


@pytest.mark.parametrize("status, retryable", [(429, True), (500, True), (503, True), (400, False), (404, False)])
def test_http_status_decides_retry(scripted, status, retryable):
    server = scripted((status, {"error": "nope"}, {"Retry-After": "7"}))
    with pytest.raises(TargetError, match=f"HTTP {status}") as info:
        HttpTarget(TargetSpec.parse(server.url)).answer(make_case())
    assert info.value.retryable is retryable
    assert info.value.retry_after_s == (7.0 if retryable else None)


@pytest.mark.parametrize("body, message", [
    (b"<html>oops</html>", "not JSON"),
    ([{"response": "x"}], "JSON list"),
    ({"answer": "x"}, "response: Field required"),
    ({"response": None}, "response"),
    ({"response": ["a"]}, "response"),
])
def test_http_reply_must_be_an_object_with_a_string_response(scripted, body, message):
    server = scripted((200, body, None))
    with pytest.raises(TargetError, match=message) as info:
        HttpTarget(TargetSpec.parse(server.url)).answer(make_case())
    assert not info.value.retryable


def test_http_timeout_and_refused_connection_are_retryable(scripted):
    server = scripted(("hang", {"response": "late"}, None))
    with pytest.raises(TargetError, match="timed out") as info:
        HttpTarget(TargetSpec.parse({"spec": server.url, "timeout_s": 0.2})).answer(make_case())
    assert info.value.retryable
    closed = ScriptedChatbot([])
    port = closed.server_address[1]
    closed.server_close()
    with pytest.raises(TargetError, match="connection failed") as refused:
        HttpTarget(TargetSpec.parse(f"http://127.0.0.1:{port}/chat")).answer(make_case())
    assert refused.value.retryable


def test_retry_after_is_read_as_seconds_or_a_date_and_capped():
    from datetime import datetime, timezone

    now = datetime(2026, 11, 23, 12, 0, 0, tzinfo=timezone.utc)
    assert retry_after_seconds("3") == 3.0
    assert retry_after_seconds("600") == 30.0
    assert retry_after_seconds("Mon, 23 Nov 2026 12:00:10 GMT", now=now) == 10.0
    assert retry_after_seconds("soon") is None and retry_after_seconds(None) is None


# -- lambda -------------------------------------------------------------------------------------------


def _payload(data) -> StreamingBody:
    raw = json.dumps(data).encode() if not isinstance(data, bytes) else data
    return StreamingBody(io.BytesIO(raw), len(raw))


@pytest.fixture
def lambda_stub():
    client = boto3.client("lambda", region_name="us-east-1")
    with Stubber(client) as stubber:
        yield client, stubber
        stubber.assert_no_pending_responses()


def test_lambda_target_invokes_request_response_with_only_the_request(lambda_stub):
    client, stubber = lambda_stub
    case = make_case()
    expected_payload = request_for(case).model_dump_json().encode()
    stubber.add_response("invoke", {"StatusCode": 200, "ExecutedVersion": "7",
                                    "Payload": _payload({"response": "Yes, 15 days.", "tool_calls": [{"n": 1}]})},
                         {"FunctionName": "mangaassist-chat:live", "InvocationType": "RequestResponse",
                          "Payload": expected_payload})
    target = make_target(TargetSpec.parse("lambda:mangaassist-chat:live"), client_factory(**{"lambda": client}))
    assert isinstance(target, LambdaTarget)
    reply = target.answer(case)
    assert reply.response == "Yes, 15 days." and reply.tool_calls == [{"n": 1}]
    assert reply.served_version == "7" and target.version == "7" and target.id == "mangaassist-chat:live"
    assert_only_allowed(json.loads(expected_payload))


def test_lambda_function_error_and_bad_payload_are_final(lambda_stub):
    client, stubber = lambda_stub
    stubber.add_response("invoke", {"StatusCode": 200, "FunctionError": "Unhandled", "ExecutedVersion": "7",
                                    "Payload": _payload({"errorType": "KeyError", "errorMessage": "'locale'"})})
    stubber.add_response("invoke", {"StatusCode": 200, "ExecutedVersion": "7", "Payload": _payload({"text": "x"})})
    target = LambdaTarget(TargetSpec.parse("lambda:chat"), client_factory(**{"lambda": client}))
    with pytest.raises(TargetError, match="function error \\(Unhandled\\): KeyError") as failed:
        target.answer(make_case())
    with pytest.raises(TargetError, match="response") as malformed:
        target.answer(make_case())
    assert not failed.value.retryable and not malformed.value.retryable


@pytest.mark.parametrize("code, status, retryable", [
    ("TooManyRequestsException", 429, True),
    ("ServiceException", 500, True),
    ("ResourceNotFoundException", 404, False),
    ("AccessDeniedException", 403, False),
])
def test_lambda_service_errors_retry_only_throttling_and_5xx(lambda_stub, code, status, retryable):
    client, stubber = lambda_stub
    stubber.add_client_error("invoke", service_error_code=code, http_status_code=status, service_message="m")
    with pytest.raises(TargetError, match=code) as info:
        LambdaTarget(TargetSpec.parse("lambda:chat"), client_factory(**{"lambda": client})).answer(make_case())
    assert info.value.retryable is retryable


# -- bedrock ------------------------------------------------------------------------------------------

BUNDLE_YAML = """\
id: mangaassist-chat
version: "2026-11-20.1"
model_id: {model}
inference_config: {{maxTokens: 400, temperature: 0.2}}
system_prompt: |
  You are MangaAssist. Answer in {{{{ locale }}}}.
  {{% for p in catalog %}}- {{{{ p.title }}}} ({{{{ p.asin }}}}): ${{{{ p.price }}}}, {{{{ p.availability }}}}
  {{% endfor %}}{{% for c in retrieved_chunks %}}Policy: {{{{ c }}}}
  {{% endfor %}}Page: {{{{ page_context.current_asin }}}}
tool_config:
  tools:
    - toolSpec: {{name: lookup_order, description: Look up an order, inputSchema: {{json: {{type: object}}}}}}
"""


def converse_reply(content, input_tokens=120, output_tokens=30):
    return {"output": {"message": {"role": "assistant", "content": content}}, "stopReason": "end_turn",
            "usage": {"inputTokens": input_tokens, "outputTokens": output_tokens,
                      "totalTokens": input_tokens + output_tokens},
            "metrics": {"latencyMs": 321}}


@pytest.fixture
def bundle_path(tmp_path):
    path = tmp_path / "bundle.yaml"
    path.write_text(BUNDLE_YAML.format(model=MODEL_ID), encoding="utf-8")
    return path


@pytest.fixture
def runtime_stub():
    client = boto3.client("bedrock-runtime", region_name="us-east-1")
    with Stubber(client) as stubber:
        yield client, stubber
        stubber.assert_no_pending_responses()


def test_bedrock_target_renders_the_bundle_and_converses(bundle_path, runtime_stub, rubric):
    client, stubber = runtime_stub
    case = make_case()
    expected = {
        "modelId": MODEL_ID,
        "system": [{"text": "You are MangaAssist. Answer in en-US.\n- Uzumaki (B0UZUMAKI1): $22.99, in_stock\n"
                            "Policy: Returns: unopened items within 15 days of delivery.\nPage: B0UZUMAKI1\n"}],
        "messages": [{"role": "user", "content": [{"text": "I bought Uzumaki last week."}]},
                     {"role": "assistant", "content": [{"text": "Great pick! How can I help?"}]},
                     {"role": "user", "content": [{"text": "Can I still return it?"}]}],
        "inferenceConfig": {"maxTokens": 400, "temperature": 0.2},
        "toolConfig": {"tools": [{"toolSpec": {"name": "lookup_order", "description": "Look up an order",
                                               "inputSchema": {"json": {"type": "object"}}}}]},
    }
    stubber.add_response("converse", converse_reply(
        [{"text": "Yes — unopened items "}, {"toolUse": {"toolUseId": "t1", "name": "lookup_order", "input": {}}},
         {"text": "within 15 days."}]), expected)
    target = make_target(TargetSpec.parse(f"bedrock:{bundle_path}"), client_factory(**{"bedrock-runtime": client}),
                         rubric=rubric)
    assert isinstance(target, BedrockTarget)
    reply = target.answer(case)
    assert reply.response == "Yes — unopened items within 15 days."
    assert reply.tool_calls == [{"name": "lookup_order", "input": {}, "tool_use_id": "t1"}]
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (120, 30)
    price = rubric.judge.price_for(MODEL_ID)
    assert price is not None
    assert reply.cost_usd == pytest.approx((120 * price.input + 30 * price.output) / 1e6)
    assert target.id == "mangaassist-chat" and target.version == "2026-11-20.1"


def test_bedrock_model_override_and_unpriced_model(bundle_path, runtime_stub, rubric):
    client, stubber = runtime_stub
    stubber.add_response("converse", converse_reply([{"text": "ok"}]), {
        "modelId": "unpriced.model-v1", "system": ANY,
        "messages": ANY, "inferenceConfig": ANY,
        "toolConfig": ANY})
    spec = TargetSpec.parse({"spec": f"bedrock:{bundle_path}", "model_id": "unpriced.model-v1"})
    reply = make_target(spec, client_factory(**{"bedrock-runtime": client}), rubric=rubric).answer(make_case())
    assert reply.response == "ok" and reply.cost_usd is None  # unknown price is not zero


@pytest.mark.parametrize("code, status, retryable", [
    ("ThrottlingException", 429, True),
    ("ServiceUnavailableException", 503, True),
    ("ModelTimeoutException", 408, True),
    ("ValidationException", 400, False),
    ("AccessDeniedException", 403, False),
])
def test_bedrock_errors_retry_only_transients(bundle_path, runtime_stub, code, status, retryable):
    client, stubber = runtime_stub
    stubber.add_client_error("converse", service_error_code=code, http_status_code=status, service_message="m")
    target = BedrockTarget(TargetSpec.parse(f"bedrock:{bundle_path}"), client_factory(**{"bedrock-runtime": client}))
    with pytest.raises(TargetError, match=code) as info:
        target.answer(make_case())
    assert info.value.retryable is retryable


def test_bedrock_template_that_needs_what_the_case_lacks_fails_the_case_not_the_run(tmp_path, runtime_stub):
    client, _ = runtime_stub
    path = tmp_path / "b.yaml"
    path.write_text("id: b\nversion: '1'\nmodel_id: m\nsystem_prompt: 'Order {{ page_context.order.status }}'\n")
    target = BedrockTarget(TargetSpec.parse(f"bedrock:{path}"), client_factory(**{"bedrock-runtime": client}))
    with pytest.raises(TargetError, match="does not render") as info:
        target.answer(make_case())
    assert not info.value.retryable


@pytest.mark.parametrize("text, message", [
    ("id: b\nmodel_id: m\n", "system_prompt"),
    ("id: b\nsystem_prompt: '{% for %}'\n", "jinja2"),
    ("- a list\n", "mapping"),
    ("id: b\nsystem_prompt: hi\ntemperature: 0.3\n", "temperature"),
    ("id: b\nsystem_prompt: hi\ninference_config: {temperature: 3}\n", "temperature"),
])
def test_bad_bundles_are_refused_before_any_case(tmp_path, text, message):
    path = tmp_path / "b.yaml"
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        load_bundle(str(path), client_factory())


def test_bundle_without_a_model_needs_one_in_the_spec(tmp_path):
    path = tmp_path / "b.yaml"
    path.write_text("id: b\nversion: 3\nsystem_prompt: hi\n")
    with pytest.raises(ValueError, match="no model_id"):
        make_target(TargetSpec.parse(f"bedrock:{path}"), client_factory())
    target = make_target(TargetSpec.parse({"spec": f"bedrock:{path}", "model_id": "m"}), client_factory())
    assert target.version == "3"


def test_unversioned_local_bundle_is_named_by_its_content(tmp_path):
    path = tmp_path / "b.yaml"
    path.write_text("id: b\nmodel_id: m\nsystem_prompt: hi\n")
    first = make_target(TargetSpec.parse(f"bedrock:{path}"), client_factory()).version
    path.write_text("id: b\nmodel_id: m\nsystem_prompt: hello\n")
    second = make_target(TargetSpec.parse(f"bedrock:{path}"), client_factory()).version
    assert first.startswith("sha256:") and second.startswith("sha256:") and first != second


def test_target_version_joins_bundle_and_object_versions():
    bundle = PromptBundle(id="b", version="1.2", model_id="m", system_prompt="x")
    assert LoadedBundle(bundle=bundle, location="s3://b/k", source_version="Vx").target_version == "1.2@Vx"
    unversioned = bundle.model_copy(update={"version": None})
    assert LoadedBundle(bundle=unversioned, location="s3://b/k", source_version="Vx").target_version == "Vx"


PROMPT_ARN = "arn:aws:bedrock:us-east-1:123456789012:prompt/PROMPT12AB"


def test_prompt_management_arn_maps_the_first_variant(runtime_stub):
    agent = boto3.client("bedrock-agent", region_name="us-east-1")
    runtime, stubber = runtime_stub
    prompt = {
        "name": "mangaassist-chat", "id": "PROMPT12AB", "arn": PROMPT_ARN, "version": "4",
        "createdAt": "2026-11-01T00:00:00Z", "updatedAt": "2026-11-02T00:00:00Z",
        "variants": [
            {"name": "main", "templateType": "TEXT", "modelId": MODEL_ID,
             "templateConfiguration": {"text": {"text": "Be MangaAssist in {{locale}}."}},
             "inferenceConfiguration": {"text": {"temperature": 0.1, "maxTokens": 300}}},
            {"name": "other", "templateType": "TEXT", "modelId": "other-model",
             "templateConfiguration": {"text": {"text": "unused"}}},
        ],
    }
    with Stubber(agent) as agent_stub:
        agent_stub.add_response("get_prompt", prompt, {"promptIdentifier": PROMPT_ARN, "promptVersion": "4"})
        stubber.add_response("converse", converse_reply([{"text": "hello"}]), {
            "modelId": MODEL_ID, "system": [{"text": "Be MangaAssist in en-US."}],
            "messages": ANY,
            "inferenceConfig": {"temperature": 0.1, "maxTokens": 300}})
        target = make_target(TargetSpec.parse(f"bedrock:{PROMPT_ARN}:4"),
                             client_factory(**{"bedrock-agent": agent, "bedrock-runtime": runtime}))
        assert target.id == "mangaassist-chat" and target.version == "4"
        assert target.answer(make_case()).response == "hello"
        agent_stub.assert_no_pending_responses()


def test_prompt_without_a_usable_template_is_refused():
    with pytest.raises(ValueError, match="no variant"):
        bundle_from_prompt({"variants": []}, "p")
    with pytest.raises(ValueError, match="no text template"):
        bundle_from_prompt({"variants": [{"name": "v", "templateType": "TEXT", "templateConfiguration": {}}]}, "p")
    chat = bundle_from_prompt({"name": "c", "variants": [{"name": "v", "templateType": "CHAT", "modelId": "m",
                                                          "templateConfiguration": {"chat": {
                                                              "messages": [], "system": [{"text": "Sys."}],
                                                              "toolConfiguration": {"tools": []}}}}]}, "p")
    assert chat.system_prompt == "Sys." and chat.tool_config == {"tools": []}


# -- ssm indirection ----------------------------------------------------------------------------------


class FakeSsm:
    def __init__(self, values):
        self.values = values
        self.asked: list[str] = []

    def get_parameter(self, Name, WithDecryption):  # noqa: N803 - boto3's names
        self.asked.append(Name)
        if Name not in self.values:
            from botocore.exceptions import ClientError

            raise ClientError({"Error": {"Code": "ParameterNotFound", "Message": ""}}, "GetParameter")
        return {"Parameter": {"Name": Name, "Value": self.values[Name]}}


def test_ssm_indirection_follows_hops_and_keeps_the_runs_own_options():
    ssm = FakeSsm({"/chat/prod": "ssm:/chat/prod-v2",
                   "/chat/prod-v2": json.dumps({"spec": "https://chat.example.com/turn", "timeout_s": 10,
                                                "max_concurrency": 50})})
    spec = resolve_spec(TargetSpec.parse({"spec": "ssm:/chat/prod", "max_concurrency": 4}), client_factory(ssm=ssm))
    assert spec.kind == "http" and spec.ref == "https://chat.example.com/turn"
    assert spec.timeout_s == 10 and spec.max_concurrency == 4
    assert ssm.asked == ["/chat/prod", "/chat/prod-v2"]
    same = TargetSpec.parse("recorded")
    assert resolve_spec(same, client_factory()) is same


def test_ssm_indirection_stops_after_three_hops_cycles_and_bad_values():
    chain = {f"/p{i}": f"ssm:/p{i + 1}" for i in range(MAX_SSM_HOPS + 1)}
    chain[f"/p{MAX_SSM_HOPS + 1}"] = "recorded"
    with pytest.raises(ValueError, match="more than 3"):
        resolve_spec(TargetSpec.parse("ssm:/p0"), client_factory(ssm=FakeSsm(chain)))
    with pytest.raises(ValueError, match="point at each other"):
        resolve_spec(TargetSpec.parse("ssm:/a"), client_factory(ssm=FakeSsm({"/a": "ssm:/b", "/b": "ssm:/a"})))
    with pytest.raises(ValueError, match="not a target spec"):
        resolve_spec(TargetSpec.parse("ssm:/x"), client_factory(ssm=FakeSsm({"/x": "gopher://x"})))
    with pytest.raises(ValueError, match="ParameterNotFound"):
        resolve_spec(TargetSpec.parse("ssm:/missing"), client_factory(ssm=FakeSsm({})))
    three = {"/h1": "ssm:/h2", "/h2": "ssm:/h3", "/h3": "python:m:f"}
    assert resolve_spec(TargetSpec.parse("ssm:/h1"), client_factory(ssm=FakeSsm(three))).kind == "python"
