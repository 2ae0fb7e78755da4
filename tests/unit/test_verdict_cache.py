"""The verdict cache: what makes a hit, what makes a miss, and what is never stored."""

from __future__ import annotations

import json

import pytest

from fmquality.schemes.mangaassist import render_case
from fmquality.run.evaluate import evaluate_case
from fmquality.judges.base import CombinedJudgeRequest, JudgeOutcome, JudgeRequest
from fmquality.judges.bedrock.judge import BedrockJudge
from fmquality.judges.cache import CachingJudge, LocalVerdictStore, verdict_cache_key
from fmquality.judges.offline import OfflineJudge
from fmquality.judges.scripted import COMBINED, ScriptedJudge
from fmquality.domain.case import TestCase

MODEL_ID = "anthropic.claude-3-7-sonnet-20250219-v1:0"


def make_case(response: str = "You might enjoy Berserk Deluxe Edition Vol. 1 ($49.99, in stock).") -> TestCase:
    return TestCase(
        test_id="rec-dark-fantasy-001",
        intent="recommendation",
        query="Any dark fantasy manga like Claymore?",
        response=response,
        catalog=[{"asin": "B0BERSERK01", "title": "Berserk Deluxe Edition Vol. 1", "price": 49.99}],
        expected_products=["B0BERSERK01"],
    )


def make_request(rubric, case: TestCase | None = None, dimension="fluency", sub_scores=("grammar", "tone"),
                 version: str | None = None) -> JudgeRequest:
    case = case or make_case()
    return JudgeRequest(dimension=dimension, sub_scores=list(sub_scores), case=case,
                        rubric_version=version or rubric.version, guidance=rubric.judge_guidance[dimension],
                        case_data=render_case(case))


class Clock:
    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_an_unchanged_request_is_answered_from_the_cache(rubric, tmp_path):
    inner = ScriptedJudge()
    judge = CachingJudge(inner, LocalVerdictStore(tmp_path))
    first = judge.judge(make_request(rubric), rubric)
    second = judge.judge(make_request(rubric), rubric)
    assert first.ok and first.calls == 1 and not first.from_cache
    assert second.ok and second.from_cache and second.calls == 0
    assert second.usage.cached_verdicts == 1 and second.usage.calls == 0
    assert second.verdict == first.verdict
    assert len(inner.calls) == 1
    # A new judge over the same folder (the next run) hits too.
    rerun = ScriptedJudge()
    assert CachingJudge(rerun, LocalVerdictStore(tmp_path)).judge(make_request(rubric), rubric).from_cache
    assert rerun.calls == []


@pytest.mark.parametrize(
    "change",
    ["response", "rubric_version", "model", "sub_scores", "dimension"],
)
def test_any_change_to_what_is_judged_makes_a_new_call(rubric, tmp_path, change):
    store = LocalVerdictStore(tmp_path)
    CachingJudge(ScriptedJudge(), store).judge(make_request(rubric), rubric)

    inner = ScriptedJudge(model_id="scripted-v2" if change == "model" else "scripted-v1")
    request = {
        "response": make_request(rubric, case=make_case("Try Berserk! It is $49.99.")),
        "rubric_version": make_request(rubric, version="mangaassist-v4"),
        "model": make_request(rubric),
        "sub_scores": make_request(rubric, sub_scores=("grammar",)),
        "dimension": make_request(rubric, dimension="relevance", sub_scores=("grammar", "tone")),
    }[change]
    outcome = CachingJudge(inner, store).judge(request, rubric)
    assert not outcome.from_cache and len(inner.calls) == 1


def test_errors_and_throttles_are_never_cached(rubric, tmp_path):
    store = LocalVerdictStore(tmp_path)

    class Failing:
        name, model_id = "failing", "failing-v1"

        def __init__(self, outcome):
            self.outcome, self.calls = outcome, 0

        def judge(self, request, rubric):
            self.calls += 1
            return self.outcome

    for outcome in (JudgeOutcome(error="invalid judge output: no tool call", calls=1),
                    JudgeOutcome(error="judge failed after 5 attempts: ThrottlingException", throttled=True, calls=5)):
        inner = Failing(outcome)
        judge = CachingJudge(inner, store)
        judge.judge(make_request(rubric), rubric)
        judge.judge(make_request(rubric), rubric)
        assert inner.calls == 2 and judge.stats()["writes"] == 0
    assert not any(tmp_path.rglob("*.json"))


def test_the_key_covers_model_rubric_version_dimension_and_exact_prompt():
    base = verdict_cache_key("m", "v1", "fluency", "prompt")
    assert base == verdict_cache_key("m", "v1", "fluency", "prompt")
    assert len({base, verdict_cache_key("m2", "v1", "fluency", "prompt"),
                verdict_cache_key("m", "v2", "fluency", "prompt"),
                verdict_cache_key("m", "v1", "tone", "prompt"),
                verdict_cache_key("m", "v1", "fluency", "prompt ")}) == 5


def test_bedrock_key_text_is_the_exact_converse_request(rubric):
    judge = BedrockJudge(MODEL_ID, boto3_client=object())  # never called
    text = judge.request_text(make_request(rubric), rubric)
    body = json.loads(text)
    assert body["modelId"] == MODEL_ID and body["system"][1] == {"cachePoint": {"type": "default"}}
    assert "You might enjoy Berserk" in body["messages"][0]["content"][0]["text"]
    assert judge.request_text(make_request(rubric), rubric) == text
    changed = judge.request_text(make_request(rubric, case=make_case("Berserk is great.")), rubric)
    assert changed != text
    cooler = rubric.model_copy(update={"judge": rubric.judge.model_copy(update={"temperature": 0.5})})
    assert judge.request_text(make_request(rubric), cooler) != text


def test_expired_entries_are_ignored(rubric, tmp_path):
    clock = Clock()
    store = LocalVerdictStore(tmp_path, ttl_days=30, clock=clock)
    inner = ScriptedJudge()
    judge = CachingJudge(inner, store)
    judge.judge(make_request(rubric), rubric)
    clock.now += 29 * 86_400
    assert judge.judge(make_request(rubric), rubric).from_cache
    clock.now += 2 * 86_400
    assert not judge.judge(make_request(rubric), rubric).from_cache
    assert len(inner.calls) == 2


def test_a_failing_store_never_fails_the_scoring(rubric):
    class Broken:
        def get(self, key):
            raise OSError("disk on fire")

        def put(self, key, entry):
            raise OSError("disk on fire")

    outcome = CachingJudge(ScriptedJudge(), Broken()).judge(make_request(rubric), rubric)
    assert outcome.ok and outcome.calls == 1


def test_a_corrupt_entry_is_a_miss(rubric, tmp_path):
    store = LocalVerdictStore(tmp_path)
    judge = CachingJudge(ScriptedJudge(), store)
    judge.judge(make_request(rubric), rubric)
    [path] = list(tmp_path.rglob("*.json"))
    path.write_text("{not json", encoding="utf-8")
    assert not judge.judge(make_request(rubric), rubric).from_cache


def test_combined_verdicts_are_cached_under_their_own_key(rubric, tmp_path):
    store = LocalVerdictStore(tmp_path)
    requests = [make_request(rubric), make_request(rubric, dimension="relevance",
                                                   sub_scores=("intent_relevance",))]
    combined = CombinedJudgeRequest(requests=requests)
    inner = ScriptedJudge()
    judge = CachingJudge(inner, store)
    first = judge.judge_combined(combined, rubric)
    second = judge.judge_combined(combined, rubric)
    assert first.ok and second.from_cache and second.calls == 0 and second.usage.cached_verdicts == 1
    assert second.verdicts == first.verdicts
    assert inner.calls == [(requests[0].case.test_id, COMBINED)]
    # A per-dimension request for the same dimension is another question: no hit.
    assert not judge.judge(requests[0], rubric).from_cache


def test_the_engine_reports_cached_verdicts_and_no_calls(rubric, tmp_path):
    case = make_case()
    judge = CachingJudge(ScriptedJudge(), LocalVerdictStore(tmp_path))
    first = evaluate_case(case, rubric, judge)
    again = evaluate_case(case, rubric, judge)
    assert first.judge_calls > 0
    assert again.judge_calls == 0 and again.judge_usage.cached_verdicts == first.judge_calls
    assert again.composite_score == first.composite_score


def test_offline_judge_key_is_canonical_request_json(rubric):
    text = OfflineJudge().request_text(make_request(rubric), rubric)
    assert json.loads(text)["dimension"] == "fluency"
    assert text == OfflineJudge().request_text(make_request(rubric), rubric)
