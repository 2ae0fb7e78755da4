"""`fmquality run` end to end on small fixture datasets: outputs, contract fields and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fmquality.cli.common import EXIT_BAD_INPUT, EXIT_GATE_FAILED, EXIT_PASSED
from fmquality.cli.main import main

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
RESULT_FIELDS = {"test_id", "intent", "locale", "status", "passed", "composite_score", "threshold",
                 "dimension_scores", "hard_failures", "failure_reasons", "judge_calls", "rubric_version", "label"}
REPORT_FIELDS = {"run_id", "trigger", "dataset", "rubric_version", "judge", "total_cases", "passed_cases",
                 "failed_cases", "unscored_cases", "pass_rate", "dimension_averages", "intent_breakdown",
                 "locale_breakdown", "tag_breakdown", "regression_flags", "gate", "judge_usage"}


def _run(tmp_path, dataset, *extra) -> tuple[int, Path]:
    out = tmp_path / "out"
    code = main(["run", "--dataset", str(FIXTURES / dataset), "--out", str(out), "--quiet", *extra])
    return code, out


def _results(out: Path) -> dict[str, dict]:
    lines = (out / "results.jsonl").read_text(encoding="utf-8").splitlines()
    return {r["test_id"]: r for r in map(json.loads, lines)}


@pytest.mark.parametrize("judge", ["offline", "scripted"])
def test_good_dataset_passes_and_writes_the_output_contract(tmp_path, judge):
    code, out = _run(tmp_path, "cli_good.jsonl", "--judge", judge)
    assert code == EXIT_PASSED
    results = _results(out)
    assert set(results) == {"faq-returns-good", "pq-uzumaki-good"}
    for result in results.values():
        assert RESULT_FIELDS <= set(result)
        assert set(result["dimension_scores"]) == {"relevance", "factual_accuracy", "consistency", "fluency", "safety"}
        for dim in result["dimension_scores"].values():
            assert {"score", "confidence", "sub_scores", "evidence", "status"} <= set(dim)
        assert result["rubric_version"] == "mangaassist-v3" and result["label"] == {"acceptable": True}
    report = json.loads((out / "report.json").read_text())
    assert REPORT_FIELDS <= set(report)
    assert report["gate"] == {"passed": True, "reasons": []} and report["total_cases"] == 2
    html = (out / "report.html").read_text()
    assert "PASSED" in html and "<svg" in html and "http" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "")


def test_regressed_dataset_fails_with_exit_1_and_says_why(tmp_path):
    code, out = _run(tmp_path, "cli_regressed.jsonl")
    assert code == EXIT_GATE_FAILED
    stale = _results(out)["faq-returns-stale"]
    assert not stale["passed"]
    assert any(h["rule"] == "policy_contradiction" for h in stale["hard_failures"])
    report = json.loads((out / "report.json").read_text())
    assert not report["gate"]["passed"]
    assert any("hard failure" in r for r in report["gate"]["reasons"])
    assert any("regression item faq-returns-stale failed" in r for r in report["gate"]["reasons"])
    html = (out / "report.html").read_text()
    assert "faq-returns-stale" in html
    # Both lines are labelled: the Aggregate Lambda's report carries kappa per intent and locale.
    calibration = report["calibration"]
    assert calibration["kappa"]["n"] == 2
    assert set(calibration["kappa_by_intent"]) == {"faq", "product_question"}
    assert set(calibration["kappa_by_locale"]) == {"en-US"}
    assert "Agreement with the human labels" in html and "intent product_question" in html


def test_invalid_lines_reject_the_whole_file_with_exit_2(tmp_path, capsys):
    code, out = _run(tmp_path, "cli_invalid.jsonl")
    assert code == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "cli_invalid.jsonl:2: intent:" in err and "haggling" in err
    assert "cli_invalid.jsonl:3: <line>: not valid JSON" in err
    assert not (out / "results.jsonl").exists()


def test_skip_invalid_evaluates_valid_lines_and_writes_rejected(tmp_path):
    code, out = _run(tmp_path, "cli_invalid.jsonl", "--skip-invalid", "--judge", "scripted")
    assert code in (EXIT_PASSED, EXIT_GATE_FAILED)
    assert set(_results(out)) == {"faq-returns-good", "pq-2"}
    rejected = [json.loads(x) for x in (out / "rejected.jsonl").read_text().splitlines()]
    assert [(r["line"], r["field"]) for r in rejected] == [(2, "intent"), (3, "<line>")]
    assert json.loads((out / "report.json").read_text())["rejected_lines"] == 2


def test_missing_dataset_and_bad_usage_exit_2(tmp_path, capsys):
    code, _ = _run(tmp_path, "does-not-exist.jsonl")
    assert code == EXIT_BAD_INPUT and "cannot read dataset" in capsys.readouterr().err
    with pytest.raises(SystemExit) as info:
        main(["run"])
    assert info.value.code == EXIT_BAD_INPUT


def test_judge_failure_is_unscored_and_fails_closed(tmp_path):
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"pq-uzumaki-good/fluency": "judge failed after 5 attempts: ThrottlingException"}))
    code, out = _run(tmp_path, "cli_good.jsonl", "--judge", "scripted", "--judge-script", str(script),
                     "--engine", "direct")
    assert code == EXIT_GATE_FAILED
    result = _results(out)["pq-uzumaki-good"]
    assert result["status"] == "unscored" and result["composite_score"] is None
    assert result["dimension_scores"]["fluency"]["score"] is None
    report = json.loads((out / "report.json").read_text())
    assert report["unscored_cases"] == 1
    assert any("failing closed" in r for r in report["gate"]["reasons"])


def test_baseline_comparison_flags_the_dropped_subset(tmp_path):
    code, base_out = _run(tmp_path, "cli_good.jsonl", "--judge", "scripted")
    assert code == EXIT_PASSED
    cand_out = tmp_path / "cand"
    code = main(["run", "--dataset", str(FIXTURES / "cli_regressed.jsonl"), "--out", str(cand_out), "--quiet",
                 "--judge", "scripted", "--baseline", str(base_out / "report.json")])
    assert code == EXIT_GATE_FAILED
    flags = json.loads((cand_out / "report.json").read_text())["regression_flags"]
    assert "intent:faq" in {f["subset"] for f in flags}
