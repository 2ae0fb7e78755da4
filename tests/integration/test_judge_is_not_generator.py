"""Issue 20, item 6: the judge model may not be the model being judged. Prepare (and the direct
engine) refuse a run whose Bedrock judge's model is the model a bedrock target generates with, the
ids compared without inference-profile prefixes, naming both; `fmquality run` exits 2."""

from __future__ import annotations

import pytest

from moto_env import BUCKET, CASES, load_event, put_dataset

JUDGE = "us.anthropic.claude-haiku-4-5-20251001-v1:0"
SAME_MODEL = "anthropic.claude-haiku-4-5-20251001-v1:0"  # the same model, without the profile prefix
OTHER_MODEL = "us.amazon.nova-lite-v1:0"
BUNDLE = "id: shop-assistant\nversion: '3'\nmodel_id: {model}\nsystem_prompt: You answer shoppers.\n"


def _prepare(event, context):
    from handlers.prepare import handler

    return handler(event, context)


@pytest.mark.parametrize(("given", "expected"), [
    ("us.anthropic.claude-haiku-4-5-20251001-v1:0", "anthropic.claude-haiku-4-5-20251001-v1:0"),
    ("EU.Anthropic.Claude-Haiku-4-5-20251001-v1:0", "anthropic.claude-haiku-4-5-20251001-v1:0"),
    ("arn:aws:bedrock:us-east-1:123456789012:inference-profile/apac.amazon.nova-lite-v1:0", "amazon.nova-lite-v1:0"),
    ("arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-3-haiku", "anthropic.claude-3-haiku"),
    ("amazon.nova-lite-v1:0", "amazon.nova-lite-v1:0"),
])
def test_model_ids_compare_without_profile_prefix_or_arn(given, expected):
    from fmquality.run.targets import normalised_model_id

    assert normalised_model_id(given) == expected


@pytest.fixture
def bedrock_judge(aws, monkeypatch):
    monkeypatch.setenv("JUDGE", "bedrock")
    monkeypatch.setenv("JUDGE_MODEL_ID", JUDGE)
    return aws


def test_prepare_refuses_a_target_whose_bundle_model_is_the_judge(bedrock_judge, lambda_context):
    from fmquality.domain.errors import DatasetRejected

    put_dataset(bedrock_judge.s3, CASES)
    bedrock_judge.s3.put_object(Bucket=BUCKET, Key="bundles/shop.yaml", Body=BUNDLE.format(model=SAME_MODEL).encode())
    event = load_event("prepare.json", target=f"bedrock:s3://{BUCKET}/bundles/shop.yaml", execution_name="self-judged")
    with pytest.raises(DatasetRejected) as refused:
        _prepare(event, lambda_context)
    message = str(refused.value)
    assert message.startswith("target: ") and JUDGE in message and SAME_MODEL in message
    # Nothing of the run was registered or written.
    assert "Item" not in bedrock_judge.ddb.get_item(TableName="fmq-eval-test",
                                                    Key={"pk": {"S": "RUN#self-judged"}, "sk": {"S": "RUN"}})


def test_prepare_refuses_a_control_whose_model_override_is_the_judge(bedrock_judge, lambda_context):
    from fmquality.domain.errors import DatasetRejected

    put_dataset(bedrock_judge.s3, CASES)
    bedrock_judge.s3.put_object(Bucket=BUCKET, Key="bundles/shop.yaml", Body=BUNDLE.format(model=OTHER_MODEL).encode())
    spec = f"bedrock:s3://{BUCKET}/bundles/shop.yaml"
    event = load_event("prepare.json", target=spec, control={"spec": spec, "model_id": JUDGE})
    with pytest.raises(DatasetRejected, match=r"^control: the judge model"):
        _prepare(event, lambda_context)


def test_another_model_or_a_judge_that_is_no_model_is_accepted(aws, bedrock_judge, lambda_context, monkeypatch):
    put_dataset(aws.s3, CASES)
    aws.s3.put_object(Bucket=BUCKET, Key="bundles/shop.yaml", Body=BUNDLE.format(model=OTHER_MODEL).encode())
    spec = f"bedrock:s3://{BUCKET}/bundles/shop.yaml"
    assert _prepare(load_event("prepare.json", target=spec, execution_name="r1"), lambda_context)["generate"] is True
    # The offline and scripted judges are no model: the same bundle model as the rubric's judge is fine.
    monkeypatch.setenv("JUDGE", "scripted")
    spec_same = {"spec": spec, "model_id": JUDGE}
    assert _prepare(load_event("prepare.json", target=spec_same, execution_name="r2"), lambda_context)["generate"]


def test_direct_engine_refuses_the_judge_model_as_target(tmp_path):
    from fmquality.config.rubric import load_rubric
    from fmquality.engines import direct

    bundle = tmp_path / "bundle.yaml"
    bundle.write_text(BUNDLE.format(model=SAME_MODEL), encoding="utf-8")
    with pytest.raises(ValueError, match=r"--target: the judge model 'us\.anthropic") as refused:
        direct.build_targets({"candidate": (f"bedrock:{bundle}", "--target")}, load_rubric(), judge_model_id=JUDGE)
    assert SAME_MODEL in str(refused.value)
    built = direct.build_targets({"candidate": (f"bedrock:{bundle}", "--target")}, load_rubric(),
                                 judge_model_id=OTHER_MODEL)
    assert built["candidate"].target.model_id == SAME_MODEL


def test_fmquality_run_exits_2_naming_both_models(tmp_path, capsys):
    """The default engine (the state machine on embedded AWS): Prepare refuses before any Bedrock call."""
    from pathlib import Path

    from fmquality.cli.main import main

    bundle = tmp_path / "bundle.yaml"
    bundle.write_text(BUNDLE.format(model=SAME_MODEL), encoding="utf-8")
    dataset = Path(__file__).resolve().parents[1] / "fixtures" / "cli_good.jsonl"
    code = main(["run", "--dataset", str(dataset), "--out", str(tmp_path / "out"), "--quiet", "--judge", "bedrock",
                 "--judge-model-id", JUDGE, "--target", f"bedrock:{bundle}"])
    assert code == 2
    err = capsys.readouterr().err
    assert "DatasetRejected" in err and JUDGE in err and SAME_MODEL in err
