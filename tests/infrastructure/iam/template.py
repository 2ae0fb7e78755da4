"""The synthesized templates as AWS would see them once deployed: intrinsic functions resolved to
concrete names and ARNs, and every role's identity policies gathered from all the stacks that attach
one (a pipeline-stack policy attached by name to an evaluation-stack role counts for that role).

Physical names that CloudFormation would generate are stood in for by a deterministic name per logical
id (lower case, like S3's): what matters for IAM is that a function's environment variable and its
role's policy resolve to the SAME name, which they do because both come from the same Ref/GetAtt.
Pure Python; reads the cdk.out directory of the session's synth.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PARTITION = "aws"


def _physical_name(logical_id: str) -> str:
    return f"{logical_id.lower()[:40]}-gen"


@dataclass
class Stack:
    name: str
    template: dict[str, Any]
    parameters: dict[str, Any] = field(default_factory=dict)  # a nested stack's parameters, resolved


class Resolver:
    """Resolves Ref, Fn::GetAtt, Fn::Join, Fn::Sub, Fn::Select, Fn::Split, Fn::ImportValue across the
    app's stacks (nested ones included) for one account and region."""

    def __init__(self, outdir: Path, account: str, region: str) -> None:
        self.account, self.region = account, region
        self.stacks: dict[str, Stack] = {}
        for path in sorted(outdir.glob("*.template.json")):
            name = path.name.removesuffix(".template.json").removesuffix(".nested")
            self.stacks[name] = Stack(name, json.loads(path.read_text(encoding="utf-8")))
        # A nested stack's TemplateURL ends in the hash of its file asset (<stack>.assets.json names it).
        asset_files: dict[str, str] = {}
        for manifest in outdir.glob("*.assets.json"):
            for digest, asset in json.loads(manifest.read_text(encoding="utf-8")).get("files", {}).items():
                asset_files[digest] = asset["source"]["path"].removesuffix(".template.json").removesuffix(".nested")
        self._nested_parent: dict[str, tuple[str, str]] = {}  # nested template name -> (parent, logical id)
        for stack in list(self.stacks.values()):
            for logical_id, resource in stack.template.get("Resources", {}).items():
                if resource["Type"] == "AWS::CloudFormation::Stack":
                    url = json.dumps(resource["Properties"]["TemplateURL"])
                    digest = re.search(r"([0-9a-f]{64})\.json", url)
                    nested = asset_files.get(digest.group(1)) if digest else None
                    if nested in self.stacks:
                        self._nested_parent[nested] = (stack.name, logical_id)
        for nested, (parent, logical_id) in self._nested_parent.items():
            params = self.stacks[parent].template["Resources"][logical_id]["Properties"].get("Parameters", {})
            self.stacks[nested].parameters = {k: self.resolve(parent, v) for k, v in params.items()}
        self._exports = {}
        for stack in self.stacks.values():
            for output in stack.template.get("Outputs", {}).values():
                if "Export" in output:
                    self._exports[self.resolve(stack.name, output["Export"]["Name"])] = (stack.name, output["Value"])

    # ---- names and ARNs of resources ------------------------------------------------------------
    def _name(self, stack: str, logical_id: str) -> str:
        resource = self.stacks[stack].template["Resources"][logical_id]
        props = resource.get("Properties", {})
        for key in ("BucketName", "TableName", "FunctionName", "RoleName", "QueueName", "TopicName", "StateMachineName",
                    "DeliveryStreamName", "LogGroupName", "Name", "ScheduleName"):
            if key in props:
                return self.resolve(stack, props[key])
        return _physical_name(logical_id)

    def ref(self, stack: str, logical_id: str) -> str:
        pseudo = {"AWS::Partition": PARTITION, "AWS::Region": self.region, "AWS::AccountId": self.account,
                  "AWS::URLSuffix": "amazonaws.com", "AWS::StackName": stack, "AWS::NoValue": None}
        if logical_id in pseudo:
            return pseudo[logical_id]
        s = self.stacks[stack]
        if logical_id in s.parameters:
            return s.parameters[logical_id]
        if logical_id in s.template.get("Parameters", {}):
            default = s.template["Parameters"][logical_id].get("Default")
            if default is None:
                raise KeyError(f"{stack}: parameter {logical_id} has no value")
            return default
        kind = s.template["Resources"][logical_id]["Type"]
        name = self._name(stack, logical_id)
        if kind == "AWS::SNS::Topic":
            return f"arn:{PARTITION}:sns:{self.region}:{self.account}:{name}"
        if kind == "AWS::SQS::Queue":
            return f"https://sqs.{self.region}.amazonaws.com/{self.account}/{name}"
        if kind == "AWS::StepFunctions::StateMachine":
            return f"arn:{PARTITION}:states:{self.region}:{self.account}:stateMachine:{name}"
        if kind == "AWS::SecretsManager::Secret":  # Ref gives the full ARN, with its random suffix
            return f"arn:{PARTITION}:secretsmanager:{self.region}:{self.account}:secret:{name}-AbCdEf"
        if kind == "AWS::IAM::ManagedPolicy":
            return f"arn:{PARTITION}:iam::{self.account}:policy/{name}"
        return name

    def get_att(self, stack: str, logical_id: str, attribute: str) -> str:
        s = self.stacks[stack]
        resource = s.template["Resources"][logical_id]
        kind = resource["Type"]
        if kind == "AWS::CloudFormation::Stack" and attribute.startswith("Outputs."):
            nested = next(n for n, (p, lid) in self._nested_parent.items() if p == stack and lid == logical_id)
            return self.resolve(nested, self.stacks[nested].template["Outputs"][attribute.split(".", 1)[1]]["Value"])
        name = self._name(stack, logical_id)
        r, a = self.region, self.account
        arns = {
            "AWS::S3::Bucket": f"arn:{PARTITION}:s3:::{name}",
            "AWS::DynamoDB::Table": f"arn:{PARTITION}:dynamodb:{r}:{a}:table/{name}",
            "AWS::Lambda::Function": f"arn:{PARTITION}:lambda:{r}:{a}:function:{name}",
            "AWS::IAM::Role": f"arn:{PARTITION}:iam::{a}:role/{name}",
            "AWS::SQS::Queue": f"arn:{PARTITION}:sqs:{r}:{a}:{name}",
            "AWS::SNS::Topic": f"arn:{PARTITION}:sns:{r}:{a}:{name}",
            "AWS::Events::EventBus": f"arn:{PARTITION}:events:{r}:{a}:event-bus/{name}",
            "AWS::Events::Rule": f"arn:{PARTITION}:events:{r}:{a}:rule/{name}",
            "AWS::Logs::LogGroup": f"arn:{PARTITION}:logs:{r}:{a}:log-group:{name}:*",
            "AWS::KinesisFirehose::DeliveryStream": f"arn:{PARTITION}:firehose:{r}:{a}:deliverystream/{name}",
            "AWS::KMS::Key": f"arn:{PARTITION}:kms:{r}:{a}:key/{name}",
            "AWS::StepFunctions::StateMachine": f"arn:{PARTITION}:states:{r}:{a}:stateMachine:{name}",
            "AWS::Scheduler::Schedule": f"arn:{PARTITION}:scheduler:{r}:{a}:schedule/default/{name}",
            "AWS::Scheduler::ScheduleGroup": f"arn:{PARTITION}:scheduler:{r}:{a}:schedule-group/{name}",
            "AWS::CodePipeline::Pipeline": f"arn:{PARTITION}:codepipeline:{r}:{a}:{name}",
        }
        if attribute == "Arn" and kind in arns:
            return arns[kind]
        if attribute in ("Name", "QueueName", "TopicName") or (kind == "AWS::SNS::Topic" and attribute == "TopicArn"):
            return arns.get(kind, name) if attribute == "TopicArn" else name
        if attribute == "QueueUrl":
            return self.ref(stack, logical_id)
        if attribute == "StreamArn":
            return arns[kind] + "/stream/2026-01-01T00:00:00.000"
        raise KeyError(f"{stack}: GetAtt {logical_id}.{attribute} ({kind}) is not modelled")

    # ---- intrinsic functions ---------------------------------------------------------------------
    def resolve(self, stack: str, value: Any) -> Any:
        if isinstance(value, list):
            return [self.resolve(stack, v) for v in value]
        if not isinstance(value, dict):
            return value
        if len(value) != 1:
            return {k: self.resolve(stack, v) for k, v in value.items()}
        (fn, arg), = value.items()
        if fn == "Ref":
            return self.ref(stack, arg)
        if fn == "Fn::GetAtt":
            logical_id, attribute = arg if isinstance(arg, list) else arg.split(".", 1)
            return self.get_att(stack, logical_id, attribute)
        if fn == "Fn::Join":
            sep, parts = arg
            return sep.join(str(self.resolve(stack, p)) for p in self.resolve(stack, parts))
        if fn == "Fn::Select":
            index, items = arg
            return self.resolve(stack, items)[int(self.resolve(stack, index))]
        if fn == "Fn::Split":
            sep, text = arg
            return str(self.resolve(stack, text)).split(sep)
        if fn == "Fn::ImportValue":
            other, exported = self._exports[self.resolve(stack, arg)]
            return self.resolve(other, exported)
        if fn == "Fn::Sub":
            text, variables = (arg, {}) if isinstance(arg, str) else arg
            variables = {k: self.resolve(stack, v) for k, v in variables.items()}

            def sub(match: re.Match[str]) -> str:
                name = match.group(1)
                if name.startswith("!"):
                    return "${" + name[1:] + "}"
                if name in variables:
                    return str(variables[name])
                if "." in name:
                    return str(self.get_att(stack, *name.split(".", 1)))
                return str(self.ref(stack, name))

            return re.sub(r"\$\{([^}]+)\}", sub, text)
        return {fn: self.resolve(stack, arg)}

    # ---- roles, their policies, the functions and what they run ------------------------------------
    def role_arn(self, stack: str, logical_id: str) -> str:
        return self.get_att(stack, logical_id, "Arn")

    def policies_of_role(self, role_name: str) -> list[dict[str, Any]]:
        """Every identity policy attached to the role named ``role_name``, from any stack: inline
        AWS::IAM::Policy resources, the role's own Policies and its managed policies (CDK adds none
        here; one would be listed by ARN and fail the evaluation as unknown)."""
        policies: list[dict[str, Any]] = []
        for stack in self.stacks.values():
            for logical_id, resource in stack.template.get("Resources", {}).items():
                props = resource.get("Properties", {})
                if resource["Type"] == "AWS::IAM::Policy":
                    if role_name in [self.resolve(stack.name, r) for r in props.get("Roles", [])]:
                        policies.append({"name": f"{stack.name}/{logical_id}",
                                         "policy": self.resolve(stack.name, props["PolicyDocument"])})
                elif resource["Type"] == "AWS::IAM::Role" and self._name(stack.name, logical_id) == role_name:
                    for inline in props.get("Policies", []):
                        policies.append({"name": f"{stack.name}/{logical_id}/{inline['PolicyName']}",
                                         "policy": self.resolve(stack.name, inline["PolicyDocument"])})
                    for managed in props.get("ManagedPolicyArns", []):
                        policies.append({"name": f"{stack.name}/{logical_id}/managed",
                                         "managed_policy_arn": self.resolve(stack.name, managed)})
        return policies

    def resource_policy(self, arn: str) -> dict[str, Any] | None:
        """The resource-based policy AWS evaluates with a request on ``arn``: the bucket policy of an S3
        ARN, a KMS key's key policy, an SQS queue's or SNS topic's policy; None when there is none."""
        if arn.startswith("arn:aws:s3:::"):
            bucket = arn.removeprefix("arn:aws:s3:::").split("/", 1)[0]
            for stack, _, resource in self.resources_of("AWS::S3::BucketPolicy"):
                if self.resolve(stack, resource["Properties"]["Bucket"]) == bucket:
                    return self.resolve(stack, resource["Properties"]["PolicyDocument"])
        elif ":kms:" in arn:
            for stack, logical_id, resource in self.resources_of("AWS::KMS::Key"):
                if self.get_att(stack, logical_id, "Arn") == arn:
                    return self.resolve(stack, resource["Properties"]["KeyPolicy"])
        elif ":sqs:" in arn:
            for stack, _, resource in self.resources_of("AWS::SQS::QueuePolicy"):
                urls = self.resolve(stack, resource["Properties"]["Queues"])
                if any(url.rsplit("/", 1)[1] == arn.rsplit(":", 1)[1] for url in urls):
                    return self.resolve(stack, resource["Properties"]["PolicyDocument"])
        elif ":sns:" in arn:
            for stack, _, resource in self.resources_of("AWS::SNS::TopicPolicy"):
                if arn in self.resolve(stack, resource["Properties"]["Topics"]):
                    return self.resolve(stack, resource["Properties"]["PolicyDocument"])
        return None

    def resources_of(self, kind: str) -> list[tuple[str, str, dict[str, Any]]]:
        """(stack, logical id, resource) of every resource of ``kind``."""
        return [(s.name, lid, r) for s in self.stacks.values()
                for lid, r in s.template.get("Resources", {}).items() if r["Type"] == kind]


@dataclass
class Function:
    stack: str
    logical_id: str
    handler: str
    dimension: str | None
    role_name: str
    role_arn: str
    environment: dict[str, str]


def functions(resolver: Resolver) -> list[Function]:
    """Every Lambda function of the app that runs our code (handlers.*), with its role and environment."""
    found = []
    for stack, logical_id, resource in resolver.resources_of("AWS::Lambda::Function"):
        props = resource["Properties"]
        handler = props.get("Handler", "")
        if not handler.startswith("handlers."):
            continue
        role_stack, role_id = stack, props["Role"]["Fn::GetAtt"][0]
        environment = resolver.resolve(stack, props.get("Environment", {}).get("Variables", {}))
        found.append(Function(stack, logical_id, handler, environment.get("DIMENSION"),
                              resolver._name(role_stack, role_id), resolver.role_arn(role_stack, role_id),
                              environment))
    return found
