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

from aws_cdk import ArnFormat, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from infra.asl import asl_substitutions, load_definition, map_result_prefixes
from infra.config import FmQualityConfig
from infra.constructs import nag
from infra.constructs.evaluation_functions import EvaluationFunctions
from infra.constructs.policies import statement
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
    """The state machine, its hand-written role and its log group."""

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
        self._storage = storage
        self.name = state_machine_name(Stack.of(self).stack_name)
        self.definition = load_definition(functions.dimensions)
        self.role = self._role(functions)
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
            definition_body=sfn.DefinitionBody.from_string(self.definition),
            definition_substitutions=self.substitutions,
            role=self.role,
            logs=state_machine_log_options(config, self.log_group),
            tracing_enabled=True,
            comment=f"MangaAssist answer-quality gate ({config.env_name})",
        )
        # The ${...} in DefinitionString are DefinitionSubstitutions placeholders, which cfn-lint's E1029
        # mistakes for Fn::Sub variables; suppressed for this resource only.
        self.state_machine.node.default_child.add_metadata("cfn-lint", {"config": {"ignore_checks": ["E1029"]}})
        self._acknowledge_nag_findings(config)

    def _arn(self, resource: str, resource_name: str) -> str:
        """An ARN of this state machine (or of its executions) built from its fixed name."""
        return Stack.of(self).format_arn(service="states", resource=resource, resource_name=resource_name,
                                         arn_format=ArnFormat.COLON_RESOURCE_NAME)

    def _role(self, functions: EvaluationFunctions) -> iam.Role:
        """Invoke the gate's functions, read and write the Map's files under runs/, run the Map's children."""
        runs = self._storage.runs_arn()
        role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("states.amazonaws.com"),
            description="fmquality evaluation state machine: invoke the gate's functions, read run items",
        )
        # The ResultWriter's prefixes, read from the definition (runs/map-results): a Distributed Map
        # writes its manifest and result files there as multipart uploads, lists the parts it uploaded,
        # aborts an upload it cannot finish and reads back what it wrote (AWS's ResultWriter policy).
        results = [self._storage.data_bucket.arn_for_objects(f"{prefix.rstrip('/')}/*")
                   for prefix in map_result_prefixes(self.definition)]
        for grant in (
            statement("InvokeGateFunctions", ["lambda:InvokeFunction"],
                      [fn.function_arn for fn in functions.by_role.values()]),
            statement("ItemReaderReadsRunItems", ["s3:GetObject"], [runs]),
            # Without a ResultWriter a Distributed Map returns every child's output in the state output,
            # which passes the 256 KB payload limit at a few thousand items; results go to S3 instead.
            *([statement("ResultWriterWritesMapResults",
                         ["s3:PutObject", "s3:GetObject", "s3:ListMultipartUploadParts", "s3:AbortMultipartUpload"],
                         results)] if results else []),
            statement("DistributedMapStartsChildren", ["states:StartExecution"],
                      [self._arn("stateMachine", self.name)]),
            # The Map run describes and stops its child executions: execution:<name>:* is the resource of
            # AWS's Distributed Map policy example and of CDK's own grants; a child's ARN reads
            # execution:<name>/<map run label>:<id>, hence the second pattern. Both are this state
            # machine's executions only.
            statement("DistributedMapManagesChildren", ["states:DescribeExecution", "states:StopExecution"],
                      [self._arn("execution", f"{self.name}:*"), self._arn("execution", f"{self.name}/*")]),
        ):
            role.add_to_policy(grant)
        return role

    def _acknowledge_nag_findings(self, config: FmQualityConfig) -> None:
        """The role's wildcards, a deliberate log level below ALL, and cfn-lint's E1029."""
        level = config.state_machine_logs.level
        if level != "ALL":
            nag.acknowledge(self.state_machine, "AwsSolutions-SF1",
                            f"The deployment's configuration (cdk.json context fmquality.state_machine_logs.level = "
                            f"{level}) logs fewer events than ALL on purpose; each standard execution's own history "
                            "still keeps its events for 90 days, and an item whose child execution failed is "
                            "recorded as an error record in the run's results")
        bucket = nag.arn_of(self._storage.data_bucket)
        nag.acknowledge(self.role, nag.wildcard_resource(f"{bucket}/runs/*"),
                        "The Distributed Map's ItemReader reads runs/<run_id>/items.json written by Prepare; the run "
                        "id is only known at run time (read only, s3:GetObject)")
        nag.acknowledge(self.role, nag.ANY_RESOURCE,
                        "CloudWatch Logs vended-log delivery actions (logs:CreateLogDelivery, PutResourcePolicy, ...) "
                        "required for execution logging, and X-Ray tracing actions, support no resource-level "
                        "permissions")
        for child_executions in (f"{self.name}:*", f"{self.name}/*"):
            nag.acknowledge(self.role, nag.wildcard_resource(
                f"{nag.states_arn_prefix(Stack.of(self))}:execution:{child_executions}"),
                "The Distributed Map describes and stops its own child executions, whose names Step "
                "Functions generates at run time; scoped to executions of this state machine only")
        for prefix in map_result_prefixes(self.definition):
            nag.acknowledge(self.role, nag.wildcard_resource(f"{bucket}/{prefix.rstrip('/')}/*"),
                            "The Distributed Map's ResultWriter writes <prefix>/<map run id>/manifest.json and its "
                            "result files (multipart: put, list parts, abort) and reads them back; the map run id is "
                            "generated by Step Functions at run time; only the ResultWriter's prefix of the data bucket")
        nag.acknowledge(self.state_machine.node.default_child, "CloudFormation-Validate::E1029",
                        "The ${...} in DefinitionString are Step Functions DefinitionSubstitutions placeholders "
                        "(filled from the DefinitionSubstitutions property), not Fn::Sub variables")
