"""A rubric profile other than MangaAssist, through the real state machine: the Parallel runs the
profile's dimensions (one scorer function each) and the items score as the direct engine scores them."""

from __future__ import annotations

import json
from pathlib import Path

from fmquality.cli.common import EXIT_GATE_FAILED, EXIT_PASSED
from fmquality.cli.main import main

REPO = Path(__file__).resolve().parents[2]
TOOL_USE = REPO / "datasets" / "tool_use" / "examples.jsonl"
TOOL_USE_RUBRIC = REPO / "datasets" / "rubrics" / "tool-use-v1.yaml"
TOOL_USE_DIMENSIONS = {"tool_usage", "keyword_quality", "error_handling"}


def _ten_cases(tmp_path: Path) -> Path:
    """Every sixth case: ten cases across the categories, good and defective ones."""
    lines = [line for line in TOOL_USE.read_text(encoding="utf-8").splitlines() if line.strip()]
    path = tmp_path / "tool_use_10.jsonl"
    path.write_text("\n".join(lines[::6][:10]) + "\n", encoding="utf-8")
    return path


def _run(dataset: Path, out: Path, engine: str) -> dict[str, dict]:
    code = main(["run", "--engine", engine, "--rubric", str(TOOL_USE_RUBRIC), "--dataset", str(dataset),
                 "--run-id", "profiles-e2e", "--out", str(out), "--quiet"])
    assert code in (EXIT_PASSED, EXIT_GATE_FAILED), code
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text(encoding="utf-8").splitlines() if line]
    return {r["test_id"]: r for r in rows}


def test_tool_use_cases_score_through_the_state_machine_as_in_process(tmp_path):
    dataset = _ten_cases(tmp_path)
    machine = _run(dataset, tmp_path / "sfn", "stepfunctions-local")
    direct = _run(dataset, tmp_path / "direct", "direct")

    assert len(machine) == 10
    for test_id, result in machine.items():
        assert result["status"] != "error", (test_id, result.get("error"))
        assert set(result["dimension_scores"]) == TOOL_USE_DIMENSIONS
        assert result["grade"] in {"A", "B", "C", "D", "F"}, test_id
        assert result["total_100"] is not None
    assert machine == direct

    report = json.loads((tmp_path / "sfn" / "report.json").read_text(encoding="utf-8"))
    assert report["engine"] == "stepfunctions-local"
