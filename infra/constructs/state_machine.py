"""The evaluation state machine: statemachines/evaluation.asl.json, inlined, placeholders substituted.

The definition is loaded as a string (DefinitionBody.from_string) so it lands in the template's
DefinitionString, where template assertions and cfn-lint can read it (from_file would upload it as a
separate asset). Its placeholders come from infra.asl.asl_substitutions, the mapping the local engine
shares.

The role is written by hand, not built from grants: a Distributed Map starts child executions of its
own state machine, and referencing the state machine's ARN from its own role would be a circular
dependency, so the ARNs are built from the (fixed) state machine name.
"""

from __future__ import annotations

from aws_cdk import Acknowledgment, ArnFormat, RemovalPolicy, Stack, Validations
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from infra.asl import asl_substitutions, load_definition
from infra.config import FmQualityConfig
from infra.constructs.scorer_functions import EvaluationFunctions
from infra.constructs.storage import Storage


def state_machine_name(stack_name: str) -> str:
    return f"{stack_name}-Evaluation"


def state_machine_log_options(config: FmQualityConfig, destination: logs.ILogGroup) -> sfn.LogOptions:
    """The log level from ``state_machine_logs`` (default ALL); execution data only when opted in, since
    states' inputs and outputs carry every test case, shopper turn and answer of a run."""
    settings = config.state_machine_logs
    return sfn.LogOptions(destination=destination, level=getattr(sfn.LogLevel, settings.level),
                          include_execution_data=settings.include_execution_data)


class EvaluationStateMachine(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: FmQualityConfig,
        storage: Storage,
        functions: EvaluationFunctions,
    ) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        self.name = state_machine_name(stack.stack_name)
        own_arn = stack.format_arn(
            service="states",
            resource="stateMachine",
            resource_name=self.name,
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )
        # Child executions of a Distributed Map: execution:<state machine name>/<map run>:<child>.
        child_executions_arn = stack.format_arn(
            service="states",
            resource="execution",
            resource_name=f"{self.name}/*",
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )

        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("states.amazonaws.com"),
            description="fmquality evaluation state machine: invoke the gate's functions, read run items",
        )
        self.role.add_to_policy(
            iam.PolicyStatement(
                sid="InvokeGateFunctions",
                actions=["lambda:InvokeFunction"],
                resources=[fn.function_arn for fn in functions.by_role.values()],
            )
        )
        self.role.add_to_policy(
            iam.PolicyStatement(
                sid="ItemReaderReadsRunItems",
                actions=["s3:GetObject"],
                resources=[storage.runs_arn()],
            )
        )
        # Without a ResultWriter a Distributed Map returns every child's output in the state output,
        # which passes the 256 KB payload limit at a few thousand items; results go to S3 instead.
        self.role.add_to_policy(
            iam.PolicyStatement(
                sid="ResultWriterWritesMapResults",
                actions=["s3:PutObject"],
                resources=[storage.runs_arn()],
            )
        )
        self.role.add_to_policy(
            iam.PolicyStatement(
                sid="DistributedMapStartsChildren",
                actions=["states:StartExecution"],
                resources=[own_arn],
            )
        )
        self.role.add_to_policy(
            iam.PolicyStatement(
                sid="DistributedMapManagesChildren",
                actions=["states:DescribeExecution", "states:StopExecution"],
                resources=[child_executions_arn],
            )
        )

        self.log_group = logs.LogGroup(
            self,
            "Logs",
            # Step Functions requires the /aws/vendedlogs/ prefix to avoid the resource-policy size limit.
            log_group_name=f"/aws/vendedlogs/states/{self.name}",
            retention=logs.RetentionDays.ONE_MONTH,
            removal_policy=RemovalPolicy.DESTROY,
        )

        self.substitutions = asl_substitutions(
            {role: fn.function_arn for role, fn in functions.by_role.items()},
            storage.data_bucket.bucket_name,
            functions.dimensions,
        )
        self.state_machine = sfn.StateMachine(
            self,
            "StateMachine",
            state_machine_name=self.name,
            state_machine_type=sfn.StateMachineType.STANDARD,
            definition_body=sfn.DefinitionBody.from_string(load_definition(functions.dimensions)),
            definition_substitutions=self.substitutions,
            role=self.role,
            logs=state_machine_log_options(config, self.log_group),
            tracing_enabled=True,
            comment=f"MangaAssist answer-quality gate ({config.env_name})",
        )
        # The ${...} in DefinitionString are DefinitionSubstitutions placeholders, which cfn-lint's E1029
        # mistakes for Fn::Sub variables; suppressed for this resource only.
        cfn_state_machine = self.state_machine.node.default_child
        cfn_state_machine.add_metadata("cfn-lint", {"config": {"ignore_checks": ["E1029"]}})
        level = config.state_machine_logs.level
        if level != "ALL":
            Validations.of(self.state_machine).acknowledge(Acknowledgment(
                id="AwsSolutions-SF1",
                reason=(f"The deployment's configuration (cdk.json context fmquality.state_machine_logs.level = {level}) "
                        "logs fewer events than ALL on purpose; each standard execution's own history still keeps "
                        "its events for 90 days, and an item whose child execution failed is recorded as an error "
                        "record in the run's results"),
            ))
