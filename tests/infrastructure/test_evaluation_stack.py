"""Template assertions on the evaluation stack: properties, not counts."""

from __future__ import annotations

import json

import pytest
from aws_cdk.assertions import Capture, Match

from infra.config import DIMENSIONS

from .conftest import (
    ACCOUNT,
    REGION,
    as_list,
    flatten_join,
    functions_by_handler_env,
    policy_statements_for_function,
    resources_of,
    walk_states,
)

LAMBDA_SERVICE_ERRORS = {
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException",
}
METRICS_NAMESPACE = "MangaAssist/Evaluation"


def actions_of(statements) -> set[str]:
    return {action for s in statements for action in as_list(s["Action"])}


def statement_with(statements, action: str) -> dict:
    matches = [s for s in statements if action in as_list(s["Action"])]
    assert len(matches) == 1, f"{action}: {matches}"
    return matches[0]


# ---- Lambda functions ---------------------------------------------------------------------------


@pytest.mark.parametrize("dimension", DIMENSIONS)
def test_each_scorer_function_has_its_handler_and_environment(evaluation_template, synth, dimension):
    functions = functions_by_handler_env(evaluation_template)
    _, function = functions[dimension]
    props = function["Properties"]
    assert props["Handler"] == "handlers.score_dimension.handler"
    assert props["Architectures"] == ["arm64"]
    assert props["Runtime"] == "python3.14"
    assert props["TracingConfig"] == {"Mode": "Active"}
    env = props["Environment"]["Variables"]
    assert env["DIMENSION"] == dimension
    assert env["JUDGE"] == "bedrock"
    assert env["JUDGE_MODEL_ID"] == synth.config.judge_model_id
    assert env["POWERTOOLS_METRICS_NAMESPACE"] == METRICS_NAMESPACE
    assert env["POWERTOOLS_SERVICE_NAME"]
    assert env["LOG_LEVEL"] == synth.config.log_level
    (table_id,) = resources_of(evaluation_template, "AWS::DynamoDB::Table")
    (bus_id,) = resources_of(evaluation_template, "AWS::Events::EventBus")
    assert env["TABLE_NAME"] == {"Ref": table_id}
    assert env["EVENT_BUS_NAME"] == {"Ref": bus_id}
    assert "Ref" in env["BUCKET_NAME"]


def test_every_role_has_its_handler_and_the_common_environment(evaluation_template):
    functions = functions_by_handler_env(evaluation_template)
    assert set(functions) == {"prepare", "generate", *DIMENSIONS, "score_case", "composite", "aggregate"}
    handlers = {role: f["Properties"]["Handler"] for role, (_, f) in functions.items()}
    assert handlers["prepare"] == "handlers.prepare.handler"
    assert handlers["generate"] == "handlers.generate.handler"
    assert handlers["score_case"] == "handlers.score_case.handler"
    assert handlers["composite"] == "handlers.composite.handler"
    assert handlers["aggregate"] == "handlers.aggregate.handler"
    for _, function in functions.values():
        env = function["Properties"]["Environment"]["Variables"]
        assert {"TABLE_NAME", "BUCKET_NAME", "EVENT_BUS_NAME", "JUDGE", "JUDGE_MODEL_ID",
                "POWERTOOLS_SERVICE_NAME", "POWERTOOLS_METRICS_NAMESPACE", "LOG_LEVEL"} <= set(env)


def test_prepare_gets_the_map_defaults_from_config(evaluation_template, synth):
    _, prepare = functions_by_handler_env(evaluation_template)["prepare"]
    env = prepare["Properties"]["Environment"]["Variables"]
    assert int(env["DEFAULT_MAX_CONCURRENCY"]) == synth.config.max_concurrency
    assert float(env["DEFAULT_TOLERATED_FAILURE_PERCENTAGE"]) == synth.config.tolerated_failure_percentage


def test_the_functions_that_build_targets_never_accept_python_from_an_execution_input(evaluation_template):
    """Issue 17: the allowed kinds are set explicitly on AWS, and python: is not one of them."""
    from fmquality.targets.policy import allowed_target_kinds

    for role in ("prepare", "generate"):
        _, function = functions_by_handler_env(evaluation_template)[role]
        allowed = allowed_target_kinds(function["Properties"]["Environment"]["Variables"])
        assert "python" not in allowed and {"bedrock", "https"} <= allowed


def test_functions_use_the_powertools_layer_for_their_runtime_and_the_dependency_layer(evaluation_template, synth):
    params = evaluation_template["Parameters"]
    powertools = [k for k, v in params.items()
                  if v.get("Default") == f"/aws/service/powertools/python/arm64/python3.14/{synth.config.powertools_layer_version}"]
    assert len(powertools) == 1
    (layer_id,) = resources_of(evaluation_template, "AWS::Lambda::LayerVersion")
    for _, function in functions_by_handler_env(evaluation_template).values():
        layers = function["Properties"]["Layers"]
        assert len(layers) == 2 and {"Ref": powertools[0]} in layers and {"Ref": layer_id} in layers


def test_the_code_asset_follows_the_rubric_symlink_and_leaves_out_build_litter(synth):
    assets = [p for p in synth.outdir.glob("asset.*") if (p / "handlers").is_dir()]
    assert len(assets) == 1
    code = assets[0]
    rubric = code / "fmquality" / "config" / "data" / "mangaassist-v3.yaml"
    assert rubric.is_file() and not rubric.is_symlink()
    assert "version:" in rubric.read_text()
    for profile in ("mangaassist", "research-agent", "tool-use"):  # links to datasets/profiles/, copied whole
        copied = code / "fmquality" / "config" / "data" / "profiles" / f"{profile}.yaml"
        assert copied.is_file() and not copied.is_symlink() and "dimensions:" in copied.read_text()
    assert not list(code.rglob("*.egg-info")) and not list(code.rglob("__pycache__"))


def test_layer_is_a_placeholder_when_bundling_is_skipped(synth):
    # The tests set FMQ_SKIP_LAYER_BUNDLING=1: no network, a marked placeholder instead of pip output.
    layers = [p for p in synth.outdir.glob("asset.*") if (p / "python").is_dir()]
    assert len(layers) == 1
    assert (layers[0] / "python" / "FMQ_LAYER_PLACEHOLDER.txt").is_file()


# ---- IAM ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("dimension", DIMENSIONS)
def test_scorers_may_invoke_only_the_configured_judge_model(evaluation_template, synth, dimension):
    _, function = functions_by_handler_env(evaluation_template)[dimension]
    statements = policy_statements_for_function(evaluation_template, function)
    bedrock = [s for s in statements if any(a.startswith("bedrock:") for a in as_list(s["Action"]))]
    assert len(bedrock) == 1
    assert as_list(bedrock[0]["Action"]) == ["bedrock:InvokeModel"]
    resources = {flatten_join(r) for r in as_list(bedrock[0]["Resource"])}
    config = synth.config
    expected = {
        f"arn:<AWS::Partition>:bedrock:{region}::foundation-model/{config.foundation_model_id}"
        for region in config.foundation_model_regions
    }
    if config.is_inference_profile:
        expected.add(f"arn:<AWS::Partition>:bedrock:{REGION}:{ACCOUNT}:inference-profile/{config.judge_model_id}")
    assert resources == expected
    assert all("*" not in r.split("/")[-1] for r in resources)


def test_only_scorers_and_generate_can_call_bedrock(evaluation_template, synth):
    may_generate = bool(synth.config.generation.bedrock_generation_model_ids)
    for role, (_, function) in functions_by_handler_env(evaluation_template).items():
        actions = actions_of(policy_statements_for_function(evaluation_template, function))
        expected = role in (*DIMENSIONS, "score_case") or (role == "generate" and may_generate)
        assert any(a.startswith("bedrock:") for a in actions) == expected, role


def test_grants_follow_each_step(evaluation_template):
    functions = functions_by_handler_env(evaluation_template)

    def actions(role: str) -> set[str]:
        return actions_of(policy_statements_for_function(evaluation_template, functions[role][1]))

    tracing_and_logs = {"xray:PutTraceSegments", "xray:PutTelemetryRecords", "logs:CreateLogStream", "logs:PutLogEvents"}
    # s3:ListBucket: a replay lists its window's captured turns (prefix-conditioned, test_probes.py);
    # s3:GetObjectVersion: a Bedrock judge reads a versioned bundle's model id (judge is not generator).
    assert actions("prepare") - tracing_and_logs == {
        "s3:GetObject", "s3:GetObjectVersion", "s3:ListBucket", "s3:PutObject", "dynamodb:GetItem",
        "dynamodb:PutItem", "dynamodb:Query", "ssm:GetParameter"}
    assert actions("composite") - tracing_and_logs == {"s3:GetObject", "dynamodb:PutItem"}
    # s3:PutObject: a score cut for the state is stored whole under runs/*/judge/* (test_scorers_store_...).
    assert actions("relevance") - tracing_and_logs == {"s3:GetObject", "s3:PutObject", "dynamodb:GetItem",
                                                       "dynamodb:PutItem", "bedrock:InvokeModel"}
    assert actions("score_case") == actions("relevance")  # the scorers' work in one invocation, their grants
    assert actions("aggregate") - tracing_and_logs == {
        "s3:GetObject", "s3:PutObject", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem",
        "dynamodb:Query", "cloudwatch:PutMetricData", "events:PutEvents"}
    # Nothing may write outside runs/; only Prepare reads datasets/.
    for role, (_, function) in functions.items():
        for s in policy_statements_for_function(evaluation_template, function):
            for resource in map(flatten_join, as_list(s["Resource"])):
                if "s3:PutObject" in as_list(s["Action"]):
                    allowed = ("/runs/*/judge/*",) if role in (*DIMENSIONS, "score_case") else ("/runs/*",)
                    assert resource.endswith(allowed), (role, resource)
                if resource.endswith("/datasets/*"):
                    assert role == "prepare"


def test_scorers_store_cut_scores_only_under_runs_judge_write_only(evaluation_template):
    """Issue 31 item 5: each scorer and ScoreCase may put objects exactly at <data bucket>/runs/*/judge/*
    (a score whose copy in the state was cut, stored whole: run.layout.score_for_state), nothing more."""
    functions = functions_by_handler_env(evaluation_template)
    bucket_arn = None
    for role in (*DIMENSIONS, "score_case"):
        statements = policy_statements_for_function(evaluation_template, functions[role][1])
        writes = [s for s in statements if "s3:PutObject" in as_list(s["Action"])]
        assert len(writes) == 1, (role, writes)
        (write,) = writes
        assert write["Sid"] == "WriteJudgeTraces" and write["Effect"] == "Allow" and "Condition" not in write
        assert as_list(write["Action"]) == ["s3:PutObject"]
        (resource,) = as_list(write["Resource"])
        bucket, _, key = flatten_join(resource).partition(".Arn>")
        assert key == "/runs/*/judge/*", (role, resource)
        bucket_arn = bucket_arn or bucket
        assert bucket == bucket_arn  # the one data bucket
    data_bucket = next(lid for lid, b in resources_of(evaluation_template, "AWS::S3::Bucket").items()
                       if b["Properties"].get("VersioningConfiguration") and "LoggingConfiguration" in b["Properties"])
    assert bucket_arn == f"<{data_bucket}"
    # Composite, Generate and the others store no judge trace.
    for role in ("composite", "generate"):
        resources = {flatten_join(r) for s in policy_statements_for_function(evaluation_template, functions[role][1])
                     for r in as_list(s["Resource"])}
        assert not any(r.endswith("/judge/*") for r in resources), role


def test_metrics_permission_is_limited_to_the_project_namespace(evaluation_template):
    _, aggregate = functions_by_handler_env(evaluation_template)["aggregate"]
    statement = statement_with(policy_statements_for_function(evaluation_template, aggregate), "cloudwatch:PutMetricData")
    assert statement["Condition"] == {"StringEquals": {"cloudwatch:namespace": METRICS_NAMESPACE}}
    events = statement_with(policy_statements_for_function(evaluation_template, aggregate), "events:PutEvents")
    (bus_id,) = resources_of(evaluation_template, "AWS::Events::EventBus")
    assert events["Resource"] == {"Fn::GetAtt": [bus_id, "Arn"]}


def test_no_statement_grants_every_action(evaluation_template):
    for policy in resources_of(evaluation_template, "AWS::IAM::Policy").values():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            for action in as_list(statement["Action"]):
                assert action != "*" and not action.endswith(":*"), action


def test_state_machine_role_can_run_its_distributed_map(evaluation_template, synth, state_machine_resource):
    role_id = state_machine_resource["Properties"]["RoleArn"]["Fn::GetAtt"][0]
    statements = [s for p in resources_of(evaluation_template, "AWS::IAM::Policy").values()
                  if {"Ref": role_id} in p["Properties"]["Roles"]
                  for s in p["Properties"]["PolicyDocument"]["Statement"]]
    name = synth.state_machine_name
    start = statement_with(statements, "states:StartExecution")
    assert flatten_join(start["Resource"]) == f"arn:<AWS::Partition>:states:{REGION}:{ACCOUNT}:stateMachine:{name}"
    describe = statement_with(statements, "states:DescribeExecution")
    assert "states:StopExecution" in as_list(describe["Action"])
    executions = f"arn:<AWS::Partition>:states:{REGION}:{ACCOUNT}:execution:{name}"
    assert {flatten_join(r) for r in as_list(describe["Resource"])} == {f"{executions}:*", f"{executions}/*"}
    invoke = statement_with(statements, "lambda:InvokeFunction")
    function_ids = {logical for logical, _ in functions_by_handler_env(evaluation_template).values()}
    assert {r["Fn::GetAtt"][0] for r in as_list(invoke["Resource"])} == function_ids
    reader = next(s for s in statements if s.get("Sid") == "ItemReaderReadsRunItems")
    assert flatten_join(reader["Resource"]).endswith("/runs/*")
    assert state_machine_resource["Properties"]["StateMachineName"] == name


# ---- state machine ------------------------------------------------------------------------------


def test_map_is_distributed_with_an_item_reader_over_the_prepared_items(definition):
    map_state = definition["States"]["EvaluateItems"]
    assert map_state["Type"] == "Map"
    # STANDARD: a child's worst case is past EXPRESS's five minutes (test_child_budget.py).
    assert map_state["ItemProcessor"]["ProcessorConfig"] == {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"}
    reader = map_state["ItemReader"]
    assert reader["Resource"] == "arn:aws:states:::s3:getObject"
    assert reader["ReaderConfig"] == {"InputType": "JSON"}
    assert reader["Parameters"] == {"Bucket": "${DataBucketName}", "Key.$": "$.prepare.items_key"}
    assert map_state["MaxConcurrencyPath"] == "$.prepare.max_concurrency"
    assert map_state["ToleratedFailurePercentagePath"] == "$.prepare.tolerated_failure_percentage"
    # items.json holds one {"arm", "case"} element per case and arm.
    assert map_state["ItemSelector"]["item.$"] == "$$.Map.Item.Value.case"
    assert map_state["ItemSelector"]["arm.$"] == "$$.Map.Item.Value.arm"
    assert map_state["ResultPath"] is None  # full results live in DynamoDB/S3, not in the payload
    # child outputs go to S3 under the run, so the Map's own output stays small at any dataset size
    assert map_state["ResultWriter"]["Resource"] == "arn:aws:states:::s3:putObject"
    assert map_state["ResultWriter"]["Parameters"]["Bucket"] == "${DataBucketName}"
    assert map_state["ResultWriter"]["Parameters"]["Prefix"].startswith("runs/")


def _reachable(states: dict, start: str) -> list[str]:
    """States reachable from ``start`` (Next, Choice targets, Default, Catch), in discovery order."""
    seen: list[str] = []
    todo = [start]
    while todo:
        name = todo.pop(0)
        if name in seen or name not in states:
            continue
        seen.append(name)
        state = states[name]
        todo += [state.get("Next"), state.get("Default")]
        todo += [c.get("Next") for c in state.get("Choices", [])] + [c["Next"] for c in state.get("Catch", [])]
    return seen


def test_each_item_may_generate_its_answer_before_scoring(definition):
    processor = definition["States"]["EvaluateItems"]["ItemProcessor"]
    states = processor["States"]
    generate = [name for name, s in states.items()
                if s.get("Type") == "Task" and s["Parameters"].get("FunctionName") == "${GenerateFunctionArn}"]
    assert generate, "no task invokes the Generate function"
    before_scoring = _reachable(states, processor["StartAt"])
    assert before_scoring.index(generate[0]) < before_scoring.index("ScoreDimensions")
    assert states[generate[0]]["Resource"] == "arn:aws:states:::lambda:invoke"
    assert states[generate[0]]["Parameters"]["Payload.$"] == "$"


def test_each_item_runs_four_scorers_in_parallel_then_composite(definition):
    processor = definition["States"]["EvaluateItems"]["ItemProcessor"]
    parallel = processor["States"]["ScoreDimensions"]
    assert parallel["Type"] == "Parallel"
    functions = sorted(branch["States"][branch["StartAt"]]["Parameters"]["FunctionName"] for branch in parallel["Branches"])
    assert functions == sorted(["${RelevanceFunctionArn}", "${FactualAccuracyFunctionArn}",
                                "${ConsistencyFunctionArn}", "${FluencyFunctionArn}", "${SafetyFunctionArn}"])
    assert parallel["ResultPath"] == "$.scores"
    composite = processor["States"][parallel["Next"]]
    assert composite["Parameters"]["FunctionName"] == "${CompositeFunctionArn}"
    assert composite["Parameters"]["Payload"]["scores.$"] == "$.scores"


def test_failures_are_caught_into_an_explicit_error_record(definition):
    processor = definition["States"]["EvaluateItems"]["ItemProcessor"]["States"]
    catch_all = {"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "RecordItemError"}
    assert processor["Composite"]["Catch"] == [catch_all]
    # The judge's scorers first take a run that cannot be done (recorded, then the child fails by name).
    assert processor["ScoreDimensions"]["Catch"] == [{"ErrorEquals": ["JudgeMisconfigured", "TargetUnavailable"], "ResultPath": "$.error", "Next": "RecordRunError"}, catch_all]
    assert processor["ItemRunNotDone"] == {"Type": "Fail", "Comment": processor["ItemRunNotDone"]["Comment"],
                                           "ErrorPath": "$.error.Error", "CausePath": "$.error.Cause"}
    record = processor["RecordItemError"]
    assert record["Parameters"]["FunctionName"] == "${CompositeFunctionArn}"
    assert record["Parameters"]["Payload"]["mode"] == "error"
    assert record["Parameters"]["Payload"]["error.$"] == "$.error"


def test_every_task_retries_with_backoff_and_full_jitter(definition):
    tasks = [(n, s) for n, s in walk_states(definition["States"]) if s["Type"] == "Task"]
    assert len(tasks) >= 8
    for name, task in tasks:
        assert task.get("Retry"), name
        for retrier in task["Retry"]:
            assert retrier["JitterStrategy"] == "FULL", name
            assert retrier["BackoffRate"] > 1 and retrier["MaxDelaySeconds"] > 0 and retrier["MaxAttempts"] > 1, name
            assert LAMBDA_SERVICE_ERRORS <= set(retrier["ErrorEquals"]), name


def test_judge_throttling_is_retried_on_every_judge_call(definition):
    processor = definition["States"]["EvaluateItems"]["ItemProcessor"]["States"]
    for branch in processor["ScoreDimensions"]["Branches"]:
        task = branch["States"][branch["StartAt"]]
        assert any("JudgeThrottled" in r["ErrorEquals"] for r in task["Retry"])
        assert task["OutputPath"] == "$.Payload"


def test_run_ends_in_aggregate_and_a_gate(definition):
    aggregate = definition["States"]["Aggregate"]
    assert aggregate["Parameters"]["FunctionName"] == "${AggregateFunctionArn}"
    assert aggregate["Parameters"]["Payload"]["execution_arn.$"] == "$$.Execution.Id"
    assert aggregate["ResultPath"] == "$.aggregate"
    assert definition["States"][aggregate["Next"]]["Type"] == "Choice"


def test_state_machine_logs_and_traces(template, evaluation_template):
    # Level and execution data follow config.state_machine_logs: test_state_machine_logs.py.
    template.has_resource_properties(
        "AWS::StepFunctions::StateMachine",
        {
            "StateMachineType": "STANDARD",
            "LoggingConfiguration": Match.object_like({"Destinations": Match.any_value()}),
            "TracingConfiguration": {"Enabled": True},
        },
    )


# ---- storage ------------------------------------------------------------------------------------


def test_table_serves_the_three_reads_and_expires_cached_verdicts(template):
    template.has_resource_properties(
        "AWS::DynamoDB::Table",
        {
            "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
            "BillingMode": "PAY_PER_REQUEST",
            "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
            "SSESpecification": {"SSEEnabled": True},
            "TimeToLiveSpecification": {"AttributeName": "expires_at", "Enabled": True},
            "GlobalSecondaryIndexes": [
                Match.object_like({
                    "IndexName": "gsi1",
                    "KeySchema": [{"AttributeName": "gsi1pk", "KeyType": "HASH"},
                                  {"AttributeName": "gsi1sk", "KeyType": "RANGE"}],
                })
            ],
        },
    )


def test_data_bucket_is_private_encrypted_versioned_logged_and_expires_runs(template, synth):
    log_bucket = Capture()
    template.has_resource_properties(
        "AWS::S3::Bucket",
        {
            "PublicAccessBlockConfiguration": {"BlockPublicAcls": True, "BlockPublicPolicy": True,
                                               "IgnorePublicAcls": True, "RestrictPublicBuckets": True},
            "BucketEncryption": {"ServerSideEncryptionConfiguration": [
                {"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]},
            "VersioningConfiguration": {"Status": "Enabled"},
            "LoggingConfiguration": {"DestinationBucketName": {"Ref": log_bucket}, "LogFilePrefix": Match.any_value()},
            "LifecycleConfiguration": {"Rules": Match.array_with([
                Match.object_like({"Prefix": "runs/", "ExpirationInDays": synth.config.run_artifacts_retention_days,
                                   "Status": "Enabled"}),
                Match.object_like({"NoncurrentVersionExpiration": Match.any_value()}),
            ])},
        },
    )
    assert log_bucket.as_string()


def test_every_bucket_refuses_plain_http(evaluation_template):
    buckets = set(resources_of(evaluation_template, "AWS::S3::Bucket"))
    secured = set()
    for policy in resources_of(evaluation_template, "AWS::S3::BucketPolicy").values():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            if statement["Effect"] == "Deny" and statement.get("Condition") == {"Bool": {"aws:SecureTransport": "false"}}:
                secured.add(policy["Properties"]["Bucket"]["Ref"])
    assert secured == buckets


# ---- monitoring ---------------------------------------------------------------------------------


def test_dimension_alarms_follow_the_configuration(template, synth):
    rules = synth.config.alarms.effective_dimension_alarms()
    assert len({(r.intent, r.dimension) for r in rules}) == 8 * 5  # every intent and dimension
    for rule in rules:
        template.has_resource_properties(
            "AWS::CloudWatch::Alarm",
            {
                "Namespace": METRICS_NAMESPACE,
                "MetricName": f"DimensionScore_{rule.dimension}",
                "Dimensions": [{"Name": "Intent", "Value": rule.intent}],
                "Threshold": rule.threshold,
                "ComparisonOperator": "LessThanThreshold",
                "EvaluationPeriods": rule.runs,
                "DatapointsToAlarm": rule.runs,
                "Period": rule.period_hours * 3600,
                "Statistic": "Average",
                "TreatMissingData": "ignore",
                "AlarmActions": [{"Ref": Match.any_value()}],
            },
        )


def test_required_quality_alarms(template):
    """The issue's two named rules, whatever cdk.json says later."""
    template.has_resource_properties("AWS::CloudWatch::Alarm", {
        "MetricName": "DimensionScore_relevance", "Dimensions": [{"Name": "Intent", "Value": "recommendation"}],
        "Threshold": 0.75, "EvaluationPeriods": 3, "DatapointsToAlarm": 3, "ComparisonOperator": "LessThanThreshold"})
    template.has_resource_properties("AWS::CloudWatch::Alarm", {
        "MetricName": "DimensionScore_factual_accuracy", "Dimensions": [{"Name": "Intent", "Value": "faq"}],
        "Threshold": 0.85, "EvaluationPeriods": 1, "ComparisonOperator": "LessThanThreshold"})


def test_run_level_and_operational_alarms(template, evaluation_template, synth, state_machine_resource):
    alarms = synth.config.alarms
    template.has_resource_properties("AWS::CloudWatch::Alarm", {
        "Namespace": METRICS_NAMESPACE, "MetricName": "BatchPassRate", "Threshold": alarms.batch_pass_rate_threshold,
        "ComparisonOperator": "LessThanThreshold", "EvaluationPeriods": 1, "Dimensions": Match.absent()})
    template.has_resource_properties("AWS::CloudWatch::Alarm", {
        "Namespace": METRICS_NAMESPACE, "MetricName": "UnscoredCases", "Threshold": alarms.unscored_cases_threshold,
        "ComparisonOperator": "GreaterThanThreshold", "Dimensions": Match.absent()})
    template.has_resource_properties("AWS::CloudWatch::Alarm", {
        "Namespace": METRICS_NAMESPACE, "MetricName": "JudgeThrottles", "Statistic": "Sum",
        "Threshold": alarms.judge_throttles_threshold, "Period": 300, "Dimensions": Match.absent()})
    (sm_id,) = resources_of(evaluation_template, "AWS::StepFunctions::StateMachine")
    for metric in ("ExecutionsFailed", "ExecutionsTimedOut"):
        template.has_resource_properties("AWS::CloudWatch::Alarm", {
            "Namespace": "AWS/States", "MetricName": metric, "Threshold": 1, "Period": 300,
            "ComparisonOperator": "GreaterThanOrEqualToThreshold",
            "Dimensions": [{"Name": "StateMachineArn", "Value": {"Ref": sm_id}}]})
    for logical_id, _ in functions_by_handler_env(evaluation_template).values():
        template.has_resource_properties("AWS::CloudWatch::Alarm", {
            "Namespace": "AWS/Lambda", "MetricName": "Errors", "Threshold": 1,
            "Dimensions": [{"Name": "FunctionName", "Value": {"Ref": logical_id}}]})


def test_every_alarm_notifies_the_alerts_topic(evaluation_template):
    (topic_id,) = resources_of(evaluation_template, "AWS::SNS::Topic")
    for alarm in resources_of(evaluation_template, "AWS::CloudWatch::Alarm").values():
        assert alarm["Properties"]["AlarmActions"] == [{"Ref": topic_id}]


def test_alerts_topic_is_encrypted_and_ssl_only(template, evaluation_template):
    template.has_resource_properties("AWS::SNS::Topic", {"KmsMasterKeyId": Match.any_value()})
    template.has_resource_properties("AWS::SNS::TopicPolicy", {"PolicyDocument": {"Statement": Match.array_with([
        Match.object_like({"Effect": "Deny", "Condition": {"Bool": {"aws:SecureTransport": "false"}}})])}})
    template.has_resource_properties("AWS::KMS::Key", {"EnableKeyRotation": True})


def test_dashboard_charts_the_review_metrics(evaluation_template):
    (dashboard,) = resources_of(evaluation_template, "AWS::CloudWatch::Dashboard").values()
    body = json.dumps(dashboard["Properties"]["DashboardBody"])
    for metric in ("BatchPassRate", "UnscoredCases", "CompositeScore", "JudgeCalls", "JudgeInputTokens",
                   "JudgeOutputTokens", "ExecutionTime", *[f"BatchAvg_{d}" for d in DIMENSIONS],
                   *[f"DimensionScore_{d}" for d in DIMENSIONS]):
        assert metric in body, metric


# ---- triggers -----------------------------------------------------------------------------------


def test_no_weekly_golden_run_by_default_the_weekly_run_is_the_production_sample(evaluation_template, synth):
    assert synth.config.schedule.enabled is False and synth.config.production_watch.enabled is True
    (golden,) = [r for r in resources_of(evaluation_template, "AWS::Events::Rule").values()
                 if "ScheduleExpression" in r["Properties"]]
    # Kept, disabled, so an operator can turn a weekly golden run on without a deployment.
    assert golden["Properties"]["State"] == "DISABLED"
    rendered = flatten_join(golden["Properties"]["Targets"][0]["Input"])
    assert '"trigger":"schedule"' in rendered and f"/{synth.config.scheduled_dataset_key}" in rendered


@pytest.mark.parametrize("detail_type", ["PromptVersionPublished", "ModelVersionChanged", "KnowledgeBaseRefreshed"])
def test_change_events_on_the_project_bus_start_runs_with_the_event_as_candidate(template, evaluation_template, synth, detail_type):
    (bus_id,) = resources_of(evaluation_template, "AWS::Events::EventBus")
    (sm_id,) = resources_of(evaluation_template, "AWS::StepFunctions::StateMachine")
    transformer = Capture()
    template.has_resource_properties("AWS::Events::Rule", {
        "EventBusName": {"Ref": bus_id},
        "EventPattern": {"source": [synth.config.release_event_source], "detail-type": [detail_type]},
        "Targets": [Match.object_like({"Arn": {"Ref": sm_id}, "InputTransformer": transformer})],
    })
    paths = transformer.as_object()["InputPathsMap"]
    assert "$.detail" in paths.values()
    template_text = flatten_join(transformer.as_object()["InputTemplate"])
    assert f'"trigger":"event:{detail_type}"' in template_text
    assert synth.config.golden_dataset_key in template_text


def test_failed_executions_notify_the_topic(template, evaluation_template):
    (sm_id,) = resources_of(evaluation_template, "AWS::StepFunctions::StateMachine")
    (topic_id,) = resources_of(evaluation_template, "AWS::SNS::Topic")
    template.has_resource_properties("AWS::Events::Rule", {
        "EventPattern": {
            "source": ["aws.states"],
            "detail-type": ["Step Functions Execution Status Change"],
            "detail": {"status": ["FAILED", "TIMED_OUT", "ABORTED"], "stateMachineArn": [{"Ref": sm_id}]},
        },
        "Targets": [Match.object_like({"Arn": {"Ref": topic_id}})],
    })
