"""Answer generation in the deployed gate: the Generate function and its grants, the production-target
parameter, the versioned bundle bucket, and the target/control every caller passes."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from infra.config import ConfigError, parse_config

from .conftest import (
    ACCOUNT,
    REGION,
    as_list,
    flatten_join,
    functions_by_handler_env,
    policy_statements_for_function,
    resources_of,
)

TRACING_AND_LOGS = {"xray:PutTraceSegments", "xray:PutTelemetryRecords", "logs:CreateLogStream", "logs:PutLogEvents"}
BUCKET = "data-bucket"  # stands in for the data bucket's Ref when rendering inputs
PARAMETER = "/mangaassist/dev/production-target"


def _parameter_arn(template) -> str:
    """The created parameter's ARN as the grants read it (its name comes in through a Ref)."""
    (parameter_id,) = resources_of(template, "AWS::SSM::Parameter")
    assert template["Resources"][parameter_id]["Properties"]["Name"] == PARAMETER
    return f"arn:<AWS::Partition>:ssm:{REGION}:{ACCOUNT}:parameter<{parameter_id}>"


def _data_bucket_id(template) -> str:
    (bucket_id,) = [k for k in resources_of(template, "AWS::S3::Bucket") if "DataBucket" in k]
    return bucket_id


def grants(template, role: str) -> dict[frozenset[str], set[str]]:
    """Action set -> resources (as readable strings) of a function's role, tracing and logs left out."""
    _, function = functions_by_handler_env(template)[role]
    out: dict[frozenset[str], set[str]] = {}
    for statement in policy_statements_for_function(template, function):
        actions = frozenset(as_list(statement["Action"]))
        if actions <= TRACING_AND_LOGS:
            continue
        out.setdefault(actions, set()).update(flatten_join(r) for r in as_list(statement["Resource"]))
    return out


def render_input(value: Any, refs: dict[str, str], paths: dict[str, Any]) -> Any:
    """What EventBridge delivers: the InputTemplate with CloudFormation tokens resolved (``refs``) and
    each <variable> replaced by the event's value at its path: inside a JSON string the raw text,
    elsewhere the value as JSON."""
    if isinstance(value, dict) and "Fn::Join" in value:
        text = "".join(p if isinstance(p, str) else refs[p["Ref"]] for p in value["Fn::Join"][1])
    else:
        text = value
    out, in_string, i = [], False, 0
    while i < len(text):
        char = text[i]
        if char == "\\" and in_string:
            out.append(text[i:i + 2])
            i += 2
            continue
        if char == '"':
            in_string = not in_string
        match = re.match(r"<([A-Za-z0-9_.\-]+)>", text[i:]) if char == "<" else None
        if match and match.group(1) in paths:
            variable = paths[match.group(1)]
            out.append(json.dumps(variable)[1:-1] if in_string else json.dumps(variable))
            i += match.end()
            continue
        out.append(char)
        i += 1
    return json.loads("".join(out))


def _lookup(event: dict, path: str) -> Any:
    node: Any = event
    for part in path.removeprefix("$.").split("."):
        node = node[part]
    return node


def started_run_input(template, detail_type: str, event: dict) -> dict:
    (rule,) = [r for r in resources_of(template, "AWS::Events::Rule").values()
               if r["Properties"].get("EventPattern", {}).get("detail-type") == [detail_type]]
    transformer = rule["Properties"]["Targets"][0]["InputTransformer"]
    paths = {name: _lookup(event, path) for name, path in transformer["InputPathsMap"].items()}
    return render_input(transformer["InputTemplate"], {_data_bucket_id(template): BUCKET}, paths)


def release_event(detail_type: str, detail: dict) -> dict:
    return {"id": "ev-1", "source": "mangaassist.release", "detail-type": detail_type, "detail": detail}


# ---- the Generate function ----------------------------------------------------------------------


def test_generate_function_runs_the_shared_code_with_its_handler(evaluation_template):
    functions = functions_by_handler_env(evaluation_template)
    _, generate = functions["generate"]
    props = generate["Properties"]
    assert props["Handler"] == "handlers.generate.handler"
    assert props["Runtime"] == "python3.14" and props["TracingConfig"] == {"Mode": "Active"}
    # the ONE code asset: the same object as every other function
    codes = {json.dumps(f["Properties"]["Code"], sort_keys=True) for _, f in functions.values()}
    assert len(codes) == 1
    env = props["Environment"]["Variables"]
    assert env["PRODUCTION_TARGET_PARAMETER"] == PARAMETER
    assert env["BUNDLE_PREFIX"] == "prompt-bundles/"
    # what `fmquality doctor` reads to check the generation models in the deployed region
    assert env["GENERATION_MODEL_IDS"] == "us.anthropic.claude-sonnet-4-5-20250929-v1:0"


def test_generate_role_has_exactly_the_narrow_grants(evaluation_template, synth):
    bucket = f"<{_data_bucket_id(evaluation_template)}.Arn>"
    config = synth.config
    # The shipped allow-list: one cross-region profile (the default generation model, not the judge's).
    assert config.generation.bedrock_generation_model_ids == ["us.anthropic.claude-sonnet-4-5-20250929-v1:0"]
    models = {f"arn:<AWS::Partition>:bedrock:{region}::foundation-model/anthropic.claude-sonnet-4-5-20250929-v1:0"
              for region in ("us-east-1", "us-east-2", "us-west-2")}
    models.add(f"arn:<AWS::Partition>:bedrock:{REGION}:{ACCOUNT}:inference-profile/us.anthropic.claude-sonnet-4-5-20250929-v1:0")
    assert grants(evaluation_template, "generate") == {
        frozenset({"s3:GetObject", "s3:GetObjectVersion"}): {f"{bucket}/prompt-bundles/*"},
        frozenset({"s3:GetObject"}): {f"{bucket}/runs/*"},
        frozenset({"ssm:GetParameter"}): {_parameter_arn(evaluation_template)},
        frozenset({"bedrock:InvokeModel"}): models,
    }


def test_no_data_action_of_generate_or_prepare_has_a_wildcard_resource(evaluation_template):
    for role in ("generate", "prepare"):
        for actions, resources in grants(evaluation_template, role).items():
            assert "*" not in resources, (role, actions)
            for resource in resources:
                # a wildcard only as a key-prefix suffix of the data bucket (production/turns/*: a replay)
                assert "*" not in resource or re.search(r"\.Arn>/[a-z\-]+(/[a-z\-]+)*/\*$", resource), (role, resource)


def test_prepare_resolves_the_production_parameter_only(evaluation_template):
    prepare = grants(evaluation_template, "prepare")
    assert prepare[frozenset({"ssm:GetParameter"})] == {_parameter_arn(evaluation_template)}
    _, function = functions_by_handler_env(evaluation_template)["prepare"]
    env = function["Properties"]["Environment"]["Variables"]
    assert env["PRODUCTION_TARGET_PARAMETER"] == PARAMETER
    assert int(env["DEFAULT_TARGET_MAX_CONCURRENCY"]) == 10


@pytest.fixture(scope="module")
def fully_configured(synth):
    """The Generate role of a deployment that lists every kind of target (a small stack: the whole app
    would cost seconds more), with the production parameter managed elsewhere."""
    import aws_cdk as cdk
    from aws_cdk import aws_events as events
    from aws_cdk.assertions import Template

    import app as cdk_app
    from infra.constructs.production_target import ProductionTarget
    from infra.constructs.evaluation_functions import EvaluationFunctions
    from infra.constructs.storage import Storage

    raw = {**json.loads(synth.config.model_dump_json()), "generation": {
        "production_target_parameter": "/chatbot/prod/target",
        "create_production_parameter": False,
        "bundle_prefix": "bundles/",
        "chatbot_function_arns": ["arn:aws:lambda:us-east-1:222222222222:function:chatbot:live"],
        "chatbot_header_secret_arns": ["arn:aws:secretsmanager:us-east-1:222222222222:secret:chatbot-headers-AbCdEf"],
        "bedrock_generation_model_ids": ["anthropic.claude-sonnet-4-5-20250929-v1:0"],
        "prompt_arns": ["arn:aws:bedrock:us-east-1:222222222222:prompt/PROMPT1234:3"],
    }}
    config = parse_config(raw)
    stack = cdk.Stack(cdk.App(context=cdk_app.read_cdk_json()["context"]), "Generation",
                      env=cdk.Environment(account=ACCOUNT, region=REGION))
    storage = Storage(stack, "Storage", config=config)
    EvaluationFunctions(stack, "Functions", config=config, storage=storage, event_bus=events.EventBus(stack, "Bus"),
                        production_target=ProductionTarget(stack, "ProductionTarget", config=config))
    return Template.from_stack(stack).to_json()


def test_each_configured_target_kind_becomes_one_exact_grant(fully_configured):
    template = fully_configured
    bucket = f"<{_data_bucket_id(template)}.Arn>"
    assert grants(template, "generate") == {
        frozenset({"s3:GetObject", "s3:GetObjectVersion"}): {f"{bucket}/bundles/*"},
        frozenset({"s3:GetObject"}): {f"{bucket}/runs/*"},
        frozenset({"ssm:GetParameter"}): {f"arn:<AWS::Partition>:ssm:{REGION}:{ACCOUNT}:parameter/chatbot/prod/target"},
        frozenset({"bedrock:InvokeModel"}): {
            f"arn:<AWS::Partition>:bedrock:{REGION}::foundation-model/anthropic.claude-sonnet-4-5-20250929-v1:0"},
        frozenset({"bedrock:GetPrompt"}): {"arn:aws:bedrock:us-east-1:222222222222:prompt/PROMPT1234",
                                           "arn:aws:bedrock:us-east-1:222222222222:prompt/PROMPT1234:3"},
        frozenset({"lambda:InvokeFunction"}): {"arn:aws:lambda:us-east-1:222222222222:function:chatbot:live"},
        frozenset({"secretsmanager:GetSecretValue"}): {
            "arn:aws:secretsmanager:us-east-1:222222222222:secret:chatbot-headers-AbCdEf"},
    }
    # managed elsewhere: granted by name, not created
    assert not resources_of(template, "AWS::SSM::Parameter")


def test_without_allow_lists_generate_gets_no_model_function_secret_or_prompt(synth):
    config = parse_config({"env_name": "test", "judge_model_id": "anthropic.claude-haiku-4-5-20251001-v1:0"})
    generation = config.generation
    assert (generation.bedrock_generation_model_ids, generation.chatbot_function_arns,
            generation.chatbot_header_secret_arns, generation.prompt_arns) == ([], [], [], [])
    assert config.production_target_parameter == "/mangaassist/test/production-target"
    assert generation.create_production_parameter and generation.bundle_prefix == "prompt-bundles/"


# ---- storage and the parameter -------------------------------------------------------------------


def test_data_bucket_keeps_versions_and_expires_old_ones(evaluation_template):
    bucket = evaluation_template["Resources"][_data_bucket_id(evaluation_template)]["Properties"]
    assert bucket["VersioningConfiguration"] == {"Status": "Enabled"}
    rules = bucket["LifecycleConfiguration"]["Rules"]
    # One rule for the whole bucket keeps a month of old versions (datasets, bundles); the prefix-scoped
    # ones are the captured turns' and samples' (test_first_pipeline_run: they expire within the retention).
    (whole_bucket,) = [r for r in rules if "NoncurrentVersionExpiration" in r and "Prefix" not in r]
    assert whole_bucket["Status"] == "Enabled"
    assert whole_bucket["NoncurrentVersionExpiration"]["NoncurrentDays"] >= 30
    scoped = {r["Prefix"] for r in rules if "NoncurrentVersionExpiration" in r and "Prefix" in r}
    assert scoped == {"production/turns/", "production/errors/", "datasets/production/sample-"}


def test_the_production_target_parameter_starts_as_recorded(evaluation_template):
    (parameter,) = resources_of(evaluation_template, "AWS::SSM::Parameter").values()
    assert parameter["Properties"]["Name"] == PARAMETER
    assert parameter["Properties"]["Type"] == "String"
    assert parameter["Properties"]["Value"] == "recorded"


# ---- what the triggers send ----------------------------------------------------------------------


def test_prompt_version_published_runs_that_bundle_version_against_production(evaluation_template):
    detail = {"bundle_key": "prompt-bundles/chatbot.yaml", "bundle_version": "3HL4kqtJlcpXroDTDmJ.rmSpXd3dIbrHY"}
    run = started_run_input(evaluation_template, "PromptVersionPublished", release_event("PromptVersionPublished", detail))
    assert run["target"] == f"bedrock:s3://{BUCKET}/prompt-bundles/chatbot.yaml?versionId=3HL4kqtJlcpXroDTDmJ.rmSpXd3dIbrHY"
    assert run["control"] == f"ssm:{PARAMETER}"
    assert run["candidate"] == detail
    assert run["trigger"] == "event:PromptVersionPublished" and run["source_event_id"] == "ev-1"


def test_model_version_changed_runs_production_on_the_new_model(evaluation_template):
    detail = {"model_id": "us.anthropic.claude-sonnet-4-5-20250929-v1:0"}
    run = started_run_input(evaluation_template, "ModelVersionChanged", release_event("ModelVersionChanged", detail))
    assert run["target"] == {"spec": f"ssm:{PARAMETER}", "model_id": "us.anthropic.claude-sonnet-4-5-20250929-v1:0"}
    assert run["control"] == f"ssm:{PARAMETER}"
    assert run["candidate"] == detail


def test_knowledge_base_refreshed_runs_production_without_a_control(evaluation_template):
    detail = {"knowledge_base_id": "KB12345678", "ingestion_job_id": "JOB1"}
    run = started_run_input(evaluation_template, "KnowledgeBaseRefreshed", release_event("KnowledgeBaseRefreshed", detail))
    assert run["target"] == f"ssm:{PARAMETER}"
    assert "control" not in run
    assert run["candidate"] == detail
    # Only the cases a refreshed knowledge base can change: those tagged policy or retrieval.
    assert run["filter"] == {"tags": ["policy", "retrieval"]}


def test_the_kb_refresh_filter_is_the_core_one():
    from fmquality.run.subsets import KB_REFRESH_FILTER as CORE
    from infra.constructs.triggers import KB_REFRESH_FILTER

    assert KB_REFRESH_FILTER == CORE


def test_the_weekly_run_is_answered_by_production(evaluation_template):
    (rule,) = [r for r in resources_of(evaluation_template, "AWS::Events::Rule").values()
               if "ScheduleExpression" in r["Properties"]]
    run = render_input(rule["Properties"]["Targets"][0]["Input"], {_data_bucket_id(evaluation_template): BUCKET}, {})
    assert run["target"] == f"ssm:{PARAMETER}"
    assert "control" not in run


def test_the_target_specs_parse_with_the_core_grammar(evaluation_template):
    from fmquality.targets.base import TargetSpec

    detail = {"bundle_key": "prompt-bundles/chatbot.yaml", "bundle_version": "v1", "model_id": "anthropic.x.y"}
    for detail_type in ("PromptVersionPublished", "ModelVersionChanged", "KnowledgeBaseRefreshed"):
        run = started_run_input(evaluation_template, detail_type, release_event(detail_type, detail))
        for arm in ("target", "control"):
            if arm in run:
                assert TargetSpec.parse(run[arm]).kind in ("bedrock", "ssm"), (detail_type, arm)
    assert TargetSpec.parse(f"ssm:{PARAMETER}").ref == PARAMETER


# ---- the pipeline ----------------------------------------------------------------------------------


def _gate_input(pipeline_template) -> tuple[dict, str]:
    (pipeline,) = resources_of(pipeline_template, "AWS::CodePipeline::Pipeline").values()
    gate = next(s for s in pipeline["Properties"]["Stages"] if s["Name"] == "QualityGate")
    parts = gate["Actions"][0]["Configuration"]["Input"]["Fn::Join"][1]
    text = "".join(p if isinstance(p, str) else f"<{p.get('Ref', 'IMPORTED')}>" for p in parts)
    return json.loads(text), text


def test_the_gate_answers_with_the_source_bundle_version_against_production(pipeline_template):
    from infra.stacks.pipeline_stack import PROMPT_BUNDLE_KEY

    run, _ = _gate_input(pipeline_template)
    (source_id,) = [k for k in resources_of(pipeline_template, "AWS::S3::Bucket") if k.startswith("PromptBundleSource")]
    assert run["target"] == f"bedrock:s3://<{source_id}>/{PROMPT_BUNDLE_KEY}?versionId=#{{Source.VersionId}}"
    assert run["control"] == f"ssm:{PARAMETER}"
    (pipeline,) = resources_of(pipeline_template, "AWS::CodePipeline::Pipeline").values()
    source = pipeline["Properties"]["Stages"][0]["Actions"][0]
    assert source["Namespace"] == "Source"
    assert source["Configuration"]["S3ObjectKey"] == PROMPT_BUNDLE_KEY
    source_bucket = pipeline_template["Resources"][source_id]["Properties"]
    assert source_bucket["VersioningConfiguration"] == {"Status": "Enabled"}


def test_generate_may_read_only_the_source_bundle_versions(pipeline_template, evaluation_template):
    from infra.stacks.pipeline_stack import PROMPT_BUNDLE_KEY

    (source_id,) = [k for k in resources_of(pipeline_template, "AWS::S3::Bucket") if k.startswith("PromptBundleSource")]
    generate_role_id = functions_by_handler_env(evaluation_template)["generate"][1]["Properties"]["Role"]["Fn::GetAtt"][0]
    policies = [p["Properties"] for p in resources_of(pipeline_template, "AWS::IAM::Policy").values()
                if any(generate_role_id in json.dumps(r) for r in p["Properties"]["Roles"])]
    assert len(policies) == 1
    (statement,) = policies[0]["PolicyDocument"]["Statement"]
    assert sorted(as_list(statement["Action"])) == ["s3:GetObject", "s3:GetObjectVersion"]
    assert flatten_join(statement["Resource"]) == f"<{source_id}.Arn>/{PROMPT_BUNDLE_KEY}"


# ---- configuration ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("key", "value"), [
    ("production_target_parameter", "no spaces allowed"),
    ("production_target_parameter", "/aws/reserved"),
    ("bundle_prefix", "prompt-bundles"),
    ("bundle_prefix", "runs/bundles/"),
    ("chatbot_function_arns", ["chatbot"]),
    ("chatbot_header_secret_arns", ["arn:aws:secretsmanager:us-east-1:123456789012:secret:*"]),
    ("bedrock_generation_model_ids", ["not a model"]),
    ("bedrock_generation_model_ids", ["global.anthropic.claude-haiku-4-5-20251001-v1:0"]),
    ("prompt_arns", ["arn:aws:bedrock:us-east-1:123456789012:prompt/*"]),
    ("max_concurrency", 0),
    ("unknown", 1),
])
def test_invalid_generation_settings_are_named(key, value):
    raw = {"env_name": "test", "judge_model_id": "anthropic.claude-haiku-4-5-20251001-v1:0", "generation": {key: value}}
    with pytest.raises(ConfigError, match=rf"fmquality\.generation(\.{key})?"):
        parse_config(raw)
