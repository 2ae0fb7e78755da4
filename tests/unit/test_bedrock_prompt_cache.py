"""Prompt caching for every shipped rubric: the judge closes its static prefix (tool config + system
text) with a cache point only when the prefix reaches the model's minimum cacheable size
(``judge.min_cache_tokens``); below it Bedrock accepts the cache point, caches nothing and says
nothing, so the judge leaves the point out and logs a warning once.

Follows tests/unit/test_bedrock_judge.py::test_the_static_prefix_reaches_every_configured_models_minimum_cacheable_size
(the MangaAssist prefixes reach every minimum, counted with a count that can only come out too low)
and extends it to every rubric in datasets/rubrics/: a kept cache point must be certainly cached
(conservative count), a dropped one certainly useless (the judge's own ~4 characters per token)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from fmquality.schemes import scheme_for
from fmquality.schemes.mangaassist import render_case
from fmquality.judges.bedrock import judge as bedrock
from fmquality.judges.base import CombinedJudgeRequest, JudgeRequest
from fmquality.judges.bedrock.judge import CACHE_POINT, BedrockJudge, static_prefix_tokens
from fmquality.judges.bedrock.prompts import build_combined_prompt, build_prompt
from fmquality.domain.case import TestCase
from fmquality.config.rubric import load_rubric
from tests.unit.test_bedrock_judge import conservative_tokens

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = sorted((ROOT / "datasets" / "rubrics").glob("*.yaml"))
DEPLOYED = json.loads((ROOT / "cdk.json").read_text(encoding="utf-8"))["context"]["fmquality"]["judge_model_id"]


@pytest.fixture(autouse=True)
def fresh_warnings(monkeypatch):
    """The judge warns once per process; each test starts from a process that has not warned yet."""
    monkeypatch.setattr(bedrock, "_warned", set())


def prompts_of(rubric) -> dict[str, object]:
    """Per dimension (and combined mode where the rubric has it), the prompt of a request for ONE
    sub-score: the smallest static prefix the dimension can send."""
    intent = next(iter(rubric.intents))
    case = TestCase(test_id="cache-1", intent=intent, query="What does the source say?", response="It says so.")
    out: dict[str, object] = {}
    requests = []
    for dimension in rubric.dimensions:
        sub_scores = list(rubric.profile_spec.dimension(dimension).sub_scores)
        request = JudgeRequest(dimension=dimension, sub_scores=sub_scores[:1], case=case,
                               rubric_version=rubric.version, guidance=rubric.judge_guidance.get(dimension, ""),
                               case_data=render_case(case), check_findings=["a hint"])
        requests.append(request)
        out[dimension] = build_prompt(request, rubric)
    if scheme_for(rubric).combined_judging:  # combined mode is MangaAssist's only (scoring/case.py)
        out["combined"] = build_combined_prompt(CombinedJudgeRequest(requests=requests), rubric)
    return out


def prefix_text(params: dict) -> str:
    """What a cache point after the system text closes: the tool config, then the system text."""
    return json.dumps(params["toolConfig"]) + "".join(b["text"] for b in params["system"] if "text" in b)


def configured_models(rubric) -> set[str]:
    return {rubric.judge.model_id, DEPLOYED, *rubric.judge.min_cache_tokens}


@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_every_shipped_rubric_keeps_a_cache_point_only_where_the_prefix_reaches_the_models_minimum(path):
    rubric = load_rubric(path)
    minimums = {model: rubric.judge.min_cache_tokens_for(model) for model in configured_models(rubric)}
    assert None not in minimums.values(), f"{path.name}: a configured model has no min_cache_tokens entry"
    assert minimums[rubric.judge.model_id] == minimums[DEPLOYED] == 4096  # Claude Haiku 4.5
    kept: dict[str, set[str]] = {}
    for model, minimum in minimums.items():
        judge = BedrockJudge(model, boto3_client=object())
        for shape, prompt in prompts_of(rubric).items():
            params = judge.converse_params(prompt, rubric)
            system = params["system"]
            assert system[0] == {"text": prompt.system}
            if system[1:] == [CACHE_POINT]:
                kept.setdefault(model, set()).add(shape)
                # Kept: certainly long enough, even by a count that can only come out too low.
                assert conservative_tokens(prefix_text(params)) >= minimum, (path.name, model, shape)
            else:
                assert system[1:] == [], (path.name, model, shape)
                assert static_prefix_tokens(params["toolConfig"], prompt.system) < minimum, (path.name, model, shape)
    shapes = set(prompts_of(rubric))
    if scheme_for(rubric).judge_prompt == "mangaassist":
        # MangaAssist: its scoring guide is sized for the largest minimum; every prefix is cached.
        assert all(kept.get(model) == shapes for model in minimums), kept
    else:
        # The profile prompts (levels from the profile, under 1,000 estimated tokens) are cached by no
        # configured model: nothing pretends to cache them.
        assert kept == {}, kept


@pytest.mark.parametrize("name", ["research-agent-v1", "tool-use-v1"])
def test_a_prefix_under_the_minimum_is_sent_without_a_cache_point_and_said_once(name, caplog):
    rubric = load_rubric(ROOT / "datasets" / "rubrics" / f"{name}.yaml")
    judge = BedrockJudge(rubric.judge.model_id, boto3_client=object())
    with caplog.at_level(logging.WARNING, logger="fmquality.judges.bedrock.judge"):
        for _ in range(3):
            for prompt in prompts_of(rubric).values():
                assert judge.converse_params(prompt, rubric)["system"] == [{"text": prompt.system}]
    (record,) = [r for r in caplog.records if "prompt caching off" in r.getMessage()]
    message = record.getMessage()
    assert record.levelno == logging.WARNING
    assert rubric.version in message and rubric.judge.model_id in message and "(4096 tokens)" in message
    sizes = [static_prefix_tokens(judge.converse_params(p, rubric)["toolConfig"], p.system)
             for p in prompts_of(rubric).values()]
    assert max(sizes) < 1000  # about a quarter of Claude Haiku 4.5's minimum


def test_a_model_without_a_minimum_keeps_the_cache_point_and_says_it_is_unchecked(rubric, caplog):
    judge = BedrockJudge("anthropic.unlisted-model-v1:0", boto3_client=object())
    with caplog.at_level(logging.WARNING, logger="fmquality.judges.bedrock.judge"):
        for _ in range(2):
            for prompt in prompts_of(rubric).values():
                assert judge.converse_params(prompt, rubric)["system"][1:] == [CACHE_POINT]
    (record,) = [r for r in caplog.records if "prompt caching unchecked" in r.getMessage()]
    assert "anthropic.unlisted-model-v1:0" in record.getMessage()


def test_the_judge_estimates_the_prefix_as_fmquality_estimate_and_the_stand_in_do():
    """The three must agree on what is cached: the judge drops exactly the cache points that the
    estimate and the stand-in count as caching nothing (tests/integration/test_bedrock_cache_points.py
    checks the stand-in's cache accounting of the judge's own requests)."""
    from bench.standin import estimate_tokens as standin_tokens
    from fmquality.run.estimate import estimate_tokens

    for path in SHIPPED:
        shipped = load_rubric(path)
        judge = BedrockJudge(shipped.judge.model_id, boto3_client=object())
        for prompt in prompts_of(shipped).values():
            tool_config = judge.converse_params(prompt, shipped)["toolConfig"]
            tools = json.dumps(tool_config, sort_keys=True)
            ours = static_prefix_tokens(tool_config, prompt.system)
            assert ours == estimate_tokens(tools) + estimate_tokens(prompt.system)
            assert ours == standin_tokens(tools) + standin_tokens(prompt.system)
