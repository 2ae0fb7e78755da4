"""A reusable quality gate for CodePipeline.

``QualityGate.add_to_stage(stage, ...)`` adds a Step Functions invoke action that starts the
evaluation state machine and waits for it. CodePipeline marks the action failed when the execution
fails, so a ``QualityGateFailed`` execution fails the stage and blocks everything after it.

The run answers with real versions: ``target`` is the candidate (e.g. the prompt bundle the source
action produced, ``bedrock:s3://<bucket>/<key>?versionId=#{Source.VersionId}``, a pipeline variable
CodePipeline resolves before starting the execution) and ``control`` the production target
(``ssm:<production parameter>``), so the gate compares the candidate with what production answers.
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
        control: str | dict[str, Any] | None = None,
    ) -> None:
        """``control``: the target every gate action of the pipeline compares with, usually the production
        target ``ssm:<parameter>``; None runs the candidate alone (compared with the baseline)."""
        super().__init__(scope, construct_id)
        self.state_machine = state_machine
        self.dataset_uri = dataset_uri
        self.catalog_uri = catalog_uri
        self.baseline = baseline
        self.control = control

    def execution_input(
        self,
        candidate: dict[str, Any] | None = None,
        target: str | dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The documented execution input with trigger "pipeline"; ``target`` answers the cases (None:
        the dataset's recorded responses) and the gate's control, when set, answers them too."""
        payload: dict[str, Any] = {"trigger": "pipeline", "dataset": self.dataset_uri, "baseline": self.baseline}
        if self.catalog_uri:
            payload["catalog"] = self.catalog_uri
        if candidate:
            payload["candidate"] = candidate
        if target is not None:
            payload["target"] = target
            if self.control is not None:
                payload["control"] = self.control
        return payload

    def action(
        self,
        *,
        action_name: str = "QualityGate",
        candidate: dict[str, Any] | None = None,
        target: str | dict[str, Any] | None = None,
        run_order: int | None = None,
    ) -> actions.StepFunctionInvokeAction:
        """``candidate`` and ``target`` may hold pipeline variables, e.g. a source action's
        ``variables.version_id``: CodePipeline resolves them in the action's input before starting the
        execution."""
        return actions.StepFunctionInvokeAction(
            action_name=action_name,
            state_machine=self.state_machine,
            state_machine_input=actions.StateMachineInput.literal(self.execution_input(candidate, target)),
            execution_name_prefix="pipeline",
            run_order=run_order,
        )

    @staticmethod
    def bundle_target(bucket_name: str, key: str, version_id: str) -> str:
        """The target spec of one version of a prompt bundle in S3."""
        return f"bedrock:s3://{bucket_name}/{key}?versionId={version_id}"

    def add_to_stage(self, stage: codepipeline.IStage, **kwargs: Any) -> actions.StepFunctionInvokeAction:
        action = self.action(**kwargs)
        stage.add_action(action)
        return action
