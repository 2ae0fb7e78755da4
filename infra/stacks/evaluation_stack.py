"""EvaluationStack: the quality gate, one construct per concern.

Each construct builds its resources, grants and cdk-nag acknowledgments in its own module
(infra/constructs/): Storage, ProjectEventBus, ProductionTarget, EvaluationFunctions,
EvaluationStateMachine, Monitoring, Triggers and, when enabled, the ProductionWatch nested stack. This
stack only wires them together and names the outputs.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Stack
from constructs import Construct

from infra.config import FmQualityConfig
from infra.constructs.evaluation_functions import EvaluationFunctions
from infra.constructs.monitoring import Monitoring
from infra.constructs.production_target import ProductionTarget
from infra.constructs.probes import Probes
from infra.constructs.production_watch import ProductionWatch
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
        self._outputs()

        # Production watch (issue 10): capture stream, weekly sampler, drift/review on sampled runs.
        if config.production_watch.enabled:
            self.production_watch = ProductionWatch(
                self, "ProductionWatch", config=config, storage=self.storage, functions=self.functions,
                state_machine=self.state_machine, event_bus=self.event_bus, monitoring=self.monitoring)
        # Counterfactual probes (issue 20): the probes file against the production target, on a schedule.
        if config.probes.enabled:
            self.probes = Probes(self, "Probes", config=config, storage=self.storage,
                                 state_machine=self.state_machine, topic=self.monitoring.topic)

    def _outputs(self) -> None:
        """What operators and the CLI look up after a deploy."""
        CfnOutput(self, "StateMachineArn", value=self.state_machine.state_machine_arn)
        CfnOutput(self, "DataBucketName", value=self.storage.data_bucket.bucket_name)
        CfnOutput(self, "TableName", value=self.storage.table.table_name)
        CfnOutput(self, "EventBusName", value=self.event_bus.event_bus_name)
        CfnOutput(self, "AlertsTopicArn", value=self.monitoring.topic.topic_arn)
        CfnOutput(self, "GoldenDatasetUri", value=self.golden_dataset_uri)
