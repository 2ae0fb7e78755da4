"""Issue 20, items 4 and 5 in the template: the probe schedule (EventBridge Scheduler starting the evaluation
state machine on the probes file against the production target, trigger "probe"), its least-privilege
role, the ProbeFailureRate alarm at its SLO; Prepare's replay budget and its read-only grant on the
captured turns. cdk-nag and cfn-lint over the same template: test_compliance.py."""

from __future__ import annotations

import json

import pytest

from tests.infrastructure.conftest import (as_list, flatten_join, functions_by_handler_env,
                                           policy_statements_for_function, resources_of)


@pytest.fixture(scope="module")
def schedule(evaluation_template):
    (found,) = [s for s in resources_of(evaluation_template, "AWS::Scheduler::Schedule").values()
                if "probe" in s["Properties"].get("Description", "").lower()]
    return found["Properties"]


def test_the_probe_schedule_starts_the_state_machine_on_the_probes_against_production(schedule, synth,
                                                                                      evaluation_template):
    config = synth.config
    assert schedule["ScheduleExpression"] == config.probes.schedule_expression
    assert schedule["State"] == "ENABLED"
    target = schedule["Target"]
    (machine_id,) = resources_of(evaluation_template, "AWS::StepFunctions::StateMachine")
    assert target["Arn"] == {"Ref": machine_id}
    execution_input = json.loads(flatten_join(target["Input"]).replace("<Ref>", "bucket"))
    assert execution_input["trigger"] == "probe"
    assert execution_input["target"] == config.production_target_spec
    assert execution_input["dataset"].endswith(f"/{config.probes.dataset_key}")
    assert target["RetryPolicy"]["MaximumRetryAttempts"] == 2 and "DeadLetterConfig" in target


def test_the_scheduler_role_may_only_start_that_state_machine_and_dead_letter(schedule, evaluation_template):
    role_id = schedule["Target"]["RoleArn"]["Fn::GetAtt"][0]
    role = evaluation_template["Resources"][role_id]["Properties"]
    assert role["AssumeRolePolicyDocument"]["Statement"][0]["Principal"] == {"Service": "scheduler.amazonaws.com"}
    assert not role.get("ManagedPolicyArns")
    statements = [s for p in resources_of(evaluation_template, "AWS::IAM::Policy").values()
                  if {"Ref": role_id} in p["Properties"]["Roles"] for s in p["Properties"]["PolicyDocument"]["Statement"]]
    actions = {a for s in statements for a in as_list(s["Action"])}
    assert actions == {"states:StartExecution", "sqs:SendMessage"}
    (machine_id,) = resources_of(evaluation_template, "AWS::StepFunctions::StateMachine")
    start = next(s for s in statements if "states:StartExecution" in as_list(s["Action"]))
    assert as_list(start["Resource"]) == [{"Ref": machine_id}]
    assert all("*" not in json.dumps(s["Resource"]) for s in statements)


def test_the_probe_failure_rate_alarm_sits_at_the_slo(synth, evaluation_template):
    from fmquality.production.probes import FAILURE_RATE_METRIC, PROBE_TRIGGER
    from infra.constructs import probes

    # The alarm watches the metric Aggregate publishes, for the trigger the schedule sends.
    assert (probes.FAILURE_RATE_METRIC, probes.PROBE_TRIGGER) == (FAILURE_RATE_METRIC, PROBE_TRIGGER)
    (alarm,) = [a["Properties"] for a in resources_of(evaluation_template, "AWS::CloudWatch::Alarm").values()
                if a["Properties"].get("MetricName") == "ProbeFailureRate"]
    assert alarm["Threshold"] == synth.config.probes.failure_rate_slo_percent == 0.5
    assert alarm["ComparisonOperator"] == "GreaterThanThreshold"
    assert alarm["Namespace"] == "MangaAssist/Evaluation" and alarm["Statistic"] == "Maximum"
    assert alarm["AlarmActions"], "the alarm notifies the alerts topic"


def test_prepare_gets_the_replay_budget_and_reads_captured_turns_only(synth, evaluation_template):
    _, prepare = functions_by_handler_env(evaluation_template)["prepare"]
    variables = prepare["Properties"]["Environment"]["Variables"]
    assert float(variables["REPLAY_BUDGET_USD"]) == synth.config.replay_budget_usd
    statements = policy_statements_for_function(evaluation_template, prepare)
    listing = next(s for s in statements if s.get("Sid") == "ListCapturedTurns")
    assert listing["Action"] == "s3:ListBucket"
    assert listing["Condition"] == {"StringLike": {"s3:prefix": ["production/turns/*"]}}
    reading = next(s for s in statements if s.get("Sid") == "ReadCapturedTurns")
    assert reading["Action"] == "s3:GetObject" and flatten_join(reading["Resource"]).endswith("/production/turns/*")


@pytest.mark.parametrize(("change", "field"), [({"schedule_expression": "every day"}, "schedule_expression"),
                                               ({"dataset_key": "probes.jsonl"}, "dataset_key"),
                                               ({"failure_rate_slo_percent": -1}, "failure_rate_slo_percent")])
def test_a_bad_probes_config_is_named(change, field):
    from infra.config import ConfigError, load_config, parse_config

    raw = load_config().model_dump(mode="json")
    raw["probes"].update(change)
    with pytest.raises(ConfigError, match=field):
        parse_config(raw)
