"""A reusable quality gate for CodePipeline.

``QualityGate.add_to_stage(stage, ...)`` adds a Step Functions invoke action that starts the
evaluation state machine and waits for it. CodePipeline marks the action failed when the execution
fails, so a ``QualityGateFailed`` execution fails the stage and blocks everything after it.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import aws_codepipeline as codepipeline
from aws_cdk import aws_codepipeline_actions as actions
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct


class QualityGate(Construct):
    """Holds what every gate action of a pipeline shares: the state machine and the dataset."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        state_machine: sfn.IStateMachine,
        dataset_uri: str,
        catalog_uri: str | None = None,
        baseline: str | None = "auto",
    ) -> None:
        super().__init__(scope, construct_id)
        self.state_machine = state_machine
        self.dataset_uri = dataset_uri
        self.catalog_uri = catalog_uri
        self.baseline = baseline

    def execution_input(self, candidate: dict[str, Any] | None = None) -> dict[str, Any]:
        """The documented execution input with trigger "pipeline"."""
        payload: dict[str, Any] = {"trigger": "pipeline", "dataset": self.dataset_uri, "baseline": self.baseline}
        if self.catalog_uri:
            payload["catalog"] = self.catalog_uri
        if candidate:
            payload["candidate"] = candidate
        return payload

    def action(
        self,
        *,
        action_name: str = "QualityGate",
        candidate: dict[str, Any] | None = None,
        run_order: int | None = None,
    ) -> actions.StepFunctionInvokeAction:
        """``candidate`` may hold pipeline variables, e.g. a source action's ``variables.version_id``:
        CodePipeline resolves them in the action's input before starting the execution."""
        return actions.StepFunctionInvokeAction(
            action_name=action_name,
            state_machine=self.state_machine,
            state_machine_input=actions.StateMachineInput.literal(self.execution_input(candidate)),
            execution_name_prefix="pipeline",
            run_order=run_order,
        )

    def add_to_stage(self, stage: codepipeline.IStage, **kwargs: Any) -> actions.StepFunctionInvokeAction:
        action = self.action(**kwargs)
        stage.add_action(action)
        return action
