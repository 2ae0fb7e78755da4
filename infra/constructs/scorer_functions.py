"""The Lambda functions: Prepare, Generate, one scorer per dimension, Composite, Aggregate.

One code asset (``lambdas/``) for all of them; dependencies from two layers:
  * the public Powertools for AWS Lambda (Python) v3 layer (Logger, Tracer, Metrics, pydantic), resolved
    at deploy time from its public SSM parameter for the region, runtime and architecture;
  * a small layer built WITHOUT Docker by ``pip install --platform manylinux2014_aarch64 --only-binary``
    from requirements-lambda.txt (PyYAML, jinja2, tinysegmenter, pykakasi).
Set FMQ_SKIP_LAYER_BUNDLING=1 to synthesize without network (the tests do): the layer then holds a
placeholder file and gets a different asset hash, so a placeholder is never mistaken for a real build.

Every function has its own role with only the statements it uses (nothing from managed policies).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import jsii
from aws_cdk import (
    Annotations,
    AssetHashType,
    BundlingOptions,
    DockerImage,
    Duration,
    ILocalBundling,
    RemovalPolicy,
    Stack,
    Token,
)
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_ssm as ssm
from aws_cdk import SymlinkFollowMode
from constructs import Construct

from infra.asl import function_environment, function_handlers
from infra.config import (
    PROJECT_ROOT,
    FmQualityConfig,
    model_foundation_id,
    model_foundation_regions,
    model_is_inference_profile,
)
from infra.constructs.production_target import ProductionTarget
from infra.constructs.storage import (
    CATALOG_PK_PREFIX,
    DATASET_PK_PREFIX,
    RUN_PK_PREFIX,
    VERDICT_PK_PREFIX,
    Storage,
)

# The newest Python runtime this aws-cdk-lib offers; the Powertools layer variant must match it
# because pydantic-core is a compiled extension.
RUNTIME = lambda_.Runtime.PYTHON_3_14
ARCHITECTURE = lambda_.Architecture.ARM_64
LAMBDA_PLATFORM = "manylinux2014_aarch64"
METRICS_NAMESPACE = "MangaAssist/Evaluation"
SKIP_LAYER_BUNDLING_ENV = "FMQ_SKIP_LAYER_BUNDLING"
LAYER_REQUIREMENTS = PROJECT_ROOT / "requirements-lambda.txt"
LAMBDA_CODE_DIR = PROJECT_ROOT / "lambdas"



def _python_version(runtime: lambda_.Runtime) -> str:
    return runtime.name.removeprefix("python")  # "python3.14" -> "3.14"


def skip_layer_bundling() -> bool:
    return os.environ.get(SKIP_LAYER_BUNDLING_ENV) == "1"


@jsii.implements(ILocalBundling)
class PipLayerBundling:
    """Builds the dependency layer with the local pip for the Lambda platform, no Docker.

    ``--only-binary=:all:`` with ``--platform``/``--python-version`` makes pip pick the Lambda (aarch64,
    CPython) wheels whatever the build machine is; ``--no-compile`` and dropping RECORD files keep the
    output the same across builds. Needs PyPI access (or a pip find-links mirror).
    """

    def __init__(self, requirements: Path, python_version: str, placeholder: bool) -> None:
        self.requirements = requirements
        self.python_version = python_version
        self.placeholder = placeholder

    def try_bundle(self, output_dir: str, *args, **kwargs) -> bool:  # noqa: ARG002 (jsii passes options)
        target = Path(output_dir) / "python"
        target.mkdir(parents=True, exist_ok=True)
        if self.placeholder:
            (target / "FMQ_LAYER_PLACEHOLDER.txt").write_text(
                f"Synthesized with {SKIP_LAYER_BUNDLING_ENV}=1: dependencies were not installed. "
                "Do not deploy this assembly.\n",
                encoding="utf-8",
            )
            return True
        # Step 1: wheels for everything, built on this machine. This turns sdist-only pure-Python
        # packages (tinysegmenter) into py3-none-any wheels; host-specific wheels it also leaves are
        # ignored by step 2. Step 2: install for the Lambda platform from PyPI wheels + those wheels.
        wheelhouse = Path(tempfile.mkdtemp(prefix="fmq-wheelhouse-"))
        pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input"]
        commands = [
            [*pip, "wheel", "--quiet", "--wheel-dir", str(wheelhouse), "-r", str(self.requirements)],
            [
                *pip, "install", "--quiet", "--no-compile",
                "--target", str(target),
                "--platform", LAMBDA_PLATFORM,
                "--implementation", "cp",
                "--python-version", self.python_version,
                "--only-binary=:all:",
                "--find-links", str(wheelhouse),
                "-r", str(self.requirements),
            ],
        ]
        try:
            for command in commands:
                result = subprocess.run(command, capture_output=True, text=True, check=False)
                if result.returncode != 0:
                    raise RuntimeError(
                        f"Building the dependency layer failed (set {SKIP_LAYER_BUNDLING_ENV}=1 to synthesize "
                        f"without it):\n$ {' '.join(command)}\n{result.stdout}\n{result.stderr}"
                    )
        finally:
            shutil.rmtree(wheelhouse, ignore_errors=True)
        # RECORD files list absolute-ish install paths; drop them and caches so the zip is reproducible.
        for record in target.glob("*.dist-info/RECORD"):
            record.unlink()
        for cache in target.rglob("__pycache__"):
            shutil.rmtree(cache, ignore_errors=True)
        return True


def dependency_layer_code() -> lambda_.Code:
    placeholder = skip_layer_bundling()
    python_version = _python_version(RUNTIME)
    fingerprint = hashlib.sha256()
    fingerprint.update(LAYER_REQUIREMENTS.read_bytes())
    fingerprint.update(f"{python_version}|{LAMBDA_PLATFORM}|placeholder={placeholder}".encode())
    return lambda_.Code.from_asset(
        str(LAYER_REQUIREMENTS.parent),
        asset_hash_type=AssetHashType.CUSTOM,
        asset_hash=fingerprint.hexdigest(),
        bundling=BundlingOptions(
            # Never used: local bundling always succeeds or raises. Required by the API.
            image=DockerImage.from_registry("public.ecr.aws/sam/build-python3.13"),
            local=PipLayerBundling(LAYER_REQUIREMENTS, python_version, placeholder),
        ),
    )


def powertools_layer_parameter_name(version: str) -> str:
    """Public SSM parameter that holds the Powertools v3 layer ARN for this runtime and architecture."""
    return f"/aws/service/powertools/python/arm64/{RUNTIME.name}/{version}"


class EvaluationFunctions(Construct):
    """All eight functions, their log groups and least-privilege roles."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: FmQualityConfig,
        storage: Storage,
        event_bus: events.IEventBus,
        production_target: ProductionTarget,
    ) -> None:
        super().__init__(scope, construct_id)
        self._config = config
        # One scorer function per dimension of the rubric profile (datasets/profiles/<name>.yaml);
        # handlers and environments come from the shared manifest, scorer roles derived per dimension.
        self.dimensions: tuple[str, ...] = config.profile.dimensions
        FUNCTION_HANDLERS = function_handlers(self.dimensions)
        FUNCTION_ENVIRONMENT = function_environment(self.dimensions)

        self.code = lambda_.Code.from_asset(
            str(LAMBDA_CODE_DIR),
            exclude=["*.egg-info", "__pycache__", "tests"],
            follow_symlinks=SymlinkFollowMode.ALWAYS,
        )
        powertools_arn = ssm.StringParameter.value_for_string_parameter(
            self, powertools_layer_parameter_name(config.powertools_layer_version)
        )
        self.layers = [
            lambda_.LayerVersion.from_layer_version_arn(self, "PowertoolsLayer", powertools_arn),
            lambda_.LayerVersion(
                self,
                "DependenciesLayer",
                code=dependency_layer_code(),
                compatible_runtimes=[RUNTIME],
                compatible_architectures=[ARCHITECTURE],
                description="fmquality dependencies: PyYAML, jinja2, tinysegmenter, pykakasi (requirements-lambda.txt)",
                removal_policy=RemovalPolicy.DESTROY,
            ),
        ]
        self.common_environment = {
            "TABLE_NAME": storage.table.table_name,
            "BUCKET_NAME": storage.data_bucket.bucket_name,
            "EVENT_BUS_NAME": event_bus.event_bus_name,
            "JUDGE": config.judge,
            "JUDGE_MODEL_ID": config.judge_model_id,
            "POWERTOOLS_METRICS_NAMESPACE": METRICS_NAMESPACE,
            "LOG_LEVEL": config.log_level,
        }

        # ---- Prepare: reads the inputs under datasets/, writes runs/<run_id>/, registers the run.
        self.prepare = self._function(
            "Prepare",
            FUNCTION_HANDLERS["prepare"],
            memory_mb=1024,
            timeout=Duration.minutes(5),
            environment={
                "DEFAULT_MAX_CONCURRENCY": str(config.max_concurrency),
                "DEFAULT_TOLERATED_FAILURE_PERCENTAGE": str(config.tolerated_failure_percentage),
                "DEFAULT_TARGET_MAX_CONCURRENCY": str(config.generation.max_concurrency),
                "PRODUCTION_TARGET_PARAMETER": production_target.parameter_name,
                "ALLOWED_TARGET_KINDS": ",".join(config.generation.allowed_target_kinds),
            },
            statements=[
                # "ssm:<parameter>" specs are resolved once per run, here.
                _statement("ReadProductionTarget", ["ssm:GetParameter"], [production_target.parameter_arn]),
                _statement("ReadInputs", ["s3:GetObject"], [storage.datasets_arn()]),
                _statement("WriteRunFiles", ["s3:PutObject"], [storage.runs_arn()]),
                # Table partitions per function: storage.py. Registers the run, once (conditional write).
                storage.table_statement("RegisterRun", ["dynamodb:PutItem"], [RUN_PK_PREFIX]),
                # Its own run id (taken?), a baseline run given by id, the dataset's approved baseline, the
                # CATALOG#LATEST pointer and a snapshot's META.
                storage.table_statement("ReadRunsBaselinesCatalogMeta", ["dynamodb:GetItem"],
                                        [RUN_PK_PREFIX, DATASET_PK_PREFIX, CATALOG_PK_PREFIX]),
                # "catalog": "dynamodb:..." reads a snapshot's items: Query on catalog partitions only.
                storage.table_statement("ReadCatalogSnapshot", ["dynamodb:Query"], [CATALOG_PK_PREFIX]),
            ],
        )

        # ---- Generate: answers an item from the run's target (and control); each grant is an allow-list
        # from config.generation, so a target outside it fails with AccessDenied (an error record).
        self.generate = self._function(
            "Generate",
            FUNCTION_HANDLERS["generate"],
            memory_mb=512,
            # Above a target's worst case with the spec's defaults (4 attempts x 30 s + backoff) and the
            # Bedrock client's own retries, like the scorers.
            timeout=Duration.minutes(6),
            environment={
                **FUNCTION_ENVIRONMENT["generate"],
                "PRODUCTION_TARGET_PARAMETER": production_target.parameter_name,
                "BUNDLE_PREFIX": config.generation.bundle_prefix,
                "ALLOWED_TARGET_KINDS": ",".join(config.generation.allowed_target_kinds),
            },
            statements=self._generate_statements(storage, production_target),
        )

        # ---- Scorers: one per dimension, same handler, DIMENSION selects the scorer.
        judge_statements = self._judge_statements()
        self.scorers: dict[str, lambda_.Function] = {}
        for dimension in self.dimensions:
            self.scorers[dimension] = self._function(
                "Score" + "".join(part.capitalize() for part in dimension.replace("-", "_").split("_")),
                FUNCTION_HANDLERS[dimension],
                # The judge call dominates; memory buys CPU for the Japanese segmentation checks.
                memory_mb=512,
                # Above the Bedrock judge's worst case (5 attempts x 60 s read timeout + backoff), so
                # the judge's own retries finish and report before Lambda would cut them off.
                timeout=Duration.minutes(6),
                environment=FUNCTION_ENVIRONMENT[dimension],
                service_suffix=f"score-{dimension.replace('_', '-')}",
                statements=[
                    _statement("ReadRunRubric", ["s3:GetObject"], [storage.runs_arn()]),
                    storage.table_statement("VerdictCache", ["dynamodb:GetItem", "dynamodb:PutItem"],
                                            [VERDICT_PK_PREFIX]),
                    *judge_statements,
                ],
            )

        # ---- Composite: also records per-item error records ("mode": "error").
        self.composite = self._function(
            "Composite",
            FUNCTION_HANDLERS["composite"],
            memory_mb=256,
            timeout=Duration.seconds(30),
            statements=[
                _statement("ReadRunRubric", ["s3:GetObject"], [storage.runs_arn()]),
                storage.table_statement("WriteItemResult", ["dynamodb:PutItem"], [RUN_PK_PREFIX]),
            ],
        )

        # ---- Aggregate: report, baseline comparison, metrics, EvaluationCompleted.
        self.aggregate = self._function(
            "Aggregate",
            FUNCTION_HANDLERS["aggregate"],
            memory_mb=1024,
            timeout=Duration.minutes(5),
            statements=[
                _statement("ReadWriteRunFiles", ["s3:GetObject", "s3:PutObject"], [storage.runs_arn()]),
                # Its run's and the baseline run's records, every result (Query on the run's pk), error
                # records for items without a result, the outcome. The base table only: nothing reads gsi1.
                storage.table_statement(
                    "ReadResultsCloseRun",
                    ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:Query"],
                    [RUN_PK_PREFIX],
                ),
                # PutMetricData has no resource-level permission; the namespace condition scopes it.
                iam.PolicyStatement(
                    sid="PublishRunMetrics",
                    actions=["cloudwatch:PutMetricData"],
                    resources=["*"],
                    conditions={"StringEquals": {"cloudwatch:namespace": METRICS_NAMESPACE}},
                ),
                _statement("EmitEvaluationCompleted", ["events:PutEvents"], [event_bus.event_bus_arn]),
            ],
        )

        self.by_role: dict[str, lambda_.Function] = {
            "prepare": self.prepare,
            "generate": self.generate,
            **self.scorers,
            "composite": self.composite,
            "aggregate": self.aggregate,
        }

    # ---------------------------------------------------------------------------------------------
    def _model_arns(self, model_id: str, regions: list[str] | None) -> list[str]:
        """What bedrock:InvokeModel (which also authorizes Converse) needs for one model id.

        For an inference profile: the profile ARN in this region AND the foundation model in every
        region the profile routes to (Bedrock checks both).
        """
        stack = Stack.of(self)
        foundation_regions = model_foundation_regions(model_id, regions) or (stack.region,)
        arns = [
            f"arn:{stack.partition}:bedrock:{region}::foundation-model/{model_foundation_id(model_id)}"
            for region in foundation_regions
        ]
        if model_is_inference_profile(model_id):
            arns.insert(0, stack.format_arn(service="bedrock", resource="inference-profile", resource_name=model_id))
            # A profile routes requests to its source region too: without it there, those calls are denied.
            if not Token.is_unresolved(stack.region) and stack.region not in foundation_regions:
                Annotations.of(self).add_warning_v2(
                    "fmquality:ProfileRegions",
                    f"{model_id}: the regions granted for its foundation model ({', '.join(foundation_regions)}) "
                    f"leave out this stack's region {stack.region}; check the *_regions keys in cdk.json against "
                    "'aws bedrock get-inference-profile'")
        return arns

    def _judge_statements(self) -> list[iam.PolicyStatement]:
        """bedrock:InvokeModel on the configured judge model only."""
        if self._config.judge != "bedrock":
            return []
        arns = self._model_arns(self._config.judge_model_id, self._config.judge_model_regions)
        return [_statement("InvokeJudgeModel", ["bedrock:InvokeModel"], arns)]

    def _generate_statements(self, storage: Storage, production_target: ProductionTarget) -> list[iam.PolicyStatement]:
        """Generate's grants: each list of config.generation becomes the resources of one statement; an
        empty list leaves its statement out (no permission), never a wildcard."""
        generation = self._config.generation
        statements = [
            # "bedrock:s3://<data bucket>/<bundle_prefix>...?versionId=V": one version of a bundle.
            _statement("ReadPromptBundleVersions", ["s3:GetObject", "s3:GetObjectVersion"], [storage.bundles_arn()]),
            # runs/<run_id>/targets.json (the run's resolved target and control, written by Prepare).
            _statement("ReadRunTargets", ["s3:GetObject"], [storage.runs_arn()]),
            _statement("ReadProductionTarget", ["ssm:GetParameter"], [production_target.parameter_arn]),
        ]
        model_arns: list[str] = []
        for model_id in generation.bedrock_generation_model_ids:
            model_arns += [a for a in self._model_arns(model_id, generation.bedrock_generation_model_regions)
                           if a not in model_arns]
        if model_arns:
            statements.append(_statement("InvokeGenerationModels", ["bedrock:InvokeModel"], model_arns))
        if generation.prompt_arns:
            # GetPrompt authorizes on the prompt; a versioned ARN is granted as given and as its prompt.
            prompts: list[str] = []
            for arn in generation.prompt_arns:
                base = arn.rsplit(":", 1)[0] if arn.count(":") > 5 else arn
                prompts += [a for a in (base, arn) if a not in prompts]
            statements.append(_statement("ReadPrompts", ["bedrock:GetPrompt"], prompts))
        if generation.chatbot_function_arns:
            statements.append(_statement("InvokeChatbotFunctions", ["lambda:InvokeFunction"],
                                         list(generation.chatbot_function_arns)))
        if generation.chatbot_header_secret_arns:
            statements.append(_statement("ReadChatbotHeaders", ["secretsmanager:GetSecretValue"],
                                         list(generation.chatbot_header_secret_arns)))
        return statements

    def _function(
        self,
        name: str,
        handler: str,
        *,
        memory_mb: int,
        timeout: Duration,
        statements: list[iam.PolicyStatement],
        environment: dict[str, str] | None = None,
        service_suffix: str | None = None,
    ) -> lambda_.Function:
        log_group = logs.LogGroup(
            self,
            f"{name}Logs",
            retention=getattr(logs.RetentionDays, _RETENTION[self._config.log_retention_days]),
            removal_policy=RemovalPolicy.DESTROY,
        )
        role = iam.Role(
            self,
            f"{name}Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"fmquality {name} function: only what its step uses",
        )
        # Instead of AWSLambdaBasicExecutionRole (IAM4): logs to this function's own group only.
        role.add_to_policy(
            _statement("WriteOwnLogs", ["logs:CreateLogStream", "logs:PutLogEvents"], [log_group.log_group_arn])
        )
        for statement in statements:
            role.add_to_policy(statement)
        function = lambda_.Function(
            self,
            name,
            runtime=RUNTIME,
            architecture=ARCHITECTURE,
            handler=handler,
            code=self.code,
            layers=self.layers,
            memory_size=memory_mb,
            timeout=timeout,
            role=role,
            log_group=log_group,
            tracing=lambda_.Tracing.ACTIVE,
            environment={
                **self.common_environment,
                "POWERTOOLS_SERVICE_NAME": f"fmquality-{service_suffix or name.lower()}",
                **(environment or {}),
            },
            description=f"MangaAssist quality gate ({self._config.env_name}): {name}",
        )
        return function


def _statement(sid: str, actions: list[str], resources: list[str]) -> iam.PolicyStatement:
    return iam.PolicyStatement(sid=sid, actions=actions, resources=resources)


_RETENTION = {
    7: "ONE_WEEK",
    14: "TWO_WEEKS",
    30: "ONE_MONTH",
    60: "TWO_MONTHS",
    90: "THREE_MONTHS",
    180: "SIX_MONTHS",
    365: "ONE_YEAR",
}
