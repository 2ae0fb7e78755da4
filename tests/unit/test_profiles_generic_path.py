"""The P1 profile behaviour through the generic path: rubric validation against the profile, checks
that settle, dimensions that do not apply, no signal, the grade block, and the CLI's --filter."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from fmquality.cli.common import EXIT_GATE_FAILED, EXIT_PASSED
from fmquality.cli.main import main
from fmquality.scoring.composite import combine
from fmquality.run.evaluate import score_one_dimension
from fmquality.judges.factory import make_judge
from fmquality.domain.scores import DimensionScore
from fmquality.domain.case import TestCase
from fmquality.domain.errors import RubricError
from fmquality.config.rubric import load_rubric, parse_rubric

ROOT = Path(__file__).resolve().parents[2]
RA_RUBRIC = ROOT / "datasets" / "rubrics" / "research-agent-v1.yaml"
TU_RUBRIC = ROOT / "datasets" / "rubrics" / "tool-use-v1.yaml"
TU_EXAMPLES = ROOT / "datasets" / "tool_use" / "examples.jsonl"
RA_EXAMPLES = ROOT / "datasets" / "research_agent" / "examples.jsonl"


def _case(path: Path, test_id: str, **changes) -> TestCase:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    (row,) = [r for r in rows if r["test_id"] == test_id]
    return TestCase.model_validate({**row, **changes})


@pytest.fixture(scope="module")
def offline():
    return make_judge("offline", None)


def test_rubric_intents_must_be_the_profile_categories():
    raw = yaml.safe_load(TU_RUBRIC.read_text(encoding="utf-8"))
    del raw["intents"]["weather"]
    with pytest.raises(RubricError, match="intents must be exactly"):
        parse_rubric(yaml.safe_dump(raw), "tool-use-missing-weather")
    raw = yaml.safe_load(TU_RUBRIC.read_text(encoding="utf-8"))
    raw["intents"]["recommendation"] = raw["intents"]["weather"]  # a MangaAssist intent
    with pytest.raises(RubricError, match="unknown \\['recommendation'\\]"):
        parse_rubric(yaml.safe_dump(raw), "tool-use-extra-intent")


def test_a_check_with_evidence_settles_without_the_judge(offline):
    rubric = load_rubric(TU_RUBRIC)
    score = score_one_dimension("tool_usage", _case(TU_EXAMPLES, "tu-order-en-ok"), rubric, offline)
    assert score.status == "scored" and score.score is not None
    assert score.judge_calls == 0
    assert score.evidence, "a settled check names what it found"


def test_without_tool_calls_tool_efficiency_does_not_apply_and_weights_renormalise(offline):
    rubric = load_rubric(RA_RUBRIC)
    case = _case(RA_EXAMPLES, "ra-solar-ok-no-tools")
    assert not case.tool_calls
    score = score_one_dimension("tool_efficiency", case, rubric, offline)
    assert score.status == "not_applicable" and score.score is None and "no tool calls" in score.unscored_reason

    values = {"factual_accuracy": 0.6, "completeness": 1.0, "citation_accuracy": 0.8, "source_quality": 0.3}
    scores = {d: DimensionScore(dimension=d, status="scored", score=v, sub_scores={d: v}, confidence=1.0)
              for d, v in values.items()}
    scores["tool_efficiency"] = score
    result = combine(case, rubric, scores, run_id="r")
    # Weights 0.30/0.25/0.15/0.10 over the four that apply (0.80), not 0.20 of tool efficiency at 0 or 1.
    assert result.composite_score == pytest.approx((0.30 * 0.6 + 0.25 * 1.0 + 0.15 * 0.8 + 0.10 * 0.3) / 0.80, abs=1e-4)


def test_no_signal_leaves_a_dimension_unscored_never_a_default(offline):
    rubric = load_rubric(RA_RUBRIC)
    case = _case(RA_EXAMPLES, "ra-solar-ok-no-tools", sources=[], retrieved_chunks=[], citations=[])
    for dimension in ("factual_accuracy", "citation_accuracy", "source_quality"):
        score = score_one_dimension(dimension, case, rubric, offline)
        assert score.status == "unscored", dimension
        assert score.score is None and score.unscored_reason, dimension


def _run(tmp_path: Path, *extra: str) -> dict:
    code = main(["run", "--engine", "direct", "--rubric", str(TU_RUBRIC), "--dataset", str(TU_EXAMPLES),
                 "--out", str(tmp_path), "--quiet", *extra])
    assert code in (EXIT_PASSED, EXIT_GATE_FAILED)
    return json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))


def test_cli_filter_scores_the_subset_and_the_report_says_so(tmp_path):
    report = _run(tmp_path, "--filter", "category=refund;locale=ja-JP")
    rows = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    assert rows and {(r["intent"], r["locale"]) for r in rows} == {("refund", "ja-JP")}
    assert report["total_cases"] == len(rows)
    assert "refund" in report["filter"] and "ja-JP" in report["filter"]


def test_report_grade_block_counts_every_graded_case(tmp_path):
    report = _run(tmp_path, "--filter", "category=weather,calendar")
    grades = report["grades"]
    assert sum(grades["cases"].values()) == report["total_cases"]
    assert set(grades["categories"]) == {"weather", "calendar"}
    for block in grades["categories"].values():
        assert sum(block["grades"].values()) == block["cases"]
        assert block["grade"] in {"A", "B", "C", "D", "F"}
    assert grades["grade"] in {"A", "B", "C", "D", "F"} and 0 <= grades["mean_total"] <= 100
