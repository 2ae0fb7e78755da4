"""Synthesize the CDK app ONCE per test session (about 7 s) and share the templates.

Synthesis runs offline: FMQ_SKIP_LAYER_BUNDLING=1 replaces the pip-built dependency layer with a
placeholder (no network), and a fixed account/region makes ARNs concrete. cdk-nag runs as a validation
plugin during synth; a finding makes synth raise, so the fixture keeps the exception and the
validation report for the nag test to show instead of failing every test of the session.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

ACCOUNT = "111111111111"
REGION = "us-east-1"


@dataclass
class Synth:
    outdir: Path
    config: Any
    evaluation_stack_name: str
    pipeline_stack_name: str
    state_machine_name: str
    error: str | None = None
    templates: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def evaluation(self) -> dict[str, Any]:
        return self.templates[self.evaluation_stack_name]

    @property
    def pipeline(self) -> dict[str, Any]:
        return self.templates[self.pipeline_stack_name]

    def validation_report(self) -> dict[str, Any]:
        path = self.outdir / "validation-report.json"
        return json.loads(path.read_text()) if path.exists() else {"pluginReports": []}

    def require_success(self) -> None:
        if self.error:
            pytest.fail(f"cdk synth failed:\n{self.error}")


@pytest.fixture(scope="session")
def synth(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    os.environ["FMQ_SKIP_LAYER_BUNDLING"] = "1"
    import aws_cdk as cdk

    import app as cdk_app
    from infra.config import load_config

    outdir = tmp_path_factory.mktemp("cdk.out")
    config = load_config()
    application, evaluation, pipeline = cdk_app.build_app(
        config, outdir=str(outdir), env=cdk.Environment(account=ACCOUNT, region=REGION)
    )
    result = Synth(
        outdir=outdir,
        config=config,
        evaluation_stack_name=evaluation.stack_name,
        pipeline_stack_name=pipeline.stack_name,
        state_machine_name=evaluation.evaluation.name,
    )
    try:
        application.synth()
    except Exception as exc:  # jsii wraps the validation failure in a RuntimeError
        result.error = str(exc)[:4000]
    for template in outdir.glob("*.template.json"):
        result.templates[template.name.removesuffix(".template.json")] = json.loads(template.read_text())
    return result


@pytest.fixture(scope="session")
def evaluation_template(synth: Synth) -> dict[str, Any]:
    synth.require_success()
    return synth.evaluation


@pytest.fixture(scope="session")
def pipeline_template(synth: Synth) -> dict[str, Any]:
    synth.require_success()
    return synth.pipeline


@pytest.fixture(scope="session")
def template(evaluation_template: dict[str, Any]):
    from aws_cdk.assertions import Template

    return Template.from_json(evaluation_template)


@pytest.fixture(scope="session")
def state_machine_resource(evaluation_template: dict[str, Any]) -> dict[str, Any]:
    (resource,) = resources_of(evaluation_template, "AWS::StepFunctions::StateMachine").values()
    return resource


@pytest.fixture(scope="session")
def definition(state_machine_resource: dict[str, Any]) -> dict[str, Any]:
    """The inlined ASL as deployed (placeholders still in place: Step Functions fills them)."""
    return json.loads(state_machine_resource["Properties"]["DefinitionString"])


# ---- helpers shared by the test modules ---------------------------------------------------------


def resources_of(template: dict[str, Any], resource_type: str) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == resource_type}


def functions_by_handler_env(template: dict[str, Any]) -> dict[str, tuple[str, dict[str, Any]]]:
    """Role name ("prepare", "relevance", ..., "aggregate") -> (logical id, function resource)."""
    roles: dict[str, tuple[str, dict[str, Any]]] = {}
    for logical_id, function in resources_of(template, "AWS::Lambda::Function").items():
        props = function["Properties"]
        handler = props["Handler"]
        if handler == "handlers.score_dimension.handler":
            roles[props["Environment"]["Variables"]["DIMENSION"]] = (logical_id, function)
        else:
            roles[handler.split(".")[1]] = (logical_id, function)
    return roles


def policy_statements_for_function(template: dict[str, Any], function: dict[str, Any]) -> list[dict[str, Any]]:
    role_ref = function["Properties"]["Role"]["Fn::GetAtt"][0]
    statements: list[dict[str, Any]] = []
    for policy in resources_of(template, "AWS::IAM::Policy").values():
        if {"Ref": role_ref} in policy["Properties"]["Roles"]:
            statements.extend(policy["Properties"]["PolicyDocument"]["Statement"])
    return statements


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def walk_states(states: dict[str, Any]):
    """Every (name, state) of a definition, inside Parallel branches and Map processors too."""
    for name, state in states.items():
        yield name, state
        for branch in state.get("Branches", []):
            yield from walk_states(branch["States"])
        processor = state.get("ItemProcessor") or state.get("Iterator")
        if processor:
            yield from walk_states(processor["States"])


def flatten_join(value: Any) -> str:
    """A readable string for an ARN expression: Fn::Join parts joined, Refs as <Ref>."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and "Fn::Join" in value:
        sep, parts = value["Fn::Join"]
        return sep.join(flatten_join(p) for p in parts)
    if isinstance(value, dict) and "Ref" in value:
        return f"<{value['Ref']}>"
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        return f"<{'.'.join(value['Fn::GetAtt'])}>"
    return json.dumps(value)
