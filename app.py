#!/usr/bin/env python3
"""CDK app: the evaluation stack and the example release pipeline that uses its gate.

``python app.py`` (make synth) and ``cdk synth|deploy`` both work: the configuration is the
``fmquality`` object of cdk.json's context (see infra/config.py). cdk-nag's AwsSolutions pack runs as a
validation plugin, so an unacknowledged finding fails the synth.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import aws_cdk as cdk
from cdk_nag import AwsSolutionsChecks

from infra.config import CDK_JSON, CONTEXT_KEY, ConfigError, FmQualityConfig, load_config
from infra.stacks.evaluation_stack import EvaluationStack
from infra.stacks.pipeline_stack import PipelineStack


def read_cdk_json() -> dict[str, Any]:
    return json.loads(CDK_JSON.read_text(encoding="utf-8"))


def build_app(
    config: FmQualityConfig | None = None,
    *,
    outdir: str | None = None,
    env: cdk.Environment | None = None,
    context: dict[str, Any] | None = None,
) -> tuple[cdk.App, EvaluationStack, PipelineStack]:
    """Build (not synthesize) the app. Raises ConfigError for an invalid configuration."""
    if context is None and "CDK_CONTEXT_JSON" not in os.environ:
        # Not run by the CDK CLI (make synth): apply cdk.json's context ourselves, feature flags included,
        # so `python app.py` and `cdk synth` produce the same templates.
        context = read_cdk_json()["context"]
    app = cdk.App(outdir=outdir, context=context)
    if config is None:
        config = load_config(app.node.try_get_context(CONTEXT_KEY))
    if env is None:
        env = cdk.Environment(
            account=os.environ.get("CDK_DEFAULT_ACCOUNT"), region=os.environ.get("CDK_DEFAULT_REGION")
        )
    prefix = f"MangaAssistQuality-{config.env_name}"
    evaluation = EvaluationStack(
        app,
        f"{prefix}-Evaluation",
        config=config,
        env=env,
        description=f"MangaAssist answer-quality gate ({config.env_name}): evaluation state machine, scorers, monitoring",
    )
    pipeline = PipelineStack(
        app,
        f"{prefix}-Pipeline",
        state_machine_name=evaluation.evaluation.name,
        dataset_uri=evaluation.golden_dataset_uri,
        catalog_uri=evaluation.catalog_uri,
        production_target_spec=evaluation.production_target.spec,
        generate_role_name=evaluation.functions.generate.role.role_name,
        prepare_role_name=evaluation.functions.prepare.role.role_name,
        env=env,
        description=f"Example prompt-bundle release pipeline gated by the MangaAssist quality gate ({config.env_name})",
    )
    pipeline.add_stack_dependency(evaluation, "the gate starts the evaluation state machine")
    cdk.Tags.of(app).add("project", "mangaassist-quality-gate")
    cdk.Tags.of(app).add("environment", config.env_name)
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    return app, evaluation, pipeline


def main() -> int:
    # The CDK CLI passes CDK_OUTDIR; `python app.py` (make synth) writes ./cdk.out like the CLI would.
    outdir = os.environ.get("CDK_OUTDIR") or str(Path(__file__).resolve().parent / "cdk.out")
    try:
        app, _, _ = build_app(outdir=outdir)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    app.synth()
    return 0


if __name__ == "__main__":
    sys.exit(main())
