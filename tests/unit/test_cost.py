"""Cost accounting: the rubric's price table applied to judge usage, in report.json and estimates."""

from __future__ import annotations

import pytest

from fmquality.scoring.composite import combine
from fmquality.config.pricing import cost_usd, judge_model_id, usd_estimate
from fmquality.domain.scores import DimensionScore, JudgeUsage
from fmquality.schemes.mangaassist import DIMENSIONS
from fmquality.domain.case import TestCase
from fmquality.report.build import build_report
from fmquality.config.rubric import ModelPrice, parse_rubric

PRICE = ModelPrice(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)


def test_each_token_kind_is_priced_per_million():
    assert cost_usd(JudgeUsage(input_tokens=1_000_000), PRICE) == pytest.approx(3.0)
    assert cost_usd(JudgeUsage(output_tokens=1_000_000), PRICE) == pytest.approx(15.0)
    assert cost_usd(JudgeUsage(cache_read_tokens=1_000_000), PRICE) == pytest.approx(0.3)
    assert cost_usd(JudgeUsage(cache_write_tokens=1_000_000), PRICE) == pytest.approx(3.75)
    mixed = JudgeUsage(calls=10, input_tokens=20_000, output_tokens=2_000, cache_read_tokens=100_000,
                       cache_write_tokens=4_000)
    # 0.02 M x 3 + 0.002 M x 15 + 0.1 M x 0.3 + 0.004 M x 3.75 = 0.06 + 0.03 + 0.03 + 0.015
    assert cost_usd(mixed, PRICE) == pytest.approx(0.135)


def test_the_shipped_rubric_prices_its_own_model_and_profiles_fall_back(rubric):
    assert rubric.judge.price_for(rubric.judge.model_id) is not None
    foundation = "anthropic.claude-3-7-sonnet-20250219-v1:0"
    assert rubric.judge.price_for("eu." + foundation) == rubric.judge.price_for(foundation)
    assert rubric.judge.price_for("anthropic.unknown-model-v1:0") is None
    for price in rubric.judge.prices.values():  # Bedrock's prompt-caching price ratios
        assert price.cache_read < price.input < price.cache_write < price.output


def test_the_shipped_rubric_pins_a_current_model_with_a_price_and_a_cache_minimum(rubric):
    haiku = "anthropic.claude-haiku-4-5-20251001-v1:0"
    assert rubric.judge.model_id == "us." + haiku
    assert rubric.judge.price_for(rubric.judge.model_id) is not None
    # Bedrock's documented minimum cacheable prefixes; a profile falls back like a price does.
    for profile in ("", "us.", "eu.", "global."):
        assert rubric.judge.min_cache_tokens_for(profile + haiku) == 4096
    assert rubric.judge.min_cache_tokens_for("us.anthropic.claude-sonnet-4-5-20250929-v1:0") == 1024
    assert rubric.judge.min_cache_tokens_for("anthropic.claude-3-7-sonnet-20250219-v1:0") == 1024
    assert rubric.judge.min_cache_tokens_for("anthropic.claude-3-5-haiku-20241022-v1:0") == 2048
    assert rubric.judge.min_cache_tokens_for("anthropic.unknown-model-v1:0") is None


def test_usd_estimate_is_zero_without_tokens_and_unknown_without_a_price(rubric):
    assert usd_estimate(JudgeUsage(calls=3, cached_verdicts=3), rubric, None) == 0.0
    assert usd_estimate(JudgeUsage(input_tokens=10), rubric, "anthropic.unknown-model-v1:0") is None
    assert judge_model_id("bedrock:eu.anthropic.x-v1:0", rubric) == "eu.anthropic.x-v1:0"
    assert judge_model_id("bedrock", rubric) == rubric.judge.model_id
    assert judge_model_id("offline", rubric) is None


def _result(test_id: str, usage: JudgeUsage, rubric):
    case = TestCase(test_id=test_id, intent="chitchat", query="hi", response="Hello from MangaAssist!")
    scores = {d: DimensionScore(dimension=d, status="scored", score=1.0, judge_calls=0) for d in DIMENSIONS}
    scores["fluency"] = scores["fluency"].model_copy(update={"usage": usage, "judge_calls": usage.calls})
    return combine(case, rubric, scores)


def test_report_judge_usage_carries_cache_counters_calls_per_case_and_cost():
    rubric = parse_rubric(_rubric_yaml_with_price())
    usages = [JudgeUsage(calls=3, input_tokens=1000, output_tokens=200, cache_read_tokens=5000,
                         cache_write_tokens=0),
              JudgeUsage(calls=1, input_tokens=800, output_tokens=150, cache_read_tokens=0,
                         cache_write_tokens=5000),
              JudgeUsage(cached_verdicts=2)]
    results = [_result(f"c{i}", u, rubric) for i, u in enumerate(usages)]
    report = build_report(results, rubric, run_id="r", dataset="d", judge="bedrock:us.test.judge-v1:0")
    usage = report.judge_usage
    assert (usage.calls, usage.input_tokens, usage.output_tokens) == (4, 1800, 350)
    assert (usage.cache_read_tokens, usage.cache_write_tokens, usage.cached_verdicts) == (5000, 5000, 2)
    assert usage.calls_per_case == pytest.approx(4 / 3, abs=1e-3)
    # 1800 x 2 + 350 x 10 + 5000 x 0.2 + 5000 x 2.5 = 3600 + 3500 + 1000 + 12500 = 20600 per 1M
    assert usage.usd_estimate == pytest.approx(0.0206)
    assert usage.model_id == "us.test.judge-v1:0"
    dumped = report.model_dump(mode="json")["judge_usage"]
    assert {"cache_read_tokens", "cache_write_tokens", "cached_verdicts", "usd_estimate",
            "calls_per_case"} <= set(dumped)


def _rubric_yaml_with_price() -> str:
    from fmquality.config.rubric import default_rubric_path

    text = default_rubric_path().read_text(encoding="utf-8")
    marker = "  prices:\n"
    assert marker in text
    return text.replace(marker, marker + "    test.judge-v1:0: {input: 2.0, output: 10.0, cache_read: 0.2, "
                                         "cache_write: 2.5}\n", 1)
