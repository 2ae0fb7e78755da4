"""`fmquality doctor`: a deployed gate's configuration, checked with the caller's credentials before the
first run, each problem with what to do about it.

The evaluation stack: it exists and is in a *_COMPLETE state; its outputs are there and its state
machine exists; the judge model
and the generation models its functions record are usable in the region (``run.doctor_models``) and
differ; the SSM parameters the handlers read exist and hold what they should; the alerts topic has a
confirmed subscription; the judge quota hint. The pipeline stack: it exists, its prompt-bundle source
bucket is versioned and sends EventBridge notifications (the upload rule starts the pipeline), and the
pipeline exists.

Pure: ``diagnose`` takes a client factory (service name -> boto3 client) and returns ``Finding``s; a
stack that cannot be read at all raises ``CannotCheck`` (the CLI's exit 3)."""

from __future__ import annotations

from typing import Any, Callable

from fmquality.run.doctor_models import OK, PROBLEM, SKIPPED, WARNING, Finding, error_code, model_findings, quota_hint
from fmquality.run.targets import normalised_model_id

__all__ = ["CannotCheck", "Finding", "diagnose", "OK", "PROBLEM", "WARNING", "SKIPPED"]

EVALUATION_OUTPUTS = ("StateMachineArn", "DataBucketName", "TableName", "EventBusName", "AlertsTopicArn")
PIPELINE_OUTPUTS = ("PromptBundleSourceBucketName", "PipelineName")
_USABLE = frozenset({"CREATE_COMPLETE", "UPDATE_COMPLETE", "IMPORT_COMPLETE"})
_DEPLOY = "deploy it (npx aws-cdk@2.1148.x deploy --all, docs/deploying.md)"


class CannotCheck(Exception):
    """The checks could not be done: the stack does not exist or cannot be read."""


def diagnose(client: Callable[[str], Any], stack: str, region: str, pipeline_stack: str | None = None) -> list[Finding]:
    """Every check of the evaluation stack ``stack`` (and of ``pipeline_stack``), in order."""
    cfn = client("cloudformation")
    described = describe_stack(cfn, stack)
    findings = [stack_status(described, "stack")]
    outputs, output_findings = stack_outputs(described, EVALUATION_OUTPUTS, "outputs")
    findings += output_findings
    if outputs.get("StateMachineArn"):
        findings.append(state_machine(client("stepfunctions"), outputs["StateMachineArn"]))
    environments, function_findings = function_environments(cfn, client("lambda"), stack)
    findings += function_findings
    if environments:
        findings += model_checks(client, environments, region)
        findings += parameter_checks(client("ssm"), environments)
    if outputs.get("AlertsTopicArn"):
        findings.append(alerts_subscription(client("sns"), outputs["AlertsTopicArn"]))
    if pipeline_stack:
        findings += pipeline_checks(client, pipeline_stack)
    return findings


# ---- the stack ------------------------------------------------------------------------------------

def describe_stack(cfn: Any, name: str) -> dict[str, Any]:
    from botocore.exceptions import ClientError

    try:
        return cfn.describe_stacks(StackName=name)["Stacks"][0]
    except ClientError as exc:
        message = str(exc)
        if "does not exist" in message:
            raise CannotCheck(f"stack {name!r} not found in this account and region: {_DEPLOY}, or pass --region "
                              "(the stack's region) and the stack's name (cdk list)") from exc
        raise CannotCheck(f"stack {name!r} cannot be read: {error_code(exc)} ({message})") from exc


def stack_status(stack: dict[str, Any], check: str) -> Finding:
    status = stack.get("StackStatus", "")
    name = stack.get("StackName", "")
    if status in _USABLE:
        return Finding(check, OK, f"{name}: {status}")
    if status == "UPDATE_ROLLBACK_COMPLETE":
        return Finding(check, WARNING, f"{name}: {status}: the last update rolled back; the previous template runs",
                       f"read the stack events for the failed resource, fix it and deploy again")
    if status.endswith("_IN_PROGRESS"):
        return Finding(check, PROBLEM, f"{name}: {status}", "wait for the deployment to finish, then run doctor again")
    fix = ("delete the stack (a failed first create cannot be updated) and deploy again"
           if status == "ROLLBACK_COMPLETE" else "read the stack events (aws cloudformation describe-stack-events) for the failed resource, "
                "fix it and deploy again")
    return Finding(check, PROBLEM, f"{name}: {status}", fix)


def stack_outputs(stack: dict[str, Any], wanted: tuple[str, ...], check: str) -> tuple[dict[str, str], list[Finding]]:
    outputs = {o["OutputKey"]: o.get("OutputValue", "") for o in stack.get("Outputs", []) or []}
    missing = [key for key in wanted if not outputs.get(key)]
    if missing:
        return outputs, [Finding(check, PROBLEM, f"missing: {', '.join(missing)}",
                                 f"is {stack.get('StackName')!r} the right stack? {_DEPLOY} with this version of "
                                 "the app")]
    return outputs, [Finding(check, OK, ", ".join(f"{key}={outputs[key]}" for key in wanted))]


def state_machine(sfn: Any, arn: str) -> Finding:
    """The state machine the StateMachineArn output names (what `fmquality start` and the pipeline start)."""
    from botocore.exceptions import ClientError

    try:
        described = sfn.describe_state_machine(stateMachineArn=arn)
    except ClientError as exc:
        if error_code(exc) == "StateMachineDoesNotExist":
            return Finding("state machine", PROBLEM, f"{arn} does not exist", _DEPLOY[0].upper() + _DEPLOY[1:])
        return Finding("state machine", WARNING, f"could not describe it: {error_code(exc)}",
                       "run doctor with credentials allowed states:DescribeStateMachine")
    status = described.get("status", "ACTIVE")
    if status != "ACTIVE":
        return Finding("state machine", PROBLEM, f"{described.get('name')}: {status}", _DEPLOY[0].upper() + _DEPLOY[1:])
    return Finding("state machine", OK, f"{described.get('name')}: {status}, {described.get('type', 'STANDARD')}")


def stack_resources(cfn: Any, stack: str, resource_type: str) -> list[str]:
    """Physical ids of ``resource_type`` in the stack and its nested stacks."""
    found: list[str] = []
    for page in cfn.get_paginator("list_stack_resources").paginate(StackName=stack):
        for resource in page.get("StackResourceSummaries", []):
            kind, physical = resource.get("ResourceType"), resource.get("PhysicalResourceId")
            if not physical or resource.get("ResourceStatus", "").startswith("DELETE"):
                continue
            if kind == resource_type:
                found.append(physical)
            elif kind == "AWS::CloudFormation::Stack":
                found += stack_resources(cfn, physical, resource_type)
    return found


def function_environments(cfn: Any, lambda_client: Any, stack: str) -> tuple[dict[str, dict[str, str]], list[Finding]]:
    """Each function of the stack -> its environment variables (where the stack records its configuration)."""
    from botocore.exceptions import ClientError

    environments: dict[str, dict[str, str]] = {}
    try:
        for name in stack_resources(cfn, stack, "AWS::Lambda::Function"):
            configuration = lambda_client.get_function_configuration(FunctionName=name)
            environments[name] = configuration.get("Environment", {}).get("Variables", {})
    except ClientError as exc:
        return {}, [Finding("functions", WARNING, f"could not read the functions' configuration: {error_code(exc)}; "
                                                  "the model and parameter checks were not done",
                            "run doctor with credentials allowed cloudformation:ListStackResources and "
                            "lambda:GetFunctionConfiguration")]
    judged = [env for env in environments.values() if "JUDGE" in env]
    if not judged:
        return {}, [Finding("functions", PROBLEM, f"no function of the stack records the judge ({len(environments)} "
                                                  "functions read)", f"is this the evaluation stack? {_DEPLOY}")]
    return environments, [Finding("functions", OK, f"{len(environments)} functions read")]


# ---- models ---------------------------------------------------------------------------------------

def model_checks(client: Callable[[str], Any], environments: dict[str, dict[str, str]], region: str) -> list[Finding]:
    judges = {(env.get("JUDGE"), env.get("JUDGE_MODEL_ID")) for env in environments.values() if "JUDGE" in env}
    if len(judges) > 1:
        return [Finding("judge", PROBLEM, f"the functions disagree on the judge: {sorted(map(str, judges))}",
                        "deploy again: a partial update left functions on different configurations")]
    judge, judge_model = judges.pop()
    findings: list[Finding] = []
    facts = None
    if judge != "bedrock":
        findings.append(Finding("judge", OK, f"{judge} judge: no Bedrock judge model to check"))
    elif not judge_model:
        findings.append(Finding("judge", PROBLEM, "the Bedrock judge has no JUDGE_MODEL_ID",
                                "set judge_model_id in cdk.json and redeploy"))
    else:
        judge_findings, facts = model_findings(client("bedrock"), judge_model, "judge model", region)
        findings += judge_findings
    generation = [env["GENERATION_MODEL_IDS"] for env in environments.values() if "GENERATION_MODEL_IDS" in env]
    if not generation:
        findings.append(Finding("generation models", WARNING, "the Generate function does not record its models "
                                                              "(GENERATION_MODEL_IDS): a stack deployed before doctor",
                                "deploy this version of the app, then run doctor again"))
    elif not (models := [m for m in generation[0].split(",") if m]):
        findings.append(Finding("generation models", WARNING, "Generate may invoke no Bedrock model: every bedrock: "
                                                              "target fails its generations with AccessDenied",
                                "list the models in generation.bedrock_generation_model_ids (cdk.json) and redeploy"))
    else:
        for model in models:
            findings += model_findings(client("bedrock"), model, "generation model", region)[0]
        if judge == "bedrock" and judge_model:
            same = [m for m in models if normalised_model_id(m) == normalised_model_id(judge_model)]
            findings.append(
                Finding("judge is not a generator", PROBLEM,
                        f"{', '.join(same)} generates with the judge's model {judge_model}: Prepare refuses such runs",
                        "list another generation model or choose another judge_model_id, and redeploy")
                if same else
                Finding("judge is not a generator", OK, f"judge {judge_model}; generation {', '.join(models)}"))
    if facts is not None:
        try:
            quotas = client("service-quotas") if facts.name else None
        except Exception:  # noqa: BLE001 - a hint only
            quotas = None
        concurrency = next((env["DEFAULT_MAX_CONCURRENCY"] for env in environments.values()
                            if "DEFAULT_MAX_CONCURRENCY" in env), None)
        findings.append(quota_hint(quotas, facts, concurrency, region))
    return findings


# ---- parameters and alerts ------------------------------------------------------------------------

def parameter_checks(ssm: Any, environments: dict[str, dict[str, str]]) -> list[Finding]:
    """Every SSM parameter a handler reads (an environment variable *_PARAMETER naming one) exists; the
    production target's value is a target spec of a kind the deployment allows."""
    from botocore.exceptions import ClientError

    allowed = next((env["ALLOWED_TARGET_KINDS"] for env in environments.values() if "ALLOWED_TARGET_KINDS" in env),
                   None)
    names = sorted({value for env in environments.values() for key, value in env.items()
                    if key.endswith("_PARAMETER") and value.startswith("/")})
    findings: list[Finding] = []
    for name in names:
        check = f"parameter {name}"
        try:
            value = ssm.get_parameter(Name=name, WithDecryption=True)["Parameter"]["Value"]
        except ClientError as exc:
            if error_code(exc) == "ParameterNotFound":
                findings.append(Finding(check, PROBLEM, f"does not exist: every run naming ssm:{name} fails in Prepare",
                                        f"create it: aws ssm put-parameter --type String --name {name} --value "
                                        "recorded "
                                        "(or set generation.create_production_parameter true and redeploy)"))
            else:
                findings.append(Finding(check, WARNING, f"could not read it: {error_code(exc)}",
                                        "run doctor with credentials allowed ssm:GetParameter"))
            continue
        findings.append(_target_value(check, value, allowed))
    return findings


def _target_value(check: str, value: str, allowed: str | None) -> Finding:
    """The value read as Prepare reads it: a target spec, of a kind the functions' ALLOWED_TARGET_KINDS
    allow (targets.policy, as in a Lambda runtime)."""
    from fmquality.domain.errors import TargetKindRefused
    from fmquality.targets.base import TargetSpec
    from fmquality.targets.policy import allowed_target_kinds, check_target_kind

    fix = "put a target spec in it (recorded | bedrock:... | lambda:... | https://..., docs/targets.md)"
    try:
        spec = TargetSpec.parse(value)
    except ValueError as exc:
        return Finding(check, PROBLEM, f"holds {value!r}, not a target spec: {' '.join(str(exc).split())[:200]}", fix)
    try:
        check_target_kind(spec, allowed_target_kinds({"ALLOWED_TARGET_KINDS": allowed or "",
                                                      "AWS_EXECUTION_ENV": "AWS_Lambda_doctor"}), check)
    except (TargetKindRefused, ValueError) as exc:
        return Finding(check, PROBLEM, " ".join(str(exc).split()),
                       "allow the kind (generation.allowed_target_kinds in cdk.json, then redeploy) or " + fix)
    return Finding(check, OK, f"holds {value!r}")


def alerts_subscription(sns: Any, topic_arn: str) -> Finding:
    from botocore.exceptions import ClientError

    check = "alerts subscription"
    try:
        subscriptions = [s for page in sns.get_paginator("list_subscriptions_by_topic").paginate(TopicArn=topic_arn)
                         for s in page.get("Subscriptions", [])]
    except ClientError as exc:
        return Finding(check, WARNING, f"could not list the topic's subscriptions: {error_code(exc)}",
                       "run doctor with credentials allowed sns:ListSubscriptionsByTopic")
    confirmed = [s for s in subscriptions if s.get("SubscriptionArn", "").startswith("arn:")]
    if confirmed:
        return Finding(check, OK, ", ".join(f"{s.get('Protocol')}:{s.get('Endpoint')}" for s in confirmed))
    pending = [s.get("Endpoint", "") for s in subscriptions if s.get("SubscriptionArn") == "PendingConfirmation"]
    if pending:
        return Finding(check, WARNING, f"no confirmed subscription; pending: {', '.join(pending)}",
                       "open the confirmation e-mail AWS sent and confirm it: until then no alarm reaches anyone")
    return Finding(check, WARNING, "the alerts topic has no subscription: no alarm reaches anyone",
                   f"set alert_email in cdk.json and redeploy, or aws sns subscribe --topic-arn {topic_arn} "
                   "--protocol email --notification-endpoint <you>; then confirm it")


# ---- the pipeline stack ---------------------------------------------------------------------------

def pipeline_checks(client: Callable[[str], Any], name: str) -> list[Finding]:
    from botocore.exceptions import ClientError

    described = describe_stack(client("cloudformation"), name)
    findings = [stack_status(described, "pipeline stack")]
    outputs, output_findings = stack_outputs(described, PIPELINE_OUTPUTS, "pipeline outputs")
    findings += output_findings
    bucket = outputs.get("PromptBundleSourceBucketName")
    if bucket:
        s3 = client("s3")
        check = f"bundle bucket {bucket}"
        try:
            notifications = s3.get_bucket_notification_configuration(Bucket=bucket)
            versioning = s3.get_bucket_versioning(Bucket=bucket).get("Status")
        except ClientError as exc:
            findings.append(Finding(check, WARNING, f"could not read its configuration: {error_code(exc)}",
                                    "run doctor with credentials allowed s3:GetBucketNotification and "
                                    "s3:GetBucketVersioning"))
        else:
            if "EventBridgeConfiguration" not in notifications:
                findings.append(Finding(check, PROBLEM, "sends no EventBridge notifications: an upload of the bundle "
                                                        "never starts the pipeline",
                                        "redeploy the pipeline stack, or turn them on (S3 console > Properties > "
                                        "Amazon EventBridge: On)"))
            else:
                findings.append(Finding(check, OK, "EventBridge notifications on"))
            if versioning != "Enabled":
                findings.append(Finding(f"{check} versioning", PROBLEM, f"versioning is {versioning or 'off'}: the "
                                        "source stage names the candidate by its version id",
                                        f"aws s3api put-bucket-versioning --bucket {bucket} "
                                        "--versioning-configuration Status=Enabled"))
    pipeline = outputs.get("PipelineName")
    if pipeline:
        try:
            stages = client("codepipeline").get_pipeline(name=pipeline)["pipeline"].get("stages", [])
        except ClientError as exc:
            missing = error_code(exc) == "PipelineNotFoundException"
            findings.append(Finding(f"pipeline {pipeline}", PROBLEM if missing else WARNING,
                                    "does not exist" if missing else f"could not read it: {error_code(exc)}",
                                    "redeploy the pipeline stack" if missing
                                    else "run doctor with credentials allowed codepipeline:GetPipeline"))
        else:
            findings.append(Finding(f"pipeline {pipeline}", OK,
                                    "stages " + " -> ".join(s.get("name", "?") for s in stages)))
    return findings
