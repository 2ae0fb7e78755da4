"""The deployment configuration: cdk.json's defaults meet the issue, and bad values stop the synth."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from infra.config import DIMENSIONS, INTENTS, ConfigError, load_config, parse_config, read_cdk_json_context

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def raw() -> dict:
    return copy.deepcopy(read_cdk_json_context())


def test_vocabulary_matches_the_core_models():
    # infra/ may not import lambdas/, so it keeps its own copy: it must not drift.
    from fmquality.schemes.mangaassist import DIMENSIONS as CORE_DIMENSIONS
    from fmquality.domain.case import Intent

    assert DIMENSIONS == CORE_DIMENSIONS
    assert set(INTENTS) == {i.value for i in Intent}


def test_cdk_json_defaults_carry_the_required_alarm_rules():
    config = load_config()
    rules = {(a.intent, a.dimension): a for a in config.alarms.dimension_alarms}
    assert rules[("recommendation", "relevance")].threshold == 0.75
    assert rules[("recommendation", "relevance")].runs == 3
    assert rules[("faq", "factual_accuracy")].threshold == 0.85
    assert rules[("faq", "factual_accuracy")].runs == 1
    assert config.schedule.expression == "cron(0 3 ? * MON *)"


def test_defaults_apply_when_keys_are_omitted():
    config = parse_config({"env_name": "test", "judge_model_id": "anthropic.claude-haiku-4-5-20251001-v1:0"})
    assert config.schedule.expression == "cron(0 3 ? * MON *)"
    assert {(a.intent, a.dimension, a.runs) for a in config.alarms.configured_dimension_alarms()} == {
        ("recommendation", "relevance", 3),
        ("faq", "factual_accuracy", 1),
    }
    assert config.alert_email is None


def test_inference_profile_id_resolves_model_and_regions():
    profile = parse_config({"env_name": "test", "judge_model_id": "us.anthropic.claude-haiku-4-5-20251001-v1:0"})
    assert profile.is_inference_profile
    assert profile.foundation_model_id == "anthropic.claude-haiku-4-5-20251001-v1:0"
    assert "us-east-1" in profile.foundation_model_regions

    model = parse_config({"env_name": "test", "judge_model_id": "anthropic.claude-haiku-4-5-20251001-v1:0"})
    assert not model.is_inference_profile
    assert model.foundation_model_regions is None  # the stack's own region


@pytest.mark.parametrize(
    ("path", "value", "named"),
    [
        (("judge_model_id",), "not a model", "fmquality.judge_model_id"),
        (("env_name",), "Prod_1", "fmquality.env_name"),
        (("max_concurrency",), 0, "fmquality.max_concurrency"),
        (("tolerated_failure_percentage",), 150, "fmquality.tolerated_failure_percentage"),
        (("schedule", "expression"), "every monday", "fmquality.schedule.expression"),
        (("alert_email",), "ops-at-example", "fmquality.alert_email"),
        (("alarms", "batch_pass_rate_threshold"), 1.5, "fmquality.alarms.batch_pass_rate_threshold"),
        (("golden_dataset_key",), "s3://bucket/golden.jsonl", "fmquality.golden_dataset_key"),
        (("catalog_source",), "dynamodb", "fmquality.catalog_source"),
        (("unknown_key",), 1, "fmquality.unknown_key"),
        (("generation", "allowed_target_kinds"), ["bedrock", "python"], "fmquality.generation.allowed_target_kinds"),
    ],
)
def test_invalid_value_names_the_key(raw, path, value, named):
    target = raw
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    with pytest.raises(ConfigError) as excinfo:
        parse_config(raw)
    assert named in str(excinfo.value)


def test_alarm_range_beyond_cloudwatch_limit_is_refused(raw):
    raw["alarms"]["dimension_alarms"][0].update({"runs": 8, "period_hours": 24})
    with pytest.raises(ConfigError, match="7-day"):
        parse_config(raw)


def test_duplicate_alarm_rule_is_refused(raw):
    raw["alarms"]["dimension_alarms"].append(dict(raw["alarms"]["dimension_alarms"][0]))
    with pytest.raises(ConfigError, match="twice"):
        parse_config(raw)


def test_unknown_profile_geography_asks_for_regions():
    with pytest.raises(ConfigError, match="judge_model_regions"):
        parse_config({"env_name": "test", "judge_model_id": "global.anthropic.claude-haiku-4-5-20251001-v1:0"})
    config = parse_config({
        "env_name": "test",
        "judge_model_id": "global.anthropic.claude-haiku-4-5-20251001-v1:0",
        "judge_model_regions": ["us-east-1", "eu-west-1"],
    })
    assert config.foundation_model_regions == ("us-east-1", "eu-west-1")


def test_invalid_context_stops_the_cdk_app_with_a_clear_message(raw, tmp_path):
    """What `cdk synth -c ...` does: the CLI hands the context to app.py in CDK_CONTEXT_JSON."""
    raw["judge_model_id"] = "bad model"
    env = {**os.environ, "CDK_CONTEXT_JSON": json.dumps({"fmquality": raw}), "CDK_OUTDIR": str(tmp_path)}
    proc = subprocess.run([sys.executable, "app.py"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "fmquality.judge_model_id" in proc.stderr
    assert not list(tmp_path.glob("*.template.json"))


def test_the_app_entry_point_writes_a_cloud_assembly(tmp_path):
    """`make synth` runs `python app.py`; with the CLI's CDK_OUTDIR it writes both stacks' templates."""
    env = {**os.environ, "CDK_OUTDIR": str(tmp_path), "FMQ_SKIP_LAYER_BUNDLING": "1"}
    env.pop("CDK_CONTEXT_JSON", None)
    proc = subprocess.run([sys.executable, "app.py"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    names = {p.name for p in tmp_path.glob("*.template.json")}
    assert {"MangaAssistQuality-dev-Evaluation.template.json", "MangaAssistQuality-dev-Pipeline.template.json"} <= names
    assert (tmp_path / "manifest.json").is_file()


def test_every_intent_and_dimension_alarms_at_the_rubric_threshold_unless_configured(raw):
    config = parse_config(raw)
    rules = {(a.intent, a.dimension): a for a in config.alarms.effective_dimension_alarms()}
    assert len(rules) == 8 * 5  # every intent and dimension
    assert (rules[("chitchat", "fluency")].threshold, rules[("chitchat", "fluency")].runs) == (0.70, 1)
    # the binary, final safety dimension alarms on the first unsafe item of a run
    assert (rules[("faq", "safety")].threshold, rules[("faq", "safety")].runs) == (1.0, 1)
    assert (rules[("order_tracking", "consistency")].threshold) == 0.90
    assert rules[("recommendation", "relevance")].runs == 3  # the configured rule wins
    raw["alarms"]["alarm_every_intent_dimension"] = False
    only = parse_config(raw).alarms.effective_dimension_alarms()
    assert {(a.intent, a.dimension) for a in only} == {("recommendation", "relevance"), ("faq", "factual_accuracy")}
