"""EvaluationStack: the quality gate, one construct per concern."""

from __future__ import annotations

from typing import Any

from aws_cdk import Acknowledgment, CfnOutput, Stack, Token, Validations
from constructs import Construct

from infra.config import FmQualityConfig
from infra.constructs.monitoring import Monitoring
from infra.constructs.production_target import ProductionTarget
from infra.constructs.scorer_functions import EvaluationFunctions
from infra.constructs.state_machine import EvaluationStateMachine
from infra.constructs.storage import Storage
from infra.constructs.triggers import ProjectEventBus, Triggers, catalog_input, s3_uri


class EvaluationStack(Stack):
    def __init__(self, scope: Construct, construct_id: str, *, config: FmQualityConfig, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.config = config

        self.storage = Storage(self, "Storage", config=config)
        self.event_bus = ProjectEventBus(self, "Events", config=config).bus
        self.production_target = ProductionTarget(self, "ProductionTarget", config=config)
        self.functions = EvaluationFunctions(
            self, "Functions", config=config, storage=self.storage, event_bus=self.event_bus,
            production_target=self.production_target,
        )
        self.evaluation = EvaluationStateMachine(
            self, "Evaluation", config=config, storage=self.storage, functions=self.functions
        )
        self.state_machine = self.evaluation.state_machine
        self.monitoring = Monitoring(
            self, "Monitoring", config=config, functions=self.functions, state_machine=self.state_machine
        )
        self.triggers = Triggers(
            self,
            "Triggers",
            config=config,
            storage=self.storage,
            state_machine=self.state_machine,
            event_bus=self.event_bus,
            alerts_topic=self.monitoring.topic,
        )

        self.golden_dataset_uri = s3_uri(self.storage, config.golden_dataset_key)
        self.catalog_uri = catalog_input(config, self.storage)

        CfnOutput(self, "StateMachineArn", value=self.state_machine.state_machine_arn)
        CfnOutput(self, "DataBucketName", value=self.storage.data_bucket.bucket_name)
        CfnOutput(self, "TableName", value=self.storage.table.table_name)
        CfnOutput(self, "EventBusName", value=self.event_bus.event_bus_name)
        CfnOutput(self, "AlertsTopicArn", value=self.monitoring.topic.topic_arn)
        CfnOutput(self, "GoldenDatasetUri", value=self.golden_dataset_uri)

        self._acknowledge_nag_findings()

        # Production watch (issue 10): capture stream, weekly sampler, drift/review on sampled runs.
        if config.production_watch.enabled:
            from infra.constructs.production_watch import ProductionWatch, acknowledge_nag_findings

            self.production_watch = ProductionWatch(
                self, "ProductionWatch", config=config, storage=self.storage, functions=self.functions,
                state_machine=self.state_machine, event_bus=self.event_bus, monitoring=self.monitoring)
            acknowledge_nag_findings(self, self.production_watch)

    # ---- cdk-nag (AwsSolutions): each acknowledgment is scoped to the construct it is about.
    def _acknowledge_nag_findings(self) -> None:
        bucket = f"<{self.get_logical_id(self.storage.data_bucket.node.default_child)}.Arn>"
        runs_prefix = f"AwsSolutions-IAM5[Resource::{bucket}/runs/*]"
        xray = ("X-Ray PutTraceSegments/PutTelemetryRecords (active tracing) support no resource-level "
                "permissions, so their statement needs Resource '*'")
        functions = self.functions
        _ack(functions.prepare.role, f"AwsSolutions-IAM5[Resource::{bucket}/datasets/*]",
             "Prepare reads the dataset, catalog and rubric named in the execution input; any key under "
             "datasets/ of the project's data bucket may be chosen by the caller, nothing outside it")
        _ack(functions.prepare.role, runs_prefix,
             "Prepare writes runs/<run_id>/{items.json,rejected.jsonl,rubric.json}; the run id is generated per "
             "execution, so the grant is the runs/ prefix (write only, s3:PutObject)")
        for role_name in (*functions.dimensions, "composite"):  # one scorer per profile dimension
            _ack(functions.by_role[role_name].role, runs_prefix,
                 f"The {role_name} function reads its run's resolved rubric runs/<run_id>/rubric.json; the run id "
                 "is only known at run time (read only, s3:GetObject)")
        bundle_prefix = self.config.generation.bundle_prefix
        _ack(functions.generate.role, f"AwsSolutions-IAM5[Resource::{bucket}/{bundle_prefix}*]",
             f"Generate reads the prompt-bundle version a 'bedrock:s3://...?versionId=V' target names; bundles live "
             f"under {bundle_prefix} of the data bucket and their keys come from the caller (change event, console), "
             "so the grant is that prefix (read only: s3:GetObject, s3:GetObjectVersion)")
        _ack(functions.generate.role, runs_prefix,
             "Generate reads its run's resolved targets runs/<run_id>/targets.json written by Prepare; the run id is "
             "only known at run time (read only, s3:GetObject)")
        _ack(functions.aggregate.role, runs_prefix,
             "Aggregate reads runs/<run_id>/items.json and the baseline run's report, and writes results.jsonl, "
             "report.json and report.html under runs/; run ids are only known at run time")
        for name, function in functions.by_role.items():
            reason = xray
            if name == "aggregate":
                reason += ("; cloudwatch:PutMetricData has no resource-level permission either and is limited by a "
                           "cloudwatch:namespace = MangaAssist/Evaluation condition")
            _ack(function.role, "AwsSolutions-IAM5[Resource::*]", reason)

        sm_role = self.evaluation.role
        _ack(sm_role, runs_prefix,
             "The Distributed Map's ItemReader reads runs/<run_id>/items.json written by Prepare; the run id is "
             "only known at run time (read only, s3:GetObject)")
        _ack(sm_role, "AwsSolutions-IAM5[Resource::*]",
             "CloudWatch Logs vended-log delivery actions (logs:CreateLogDelivery, PutResourcePolicy, ...) "
             "required for execution logging, and X-Ray tracing actions, support no resource-level permissions")
        child_executions = (
            f"AwsSolutions-IAM5[Resource::{_nag_states_arn_prefix(self)}:"
            f"execution:{self.evaluation.name}/*]"
        )
        _ack(sm_role, child_executions,
             "The Distributed Map describes and stops its own child executions, whose names Step Functions "
             "generates at run time; scoped to executions of this state machine only")
        _ack(self.state_machine.node.default_child, "CloudFormation-Validate::E1029",
             "The ${...} in DefinitionString are Step Functions DefinitionSubstitutions placeholders (filled from "
             "the DefinitionSubstitutions property), not Fn::Sub variables")


def _ack(scope: Construct, rule_id: str, reason: str) -> None:
    Validations.of(scope).acknowledge(Acknowledgment(id=rule_id, reason=reason))


def _nag_states_arn_prefix(stack: Stack) -> str:
    """How cdk-nag prints this stack's Step Functions ARN prefix in a finding id (tokens as <AWS::...>)."""
    region = "<AWS::Region>" if Token.is_unresolved(stack.region) else stack.region
    account = "<AWS::AccountId>" if Token.is_unresolved(stack.account) else stack.account
    return f"arn:<AWS::Partition>:states:{region}:{account}"
