"""The Bedrock judge on a profile dimension with described levels: the levels (names, values,
descriptions) are in the system prompt, the forced tool asks for a level NAME per sub-score, names
map to the profile's fixed values, and an unknown name is invalid output (unscored, never a score)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import boto3
import pytest
from botocore.stub import ANY, Stubber

from fmquality.run.evaluate import score_one_dimension
from fmquality.judges.bedrock.judge import BedrockJudge
from fmquality.domain.case import TestCase
from fmquality.schemes import scheme_for
from fmquality.scoring.plan import plan_case
from fmquality.config.rubric import load_rubric

ROOT = Path(__file__).resolve().parents[2]
EVENTS = ROOT / "tests" / "events"
MODEL_ID = "anthropic.claude-haiku-4-5-20251001-v1:0"
LEVEL_NAMES = ["excellent", "good", "acceptable", "poor", "failed"]


@pytest.fixture(scope="module")
def rubric():
    return load_rubric(ROOT / "datasets" / "rubrics" / "research-agent-v1.yaml")


@pytest.fixture(scope="module")
def case() -> TestCase:
    line = (ROOT / "datasets" / "research_agent" / "examples.jsonl").read_text(encoding="utf-8").splitlines()[0]
    return TestCase.model_validate(json.loads(line))


def reply(levels: dict) -> dict:
    out = json.loads((EVENTS / "converse_record_verdict.json").read_text(encoding="utf-8"))
    out["output"]["message"]["content"][0]["toolUse"]["input"]["levels"] = levels
    out["stopReason"] = "tool_use"
    return out


class Stubbed:
    def __init__(self, *replies: dict):
        self.client = boto3.client("bedrock-runtime", region_name="us-east-1")
        self.stubber = Stubber(self.client)
        self.sent: list[dict] = []
        self.client.meta.events.register("before-parameter-build.bedrock-runtime.Converse",
                                         lambda params, **_: self.sent.append(copy.deepcopy(params)))
        for r in replies:
            self.stubber.add_response("converse", r, {"modelId": MODEL_ID, "system": ANY, "messages": ANY,
                                                      "inferenceConfig": ANY, "toolConfig": ANY})
        self.judge = BedrockJudge(MODEL_ID, self.client, sleep=lambda _: None)

    def __enter__(self):
        self.stubber.activate()
        return self

    def __exit__(self, *exc):
        self.stubber.deactivate()


def _request(case, rubric, dimension="factual_accuracy"):
    plan = plan_case(scheme_for(rubric), case, rubric)[dimension]
    assert plan.request is not None, "the checks left this dimension to the judge"
    return plan.request


def test_the_request_gives_the_levels_and_asks_for_a_level_name(case, rubric):
    with Stubbed(reply({"factual_accuracy": "good"})) as s:
        outcome = s.judge.judge(_request(case, rubric), rubric)
    (params,) = s.sent
    system = params["system"][0]["text"]
    spec = rubric.profile_spec.dimension("factual_accuracy")
    for level in spec.levels:
        assert f"- {level.name} (= {level.value:g}): {level.description}" in system
    # The profile's static prefix is far under Claude Haiku 4.5's 4,096-token minimum: no cache point
    # (tests/unit/test_bedrock_prompt_cache.py).
    assert params["system"] == [{"text": system}]
    (tool,) = params["toolConfig"]["tools"]
    levels = tool["toolSpec"]["inputSchema"]["json"]["properties"]["levels"]
    assert levels["properties"] == {"factual_accuracy": {"type": "string", "enum": LEVEL_NAMES}}
    assert params["toolConfig"]["toolChoice"] == {"tool": {"name": "record_verdict"}}
    assert "one of the levels excellent, good, acceptable, poor, failed" in params["messages"][0]["content"][0]["text"]
    # The name maps to the profile's fixed value.
    assert outcome.error is None
    assert outcome.verdict.sub_scores == {"factual_accuracy": 0.8}


@pytest.mark.parametrize("given", ["great", 4, "Good"])
def test_a_level_that_is_not_a_name_of_the_dimension_is_invalid_output(case, rubric, given):
    with Stubbed(reply({"factual_accuracy": given}), reply({"factual_accuracy": given})) as s:  # + the re-ask
        outcome = s.judge.judge(_request(case, rubric), rubric)
    assert outcome.verdict is None
    assert outcome.error and outcome.error.startswith("invalid judge output")


def test_an_invalid_level_leaves_the_dimension_unscored_with_the_reason(case, rubric):
    with Stubbed(reply({"factual_accuracy": "great"}), reply({"factual_accuracy": "great"})) as s:  # + the re-ask
        score = score_one_dimension("factual_accuracy", case, rubric, s.judge)
    assert score.status == "unscored"
    assert score.score is None
    assert "not level names" in (score.unscored_reason or "")


def test_mangaassist_prompts_are_unchanged_by_profiles():
    """The MangaAssist judge keeps its own prompt (no tool override, integer levels)."""
    from fmquality.judges.bedrock.prompts import build_prompt
    from fmquality.judges.base import JudgeRequest
    from fmquality.schemes.mangaassist import render_case

    manga = load_rubric()
    case = TestCase(test_id="t", intent="faq", query="Can I return a manga?", response="Yes, within 30 days.")
    prompt = build_prompt(JudgeRequest(dimension="relevance", sub_scores=["intent_relevance"], case=case,
                                       rubric_version=manga.version, guidance="", case_data=render_case(case)), manga)
    assert prompt.tool["inputSchema"]["json"]["properties"]["levels"]["properties"]["intent_relevance"]["type"] == "integer" and prompt.level_values is None
