"""Issue 31: what a real account enforces on the first pipeline run, read from the synthesized templates.

1. Prepare reads the candidate bundle in the pipeline's source bucket (the role that reads it is granted).
2. The shipped default generation model is not the judge's and the Generate role may invoke it.
3. A bundle upload starts the pipeline without a CloudTrail trail (S3's EventBridge notifications).
6. The Distributed Map's own grants: its child executions, its ResultWriter's multipart files.
8. Captured turns, capture errors and samples expire after production_watch.retention_days.

The IAM evaluation of every recorded call against these roles is test_iam_evaluation.py.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from infra.bedrock_models import model_foundation_id, model_foundation_regions, model_is_inference_profile
from infra.config import ConfigError, parse_config, read_cdk_json_context

from .conftest import ACCOUNT, REGION, as_list, flatten_join, functions_by_handler_env, resources_of

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_BUNDLE = ROOT / "datasets" / "mangaassist" / "prompt-bundle.yaml"


def _policies_attached_to(template, role_ref) -> list[dict]:
    return [s for p in resources_of(template, "AWS::IAM::Policy").values() if role_ref in p["Properties"]["Roles"]
            for s in p["Properties"]["PolicyDocument"]["Statement"]]


def _exported_role(evaluation_template, import_value: str) -> str:
    """The logical id of the evaluation stack's role an ``Fn::ImportValue`` of the pipeline stack names."""
    (output,) = [o for o in evaluation_template["Outputs"].values() if o.get("Export", {}).get("Name") == import_value]
    return output["Value"]["Ref"]


def _function_role(evaluation_template, role: str) -> str:
    _, function = functions_by_handler_env(evaluation_template)[role]
    return function["Properties"]["Role"]["Fn::GetAtt"][0]


def _gate_run_input(pipeline_template) -> dict:
    (pipeline,) = resources_of(pipeline_template, "AWS::CodePipeline::Pipeline").values()
    (gate,) = [s for s in pipeline["Properties"]["Stages"] if s["Name"] == "QualityGate"]
    parts = gate["Actions"][0]["Configuration"]["Input"]["Fn::Join"][1]
    text = "".join(p if isinstance(p, str) else "<" + (p.get("Ref") or "token") + ">" for p in parts)
    return json.loads(text)


# ---- 1. Prepare reads the candidate bundle ------------------------------------------------------------


@pytest.mark.parametrize("role", ["prepare", "generate"])
def test_the_roles_that_read_the_pipeline_bundle_may_read_exactly_its_versions(
        pipeline_template, evaluation_template, role):
    """The gate's target names bedrock:s3://<PromptBundleSource>/prompt-bundle.yaml?versionId=...: Prepare
    reads it (is its model the judge's?) and Generate answers with it; each role gets GetObject and
    GetObjectVersion on that one key of that bucket, nothing else of the bucket."""
    target = _gate_run_input(pipeline_template)["target"]
    match = re.fullmatch(r"bedrock:s3://<(\w+)>/([^?]+)\?versionId=#\{Source\.VersionId\}", target)
    assert match, target
    bucket_id, key = match.groups()
    assert resources_of(pipeline_template, "AWS::S3::Bucket")[bucket_id]
    role_id = _function_role(evaluation_template, role)
    granted = []
    for policy in resources_of(pipeline_template, "AWS::IAM::Policy").values():
        for ref in policy["Properties"]["Roles"]:
            if "Fn::ImportValue" in ref and _exported_role(evaluation_template, ref["Fn::ImportValue"]) == role_id:
                granted += policy["Properties"]["PolicyDocument"]["Statement"]
    assert [(sorted(as_list(s["Action"])), [flatten_join(r) for r in as_list(s["Resource"])]) for s in granted] == [
        (["s3:GetObject", "s3:GetObjectVersion"], [f"<{bucket_id}.Arn>/{key}"])]


# ---- 2. the default generation model ----------------------------------------------------------------


def test_default_generation_model_is_not_the_judge_and_generate_may_invoke_it(evaluation_template, synth):
    config = synth.config
    default = config.generation.default_model_id
    assert default is not None
    assert model_foundation_id(default) != model_foundation_id(config.judge_model_id)
    (invoke,) = [s for s in _policies_attached_to(evaluation_template, {"Ref": _function_role(evaluation_template, "generate")})
                 if s.get("Sid") == "InvokeGenerationModels"]
    assert as_list(invoke["Action"]) == ["bedrock:InvokeModel"]
    resources = {flatten_join(r) for r in as_list(invoke["Resource"])}
    # Bedrock authorizes a profile call on the profile AND on the foundation model in each region it routes to.
    expected = {f"arn:<AWS::Partition>:bedrock:{region}::foundation-model/{model_foundation_id(default)}"
                for region in model_foundation_regions(default, config.generation.bedrock_generation_model_regions)
                or (REGION,)}
    if model_is_inference_profile(default):
        expected.add(f"arn:<AWS::Partition>:bedrock:{REGION}:{ACCOUNT}:inference-profile/{default}")
    assert expected <= resources
    # ... and the judge's model is not lent to the candidate.
    assert not any(model_foundation_id(config.judge_model_id) in r for r in resources)


def test_a_generation_model_that_is_the_judge_is_refused_at_synth():
    raw = read_cdk_json_context()
    judge = raw["judge_model_id"]
    raw = {**raw, "generation": {**raw["generation"], "bedrock_generation_model_ids": [model_foundation_id(judge)]}}
    with pytest.raises(ConfigError, match=r"generation\.bedrock_generation_model_ids\[0\].*judge's model"):
        parse_config(raw)
    # An offline judge grades with no model: any generation model may be listed.
    assert parse_config({**raw, "judge": "offline"}).generation.default_model_id == model_foundation_id(judge)


def test_the_example_bundle_generates_with_the_default_model(synth):
    from fmquality.run.targets import normalised_model_id
    from fmquality.targets.bedrock_bundle import check_bundle, parse_bundle

    bundle = parse_bundle(EXAMPLE_BUNDLE.read_text(encoding="utf-8"), str(EXAMPLE_BUNDLE))
    check_bundle(bundle, str(EXAMPLE_BUNDLE))
    assert bundle.model_id == synth.config.generation.default_model_id
    # the comparison Prepare makes (run.targets.check_judge_is_not_generator) lets it through
    assert normalised_model_id(bundle.model_id) != normalised_model_id(synth.config.judge_model_id)


def test_the_console_example_names_the_uploaded_example_bundle(synth):
    """docs/running.md's console input answers with the bundle deploying.md uploads, under the bundle prefix."""
    running = (ROOT / "docs" / "running.md").read_text(encoding="utf-8")
    console = running.split("### Console (ad hoc)", 1)[1].split("```json", 1)[1].split("```", 1)[0]
    example = json.loads(console)
    match = re.fullmatch(r"bedrock:s3://<data-bucket>/([^?]+)\?versionId=<V>", example["target"])
    assert match and match.group(1).startswith(synth.config.generation.bundle_prefix)
    deploying = (ROOT / "docs" / "deploying.md").read_text(encoding="utf-8")
    assert f"datasets/mangaassist/prompt-bundle.yaml s3://<DataBucketName>/{match.group(1)}" in deploying


# ---- 3. the pipeline starts on an upload, without a trail -------------------------------------------


def test_a_bundle_upload_starts_the_pipeline_through_s3_eventbridge_notifications(pipeline_template):
    (pipeline_id,) = resources_of(pipeline_template, "AWS::CodePipeline::Pipeline")
    pipeline = pipeline_template["Resources"][pipeline_id]
    source = pipeline["Properties"]["Stages"][0]["Actions"][0]
    bucket_id = source["Configuration"]["S3Bucket"]["Ref"]
    key = source["Configuration"]["S3ObjectKey"]
    # The source action does not wait for CloudTrail events (no trail exists); a rule starts the pipeline.
    assert source["Configuration"]["PollForSourceChanges"] is False
    assert not resources_of(pipeline_template, "AWS::CloudTrail::Trail")
    bucket = pipeline_template["Resources"][bucket_id]["Properties"]
    assert bucket["NotificationConfiguration"]["EventBridgeConfiguration"] == {"EventBridgeEnabled": True}
    starting = []
    for rule in resources_of(pipeline_template, "AWS::Events::Rule").values():
        pattern = rule["Properties"]["EventPattern"]
        targets = [t for t in rule["Properties"]["Targets"] if flatten_join(t["Arn"]).endswith(f"<{pipeline_id}>")]
        if targets:
            starting.append((pattern, targets))
    (pattern, (target,)), = starting
    # S3's own notification (not CloudTrail's "AWS API Call via CloudTrail") for that bucket and key.
    assert pattern == {"source": ["aws.s3"], "detail-type": ["Object Created"],
                       "detail": {"bucket": {"name": [{"Ref": bucket_id}]}, "object": {"key": [key]}}}
    assert "DeadLetterConfig" in target
    role_id = target["RoleArn"]["Fn::GetAtt"][0]
    (start,) = _policies_attached_to(pipeline_template, {"Ref": role_id})
    assert start["Action"] == "codepipeline:StartPipelineExecution"
    assert flatten_join(start["Resource"]).endswith(f":codepipeline:{REGION}:{ACCOUNT}:<{pipeline_id}>")


# ---- 6. the Distributed Map's grants ----------------------------------------------------------------


def _state_machine_statements(evaluation_template, state_machine_resource) -> dict[str, dict]:
    role_id = state_machine_resource["Properties"]["RoleArn"]["Fn::GetAtt"][0]
    return {s["Sid"]: s for s in _policies_attached_to(evaluation_template, {"Ref": role_id}) if "Sid" in s}


def test_map_run_describes_and_stops_children_on_the_documented_resource(evaluation_template, state_machine_resource,
                                                                        synth):
    manage = _state_machine_statements(evaluation_template, state_machine_resource)["DistributedMapManagesChildren"]
    assert sorted(as_list(manage["Action"])) == ["states:DescribeExecution", "states:StopExecution"]
    executions = f"arn:<AWS::Partition>:states:{REGION}:{ACCOUNT}:execution:{synth.state_machine_name}"
    assert f"{executions}:*" in {flatten_join(r) for r in as_list(manage["Resource"])}


def test_result_writer_may_write_list_abort_and_read_its_files_under_its_prefix(
        evaluation_template, state_machine_resource, definition):
    writer = _state_machine_statements(evaluation_template, state_machine_resource)["ResultWriterWritesMapResults"]
    assert sorted(as_list(writer["Action"])) == sorted(
        ["s3:PutObject", "s3:GetObject", "s3:ListMultipartUploadParts", "s3:AbortMultipartUpload"])
    prefix = definition["States"]["EvaluateItems"]["ResultWriter"]["Parameters"]["Prefix"]
    assert [flatten_join(r).split(".Arn>", 1)[1] for r in as_list(writer["Resource"])] == [f"/{prefix.rstrip('/')}/*"]


# ---- 8. captured data expires ------------------------------------------------------------------------


def _data_bucket_rules(evaluation_template) -> dict[str, dict]:
    bucket = next(b for b in resources_of(evaluation_template, "AWS::S3::Bucket").values()
                  if b["Properties"].get("VersioningConfiguration") and "LoggingConfiguration" in b["Properties"])
    return {r.get("Prefix", ""): r for r in bucket["Properties"]["LifecycleConfiguration"]["Rules"]}


@pytest.mark.parametrize("prefix", ["production/turns/", "production/errors/", "datasets/production/sample-"])
def test_captured_turns_errors_and_samples_expire_after_the_retention(evaluation_template, synth, prefix):
    rule = _data_bucket_rules(evaluation_template)[prefix]
    days = synth.config.production_watch.retention_days
    assert days == 30  # the shipped default docs/running.md states ("kept 30 days")
    assert rule["Status"] == "Enabled" and rule["ExpirationInDays"] == days
    # the versioned bucket keeps an expired object's data as a noncurrent version: gone a day later
    assert rule["NoncurrentVersionExpiration"]["NoncurrentDays"] <= 1


def test_retention_is_configurable_and_typed():
    raw = read_cdk_json_context()
    config = parse_config({**raw, "production_watch": {"retention_days": 7}})
    assert config.production_watch.retention_days == 7
    from infra.constructs.storage import Storage

    assert {r.expiration.to_days() for r in Storage.captured_data_rules(7)} == {7}
    for bad in (0, "thirty"):
        with pytest.raises(ConfigError, match=r"production_watch\.retention_days"):
            parse_config({**raw, "production_watch": {"retention_days": bad}})
    assert "kept 30 days" in (ROOT / "docs" / "running.md").read_text(encoding="utf-8")
