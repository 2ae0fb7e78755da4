"""The line beside an item's verdict on the page (report.verdict_rule): a passing item that shows a low
sub-score in red says which rule let it pass (no hard failure, no judge verdict at its lowest level, the
composite at or over its threshold) and that its low readings only weigh in the composite; a failing item
names the rule that failed it. And the CLI's closing note links the gate's misses against the labels to
the page's label filter."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from fmquality.cli.run_outputs import closing_note
from fmquality.config.rubric import load_rubric
from fmquality.domain.case import TestCase
from fmquality.domain.scores import DimensionScore, HardFailure
from fmquality.report.page_items import item_record
from fmquality.report.verdict_rule import RULE, verdict_line
from fmquality.run.summary import summarize
from fmquality.schemes.mangaassist import DIMENSIONS
from fmquality.scoring.composite import combine

RUBRIC = load_rubric()
CASE = TestCase(test_id="pq-1", intent="product_question", query="Is vol. 3 in stock?", response="Yes, in stock.")


def _scores(**dims: DimensionScore) -> dict[str, DimensionScore]:
    plain = {d: DimensionScore(dimension=d, status="scored", score=1.0) for d in DIMENSIONS}
    return {**plain, **dims}


def _heuristic_low_factual() -> DimensionScore:
    # A heuristic reading of 0.38 with weight 0.05: the dimension shows 0.38 but costs the composite little.
    return DimensionScore(dimension="factual_accuracy", status="scored", score=0.38,
                          sub_scores={"no_hallucination": 0.38}, judged=["no_hallucination"],
                          weights={"no_hallucination": 0.05})


def test_a_passing_item_with_a_red_sub_score_says_it_only_weighs():
    result = combine(CASE, RUBRIC, _scores(factual_accuracy=_heuristic_low_factual()))
    assert result.passed and result.dimension_scores["factual_accuracy"].score < 0.6
    line = verdict_line(result)
    assert line == (f"passes: no hard failure, no judge verdict at its lowest level, composite "
                    f"{result.composite_score:.3f} ≥ threshold 0.80; low sub-scores only weigh in the composite: "
                    "factual_accuracy.no_hallucination 0.38 (a heuristic reading, weight 0.05)")
    assert item_record(result)["why"] == line  # the page shows it near the verdict


def test_a_clean_pass_names_no_low_reading():
    result = combine(CASE, RUBRIC, _scores())
    assert verdict_line(result) == (f"passes: no hard failure, no judge verdict at its lowest level, composite "
                                    f"{result.composite_score:.3f} ≥ threshold 0.80")


def test_a_summary_names_its_low_dimensions():
    result = combine(CASE, RUBRIC, _scores(fluency=DimensionScore(dimension="fluency", status="scored", score=0.5)))
    assert result.passed  # the composite carries it; the summary has no sub-scores, so the dimension is named
    assert verdict_line(summarize(result)).endswith("only weigh in the composite: fluency 0.50")


def test_a_hard_failure_fails_whatever_the_composite():
    failure = HardFailure(rule="price_contradiction", dimension="factual_accuracy", sub_score="price_accuracy",
                          detail="$9.99 against the catalog's $12.99")
    factual = DimensionScore(dimension="factual_accuracy", status="scored", score=0.9, hard_failures=[failure])
    result = combine(CASE, RUBRIC, _scores(factual_accuracy=factual))
    assert not result.passed and result.composite_score >= result.threshold
    line = verdict_line(result)
    assert line.startswith("fails: hard failure price_contradiction (an evidence-backed finding fails an item on its own)")
    assert line.endswith(f"whatever its composite ({result.composite_score:.3f} ≥ 0.80)")


def test_a_low_composite_and_a_judges_lowest_level_are_named():
    low = combine(CASE, RUBRIC, _scores(**{d: DimensionScore(dimension=d, status="scored", score=0.5)
                                           for d in ("relevance", "factual_accuracy")}))
    assert not low.passed and verdict_line(low) == f"fails: composite {low.composite_score:.3f} < threshold 0.80"
    lowest = low.model_copy(update={"failure_reasons": ["fluency.tone = 0.00: the judge's lowest level"],
                                    "composite_score": 0.9})
    assert verdict_line(lowest) == ("fails: the judge's lowest level on fluency.tone (fails an item on its own); "
                                    "whatever its composite (0.900 ≥ 0.80)")


def test_no_verdict_lines_for_unscored_and_error_items_and_the_rule_is_stated():
    unscored = combine(CASE, RUBRIC, _scores(fluency=DimensionScore(dimension="fluency", status="unscored",
                                                                    unscored_reason="judge down")))
    assert verdict_line(unscored).startswith("no verdict: a dimension is unscored")
    assert verdict_line(unscored.model_copy(update={"status": "error"})) is None
    assert "hard failure" in RULE and "lowest level" in RULE and "only weighs in the composite" in RULE


def test_the_closing_note_links_the_gates_misses_to_the_label_filter(tmp_path: Path):
    report = SimpleNamespace(gate=SimpleNamespace(passed=False),
                             calibration=SimpleNamespace(defective_passed=3, acceptable_failed=1))
    note = closing_note(tmp_path, report, example=False)
    page = (tmp_path / "report.html").absolute().as_uri()
    assert f"defective that passed: {page}#filter=label=defective&status=passed" in note
    assert f"acceptable that failed: {page}#filter=label=acceptable&status=notpassed" in note
    clean = SimpleNamespace(gate=SimpleNamespace(passed=True),
                            calibration=SimpleNamespace(defective_passed=0, acceptable_failed=0))
    assert "#filter=" not in closing_note(tmp_path, clean, example=False)
