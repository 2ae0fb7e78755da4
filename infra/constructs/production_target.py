"""The production target: one SSM String parameter whose value is the target spec production runs.

Runs name it as ``ssm:<parameter>`` (the control arm of change-event and pipeline runs, the candidate of
the weekly run); Prepare resolves it once per run, so every item of a run answers from the same version.
Release tooling updates the value when a new version ships (e.g. "bedrock:s3://<bucket>/prompt-bundles/
chatbot.yaml?versionId=V" or "lambda:arn:aws:lambda:...:function:chatbot:live").

The stack creates the parameter with the value "recorded" (the dataset's own answers: a deployment that
has not published a production target yet still runs), unless ``generation.create_production_parameter``
is false, in which case it must exist under ``generation.production_target_parameter``.
"""

from __future__ import annotations

from aws_cdk import aws_ssm as ssm
from constructs import Construct

from infra.config import FmQualityConfig

INITIAL_PRODUCTION_TARGET = "recorded"


class ProductionTarget(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, config: FmQualityConfig) -> None:
        super().__init__(scope, construct_id)
        self.parameter_name = config.production_target_parameter
        # "ssm:<parameter>": what the triggers and the pipeline gate pass as target or control.
        self.spec = config.production_target_spec
        if config.generation.create_production_parameter:
            self.parameter: ssm.IStringParameter = ssm.StringParameter(
                self,
                "Parameter",
                parameter_name=self.parameter_name,
                string_value=INITIAL_PRODUCTION_TARGET,
                tier=ssm.ParameterTier.STANDARD,
                description=(
                    "Target spec of the chatbot version in production (recorded | bedrock:... | lambda:... | "
                    "https://...); read by the quality gate as ssm:<this parameter>"
                ),
            )
        else:
            self.parameter = ssm.StringParameter.from_string_parameter_name(self, "Parameter", self.parameter_name)

    @property
    def parameter_arn(self) -> str:
        return self.parameter.parameter_arn
