"""A sampled production run's report carries the monitor status; a golden run's does not."""

from fmquality.scoring.composite import combine
from fmquality.domain.scores import DimensionScore
from fmquality.domain.case import TestCase
from fmquality.report.html import render_html
from fmquality.config.rubric import load_rubric
from fmquality.run.aggregate import RunFacts, assemble_report

RUBRIC = load_rubric()


def _report(results, dataset: str):
    facts = RunFacts(run_id="r", dataset=dataset, trigger="manual", judge="offline", engine="direct",
                     started_at=None, finished_at=None)
    return assemble_report({"candidate": results}, RUBRIC, facts)


def _result(test_id: str, score: float, tags: list[str], locale: str = "en-US"):
    case = TestCase(test_id=test_id, intent="faq", locale=locale, query="How long do returns take?",
                    response="Within 15 days.", tags=tags)
    scores = {d: DimensionScore(dimension=d, status="scored", score=score, sub_scores={}) for d in RUBRIC.dimensions}
    return combine(case, RUBRIC, scores)


def test_production_sample_gets_a_monitor_block_with_thresholds_from_the_rubric():
    passing = [_result(f"p{i}", 0.95, ["production"]) for i in range(8)]
    failing = [_result(f"f{i}", 0.40, ["production"]) for i in range(4)]
    report = _report(passing + failing, "sample.jsonl")
    monitor = report.monitor
    assert monitor is not None
    # 8/12 = 0.67 is below the rubric's critical pass rate (0.70).
    assert RUBRIC.production.monitor.critical_pass_rate == 0.70
    assert monitor["overall"]["status"] == "critical"
    assert monitor["overall"]["total"] == 12 and monitor["overall"]["passed"] == 8
    assert "Monitor status: critical" in render_html(report, passing + failing)


def test_a_run_that_is_not_a_production_sample_has_no_monitor_block():
    results = [_result("g1", 0.95, ["policy"]), _result("g2", 0.95, ["production"])]
    assert _report(results, "golden.jsonl").monitor is None


def test_an_item_none_of_whose_dimensions_applies_is_unscored_not_divided_by_zero():
    case = TestCase(test_id="n", intent="faq", query="Hi", response="Hello!")
    scores = {d: DimensionScore(dimension=d, status="not_applicable", unscored_reason="nothing to grade")
              for d in RUBRIC.dimensions}
    result = combine(case, RUBRIC, scores)
    assert result.status == "unscored" and result.composite_score is None and not result.passed
    assert any("nothing was graded" in r for r in result.failure_reasons)
