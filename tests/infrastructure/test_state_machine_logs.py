"""The state machine's logs carry execution data (test cases, shoppers' turns, answers) only when the
configuration opts in (``state_machine_logs`` in cdk.json); the level is configurable too."""

from __future__ import annotations

import copy

import pytest

from infra.config import ConfigError, parse_config, read_cdk_json_context
from tests.infrastructure.conftest import resources_of
from tests.infrastructure.variants import metadata_entries, synth_variant


def _logging(template) -> dict:
    (machine,) = resources_of(template, "AWS::StepFunctions::StateMachine").values()
    return machine["Properties"]["LoggingConfiguration"]


def test_cdk_json_keeps_execution_data_out_of_the_logs():
    raw = read_cdk_json_context()
    assert raw["state_machine_logs"] == {"level": "ALL", "include_execution_data": False}
    defaults = parse_config({"env_name": "test", "judge_model_id": "anthropic.claude-haiku-4-5-20251001-v1:0"})
    assert defaults.state_machine_logs.include_execution_data is False
    assert defaults.state_machine_logs.level == "ALL"


def test_by_default_every_event_is_logged_without_its_data(evaluation_template):
    logging = _logging(evaluation_template)
    assert logging["Level"] == "ALL"
    assert logging["IncludeExecutionData"] is False
    (log_group_id,) = [k for k, v in resources_of(evaluation_template, "AWS::Logs::LogGroup").items()
                       if "vendedlogs/states" in str(v["Properties"].get("LogGroupName"))]
    (destination,) = logging["Destinations"]
    assert destination["CloudWatchLogsLogGroup"]["LogGroupArn"] == {"Fn::GetAtt": [log_group_id, "Arn"]}


@pytest.fixture(scope="module")
def opted_in(tmp_path_factory):
    """Execution data switched on, and a level below ALL (which cdk-nag's SF1 must see acknowledged)."""
    return synth_variant(tmp_path_factory.mktemp("cdk.logs"),
                         state_machine_logs={"level": "ERROR", "include_execution_data": True})


def test_execution_data_and_level_follow_the_configuration(opted_in):
    logging = _logging(opted_in.evaluation)
    assert logging["Level"] == "ERROR"
    assert logging["IncludeExecutionData"] is True


def test_a_level_below_all_is_acknowledged_with_the_configuration_as_its_reason(opted_in):
    acknowledged = {rule: reason
                    for path, data in metadata_entries(opted_in.evaluation_metadata, "aws:cdk:acknowledged-rules")
                    if path.endswith("/Evaluation/StateMachine")
                    for rule, reason in data.items()}
    (reason,) = [reason for rule, reason in acknowledged.items() if "AwsSolutions-SF1" in rule]
    assert "state_machine_logs.level = ERROR" in reason


@pytest.mark.parametrize("logs, key", [
    ({"level": "OFF", "include_execution_data": True}, "state_machine_logs"),
    ({"level": "DEBUG"}, "state_machine_logs.level"),
    ({"include_execution_data": "sometimes"}, "state_machine_logs.include_execution_data"),
    ({"level": "ALL", "with_data": True}, "state_machine_logs.with_data"),
])
def test_bad_log_settings_stop_the_synth_and_name_the_key(logs, key):
    raw = copy.deepcopy(read_cdk_json_context())
    raw["state_machine_logs"] = logs
    with pytest.raises(ConfigError, match=f"fmquality.{key}"):
        parse_config(raw)
