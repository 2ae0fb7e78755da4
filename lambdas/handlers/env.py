"""Typed environment of the Lambda functions. A missing or invalid variable fails the invocation
with a validation error that names the variable.

Where the variables come from: ``fmquality.config.environment.function_environment``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from fmquality.config.environment import function_environment


class FunctionEnv(BaseModel):
    """Variables every function of the gate receives."""

    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)

    table_name: str = Field(alias="TABLE_NAME", min_length=1)
    bucket_name: str = Field(alias="BUCKET_NAME", min_length=1)
    event_bus_name: str = Field(alias="EVENT_BUS_NAME", min_length=1)
    judge: Literal["bedrock", "offline", "scripted"] = Field(alias="JUDGE", default="offline")
    judge_model_id: str | None = Field(alias="JUDGE_MODEL_ID", default=None)
    service_name: str = Field(alias="POWERTOOLS_SERVICE_NAME", default="fmquality")
    metrics_namespace: str = Field(alias="POWERTOOLS_METRICS_NAMESPACE", default="MangaAssist/Evaluation")
    log_level: str = Field(alias="LOG_LEVEL", default="INFO")
    # How reports name the engine: "stepfunctions" in AWS, "stepfunctions-local" on embedded AWS.
    engine_name: str = Field(alias="ENGINE_NAME", default="stepfunctions")

    @property
    def judge_label(self) -> str:
        """How the report names the judge: "bedrock:<model id>" or just the judge's name."""
        return f"{self.judge}:{self.judge_model_id}" if self.judge == "bedrock" and self.judge_model_id else self.judge


class ScorerEnv(FunctionEnv):
    # One dimension of the run rubric's profile; the handler checks it against the rubric (the
    # function does not know the profile until an event names the run's rubric).
    dimension: str = Field(alias="DIMENSION", pattern=r"^[a-z][a-z0-9_\-]*$")


class PrepareEnv(FunctionEnv):
    default_max_concurrency: int = Field(alias="DEFAULT_MAX_CONCURRENCY", default=10, ge=1, le=10000)
    # The Map's default for runs whose judge mode is combined (unset: DEFAULT_MAX_CONCURRENCY).
    default_combined_max_concurrency: int | None = Field(alias="DEFAULT_COMBINED_MAX_CONCURRENCY", default=None,
                                                         ge=1, le=10000)
    default_tolerated_failure_percentage: float = Field(
        alias="DEFAULT_TOLERATED_FAILURE_PERCENTAGE", default=5.0, ge=0.0, le=100.0
    )
    # A replay estimated above this (USD) starts only with "approve_cost": true (run.replay).
    replay_budget_usd: float = Field(alias="REPLAY_BUDGET_USD", default=5.0, ge=0.0)


EnvT = TypeVar("EnvT", bound=FunctionEnv)


def load_env(model: type[EnvT], environ: Mapping[str, str] | None = None) -> EnvT:
    source = function_environment() if environ is None else environ
    # An empty variable means "not set" (CloudFormation cannot omit a variable conditionally).
    return model.model_validate({k: v for k, v in source.items() if v != ""})
