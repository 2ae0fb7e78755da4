"""PipelineStack: an example release pipeline for prompt bundles, gated by the evaluation.

  Source (S3: prompt-bundle.yaml, versioned bucket; the action's VersionId names the candidate)
    -> QualityGate (Step Functions: the evaluation state machine answers the golden set with that bundle
       version, "bedrock:s3://<source bucket>/prompt-bundle.yaml?versionId=#{Source.VersionId}", and with
       the production target, "ssm:<production parameter>"; a failed gate fails the stage)
    -> Approve (manual approval)
    -> Release (S3 deploy of the bundle to the release bucket the chatbot reads)

The bundle is a single YAML object, not a zip: the Generate function reads that exact object version
from the source bucket (granted here, on that key only), and the release copies it unextracted.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import Duration, Stack
from aws_cdk import aws_codepipeline as codepipeline
from aws_cdk import aws_codepipeline_actions as actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from infra.constructs import nag
from infra.constructs.pipeline_gate import QualityGate
from infra.constructs.policies import statement
from infra.constructs.storage import abort_multipart_rule, private_bucket

PROMPT_BUNDLE_KEY = "prompt-bundle.yaml"
SOURCE_NAMESPACE = "Source"


class PipelineStack(Stack):
    """The buckets, the four-stage pipeline and the Generate role's read of the candidate bundle."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        state_machine_name: str,
        dataset_uri: str,
        catalog_uri: str | None = None,
        production_target_spec: str | None = None,
        generate_role_name: str | None = None,
        **kwargs: Any,
    ) -> None:
        """``production_target_spec`` ("ssm:<parameter>") is the gate's control; ``generate_role_name`` is
        the evaluation's Generate function role, which gets read access to the bundle's versions."""
        super().__init__(scope, construct_id, **kwargs)

        self.log_bucket = self._bucket("AccessLogBucket", versioned=False, logs=None)
        self.source_bucket = self._bucket("PromptBundleSource", versioned=True, logs=self.log_bucket)
        self.release_bucket = self._bucket("PromptRelease", versioned=True, logs=self.log_bucket)
        self.artifact_bucket = self._bucket("Artifacts", versioned=True, logs=self.log_bucket)

        # Referenced by name (not by the other stack's token) so the gate's IAM resources read as plain
        # ARNs of that state machine and the pipeline does not import an export for it.
        self.state_machine_name = state_machine_name
        self.state_machine = sfn.StateMachine.from_state_machine_name(self, "EvaluationStateMachine", state_machine_name)
        gate = QualityGate(
            self, "QualityGate", state_machine=self.state_machine, dataset_uri=dataset_uri, catalog_uri=catalog_uri,
            control=production_target_spec,
        )
        self._pipeline(gate)
        if generate_role_name:
            self.bundle_read_policy = self._generate_reads_bundle(generate_role_name)
        self._acknowledge_nag_findings()

    def _bucket(self, name: str, *, versioned: bool, logs: s3.IBucket | None) -> s3.Bucket:
        """A private bucket: versioned ones keep old versions 90 days, the log bucket keeps logs a year."""
        return private_bucket(
            self,
            name,
            versioned=versioned,
            server_access_logs_bucket=logs,
            server_access_logs_prefix=f"{name}/" if logs else None,
            lifecycle_rules=[
                abort_multipart_rule(),
                *([s3.LifecycleRule(id="expire-old-versions", noncurrent_version_expiration=Duration.days(90))]
                  if versioned else [s3.LifecycleRule(id="expire-logs", expiration=Duration.days(365))]),
            ],
        )

    def _pipeline(self, gate: QualityGate) -> None:
        """Source -> QualityGate -> Approve -> Release (see the module docstring)."""
        bundle = codepipeline.Artifact("PromptBundle")
        source = actions.S3SourceAction(
            action_name="PromptBundle",
            bucket=self.source_bucket,
            bucket_key=PROMPT_BUNDLE_KEY,
            output=bundle,
            trigger=actions.S3Trigger.EVENTS,
            variables_namespace=SOURCE_NAMESPACE,
        )
        self.pipeline = codepipeline.Pipeline(
            self,
            "Pipeline",
            pipeline_type=codepipeline.PipelineType.V2,
            artifact_bucket=self.artifact_bucket,
            restart_execution_on_update=False,
        )
        self.pipeline.add_stage(stage_name="Source", actions=[source])
        gate_stage = self.pipeline.add_stage(stage_name="QualityGate")
        self.gate_action = gate.add_to_stage(
            gate_stage,
            candidate={"prompt_bundle_key": PROMPT_BUNDLE_KEY, "prompt_bundle_version": source.variables.version_id},
            target=QualityGate.bundle_target(self.source_bucket.bucket_name, PROMPT_BUNDLE_KEY,
                                             source.variables.version_id),
        )
        self.pipeline.add_stage(
            stage_name="Approve",
            actions=[actions.ManualApprovalAction(action_name="ReviewReport",
                                                  additional_information="Read the run's report.html before releasing.")],
        )
        self.pipeline.add_stage(
            stage_name="Release",
            actions=[actions.S3DeployAction(action_name="PublishPromptBundle", bucket=self.release_bucket,
                                            input=bundle, extract=False, object_key=PROMPT_BUNDLE_KEY)],
        )

    def _generate_reads_bundle(self, generate_role_name: str) -> iam.Policy:
        """The Generate function reads exactly the bundle object's versions, nothing else of the bucket.
        An identity policy created here (the evaluation stack cannot reference this bucket: the pipeline
        stack depends on it), attached to that role by name."""
        return iam.Policy(
            self,
            "GenerateReadsPromptBundleVersions",
            roles=[iam.Role.from_role_name(self, "GenerateRole", generate_role_name)],
            statements=[statement("ReadCandidatePromptBundleVersions", ["s3:GetObject", "s3:GetObjectVersion"],
                                  [self.source_bucket.arn_for_objects(PROMPT_BUNDLE_KEY)])],
        )

    # ---- cdk-nag (AwsSolutions): each acknowledgment is scoped to the construct it is about.
    def _acknowledge_nag_findings(self) -> None:
        cdk_artifact_grants = (
            "generated by CDK's CodePipeline bucket grants for moving artifacts between stages; limited to "
            "this pipeline's artifact, source and release buckets"
        )
        findings = {
            "AwsSolutions-IAM5[Action::s3:GetObject*]": f"Object read actions (GetObject, GetObjectVersion...) {cdk_artifact_grants}",
            "AwsSolutions-IAM5[Action::s3:GetBucket*]": f"Bucket metadata reads (GetBucketLocation...) {cdk_artifact_grants}",
            "AwsSolutions-IAM5[Action::s3:List*]": f"Listing (ListBucket...) {cdk_artifact_grants}",
            "AwsSolutions-IAM5[Action::s3:DeleteObject*]": f"Replacing artifacts (DeleteObject*) {cdk_artifact_grants}",
            "AwsSolutions-IAM5[Action::s3:Abort*]": f"Aborting multipart artifact uploads {cdk_artifact_grants}",
            nag.wildcard_resource(f"{nag.arn_of(self.artifact_bucket)}/*"):
                "Artifact object keys are generated by CodePipeline per execution; only this pipeline's artifact bucket",
            nag.wildcard_resource(f"{nag.arn_of(self.release_bucket)}/*"):
                "CDK's S3 deploy action grant covers the release bucket's objects (the bundle is written as "
                "prompt-bundle.yaml); only this pipeline's release bucket",
            nag.wildcard_resource(f"{nag.states_arn_prefix(self)}:execution:{self.state_machine_name}:pipeline*"):
                "The quality-gate action polls the executions it starts (name prefix 'pipeline'), whose names "
                "CodePipeline generates; only executions of the evaluation state machine",
        }
        for rule_id, reason in findings.items():
            nag.acknowledge(self.pipeline, rule_id, reason)
