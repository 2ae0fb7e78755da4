"""Where the runs the deployment starts take their catalog from (config ``catalog_source``), and
Prepare's permission to read catalog snapshots from the table."""

from __future__ import annotations

import re

import pytest

from infra.config import TABLE_CATALOG_INPUT

from .conftest import flatten_join, functions_by_handler_env, policy_statements_for_function, resources_of
from .test_evaluation_stack import statement_with


def _catalog_of_started_runs(template) -> dict[str, str | None]:
    """Rule -> the "catalog" of the execution input its state-machine target passes (tokens as <Ref>)."""
    out = {}
    for logical_id, rule in resources_of(template, "AWS::Events::Rule").items():
        for target in rule["Properties"]["Targets"]:
            text = flatten_join(target.get("Input") or target.get("InputTransformer", {}).get("InputTemplate") or "")
            if '"dataset"' in text:
                found = re.search(r'"catalog":"([^"]*)"', text)
                out[logical_id] = found and found.group(1)
    return out


def test_prepare_may_query_catalog_partitions_only(evaluation_template):
    from fmquality.adapters.dynamodb import catalog_pk

    _, prepare = functions_by_handler_env(evaluation_template)["prepare"]
    query = statement_with(policy_statements_for_function(evaluation_template, prepare), "dynamodb:Query")
    (table_id,) = resources_of(evaluation_template, "AWS::DynamoDB::Table")
    assert query["Action"] == "dynamodb:Query"
    assert query["Resource"] == {"Fn::GetAtt": [table_id, "Arn"]}  # the table, not its index
    assert query["Condition"] == {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": [catalog_pk("") + "*"]}}


def test_the_table_input_is_the_one_prepare_reads():
    from fmquality.adapters.dynamodb import CATALOG_REF_PREFIX

    assert TABLE_CATALOG_INPUT == f"{CATALOG_REF_PREFIX}latest"


def test_by_default_runs_read_the_catalog_file(evaluation_template, pipeline_template, synth):
    assert synth.config.catalog_source == "s3"
    catalogs = _catalog_of_started_runs(evaluation_template)
    assert len(catalogs) == 4  # the schedule and the three change events
    assert set(catalogs.values()) == {f"s3://<{_bucket_id(evaluation_template)}>/{synth.config.catalog_key}"}
    (pipeline,) = resources_of(pipeline_template, "AWS::CodePipeline::Pipeline").values()
    gate = next(s for s in pipeline["Properties"]["Stages"] if s["Name"] == "QualityGate")
    assert '"catalog":"s3://' in flatten_join(gate["Actions"][0]["Configuration"]["Input"])


def _bucket_id(template) -> str:
    (bucket_id,) = [k for k, v in resources_of(template, "AWS::S3::Bucket").items() if "DataBucket" in k]
    return bucket_id


@pytest.fixture(scope="module")
def table_sourced(synth):
    """The triggers and the pipeline gate of a deployment with catalog_source "table", in a small stack
    (a second synth of the whole app would cost seconds)."""
    import aws_cdk as cdk
    from aws_cdk import aws_events as events
    from aws_cdk import aws_sns as sns
    from aws_cdk import aws_stepfunctions as sfn
    from aws_cdk.assertions import Template

    import app as cdk_app
    from infra.constructs.pipeline_gate import QualityGate
    from infra.constructs.storage import Storage
    from infra.constructs.triggers import Triggers, catalog_input

    config = synth.config.model_copy(update={"catalog_source": "table"})
    stack = cdk.Stack(cdk.App(context=cdk_app.read_cdk_json()["context"]), "CatalogFromTable")
    storage = Storage(stack, "Storage", config=config)
    state_machine = sfn.StateMachine.from_state_machine_name(stack, "Evaluation", "evaluation")
    Triggers(stack, "Triggers", config=config, storage=storage, state_machine=state_machine,
             event_bus=events.EventBus(stack, "Bus"), alerts_topic=sns.Topic(stack, "Alerts"))
    gate = QualityGate(stack, "Gate", state_machine=state_machine, dataset_uri="s3://bucket/golden.jsonl",
                       catalog_uri=catalog_input(config, storage))
    return Template.from_stack(stack).to_json(), gate


def test_catalog_source_table_makes_every_started_run_read_the_latest_snapshot(table_sourced):
    template, gate = table_sourced
    catalogs = _catalog_of_started_runs(template)
    assert len(catalogs) == 4
    assert set(catalogs.values()) == {"dynamodb:latest"}
    assert gate.execution_input()["catalog"] == "dynamodb:latest"
