"""`fmquality doctor`'s checks (fmquality.run.doctor): a deployed stack on moto, Bedrock and Service
Quotas through botocore's Stubber. Each test breaks one thing and asserts the check that finds it,
its status and what it says to do; the healthy deployment asserts every check passes."""

from __future__ import annotations

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from fmquality.run.doctor import CannotCheck, alerts_subscription, diagnose, stack_status
from fmquality.run.doctor_models import ModelFacts, is_inference_profile, model_findings, quota_hint
from tests.unit.doctor_env import (GENERATOR, JUDGE, PARAMETER, PIPELINE, PIPELINE_STACK, REGION, SOURCE_BUCKET, STACK,
                                   Stubbed, deploy, deploy_pipeline, evaluation_template, stub_foundation, stub_model,
                                   stub_profile, stub_quota)


@pytest.fixture
def aws():
    with mock_aws():
        yield Stubbed()


def by_check(findings):
    return {f.check: f for f in findings}


def problems(findings):
    return [f for f in findings if f.status == "problem"]


def test_a_healthy_deployment_passes_every_check(aws):
    deploy(evaluation_template())
    findings = diagnose(aws.healthy().factory(), STACK, REGION)
    aws.all_answered()  # the judge's and the generator's profile, model and access, and the quota were asked
    checks = by_check(findings)
    assert {f.status for f in findings} == {"ok"}, [f for f in findings if f.status != "ok"]
    assert list(checks) == ["stack", "outputs", "state machine", "functions", f"judge model {JUDGE}", f"generation model {GENERATOR}",
                            "judge is not a generator", "judge quota", f"parameter {PARAMETER}", "alerts subscription"]
    assert checks["stack"].detail == f"{STACK}: CREATE_COMPLETE"
    assert checks["state machine"].detail == "fmq-evaluation: ACTIVE, STANDARD"
    assert "routes to anthropic.claude-haiku-4-5-20251001-v1:0 in us-east-1, us-east-2, us-west-2" in \
        checks[f"judge model {JUDGE}"].detail
    # the cross-region requests-per-minute quota of the judge model, not the tokens or on-demand one
    assert checks["judge quota"].detail.startswith("Cross-region model inference requests per minute for Anthropic "
                                                   "Claude Haiku 4.5: 250 in us-east-1")
    assert "up to 12 cases at once" in checks["judge quota"].detail
    assert checks[f"parameter {PARAMETER}"].detail == "holds 'recorded'"
    assert checks["alerts subscription"].detail == "email:oncall@example.com"


def test_a_judge_profile_the_region_does_not_offer_is_a_problem_saying_what_to_choose(aws):
    deploy(evaluation_template())
    aws.bedrock_stub.add_client_error("get_inference_profile", "ResourceNotFoundException", "not found",
                                      expected_params={"inferenceProfileIdentifier": JUDGE})
    stub_model(aws.bedrock_stub, GENERATOR, "Claude Sonnet 4.5")
    findings = diagnose(aws.factory(), STACK, REGION)
    judge = by_check(findings)[f"judge model {JUDGE}"]
    assert (judge.status, judge.detail) == ("problem", f"no inference profile {JUDGE!r} in {REGION}")
    assert "aws bedrock list-inference-profiles --region us-east-1" in judge.fix
    assert problems(findings) == [judge]
    # no model name to look the quota up by: skipped, and Service Quotas was not asked
    assert by_check(findings)["judge quota"].status == "skipped" and "service-quotas" not in aws.asked


def test_a_model_the_account_may_not_invoke_is_a_problem(aws):
    deploy(evaluation_template())
    stub_model(aws.bedrock_stub, JUDGE, "Claude Haiku 4.5")
    stub_model(aws.bedrock_stub, GENERATOR, "Claude Sonnet 4.5", authorized="NOT_AUTHORIZED")
    stub_quota(aws.quotas_stub)
    [found] = problems(diagnose(aws.factory(), STACK, REGION))
    assert found.check == f"generation model {GENERATOR}"
    assert "authorizationStatus NOT_AUTHORIZED" in found.detail and "Model access" in found.fix


def test_a_foundation_id_without_on_demand_needs_a_profile():
    bedrock = boto3.client("bedrock", region_name=REGION)
    with Stubber(bedrock) as stub:  # only get_foundation_model is asked: no access check for a model that cannot run
        stub.add_response("get_foundation_model", {"modelDetails": {
            "modelArn": "arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-sonnet-4-5-20250929-v1:0",
            "modelId": "anthropic.claude-sonnet-4-5-20250929-v1:0", "modelName": "Claude Sonnet 4.5",
            "inferenceTypesSupported": ["INFERENCE_PROFILE"], "modelLifecycle": {"status": "ACTIVE"}}})
        [found], facts = model_findings(bedrock, "anthropic.claude-sonnet-4-5-20250929-v1:0", "generation model", REGION)
        stub.assert_no_pending_responses()
    assert found.status == "problem" and "cannot be invoked on demand" in found.detail
    assert "'us.anthropic.claude-sonnet-4-5-20250929-v1:0'" in found.fix and not facts.is_profile


def test_a_legacy_model_is_a_warning_beside_its_ok():
    bedrock = boto3.client("bedrock", region_name=REGION)
    with Stubber(bedrock) as stub:
        stub_profile(stub, JUDGE)
        stub_foundation(stub, JUDGE.split(".", 1)[1], name="Claude Haiku 4.5", lifecycle="LEGACY")
        findings, facts = model_findings(bedrock, JUDGE, "judge model", REGION)
    assert [f.status for f in findings] == ["warning", "ok"] and "LEGACY" in findings[0].detail
    assert facts == ModelFacts(JUDGE, "Claude Haiku 4.5", True)


def test_an_unreadable_model_is_a_warning_naming_the_permission():
    bedrock = boto3.client("bedrock", region_name=REGION)
    with Stubber(bedrock) as stub:
        stub.add_client_error("get_inference_profile", "AccessDeniedException", "no")
        [found], _ = model_findings(bedrock, JUDGE, "judge model", REGION)
    assert found.status == "warning" and "bedrock:GetInferenceProfile" in found.fix


def test_profile_ids_are_told_from_foundation_ids():
    assert is_inference_profile(JUDGE) and is_inference_profile("global.anthropic.claude-haiku-4-5-20251001-v1:0")
    assert is_inference_profile("arn:aws:bedrock:us-east-1:1:application-inference-profile/abc")
    assert not is_inference_profile("anthropic.claude-haiku-4-5-20251001-v1:0")
    assert not is_inference_profile("arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-haiku-4-5-20251001-v1:0")


def test_a_generation_model_that_is_the_judges_is_a_problem(aws):
    deploy(evaluation_template(generation=f"{GENERATOR},anthropic.claude-haiku-4-5-20251001-v1:0"))
    stub_model(aws.bedrock_stub, JUDGE, "Claude Haiku 4.5")
    stub_model(aws.bedrock_stub, GENERATOR, "Claude Sonnet 4.5")
    stub_foundation(aws.bedrock_stub, "anthropic.claude-haiku-4-5-20251001-v1:0", name="Claude Haiku 4.5",
                    inference=("ON_DEMAND",))
    stub_quota(aws.quotas_stub)
    [found] = problems(diagnose(aws.factory(), STACK, REGION))
    assert found.check == "judge is not a generator"
    assert found.detail.startswith("anthropic.claude-haiku-4-5-20251001-v1:0 generates with the judge's model")


def test_a_stack_deployed_before_generate_recorded_its_models_is_a_warning(aws):
    deploy(evaluation_template(generation=None))
    stub_model(aws.bedrock_stub, JUDGE, "Claude Haiku 4.5")
    aws.quotas_stub.add_client_error("list_service_quotas", "AccessDeniedException", "no")
    findings = by_check(diagnose(aws.factory(), STACK, REGION))
    assert findings["generation models"].status == "warning" and "deploy this version" in findings["generation models"].fix
    # the quota hint is skipped when it cannot be read, and skipping is no problem
    assert (findings["judge quota"].status, findings["judge quota"].detail) == \
        ("skipped", "Service Quotas not readable: AccessDeniedException")


def test_a_missing_parameter_is_a_problem_with_the_command_that_creates_it(aws):
    deploy(evaluation_template(parameter=False))
    [found] = problems(diagnose(aws.healthy().factory(), STACK, REGION))
    assert found.check == f"parameter {PARAMETER}" and found.detail.startswith("does not exist")
    assert f"aws ssm put-parameter --type String --name {PARAMETER} --value recorded" in found.fix


@pytest.mark.parametrize("value, says", [
    ("bedrock-latest", "not a target spec"),
    ("python:chatbot.app:answer", "python targets are not allowed in this deployment"),  # a kind it does not allow
])
def test_a_parameter_that_holds_no_usable_target_is_a_problem(aws, value, says):
    deploy(evaluation_template(parameter_value=value))
    [found] = problems(diagnose(aws.healthy().factory(), STACK, REGION))
    assert found.check == f"parameter {PARAMETER}" and says in found.detail


def test_no_subscription_on_the_alerts_topic_is_a_warning_not_a_problem(aws):
    deploy(evaluation_template(subscribe=False))
    findings = diagnose(aws.healthy().factory(), STACK, REGION)
    alerts = by_check(findings)["alerts subscription"]
    assert alerts.status == "warning" and "alert_email" in alerts.fix
    assert problems(findings) == []


def test_a_pending_subscription_is_a_warning_to_confirm_it():
    sns = boto3.client("sns", region_name=REGION)
    topic = f"arn:aws:sns:{REGION}:123456789012:alerts"
    with Stubber(sns) as stub:
        stub.add_response("list_subscriptions_by_topic", {"Subscriptions": [
            {"SubscriptionArn": "PendingConfirmation", "Protocol": "email", "Endpoint": "oncall@example.com",
             "TopicArn": topic, "Owner": "123456789012"}]}, {"TopicArn": topic})
        found = alerts_subscription(sns, topic)
    assert found.status == "warning" and found.detail == "no confirmed subscription; pending: oncall@example.com"


def test_missing_outputs_are_a_problem(aws):
    deploy(evaluation_template(outputs=("StateMachineArn", "TableName")))
    found = by_check(diagnose(aws.healthy().factory(), STACK, REGION))["outputs"]
    assert (found.status, found.detail) == ("problem", "missing: DataBucketName, EventBusName, AlertsTopicArn")


def test_a_stack_that_does_not_exist_cannot_be_checked(aws):
    with pytest.raises(CannotCheck, match="not found in this account and region"):
        diagnose(aws.factory(), "NoSuchStack", REGION)
    assert aws.asked == ["cloudformation"]


@pytest.mark.parametrize("status, expected", [
    ("UPDATE_COMPLETE", "ok"), ("UPDATE_ROLLBACK_COMPLETE", "warning"), ("ROLLBACK_COMPLETE", "problem"),
    ("UPDATE_IN_PROGRESS", "problem"), ("CREATE_FAILED", "problem"),
])
def test_only_a_complete_stack_is_ok(status, expected):
    found = stack_status({"StackName": STACK, "StackStatus": status}, "stack")
    assert found.status == expected and (found.fix or expected == "ok")


def test_the_quota_hint_names_the_on_demand_quota_for_a_foundation_id():
    quotas = boto3.client("service-quotas", region_name=REGION)
    with Stubber(quotas) as stub:
        stub_quota(stub)
        found = quota_hint(quotas, ModelFacts("anthropic.claude-haiku-4-5-20251001-v1:0", "Claude Haiku 4.5", False),
                           None, REGION)
    assert found.detail == "On-demand model inference requests per minute for Anthropic Claude Haiku 4.5: 50 in us-east-1"


# ---- the pipeline stack ---------------------------------------------------------------------------

def pipeline_s3(eventbridge: bool, versioning: str = "Enabled") -> tuple[object, Stubber]:
    """moto keeps no EventBridgeConfiguration (5.2: GetBucketNotificationConfiguration never returns it):
    the bucket's answers come from a Stubber."""
    s3 = boto3.client("s3", region_name=REGION)
    stub = Stubber(s3)
    stub.add_response("get_bucket_notification_configuration",
                      {"EventBridgeConfiguration": {}} if eventbridge else {}, {"Bucket": SOURCE_BUCKET})
    stub.add_response("get_bucket_versioning", {"Status": versioning}, {"Bucket": SOURCE_BUCKET})
    stub.activate()
    return s3, stub


def test_a_healthy_pipeline_stack_passes(aws):
    deploy(evaluation_template())
    deploy_pipeline()
    aws.s3, stub = pipeline_s3(eventbridge=True)
    findings = diagnose(aws.healthy().factory(), STACK, REGION, pipeline_stack=PIPELINE_STACK)
    stub.assert_no_pending_responses()
    checks = by_check(findings)
    assert {f.status for f in findings} == {"ok"}
    assert checks["pipeline stack"].detail == f"{PIPELINE_STACK}: CREATE_COMPLETE"
    assert checks[f"bundle bucket {SOURCE_BUCKET}"].detail == "EventBridge notifications on"
    assert checks[f"pipeline {PIPELINE}"].detail == "stages Source -> QualityGate"


def test_a_bundle_bucket_without_eventbridge_notifications_or_versioning_is_a_problem(aws):
    deploy(evaluation_template())
    deploy_pipeline()
    aws.s3, _ = pipeline_s3(eventbridge=False, versioning="Suspended")
    found = problems(diagnose(aws.healthy().factory(), STACK, REGION, pipeline_stack=PIPELINE_STACK))
    assert [f.check for f in found] == [f"bundle bucket {SOURCE_BUCKET}", f"bundle bucket {SOURCE_BUCKET} versioning"]
    assert "never starts the pipeline" in found[0].detail and "Amazon EventBridge: On" in found[0].fix
    assert "versioning is Suspended" in found[1].detail


def test_a_pipeline_that_does_not_exist_is_a_problem(aws):
    deploy(evaluation_template())
    deploy_pipeline(pipeline=False)
    aws.s3, _ = pipeline_s3(eventbridge=True)
    [found] = problems(diagnose(aws.healthy().factory(), STACK, REGION, pipeline_stack=PIPELINE_STACK))
    assert (found.check, found.detail) == (f"pipeline {PIPELINE}", "does not exist")


def test_a_pipeline_stack_that_does_not_exist_cannot_be_checked(aws):
    deploy(evaluation_template())
    with pytest.raises(CannotCheck, match="MangaAssistQuality-dev-Pipeline"):
        diagnose(aws.healthy().factory(), STACK, REGION, pipeline_stack=PIPELINE_STACK)


def test_the_functions_of_a_nested_stack_are_read_too(aws):
    """The production watch is a nested stack: its drift action reads a parameter of its own."""
    import json

    nested = {"Resources": {
        "Role": {"Type": "AWS::IAM::Role",
                 "Properties": {"AssumeRolePolicyDocument": {"Version": "2012-10-17", "Statement": []}}},
        "DriftAction": {"Type": "AWS::Lambda::Function", "Properties": {
            "Runtime": "python3.12", "Handler": "handlers.drift_action.handler", "Role": {"Fn::GetAtt": ["Role", "Arn"]},
            "Code": {"ZipFile": "def handler(event, context): pass"},
            "Environment": {"Variables": {"PRODUCTION_TARGET_PARAMETER": "/mangaassist/dev/watched-target"}}}}}}
    s3 = boto3.client("s3", region_name=REGION)
    s3.create_bucket(Bucket="fmq-cdk-assets")
    s3.put_object(Bucket="fmq-cdk-assets", Key="watch.json", Body=json.dumps(nested).encode())
    template = json.loads(evaluation_template())
    template["Resources"]["ProductionWatch"] = {"Type": "AWS::CloudFormation::Stack", "Properties": {
        "TemplateURL": "https://fmq-cdk-assets.s3.amazonaws.com/watch.json"}}
    deploy(json.dumps(template))
    [found] = problems(diagnose(aws.healthy().factory(), STACK, REGION))
    assert (found.check, found.detail[:14]) == ("parameter /mangaassist/dev/watched-target", "does not exist")
    assert by_check(diagnose(aws.healthy().factory(), STACK, REGION))["functions"].detail == "4 functions read"


def test_functions_that_disagree_on_the_judge_are_a_problem(aws):
    import json

    template = json.loads(evaluation_template())
    template["Resources"]["Aggregate"]["Properties"]["Environment"]["Variables"]["JUDGE_MODEL_ID"] = GENERATOR
    deploy(json.dumps(template))
    [found] = problems(diagnose(aws.factory(), STACK, REGION))
    assert found.check == "judge" and "disagree" in found.detail and "deploy again" in found.fix


def test_bedrock_out_of_reach_is_a_warning_not_a_crash():
    from botocore.exceptions import EndpointConnectionError

    class Unreachable:
        def get_inference_profile(self, **_):
            raise EndpointConnectionError(endpoint_url="https://bedrock.xx-east-1.amazonaws.com")

    [found], facts = model_findings(Unreachable(), JUDGE, "judge model", "xx-east-1")
    assert found.status == "warning" and found.detail.startswith("could not reach Bedrock in xx-east-1")
    assert facts.name is None


def test_a_state_machine_the_outputs_name_but_that_does_not_exist_is_a_problem(aws):
    import json

    template = json.loads(evaluation_template())
    template["Outputs"]["StateMachineArn"]["Value"] = f"arn:aws:states:{REGION}:123456789012:stateMachine:gone"
    deploy(json.dumps(template))
    [found] = problems(diagnose(aws.healthy().factory(), STACK, REGION))
    assert (found.check, found.detail) == ("state machine", f"arn:aws:states:{REGION}:123456789012:stateMachine:gone "
                                                            "does not exist")


def test_without_a_requests_quota_the_hint_is_the_tokens_quota():
    """Bedrock has dropped its requests-per-minute quotas in favour of tokens per minute: the hint follows,
    and the model's own quota comes before a longer-context variant."""
    quotas = boto3.client("service-quotas", region_name=REGION)
    rows = [("L-1", "On-demand InvokeModel tokens per minute for Anthropic Claude Haiku 4.5", 400000.0),
            ("L-2", "Cross-Region InvokeModel tokens per minute for Anthropic Claude Haiku 4.5 1M Context Length", 1.0),
            ("L-3", "Cross-Region InvokeModel tokens per minute for Anthropic Claude Haiku 4.5", 4000000.0),
            ("L-4", "Cross-Region InvokeModel tokens per minute for Anthropic Claude Sonnet 4.5", 9.0)]
    with Stubber(quotas) as stub:
        stub.add_response("list_service_quotas", {"Quotas": [
            {"ServiceCode": "bedrock", "QuotaCode": code, "QuotaName": name, "Value": value} for code, name, value in rows]},
            {"ServiceCode": "bedrock"})
        found = quota_hint(quotas, ModelFacts(JUDGE, "Claude Haiku 4.5", True), "12", REGION)
    assert found.status == "ok"
    assert found.detail == ("Cross-Region InvokeModel tokens per minute for Anthropic Claude Haiku 4.5: 4,000,000 in "
                            "us-east-1; the Map runs up to 12 cases at once")
    assert found.fix.startswith("Bedrock limits this model by tokens")
