"""moto-backed AWS for the handler tests: the table (with gsi1 and TTL), the data bucket, the event
bus (with a rule copying every fmquality event to an SQS queue, so tests can read what was sent)
and the functions' environment. Handler modules are imported inside the mock."""

from __future__ import annotations

import json
from types import SimpleNamespace

import boto3
import pytest
from moto import mock_aws

from fmquality.adapters.dynamodb import create_evaluation_table
from moto_env import BUCKET, BUS, TABLE, FakeLambdaContext
from tests.integration.conftest_standin import bedrock_standin  # noqa: F401 - shared fixture


@pytest.fixture
def lambda_context() -> FakeLambdaContext:
    return FakeLambdaContext()


@pytest.fixture
def aws(monkeypatch):
    env = {
        "TABLE_NAME": TABLE,
        "BUCKET_NAME": BUCKET,
        "EVENT_BUS_NAME": BUS,
        "JUDGE": "scripted",
        "JUDGE_MODEL_ID": "",
        "POWERTOOLS_SERVICE_NAME": "fmquality-tests",
        "POWERTOOLS_METRICS_NAMESPACE": "MangaAssist/Evaluation",
        "LOG_LEVEL": "INFO",
        "DIMENSION": "fluency",
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    with mock_aws():
        import handlers

        handlers.reset_caches()
        ddb = boto3.client("dynamodb")
        create_evaluation_table(ddb, TABLE)
        s3 = boto3.client("s3")
        s3.create_bucket(Bucket=BUCKET)
        events = boto3.client("events")
        events.create_event_bus(Name=BUS)
        sqs = boto3.client("sqs")
        queue_url = sqs.create_queue(QueueName="fmq-events-copy")["QueueUrl"]
        queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        events.put_rule(Name="copy-fmquality", EventBusName=BUS, EventPattern=json.dumps({"source": ["fmquality"]}))
        events.put_targets(Rule="copy-fmquality", EventBusName=BUS, Targets=[{"Id": "queue", "Arn": queue_arn}])
        yield SimpleNamespace(ddb=ddb, s3=s3, events=events, sqs=sqs, queue_url=queue_url,
                              cloudwatch=boto3.client("cloudwatch"))
        handlers.reset_caches()
