"""What every Lambda function of the project is made of, and the one place that builds a function.

* Runtime and architecture (Python 3.14, arm64) and ONE code asset, the ``lambdas/`` folder.
* Dependencies from two layers:
  - the public Powertools for AWS Lambda (Python) v3 layer (Logger, Tracer, Metrics, pydantic), resolved
    at deploy time from its public SSM parameter for the region, runtime and architecture;
  - a small layer built WITHOUT Docker by ``pip install --platform manylinux2014_aarch64 --only-binary``
    from requirements-lambda.txt (PyYAML, jinja2, tinysegmenter, pykakasi).
  Set FMQ_SKIP_LAYER_BUNDLING=1 to synthesize without network (the tests do): the layer then holds a
  placeholder file and gets a different asset hash, so a placeholder is never mistaken for a real build.
* ``FunctionKit.function``: a function with its own log group and its own role holding only the
  statements its step uses (nothing from managed policies), active tracing and the common environment.
  The evaluation functions (infra.constructs.evaluation_functions) and the production watch's
  (infra.constructs.production_watch) are all built by it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import jsii
from aws_cdk import (
    AssetHashType,
    BundlingOptions,
    DockerImage,
    Duration,
    ILocalBundling,
    RemovalPolicy,
    SymlinkFollowMode,
)
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from infra.config import PROJECT_ROOT, FmQualityConfig
from infra.constructs.policies import statement

# The newest Python runtime this aws-cdk-lib offers; the Powertools layer variant must match it
# because pydantic-core is a compiled extension.
RUNTIME = lambda_.Runtime.PYTHON_3_14
ARCHITECTURE = lambda_.Architecture.ARM_64
LAMBDA_PLATFORM = "manylinux2014_aarch64"
SKIP_LAYER_BUNDLING_ENV = "FMQ_SKIP_LAYER_BUNDLING"
LAYER_REQUIREMENTS = PROJECT_ROOT / "requirements-lambda.txt"
LAMBDA_CODE_DIR = PROJECT_ROOT / "lambdas"

# config.log_retention_days -> the RetentionDays member of the function log groups.
_RETENTION = {
    7: "ONE_WEEK",
    14: "TWO_WEEKS",
    30: "ONE_MONTH",
    60: "TWO_MONTHS",
    90: "THREE_MONTHS",
    180: "SIX_MONTHS",
    365: "ONE_YEAR",
}


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
        self._pip_install(target)
        # RECORD files list absolute-ish install paths; drop them and caches so the zip is reproducible.
        for record in target.glob("*.dist-info/RECORD"):
            record.unlink()
        for cache in target.rglob("__pycache__"):
            shutil.rmtree(cache, ignore_errors=True)
        return True

    def _pip_install(self, target: Path) -> None:
        """Step 1: wheels for everything, built on this machine. This turns sdist-only pure-Python
        packages (tinysegmenter) into py3-none-any wheels; host-specific wheels it also leaves are
        ignored by step 2. Step 2: install for the Lambda platform from PyPI wheels + those wheels."""
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


def dependency_layer_code() -> lambda_.Code:
    """The dependency layer's asset, hashed from requirements-lambda.txt and the target platform."""
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


def lambda_code_asset() -> lambda_.Code:
    """The ``lambdas/`` folder (the fmquality package and the handlers). A Code instance binds to one
    stack only, so a nested stack takes its own; the same folder gives the same hash, one upload."""
    return lambda_.Code.from_asset(
        str(LAMBDA_CODE_DIR),
        exclude=["*.egg-info", "__pycache__", "tests"],
        follow_symlinks=SymlinkFollowMode.ALWAYS,
    )


def dependency_layers(scope: Construct, config: FmQualityConfig) -> list[lambda_.ILayerVersion]:
    """The Powertools layer (by its public SSM parameter) and the project's dependency layer."""
    powertools_arn = ssm.StringParameter.value_for_string_parameter(
        scope, powertools_layer_parameter_name(config.powertools_layer_version)
    )
    return [
        lambda_.LayerVersion.from_layer_version_arn(scope, "PowertoolsLayer", powertools_arn),
        lambda_.LayerVersion(
            scope,
            "DependenciesLayer",
            code=dependency_layer_code(),
            compatible_runtimes=[RUNTIME],
            compatible_architectures=[ARCHITECTURE],
            description="fmquality dependencies: PyYAML, jinja2, tinysegmenter, pykakasi (requirements-lambda.txt)",
            removal_policy=RemovalPolicy.DESTROY,
        ),
    ]


@dataclass(frozen=True)
class FunctionKit:
    """What every function shares: code asset, layers, the common environment, naming and log retention."""

    code: lambda_.Code
    layers: list[lambda_.ILayerVersion]
    environment: dict[str, str]
    env_name: str
    log_retention_days: int

    def for_nested_stack(self) -> FunctionKit:
        """The same kit with a code asset of its own (a Code instance binds to one stack)."""
        return dataclasses.replace(self, code=lambda_code_asset())

    def function(
        self,
        scope: Construct,
        name: str,
        handler: str,
        *,
        memory_mb: int,
        timeout: Duration,
        statements: list[iam.PolicyStatement],
        environment: dict[str, str] | None = None,
        service_suffix: str | None = None,
    ) -> lambda_.Function:
        """Function ``name`` under ``scope`` with its log group ``<name>Logs`` and role ``<name>Role``.

        ``statements``: everything the step may do besides writing its own logs and traces.
        ``environment``: added to the common one; POWERTOOLS_SERVICE_NAME is fmquality-<service_suffix>
        (default: the lowercased name).
        """
        log_group = self._log_group(scope, name)
        role = self._role(scope, name, log_group, statements)
        return lambda_.Function(
            scope,
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
                **self.environment,
                "POWERTOOLS_SERVICE_NAME": f"fmquality-{service_suffix or name.lower()}",
                **(environment or {}),
            },
            description=f"MangaAssist quality gate ({self.env_name}): {name}",
        )

    def _log_group(self, scope: Construct, name: str) -> logs.LogGroup:
        return logs.LogGroup(
            scope,
            f"{name}Logs",
            retention=getattr(logs.RetentionDays, _RETENTION[self.log_retention_days]),
            removal_policy=RemovalPolicy.DESTROY,
        )

    @staticmethod
    def _role(scope: Construct, name: str, log_group: logs.ILogGroup,
              statements: list[iam.PolicyStatement]) -> iam.Role:
        role = iam.Role(
            scope,
            f"{name}Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"fmquality {name} function: only what its step uses",
        )
        # Instead of AWSLambdaBasicExecutionRole (IAM4): logs to this function's own group only.
        role.add_to_policy(
            statement("WriteOwnLogs", ["logs:CreateLogStream", "logs:PutLogEvents"], [log_group.log_group_arn])
        )
        for grant in statements:
            role.add_to_policy(grant)
        return role
