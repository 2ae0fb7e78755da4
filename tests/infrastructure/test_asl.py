"""The ASL file: placeholders, moto-runnable constructs, asl-validator."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from infra.asl import (
    BUCKET_PLACEHOLDER,
    FUNCTION_PLACEHOLDERS,
    FUNCTION_ROLES,
    PLACEHOLDERS,
    asl_substitutions,
    load_definition,
    placeholders_in,
    render_definition,
)

from .conftest import walk_states

ROOT = Path(__file__).resolve().parents[2]
ASL_VALIDATOR = ROOT / "node_modules" / ".bin" / "asl-validator"


@pytest.fixture(scope="module")
def raw_definition() -> dict:
    return json.loads(load_definition())


def fake_arns() -> dict[str, str]:
    return {role: f"arn:aws:lambda:us-east-1:123456789012:function:{role}" for role in FUNCTION_ROLES}


# ---- placeholders -------------------------------------------------------------------------------


def test_every_placeholder_in_the_file_is_in_the_shared_mapping_and_back():
    assert placeholders_in(load_definition()) == set(PLACEHOLDERS)


def test_synthesized_substitutions_cover_exactly_the_placeholders(state_machine_resource):
    substitutions = state_machine_resource["Properties"]["DefinitionSubstitutions"]
    used = placeholders_in(state_machine_resource["Properties"]["DefinitionString"])
    assert used, "the inlined definition lost its placeholders"
    assert set(substitutions) == used


def test_substitutions_wire_each_placeholder_to_the_right_resource(state_machine_resource, evaluation_template):
    from .conftest import functions_by_handler_env, resources_of

    substitutions = state_machine_resource["Properties"]["DefinitionSubstitutions"]
    functions = functions_by_handler_env(evaluation_template)
    for role in FUNCTION_ROLES:
        logical_id, _ = functions[role]
        assert substitutions[FUNCTION_PLACEHOLDERS[role]] == {"Fn::GetAtt": [logical_id, "Arn"]}, role
    (bucket_id,) = [k for k, v in resources_of(evaluation_template, "AWS::S3::Bucket").items()
                    if "VersioningConfiguration" in v["Properties"]]
    assert substitutions[BUCKET_PLACEHOLDER] == {"Ref": bucket_id}


def test_asl_substitutions_refuses_a_half_wired_function_set():
    arns = fake_arns()
    arns.pop("fluency")
    with pytest.raises(ValueError, match="fluency"):
        asl_substitutions(arns, "bucket")
    with pytest.raises(ValueError, match="unknown"):
        asl_substitutions({**fake_arns(), "extra": "arn"}, "bucket")


def test_render_definition_fills_every_placeholder():
    rendered = render_definition(load_definition(), asl_substitutions(fake_arns(), "data-bucket"))
    assert "${" not in rendered
    states = json.loads(rendered)["States"]
    assert states["Prepare"]["Parameters"]["FunctionName"].endswith(":prepare")
    assert states["EvaluateItems"]["ItemReader"]["Parameters"]["Bucket"] == "data-bucket"


def test_render_definition_reports_missing_and_unused_values():
    substitutions = asl_substitutions(fake_arns(), "b")
    substitutions.pop("PrepareFunctionArn")
    with pytest.raises(ValueError, match="PrepareFunctionArn"):
        render_definition(load_definition(), substitutions)
    with pytest.raises(ValueError, match="Extra"):
        render_definition(load_definition(), {**asl_substitutions(fake_arns(), "b"), "Extra": "x"})


# ---- what the local (moto) engine can run: DESIGN section 7 ---------------------------------------


def test_only_constructs_the_local_engine_runs(raw_definition):
    text = json.dumps(raw_definition)
    assert "QueryLanguage" not in text and "JSONata" not in text and "{%" not in text
    assert "ItemBatcher" not in text
    map_state = raw_definition["States"]["EvaluateItems"]
    assert map_state["ItemReader"]["ReaderConfig"] == {"InputType": "JSON"}
    for _, state in walk_states(raw_definition["States"]):
        if "ToleratedFailurePercentage" in state:
            assert isinstance(state["ToleratedFailurePercentage"], float)


def test_timeout_and_gate_failure_are_in_the_definition(raw_definition):
    assert raw_definition["TimeoutSeconds"] > 0
    failed = raw_definition["States"]["GateFailed"]
    assert failed == {"Type": "Fail", "Error": "QualityGateFailed", "CausePath": "$.aggregate.summary"}
    choice = raw_definition["States"]["GateDecision"]
    assert choice["Choices"] == [{"Variable": "$.aggregate.gate_passed", "BooleanEquals": True, "Next": "GatePassed"}]
    assert choice["Default"] == "GateFailed"


# ---- asl-validator ------------------------------------------------------------------------------


def _validate(path: Path) -> subprocess.CompletedProcess:
    if not ASL_VALIDATOR.exists():
        pytest.skip("node_modules/ is absent: run `make node_modules` (npm ci) to install asl-validator")
    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    return subprocess.run([str(ASL_VALIDATOR), "--json-path", str(path)], capture_output=True, text=True, timeout=60)


def test_asl_validator_accepts_the_definition():
    proc = _validate(ROOT / "statemachines" / "evaluation.asl.json")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_asl_validator_catches_a_dangling_next(tmp_path, raw_definition):
    # Proves the check can fail: the same file with one broken transition.
    broken = json.loads(json.dumps(raw_definition))
    broken["States"]["Prepare"]["Next"] = "NoSuchState"
    path = tmp_path / "broken.asl.json"
    path.write_text(json.dumps(broken))
    proc = _validate(path)
    assert proc.returncode != 0
