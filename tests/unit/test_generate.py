"""generate(): retries, backoff, the Generation record; and the engine's use of it (a failed
generation is an error record, never a score; arms; the target's concurrency cap). Sleeps are
recorded, never slept."""

from __future__ import annotations

import threading
import time

import pytest

from fmquality.run.evaluate import evaluate_case, evaluate_cases
from fmquality.run.generate import BASE_DELAY_S, MAX_DELAY_S, MAX_RETRY_AFTER_S, backoff_delay, generate
from fmquality.judges.scripted import ScriptedJudge
from fmquality.domain.case import TestCase
from fmquality.targets import TargetError, TargetReply, TargetSpec
from fmquality.targets.python_function import PythonTarget
from fmquality.targets.recorded import RecordedTarget

GOOD_ANSWER = ("You can return unopened items within 15 days of delivery, and your refund reaches the original "
               "payment method within 5-7 business days.")


def make_case(test_id: str = "faq-returns-window", **overrides) -> TestCase:
    data = {
        "test_id": test_id,
        "intent": "faq",
        "query": "How long do I have to return a manga?",
        "response": "Returns are accepted within 30 days.",  # yesterday's answer, not the candidate's
        "retrieved_chunks": ["Returns: unopened items can be returned within 15 days of delivery. Refunds are "
                             "issued to the original payment method within 5-7 business days."],
        "expected_facts": ["unopened items can be returned within 15 days of delivery"],
        "tags": ["policy"],
    }
    data.update(overrides)
    return TestCase.model_validate(data)


class ScriptedTarget:
    """Plays a script of replies/exceptions, one per attempt."""

    def __init__(self, *script, kind="python", max_attempts=4, max_concurrency=None, version="v1"):
        self.spec = TargetSpec(kind=kind, ref="tests:scripted" if kind != "recorded" else "",
                               max_attempts=max_attempts, max_concurrency=max_concurrency)
        self.script = list(script)
        self.calls = 0
        self._version = version

    @property
    def id(self):
        return "scripted-bot"

    @property
    def version(self):
        return self._version

    def answer(self, case):
        self.calls += 1
        step = self.script.pop(0) if len(self.script) > 1 else self.script[0]
        if isinstance(step, BaseException):
            raise step
        return step if isinstance(step, TargetReply) else TargetReply(response=step)


class Ticks:
    """A clock that advances 0.25 s per reading: latency is then exact, with no real time involved."""

    def __init__(self):
        self.now = 100.0

    def __call__(self):
        self.now += 0.25
        return self.now


def test_success_replaces_the_response_and_records_how():
    case = make_case()
    target = ScriptedTarget(TargetReply(response=GOOD_ANSWER, citations=["policy#returns"], tool_calls=[{"t": 1}],
                                        usage={"input_tokens": 10, "output_tokens": 5}, cost_usd=0.001))
    new_case, generation = generate(case, target, sleep=pytest.fail, clock=Ticks())
    assert new_case.response == GOOD_ANSWER and case.response != GOOD_ANSWER  # the input is not mutated
    assert new_case.model_dump(exclude={"response"}) == case.model_dump(exclude={"response"})
    assert generation.model_dump() == {
        "target_id": "scripted-bot", "target_kind": "python", "target_version": "v1", "response": GOOD_ANSWER,
        "latency_ms": 250.0, "usage": {"input_tokens": 10, "output_tokens": 5}, "cost_usd": 0.001,
        "citations": ["policy#returns"], "tool_calls": [{"t": 1}], "attempts": 1, "error": None,
        "stop_reason": None}


def test_the_replys_own_latency_and_version_win():
    reply = TargetReply(response="x", latency_ms=42.0).served_by("7")
    _, generation = generate(make_case(), ScriptedTarget(reply, version="$LATEST"), clock=Ticks())
    assert generation.latency_ms == 42.0 and generation.target_version == "7"


def test_an_empty_answer_is_an_answer_not_a_failure():
    new_case, generation = generate(make_case(), ScriptedTarget(""), clock=Ticks())
    assert new_case.response == "" and generation.response == "" and generation.error is None


def test_retryable_failures_are_retried_with_full_jitter_backoff():
    sleeps: list[float] = []
    target = ScriptedTarget(TargetError("HTTP 503", retryable=True), TimeoutError("read timed out"),
                            TargetError("HTTP 429", retryable=True), GOOD_ANSWER)
    new_case, generation = generate(make_case(), target, sleep=sleeps.append, rng=lambda: 1.0, clock=Ticks())
    assert generation.attempts == 4 and generation.response == GOOD_ANSWER and new_case.response == GOOD_ANSWER
    assert sleeps == [BASE_DELAY_S, BASE_DELAY_S * 2, BASE_DELAY_S * 4]
    assert generation.latency_ms == 250.0  # the successful call only


def test_backoff_is_jittered_and_capped():
    assert backoff_delay(0, rng=lambda: 0.5) == pytest.approx(0.25)
    assert backoff_delay(30, rng=lambda: 1.0) == MAX_DELAY_S
    assert backoff_delay(3, rng=lambda: 0.0) == 0.0


def test_retry_after_is_honoured_up_to_its_cap():
    sleeps: list[float] = []
    target = ScriptedTarget(TargetError("HTTP 429", retryable=True, retry_after_s=3.0),
                            TargetError("HTTP 429", retryable=True, retry_after_s=300.0), GOOD_ANSWER)
    generate(make_case(), target, sleep=sleeps.append, rng=lambda: 1.0, clock=Ticks())
    assert sleeps == [3.0, MAX_RETRY_AFTER_S]


def test_a_final_failure_is_returned_never_raised():
    case = make_case()
    target = ScriptedTarget(TargetError("HTTP 503", retryable=True), max_attempts=3)
    same_case, generation = generate(case, target, sleep=lambda _s: None, clock=Ticks())
    assert same_case is case and target.calls == 3
    assert generation.response is None and generation.attempts == 3
    assert generation.error == "HTTP 503 (after 3 attempts)" and generation.target_kind == "python"


@pytest.mark.parametrize("failure, reason", [
    (TargetError("HTTP 404: not found"), "HTTP 404: not found"),
    (RuntimeError("bug in the adapter"), "RuntimeError: bug in the adapter"),
])
def test_non_retryable_failures_stop_at_once(failure, reason):
    target = ScriptedTarget(failure, GOOD_ANSWER)
    _, generation = generate(make_case(), target, sleep=pytest.fail, clock=Ticks())
    assert target.calls == 1 and generation.error == reason and generation.attempts == 1


def test_recorded_keeps_the_lines_response_without_timing():
    case = make_case()
    new_case, generation = generate(case, RecordedTarget(), sleep=pytest.fail)
    assert new_case.response == case.response
    assert generation.target_kind == "recorded" and generation.response == case.response
    assert generation.latency_ms is None and generation.error is None
    _, missing = generate(make_case(response=None), RecordedTarget())
    assert missing.response is None and missing.error == "no recorded response"


# -- the engine --------------------------------------------------------------------------------------


def test_the_engine_scores_the_targets_answer_not_the_recorded_one(rubric):
    judge = ScriptedJudge()
    stale = evaluate_case(make_case(), rubric, judge)
    fresh = evaluate_case(make_case(), rubric, judge, target=ScriptedTarget(GOOD_ANSWER), arm="control")
    assert stale.generation is None and stale.arm == "candidate"
    assert fresh.arm == "control" and fresh.response == GOOD_ANSWER and fresh.generation.response == GOOD_ANSWER
    assert fresh.status == "scored" and fresh.composite_score > stale.composite_score


def test_a_failed_generation_is_an_error_record_with_its_generation(rubric):
    target = ScriptedTarget(TargetError("HTTP 500: boom", retryable=True), max_attempts=2)
    result = evaluate_case(make_case(), rubric, ScriptedJudge(), target=target, sleep=lambda _s: None)
    assert result.status == "error" and not result.passed and result.composite_score is None
    assert result.dimension_scores == {} and result.judge_calls == 0
    assert result.error == "generation failed: HTTP 500: boom (after 2 attempts)"
    assert result.generation.error == "HTTP 500: boom (after 2 attempts)" and result.generation.attempts == 2
    assert result.response is None  # the recorded answer was not this target's


def test_without_a_target_results_are_todays(rubric):
    cases = [make_case("a"), make_case("b", response=GOOD_ANSWER)]
    today = [evaluate_case(c, rubric, ScriptedJudge()) for c in cases]
    results = evaluate_cases(cases, rubric, ScriptedJudge(), concurrency=2)
    assert [r.model_dump() for r in results] == [r.model_dump() for r in today]
    assert all(r.generation is None and r.arm == "candidate" for r in results)


class ConcurrencyProbe:
    """A python target that counts how many calls are in flight at once."""

    def __init__(self):
        self.lock = threading.Lock()
        self.in_flight = 0
        self.peak = 0

    def __call__(self, request):
        with self.lock:
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
        time.sleep(0.01)  # long enough for the pool to overlap calls if it would
        with self.lock:
            self.in_flight -= 1
        return {"response": GOOD_ANSWER}


@pytest.mark.parametrize("adaptive", [True, False])
def test_the_targets_max_concurrency_caps_the_pool(rubric, adaptive):
    probe = ConcurrencyProbe()
    target = PythonTarget(TargetSpec(kind="python", ref="probe:call", max_concurrency=2), function=probe)
    cases = [make_case(f"case-{i}") for i in range(16)]
    results = evaluate_cases(cases, rubric, ScriptedJudge(), concurrency=8, max_concurrency=16, adaptive=adaptive,
                             target=target)
    assert [r.test_id for r in results] == [c.test_id for c in cases]
    assert all(r.generation.response == GOOD_ANSWER for r in results)
    assert 1 <= probe.peak <= 2
