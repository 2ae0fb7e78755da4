"""cdk-nag (AwsSolutions) acknowledgments: the one helper that records them and the finding ids they name.

app.py runs the AwsSolutions pack as a validation plugin, so an unacknowledged finding fails synth. Each
construct acknowledges the findings about its own resources, next to the grants they are about (a new
wildcard grant and its reason live in the same file), scoped to the construct the finding names.
Finding ids spell tokens the way cdk-nag prints them: ``<LogicalId.Arn>``, ``<AWS::Region>``.
"""

from __future__ import annotations

from aws_cdk import Acknowledgment, Stack, Token, Validations
from constructs import Construct, IConstruct

# The reasons several roles share, worded once.
TRACING_REASON = ("X-Ray PutTraceSegments/PutTelemetryRecords (active tracing) support no resource-level "
                  "permissions, so their statement needs Resource '*'")
METRICS_REASON = ("; cloudwatch:PutMetricData has no resource-level permission either and is limited by a "
                  "cloudwatch:namespace = MangaAssist/Evaluation condition")
ANY_RESOURCE = "AwsSolutions-IAM5[Resource::*]"


def acknowledge(scope: IConstruct, rule_id: str, reason: str) -> None:
    """Acknowledge ``rule_id`` on ``scope`` (and its children) with the reason a reviewer reads."""
    Validations.of(scope).acknowledge(Acknowledgment(id=rule_id, reason=reason))


def wildcard_resource(resource: str) -> str:
    """The finding id of an IAM5 finding about a wildcard resource, e.g. ``<Bucket.Arn>/runs/*``."""
    return f"AwsSolutions-IAM5[Resource::{resource}]"


def arn_of(resource: Construct) -> str:
    """How cdk-nag prints the ARN of ``resource``'s CloudFormation resource: ``<LogicalId.Arn>``."""
    return f"<{Stack.of(resource).get_logical_id(resource.node.default_child)}.Arn>"


def states_arn_prefix(stack: Stack) -> str:
    """How cdk-nag prints this stack's Step Functions ARN prefix in a finding id (tokens as <AWS::...>)."""
    region = "<AWS::Region>" if Token.is_unresolved(stack.region) else stack.region
    account = "<AWS::AccountId>" if Token.is_unresolved(stack.account) else stack.account
    return f"arn:<AWS::Partition>:states:{region}:{account}"
