"""The agreement of verdicts with labels (kappa overall, per intent, per locale) and the ratings read
from a line, against values computed by hand (the statistics themselves: test_stats.py)."""

from __future__ import annotations

import math

import pytest

from fmquality.domain.results import EvaluationResult
from fmquality.report.agreement import calibrate


def _result(test_id, intent, locale, passed, acceptable=None, status="scored"):
    return EvaluationResult(test_id=test_id, intent=intent, locale=locale, status=status, passed=passed,
                            threshold=0.8, rubric_version="test",
                            label=None if acceptable is None else {"acceptable": acceptable})


def test_run_calibration_gives_kappa_overall_per_intent_and_per_locale():
    results = [
        _result("faq-1", "faq", "en-US", True, True),
        _result("faq-2", "faq", "en-US", False, False),
        _result("faq-3", "faq", "ja-JP", False, True, status="unscored"),  # an unscored item fails
        _result("chat-1", "chitchat", "ja-JP", True, False),
        _result("chat-2", "chitchat", "ja-JP", True, True),
        _result("chat-3", "chitchat", "en-US", True),  # unlabelled: not counted
    ]
    cal = calibrate(results)
    assert (cal.labelled, cal.acceptable_failed, cal.defective_passed) == (5, 1, 1)
    # All: PA 2, PD 1, FA 1, FD 1; p_o = 3/5, p_e = (3*3 + 2*2)/25 = 13/25, kappa = (15-13)/(25-13) = 1/6.
    assert cal.kappa.value == pytest.approx(1 / 6, abs=1e-4) and cal.kappa.n == 5
    # faq: PA 1, FD 1, FA 1: p_o = 2/3, p_e = (1*2 + 2*1)/9 = 4/9, kappa = (6-4)/(9-4) = 0.4.
    assert cal.kappa_by_intent["faq"].value == 0.4
    assert cal.kappa_by_intent["chitchat"].undefined_reason == "every item passed"
    # en-US: PA 1, FD 1 -> 1.0; ja-JP: FA 1, PD 1, PA 1: p_o = 1/3, p_e = (2*2 + 1*1)/9 = 5/9 -> -0.5.
    assert cal.kappa_by_locale["en-US"].value == 1.0
    assert cal.kappa_by_locale["ja-JP"].value == -0.5
    assert list(cal.kappa_by_intent) == ["chitchat", "faq"]
    assert calibrate([_result("x", "faq", "en-US", True)]) is None


def test_ratings_are_read_by_dotted_path_from_the_line():
    from fmquality.report.calibration import rating_value
    from fmquality.domain.case import TestCase

    case = TestCase.model_validate({"test_id": "t", "intent": "faq", "query": "q", "label": {"acceptable": False},
                                    "human": {"naturalness": 4.5, "overall": "good", "raters": {"n": 3}, "x": math.nan}})
    assert case.metadata["human"]["naturalness"] == 4.5  # unknown fields live in metadata
    assert rating_value(case, "human.naturalness") == 4.5
    assert rating_value(case, "human.raters.n") == 3.0
    assert rating_value(case, "label.acceptable") == 0.0  # a boolean reads as 0/1
    for missing in ("human.overall", "human.x", "human.missing", "human.naturalness.deeper", "nothing", "query"):
        assert rating_value(case, missing) is None, missing
