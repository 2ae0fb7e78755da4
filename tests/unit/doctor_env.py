"""A deployed gate on moto for the doctor tests: the evaluation stack (functions whose environment
records the judge, the generation models and the production target parameter; the parameter; the
alerts topic) and the pipeline stack's outputs; Bedrock and Service Quotas answered by botocore's
Stubber (moto has neither API), each response validated against botocore's model."""

from __future__ import annotations

import json
from typing import Any, Callable

import boto3
from botocore.stub import Stubber

REGION = "us-east-1"
STACK = "MangaAssistQuality-dev-Evaluation"
PIPELINE_STACK = "MangaAssistQuality-dev-Pipeline"
JUDGE = "us.anthropic.claude-haiku-4-5-20251001-v1:0"
GENERATOR = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
PARAMETER = "/mangaassist/dev/production-target"
SOURCE_BUCKET = "fmq-prompt-bundle-source"
PIPELINE = "fmq-prompt-pipeline"
_DESTINATIONS = ("us-east-1", "us-east-2", "us-west-2")


def evaluation_template(*, judge: str = JUDGE, generation: str | None = GENERATOR, parameter: bool = True,
                        parameter_value: str = "recorded", subscribe: bool = True,
                        outputs: tuple[str, ...] = ("StateMachineArn", "DataBucketName", "TableName", "EventBusName",
                                                    "AlertsTopicArn")) -> str:
    common = {"JUDGE": "bedrock", "JUDGE_MODEL_ID": judge, "TABLE_NAME": "fmq-table"}
    generate_env = {**common, "PRODUCTION_TARGET_PARAMETER": PARAMETER, "BUNDLE_PREFIX": "prompt-bundles/",
                    "ALLOWED_TARGET_KINDS": "recorded,bedrock,lambda,http,https"}
    if generation is not None:
        generate_env["GENERATION_MODEL_IDS"] = generation
    functions = {
        "Prepare": {**common, "PRODUCTION_TARGET_PARAMETER": PARAMETER, "DEFAULT_MAX_CONCURRENCY": "12",
                    "ALLOWED_TARGET_KINDS": "recorded,bedrock,lambda,http,https"},
        "Generate": generate_env,
        "Aggregate": common,
    }
    resources: dict[str, Any] = {
        "Role": {"Type": "AWS::IAM::Role",
                 "Properties": {"AssumeRolePolicyDocument": {"Version": "2012-10-17", "Statement": []}}},
        "AlertsTopic": {"Type": "AWS::SNS::Topic"},
        "Evaluation": {"Type": "AWS::StepFunctions::StateMachine", "Properties": {
            "StateMachineName": "fmq-evaluation", "RoleArn": {"Fn::GetAtt": ["Role", "Arn"]},
            "DefinitionString": json.dumps({"StartAt": "Done", "States": {"Done": {"Type": "Succeed"}}})}},
    }
    for name, env in functions.items():
        resources[name] = {"Type": "AWS::Lambda::Function", "Properties": {
            "Runtime": "python3.12", "Handler": f"handlers.{name.lower()}.handler",
            "Role": {"Fn::GetAtt": ["Role", "Arn"]}, "Code": {"ZipFile": "def handler(event, context): pass"},
            "Environment": {"Variables": env}}}
    if parameter:
        resources["ProductionTarget"] = {"Type": "AWS::SSM::Parameter",
                                         "Properties": {"Name": PARAMETER, "Type": "String", "Value": parameter_value}}
    if subscribe:  # as CDK's EmailSubscription, but on the topic: moto's CloudFormation has no AWS::SNS::Subscription
        resources["AlertsTopic"]["Properties"] = {"Subscription": [{"Protocol": "email", "Endpoint": "oncall@example.com"}]}
    values = {"StateMachineArn": {"Ref": "Evaluation"},
              "DataBucketName": "fmq-data", "TableName": "fmq-table", "EventBusName": "fmq-bus",
              "AlertsTopicArn": {"Ref": "AlertsTopic"}}
    return json.dumps({"Resources": resources, "Outputs": {k: {"Value": values[k]} for k in outputs}})


def deploy(template: str, name: str = STACK) -> None:
    boto3.client("cloudformation", region_name=REGION).create_stack(StackName=name, TemplateBody=template)


def deploy_pipeline(*, pipeline: bool = True) -> None:
    """The pipeline stack's outputs (moto's CloudFormation has no CodePipeline resource: the pipeline is
    created beside it)."""
    template = {"Resources": {"Dead": {"Type": "AWS::SQS::Queue"}},
                "Outputs": {"PromptBundleSourceBucketName": {"Value": SOURCE_BUCKET}, "PipelineName": {"Value": PIPELINE}}}
    deploy(json.dumps(template), PIPELINE_STACK)
    if pipeline:
        role = boto3.client("iam", region_name=REGION).create_role(
            RoleName="pipeline-role", AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": [
                {"Effect": "Allow", "Principal": {"Service": "codepipeline.amazonaws.com"}, "Action": "sts:AssumeRole"}]}))["Role"]["Arn"]
        stage = lambda name, category, provider: {"name": name, "actions": [{  # noqa: E731
            "name": name, "actionTypeId": {"category": category, "owner": "AWS", "provider": provider, "version": "1"},
            "configuration": {}, "outputArtifacts": [], "inputArtifacts": []}]}
        boto3.client("codepipeline", region_name=REGION).create_pipeline(pipeline={
            "name": PIPELINE, "roleArn": role, "artifactStore": {"type": "S3", "location": "fmq-artifacts"},
            "stages": [stage("Source", "Source", "S3"), stage("QualityGate", "Invoke", "StepFunctions")]})


# ---- Bedrock and Service Quotas (Stubber) ----------------------------------------------------------

def _foundation(profile_id: str) -> str:
    return profile_id.split(".", 1)[1]


def stub_profile(stubber: Stubber, profile_id: str, *, status: str = "ACTIVE") -> None:
    foundation = _foundation(profile_id)
    stubber.add_response("get_inference_profile", {
        "inferenceProfileName": f"US {foundation}", "inferenceProfileId": profile_id, "status": status,
        "type": "SYSTEM_DEFINED",
        "inferenceProfileArn": f"arn:aws:bedrock:{REGION}:123456789012:inference-profile/{profile_id}",
        "models": [{"modelArn": f"arn:aws:bedrock:{r}::foundation-model/{foundation}"} for r in _DESTINATIONS]},
        {"inferenceProfileIdentifier": profile_id})


def stub_foundation(stubber: Stubber, foundation: str, *, name: str, lifecycle: str = "ACTIVE",
                    inference: tuple[str, ...] = ("INFERENCE_PROFILE",), authorized: str = "AUTHORIZED") -> None:
    stubber.add_response("get_foundation_model", {"modelDetails": {
        "modelArn": f"arn:aws:bedrock:{REGION}::foundation-model/{foundation}", "modelId": foundation,
        "modelName": name, "providerName": "Anthropic", "inferenceTypesSupported": list(inference),
        "modelLifecycle": {"status": lifecycle}}}, {"modelIdentifier": foundation})
    stubber.add_response("get_foundation_model_availability", {
        "modelId": foundation, "agreementAvailability": {"status": "AVAILABLE"}, "authorizationStatus": authorized,
        "entitlementAvailability": "AVAILABLE", "regionAvailability": "AVAILABLE"}, {"modelId": foundation})


def stub_model(stubber: Stubber, profile_id: str, name: str, **options: Any) -> None:
    stub_profile(stubber, profile_id)
    stub_foundation(stubber, _foundation(profile_id), name=name, **options)


def stub_quota(stubber: Stubber, name: str = "Claude Haiku 4.5", value: float = 250.0) -> None:
    stubber.add_response("list_service_quotas", {"Quotas": [
        {"ServiceCode": "bedrock", "QuotaCode": "L-00000001", "Value": 1000000.0,
         "QuotaName": f"Cross-region model inference tokens per minute for Anthropic {name}"},
        {"ServiceCode": "bedrock", "QuotaCode": "L-00000002", "Value": 50.0,
         "QuotaName": f"On-demand model inference requests per minute for Anthropic {name}"},
        {"ServiceCode": "bedrock", "QuotaCode": "L-00000003", "Value": value,
         "QuotaName": f"Cross-region model inference requests per minute for Anthropic {name}"},
    ]}, {"ServiceCode": "bedrock"})


class Stubbed:
    """Bedrock and Service Quotas clients with Stubbers; every other service from moto."""

    def __init__(self) -> None:
        self.bedrock = boto3.client("bedrock", region_name=REGION)
        self.quotas = boto3.client("service-quotas", region_name=REGION)
        self.s3: Any = None
        self.bedrock_stub, self.quotas_stub = Stubber(self.bedrock), Stubber(self.quotas)
        self.bedrock_stub.activate()
        self.quotas_stub.activate()
        self.asked: list[str] = []

    def healthy(self) -> "Stubbed":
        stub_model(self.bedrock_stub, JUDGE, "Claude Haiku 4.5")
        stub_model(self.bedrock_stub, GENERATOR, "Claude Sonnet 4.5")
        stub_quota(self.quotas_stub)
        return self

    def client(self, name: str) -> Any:
        self.asked.append(name)
        if name == "bedrock":
            return self.bedrock
        if name == "service-quotas":
            return self.quotas
        if name == "s3" and self.s3 is not None:
            return self.s3
        return boto3.client(name, region_name=REGION)

    def factory(self) -> Callable[[str], Any]:
        return self.client

    def all_answered(self) -> None:
        self.bedrock_stub.assert_no_pending_responses()
        self.quotas_stub.assert_no_pending_responses()
