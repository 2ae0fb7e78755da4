"""Adapter behaviour moto does not show: S3's 403 for a missing key, PutEvents' per-entry failures."""

from __future__ import annotations

import boto3
import pytest
from botocore.stub import Stubber

from fmquality.adapters.eventbridge import EventPublisher
from fmquality.domain.errors import EventPublishError
from fmquality.domain.errors import S3ObjectNotFound
from fmquality.adapters.s3 import S3Store, parse_s3_uri


def test_s3_access_denied_reads_as_not_found_with_the_uri():
    client = boto3.client("s3", region_name="us-east-1")
    with Stubber(client) as stub:
        stub.add_client_error("get_object", service_error_code="AccessDenied", http_status_code=403)
        with pytest.raises(S3ObjectNotFound, match="s3://data/runs/r1/items.json"):
            S3Store(client).read_bytes("data", "runs/r1/items.json")


def test_a_refused_event_raises():
    client = boto3.client("events", region_name="us-east-1")
    with Stubber(client) as stub:
        stub.add_response("put_events", {"FailedEntryCount": 1, "Entries": [
            {"ErrorCode": "InternalFailure", "ErrorMessage": "try again"}]})
        with pytest.raises(EventPublishError, match="InternalFailure: try again"):
            EventPublisher("bus", client).evaluation_completed({"run_id": "r1"})


@pytest.mark.parametrize("uri", ["s3://bucket", "s3:///key", "https://bucket/key", "bucket/key"])
def test_parse_s3_uri_refuses_non_object_uris(uri):
    with pytest.raises(ValueError):
        parse_s3_uri(uri)


def test_parse_s3_uri():
    assert parse_s3_uri("s3://data-bucket/datasets/golden.jsonl") == ("data-bucket", "datasets/golden.jsonl")


def test_results_of_an_unknown_arm_are_refused_before_any_call():
    from fmquality.adapters.dynamodb import EvaluationTable

    client = boto3.client("dynamodb", region_name="us-east-1")
    with Stubber(client):  # no response queued: any call would fail the test
        with pytest.raises(ValueError, match="unknown arm 'treatment'"):
            EvaluationTable("table", client).results_for_run("r1", arm="treatment")
