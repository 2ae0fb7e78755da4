"""Online judging end to end on embedded AWS (moto): captured turns -> "Object Created" (as the rule
puts it on SQS) -> the online judge handler -> results under online-<hour>, window cells, metrics ->
`drift approve` (the same function) -> the drift check handler -> QualityDriftDetected on the bus ->
the drift action: replay execution started, QualityRollbackRecommended, and (when configured) the
production target parameter restored."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from fmquality.adapters.dynamodb import EvaluationTable
from fmquality.config.watch import WatchConfig
from fmquality.judges.base import JudgeVerdict
from fmquality.judges.scripted import ScriptedJudge
from fmquality.production.capture import partition_prefix
from fmquality.run.online import REFERENCE_KEY, approve_window
from tests.integration.moto_env import BUCKET, TABLE

HOUR = datetime(2026, 11, 23, 9, 0, tzinfo=timezone.utc)
WATCH = {"online": {"rate": 1.0, "quota_per_cell": 0, "window_minutes": 5}}


def quality_judge(request):
    """Scores every asked sub-score with the number the recorded answer carries ("quality 0.9")."""
    text = request.case.response or ""
    score = float(text.split("quality ")[1].split()[0]) if "quality " in text else 0.5
    return JudgeVerdict(sub_scores={n: score for n in request.sub_scores}, rationale="scripted by answer")


def turns_object(aws, start: datetime, count: int, quality: float, prefix: str) -> dict:
    lines = []
    for i in range(count):
        at = start + timedelta(seconds=i * 270 // count)
        lines.append(json.dumps({
            "turn_id": f"{prefix}-{i}", "timestamp": at.isoformat(), "locale": "en-US", "intent": "faq",
            "query": "When does the store ship?", "response": f"We ship in two days. quality {quality}",
            "model_id": "m1", "prompt_version": "p7", "latency_ms": 12, "user_tier": "prime"}))
    key = f"{partition_prefix(start.date().isoformat())}{prefix}.jsonl"
    aws.s3.put_object(Bucket=BUCKET, Key=key, Body=("\n".join(lines) + "\n").encode())
    # As the rule delivers it: EventBridge's "Object Created" event of the bucket.
    notification = {"source": "aws.s3", "detail-type": "Object Created",
                    "detail": {"bucket": {"name": BUCKET}, "object": {"key": key, "size": 1}}}
    return {"Records": [{"messageId": prefix, "receiptHandle": "r", "body": json.dumps(notification),
                         "attributes": {}, "messageAttributes": {}, "md5OfBody": "", "eventSource": "aws:sqs",
                         "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:turns", "awsRegion": "us-east-1"}]}


def bus_events(aws) -> list[dict]:
    out = []
    while True:
        got = aws.sqs.receive_message(QueueUrl=aws.queue_url, MaxNumberOfMessages=10).get("Messages", [])
        if not got:
            return out
        out.extend(json.loads(m["Body"]) for m in got)


@pytest.fixture
def online(aws, monkeypatch):
    monkeypatch.setenv("WATCH_CONFIG", json.dumps(WATCH))
    import handlers.online_judge as online_judge

    monkeypatch.setattr(online_judge, "judge_for", lambda *a: ScriptedJudge(default=quality_judge))
    return online_judge


def test_turns_are_judged_a_drift_is_detected_and_acted_on(aws, online, lambda_context, monkeypatch):
    reference_turns = turns_object(aws, HOUR - timedelta(minutes=60), 40, 0.9, "ref")
    assert online.handler(reference_turns, lambda_context) == {"batchItemFailures": []}
    table = EvaluationTable(TABLE, aws.ddb)
    stored = table.results_for_run("online-2026112308")
    assert len(stored) == 40 and all("tier:prime" in r.tags and "version:p7@m1" in r.tags for r in stored)

    # The approval (the command's function), written where the deployed check reads it.
    reference = approve_window(table.results_for_run, HOUR - timedelta(hours=1), HOUR,
                               WatchConfig.model_validate(WATCH))
    aws.s3.put_object(Bucket=BUCKET, Key=REFERENCE_KEY, Body=reference.model_dump_json().encode())
    assert "faq|en-US|prime" in reference.strata

    broken = turns_object(aws, HOUR + timedelta(minutes=10), 30, 0.3, "bad")
    missing = {"Records": [{**broken["Records"][0], "messageId": "gone",
                            "body": broken["Records"][0]["body"].replace("bad.jsonl", "nothing.jsonl")}]}
    assert online.handler(missing, lambda_context) == {"batchItemFailures": [{"itemIdentifier": "gone"}]}
    assert online.handler(broken, lambda_context) == {"batchItemFailures": []}
    assert online.handler(broken, lambda_context) == {"batchItemFailures": []}  # redelivered: counted once
    assert len(table.results_for_run("online-2026112309")) == 30
    names = {(m["MetricName"], tuple(sorted(d["Name"] for d in m["Dimensions"])))
             for m in aws.cloudwatch.list_metrics(Namespace="MangaAssist/Evaluation")["Metrics"]}
    assert ("OnlineJudged", ("Intent", "Locale", "Version")) in names

    import handlers.drift_check as drift_check

    out = drift_check.handler({"time": (HOUR + timedelta(minutes=17)).isoformat()}, lambda_context)
    assert out["flagged"] == ["faq|en-US|prime"]
    detected = [e for e in bus_events(aws) if e["detail-type"] == "QualityDriftDetected"]
    assert len(detected) == 1
    detail = detected[0]["detail"]
    assert detail["stratum"]["tier"] == "prime" and detail["window"]["to"] == (HOUR + timedelta(minutes=15)).isoformat()
    assert detail["drop"]["absolute"] > 0.3 and len(detail["top_items"]) == 5
    assert all(t["dimensions"] and t["run_id"] == "online-2026112309" for t in detail["top_items"])
    link_key = detail["report_link"].split(f"s3://{BUCKET}/", 1)[1]
    assert json.loads(aws.s3.get_object(Bucket=BUCKET, Key=link_key)["Body"].read())["stratum"] == detail["stratum"]
    assert ("DriftFlag", ("Intent", "Locale")) in {
        (m["MetricName"], tuple(sorted(d["Name"] for d in m["Dimensions"])))
        for m in aws.cloudwatch.list_metrics(Namespace="MangaAssist/Evaluation")["Metrics"]}

    # The action: replay the window (current vs previous target), recommend, and (configured) restore.
    import boto3

    ssm, sfn = boto3.client("ssm"), boto3.client("stepfunctions")
    ssm.put_parameter(Name="/mangaassist/test/production-target", Value="bedrock-bundle:p6", Type="String")
    ssm.put_parameter(Name="/mangaassist/test/production-target", Value="bedrock-bundle:p7", Type="String",
                      Overwrite=True)
    machine = sfn.create_state_machine(name="eval", roleArn="arn:aws:iam::123456789012:role/sfn",
                                       definition=json.dumps({"StartAt": "P", "States": {"P": {"Type": "Pass", "End": True}}}))
    monkeypatch.setenv("PRODUCTION_TARGET_PARAMETER", "/mangaassist/test/production-target")
    monkeypatch.setenv("STATE_MACHINE_ARN", machine["stateMachineArn"])
    import handlers.drift_action as drift_action

    acted = drift_action.handler(detected[0], lambda_context)
    assert acted["previous"] == "bedrock-bundle:p6" and acted["recommended"] == "bedrock-bundle:p6"
    execution = sfn.describe_execution(executionArn=acted["replay"])
    assert json.loads(execution["input"])["replay"] == {"from": detail["window"]["from"], "to": detail["window"]["to"]}
    assert json.loads(execution["input"])["control"] == "bedrock-bundle:p6"
    recommended = [e for e in bus_events(aws) if e["detail-type"] == "QualityRollbackRecommended"]
    assert recommended and recommended[0]["detail"]["restore_version"] == "bedrock-bundle:p6"
    assert drift_action.handler(recommended[0], lambda_context) == {"skipped": "QualityRollbackRecommended not acted on"}
    monkeypatch.setenv("RESTORE_ENABLED", "true")
    assert drift_action.handler(recommended[0], lambda_context)["restored"] is True
    assert ssm.get_parameter(Name="/mangaassist/test/production-target")["Parameter"]["Value"] == "bedrock-bundle:p6"
