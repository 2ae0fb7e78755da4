"""Throughput and cost machinery against the local Converse stand-in (bench/standin.py), through the
real BedrockJudge and a real boto3 client: combined mode on the wire, the verdict cache, the
estimate's token arithmetic, the adaptive engine under a throttling quota, and the bench's naive
baseline (scored by the stand-in; a baseline with unscored cases fails the bench)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

import bench.__main__ as bench_main
from bench.naive import NaiveEvaluator
from bench.standin import BedrockStandin
from fmquality.run.dataset import load_catalog, load_dataset
from fmquality.schemes import scheme_for
from fmquality.scoring.plan import plan_case
from fmquality.run.estimate import estimate_run
from fmquality.run.evaluate import evaluate_case, evaluate_cases
from fmquality.judges.bedrock.judge import BedrockJudge
from fmquality.judges.cache import CachingJudge, LocalVerdictStore
from fmquality.judges.concurrency import AimdController

ROOT = Path(__file__).resolve().parents[2]
MODEL_ID = "us.anthropic.claude-haiku-4-5-20251001-v1:0"  # the rubric's judge


@pytest.fixture(scope="module")
def golden():
    return load_dataset(ROOT / "datasets/mangaassist/golden.jsonl",
                        load_catalog(ROOT / "datasets/mangaassist/catalog.json")).cases


def open_dimensions(case, rubric) -> dict[str, list[str]]:
    plans = list(plan_case(scheme_for(rubric), case, rubric).values())
    return {p.dimension: list(p.request.sub_scores) for p in plans if p.final is None and p.request is not None}


def judged_cases(cases, rubric, count):
    found = []
    for case in cases:
        if len(open_dimensions(case, rubric)) >= 2:
            found.append(case)
            if len(found) == count:
                break
    return found


def fast_judge(client, model_id=MODEL_ID, **kwargs) -> BedrockJudge:
    return BedrockJudge(model_id, client, sleep=lambda _s: None, **kwargs)


# -------------------------------------------------------------------------------------------------
# Combined mode on the wire
# -------------------------------------------------------------------------------------------------


def test_combined_mode_sends_one_request_with_one_object_per_open_dimension(bedrock_standin, golden, rubric):
    cases = judged_cases(golden, rubric, 3)
    judge = fast_judge(bedrock_standin.client())
    results = [evaluate_case(c, rubric, judge, mode="combined") for c in cases]

    sent = bedrock_standin.requests(MODEL_ID)
    assert len(sent) == len(cases)
    for case, body, result in zip(cases, sent, results):
        opened = open_dimensions(case, rubric)
        user = body["messages"][0]["content"][0]["text"]
        for dimension, names in opened.items():
            assert f"- {dimension}: {', '.join(names)}" in user
        assert body["inferenceConfig"]["maxTokens"] == min(rubric.judge.max_tokens * len(opened), rubric.judge.max_tokens_cap)
        assert body["system"][1] == {"cachePoint": {"type": "default"}}
        assert result.status == "scored" and result.judge_calls == 1
    # The static text and the tool are the same for every case (all four dimensions), so the prompt
    # cache is read.
    assert len({body["system"][0]["text"] for body in sent}) == 1
    assert bedrock_standin.stats()["cache_reads"] == len(cases) - 1


def test_combined_mode_failures_leave_every_open_dimension_unscored(bedrock_standin, golden, rubric):
    case = judged_cases(golden, rubric, 1)[0]
    opened = open_dimensions(case, rubric)
    one = next(iter(opened))
    partial = {one: {"evidence": [], "rationale": "only one", "levels": {n: 5 for n in opened[one]},
                     "confidence": 0.9}}
    bedrock_standin.inject([partial, partial])  # the reply and the one re-ask
    result = evaluate_case(case, rubric, fast_judge(bedrock_standin.client()), mode="combined")
    assert result.status == "unscored"
    for dimension, score in result.dimension_scores.items():
        if dimension in opened:
            assert score.status == "unscored" and "missing dimensions" in score.unscored_reason
        else:
            assert score.status == "scored"

    bedrock_standin.inject(["500"])  # then the default verdict
    result = evaluate_case(case, rubric, fast_judge(bedrock_standin.client()), mode="combined")
    assert result.status == "scored" and result.judge_calls == 2


# -------------------------------------------------------------------------------------------------
# Verdict cache with the real judge
# -------------------------------------------------------------------------------------------------


def test_verdict_cache_hits_and_misses_against_the_stand_in(bedrock_standin, golden, rubric, tmp_path):
    cases = judged_cases(golden, rubric, 4)
    client = bedrock_standin.client()
    store = LocalVerdictStore(tmp_path)
    first = evaluate_cases(cases, rubric, CachingJudge(fast_judge(client), store), concurrency=1)
    calls_first = bedrock_standin.stats()["requests"]
    assert calls_first == sum(len(open_dimensions(c, rubric)) for c in cases)

    bedrock_standin.reset()
    again = evaluate_cases(cases, rubric, CachingJudge(fast_judge(client), store), concurrency=1)
    assert bedrock_standin.stats()["requests"] == 0  # an unchanged run makes no call
    assert [{d: s.sub_scores for d, s in r.dimension_scores.items()} for r in again] == [
        {d: s.sub_scores for d, s in r.dimension_scores.items()} for r in first
    ]
    assert [r.composite_score for r in again] == [r.composite_score for r in first]
    assert sum(r.judge_usage.cached_verdicts for r in again) == calls_first
    assert sum(r.judge_calls for r in again) == 0

    changed = [cases[0].model_copy(update={"response": cases[0].response + " Happy reading!"}), *cases[1:]]
    bedrock_standin.reset()
    evaluate_cases(changed, rubric, CachingJudge(fast_judge(client), store), concurrency=1)
    assert bedrock_standin.stats()["requests"] == len(open_dimensions(changed[0], rubric))

    bedrock_standin.reset()
    evaluate_cases(cases[:1], rubric, CachingJudge(fast_judge(client, model_id="anthropic.other-model-v1:0"), store),
                   concurrency=1)
    assert bedrock_standin.stats()["requests"] == len(open_dimensions(cases[0], rubric))


def test_malformed_output_is_not_cached(bedrock_standin, golden, rubric, tmp_path):
    case = judged_cases(golden, rubric, 1)[0]
    opened = open_dimensions(case, rubric)
    store = LocalVerdictStore(tmp_path)
    bedrock_standin.inject(["text_only", "text_only"])  # the reply and the one re-ask
    first = evaluate_case(case, rubric, CachingJudge(fast_judge(bedrock_standin.client()), store))
    assert first.status == "unscored"
    bedrock_standin.reset()
    second = evaluate_case(case, rubric, CachingJudge(fast_judge(bedrock_standin.client()), store))
    # Only the dimension that failed is asked again; the others come from the cache.
    assert bedrock_standin.stats()["requests"] == 1 and second.status == "scored"
    assert second.judge_usage.cached_verdicts == len(opened) - 1


# -------------------------------------------------------------------------------------------------
# The estimate's arithmetic is the stand-in's
# -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["per_dimension", "combined"])
def test_estimate_predicts_the_calls_and_tokens_the_judge_then_uses(bedrock_standin, golden, rubric, mode):
    cases = golden[:6]
    estimate = estimate_run(cases, rubric, mode=mode, model_id=MODEL_ID)
    evaluate_cases(cases, rubric, fast_judge(bedrock_standin.client()), concurrency=1, mode=mode)
    stats = bedrock_standin.stats()
    assert estimate.calls == stats["requests"]
    assert estimate.input_tokens == stats["input_tokens"]
    assert estimate.cache_write_tokens == stats["cache_write_tokens"]
    assert estimate.cache_read_tokens == stats["cache_read_tokens"]


# -------------------------------------------------------------------------------------------------
# The adaptive engine under a throttling quota
# -------------------------------------------------------------------------------------------------


def test_no_case_is_lost_or_double_counted_under_a_throttling_quota(golden, rubric):
    cases = golden[:24]
    expected_verdicts = sum(len(open_dimensions(c, rubric)) for c in cases)
    with BedrockStandin(requests_per_second=60, burst=2, max_lifetime_s=120) as standin:
        judge = BedrockJudge(MODEL_ID, standin.client(max_pool_connections=20), base_delay_s=0.005,
                             max_delay_s=0.05, max_attempts=3)
        controller = AimdController(12, maximum=16)
        seen: list[str] = []
        results = evaluate_cases(cases, rubric, judge, concurrency=12, controller=controller,
                                 on_result=lambda r: seen.append(r.test_id),
                                 throttle_requeues=20, sleep=lambda s: time.sleep(min(s, 0.02)))
        stats = standin.stats()

    assert [r.test_id for r in results] == [c.test_id for c in cases]  # all, once, in order
    assert sorted(seen) == sorted(c.test_id for c in cases)  # each reported once
    assert stats["quota_throttled"] > 0 and controller.throttles == stats["throttled"]
    assert controller.decreases >= 1
    # Every dimension that needed the judge got exactly one verdict: nothing judged twice or skipped.
    assert stats["ok"] == expected_verdicts
    assert all(r.status == "scored" for r in results)
    # What the results record is what the stand-in saw: every attempt, throttled or not.
    assert sum(r.judge_calls for r in results) == stats["requests"]


# -------------------------------------------------------------------------------------------------
# The bench's naive baseline is scored, and a baseline that is not fails the bench
# -------------------------------------------------------------------------------------------------


def test_the_naive_evaluators_cases_are_scored_by_the_stand_in(bedrock_standin, golden, rubric):
    cases = golden[:: len(golden) // 3][:3]
    outcomes = [NaiveEvaluator(bedrock_standin.client(), MODEL_ID, rubric).evaluate(c) for c in cases]
    assert [o["test_id"] for o in outcomes if o["unscored"]] == []
    assert all(0.0 <= o["composite"] <= 1.0 for o in outcomes)
    sent = bedrock_standin.requests(MODEL_ID)
    from fmquality.schemes.mangaassist import SUB_SCORES

    per_case = sum(len(names) for names in SUB_SCORES.values())  # one call per sub-score
    assert len(sent) == bedrock_standin.stats()["ok"] == per_case * len(cases)
    # Its prompts name one sub-score in their own words; the stand-in reads the tool schema instead.
    assert not any("Grade exactly these sub-scores" in b["messages"][0]["content"][0]["text"] for b in sent)


class OneSubScoreUnreadNaive(NaiveEvaluator):
    """The naive evaluator with the verdict of one sub-score unreadable, as every verdict once was."""

    def _ask(self, dimension, sub_score, case):
        return None if sub_score == "grammar" else super()._ask(dimension, sub_score, case)


def test_the_bench_misses_its_speedup_target_against_a_baseline_with_unscored_cases(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(bench_main, "NaiveEvaluator", OneSubScoreUnreadNaive)
    out = tmp_path / "results.json"
    code = bench_main.main(["judge", "--limit", "3", "--naive-cases", "2", "--latency-ms", "0", "--rps", "1000",
                            "--concurrency", "2", "--out", str(out)])
    results = json.loads(out.read_text(encoding="utf-8"))
    naive = results["modes"]["naive"]
    assert code == 1
    assert (naive["scored"], naive["unscored"], len(naive["unscored_cases"])) == (0, 2, 2)
    line = "speedup_vs_naive >= 20, naive baseline scored 0/2 measured cases (all needed)"
    assert results["targets"][line] is False
    assert f'"{line}": false' in capsys.readouterr().out


def test_the_speedup_target_is_met_only_against_a_baseline_that_scored_every_case():
    modes = {"per_dimension": {"unscored": 0, "lost": 0, "double_counted": 0, "calls_per_case": 3.2},
             "combined": {"calls_per_case": 1.0},
             "naive": {"scored": 20, "unscored": 0}}
    assert all(bench_main.judge_targets(modes, 0.95, 30.0, 0).values())
    modes["naive"] = {"scored": 19, "unscored": 1}
    targets = bench_main.judge_targets(modes, 0.95, 30.0, 0)
    assert [k for k, met in targets.items() if not met] == [
        "speedup_vs_naive >= 20, naive baseline scored 19/20 measured cases (all needed)"]
