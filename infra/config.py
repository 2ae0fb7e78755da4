"""Typed deployment configuration, read from the ``fmquality`` key of the cdk.json context.

``python app.py`` (``make synth``) does not get cdk.json's context from a CLI, so ``load_config`` falls
back to reading cdk.json itself; under ``cdk synth|deploy`` the CLI passes the same context (and any
``-c`` override). An invalid configuration raises ``ConfigError`` whose message names every bad key,
and app.py turns it into a non-zero exit before any construct is built.

This module imports pydantic only (no aws_cdk), so tests and the local engine can load it cheaply. Model
and inference-profile ids are read by infra.bedrock_models, profiles and rubric thresholds by
infra.profiles.

To add a configuration key: a field with its default and a comment on ``FmQualityConfig`` or on the
section model it belongs to (``GenerationConfig``, ``AlarmConfig``, ``ProductionWatchConfig``, ...), a
validator next to it when pydantic's types do not say enough, the key in cdk.json's context, and the
construct that reads it (``config.<section>.<key>``); the README's configuration table lists every key.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from infra.bedrock_models import (
    PROFILE_GEOGRAPHY_REGIONS,
    check_model_id,
    check_regions,
    model_foundation_id,
    model_foundation_regions,
    model_is_inference_profile,
    model_profile_geography,
)
from infra.profiles import (
    DEFAULT_PROFILE,
    ProfileShape,
    profile_names,
    profile_shape,
    rubric_intent_thresholds,
    rubric_path_for_profile,
)

PROJECT_ROOT = Path(__file__).resolve().parent.parent
CDK_JSON = PROJECT_ROOT / "cdk.json"
CONTEXT_KEY = "fmquality"

# The MangaAssist profile's vocabulary (the default rubric_profile). infra/ never imports lambdas/
# (DESIGN section 2); a test checks that these tuples equal fmquality.models' Intent and DIMENSIONS.
# Other profiles' categories and dimensions come from datasets/profiles/<name>.yaml (infra.profiles).
INTENTS: tuple[str, ...] = (
    "recommendation",
    "product_question",
    "faq",
    "order_tracking",
    "return_request",
    "promotion",
    "checkout_help",
    "chitchat",
)
FINAL_DIMENSION_ALARM_THRESHOLD = 1.0
DIMENSIONS: tuple[str, ...] = ("relevance", "factual_accuracy", "consistency", "fluency", "safety")

# The same names as types, for pydantic to validate config values against.
IntentName = Literal[INTENTS]  # type: ignore[valid-type]
DimensionName = Literal[DIMENSIONS]  # type: ignore[valid-type]

# CloudWatch: Period x EvaluationPeriods may not exceed 7 days for periods of an hour or more.
MAX_ALARM_RANGE_SECONDS = 7 * 24 * 3600

# The latest catalog snapshot in the evaluation table (fmquality.adapters.dynamodb reads it; a test
# checks the two agree, since infra/ never imports lambdas/).
TABLE_CATALOG_INPUT = "dynamodb:latest"

_CRON_OR_RATE = re.compile(r"^(cron\(([^\s()]+\s){5}[^\s()]+\)|rate\(\d+ (minute|minutes|hour|hours|day|days)\))$")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_S3_KEY = re.compile(r"^[A-Za-z0-9!_.*'()/\-]+$")
_SSM_PARAMETER = re.compile(r"^/?[A-Za-z0-9_.\-]+(/[A-Za-z0-9_.\-]+)*$")
_LAMBDA_ARN = re.compile(r"^arn:aws[a-z-]*:lambda:[a-z0-9-]+:\d{12}:function:[A-Za-z0-9_\-]+(:[A-Za-z0-9_$\-]+)?$")
_SECRET_ARN = re.compile(r"^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:[A-Za-z0-9/_+=.@\-]+$")
_PROMPT_ARN = re.compile(r"^arn:aws[a-z-]*:bedrock:[a-z0-9-]+:\d{12}:prompt/[0-9a-zA-Z]{10}(:(DRAFT|\d{1,5}))?$")


class ConfigError(ValueError):
    """The cdk.json ``fmquality`` context is missing or invalid; the message names the keys."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DimensionAlarm(_Strict):
    """Alarm when an intent's average dimension score stays below ``threshold`` for ``runs`` runs.

    One datapoint per ``period_hours`` (runs in the same period are averaged); periods without a run are
    ignored, so ``runs`` consecutive breaching periods that had a run raise the alarm.
    """

    # A category and a dimension of the configured rubric_profile (checked by FmQualityConfig).
    intent: str = Field(min_length=1)
    dimension: str = Field(min_length=1)
    threshold: float = Field(gt=0.0, le=1.0)
    runs: int = Field(default=1, ge=1, le=24)
    period_hours: int = Field(default=24, ge=1, le=168)

    @model_validator(mode="after")
    def _fits_cloudwatch_range(self) -> "DimensionAlarm":
        if self.runs * self.period_hours * 3600 > MAX_ALARM_RANGE_SECONDS:
            raise ValueError(
                f"runs ({self.runs}) x period_hours ({self.period_hours}) exceeds CloudWatch's 7-day "
                "evaluation range; lower one of them"
            )
        return self


def _default_dimension_alarms() -> list[DimensionAlarm]:
    return [
        DimensionAlarm(intent="recommendation", dimension="relevance", threshold=0.75, runs=3),
        DimensionAlarm(intent="faq", dimension="factual_accuracy", threshold=0.85, runs=1),
    ]


class ScheduleConfig(_Strict):
    """A weekly run of the golden dataset. Off by default: the weekly run is the production sample
    (production_watch); the golden set runs on change events and in the pipeline."""

    enabled: bool = False
    # EventBridge schedule expression, UTC. Default: every Monday 03:00.
    expression: str = "cron(0 3 ? * MON *)"
    # The scheduled run scores this key in the data bucket; default: the golden dataset.
    dataset_key: str | None = None

    @field_validator("expression")
    @classmethod
    def _schedule_expression(cls, value: str) -> str:
        if not _CRON_OR_RATE.match(value):
            raise ValueError("must be an EventBridge expression like 'cron(0 3 ? * MON *)' or 'rate(7 days)'")
        return value


class AlarmConfig(_Strict):
    # Explicit rules (thresholds and run counts) for some intent/dimension pairs. Left out: MangaAssist's
    # two default rules for the mangaassist profile, none for another profile.
    dimension_alarms: list[DimensionAlarm] | None = None
    # Every other intent/dimension pair alarms below the rubric's threshold for its intent after
    # this many runs; false limits the alarms to dimension_alarms.
    alarm_every_intent_dimension: bool = True
    default_alarm_runs: int = Field(default=1, ge=1, le=7)
    batch_pass_rate_threshold: float = Field(default=0.90, gt=0.0, le=1.0)
    # Sum of JudgeThrottles over 5 minutes at or above this raises the alarm.
    judge_throttles_threshold: int = Field(default=10, ge=1)
    # Unscored items of one run above this raises the alarm (0: any unscored item alarms).
    unscored_cases_threshold: int = Field(default=0, ge=0)

    @model_validator(mode="after")
    def _one_alarm_per_intent_and_dimension(self) -> "AlarmConfig":
        seen: set[tuple[str, str]] = set()
        for alarm in self.dimension_alarms or []:
            key = (alarm.intent, alarm.dimension)
            if key in seen:
                raise ValueError(f"dimension_alarms lists {alarm.intent}/{alarm.dimension} twice")
            seen.add(key)
        return self

    def configured_dimension_alarms(self, profile: str = DEFAULT_PROFILE) -> list[DimensionAlarm]:
        if self.dimension_alarms is not None:
            return list(self.dimension_alarms)
        return _default_dimension_alarms() if profile == DEFAULT_PROFILE else []

    def effective_dimension_alarms(self, thresholds: dict[str, float] | None = None,
                                   profile: str = DEFAULT_PROFILE) -> list[DimensionAlarm]:
        """The configured rules, plus (unless turned off) one per remaining category/dimension pair of
        the rubric profile at the profile's rubric's item threshold for that category."""
        rules = self.configured_dimension_alarms(profile)
        if not self.alarm_every_intent_dimension:
            return rules
        shape = profile_shape(profile)
        thresholds = thresholds if thresholds is not None else rubric_intent_thresholds(rubric_path_for_profile(profile))
        configured = {(a.intent, a.dimension) for a in rules}
        for intent in shape.categories:
            for dimension in shape.dimensions:
                if (intent, dimension) not in configured:
                    # A binary, final dimension (safety) alarms on the first unsafe item: a mean below 1.
                    final = dimension in shape.final_dimensions
                    rules.append(DimensionAlarm(intent=intent, dimension=dimension,
                                                threshold=FINAL_DIMENSION_ALARM_THRESHOLD if final else thresholds[intent],
                                                runs=1 if final else self.default_alarm_runs))
        return rules


# fmquality.scoring.case.JUDGE_MODES (infra/ never imports lambdas/; a test holds them equal).
JUDGE_MODES: tuple[str, ...] = ("per_dimension", "combined")


class JudgeQuota(_Strict):
    """The Bedrock quota the judge runs under, from which the Map's MaxConcurrency is derived, once per
    judge mode (``max_concurrency``): a run's mode sets how many judge calls an item makes."""

    # The account's on-demand "requests per minute" quota for the judge model in the region (Service
    # Quotas, Amazon Bedrock). Share it with other users of the model by lowering utilization_target.
    requests_per_minute: int = Field(gt=0)
    # Share of the quota the gate aims to use: headroom for latency spread and other callers; the
    # scorers' JudgeThrottled retries absorb the rest.
    utilization_target: float = Field(default=0.8, gt=0.0, le=1.0)
    # Judge calls per item in per_dimension mode: one per dimension at most (5 for MangaAssist);
    # report.json's judge_usage.calls_per_case gives the measured value (`fmquality estimate`).
    calls_per_case: float = Field(default=5.0, gt=0.0, le=10.0)
    # Typical (median) latency of one judge call, in seconds.
    seconds_per_call: float = Field(default=3.0, gt=0.0, le=300.0)
    # The same two figures in combined mode: at most one call per item (fewer when the checks or the
    # verdict cache settle it), which asks for every dimension at once, so it may take longer (null:
    # seconds_per_call; a lower figure only leaves quota unused).
    combined_calls_per_case: float = Field(default=1.0, gt=0.0, le=1.0)
    combined_seconds_per_call: float | None = Field(default=None, gt=0.0, le=300.0)

    def max_concurrency(self, judge_mode: str) -> int:
        """The Map's MaxConcurrency for runs in ``judge_mode`` (``derive_max_concurrency``)."""
        if judge_mode == "combined":
            return derive_max_concurrency(self.requests_per_minute, self.combined_calls_per_case,
                                          self.combined_seconds_per_call or self.seconds_per_call,
                                          self.utilization_target)
        return derive_max_concurrency(self.requests_per_minute, self.calls_per_case, self.seconds_per_call,
                                      self.utilization_target)


MAX_CONCURRENCY_LIMIT = 1000  # our bound (the Distributed Map allows 10,000 children at once)
DEFAULT_MAX_CONCURRENCY = 10


def derive_max_concurrency(
    requests_per_minute: float,
    calls_per_case: float,
    seconds_per_call: float,
    utilization_target: float = 0.8,
    upper: int = MAX_CONCURRENCY_LIMIT,
) -> int:
    """Map children (items) to run at once so the judge calls stay under the quota.

    Little's law: to sustain ``rpm * utilization_target / 60`` calls per second when each call takes
    ``seconds_per_call``, ``rpm * utilization_target / 60 * seconds_per_call`` calls must be in flight.
    An item runs its four scorers in parallel (the Parallel state), so one item holds
    ``calls_per_case`` calls in flight for about ``seconds_per_call`` (in combined mode: one call). Hence

        max_concurrency = floor(rpm * utilization_target * seconds_per_call / (60 * calls_per_case))

    clamped to [1, upper]. Example: 600 rpm, 0.8, 3 s per call, 4 calls per item -> 6 items; the
    shipped 250 rpm, 0.8, 3 s: per_dimension (3.2 calls) -> 3 items, combined (1 call) -> 10 items.
    """
    if requests_per_minute <= 0 or calls_per_case <= 0 or seconds_per_call <= 0 or utilization_target <= 0:
        raise ValueError("quota, calls per case, seconds per call and utilization must be positive")
    items = requests_per_minute * utilization_target * seconds_per_call / (60.0 * calls_per_case)
    return max(1, min(upper, math.floor(items + 1e-9)))


class GenerationConfig(_Strict):
    """What the Generate function (answers from a target) may reach, and the production target.

    Every list is an allow-list turned into IAM resources: a target outside it fails its generation
    with AccessDenied (an error record for the item, never a score). Empty lists grant nothing.
    """

    # SSM String parameter holding the production target spec (e.g. "bedrock:s3://...?versionId=..."):
    # the control arm of change-event and pipeline runs and the candidate of the weekly run. Default
    # /mangaassist/<env_name>/production-target.
    production_target_parameter: str | None = None
    # Create that parameter (initial value "recorded"); false when it is managed elsewhere.
    create_production_parameter: bool = True
    # Prompt bundles (YAML) in the data bucket live under this prefix; Generate reads their versions.
    bundle_prefix: str = "prompt-bundles/"
    # Chatbot functions a "lambda:" target may name (function ARNs; a qualified ARN for an alias/version).
    chatbot_function_arns: list[str] = Field(default_factory=list)
    # Secrets (full ARNs) holding the JSON headers of "http(s)://" targets.
    chatbot_header_secret_arns: list[str] = Field(default_factory=list)
    # Models or inference profiles a "bedrock:" bundle (or a ModelVersionChanged event) may use; the
    # first is the default generation model (the shipped example bundle's and the docs' examples). Empty:
    # Generate gets no bedrock:InvokeModel at all (the judge's model is not lent to the candidate). The
    # judge's own model may not be listed (Prepare refuses a run whose judge grades its own answers).
    bedrock_generation_model_ids: list[str] = Field(default_factory=list)
    # Regions of the foundation models behind the profiles above; default from each profile's geography.
    bedrock_generation_model_regions: list[str] | None = None
    # Bedrock Prompt Management prompts ("arn:aws:bedrock:REGION:ACCOUNT:prompt/ID[:VERSION]") that a
    # "bedrock:<prompt arn>" target may read with bedrock:GetPrompt.
    prompt_arns: list[str] = Field(default_factory=list)
    # Target kinds an execution input may name (ALLOWED_TARGET_KINDS of Prepare and Generate). "python"
    # is not among the choices: it would import and run code named by whoever starts an execution.
    allowed_target_kinds: list[Literal["recorded", "bedrock", "lambda", "http", "https"]] = Field(
        default_factory=lambda: ["recorded", "bedrock", "lambda", "http", "https"], min_length=1)
    # Map children at once for runs that generate answers, unless the target spec sets max_concurrency:
    # the chatbot's capacity, not the judge quota, is the limit there.
    max_concurrency: int = Field(default=DEFAULT_MAX_CONCURRENCY, ge=1, le=MAX_CONCURRENCY_LIMIT)

    @field_validator("production_target_parameter")
    @classmethod
    def _parameter_name(cls, value: str | None) -> str | None:
        if value is not None and (not _SSM_PARAMETER.match(value) or value.lower().startswith(("/aws", "aws", "/ssm", "ssm"))):
            raise ValueError("must be an SSM parameter name like '/mangaassist/prod/production-target'")
        return value

    @field_validator("bundle_prefix")
    @classmethod
    def _prefix(cls, value: str) -> str:
        if value.startswith("/") or not value.endswith("/") or not _S3_KEY.match(value) or "*" in value:
            raise ValueError("must be a key prefix inside the data bucket ending in '/', like 'prompt-bundles/'")
        if value.startswith(("runs/", "datasets/")):
            raise ValueError("must not overlap runs/ or datasets/ (their lifecycle and grants differ)")
        return value

    @field_validator("chatbot_function_arns")
    @classmethod
    def _function_arns(cls, values: list[str]) -> list[str]:
        return _all_match(values, _LAMBDA_ARN, "a Lambda function ARN like 'arn:aws:lambda:us-east-1:123456789012:function:chatbot'")

    @field_validator("chatbot_header_secret_arns")
    @classmethod
    def _secret_arns(cls, values: list[str]) -> list[str]:
        return _all_match(values, _SECRET_ARN, "a full Secrets Manager secret ARN (with its 6-character suffix)")

    @field_validator("prompt_arns")
    @classmethod
    def _prompt_arns(cls, values: list[str]) -> list[str]:
        return _all_match(values, _PROMPT_ARN, "a Prompt Management ARN like 'arn:aws:bedrock:us-east-1:123456789012:prompt/PROMPT12345[:1]'")

    @field_validator("bedrock_generation_model_ids")
    @classmethod
    def _model_ids(cls, values: list[str]) -> list[str]:
        for value in values:
            check_model_id(value)
        return values

    @field_validator("bedrock_generation_model_regions")
    @classmethod
    def _regions(cls, values: list[str] | None) -> list[str] | None:
        return check_regions(values)

    @model_validator(mode="after")
    def _profile_regions_known(self) -> "GenerationConfig":
        if self.bedrock_generation_model_regions is None:
            for model_id in self.bedrock_generation_model_ids:
                geography = model_profile_geography(model_id)
                if geography is not None and geography not in PROFILE_GEOGRAPHY_REGIONS:
                    raise ValueError(
                        f"{model_id!r} looks like a '{geography}.' inference profile; set "
                        "bedrock_generation_model_regions to the regions its foundation models run in"
                    )
        return self

    def parameter_name(self, env_name: str) -> str:
        return self.production_target_parameter or f"/mangaassist/{env_name}/production-target"

    @property
    def default_model_id(self) -> str | None:
        """The default generation model: the first allowed one (None when Generate may invoke none)."""
        return self.bedrock_generation_model_ids[0] if self.bedrock_generation_model_ids else None


def _all_match(values: list[str], pattern: re.Pattern[str], what: str) -> list[str]:
    bad = [v for v in values if not pattern.match(v)]
    if bad:
        raise ValueError(f"each entry must be {what}; got {bad}")
    if len(set(values)) != len(values):
        raise ValueError("lists an entry twice")
    return values

class OnlineJudgingConfig(_Strict):
    """Online judging and drift on the stream (issue 20): turns objects -> SQS -> the online judge; the
    drift check on a schedule; the actions on QualityDriftDetected. The sampler's rate and quota and the
    detector's settings are the rubric's (``production.online``, ``production.stream_drift``)."""

    enabled: bool = True
    # S3 notifications (turns objects) per invocation, and how many invocations at once (the judge's
    # Bedrock quota is shared with the gate: see docs/production-watch.md for the throughput).
    batch_size: int = Field(default=2, ge=1, le=10)
    max_concurrency: int = Field(default=10, ge=2, le=1000)
    drift_check_minutes: int = Field(default=5, ge=1, le=60)
    # On QualityDriftDetected: start a replay of the window (current vs previous production target),
    # and emit QualityRollbackRecommended; restoring the previous target is off unless set here.
    replay_on_drift: bool = True
    recommend_rollback: bool = True
    restore_on_recommendation: bool = False


class ProductionWatchConfig(_Strict):
    """Production watch (issue 10): capture stream, weekly sampler, drift/review function, alarms.
    A nested stack of its own, so the evaluation stack's template stays well under CloudFormation's limits."""

    enabled: bool = True
    # When the sampler draws the week's sample (UTC). Default: every Monday 02:00, before the golden run.
    schedule_expression: str = "cron(0 2 ? * MON *)"
    locales: list[str] = Field(default_factory=lambda: ["en-US", "ja-JP"], min_length=1)
    # JudgeAgreementKappa (pass/fail, all reviewed items) below this raises the alarm.
    kappa_alarm_threshold: float = Field(default=0.6, ge=-1.0, le=1.0)
    # Firehose buffering before a file is written (dynamic partitioning needs at least 64 MB).
    buffer_interval_seconds: int = Field(default=300, ge=60, le=900)
    buffer_size_mb: int = Field(default=64, ge=64, le=128)
    # Captured turns (production/turns/), capture errors (production/errors/) and the weekly samples
    # (datasets/production/sample-*) are deleted this many days after they are written (S3 lifecycle;
    # their previous versions a day later). Shoppers' turns, even redacted, are not kept longer.
    retention_days: int = Field(default=30, ge=1, le=3650)
    online: OnlineJudgingConfig = Field(default_factory=OnlineJudgingConfig)

    @field_validator("schedule_expression")
    @classmethod
    def _schedule_expression(cls, value: str) -> str:
        if not _CRON_OR_RATE.match(value):
            raise ValueError("must be an EventBridge expression like 'cron(0 2 ? * MON *)' or 'rate(7 days)'")
        return value


class ProbesConfig(_Strict):
    """Counterfactual probes (issue 20): the probes file (upload it: docs/deploying.md) answered by the
    production target on a schedule (EventBridge Scheduler), judged as a run with trigger "probe"; its
    ProbeFailureRate (percent of judged probes that failed) above the SLO raises the alarm."""

    enabled: bool = True
    # Under datasets/: the only inputs Prepare may read.
    dataset_key: str = Field(default="datasets/mangaassist/probes.jsonl", pattern=r"^datasets/[A-Za-z0-9!_.*'()/\-]+$")
    schedule_expression: str = "rate(1 day)"
    failure_rate_slo_percent: float = Field(default=0.5, ge=0.0, le=100.0)

    @field_validator("schedule_expression")
    @classmethod
    def _schedule_expression(cls, value: str) -> str:
        if not _CRON_OR_RATE.match(value):
            raise ValueError("must be an EventBridge Scheduler expression like 'rate(1 day)' or 'cron(0 4 * * ? *)'")
        return value


class StateMachineLogsConfig(_Strict):
    """What the evaluation state machine writes to its log group (/aws/vendedlogs/states/<name>).

    Execution data (every state's input and output: test cases, shoppers' turns, answers, judge replies)
    stays out of the logs unless ``include_execution_data`` opts in, e.g. for a while to debug a deployment.
    """

    # ALL (default): every event, without data unless opted in below: which state ran when, retried or
    # failed (cdk-nag AwsSolutions-SF1 asks for ALL). ERROR: failed states, Map runs and executions (a failed
    # gate too); FATAL: failed executions only; OFF: nothing. A level other than ALL is acknowledged to
    # cdk-nag with this key as the reason. The alarms read metrics, not these logs.
    level: Literal["ALL", "ERROR", "FATAL", "OFF"] = "ALL"
    include_execution_data: bool = False

    @model_validator(mode="after")
    def _data_needs_events(self) -> "StateMachineLogsConfig":
        if self.include_execution_data and self.level == "OFF":
            raise ValueError("include_execution_data needs a level other than OFF (no event is logged)")
        return self


class FmQualityConfig(_Strict):
    env_name: str = Field(pattern=r"^[a-z][a-z0-9-]{1,15}$")
    # A foundation-model id ("anthropic.claude-...") or a cross-region inference-profile id ("us.anthropic...").
    judge_model_id: str
    # Regions of the foundation models behind an inference profile (the judge's bedrock:InvokeModel gets the
    # foundation model in each); null: from the profile's geography prefix (PROFILE_GEOGRAPHY_REGIONS,
    # "us." -> us-east-1, us-east-2, us-west-2). Region names, at least one, each once.
    judge_model_regions: list[str] | None = None
    judge: Literal["bedrock", "offline"] = "bedrock"
    # Powertools for AWS Lambda (Python) v3 layer, resolved from its public SSM parameter at deploy time.
    powertools_layer_version: str = Field(default="3.37.0", pattern=r"^(latest|\d+\.\d+\.\d+)$")
    golden_dataset_key: str = "datasets/mangaassist/golden.jsonl"
    catalog_key: str | None = "datasets/mangaassist/catalog.json"
    # Where the schedule, the change-event rules and the pipeline gate take the catalog from: "s3" (the
    # file at catalog_key) or "table" (the latest snapshot loaded with `fmquality catalog load`).
    catalog_source: Literal["s3", "table"] = "s3"
    schedule: ScheduleConfig = Field(default_factory=ScheduleConfig)
    release_event_source: str = Field(default="mangaassist.release", min_length=1)
    # The Map's MaxConcurrency for per_dimension runs. Set it to pin a value (the override, for both
    # modes unless combined_max_concurrency is set too); leave it out and set judge_quota to derive it
    # from the quota (derive_max_concurrency); with neither, 10. An execution input's max_concurrency wins.
    max_concurrency: int = Field(default=DEFAULT_MAX_CONCURRENCY, ge=1, le=MAX_CONCURRENCY_LIMIT)
    # ... for combined runs (one judge call per item); null: derived from judge_quota, else max_concurrency.
    combined_max_concurrency: int | None = Field(default=None, ge=1, le=MAX_CONCURRENCY_LIMIT)
    judge_quota: JudgeQuota | None = None
    tolerated_failure_percentage: float = Field(default=5.0, ge=0.0, le=100.0)
    alarms: AlarmConfig = Field(default_factory=AlarmConfig)
    alert_email: str | None = None
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    log_retention_days: Literal[7, 14, 30, 60, 90, 180, 365] = 30
    # runs/<run_id>/ objects (items, results, reports) expire after this many days.
    run_artifacts_retention_days: int = Field(default=400, ge=30)
    # Answer generation from targets (Generate function, production target parameter, triggers' inputs).
    generation: GenerationConfig = Field(default_factory=GenerationConfig)
    production_watch: ProductionWatchConfig = Field(default_factory=ProductionWatchConfig)
    # A replay (execution input "replay") estimated above this many USD starts only with "approve_cost": true.
    replay_budget_usd: float = Field(default=5.0, ge=0.0)
    probes: ProbesConfig = Field(default_factory=ProbesConfig)
    # The evaluation state machine's CloudWatch Logs: level, and whether events carry execution data.
    state_machine_logs: StateMachineLogsConfig = Field(default_factory=StateMachineLogsConfig)
    # The rubric profile (datasets/profiles/<name>.yaml) the stack scores with: one scorer function per
    # profile dimension, the Parallel's branches, the alarms per category x dimension.
    rubric_profile: str = DEFAULT_PROFILE

    @field_validator("rubric_profile")
    @classmethod
    def _known_profile(cls, value: str) -> str:
        names = profile_names()
        if value not in names:
            raise ValueError(f"must be one of {list(names)} (datasets/profiles/<name>.yaml)")
        return value

    @model_validator(mode="after")
    def _alarms_fit_the_profile(self) -> "FmQualityConfig":
        shape = self.profile
        for i, alarm in enumerate(self.alarms.dimension_alarms or []):
            if alarm.intent not in shape.categories:
                raise ValueError(f"alarms.dimension_alarms[{i}].intent {alarm.intent!r} is not a category of "
                                 f"profile {shape.name}: {list(shape.categories)}")
            if alarm.dimension not in shape.dimensions:
                raise ValueError(f"alarms.dimension_alarms[{i}].dimension {alarm.dimension!r} is not a dimension "
                                 f"of profile {shape.name}: {list(shape.dimensions)}")
        return self

    @property
    def profile(self) -> ProfileShape:
        return profile_shape(self.rubric_profile)

    def dimension_alarms(self) -> list[DimensionAlarm]:
        """Every intent x dimension alarm rule of the configured profile."""
        return self.alarms.effective_dimension_alarms(profile=self.rubric_profile)

    @model_validator(mode="before")
    @classmethod
    def _derive_max_concurrency(cls, data: Any) -> Any:
        """An explicit value wins; otherwise a judge_quota derives one per mode. A pinned max_concurrency
        without a combined_max_concurrency pins both modes (null means unset, as if left out)."""
        if not isinstance(data, dict):
            return data
        pins = ("max_concurrency", "combined_max_concurrency")
        data = {k: v for k, v in data.items() if not (k in pins and v is None)}
        quota = data.get("judge_quota")
        try:
            quota = quota if quota is None or isinstance(quota, JudgeQuota) else JudgeQuota.model_validate(quota)
        except ValidationError:
            return data  # the field validation reports the bad quota
        if quota is None or "max_concurrency" in data:
            return data
        return {"combined_max_concurrency": quota.max_concurrency("combined"), **data,
                "max_concurrency": quota.max_concurrency("per_dimension")}

    @property
    def derived_max_concurrency(self) -> int | None:
        """What judge_quota alone would give per_dimension runs (None without a quota), whatever
        max_concurrency is."""
        return self.judge_quota.max_concurrency("per_dimension") if self.judge_quota else None

    def max_concurrency_for(self, judge_mode: str) -> int:
        """The Map's default MaxConcurrency for runs in ``judge_mode`` (Prepare picks the run's)."""
        if judge_mode == "combined" and self.combined_max_concurrency is not None:
            return self.combined_max_concurrency
        return self.max_concurrency

    @field_validator("judge_model_id")
    @classmethod
    def _model_id(cls, value: str) -> str:
        return check_model_id(value)

    @field_validator("judge_model_regions")
    @classmethod
    def _judge_regions(cls, values: list[str] | None) -> list[str] | None:
        return check_regions(values)

    @field_validator("golden_dataset_key", "catalog_key")
    @classmethod
    def _s3_key(cls, value: str | None) -> str | None:
        if value is not None and (value.startswith("/") or value.startswith("s3://") or not _S3_KEY.match(value)):
            raise ValueError("must be an object key inside the data bucket, like 'datasets/x/golden.jsonl'")
        return value

    @field_validator("alert_email")
    @classmethod
    def _email(cls, value: str | None) -> str | None:
        if value is not None and not _EMAIL.match(value):
            raise ValueError("must be an e-mail address or null")
        return value

    @model_validator(mode="after")
    def _judge_does_not_generate(self) -> "FmQualityConfig":
        """A generation model that is the judge's (the same foundation model, whatever the profile) could
        never produce a run that passes: Prepare refuses it ("a judge may not grade its own answers")."""
        if self.judge != "bedrock":
            return self
        judge = model_foundation_id(self.judge_model_id)
        for i, model_id in enumerate(self.generation.bedrock_generation_model_ids):
            if model_foundation_id(model_id) == judge:
                raise ValueError(
                    f"generation.bedrock_generation_model_ids[{i}] {model_id!r} is the judge's model "
                    f"({self.judge_model_id!r}): Prepare refuses every run that generates with it (a judge may "
                    "not grade its own answers); list another model, or choose another judge_model_id")
        return self

    @model_validator(mode="after")
    def _profile_regions_known(self) -> "FmQualityConfig":
        if self.is_inference_profile and self.judge_model_regions is None:
            if self.profile_geography not in PROFILE_GEOGRAPHY_REGIONS:
                raise ValueError(
                    f"judge_model_id looks like a '{self.profile_geography}.' inference profile; set "
                    "judge_model_regions to the regions its foundation models run in"
                )
        return self

    # ---------------------------------------------------------------------------------------------
    @property
    def is_inference_profile(self) -> bool:
        return model_is_inference_profile(self.judge_model_id)

    @property
    def profile_geography(self) -> str | None:
        return model_profile_geography(self.judge_model_id)

    @property
    def foundation_model_id(self) -> str:
        return model_foundation_id(self.judge_model_id)

    @property
    def foundation_model_regions(self) -> tuple[str, ...] | None:
        """Regions for the judge's foundation-model ARNs; None means the stack's own region."""
        return model_foundation_regions(self.judge_model_id, self.judge_model_regions)

    @property
    def name_prefix(self) -> str:
        """What the names of alarms, dashboards and streams start with: fmquality-<env_name>."""
        return f"fmquality-{self.env_name}"

    @property
    def production_target_parameter(self) -> str:
        """The SSM parameter whose value is the production target spec."""
        return self.generation.parameter_name(self.env_name)

    @property
    def production_target_spec(self) -> str:
        """The target spec that reads it: "ssm:<parameter>"."""
        return f"ssm:{self.production_target_parameter}"

    @property
    def scheduled_dataset_key(self) -> str:
        return self.schedule.dataset_key or self.golden_dataset_key


def parse_config(raw: Any) -> FmQualityConfig:
    """Validate a context value; ``ConfigError`` names every invalid key with its reason."""
    if not isinstance(raw, dict):
        raise ConfigError(f"cdk.json context '{CONTEXT_KEY}' must be an object, got {type(raw).__name__}")
    try:
        return FmQualityConfig.model_validate(raw)
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            where = ".".join(str(part) for part in error["loc"]) or "(top level)"
            problems.append(f"  - {CONTEXT_KEY}.{where}: {error['msg']}")
        raise ConfigError(
            f"Invalid '{CONTEXT_KEY}' configuration in cdk.json context ({len(problems)} problem(s)):\n"
            + "\n".join(problems)
        ) from None


def read_cdk_json_context(path: Path = CDK_JSON) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))["context"][CONTEXT_KEY]
    except FileNotFoundError:
        raise ConfigError(f"{path} not found") from None
    except KeyError:
        raise ConfigError(f"{path} has no context.{CONTEXT_KEY} object") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path} is not valid JSON: {exc}") from None


def load_config(context_value: Any = None, cdk_json: Path = CDK_JSON) -> FmQualityConfig:
    """The app's configuration: the CLI-provided context value when there is one, else cdk.json's."""
    raw = context_value if context_value is not None else read_cdk_json_context(cdk_json)
    return parse_config(raw)
