"""Nothing delivered asynchronously is lost silently: every EventBridge rule target of the evaluation
stack and of the production watch has a retry policy and an SQS dead-letter queue (encrypted, TLS only),
the asynchronously invoked functions (sampler, watch) send failed invocations to one, and every such
queue alarms to the alerts topic as soon as it holds a message."""

from __future__ import annotations

import json

import pytest

from tests.infrastructure.conftest import as_list, functions_by_handler_env, policy_statements_for_function, resources_of


@pytest.fixture(scope="module")
def watch_template(synth):
    synth.require_success()
    (path,) = synth.outdir.glob("*ProductionWatch*.nested.template.json")
    return json.loads(path.read_text())


@pytest.fixture(scope="module")
def templates(evaluation_template, watch_template):
    return {"evaluation": evaluation_template, "production watch": watch_template}


def _queue_of(arn) -> str:
    """The logical id of a queue an ARN expression names (Fn::GetAtt [queue, Arn])."""
    assert isinstance(arn, dict) and "Fn::GetAtt" in arn and arn["Fn::GetAtt"][1] == "Arn", arn
    return arn["Fn::GetAtt"][0]


def test_every_rule_target_has_a_retry_policy_and_a_dead_letter_queue(templates):
    checked = []
    for name, template in templates.items():
        queues = resources_of(template, "AWS::SQS::Queue")
        for rule_id, rule in resources_of(template, "AWS::Events::Rule").items():
            for target in rule["Properties"]["Targets"]:
                where = f"{name}: {rule_id} -> {target['Id']}"
                assert _queue_of(target.get("DeadLetterConfig", {}).get("Arn")) in queues, where
                retry = target.get("RetryPolicy")
                assert retry, where
                assert 1 <= retry["MaximumRetryAttempts"] <= 5, where
                assert 60 <= retry["MaximumEventAgeInSeconds"] <= 6 * 3600, where
                checked.append(where)
    # The rules that start the state machine (schedule, change events), the alert rule, the watch's two rules.
    for expected in ("ScheduledRun", "OnPromptVersionPublished", "OnModelVersionChanged",
                     "OnKnowledgeBaseRefreshed", "ExecutionStatusChange", "WeeklySample", "OnEvaluationCompleted"):
        assert any(expected in where for where in checked), expected


def test_dead_letter_queues_are_encrypted_refuse_plain_http_and_take_only_their_rules_events(templates):
    for name, template in templates.items():
        policies = resources_of(template, "AWS::SQS::QueuePolicy").values()
        rules_by_queue: dict[str, set[str]] = {}
        for rule_id, rule in resources_of(template, "AWS::Events::Rule").items():
            for target in rule["Properties"]["Targets"]:
                rules_by_queue.setdefault(_queue_of(target["DeadLetterConfig"]["Arn"]), set()).add(rule_id)
        for queue_id, queue in resources_of(template, "AWS::SQS::Queue").items():
            props = queue["Properties"]
            if "RedrivePolicy" in props:  # a work queue (the online judge's), not a dead-letter queue
                continue
            assert props.get("SqsManagedSseEnabled") is True or "KmsMasterKeyId" in props, (name, queue_id)
            assert props["MessageRetentionPeriod"] == 14 * 24 * 3600, (name, queue_id)
            statements = [s for p in policies if {"Ref": queue_id} in p["Properties"]["Queues"]
                          for s in p["Properties"]["PolicyDocument"]["Statement"]]
            assert any(s["Effect"] == "Deny" and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
                       for s in statements), (name, queue_id)
            allowed = [s for s in statements if s["Effect"] == "Allow"]
            assert all(s["Principal"] == {"Service": "events.amazonaws.com"} and s["Action"] == "sqs:SendMessage"
                       for s in allowed), (name, queue_id)
            sources = {s["Condition"]["ArnEquals"]["aws:SourceArn"]["Fn::GetAtt"][0] for s in allowed}
            assert sources == rules_by_queue.get(queue_id, set()), (name, queue_id)


def test_every_dead_letter_queue_alarms_on_a_visible_message_to_the_alerts_topic(templates):
    for name, template in templates.items():
        alarms = [a["Properties"] for a in resources_of(template, "AWS::CloudWatch::Alarm").values()]
        for queue_id, queue in resources_of(template, "AWS::SQS::Queue").items():
            if "RedrivePolicy" in queue["Properties"]:  # a work queue: its dead-letter queue alarms
                continue
            mine = [a for a in alarms if a.get("Namespace") == "AWS/SQS" and a.get("Dimensions") == [
                {"Name": "QueueName", "Value": {"Fn::GetAtt": [queue_id, "QueueName"]}}]]
            assert mine, (name, queue_id)
            for alarm in mine:
                assert alarm["MetricName"] == "ApproximateNumberOfMessagesVisible"
                assert alarm["Threshold"] == 0 and alarm["ComparisonOperator"] == "GreaterThanThreshold"
                assert alarm["EvaluationPeriods"] == 1 and alarm["TreatMissingData"] == "notBreaching"
                assert alarm["AlarmName"].startswith("fmquality-") and "-dlq-" in alarm["AlarmName"]
                (action,) = alarm["AlarmActions"]
                assert "MonitoringAlertsTopic" in action["Ref"], (name, queue_id, action)


@pytest.mark.parametrize("role", ["sampler", "watch"])
def test_asynchronously_invoked_functions_send_failed_invocations_to_a_dead_letter_queue(watch_template, role):
    function_id, function = functions_by_handler_env(watch_template)[role]
    (config,) = [c["Properties"] for c in resources_of(watch_template, "AWS::Lambda::EventInvokeConfig").values()
                 if c["Properties"]["FunctionName"] == {"Ref": function_id}]
    queue_id = _queue_of(config["DestinationConfig"]["OnFailure"]["Destination"])
    assert queue_id in resources_of(watch_template, "AWS::SQS::Queue")
    assert config["Qualifier"] == "$LATEST"
    assert 0 <= config["MaximumRetryAttempts"] <= 2 and config["MaximumEventAgeInSeconds"] <= 6 * 3600
    # The same queue takes what EventBridge could not deliver to the function.
    rules = [r["Properties"] for r in resources_of(watch_template, "AWS::Events::Rule").values()
             if any(t["Arn"] == {"Fn::GetAtt": [function_id, "Arn"]} for t in r["Properties"]["Targets"])]
    assert rules and all(_queue_of(t["DeadLetterConfig"]["Arn"]) == queue_id
                         for r in rules for t in r["Targets"])
    # Lambda sends the record with the function's role: it may send to that queue only.
    sends = [s for s in policy_statements_for_function(watch_template, function)
             if any(a.startswith("sqs:") for a in as_list(s["Action"]))]
    assert sends and all(s["Resource"] == {"Fn::GetAtt": [queue_id, "Arn"]} for s in sends)
    assert "sqs:SendMessage" in {a for s in sends for a in as_list(s["Action"])}
