"""PipelineStack: an example release pipeline for prompt bundles, gated by the evaluation.

  Source (S3: prompt-bundle.yaml, versioned bucket; the action's VersionId names the candidate). An
    EventBridge rule on the bucket's own "Object Created" notifications for that key starts the
    pipeline; the source action itself detects nothing (trigger NONE). CDK's S3Trigger.EVENTS would
    need a CloudTrail trail with S3 data events, which this app does not create, and POLL is deprecated.
    -> QualityGate (Step Functions: the evaluation state machine answers the golden set with that bundle
       version, "bedrock:s3://<source bucket>/prompt-bundle.yaml?versionId=#{Source.VersionId}", and with
       the production target, "ssm:<production parameter>"; a failed gate fails the stage)
    -> Approve (manual approval)
    -> Release (S3 deploy of the bundle to the release bucket the chatbot reads)

The bundle is a single YAML object, not a zip: Prepare (which compares the bundle's model with the
judge's) and Generate read that exact object version from the source bucket (granted here, on that key
only, to each of the two roles), and the release copies it unextracted.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Duration, Stack
from aws_cdk import aws_codepipeline as codepipeline
from aws_cdk import aws_codepipeline_actions as actions
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as events_targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from infra.constructs import nag
from infra.constructs.pipeline_gate import QualityGate
from infra.constructs.policies import statement
from infra.constructs.storage import abort_multipart_rule, private_bucket

PROMPT_BUNDLE_KEY = "prompt-bundle.yaml"
SOURCE_NAMESPACE = "Source"


class PipelineStack(Stack):
    """The buckets, the four-stage pipeline, the rule that starts it on an upload, and the Prepare and
    Generate roles' read of the candidate bundle."""

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
        prepare_role_name: str | None = None,
        **kwargs: Any,
    ) -> None:
        """``production_target_spec`` ("ssm:<parameter>") is the gate's control; ``generate_role_name`` and
        ``prepare_role_name`` are the evaluation's Generate and Prepare function roles, which get read
        access to the bundle's versions (Prepare reads the bundle to refuse one that generates with the
        judge's model, Generate answers with it)."""
        super().__init__(scope, construct_id, **kwargs)

        self.log_bucket = self._bucket("AccessLogBucket", versioned=False, logs=None)
        self.source_bucket = self._bucket("PromptBundleSource", versioned=True, logs=self.log_bucket)
        # S3 -> EventBridge notifications (no trail needed) as a bucket property, not CDK's
        # event_bridge_enabled custom resource (a Lambda with a managed policy): the upload rule below
        # starts the pipeline.
        self.source_bucket.node.default_child.add_property_override(
            "NotificationConfiguration.EventBridgeConfiguration.EventBridgeEnabled", True)
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
        self.upload_rule = self._start_on_upload()
        CfnOutput(self, "PromptBundleSourceBucketName", value=self.source_bucket.bucket_name,
                  description=f"Upload {PROMPT_BUNDLE_KEY} here to start the pipeline (docs/deploying.md)")
        CfnOutput(self, "PipelineName", value=self.pipeline.pipeline_name)
        self.bundle_read_policies: dict[str, iam.Policy] = {
            role: self._role_reads_bundle(role, role_name)
            for role, role_name in (("Prepare", prepare_role_name), ("Generate", generate_role_name)) if role_name
        }
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
            # The upload rule (_start_on_upload) starts the pipeline; EVENTS would need a CloudTrail trail.
            trigger=actions.S3Trigger.NONE,
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

    def _start_on_upload(self) -> events.Rule:
        """An upload of prompt-bundle.yaml (S3's own EventBridge notification "Object Created": PutObject,
        CopyObject and CompleteMultipartUpload alike) starts the pipeline; the source action then takes
        the object's latest version. Starts that EventBridge cannot deliver land in a dead-letter queue."""
        undelivered = sqs.Queue(self, "StartPipelineDeadLetters", encryption=sqs.QueueEncryption.SQS_MANAGED,
                                enforce_ssl=True, retention_period=Duration.days(14))
        nag.acknowledge(undelivered, "AwsSolutions-SQS3",
                        "This queue is itself the dead-letter queue of the upload rule's pipeline target; nothing "
                        "consumes it automatically, so a dead-letter queue of its own would only move the message")
        return events.Rule(
            self,
            "StartPipelineOnBundleUpload",
            description=f"Starts the prompt-bundle pipeline when {PROMPT_BUNDLE_KEY} is uploaded to the source bucket",
            event_pattern=events.EventPattern(
                source=["aws.s3"],
                detail_type=["Object Created"],
                detail={"bucket": {"name": [self.source_bucket.bucket_name]},
                        "object": {"key": [PROMPT_BUNDLE_KEY]}},
            ),
            targets=[events_targets.CodePipeline(self.pipeline, dead_letter_queue=undelivered, retry_attempts=4,
                                                 max_event_age=Duration.hours(2))],
        )

    def _role_reads_bundle(self, role: str, role_name: str) -> iam.Policy:
        """The ``role`` function (Prepare or Generate) reads exactly the bundle object's versions, nothing
        else of the bucket: GetObject with a versionId is authorized as s3:GetObjectVersion. An identity
        policy created here (the evaluation stack cannot reference this bucket: the pipeline stack depends
        on it), attached to that role by name."""
        return iam.Policy(
            self,
            f"{role}ReadsPromptBundleVersions",
            roles=[iam.Role.from_role_name(self, f"{role}Role", role_name)],
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
