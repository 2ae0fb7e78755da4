"""The stand-in (bench/standin.py, judge side) refuses what Bedrock refuses and caches only what
Bedrock caches: more than four cache points in one request (system, messages and tools together)
is a ValidationException (HTTP 400); a cache point whose prefix is under the model's minimum is
accepted and caches nothing (cacheWriteInputTokens and cacheReadInputTokens 0). And the judge's
own requests, for every shipped rubric, are cached exactly where they carry a cache point."""

from __future__ import annotations

import logging

import pytest
from botocore.exceptions import ClientError

from bench.standin import MAX_CACHE_POINTS, cache_point_count
from fmquality.judges.bedrock import judge as bedrock
from fmquality.judges.bedrock.judge import CACHE_POINT, BedrockJudge
from fmquality.config.rubric import load_rubric
from fmquality.schemes import scheme_for
from tests.integration.conftest_standin import bedrock_standin  # noqa: F401 - shared fixture
from tests.unit.test_bedrock_prompt_cache import SHIPPED, prompts_of

MODEL_ID = "us.anthropic.claude-haiku-4-5-20251001-v1:0"  # every shipped rubric's judge: minimum 4,096
LONG = "x" * (4 * 4200)  # 4,200 estimated tokens: over Claude Haiku 4.5's minimum


def request(system: list[dict], messages: list[dict] | None = None, tools: list[dict] | None = None) -> dict:
    params = {"modelId": MODEL_ID, "system": system,
              "messages": messages or [{"role": "user", "content": [{"text": "Grade this."}]}]}
    if tools is not None:
        params["toolConfig"] = {"tools": tools}
    return params


TOOL = {"toolSpec": {"name": "record_verdict", "description": "d", "inputSchema": {"json": {"type": "object"}}}}


@pytest.mark.parametrize(("where", "params"), [
    ("five in system", request([{"text": LONG}, *[CACHE_POINT] * 5])),
    ("system, messages and tools", request(
        [{"text": LONG}, CACHE_POINT, {"text": "more"}, CACHE_POINT],
        [{"role": "user", "content": [{"text": "a"}, CACHE_POINT, {"text": "b"}, CACHE_POINT]}],
        [TOOL, CACHE_POINT])),
])
def test_more_than_four_cache_points_are_a_validation_exception(bedrock_standin, where, params):
    assert cache_point_count(params) == MAX_CACHE_POINTS + 1
    with pytest.raises(ClientError) as caught:
        bedrock_standin.client().converse(**params)
    error = caught.value.response
    assert error["Error"]["Code"] == "ValidationException"
    assert error["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert error["Error"]["Message"] == "A maximum of 4 blocks with cache_control may be provided. Found 5."
    stats = bedrock_standin.stats()
    assert stats["ok"] == 0 and stats["cache_writes"] == 0 and stats["input_tokens"] == 0


def test_four_cache_points_are_accepted(bedrock_standin):
    params = request([{"text": LONG}, CACHE_POINT, {"text": "more"}, CACHE_POINT],
                     [{"role": "user", "content": [{"text": "a"}, CACHE_POINT]}], [TOOL, CACHE_POINT])
    assert cache_point_count(params) == MAX_CACHE_POINTS
    reply = bedrock_standin.client().converse(**params)
    assert reply["usage"]["cacheWriteInputTokens"] > 0


def test_a_cache_point_under_the_minimum_caches_nothing_and_is_not_an_error(bedrock_standin):
    short = "x" * (4 * 900)  # about the size of a profile judge prompt
    client = bedrock_standin.client()
    first, again = (client.converse(**request([{"text": short}, CACHE_POINT]))["usage"] for _ in range(2))
    for usage in (first, again):
        assert usage["cacheWriteInputTokens"] == 0 and usage["cacheReadInputTokens"] == 0
        assert usage["inputTokens"] >= 900  # billed in full, every time
    stats = bedrock_standin.stats()
    assert stats["ok"] == 2 and stats["cache_writes"] == stats["cache_reads"] == 0


@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_the_judges_requests_are_cached_exactly_where_they_carry_a_cache_point(bedrock_standin, path, monkeypatch,
                                                                               caplog):
    monkeypatch.setattr(bedrock, "_warned", set())
    # The stand-in's default verdict cannot fill a level-NAME schema (string enum); the verdict is not
    # read here, only the cache accounting.
    bedrock_standin.verdict_fn = lambda _request: {"evidence": [], "rationale": "r", "levels": {}, "confidence": 1}
    rubric = load_rubric(path)
    judge = BedrockJudge(MODEL_ID, bedrock_standin.client(), sleep=lambda _: None)
    shapes = prompts_of(rubric)
    with caplog.at_level(logging.WARNING, logger="fmquality.judges.bedrock.judge"):
        for _ in range(2):  # the second round reads what the first wrote, if anything
            for prompt in shapes.values():
                reply = judge._client().converse(**judge.converse_params(prompt, rubric))
                assert reply["stopReason"] == "tool_use"
    sent = bedrock_standin.requests(MODEL_ID)
    with_point = [body for body in sent if body["system"][1:] == [CACHE_POINT]]
    stats = bedrock_standin.stats()
    if scheme_for(rubric).judge_prompt == "mangaassist":
        assert len(with_point) == len(sent) == 2 * len(shapes)
        assert stats["cache_writes"] == stats["cache_reads"] == len(shapes)
        assert not [r for r in caplog.records if "prompt caching off" in r.getMessage()]
    else:
        assert with_point == [] and len(sent) == 2 * len(shapes)
        assert stats["cache_writes"] == stats["cache_reads"] == stats["cache_write_tokens"] == 0
        assert len([r for r in caplog.records if "prompt caching off" in r.getMessage()]) == 1
