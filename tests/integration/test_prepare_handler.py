"""Prepare against moto: items.json, rubric.json, the run record, rejected lines, the baseline."""

from __future__ import annotations

import hashlib
import json

import pytest
from pydantic import ValidationError

from moto_env import BUCKET, CASES, DATASET_ID, DATASET_KEY, TABLE, load_event, put_dataset, read_json, read_text


def _prepare(event, context):
    from handlers.prepare import handler

    return handler(event, context)


def test_prepare_writes_items_rubric_and_registers_the_run(aws, lambda_context):
    from fmquality.domain.case import TestCase
    from fmquality.config.rubric import Rubric, load_rubric

    put_dataset(aws.s3, CASES)
    out = _prepare(load_event("prepare.json"), lambda_context)

    assert out["item_count"] == len(CASES) and out["rejected_count"] == 0
    assert out["bucket"] == BUCKET and out["dataset_id"] == DATASET_ID
    # The run id comes from the execution name when the input does not give one.
    assert out["run_id"] == "manual-20250101T000000Z"
    assert out["items_key"] == f"runs/{out['run_id']}/items.json"
    assert out["rubric_key"] == f"runs/{out['run_id']}/rubric.json"
    assert out["max_concurrency"] == 10 and out["tolerated_failure_percentage"] == 5.0
    assert out["baseline_run_id"] is None  # "auto" and no approved baseline yet

    items = read_json(aws.s3, out["items_key"])
    assert isinstance(items, list)
    # One element per (case, arm); without a control every element is a candidate item.
    assert {i["arm"] for i in items} == {"candidate"}
    assert [TestCase.model_validate(i["case"]).test_id for i in items] == [c["test_id"] for c in CASES]
    # The recorded target scores the dataset's own answers, so they travel with the items.
    assert [i["case"]["response"] for i in items] == [c["response"] for c in CASES]
    # Unknown dataset fields survive normalization in metadata.
    assert items[2]["case"]["metadata"] == {"source_channel": "web"}
    # Nothing to generate: the Map goes straight to the scorers.
    assert out["generate"] is False and out["targets_key"] == f"runs/{out['run_id']}/targets.json"
    assert read_json(aws.s3, out["targets_key"])["control"] is None
    rubric = Rubric.model_validate(read_json(aws.s3, out["rubric_key"]))
    assert rubric == load_rubric() and out["rubric_version"] == rubric.version

    run = aws.ddb.get_item(TableName="fmq-eval-test", Key={"pk": {"S": f"RUN#{out['run_id']}"}, "sk": {"S": "RUN"}})["Item"]
    assert run["status"]["S"] == "RUNNING"
    assert run["gsi1pk"]["S"] == f"DATASET#{DATASET_ID}"
    assert run["gsi1sk"]["S"].endswith(f"#{out['run_id']}")
    assert run["trigger"]["S"] == "manual"
    assert run["item_count"]["N"] == str(len(CASES))


def test_prepare_takes_limits_and_ids_from_the_input(aws, lambda_context, monkeypatch):
    monkeypatch.setenv("DEFAULT_MAX_CONCURRENCY", "3")
    put_dataset(aws.s3, CASES)
    out = _prepare(load_event("prepare.json", execution_name="pr-42", dataset_id="golden", tolerated_failure_percentage=0,
                              trigger="PromptVersionPublished"), lambda_context)
    assert out["run_id"] == "pr-42" and out["dataset_id"] == "golden"
    assert out["max_concurrency"] == 3
    assert out["tolerated_failure_percentage"] == 0.0 and isinstance(out["tolerated_failure_percentage"], float)
    assert out["trigger"] == "PromptVersionPublished"


def test_a_given_run_id_is_only_a_label_and_an_existing_run_is_never_registered_again(aws, lambda_context):
    """Issue 17: an execution input naming an approved baseline's run id used to mix its results into
    that run. The id is the execution's name; the input's run_id is kept as a label; a taken id stops
    Prepare before anything is written."""
    from fmquality.adapters.dynamodb import EvaluationTable
    from fmquality.domain.errors import RunAlreadyExists

    put_dataset(aws.s3, CASES)
    first = _prepare(load_event("prepare.json", execution_name="weekly-1", run_id="the-baseline"), lambda_context)
    assert first["run_id"] == "weekly-1"
    table = EvaluationTable(TABLE, aws.ddb)
    assert table.get_run("the-baseline") is None and table.get_run("weekly-1")["run_label"] == "the-baseline"
    before = aws.s3.get_object(Bucket=BUCKET, Key="runs/weekly-1/items.json")["LastModified"]
    with pytest.raises(RunAlreadyExists):  # another execution (another ARN) reusing the name
        _prepare(load_event("prepare.json", execution_name="weekly-1", execution_id=OTHER_EXECUTION), lambda_context)
    assert aws.s3.get_object(Bucket=BUCKET, Key="runs/weekly-1/items.json")["LastModified"] == before


OTHER_EXECUTION = "arn:aws:states:us-east-1:123456789012:execution:other-state-machine:weekly-1"


def test_a_retried_prepare_of_the_same_execution_succeeds_with_the_same_run(aws, lambda_context):
    """Issue 31 item 7: Step Functions retries Prepare (Lambda.ServiceException after the function ran):
    the execution that registered the run may prepare it again, getting the same answer and keeping
    the run's record (its first start time); another execution reusing the run id is still refused."""
    from fmquality.adapters.dynamodb import EvaluationTable
    from fmquality.domain.errors import RunAlreadyExists

    put_dataset(aws.s3, CASES)
    event = load_event("prepare.json", execution_name="retried-1")
    first = _prepare(event, lambda_context)
    table = EvaluationTable(TABLE, aws.ddb)
    registered = table.get_run("retried-1")
    again = _prepare(load_event("prepare.json", execution_name="retried-1"), lambda_context)
    assert again == first
    record = table.get_run("retried-1")
    assert record["started_at"] == registered["started_at"] and record["gsi1sk"] == registered["gsi1sk"]
    assert record["execution_id"] == event["execution_id"] and record["status"] == "RUNNING"
    assert read_json(aws.s3, again["items_key"]) == read_json(aws.s3, first["items_key"])
    with pytest.raises(RunAlreadyExists):
        _prepare(load_event("prepare.json", execution_name="retried-1", execution_id=OTHER_EXECUTION), lambda_context)
    assert table.get_run("retried-1")["execution_id"] == event["execution_id"]


def test_a_finished_run_is_not_prepared_again_even_by_its_own_execution(aws, lambda_context):
    from fmquality.adapters.dynamodb import EvaluationTable
    from fmquality.domain.errors import RunAlreadyExists

    put_dataset(aws.s3, CASES)
    event = load_event("prepare.json", execution_name="closed-1")
    _prepare(event, lambda_context)
    EvaluationTable(TABLE, aws.ddb).complete_run("closed-1", status="SUCCEEDED")
    with pytest.raises(RunAlreadyExists):
        _prepare(load_event("prepare.json", execution_name="closed-1"), lambda_context)


def test_the_registration_itself_is_idempotent_for_its_execution_only(aws):
    """The conditional write, not only Prepare's read before it: two Prepares of one execution racing
    both succeed; a second execution's write loses even when it races past the read."""
    from fmquality.adapters.dynamodb import EvaluationTable
    from fmquality.domain.errors import RunExists

    table = EvaluationTable(TABLE, aws.ddb)
    mine = "arn:aws:states:us-east-1:123456789012:execution:sm:r-idem"
    table.register_run("r-idem", DATASET_ID, status="RUNNING", execution_id=mine, item_count=3)
    table.register_run("r-idem", DATASET_ID, status="RUNNING", execution_id=mine, item_count=3)
    with pytest.raises(RunExists):
        table.register_run("r-idem", DATASET_ID, status="RUNNING", execution_id=OTHER_EXECUTION)
    with pytest.raises(RunExists):  # no execution id: never a retry
        table.register_run("r-idem", DATASET_ID, status="RUNNING")
    assert table.get_run("r-idem")["execution_id"] == mine


def test_a_run_registers_once_even_when_two_writers_race(aws):
    from fmquality.adapters.dynamodb import EvaluationTable
    from fmquality.domain.errors import RunExists

    table = EvaluationTable(TABLE, aws.ddb)
    table.register_run("r-race", DATASET_ID, status="RUNNING")
    with pytest.raises(RunExists):
        table.register_run("r-race", DATASET_ID, status="SUCCEEDED")
    assert table.get_run("r-race")["status"] == "RUNNING"


def test_prepare_rejects_bad_lines_listing_file_line_and_field(aws, lambda_context):
    from fmquality.domain.errors import DatasetRejected

    bad_intent = dict(CASES[1], intent="smalltalk")
    no_query = {k: v for k, v in CASES[2].items() if k != "query"}
    uri = put_dataset(aws.s3, [CASES[0], bad_intent, "{not json", no_query])

    with pytest.raises(DatasetRejected) as caught:
        _prepare(load_event("prepare.json", execution_name="bad-run"), lambda_context)

    message = str(caught.value)
    assert type(caught.value).__name__ == "DatasetRejected"  # the error name the state machine sees
    assert f"{uri}:2: intent:" in message
    assert f"{uri}:3: <line>: not valid JSON" in message
    assert f"{uri}:4: query:" in message
    assert f"{uri}:1:" not in message
    # rejected.jsonl is written even though the run stops.
    rejected = [json.loads(line) for line in read_text(aws.s3, "runs/bad-run/rejected.jsonl").splitlines()]
    assert sorted({r["line"] for r in rejected}) == [2, 3, 4]
    # No items and no run record for a rejected dataset.
    listed = aws.s3.list_objects_v2(Bucket=BUCKET, Prefix="runs/bad-run/").get("Contents", [])
    assert [o["Key"] for o in listed] == ["runs/bad-run/rejected.jsonl"]
    assert "Item" not in aws.ddb.get_item(TableName="fmq-eval-test", Key={"pk": {"S": "RUN#bad-run"}, "sk": {"S": "RUN"}})


def test_prepare_with_skip_invalid_writes_rejected_lines_and_continues(aws, lambda_context):
    put_dataset(aws.s3, [CASES[0], dict(CASES[1], intent="smalltalk"), CASES[2], dict(CASES[0])])
    out = _prepare(load_event("prepare.json", execution_name="skip-run", skip_invalid=True), lambda_context)

    assert out["item_count"] == 2 and out["rejected_count"] == 2
    assert [i["case"]["test_id"] for i in read_json(aws.s3, out["items_key"])] == ["faq-returns-window", "order-eta"]
    rejected = [json.loads(line) for line in read_text(aws.s3, "runs/skip-run/rejected.jsonl").splitlines()]
    assert {(r["line"], r["field"]) for r in rejected} == {(2, "intent"), (4, "test_id")}
    assert all(r["file"] == f"s3://{BUCKET}/{DATASET_KEY}" for r in rejected)


def test_prepare_resolves_the_catalog_per_case_and_rejects_an_invalid_one(aws, lambda_context):
    from fmquality.domain.errors import DatasetRejected

    case = {**CASES[0], "query": "Do you have Tomie?", "catalog": []}
    put_dataset(aws.s3, [case])
    catalog = [{"asin": "B0TOMIE001", "title": "Tomie", "price": 19.99, "availability": "in_stock"},
               *({"asin": f"B0FILLER{n:02d}", "title": f"Filler Saga {n}", "price": 9.99} for n in range(30))]
    aws.s3.put_object(Bucket=BUCKET, Key="catalog.json", Body=json.dumps(catalog))
    out = _prepare(load_event("prepare.json", execution_name="cat-run", catalog=f"s3://{BUCKET}/catalog.json"), lambda_context)
    # Only the product in play travels with the item, not the whole catalog.
    assert [c["asin"] for c in read_json(aws.s3, out["items_key"])[0]["case"]["catalog"]] == ["B0TOMIE001"]

    aws.s3.put_object(Bucket=BUCKET, Key="bad-catalog.json", Body=json.dumps([{"asin": "X", "title": "T", "price": -1}]))
    with pytest.raises(DatasetRejected, match=r"bad-catalog.json:1: \[0\].price"):
        _prepare(load_event("prepare.json", execution_name="cat-run-2", catalog=f"s3://{BUCKET}/bad-catalog.json"), lambda_context)


def test_prepare_reads_a_rubric_from_s3(aws, lambda_context):
    from fmquality.config.rubric import default_rubric_path

    text = default_rubric_path().read_text(encoding="utf-8").replace("version:", "version: custom-", 1)
    aws.s3.put_object(Bucket=BUCKET, Key="rubrics/custom.yaml", Body=text.encode())
    put_dataset(aws.s3, CASES)
    out = _prepare(load_event("prepare.json", execution_name="rub-run", rubric=f"s3://{BUCKET}/rubrics/custom.yaml"), lambda_context)
    assert out["rubric_version"].startswith("custom-")
    assert read_json(aws.s3, out["rubric_key"])["version"] == out["rubric_version"]


def test_a_rubric_that_is_not_utf8_is_named_with_its_line(aws, lambda_context):
    from fmquality.domain.errors import RubricError
    from fmquality.config.rubric import default_rubric_path

    text = default_rubric_path().read_text(encoding="utf-8").replace("version:", "# caf\u00e9\nversion:", 1)
    aws.s3.put_object(Bucket=BUCKET, Key="rubrics/latin1.yaml", Body=text.encode("latin-1", "replace"))
    put_dataset(aws.s3, CASES)
    uri = f"s3://{BUCKET}/rubrics/latin1.yaml"
    with pytest.raises(RubricError, match=r"latin1\.yaml:\d+: not valid UTF-8"):
        _prepare(load_event("prepare.json", execution_name="latin-run", rubric=uri), lambda_context)


def test_prepare_resolves_auto_to_the_approved_baseline(aws, lambda_context):
    from fmquality.adapters.dynamodb import EvaluationTable
    from fmquality.domain.errors import BaselineNotFound

    put_dataset(aws.s3, CASES)
    table = EvaluationTable("fmq-eval-test", aws.ddb)
    # The baseline's run was over the same dataset contents (issue 20: auto compares equal contents only).
    contents = hashlib.sha256(aws.s3.get_object(Bucket=BUCKET, Key=DATASET_KEY)["Body"].read()).hexdigest()
    table.register_run("old-run", DATASET_ID, report_key="runs/old-run/report.json", dataset_sha256=contents)
    table.approve_baseline(DATASET_ID, "old-run", "runs/old-run/report.json")

    assert _prepare(load_event("prepare.json", execution_name="new-run"), lambda_context)["baseline_run_id"] == "old-run"
    assert table.get_run("new-run")["dataset_sha256"] == contents
    explicit = _prepare(load_event("prepare.json", execution_name="new-run-2", baseline="old-run"), lambda_context)
    assert explicit["baseline_run_id"] == "old-run"
    with pytest.raises(BaselineNotFound):
        _prepare(load_event("prepare.json", execution_name="new-run-3", baseline="never-ran"), lambda_context)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"dataset": None}, "dataset"),
        ({"dataset": "https://example.com/golden.jsonl"}, "dataset"),
        ({"max_concurrency": 0}, "max_concurrency"),
        ({"skip_invalid": "maybe"}, "skip_invalid"),
        ({"catalog": "dynamodb:yesterday"}, "catalog"),
    ],
)
def test_a_malformed_prepare_event_names_the_field(aws, lambda_context, change, field):
    event = load_event("prepare.json", **change)
    if change.get("dataset", "") is None:
        del event["dataset"]
    with pytest.raises(ValidationError) as caught:
        _prepare(event, lambda_context)
    assert [".".join(map(str, e["loc"])) for e in caught.value.errors()] == [field]
    assert field in str(caught.value)


def test_a_missing_environment_variable_is_named(aws, lambda_context, monkeypatch):
    monkeypatch.delenv("TABLE_NAME")
    put_dataset(aws.s3, CASES)
    with pytest.raises(ValidationError, match="TABLE_NAME"):
        _prepare(load_event("prepare.json"), lambda_context)


def test_a_dataset_that_does_not_exist_is_rejected_by_name(aws, lambda_context):
    from fmquality.domain.errors import DatasetRejected

    with pytest.raises(DatasetRejected, match=r"cannot read dataset: s3://fmq-data-test/datasets/missing.jsonl does not exist"):
        _prepare(load_event("prepare.json", dataset=f"s3://{BUCKET}/datasets/missing.jsonl"), lambda_context)


def test_prepare_accepts_the_execution_input_nested_with_the_execution_context(aws, lambda_context):
    put_dataset(aws.s3, CASES)
    flat = load_event("prepare.json")
    nested = {"execution_input": {k: v for k, v in flat.items() if not k.startswith("execution_")},
              "execution_id": flat["execution_id"], "execution_name": "ci-20250101T000000Z-abc123"}
    out = _prepare(nested, lambda_context)
    assert out["run_id"] == "ci-20250101T000000Z-abc123" and out["item_count"] == len(CASES)


# ---- targets ------------------------------------------------------------------------------------


def test_prepare_writes_one_item_per_case_and_arm_and_the_targets(aws, lambda_context):
    put_dataset(aws.s3, CASES)
    out = _prepare(load_event("prepare.json", execution_name="paired", target="bedrock:s3://bundles/assist.yaml",
                              control="recorded"), lambda_context)

    assert out["item_count"] == 2 * len(CASES) and out["generate"] is True
    items = read_json(aws.s3, out["items_key"])
    # A case's two arms side by side, so a pair is generated close in time.
    assert [(i["arm"], i["case"]["test_id"]) for i in items] == [
        (arm, c["test_id"]) for c in CASES for arm in ("candidate", "control")]
    # The candidate is to be answered by its target: its recorded answer is not carried, the recorded
    # control's is.
    assert {i["case"]["response"] for i in items if i["arm"] == "candidate"} == {None}
    assert [i["case"]["response"] for i in items if i["arm"] == "control"] == [c["response"] for c in CASES]

    targets = read_json(aws.s3, out["targets_key"])
    assert targets["candidate"]["kind"] == "bedrock" and targets["candidate"]["ref"] == "s3://bundles/assist.yaml"
    assert targets["control"]["kind"] == "recorded"
    run = aws.ddb.get_item(TableName="fmq-eval-test", Key={"pk": {"S": "RUN#paired"}, "sk": {"S": "RUN"}})["Item"]
    assert json.loads(run["target"]["S"])["spec"] == "bedrock:s3://bundles/assist.yaml"
    assert json.loads(run["control_target"]["S"])["spec"] == "recorded"
    assert run["item_count"]["N"] == str(2 * len(CASES)) and run["case_count"]["N"] == str(len(CASES))


def test_a_recorded_candidate_with_a_control_still_generates(aws, lambda_context):
    put_dataset(aws.s3, CASES)
    out = _prepare(load_event("prepare.json", execution_name="rec-vs-lambda", control="lambda:chatbot-v2"), lambda_context)
    assert out["generate"] is True
    assert read_json(aws.s3, out["targets_key"])["candidate"]["kind"] == "recorded"


@pytest.mark.parametrize(
    ("requested", "target", "control", "expected"),
    [
        (None, None, None, 10),  # the deployment's default
        (40, {"spec": "lambda:chatbot", "max_concurrency": 8}, None, 8),
        (5, {"spec": "lambda:chatbot", "max_concurrency": 8}, None, 5),
        (40, {"spec": "lambda:chatbot", "max_concurrency": 8}, {"spec": "http://127.0.0.1:8080/chat", "max_concurrency": 3}, 3),
        (40, "lambda:chatbot", {"spec": "recorded", "max_concurrency": 20}, 20),
    ],
)
def test_the_map_concurrency_is_the_smallest_limit_of_the_run(aws, lambda_context, requested, target, control, expected):
    put_dataset(aws.s3, CASES)
    extra = {k: v for k, v in {"max_concurrency": requested, "target": target, "control": control}.items() if v is not None}
    assert _prepare(load_event("prepare.json", execution_name="conc", **extra), lambda_context)["max_concurrency"] == expected


@pytest.mark.parametrize(
    ("field", "spec", "message"),
    [
        ("target", "carrier-pigeon:coo", "unknown target 'carrier-pigeon:coo'"),
        ("control", "python:no_function_here", "python:<module>:<function>"),
        ("target", {"spec": "lambda:chatbot", "timeout_s": -1}, "timeout_s"),
        ("control", {"model_id": "x"}, "\"spec\""),
        ("target", 42, "spec string or object"),
    ],
)
def test_a_bad_target_spec_fails_prepare_naming_the_field(aws, lambda_context, field, spec, message):
    put_dataset(aws.s3, CASES)
    with pytest.raises(ValidationError) as caught:
        _prepare(load_event("prepare.json", execution_name="bad-spec", **{field: spec}), lambda_context)
    assert [e["loc"] for e in caught.value.errors()] == [(field,)]
    assert message in str(caught.value)
    # Nothing written for a run whose input is refused.
    assert "Contents" not in aws.s3.list_objects_v2(Bucket=BUCKET, Prefix="runs/bad-spec/")


def test_a_python_target_is_refused_on_aws_before_anything_is_written(aws, lambda_context, monkeypatch):
    """Issue 17: an execution input cannot make the Lambda import and run code."""
    import boto3

    from fmquality.domain.errors import TargetKindRefused

    monkeypatch.setenv("ALLOWED_TARGET_KINDS", "recorded,bedrock,lambda,https")
    put_dataset(aws.s3, CASES)
    with pytest.raises(TargetKindRefused, match="target: python targets are not allowed"):
        _prepare(load_event("prepare.json", execution_name="py-run", target="python:os:getcwd"), lambda_context)
    # Nor through an ssm: parameter that holds one.
    boto3.client("ssm").put_parameter(Name="/mangaassist/sneaky", Type="String", Value="python:os:getcwd")
    with pytest.raises(TargetKindRefused, match="control: python targets"):
        _prepare(load_event("prepare.json", execution_name="py-run-2", control="ssm:/mangaassist/sneaky"),
                 lambda_context)
    assert "Contents" not in aws.s3.list_objects_v2(Bucket=BUCKET, Prefix="runs/")


def _ssm_resolver(spec, client):
    """A stand-in for fmquality.targets.resolve_spec: the parameter's value is the spec."""
    from fmquality.targets.base import TargetSpec

    value = client("ssm").get_parameter(Name=spec.ref)["Parameter"]["Value"]
    return TargetSpec.parse(json.loads(value) if value.lstrip().startswith("{") else value)


@pytest.fixture(params=["double", "real"])
def resolve_spec(request, monkeypatch):
    import fmquality.targets as targets

    if request.param == "real":
        if not hasattr(targets, "resolve_spec"):
            pytest.skip("fmquality.targets.resolve_spec is not on this branch yet (the targets branch adds it)")
    else:
        monkeypatch.setattr(targets, "resolve_spec", _ssm_resolver, raising=False)
    return request.param


def test_prepare_resolves_ssm_targets_once_through_moto_ssm(aws, lambda_context, resolve_spec):
    import boto3

    ssm = boto3.client("ssm")
    ssm.put_parameter(Name="/mangaassist/production-target", Type="String", Value="lambda:mangaassist-chat:live")
    ssm.put_parameter(Name="/mangaassist/canary-target", Type="String", Value="http://127.0.0.1:8080/chat")
    put_dataset(aws.s3, CASES)
    out = _prepare(load_event("prepare.json", execution_name="ssm-run", target="ssm:/mangaassist/canary-target",
                              control="ssm:/mangaassist/production-target"), lambda_context)

    targets = read_json(aws.s3, out["targets_key"])
    assert (targets["candidate"]["kind"], targets["candidate"]["ref"]) == ("http", "http://127.0.0.1:8080/chat")
    assert (targets["control"]["kind"], targets["control"]["ref"]) == ("lambda", "mangaassist-chat:live")
    # A later change of the parameter does not change this run: items read targets.json.
    ssm.put_parameter(Name="/mangaassist/production-target", Type="String", Value="lambda:other", Overwrite=True)
    assert read_json(aws.s3, out["targets_key"])["control"]["ref"] == "mangaassist-chat:live"
    # Where each came from, for the report.
    assert targets["resolved_from"] == {"candidate": "ssm:/mangaassist/canary-target",
                                        "control": "ssm:/mangaassist/production-target"}
    run = aws.ddb.get_item(TableName="fmq-eval-test", Key={"pk": {"S": "RUN#ssm-run"}, "sk": {"S": "RUN"}})["Item"]
    assert json.loads(run["control_target"]["S"])["resolved_from"] == "ssm:/mangaassist/production-target"


def test_an_ssm_target_that_cannot_be_read_fails_prepare_naming_the_field(aws, lambda_context, resolve_spec):
    from fmquality.domain.errors import TargetRejected

    put_dataset(aws.s3, CASES)
    with pytest.raises(TargetRejected, match=r"^control: cannot resolve ssm:/mangaassist/missing"):
        _prepare(load_event("prepare.json", execution_name="ssm-missing", control="ssm:/mangaassist/missing"), lambda_context)
    assert "Contents" not in aws.s3.list_objects_v2(Bucket=BUCKET, Prefix="runs/ssm-missing/")


def test_prepare_keeps_only_the_cases_the_filter_selects(aws, lambda_context):
    """The execution input's filter (the knowledge-base refresh rule's {"tags": [...]}) is applied in
    Prepare: items.json holds the selected cases only; a filter that selects none is refused."""
    put_dataset(aws.s3, CASES)
    out = _prepare(load_event("prepare.json", filter={"tags": ["policy", "retrieval"]}), lambda_context)
    expected = [c["test_id"] for c in CASES if {"policy", "retrieval"} & set(c.get("tags", []))]
    assert expected and len(expected) < len(CASES)
    items = read_json(aws.s3, out["items_key"])
    assert [i["case"]["test_id"] for i in items] == expected
    assert out["item_count"] == len(expected)

    with pytest.raises(Exception, match="selects no case"):
        _prepare(load_event("prepare.json", filter="tag=no-such-tag", execution_name="none-selected"), lambda_context)


def test_auto_never_compares_runs_over_other_dataset_contents(aws, lambda_context):
    """Issue 20, item 7: the approved baseline's run was over other contents (or recorded none): refused
    with a note naming both hashes, and the run goes on without a baseline."""
    from fmquality.adapters.dynamodb import EvaluationTable

    put_dataset(aws.s3, CASES)
    table = EvaluationTable("fmq-eval-test", aws.ddb)
    table.register_run("old-run", DATASET_ID, report_key="runs/old-run/report.json", dataset_sha256="ab" * 32)
    table.approve_baseline(DATASET_ID, "old-run", "runs/old-run/report.json")

    out = _prepare(load_event("prepare.json", execution_name="edited-dataset", dataset_version="golden-v4"), lambda_context)
    assert out["baseline_run_id"] is None
    run = table.get_run("edited-dataset")
    assert run["dataset_version"] == "golden-v4"
    assert "other dataset contents" in run["baseline_note"] and "abababababab" in run["baseline_note"]
    assert run["dataset_sha256"][:12] in run["baseline_note"]

    table.register_run("unhashed", DATASET_ID, report_key="runs/unhashed/report.json")  # before content hashes
    table.approve_baseline(DATASET_ID, "unhashed", "runs/unhashed/report.json")
    out = _prepare(load_event("prepare.json", execution_name="after-unhashed"), lambda_context)
    assert out["baseline_run_id"] is None
    assert "no recorded content hash" in table.get_run("after-unhashed")["baseline_note"]
