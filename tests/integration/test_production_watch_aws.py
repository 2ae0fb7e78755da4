"""Capture client against moto's Firehose API, the transform handler's contract, the sampler and the
watch handlers on moto S3/DynamoDB/CloudWatch/SNS/Step Functions."""

from __future__ import annotations

import base64
import json
from datetime import date

import boto3
import pytest
from moto import mock_aws

from fmquality.production.capture import CaptureClient, transform_firehose_records
from fmquality.domain.errors import CaptureError
from fmquality.production.redact import Redactor

TURN = {"turn_id": "t1", "timestamp": "2026-11-16T10:00:00+09:00", "locale": "ja-JP", "intent": "order_tracking",
        "query": "注文MAQ7K29XBはいつ届きますか？電話は090-1234-5678です", "response": "明日お届け予定です。",
        "model_id": "m", "prompt_version": "p", "latency_ms": 800}


class FlakyFirehose:
    """Fails the first record of the first call, as PutRecordBatch reports throttled records."""

    def __init__(self):
        self.calls = []

    def put_record_batch(self, DeliveryStreamName, Records):
        self.calls.append([json.loads(r["Data"]) for r in Records])
        first = len(self.calls) == 1
        return {"FailedPutCount": 1 if first else 0,
                "RequestResponses": [{"ErrorCode": "ServiceUnavailableException"} if first and i == 0 else {"RecordId": "x"}
                                     for i in range(len(Records))]}


def test_capture_client_redacts_batches_and_retries_failed_records():
    fake = FlakyFirehose()
    client = CaptureClient(fake, "turns", redactor=Redactor("k"), sleep=lambda s: None)
    client.send_many([{**TURN, "turn_id": f"t{i}"} for i in range(3)])
    # The stream gets the keyed token of the turn id; CaptureError names the producer's own ids.
    assert [len(c) for c in fake.calls] == [3, 1] and fake.calls[1][0]["turn_id"] == Redactor("k").turn_token("t0")
    assert "090-1234-5678" not in json.dumps(fake.calls, ensure_ascii=False)
    assert fake.calls[0][0]["redactions"] == {"order_id": 1, "phone": 1}
    always = CaptureClient(type("F", (), {"put_record_batch": lambda self, **kw: {"FailedPutCount": 1, "RequestResponses": [
        {"ErrorCode": "ServiceUnavailableException"}]}})(), "turns", redactor=Redactor("k"), sleep=lambda s: None,
        max_attempts=2)
    with pytest.raises(CaptureError) as info:
        always.send_many([TURN])
    assert info.value.failed_turn_ids == ["t1"]


@mock_aws
def test_capture_client_request_shape_against_moto_firehose(monkeypatch):
    monkeypatch.setenv("FMQ_ORDER_HASH_KEY", "local-key")
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket="data")
    firehose = boto3.client("firehose")
    firehose.create_delivery_stream(DeliveryStreamName="turns", DeliveryStreamType="DirectPut",
                                    ExtendedS3DestinationConfiguration={"RoleARN": "arn:aws:iam::123456789012:role/x",
                                                                        "BucketARN": "arn:aws:s3:::data",
                                                                        "Prefix": "production/turns/"})
    client = CaptureClient(firehose, "turns")
    client.send_many([{**TURN, "turn_id": f"t{i}"} for i in range(501)])
    assert client.sent == 501 and client.calls == 2


def test_transform_contract_partition_key_and_failures():
    good = base64.b64encode(json.dumps(TURN, ensure_ascii=False).encode()).decode()
    bad = base64.b64encode(b'{"query": "mail me@example.com"}').decode()
    out = transform_firehose_records([{"recordId": "1", "data": good}, {"recordId": "2", "data": bad}], Redactor("k"))
    assert out[0]["result"] == "Ok" and out[0]["metadata"]["partitionKeys"] == {"dt": "2026-11-16"}
    stored = base64.b64decode(out[0]["data"]).decode()
    assert stored.endswith("\n") and "MAQ7K29XB" not in stored and "090-1234-5678" not in stored
    # Refused: stored as a redacted envelope under dt=invalid, never ProcessingFailed (Firehose would
    # write the record as received to the error prefix).
    assert out[1]["result"] == "Ok" and out[1]["metadata"]["partitionKeys"] == {"dt": "invalid"}
    refused = json.loads(base64.b64decode(out[1]["data"]))
    assert b"me@example.com" not in base64.b64decode(out[1]["data"]) and refused["record"]["query"] == "mail [EMAIL]"


@mock_aws
def test_transform_handler_keyed_from_secrets_manager(monkeypatch):
    from handlers import reset_caches

    reset_caches()
    arn = boto3.client("secretsmanager").create_secret(Name="k", SecretString="secret")["ARN"]
    monkeypatch.setenv("ORDER_HASH_SECRET_ID", arn)
    from handlers import redact_transform

    redact_transform.redactor.cache_clear()
    event = {"records": [{"recordId": "1", "data": base64.b64encode(json.dumps(TURN).encode()).decode()}]}
    context = type("C", (), {"function_name": "f", "memory_limit_in_mb": 128, "invoked_function_arn": "arn", "aws_request_id": "r"})()
    out = redact_transform.handler(event, context)
    assert Redactor("secret").order_token("MAQ7K29XB") in base64.b64decode(out["records"][0]["data"]).decode()
    redact_transform.redactor.cache_clear()
    reset_caches()


@mock_aws
def test_sampler_reads_the_week_writes_the_dataset_and_starts_the_run():
    from fmquality.production.capture import partition_prefix, record_line, redact_record
    from handlers import reset_caches
    from handlers.sampler import SamplerEnv, run_sampler

    reset_caches()
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket="data")
    sfn = boto3.client("stepfunctions")
    arn = sfn.create_state_machine(name="sm", definition=json.dumps({"StartAt": "A", "States": {"A": {"Type": "Pass", "End": True}}}),
                                   roleArn="arn:aws:iam::123456789012:role/sm")["stateMachineArn"]
    r = Redactor("k")
    for day in ("2026-11-16", "2026-11-22", "2026-11-23"):
        body = b"".join(record_line(redact_record({**TURN, "turn_id": f"{day}-{i}", "timestamp": f"{day}T05:00:00+00:00"}, r))
                        for i in range(40))
        s3.put_object(Bucket="data", Key=partition_prefix(day) + "part-1", Body=body)
    env = SamplerEnv.model_validate({"TABLE_NAME": "t", "BUCKET_NAME": "data", "EVENT_BUS_NAME": "b",
                                     "STATE_MACHINE_ARN": arn})
    from fmquality.config.watch import WatchConfig

    out = run_sampler(date(2026, 11, 23), env, WatchConfig(), s3, sfn)
    assert out["population"] == 80 and out["sampled"] == 30  # 11-16 and 11-22; 11-23 is today, not in the window
    execution = sfn.describe_execution(executionArn=out["execution_arn"])
    assert json.loads(execution["input"]) == {"trigger": "schedule:production-sample",
                                              "dataset": "s3://data/datasets/production/sample-2026-11-23.jsonl"}
    body = s3.get_object(Bucket="data", Key="datasets/production/sample-2026-11-23.jsonl")["Body"].read()
    tags = {tuple(json.loads(line)["tags"][:2]) for line in body.splitlines()}
    assert tags == {("production", "dt:2026-11-16"), ("production", "dt:2026-11-22")}


@mock_aws
def test_watch_handler_queues_reviews_publishes_metrics_and_alerts(rubric):
    from fmquality.adapters.cloudwatch import MetricsPublisher
    from fmquality.adapters.dynamodb import create_evaluation_table
    from fmquality.adapters.s3 import S3Store
    from fmquality.production.drift import build_reference
    from fmquality.adapters.review_queue import DynamoReviewQueue
    from fmquality.report.build import build_report, results_to_jsonl
    from handlers import reset_caches
    from fmquality.run.watch import CompletedDetail, watch_run
    from tests.unit.test_drift import _run

    reset_caches()
    s3c = boto3.client("s3")
    s3c.create_bucket(Bucket="data")
    ddb = boto3.client("dynamodb")
    create_evaluation_table(ddb, "table")
    sns = boto3.client("sns")
    topic = sns.create_topic(Name="alerts")["TopicArn"]
    sqs = boto3.client("sqs")
    queue_url = sqs.create_queue(QueueName="q")["QueueUrl"]
    sns.subscribe(TopicArn=topic, Protocol="sqs",
                  Endpoint=sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"])
    results = _run(0.5, run="prod1")
    report = build_report(results, rubric, run_id="prod1", dataset="s3://data/datasets/production/sample.jsonl",
                          trigger="schedule:production-sample")
    store = S3Store(s3c)
    store.write_text("data", "runs/prod1/report.json", report.model_dump_json())
    store.write_text("data", "runs/prod1/results.jsonl", results_to_jsonl(results))
    store.write_text("data", "production/drift/reference.json",
                     build_reference([_run(0.9, seed=s, run=f"r{s}") for s in range(5)]).model_dump_json())
    out = watch_run(CompletedDetail(run_id="prod1", report_uri="s3://data/runs/prod1/report.json"), topic, store,
                    DynamoReviewQueue("table", ddb), MetricsPublisher(boto3_client=boto3.client("cloudwatch")), sns)
    assert out["flagged"] == ["faq|en-US"] and out["review_added"] > 0
    assert len(DynamoReviewQueue("table", ddb).items("prod1")) == out["review_added"]
    names = {m["MetricName"] for m in boto3.client("cloudwatch").list_metrics(Namespace="MangaAssist/Evaluation")["Metrics"]}
    assert {"DriftFlag", "DriftCusum", "DriftKsStatistic", "MonitorStatus"} <= names
    message = json.loads(sqs.receive_message(QueueUrl=queue_url)["Messages"][0]["Body"])["Message"]
    assert "intent=faq locale=en-US" in message and "Worst 5 item(s)" in message
    assert json.loads(store.read_text("data", "runs/prod1/watch.json"))["monitor"]["status"] == "critical"  # ~0.5 against 0.7
    golden = watch_run(CompletedDetail(run_id="prod1", report_uri="s3://data/runs/prod1/report.json"), topic, store,
                       DynamoReviewQueue("table", ddb), MetricsPublisher(boto3_client=boto3.client("cloudwatch")), sns)
    assert golden["review_added"] == 0  # a re-delivered event never re-queues or resets reviewed items
