"""Targets against AWS APIs: versioned bundles in S3, ssm: indirection and header secrets on moto;
Lambda Invoke and Converse through botocore's Stubber (moto's Lambda would need docker, and it has
no Converse). Nothing reaches AWS: conftest sets fake credentials."""

from __future__ import annotations

import io
import json

import boto3
import pytest
from botocore.response import StreamingBody
from botocore.stub import ANY, Stubber
from moto import mock_aws

from bench.chatbot import serve
from fmquality.run.generate import generate
from fmquality.domain.case import TestCase
from fmquality.targets import TargetSpec, make_target, resolve_spec

BUCKET = "fmq-bundles-test"
KEY = "bundles/mangaassist-chat.yaml"
MODEL_ID = "anthropic.claude-haiku-4-5-20251001-v1:0"
BUNDLE = """\
id: mangaassist-chat
version: "{version}"
model_id: {model}
inference_config: {{maxTokens: 300, temperature: 0.2}}
system_prompt: "{system}"
"""
CASE = {"test_id": "pq-uzumaki-001", "intent": "product_question", "query": "Is Uzumaki in stock?",
        "response": "recorded answer", "expected_facts": ["in stock"], "reference_response": "It is in stock.",
        "catalog": [{"asin": "B0UZUMAKI1", "title": "Uzumaki", "price": 22.99, "availability": "in_stock"}]}


@pytest.fixture
def aws():
    with mock_aws():
        clients: dict[str, object] = {}

        def client(service: str):
            if service not in clients:
                clients[service] = boto3.client(service, region_name="us-east-1")
            return clients[service]

        yield client


def converse_reply(text: str) -> dict:
    return {"output": {"message": {"role": "assistant", "content": [{"text": text}]}}, "stopReason": "end_turn",
            "usage": {"inputTokens": 50, "outputTokens": 12, "totalTokens": 62}, "metrics": {"latencyMs": 100}}


def test_s3_bundle_reads_the_exact_object_version(aws):
    s3 = aws("s3")
    s3.create_bucket(Bucket=BUCKET)
    s3.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})
    first = s3.put_object(Bucket=BUCKET, Key=KEY, Body=BUNDLE.format(version="1.0", model=MODEL_ID,
                                                                     system="Old prompt for {{ locale }}."))
    second = s3.put_object(Bucket=BUCKET, Key=KEY, Body=BUNDLE.format(version="1.1", model=MODEL_ID,
                                                                      system="New prompt for {{ locale }}."))
    pinned = make_target(TargetSpec.parse(f"bedrock:s3://{BUCKET}/{KEY}?versionId={first['VersionId']}"), aws)
    latest = make_target(TargetSpec.parse(f"bedrock:s3://{BUCKET}/{KEY}"), aws)
    assert pinned.version == f"1.0@{first['VersionId']}" and latest.version == f"1.1@{second['VersionId']}"
    case = TestCase.model_validate(CASE)
    assert pinned.converse_params(case)["system"] == [{"text": "Old prompt for en-US."}]

    runtime = aws("bedrock-runtime")
    with Stubber(runtime) as stub:
        stub.add_client_error("converse", service_error_code="ThrottlingException", http_status_code=429)
        stub.add_response("converse", converse_reply("Yes, Uzumaki is in stock."),
                          {"modelId": MODEL_ID, "system": [{"text": "Old prompt for en-US."}], "messages": ANY,
                           "inferenceConfig": {"maxTokens": 300, "temperature": 0.2}})
        new_case, generation = generate(case, pinned, sleep=lambda _s: None)
    assert new_case.response == "Yes, Uzumaki is in stock." and generation.attempts == 2
    assert generation.target_id == "mangaassist-chat" and generation.target_version == f"1.0@{first['VersionId']}"
    assert (generation.usage.input_tokens, generation.usage.output_tokens) == (50, 12)


def test_missing_s3_bundle_stops_the_run_with_a_reason(aws):
    aws("s3").create_bucket(Bucket=BUCKET)
    with pytest.raises(ValueError, match="NoSuchKey"):
        make_target(TargetSpec.parse(f"bedrock:s3://{BUCKET}/missing.yaml"), aws)


def test_ssm_parameter_names_the_production_lambda(aws):
    ssm = aws("ssm")
    ssm.put_parameter(Name="/mangaassist/chat/production", Type="String", Value="ssm:/mangaassist/chat/current")
    ssm.put_parameter(Name="/mangaassist/chat/current", Type="String",
                      Value=json.dumps({"spec": "lambda:mangaassist-chat:live", "max_concurrency": 20}))
    spec = resolve_spec(TargetSpec.parse("ssm:/mangaassist/chat/production"), aws)
    assert spec.spec_string() == "lambda:mangaassist-chat:live" and spec.max_concurrency == 20

    target = make_target(spec, aws)
    lam = aws("lambda")
    case = TestCase.model_validate(CASE)
    with Stubber(lam) as stub:
        stub.add_client_error("invoke", service_error_code="TooManyRequestsException", http_status_code=429)
        body = json.dumps({"response": "In stock!"}).encode()
        stub.add_response("invoke", {"StatusCode": 200, "ExecutedVersion": "12",
                                     "Payload": StreamingBody(io.BytesIO(body), len(body))},
                          {"FunctionName": "mangaassist-chat:live", "InvocationType": "RequestResponse",
                           "Payload": ANY})
        _, generation = generate(case, target, sleep=lambda _s: None)
    assert generation.response == "In stock!" and generation.target_version == "12" and generation.attempts == 2


def test_missing_ssm_parameter_is_a_clear_error(aws):
    with pytest.raises(ValueError, match="ssm:/nope.*ParameterNotFound"):
        resolve_spec(TargetSpec.parse("ssm:/nope"), aws)


def test_http_headers_come_from_secrets_manager(aws, tmp_path):
    aws("secretsmanager").create_secret(Name="mangaassist/chat-headers",
                                        SecretString=json.dumps({"allowed_hosts": ["127.0.0.1"],
                                                                 "headers": {"X-Api-Key": "s3cr3t-key"}}))
    dataset = tmp_path / "one.jsonl"
    dataset.write_text(json.dumps(CASE) + "\n", encoding="utf-8")
    server, _thread, url = serve(dataset)
    try:
        spec = TargetSpec.parse({"spec": url, "headers_secret": "mangaassist/chat-headers"})
        target = make_target(spec, aws)
        # urllib, not requests: moto's mock is active, yet the local chatbot is reached for real.
        _, generation = generate(TestCase.model_validate(CASE), target)
    finally:
        server.shutdown()
        server.server_close()
    assert generation.response == "recorded answer" and generation.error is None
    assert server.request_headers[0]["X-Api-Key"] == "s3cr3t-key"
    assert "s3cr3t" not in json.dumps(spec.describe())


def test_missing_header_secret_stops_the_run(aws):
    with pytest.raises(ValueError, match="headers_secret nope.*ResourceNotFoundException"):
        make_target(TargetSpec.parse({"spec": "http://127.0.0.1:9/chat", "headers_secret": "nope"}), aws)


def test_run_resolves_the_production_target_from_ssm_once(aws, tmp_path):
    """`fmquality run --target ssm:<name>`: the CLI's own (lazily created) clients reach moto's SSM;
    the report names both the parameter and what it pointed at."""
    from fmquality.cli.common import EXIT_PASSED
    from fmquality.cli.main import main

    dataset = tmp_path / "one.jsonl"
    line = {"test_id": "faq-returns-good", "intent": "faq", "query": "How long do I have to return a manga?",
            "response": "You can return unopened items within 15 days of delivery, and your refund reaches the "
                        "original payment method within 5-7 business days.",
            "retrieved_chunks": ["Returns: unopened items can be returned within 15 days of delivery. Refunds are "
                                 "issued to the original payment method within 5-7 business days."],
            "expected_facts": ["unopened items can be returned within 15 days of delivery"]}
    dataset.write_text(json.dumps(line) + "\n", encoding="utf-8")
    server, _thread, url = serve(dataset)
    try:
        aws("ssm").put_parameter(Name="/mangaassist/chat/production", Type="String", Value=url)
        out = tmp_path / "out"
        code = main(["run", "--engine", "direct", "--dataset", str(dataset), "--out", str(out), "--quiet",
                     "--target", "ssm:/mangaassist/chat/production"])
    finally:
        server.shutdown()
        server.server_close()
    assert code == EXIT_PASSED and len(server.requests) == 1
    target = json.loads((out / "report.json").read_text())["target"]
    assert target["resolved_from"] == "ssm:/mangaassist/chat/production"
    assert target["kind"] == "http" and target["id"] == url and target["version"] == "bench-chatbot-1"
