"""Combined judging on AWS (issue 19): the synthesized state machine scores a run in its judge mode,
combined included (one ScoreCase call per item), and the Map's concurrency is derived per mode."""

from __future__ import annotations

import pytest

from infra.config import JUDGE_MODES, parse_config

from .conftest import as_list, flatten_join, functions_by_handler_env, policy_statements_for_function, resources_of

BASE = {"env_name": "test", "judge_model_id": "anthropic.claude-haiku-4-5-20251001-v1:0"}


def _processor(definition: dict) -> dict:
    return definition["States"]["EvaluateItems"]["ItemProcessor"]["States"]


# ---- the definition ---------------------------------------------------------------------------


def test_the_run_judge_mode_reaches_every_item(definition):
    assert definition["States"]["Prepare"]["ResultSelector"]["judge_mode.$"] == "$.Payload.judge_mode"
    assert definition["States"]["EvaluateItems"]["ItemSelector"]["judge_mode.$"] == "$.prepare.judge_mode"


def test_items_choose_their_scoring_path_by_the_run_judge_mode(definition):
    states = _processor(definition)
    # Both ways into scoring (recorded answers, a generated one) go through the choice.
    assert states["NeedsGeneration"]["Choices"][0]["Next"] == "ChooseJudgeMode"
    assert states["GenerationSucceeded"]["Default"] == "ChooseJudgeMode"
    choice = states["ChooseJudgeMode"]
    assert choice["Type"] == "Choice"
    assert choice["Choices"] == [{"Variable": "$.judge_mode", "StringEquals": "combined", "Next": "ScoreCase"}]
    assert choice["Default"] == "ScoreDimensions"  # per_dimension, and anything unexpected


def test_score_case_records_the_item_itself_and_ends_its_branch(definition):
    states = _processor(definition)
    task = states["ScoreCase"]
    assert task["Type"] == "Task" and task["Resource"] == "arn:aws:states:::lambda:invoke"
    assert task["Parameters"] == {"FunctionName": "${ScoreCaseFunctionArn}", "Payload.$": "$"}
    assert task["OutputPath"] == "$.Payload"
    # One task per combined item: ScoreCase weighs and records; the Parallel's list still goes to Composite.
    assert task.get("End") is True and "Next" not in task
    assert states["ScoreDimensions"]["Next"] == "Composite"
    assert states["Composite"]["Parameters"]["Payload"]["scores.$"] == "$.scores"


def test_score_case_retries_and_catches_as_the_scorers_do(definition):
    states = _processor(definition)
    task = states["ScoreCase"]
    branch = states["ScoreDimensions"]["Branches"][0]
    assert task["Retry"] == branch["States"][branch["StartAt"]]["Retry"]
    (retrier,) = task["Retry"]
    assert "JudgeThrottled" in retrier["ErrorEquals"] and retrier["JitterStrategy"] == "FULL"
    assert retrier["BackoffRate"] > 1 and retrier["MaxAttempts"] > 1 and retrier["MaxDelaySeconds"] > 0
    # A run that cannot be done is recorded and fails the child by name; anything else (after the
    # retries) is an explicit error record, as for the Parallel.
    assert task["Catch"] == states["ScoreDimensions"]["Catch"] == [
        {"ErrorEquals": ["JudgeMisconfigured", "TargetUnavailable"], "ResultPath": "$.error", "Next": "RecordRunError"},
        {"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "RecordItemError"}]


# ---- the function -----------------------------------------------------------------------------


def test_score_case_is_wired_to_its_function(state_machine_resource, evaluation_template):
    logical_id, function = functions_by_handler_env(evaluation_template)["score_case"]
    substitutions = state_machine_resource["Properties"]["DefinitionSubstitutions"]
    assert substitutions["ScoreCaseFunctionArn"] == {"Fn::GetAtt": [logical_id, "Arn"]}
    env = function["Properties"]["Environment"]["Variables"]
    assert "DIMENSION" not in env and env["JUDGE"] == "bedrock"
    assert env["POWERTOOLS_SERVICE_NAME"] == "fmquality-score-case"


def test_score_case_has_exactly_the_scorers_judge_grant(evaluation_template):
    functions = functions_by_handler_env(evaluation_template)

    def bedrock(role: str) -> list[dict]:
        return [s for s in policy_statements_for_function(evaluation_template, functions[role][1])
                if any(a.startswith("bedrock:") for a in as_list(s["Action"]))]

    (combined,), (scorer,) = bedrock("score_case"), bedrock("relevance")
    assert as_list(combined["Action"]) == ["bedrock:InvokeModel"]
    assert ({flatten_join(r) for r in as_list(combined["Resource"])}
            == {flatten_join(r) for r in as_list(scorer["Resource"])})


def test_score_case_errors_raise_an_alarm(template, evaluation_template):
    logical_id, _ = functions_by_handler_env(evaluation_template)["score_case"]
    template.has_resource_properties("AWS::CloudWatch::Alarm", {
        "Namespace": "AWS/Lambda", "MetricName": "Errors", "Threshold": 1,
        "Dimensions": [{"Name": "FunctionName", "Value": {"Ref": logical_id}}]})


def test_the_state_machine_may_invoke_score_case(state_machine_resource, evaluation_template):
    role_id = state_machine_resource["Properties"]["RoleArn"]["Fn::GetAtt"][0]
    logical_id, _ = functions_by_handler_env(evaluation_template)["score_case"]
    statements = [s for p in resources_of(evaluation_template, "AWS::IAM::Policy").values()
                  if {"Ref": role_id} in p["Properties"]["Roles"] for s in p["Properties"]["PolicyDocument"]["Statement"]]
    invokable = {r["Fn::GetAtt"][0] for s in statements if "lambda:InvokeFunction" in as_list(s["Action"])
                 for r in as_list(s["Resource"])}
    assert logical_id in invokable


# ---- the Map's concurrency, per mode ----------------------------------------------------------


def test_prepare_gets_one_derived_concurrency_per_mode(evaluation_template, synth):
    _, prepare = functions_by_handler_env(evaluation_template)["prepare"]
    env = prepare["Properties"]["Environment"]["Variables"]
    quota = synth.config.judge_quota
    assert int(env["DEFAULT_MAX_CONCURRENCY"]) == quota.max_concurrency("per_dimension")
    assert int(env["DEFAULT_COMBINED_MAX_CONCURRENCY"]) == quota.max_concurrency("combined")
    # The shipped quota (250 rpm at 0.8, 3 s per call): 4.2 calls per item (five dimensions) -> 2 items,
    # 1 call -> 10.
    assert (quota.requests_per_minute, quota.utilization_target, quota.seconds_per_call) == (250, 0.8, 3.0)
    assert (int(env["DEFAULT_MAX_CONCURRENCY"]), int(env["DEFAULT_COMBINED_MAX_CONCURRENCY"])) == (2, 10)


def test_each_mode_derives_its_own_concurrency_from_the_quota():
    config = parse_config({**BASE, "judge_quota": {"requests_per_minute": 1000, "calls_per_case": 3.2,
                                                   "seconds_per_call": 3, "combined_seconds_per_call": 4.5}})
    # 1000 x 0.8 / 60 x 3 s / 3.2 = 12.5 -> 12; one call of 4.5 s: 60.
    assert (config.max_concurrency_for("per_dimension"), config.max_concurrency_for("combined")) == (12, 60)
    assert config.derived_max_concurrency == 12


def test_a_pinned_value_pins_both_modes_unless_combined_is_pinned_too():
    quota = {"requests_per_minute": 1000}
    pinned = parse_config({**BASE, "max_concurrency": 4, "judge_quota": quota})
    assert (pinned.max_concurrency_for("per_dimension"), pinned.max_concurrency_for("combined")) == (4, 4)
    both = parse_config({**BASE, "max_concurrency": 4, "combined_max_concurrency": 9, "judge_quota": quota})
    assert (both.max_concurrency_for("per_dimension"), both.max_concurrency_for("combined")) == (4, 9)
    combined_only = parse_config({**BASE, "combined_max_concurrency": 9, "judge_quota": quota})
    assert combined_only.max_concurrency_for("combined") == 9
    assert combined_only.max_concurrency_for("per_dimension") == combined_only.derived_max_concurrency
    neither = parse_config({**BASE, "combined_max_concurrency": None})
    assert (neither.max_concurrency_for("per_dimension"), neither.max_concurrency_for("combined")) == (10, 10)


@pytest.mark.parametrize("bad", [{"combined_calls_per_case": 2}, {"combined_seconds_per_call": 0}])
def test_a_bad_combined_figure_is_named(bad):
    from infra.config import ConfigError

    with pytest.raises(ConfigError, match=f"judge_quota.{next(iter(bad))}"):
        parse_config({**BASE, "judge_quota": {"requests_per_minute": 600, **bad}})


def test_infra_knows_the_core_judge_modes():
    from fmquality.scoring.case import JUDGE_MODES as CORE_MODES

    assert JUDGE_MODES == CORE_MODES
