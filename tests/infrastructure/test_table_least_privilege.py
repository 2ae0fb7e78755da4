"""Each function's DynamoDB grant names the actions it calls and, through dynamodb:LeadingKeys, the
partition-key prefixes it reads or writes (the table in infra/constructs/storage.py documents why)."""

from __future__ import annotations

import json

import pytest

from infra.constructs import storage
from tests.infrastructure.conftest import as_list, functions_by_handler_env, policy_statements_for_function, resources_of

RUN, DATASET, VERDICT, CATALOG, REVIEW = "RUN#", "DATASET#", "VERDICT#", "CATALOG#", "REVIEW#"
ONLINE = "ONLINE#"

# function (functions_by_handler_env's name) -> action -> the partition-key prefixes it may touch.
EXPECTED: dict[str, dict[str, set[str]]] = {
    "prepare": {"dynamodb:GetItem": {RUN, DATASET, CATALOG}, "dynamodb:PutItem": {RUN},
                "dynamodb:Query": {CATALOG}},
    "generate": {},
    # a scorer of every dimension, and Composite for the item
    "score_case": {"dynamodb:GetItem": {VERDICT}, "dynamodb:PutItem": {VERDICT, RUN}},
    "composite": {"dynamodb:PutItem": {RUN}},
    # PutItem on REVIEW# too: a failed gate's failing items go to the review queue (issue 20).
    "aggregate": {"dynamodb:GetItem": {RUN}, "dynamodb:PutItem": {RUN, REVIEW}, "dynamodb:UpdateItem": {RUN},
                  "dynamodb:Query": {RUN}},
    # production watch
    "redact_transform": {},
    "sampler": {},
    "watch": {"dynamodb:PutItem": {REVIEW}, "dynamodb:Query": {REVIEW}},
    # online judging (issue 20): results like a run's, per-window counts and cells, the verdict cache
    "online_judge": {"dynamodb:PutItem": {RUN, VERDICT}, "dynamodb:UpdateItem": {ONLINE},
                     "dynamodb:GetItem": {VERDICT}},
    "drift_check": {"dynamodb:Query": {ONLINE, RUN}},
    "drift_action": {},
}
SCORER = {"dynamodb:GetItem": {VERDICT}, "dynamodb:PutItem": {VERDICT}}


def test_the_prefixes_are_the_ones_the_core_writes():
    from fmquality.adapters.dynamodb import catalog_pk, dataset_pk, run_pk, verdict_pk
    from fmquality.adapters.review_queue import REVIEW_PK_PREFIX

    assert (storage.RUN_PK_PREFIX, storage.DATASET_PK_PREFIX, storage.VERDICT_PK_PREFIX, storage.CATALOG_PK_PREFIX,
            storage.REVIEW_PK_PREFIX) == (run_pk(""), dataset_pk(""), verdict_pk(""), catalog_pk(""), REVIEW_PK_PREFIX)
    assert (RUN, DATASET, VERDICT, CATALOG, REVIEW) == (run_pk(""), dataset_pk(""), verdict_pk(""), catalog_pk(""),
                                                        REVIEW_PK_PREFIX)


@pytest.fixture(scope="module")
def functions(synth, evaluation_template):
    """name -> (template, function resource) over the evaluation stack and the production watch."""
    (path,) = synth.outdir.glob("*ProductionWatch*.nested.template.json")
    watch = json.loads(path.read_text())
    out = {name: (evaluation_template, fn) for name, (_, fn) in functions_by_handler_env(evaluation_template).items()}
    out.update({name: (watch, fn) for name, (_, fn) in functions_by_handler_env(watch).items()})
    return out


def _table_grants(template, function) -> dict[str, set[str]]:
    """action -> prefixes, from the function's DynamoDB statements; each must be scoped by LeadingKeys."""
    grants: dict[str, set[str]] = {}
    for statement in policy_statements_for_function(template, function):
        actions = [a for a in as_list(statement["Action"]) if a.startswith("dynamodb:")]
        if not actions:
            continue
        assert statement["Effect"] == "Allow"
        # Item actions on the base table only: no index, no wildcard.
        assert "/index/" not in json.dumps(statement["Resource"]) and statement["Resource"] != "*", statement
        assert set(statement["Condition"]) == {"ForAllValues:StringLike"}, statement
        patterns = as_list(statement["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"])
        assert all(p.endswith("#*") and p.count("*") == 1 for p in patterns), patterns
        for action in actions:
            grants.setdefault(action, set()).update(p[:-1] for p in patterns)
    return grants


def test_every_function_may_touch_only_the_partitions_it_uses(functions, synth):
    dimensions = set(synth.config.profile.dimensions)
    assert set(functions) == set(EXPECTED) | dimensions
    for name, (template, function) in functions.items():
        expected = SCORER if name in dimensions else EXPECTED[name]
        assert _table_grants(template, function) == expected, name


def test_no_function_may_scan_or_batch(functions):
    keyed = {"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:Query"}
    for name, (template, function) in functions.items():
        for statement in policy_statements_for_function(template, function):
            dynamo = {a for a in as_list(statement["Action"]) if a.startswith("dynamodb:")}
            assert dynamo <= keyed, (name, dynamo - keyed)  # ForAllValues holds vacuously for key-less requests


def test_the_table_keeps_its_keys(evaluation_template):
    (table,) = resources_of(evaluation_template, "AWS::DynamoDB::Table").values()
    assert table["Properties"]["KeySchema"][0] == {"AttributeName": "pk", "KeyType": "HASH"}
