"""The AIMD controller of the direct engine: additive increase, multiplicative decrease, bounds, and
a slot pool whose size follows the limit. No timing: every step is driven explicitly."""

from __future__ import annotations

import threading

import pytest

from fmquality.run.evaluate import evaluate_cases
from fmquality.judges.base import JudgeOutcome, JudgeVerdict
from fmquality.judges.concurrency import AimdController
from fmquality.domain.case import TestCase


def test_a_throttle_halves_the_limit_once_per_window():
    c = AimdController(16, maximum=64)
    tokens = [c.call_started() for _ in range(4)]  # four calls in flight in the same window
    c.call_finished(tokens[0], "throttled")
    assert c.limit == 8 and c.decreases == 1
    for token in tokens[1:]:  # sent before the cut: counted, not cut again
        c.call_finished(token, "throttled")
    assert c.limit == 8 and c.throttles == 4 and c.decreases == 1
    c.call_finished(c.call_started(), "throttled")  # a call of the new window cuts again
    assert c.limit == 4 and c.decreases == 2


def test_no_second_cut_while_more_slots_are_in_use_than_the_limit():
    c = AimdController(4)
    for _ in range(4):
        c.acquire()
    c.call_finished(c.call_started(), "throttled")
    assert c.limit == 2 and c.in_use == 4
    c.call_finished(c.call_started(), "throttled")  # the cut has not taken effect yet
    assert c.limit == 2
    c.release()
    c.release()
    c.call_finished(c.call_started(), "throttled")
    assert c.limit == 1


def test_successes_add_about_one_slot_per_window():
    c = AimdController(4, maximum=64)
    for _ in range(4):  # one window of four successes
        c.call_finished(c.call_started(), "ok")
    assert 4 <= c.limit <= 5  # +1/limit per success: a little under one slot per window
    for _ in range(6):
        c.call_finished(c.call_started(), "ok")
    assert c.limit == 6
    assert c.successes == 10


def test_limits_stay_within_bounds_and_errors_are_neutral():
    c = AimdController(3, minimum=2, maximum=5)
    for _ in range(100):
        c.call_finished(c.call_started(), "ok")
    assert c.limit == 5
    for _ in range(10):
        c.call_finished(c.call_started(), "throttled")
    assert c.limit == 2
    c.call_finished(c.call_started(), "error")
    assert c.limit == 2 and c.errors == 1
    assert AimdController(100, maximum=10).limit == 10
    with pytest.raises(ValueError):
        AimdController(4, decrease=1.0)


def test_acquire_blocks_at_the_limit_and_a_growing_limit_releases_a_waiter():
    c = AimdController(1, maximum=4)
    c.acquire()
    entered = threading.Event()

    def waiter():
        c.acquire()
        entered.set()

    thread = threading.Thread(target=waiter, daemon=True)
    thread.start()
    assert not entered.wait(0.1)  # blocked: one slot, in use
    c.call_finished(c.call_started(), "ok")  # 1 + 1/1 -> 2 slots
    assert entered.wait(5)
    thread.join(5)
    assert c.in_use == 2 and c.peak_in_use == 2
    with pytest.raises(RuntimeError):
        AimdController(1).release()


class FlakyJudge:
    """Reports to the controller like BedrockJudge; each dimension is throttled on its first two
    attempts (even after the judge's own retries), then answers. Counts every answer given."""

    name, model_id = "flaky", "flaky-v1"

    def __init__(self):
        self.observer = None
        self.attempts: dict[tuple[str, str], int] = {}
        self.verdicts: list[tuple[str, str]] = []
        self.lock = threading.Lock()

    def set_observer(self, observer):
        self.observer = observer

    def judge(self, request, rubric):
        key = (request.case.test_id, request.dimension)
        token = self.observer.call_started()
        with self.lock:
            self.attempts[key] = self.attempts.get(key, 0) + 1
            throttled = self.attempts[key] <= 2
            if not throttled:
                self.verdicts.append(key)
        self.observer.call_finished(token, "throttled" if throttled else "ok")
        if throttled:
            return JudgeOutcome(error="judge failed after 1 attempts: ThrottlingException", throttled=True, calls=1)
        return JudgeOutcome(verdict=JudgeVerdict(sub_scores={n: 1.0 for n in request.sub_scores}, rationale="ok"),
                            calls=1)


def test_requeued_throttles_lose_and_double_count_nothing(rubric):
    cases = [TestCase(test_id=f"chat-{n:02d}", intent="chitchat", query="Hi there!",
                      response=f"Hello! I'm MangaAssist. Looking for something to read today? ({n})")
             for n in range(30)]
    judge = FlakyJudge()
    controller = AimdController(8)
    results = evaluate_cases(cases, rubric, judge, concurrency=8, controller=controller, throttle_requeues=2,
                             sleep=lambda _s: None)
    assert [r.test_id for r in results] == [c.test_id for c in cases]
    assert all(r.status == "scored" for r in results)
    assert len(judge.verdicts) == len(set(judge.verdicts)) == sum(1 for v in judge.attempts.values() if v == 3)
    assert sum(r.judge_calls for r in results) == sum(judge.attempts.values())
    assert controller.throttles == 2 * len(judge.attempts) and controller.decreases >= 1
