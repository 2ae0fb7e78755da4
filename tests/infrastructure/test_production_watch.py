"""The production watch's resources (a nested stack of the evaluation stack): stream destination and
encryption, the redaction transform, the sampler's schedule and least-privilege IAM, the drift and
kappa alarms."""

from __future__ import annotations

import json

import pytest

from tests.infrastructure.conftest import as_list, functions_by_handler_env, policy_statements_for_function, resources_of


ACCOUNT, REGION = "111111111111", "us-east-1"


@pytest.fixture(scope="module")
def watch_synth(tmp_path_factory):
    """The app with production_watch.enabled (the shipped default is off), synthesized with cdk-nag."""
    import os

    os.environ["FMQ_SKIP_LAYER_BUNDLING"] = "1"
    import aws_cdk as cdk

    import app as cdk_app
    from infra.config import load_config

    config = load_config()
    config = config.model_copy(update={"production_watch": config.production_watch.model_copy(update={"enabled": True})})
    outdir = tmp_path_factory.mktemp("cdk.watch")
    application, evaluation, _ = cdk_app.build_app(config, outdir=str(outdir),
                                                   env=cdk.Environment(account=ACCOUNT, region=REGION))
    application.synth()  # raises on any unacknowledged cdk-nag finding
    return outdir, evaluation.stack_name


@pytest.fixture(scope="module")
def watch_template(watch_synth):
    outdir, _ = watch_synth
    (path,) = outdir.glob("*ProductionWatch*.nested.template.json")
    return json.loads(path.read_text())


def test_nested_in_the_evaluation_stack_with_the_bucket_passed_in(watch_synth):
    outdir, name = watch_synth
    evaluation_template = json.loads((outdir / f"{name}.template.json").read_text())
    (nested,) = [r for r in resources_of(evaluation_template, "AWS::CloudFormation::Stack").values()
                 if "DataBucketArn" in r["Properties"].get("Parameters", {})]
    assert nested["Properties"]["Parameters"]["DataBucketArn"]["Fn::GetAtt"][1] == "Arn"


def test_cfn_lint_finds_no_errors_in_the_watch_template(watch_synth):
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    outdir, _ = watch_synth
    templates = sorted(str(p) for p in outdir.glob("*ProductionWatch*.nested.template.json"))
    cfn_lint = shutil.which("cfn-lint", path=str(Path(sys.executable).parent)) or shutil.which("cfn-lint")
    proc = subprocess.run([cfn_lint, "--ignore-checks", "W3005", "--format", "parseable", "--", *templates],
                          capture_output=True, text=True, timeout=120)
    assert [line for line in proc.stdout.splitlines() if ":E" in line] == [], proc.stdout


def _stream(watch_template):
    (stream,) = resources_of(watch_template, "AWS::KinesisFirehose::DeliveryStream").values()
    return stream["Properties"]


def test_stream_writes_redacted_turns_by_day_encrypted(watch_template):
    props = _stream(watch_template)
    dest = props["ExtendedS3DestinationConfiguration"]
    assert dest["Prefix"] == "production/turns/dt=!{partitionKeyFromLambda:dt}/"
    assert dest["DynamicPartitioningConfiguration"]["Enabled"] is True
    assert props["DeliveryStreamEncryptionConfigurationInput"]["KeyType"] == "AWS_OWNED_CMK"
    (processor,) = dest["ProcessingConfiguration"]["Processors"]
    arn = next(p["ParameterValue"] for p in processor["Parameters"] if p["ParameterName"] == "LambdaArn")
    functions = functions_by_handler_env(watch_template)
    transform_id, _ = functions["redact_transform"]
    assert processor["Type"] == "Lambda" and arn == {"Fn::GetAtt": [transform_id, "Arn"]}


def test_sampler_runs_weekly_and_may_only_start_this_state_machine(watch_template):
    functions = functions_by_handler_env(watch_template)
    sampler_id, sampler = functions["sampler"]
    rules = [r["Properties"] for r in resources_of(watch_template, "AWS::Events::Rule").values()
             if any(t["Arn"] == {"Fn::GetAtt": [sampler_id, "Arn"]} for t in r["Properties"].get("Targets", []))]
    assert [r["ScheduleExpression"] for r in rules] == ["cron(0 2 ? * MON *)"]
    statements = policy_statements_for_function(watch_template, sampler)
    start = [s for s in statements if "states:StartExecution" in as_list(s["Action"])]
    # One resource: the evaluation state machine, passed in from the parent stack.
    assert len(start) == 1 and len(as_list(start[0]["Resource"])) == 1
    assert "EvaluationStateMachine" in start[0]["Resource"]["Ref"]
    for s in statements:
        actions = as_list(s["Action"])
        if any(a.startswith("s3:") for a in actions):
            rendered = json.dumps([s["Resource"], s.get("Condition")])
            assert "production/turns/" in rendered or "datasets/production/sample-" in rendered, s
    # The only Resource "*" is X-Ray's (no resource-level permission).
    assert all(set(as_list(s["Action"])) <= {"xray:PutTraceSegments", "xray:PutTelemetryRecords"}
               for s in statements if s["Resource"] == "*")


def test_watch_function_subscribed_to_evaluation_completed(watch_template):
    functions = functions_by_handler_env(watch_template)
    watch_id, watch = functions["watch"]
    rules = [r["Properties"] for r in resources_of(watch_template, "AWS::Events::Rule").values()
             if any(t["Arn"] == {"Fn::GetAtt": [watch_id, "Arn"]} for t in r["Properties"].get("Targets", []))]
    assert rules and rules[0]["EventPattern"]["detail-type"] == ["EvaluationCompleted"]
    review = [s for s in policy_statements_for_function(watch_template, watch) if s.get("Sid") == "ReviewQueue"]
    assert review[0]["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"] == ["REVIEW#*"]


def test_drift_and_kappa_alarms_notify_the_alerts_topic(watch_template):
    alarms = [a["Properties"] for a in resources_of(watch_template, "AWS::CloudWatch::Alarm").values()]
    drift = [a for a in alarms if a.get("MetricName") == "DriftFlag"]
    assert len(drift) == 16
    assert {tuple(sorted(d["Name"] for d in a["Dimensions"])) for a in drift} == {("Intent", "Locale")}
    kappa = [a for a in alarms if a.get("MetricName") == "JudgeAgreementKappa"]
    assert len(kappa) == 1 and kappa[0]["Threshold"] == 0.6 and kappa[0]["ComparisonOperator"] == "LessThanThreshold"
    for alarm in drift + kappa:
        (action,) = alarm["AlarmActions"]
        assert "MonitoringAlertsTopic" in action["Ref"]  # the alerts topic, passed in from the parent


def test_the_watch_key_prefixes_are_the_cores():
    """infra/ keeps its own copies of the key prefixes its grants name (it never imports lambdas/)."""
    from datetime import date

    from fmquality.production.capture import TURNS_PREFIX as CORE_TURNS_PREFIX
    from fmquality.production.sample import sample_key

    from infra.constructs.production_watch import SAMPLES_PREFIX, TURNS_PREFIX

    assert TURNS_PREFIX == CORE_TURNS_PREFIX
    assert sample_key(date(2026, 11, 23)).startswith(f"{SAMPLES_PREFIX}sample-")


# ---- online judging and drift on the stream (issue 20) --------------------------------------------


def _by_handler(template, name):
    return functions_by_handler_env(template)[name]


def test_turns_notifications_reach_the_online_judge_through_an_encrypted_queue(watch_synth, watch_template):
    outdir, name = watch_synth
    parent = json.loads((outdir / f"{name}.template.json").read_text())
    assert not resources_of(parent, "Custom::S3BucketNotifications")  # no custom resource in the parent
    assert any(b["Properties"].get("NotificationConfiguration") == {"EventBridgeConfiguration": {"EventBridgeEnabled": True}}
               for b in resources_of(parent, "AWS::S3::Bucket").values())
    queues = resources_of(watch_template, "AWS::SQS::Queue")
    (turns_id,) = [k for k in queues if k.startswith("OnlineTurnsQueue")]
    (rule,) = [r["Properties"] for r in resources_of(watch_template, "AWS::Events::Rule").values()
               if r["Properties"].get("EventPattern", {}).get("source") == ["aws.s3"]]
    assert rule["EventPattern"]["detail"]["object"] == {"key": [{"prefix": "production/turns/"}]}
    assert "EventBusName" not in rule and rule["Targets"][0]["Arn"] == {"Fn::GetAtt": [turns_id, "Arn"]}
    turns = queues[turns_id]["Properties"]
    assert turns["SqsManagedSseEnabled"] is True and turns["RedrivePolicy"]["maxReceiveCount"] == 3
    judge_id, _ = _by_handler(watch_template, "online_judge")
    (mapping,) = [m["Properties"] for m in resources_of(watch_template, "AWS::Lambda::EventSourceMapping").values()
                  if m["Properties"]["FunctionName"] == {"Ref": judge_id}]
    assert mapping["EventSourceArn"] == {"Fn::GetAtt": [turns_id, "Arn"]}
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    ssl = [s for p in resources_of(watch_template, "AWS::SQS::QueuePolicy").values()
           if {"Ref": turns_id} in p["Properties"]["Queues"] for s in p["Properties"]["PolicyDocument"]["Statement"]
           if s["Effect"] == "Deny"]
    assert ssl and ssl[0]["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}


def test_online_judge_writes_only_online_results_counts_and_cells(watch_template):
    _, judge = _by_handler(watch_template, "online_judge")
    statements = policy_statements_for_function(watch_template, judge)
    writes = {a: s for s in statements for a in as_list(s["Action"]) if a.startswith("dynamodb:")}
    keys = {a: s["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"] for a, s in writes.items()}
    assert keys["dynamodb:UpdateItem"] == ["ONLINE#*"]
    assert "RUN#*" in keys["dynamodb:PutItem"] or "VERDICT#*" in keys["dynamodb:PutItem"]
    assert all(s["Resource"] != "*" for s in statements if not set(as_list(s["Action"])) <= {
        "xray:PutTraceSegments", "xray:PutTelemetryRecords", "cloudwatch:PutMetricData"})


def test_drift_check_runs_on_an_eventbridge_schedule_with_a_dead_letter_queue(watch_template):
    check_id, check = _by_handler(watch_template, "drift_check")
    (schedule,) = [s["Properties"] for s in resources_of(watch_template, "AWS::Scheduler::Schedule").values()]
    assert schedule["ScheduleExpression"] == "rate(5 minutes)" and schedule["State"] == "ENABLED"
    assert schedule["Target"]["Arn"] == {"Fn::GetAtt": [check_id, "Arn"]}
    assert "Arn" in json.dumps(schedule["Target"]["DeadLetterConfig"])
    statements = policy_statements_for_function(watch_template, check)
    assert any("events:PutEvents" in as_list(s["Action"]) for s in statements)


def test_drift_detected_invokes_the_action_and_nothing_restores_by_default(watch_template):
    action_id, action = _by_handler(watch_template, "drift_action")
    rules = [r["Properties"] for r in resources_of(watch_template, "AWS::Events::Rule").values()
             if any(t["Arn"] == {"Fn::GetAtt": [action_id, "Arn"]} for t in r["Properties"].get("Targets", []))]
    assert [r["EventPattern"]["detail-type"] for r in rules] == [["QualityDriftDetected"]]
    env = action["Properties"]["Environment"]["Variables"]
    assert env["RESTORE_ENABLED"] == "false" and env["REPLAY_ENABLED"] == "true"
    actions = {a for s in policy_statements_for_function(watch_template, action) for a in as_list(s["Action"])}
    assert "ssm:PutParameter" not in actions and {"states:StartExecution", "events:PutEvents",
                                                   "ssm:GetParameterHistory"} <= actions
