"""The real BedrockJudge, through a real boto3 bedrock-runtime client, against the local Converse
stand-in (bench/standin.py): botocore's serialization and error parsing and the judge's retries all
run for real; only the model is simulated. Nothing leaves 127.0.0.1."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError, EndpointConnectionError

from bench.standin import BedrockStandin, estimate_tokens, offline_verdict_fn
from fmquality.schemes.mangaassist import MANGAASSIST, render_case
from fmquality.scoring.case import score_dimension
from fmquality.judges.base import JudgeOutcome, JudgeRequest
from fmquality.domain.errors import JudgeThrottled
from fmquality.judges.bedrock.judge import BedrockJudge
from fmquality.judges.bedrock.reply import parse_verdict
from fmquality.judges.bedrock.schema import TOOL_NAME, combined_verdict_tool_spec, verdict_tool_spec
from fmquality.judges.offline import OfflineJudge
from fmquality.domain.case import TestCase

MODEL_ID = "us.anthropic.claude-haiku-4-5-20251001-v1:0"  # the rubric's judge
RELEVANCE_SUBS = ["intent_relevance", "product_relevance", "context_relevance"]


def make_case(n: int = 0, response: str | None = None) -> TestCase:
    return TestCase(
        test_id=f"rec-dark-fantasy-{n:03d}",
        intent="recommendation",
        query="Any dark fantasy manga like Claymore?",
        response=response or f"You might enjoy Berserk Deluxe Edition Vol. {n + 1} ($49.99, in stock).",
        page_context={"current_asin": "B0CLAYMORE1", "store_section": "seinen"},
        catalog=[
            {"asin": "B0BERSERK01", "title": "Berserk Deluxe Edition Vol. 1", "price": 49.99,
             "availability": "in_stock"},
            {"asin": "B0CLAYMORE1", "title": "Claymore Vol. 1", "price": 9.99, "availability": "in_stock"},
        ],
        expected_products=["B0BERSERK01"],
    )


def make_request(case: TestCase, rubric, dimension: str = "relevance", sub_scores=RELEVANCE_SUBS) -> JudgeRequest:
    return JudgeRequest(
        dimension=dimension,
        sub_scores=list(sub_scores),
        case=case,
        rubric_version=rubric.version,
        guidance=rubric.judge_guidance[dimension],
        case_data=render_case(case),
        check_findings=["expected product B0BERSERK01 is mentioned"],
    )


class VirtualClock:
    """Shared time for the stand-in's buckets and the judges' backoff: a judge's sleep advances it,
    so a throttling storm plays out without real waiting and without depending on wall time."""

    def __init__(self) -> None:
        self._now = 1000.0
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> None:
        with self._lock:
            self._now += seconds
        time.sleep(0)  # let the other judges run


class Capture:
    """Passes calls to the real judge and keeps the outcome, so a DimensionScore can be compared
    with the outcome it came from."""

    def __init__(self, judge: BedrockJudge) -> None:
        self._judge, self.name, self.model_id = judge, judge.name, judge.model_id
        self.outcome: JudgeOutcome | None = None

    def judge(self, request, rubric) -> JudgeOutcome:
        self.outcome = self._judge.judge(request, rubric)
        return self.outcome


def converse_params(system_text: str = "You grade answers.", model_id: str = MODEL_ID, **extra) -> dict:
    return {
        "modelId": model_id,
        "system": [{"text": system_text}, {"cachePoint": {"type": "default"}}],
        "messages": [{"role": "user", "content": [{"text": "Grade this."}]}],
        **extra,
    }


# -------------------------------------------------------------------------------------------------
# The stand-in speaks Bedrock's wire protocol
# -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fault", "status", "code"),
    [
        ("throttle", 429, "ThrottlingException"),
        ("500", 500, "InternalServerException"),
        ("503", 503, "ServiceUnavailableException"),
        ("400", 400, "ValidationException"),
    ],
)
def test_injected_errors_parse_to_bedrock_error_codes_in_botocore(bedrock_standin, fault, status, code):
    bedrock_standin.inject([fault])
    with pytest.raises(ClientError) as caught:
        bedrock_standin.client().converse(**converse_params())
    error = caught.value.response
    assert error["Error"]["Code"] == code and error["Error"]["Message"]
    assert error["ResponseMetadata"]["HTTPStatusCode"] == status
    assert bedrock_standin.stats()["faults"] == {fault: 1}


def test_stand_in_binds_loopback_only_and_stop_cuts_kept_alive_connections():
    standin = BedrockStandin().start()
    try:
        assert standin.url.startswith("http://127.0.0.1:")
        client = standin.client(connect_timeout=0.5, read_timeout=1.0)
        assert client.converse(**converse_params())["stopReason"] == "end_turn"  # no tool asked for
    finally:
        standin.stop()
    assert not standin.running
    # The client's pooled keep-alive connection must not reach a handler thread any more.
    with pytest.raises(EndpointConnectionError):
        client.converse(**converse_params())


def test_stand_in_stops_itself_after_its_lifetime():
    standin = BedrockStandin(max_lifetime_s=0.1).start()
    try:
        url = standin.url
        deadline = time.monotonic() + 10
        while standin.running and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not standin.running
        client = boto3.client(
            "bedrock-runtime", endpoint_url=url, config=Config(retries={"total_max_attempts": 1}, connect_timeout=0.5)
        )
        with pytest.raises(EndpointConnectionError):
            client.converse(**converse_params())
    finally:
        standin.stop()


def test_request_and_token_quotas_answer_throttling_at_once():
    clock = VirtualClock()  # frozen unless advanced: no refill between the calls below
    with BedrockStandin(requests_per_second=1, burst=2, clock=clock) as standin:
        client = standin.client()
        client.converse(**converse_params())
        client.converse(**converse_params())
        with pytest.raises(ClientError, match="ThrottlingException"):
            client.converse(**converse_params())
        clock.advance(1.0)  # one second refills one request
        client.converse(**converse_params())
        assert standin.stats()["quota_throttled"] == 1 and standin.stats()["ok"] == 3

        long_system = "static rubric text " * 40
        needed = estimate_tokens(long_system) + estimate_tokens("Grade this.")
        standin.set_quota(tokens_per_minute=needed + needed // 2)  # room for one such request, not two
        client.converse(**converse_params(long_system))
        with pytest.raises(ClientError, match="ThrottlingException"):
            client.converse(**converse_params(long_system))
        assert standin.stats()["quota_throttled"] == 2


def test_a_seeded_fault_rate_injects_random_faults_that_the_counters_record():
    def run() -> list[str]:
        seen = []
        with BedrockStandin(fault_rate=0.5, fault_kinds=("500", "503"), seed=7) as standin:
            client = standin.client()
            for _ in range(20):
                try:
                    client.converse(**converse_params())
                    seen.append("ok")
                except ClientError as exc:
                    seen.append(exc.response["Error"]["Code"])
            stats = standin.stats()
        assert stats["ok"] == seen.count("ok")
        assert stats["faults"].get("500", 0) == seen.count("InternalServerException")
        assert stats["faults"].get("503", 0) == seen.count("ServiceUnavailableException")
        return seen

    first = run()
    assert 0 < first.count("ok") < len(first)
    assert run() == first  # the same seed draws the same faults


def test_prompt_cache_needs_each_models_minimum_from_the_rubric_and_is_kept_per_model(bedrock_standin, rubric):
    client = bedrock_standin.client()
    haiku, sonnet = MODEL_ID, "us.anthropic.claude-3-7-sonnet-20250219-v1:0"
    assert rubric.judge.min_cache_tokens_for(haiku) == 4096 and rubric.judge.min_cache_tokens_for(sonnet) == 1024

    def usage(system_text: str, model_id: str = haiku) -> dict:
        return client.converse(**converse_params(system_text, model_id=model_id))["usage"]

    below_haiku = "x" * (4 * 4000)  # 4,000 estimated tokens: enough for Sonnet, not for Haiku 4.5
    assert usage(below_haiku)["cacheWriteInputTokens"] == 0
    assert usage(below_haiku, sonnet)["cacheWriteInputTokens"] == 4000
    assert usage(below_haiku, "anthropic.unlisted-model-v1:0")["cacheWriteInputTokens"] == 0  # not in the table

    long_system = "x" * (4 * 4200)
    first, again, other_model = usage(long_system), usage(long_system), usage(long_system, sonnet)
    assert first["cacheWriteInputTokens"] == 4200 and first["cacheReadInputTokens"] == 0
    assert again["cacheReadInputTokens"] == 4200 and again["cacheWriteInputTokens"] == 0
    assert other_model["cacheWriteInputTokens"] == 4200  # the cache is kept per model
    for one in (first, again):
        assert one["totalTokens"] == (
            one["inputTokens"] + one["outputTokens"] + one["cacheReadInputTokens"] + one["cacheWriteInputTokens"]
        )


def test_an_explicit_minimum_applies_to_every_model():
    with BedrockStandin(min_cache_tokens=1024) as standin:
        usage = standin.client().converse(**converse_params("x" * (4 * 1100)))["usage"]
    assert usage["cacheWriteInputTokens"] == 1100


# -------------------------------------------------------------------------------------------------
# The judge against the stand-in
# -------------------------------------------------------------------------------------------------


def test_throttling_storm_every_case_gets_a_verdict_or_a_throttled_unscored_outcome(rubric):
    clock = VirtualClock()
    cases = [make_case(n) for n in range(40)]
    with BedrockStandin(requests_per_second=5, burst=5, clock=clock) as standin:
        # One shared client and judge, ten threads: the rubric's own retry settings, in virtual time.
        judge = BedrockJudge(MODEL_ID, standin.client(max_pool_connections=10), sleep=clock.advance)
        start = threading.Barrier(10)

        def score(case):
            if case.test_id.endswith(tuple(f"{n:03d}" for n in range(10))):
                start.wait()  # the first ten fire together
            capture = Capture(judge)
            return score_dimension(MANGAASSIST, "fluency", case, rubric, capture), capture.outcome

        with ThreadPoolExecutor(max_workers=10) as pool:
            results = list(pool.map(score, cases))
        stats = standin.stats()

    assert len(results) == len(cases)  # nothing lost
    scored = 0
    for dimension_score, outcome in results:
        if outcome.verdict is not None:
            scored += 1
            assert outcome.ok and not outcome.throttled
            assert dimension_score.status == "scored" and dimension_score.score is not None
            assert {"grammar", "tone"} <= set(dimension_score.sub_scores)
        else:
            # Unscored, clearly: no number anywhere, and marked as throttling for an orchestrator retry.
            assert outcome.throttled and "ThrottlingException" in outcome.error
            assert outcome.calls == rubric.judge.max_attempts
            assert dimension_score.status == "unscored" and dimension_score.score is None
            assert dimension_score.sub_scores == {}
        assert dimension_score.judge_calls == outcome.calls
    calls = sum(outcome.calls for _, outcome in results)
    assert stats["quota_throttled"] > 0 and stats["throttled"] == stats["quota_throttled"]
    assert stats["requests"] == calls and stats["ok"] == scored
    # Every call beyond the first of each case answered a 429, and the judge retried it.
    assert stats["throttled"] == calls - scored
    assert any(outcome.calls > 1 and outcome.ok for _, outcome in results)


def test_throttling_that_outlives_the_retries_is_unscored_or_raised_for_the_orchestrator(rubric):
    frozen = VirtualClock()  # never advanced: the bucket never refills
    with BedrockStandin(requests_per_second=1, burst=1, clock=frozen) as standin:
        judge = BedrockJudge(MODEL_ID, standin.client(), max_attempts=3, sleep=lambda _: None)
        assert score_dimension(MANGAASSIST, "fluency", make_case(1), rubric, judge).status == "scored"
        capture = Capture(judge)
        score = score_dimension(MANGAASSIST, "fluency", make_case(2), rubric, capture)
        assert score.status == "unscored" and score.score is None and score.judge_calls == 3
        assert capture.outcome.throttled and "ThrottlingException" in score.unscored_reason
        with pytest.raises(JudgeThrottled):
            score_dimension(MANGAASSIST, "fluency", make_case(3), rubric, judge, raise_on_throttle=True)
        assert standin.stats()["quota_throttled"] == 6 and standin.stats()["ok"] == 1


def test_a_server_error_then_success_is_scored_after_two_calls(bedrock_standin, rubric):
    bedrock_standin.inject(["500"])
    delays: list[float] = []
    judge = BedrockJudge(MODEL_ID, bedrock_standin.client(), sleep=delays.append)
    score = score_dimension(MANGAASSIST, "fluency", make_case(), rubric, judge)
    assert score.status == "scored" and score.score is not None
    assert score.judge_calls == 2 and len(delays) == 1
    stats = bedrock_standin.stats()
    assert stats["requests"] == 2 and stats["ok"] == 1 and stats["faults"] == {"500": 1}


def test_a_validation_error_is_not_retried_and_stops_the_run(bedrock_standin, rubric):
    from fmquality.domain.errors import JudgeMisconfigured

    bedrock_standin.inject(["400"])
    judge = BedrockJudge(MODEL_ID, bedrock_standin.client(), sleep=lambda _: None)
    with pytest.raises(JudgeMisconfigured, match="ValidationException"):
        judge.judge(make_request(make_case(), rubric), rubric)
    assert bedrock_standin.stats()["requests"] == 1


@pytest.mark.parametrize("fault", ["missing_sub_score", "out_of_range", "text_only", "max_tokens"])
def test_malformed_output_twice_leaves_the_dimension_unscored_after_one_re_ask(bedrock_standin, rubric, fault):
    bedrock_standin.inject([fault, fault])
    judge = BedrockJudge(MODEL_ID, bedrock_standin.client(), sleep=lambda _: None)
    score = score_dimension(MANGAASSIST, "fluency", make_case(), rubric, judge)
    assert score.status == "unscored" and score.score is None and score.sub_scores == {}
    assert score.unscored_reason.startswith("invalid judge output: ") and "re-asked once" in score.unscored_reason
    assert score.judge_calls == 2 and score.judge_raw
    assert bedrock_standin.stats()["requests"] == 2


def test_a_read_timeout_is_retried_and_a_persistent_one_leaves_the_dimension_unscored(
    bedrock_standin, rubric, monkeypatch
):
    # The judge builds its own client here (read_timeout_s is applied to it); boto3 finds the
    # stand-in through the service-specific endpoint variable.
    monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", bedrock_standin.url)
    bedrock_standin.hang_s = 1.5

    bedrock_standin.inject(["timeout", "ok"])
    delays: list[float] = []
    judge = BedrockJudge(MODEL_ID, read_timeout_s=0.3, sleep=delays.append)
    score = score_dimension(MANGAASSIST, "fluency", make_case(), rubric, judge)
    assert score.status == "scored" and score.judge_calls == 2 and len(delays) == 1

    bedrock_standin.inject(["timeout", "timeout"])
    judge = BedrockJudge(MODEL_ID, read_timeout_s=0.3, max_attempts=2, sleep=lambda _: None)
    capture = Capture(judge)
    score = score_dimension(MANGAASSIST, "fluency", make_case(), rubric, capture)
    assert score.status == "unscored" and score.score is None
    assert score.unscored_reason == "judge failed after 2 attempts: ReadTimeoutError"
    assert not capture.outcome.throttled
    assert bedrock_standin.stats()["faults"] == {"timeout": 3}


def test_prompt_cache_request_shape_and_usage(bedrock_standin, rubric):
    judge = BedrockJudge(MODEL_ID, bedrock_standin.client(), sleep=lambda _: None)
    first = judge.judge(make_request(make_case(1), rubric), rubric)
    second = judge.judge(make_request(make_case(2), rubric), rubric)
    other_dimension = judge.judge(
        make_request(make_case(1), rubric, dimension="fluency", sub_scores=["grammar", "tone"]), rubric
    )
    assert first.ok and second.ok and other_dimension.ok

    sent = bedrock_standin.requests(MODEL_ID)
    assert len(sent) == 3
    for body in sent:
        text_block, cache_point = body["system"]
        assert set(text_block) == {"text"} and cache_point == {"cachePoint": {"type": "default"}}
        assert estimate_tokens(text_block["text"]) >= rubric.judge.min_cache_tokens_for(MODEL_ID)
        assert body["toolConfig"]["toolChoice"] == {"tool": {"name": "record_verdict"}}
    assert sent[0]["system"] == sent[1]["system"] != sent[2]["system"]
    assert sent[0]["messages"] != sent[1]["messages"]

    assert first.usage.cache_write_tokens > 0 and first.usage.cache_read_tokens == 0
    assert second.usage.cache_read_tokens == first.usage.cache_write_tokens
    assert second.usage.cache_write_tokens == 0
    # Only the small per-case part is billed as fresh input once the rubric text is cached.
    assert 0 < second.usage.input_tokens < second.usage.cache_read_tokens
    # Another dimension has another static text: a miss that writes its own prefix.
    assert other_dimension.usage.cache_write_tokens > 0 and other_dimension.usage.cache_read_tokens == 0
    stats = bedrock_standin.stats()
    assert stats["cache_writes"] == 2 and stats["cache_reads"] == 1


def test_default_verdicts_are_deterministic_and_answer_exactly_the_requested_sub_scores(bedrock_standin, rubric):
    judge = BedrockJudge(MODEL_ID, bedrock_standin.client(), sleep=lambda _: None)
    asked = ["product_relevance", "context_relevance"]
    outcomes = [judge.judge(make_request(make_case(), rubric, sub_scores=asked), rubric) for _ in range(2)]
    assert outcomes[0].ok and outcomes[0].verdict == outcomes[1].verdict
    scores = outcomes[0].verdict.sub_scores
    assert sorted(scores) == sorted(asked)
    assert all(0.6 <= value <= 1.0 for value in scores.values())


def test_offline_derived_verdicts_match_the_offline_judge(bedrock_standin, rubric):
    bedrock_standin.verdict_fn = offline_verdict_fn(rubric)
    judge = BedrockJudge(MODEL_ID, bedrock_standin.client(), sleep=lambda _: None)
    # sub-scores the offline judge has evidence for in this case (it has no page context to compare)
    for dimension, asked in (("relevance", ["intent_relevance", "product_relevance"]), ("fluency", ["grammar", "tone"])):
        request = make_request(make_case(3), rubric, dimension=dimension, sub_scores=asked)
        outcome = judge.judge(request, rubric)
        expected = OfflineJudge().judge(request, rubric).verdict
        # The stand-in answers in levels: the offline sub-scores rounded to the nearest level (and, as a
        # model must, the ones the offline judge abstains on too).
        assert outcome.ok and set(outcome.verdict.sub_scores) == set(asked)
        assert {n: outcome.verdict.sub_scores[n] for n in expected.sub_scores} == {
            n: round(v * 4) / 4 for n, v in expected.sub_scores.items()}
        assert outcome.verdict.rationale == expected.rationale


def test_a_prompt_that_names_its_sub_scores_in_other_words_gets_every_one_its_tool_schema_lists(bedrock_standin):
    client = bedrock_standin.client()

    def ask(tool_spec: dict) -> dict:
        reply = client.converse(
            modelId=MODEL_ID,
            messages=[{"role": "user", "content": [{"text": "Grade the sub-score tone of the dimension fluency."}]}],
            toolConfig={"tools": [{"toolSpec": tool_spec}], "toolChoice": {"tool": {"name": TOOL_NAME}}})
        return reply["output"]["message"]["content"][0]["toolUse"]["input"]

    one = ask(verdict_tool_spec(["grammar", "tone", "readability"]))
    assert sorted(one["levels"]) == ["grammar", "readability", "tone"]
    assert parse_verdict({"stopReason": "tool_use", "output": {"message": {"content": [
        {"toolUse": {"name": TOOL_NAME, "input": one}}]}}}, ["tone"]).sub_scores["tone"] >= 0.75
    both = ask(combined_verdict_tool_spec({"fluency": ["grammar", "tone"], "relevance": RELEVANCE_SUBS}))
    assert {d: sorted(v["levels"]) for d, v in both.items()} == {
        "fluency": ["grammar", "tone"], "relevance": sorted(RELEVANCE_SUBS)}
