"""The example release pipeline: its quality-gate stage invokes the evaluation state machine."""

from __future__ import annotations

import json

from .conftest import ACCOUNT, REGION, as_list, flatten_join, resources_of


def pipeline_stages(pipeline_template):
    (pipeline,) = resources_of(pipeline_template, "AWS::CodePipeline::Pipeline").values()
    return pipeline["Properties"]["Stages"]


def test_stages_run_source_gate_approval_release_in_order(pipeline_template):
    assert [s["Name"] for s in pipeline_stages(pipeline_template)] == ["Source", "QualityGate", "Approve", "Release"]


def test_gate_stage_invokes_the_evaluation_state_machine(pipeline_template, synth):
    gate = next(s for s in pipeline_stages(pipeline_template) if s["Name"] == "QualityGate")
    (action,) = gate["Actions"]
    assert action["ActionTypeId"] == {"Category": "Invoke", "Owner": "AWS", "Provider": "StepFunctions", "Version": "1"}
    config = action["Configuration"]
    assert flatten_join(config["StateMachineArn"]) == (
        f"arn:<AWS::Partition>:states:{REGION}:{ACCOUNT}:stateMachine:{synth.state_machine_name}"
    )
    assert config["InputType"] == "Literal"
    # The dataset's bucket is a cross-stack reference: stand a plain word in for each token.
    parts = config["Input"]["Fn::Join"][1]
    run_input = json.loads("".join(p if isinstance(p, str) else "TOKEN" for p in parts))
    assert run_input["trigger"] == "pipeline"
    assert run_input["dataset"].startswith("s3://") and run_input["dataset"].endswith(synth.config.golden_dataset_key)
    # The candidate is the source revision, resolved by CodePipeline from the source action's variables.
    assert run_input["candidate"]["prompt_bundle_version"] == "#{Source.VersionId}"


def test_gate_action_may_start_only_the_evaluation_state_machine(pipeline_template, synth):
    arns = []
    for policy in resources_of(pipeline_template, "AWS::IAM::Policy").values():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            if "states:StartExecution" in as_list(statement["Action"]):
                arns += [flatten_join(r) for r in as_list(statement["Resource"])]
    assert arns == [f"arn:<AWS::Partition>:states:{REGION}:{ACCOUNT}:stateMachine:{synth.state_machine_name}"]


def test_release_follows_a_manual_approval(pipeline_template):
    stages = {s["Name"]: s for s in pipeline_stages(pipeline_template)}
    assert stages["Approve"]["Actions"][0]["ActionTypeId"]["Category"] == "Approval"
    release = stages["Release"]["Actions"][0]
    assert release["ActionTypeId"]["Provider"] == "S3" and release["ActionTypeId"]["Category"] == "Deploy"
    assert release["InputArtifacts"] == stages["Source"]["Actions"][0]["OutputArtifacts"]
