"""Composite weighting, hard failures, the run-level gate and the baseline comparison."""

from __future__ import annotations

import pytest

from fmquality.scoring.composite import combine, error_result
from fmquality.domain.scores import DimensionScore, HardFailure
from fmquality.schemes.mangaassist import DIMENSIONS
from fmquality.domain.case import TestCase
from fmquality.report.build import build_report, gate_summary
from fmquality.config.rubric import load_rubric

RUBRIC = load_rubric()


def _case(test_id="c1", intent="faq", locale="en-US", tags=()):
    return TestCase(test_id=test_id, intent=intent, locale=locale, query="q?", response="a.", tags=list(tags))


def _scores(values: dict[str, float | None], hard: list[HardFailure] | None = None) -> dict[str, DimensionScore]:
    out = {}
    for d in DIMENSIONS:
        v = values.get(d, 1.0)
        if v is None:
            out[d] = DimensionScore(dimension=d, status="unscored", unscored_reason="judge failed after 5 attempts")
        else:
            out[d] = DimensionScore(dimension=d, status="scored", score=v, sub_scores={"x": v})
    if hard:
        out["factual_accuracy"].hard_failures = hard
    return out


def test_composite_uses_the_intent_weights(rubric):
    values = {"relevance": 1.0, "factual_accuracy": 0.6, "consistency": 1.0, "fluency": 1.0}
    faq = combine(_case(intent="faq"), rubric, _scores(values))
    chit = combine(_case(intent="chitchat"), rubric, _scores(values))
    assert faq.composite_score == pytest.approx(1 - 0.40 * 0.4)
    assert chit.composite_score == pytest.approx(1 - 0.10 * 0.4)
    assert not faq.passed and chit.passed
    assert any("below the faq threshold 0.85" in r for r in faq.failure_reasons)
    assert faq.rubric_version == rubric.version


def test_hard_failure_fails_a_perfect_item_and_names_dimension_and_sub_score(rubric):
    hard = [HardFailure(rule="policy_contradiction", dimension="factual_accuracy", sub_score="policy_accuracy",
                        detail="30 days vs 15 days in the knowledge base")]
    result = combine(_case(), rubric, _scores({}, hard))
    assert result.composite_score == 1.0 and not result.passed
    assert any("factual_accuracy.policy_accuracy" in r and "30 days" in r for r in result.failure_reasons)


def test_unscored_dimension_makes_the_item_unscored_without_a_number(rubric):
    result = combine(_case(), rubric, _scores({"fluency": None}))
    assert result.status == "unscored" and result.composite_score is None and not result.passed
    assert any("fluency: unscored" in r for r in result.failure_reasons)


def test_unscored_dimension_cannot_carry_a_score():
    with pytest.raises(ValueError):
        DimensionScore(dimension="fluency", status="unscored", score=0.5, unscored_reason="x")
    with pytest.raises(ValueError):
        DimensionScore(dimension="fluency", status="unscored")


def _run(rubric, items, baseline=None):
    return build_report(items, rubric, run_id="r", dataset="d.jsonl", baseline=baseline)


def _passing(n, intent="faq", **kw):
    return [combine(_case(f"{intent}-{i}", intent, **kw), RUBRIC, _scores({})) for i in range(n)]


def test_all_passing_run_passes_with_breakdowns(rubric):
    items = _passing(10) + _passing(5, intent="chitchat", locale="ja-JP")
    report = _run(rubric, items)
    assert report.gate.passed and report.gate.reasons == []
    assert report.intent_breakdown["chitchat"].total == 5
    assert report.locale_breakdown["ja-JP"].pass_rate == 1.0
    assert report.dimension_averages["fluency"] == 1.0


def test_failing_regression_item_fails_the_run(rubric):
    bad = combine(_case("reg-1", tags=["regression"]), rubric, _scores({"factual_accuracy": 0.3}))
    report = _run(rubric, _passing(30) + [bad])
    assert not report.gate.passed
    assert any(r.startswith("regression item reg-1 failed") for r in report.gate.reasons)
    assert report.tag_breakdown["regression"].passed == 0


def test_intent_pass_rate_below_minimum(rubric):
    fails = [combine(_case(f"f{i}"), rubric, _scores({"factual_accuracy": 0.3})) for i in range(2)]
    report = _run(rubric, _passing(8) + fails)  # 8/10 = 0.8 < 0.9
    assert any("intent faq pass rate 0.80 below 0.90" in r for r in report.gate.reasons)


def test_unscored_share_above_limit_fails_closed(rubric):
    unscored = [combine(_case(f"u{i}"), rubric, _scores({"relevance": None})) for i in range(3)]
    report = _run(rubric, _passing(97, intent="chitchat") + unscored)
    assert report.unscored_cases == 3
    assert any("3/100 items unscored" in r and "failing closed" in r for r in report.gate.reasons)
    # two in a hundred is within the 2% limit: that rule is not broken
    report_ok = _run(rubric, _passing(98, intent="chitchat") + unscored[:2])
    assert not any("unscored" in r for r in report_ok.gate.reasons)


def test_error_records_count_as_unscored(rubric):
    err = error_result({"test_id": "x", "intent": "faq"}, rubric, "Lambda timed out")
    report = _run(rubric, _passing(10) + [err])
    assert report.unscored_cases == 1 and report.error_cases == 1 and not report.gate.passed


def test_baseline_drop_flags_overall_and_subsets(rubric):
    base = _run(rubric, _passing(10) + _passing(10, intent="chitchat", locale="ja-JP"))
    worse_ja = [combine(_case(f"chitchat-{i}", "chitchat", locale="ja-JP"), rubric,
                        _scores({"fluency": 0.9})) for i in range(10)]
    cand = _run(rubric, _passing(10) + worse_ja, baseline=base)
    subsets = {f.subset for f in cand.regression_flags}
    assert {"overall", "intent:chitchat", "locale:ja-JP"} <= subsets
    assert "intent:faq" not in subsets
    assert not cand.gate.passed and cand.baseline_run_id == "r"
    assert "gate rule(s) broken" in gate_summary(cand)


def test_small_drop_within_tolerance_is_not_flagged(rubric):
    base = _run(rubric, _passing(10, intent="chitchat"))
    slightly = [combine(_case(f"chitchat-{i}", "chitchat"), rubric, _scores({"fluency": 0.99})) for i in range(10)]
    cand = _run(rubric, slightly, baseline=base)  # drop 0.003 <= 0.005
    assert cand.regression_flags == [] and cand.gate.passed


def test_empty_run_never_passes(rubric):
    assert not _run(rubric, []).gate.passed


def test_calibration_counts_disagreements_with_labels(rubric):
    def labelled(test_id, acceptable, fa):
        case = TestCase.model_validate({**_case(test_id).model_dump(), "label": {"acceptable": acceptable}})
        return combine(case, rubric, _scores({"factual_accuracy": fa}))

    items = [labelled("g1", True, 1.0), labelled("g2", True, 0.2), labelled("b1", False, 0.2),
             labelled("b2", False, 1.0), labelled("b3", False, 0.1)]
    cal = _run(rubric, items + _passing(2)).calibration
    assert (cal.labelled, cal.acceptable, cal.defective) == (5, 2, 3)
    assert cal.acceptable_failed_ids == ["g2"] and cal.defective_passed_ids == ["b2"]
    assert cal.acceptable_failed_rate == 0.5 and cal.defective_passed_rate == pytest.approx(1 / 3, abs=1e-4)
    assert _run(rubric, _passing(2)).calibration is None


def test_a_judge_verdict_at_its_lowest_level_fails_a_high_composite(rubric):
    scores = _scores({})
    scores["consistency"] = DimensionScore(dimension="consistency", status="scored", score=0.75, judged=["persona"],
                                           sub_scores={"intra_turn": 1.0, "cross_turn": 1.0, "persona": 0.0})
    result = combine(_case(intent="chitchat"), rubric, scores)
    assert result.composite_score > rubric.threshold_for("chitchat") and not result.passed
    assert "consistency.persona = 0.00: the judge's lowest level" in result.failure_reasons
    # One level up is a weakness the composite weighs, not a failure of its own.
    scores["consistency"] = DimensionScore(dimension="consistency", status="scored", score=0.9, judged=["persona"],
                                           sub_scores={"intra_turn": 1.0, "cross_turn": 1.0, "persona": 0.25})
    assert combine(_case(intent="chitchat"), rubric, scores).passed


def test_a_low_style_score_from_the_checks_counts_through_the_composite_only(rubric):
    """A check-settled sub-score that is no finding of its own (a missing romanization lowers
    formatting) never fails an item alone: only hard failures and the judge's lowest level do."""
    scores = _scores({})
    scores["fluency"] = DimensionScore(dimension="fluency", status="scored", score=0.72, judged=["grammar", "tone"],
                                       sub_scores={"grammar": 1.0, "tone": 1.0, "formatting": 0.2})
    result = combine(_case(intent="recommendation"), rubric, scores)
    assert result.passed and result.composite_score < 1.0


def test_the_older_sub_score_floor_still_applies_where_a_rubric_asks_for_it(rubric):
    floored = rubric.model_copy(update={"item_gate": rubric.item_gate.model_copy(update={"min_sub_score": 0.6})})
    scores = _scores({})
    scores["fluency"] = DimensionScore(dimension="fluency", status="scored", score=0.72,
                                       sub_scores={"grammar": 1.0, "tone": 1.0, "formatting": 0.2})
    result = combine(_case(intent="recommendation"), floored, scores)
    assert not result.passed
    assert any(r.startswith("fluency.formatting = 0.20 is below the 0.60 floor") for r in result.failure_reasons)
