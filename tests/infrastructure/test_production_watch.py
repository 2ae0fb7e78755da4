"""The production watch's resources: stream destination and encryption, the redaction transform,
the sampler's schedule and least-privilege IAM, the drift and kappa alarms."""

from __future__ import annotations

import json

from tests.infrastructure.conftest import as_list, functions_by_handler_env, policy_statements_for_function, resources_of


def _stream(evaluation_template):
    (stream,) = resources_of(evaluation_template, "AWS::KinesisFirehose::DeliveryStream").values()
    return stream["Properties"]


def test_stream_writes_redacted_turns_by_day_encrypted(evaluation_template):
    props = _stream(evaluation_template)
    dest = props["ExtendedS3DestinationConfiguration"]
    assert dest["Prefix"] == "production/turns/dt=!{partitionKeyFromLambda:dt}/"
    assert dest["DynamicPartitioningConfiguration"]["Enabled"] is True
    assert props["DeliveryStreamEncryptionConfigurationInput"]["KeyType"] == "AWS_OWNED_CMK"
    (processor,) = dest["ProcessingConfiguration"]["Processors"]
    arn = next(p["ParameterValue"] for p in processor["Parameters"] if p["ParameterName"] == "LambdaArn")
    functions = functions_by_handler_env(evaluation_template)
    transform_id, _ = functions["redact_transform"]
    assert processor["Type"] == "Lambda" and arn == {"Fn::GetAtt": [transform_id, "Arn"]}


def test_sampler_runs_weekly_and_may_only_start_this_state_machine(evaluation_template):
    functions = functions_by_handler_env(evaluation_template)
    sampler_id, sampler = functions["sampler"]
    rules = [r["Properties"] for r in resources_of(evaluation_template, "AWS::Events::Rule").values()
             if any(t["Arn"] == {"Fn::GetAtt": [sampler_id, "Arn"]} for t in r["Properties"].get("Targets", []))]
    assert [r["ScheduleExpression"] for r in rules] == ["cron(0 2 ? * MON *)"]
    statements = policy_statements_for_function(evaluation_template, sampler)
    (state_machine_id,) = resources_of(evaluation_template, "AWS::StepFunctions::StateMachine")
    start = [s for s in statements if "states:StartExecution" in as_list(s["Action"])]
    assert start and all(as_list(s["Resource"]) == [{"Ref": state_machine_id}] for s in start)
    for s in statements:
        actions = as_list(s["Action"])
        if any(a.startswith("s3:") for a in actions):
            rendered = json.dumps([s["Resource"], s.get("Condition")])
            assert "production/turns/" in rendered or "datasets/production/sample-" in rendered, s
    # The only Resource "*" is X-Ray's (no resource-level permission).
    assert all(set(as_list(s["Action"])) <= {"xray:PutTraceSegments", "xray:PutTelemetryRecords"}
               for s in statements if s["Resource"] == "*")


def test_watch_function_subscribed_to_evaluation_completed(evaluation_template):
    functions = functions_by_handler_env(evaluation_template)
    watch_id, watch = functions["watch"]
    rules = [r["Properties"] for r in resources_of(evaluation_template, "AWS::Events::Rule").values()
             if any(t["Arn"] == {"Fn::GetAtt": [watch_id, "Arn"]} for t in r["Properties"].get("Targets", []))]
    assert rules and rules[0]["EventPattern"]["detail-type"] == ["EvaluationCompleted"]
    review = [s for s in policy_statements_for_function(evaluation_template, watch) if s.get("Sid") == "ReviewQueue"]
    assert review[0]["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"] == ["REVIEW#*"]


def test_drift_and_kappa_alarms_notify_the_alerts_topic(evaluation_template):
    alarms = [a["Properties"] for a in resources_of(evaluation_template, "AWS::CloudWatch::Alarm").values()]
    (topic_id,) = resources_of(evaluation_template, "AWS::SNS::Topic")
    drift = [a for a in alarms if a.get("MetricName") == "DriftFlag"]
    assert len(drift) == 16
    assert {tuple(sorted(d["Name"] for d in a["Dimensions"])) for a in drift} == {("Intent", "Locale")}
    kappa = [a for a in alarms if a.get("MetricName") == "JudgeAgreementKappa"]
    assert len(kappa) == 1 and kappa[0]["Threshold"] == 0.6 and kappa[0]["ComparisonOperator"] == "LessThanThreshold"
    for alarm in drift + kappa:
        assert alarm["AlarmActions"] == [{"Ref": topic_id}]
