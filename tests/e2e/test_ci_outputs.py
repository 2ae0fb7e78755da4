"""`fmquality run`'s CI outputs end to end: junit.xml and summary.md in the output folder (written through
run.layout, so every engine leaves them), the --junit/--summary copies, GitHub's job summary, and
`compare` over run folders with its per-item difference."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from fmquality.cli.common import EXIT_BAD_INPUT, EXIT_GATE_FAILED, EXIT_PASSED
from fmquality.cli.main import main

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _run(out: Path, dataset: str, *extra: str) -> int:
    return main(["run", "--dataset", str(FIXTURES / dataset), "--out", str(out), "--quiet", "--engine", "direct",
                 *extra])


@pytest.fixture(scope="module")
def regressed_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("regressed") / "run"
    assert _run(out, "cli_regressed.jsonl") == EXIT_GATE_FAILED
    return out


def test_a_failed_run_leaves_junit_with_one_case_per_item_and_the_failure_reasons(regressed_run):
    root = ET.parse(regressed_run / "junit.xml").getroot()
    cases = {c.get("name"): c for c in root.iter("testcase")}
    results = {r["test_id"]: r for r in map(json.loads, (regressed_run / "results.jsonl").read_text().splitlines())}
    assert set(cases) == set(results) | {"quality gate"}
    for test_id, result in results.items():
        failure = cases[test_id].find("failure")
        assert (failure is None) == result["passed"]
        if failure is not None:
            assert all(reason in failure.text for reason in result["failure_reasons"])
    gate = cases["quality gate"].find("failure")
    report = json.loads((regressed_run / "report.json").read_text())
    assert gate is not None and gate.text.splitlines() == report["gate"]["reasons"]
    assert int(root.get("failures")) == sum(1 for c in cases.values() if c.find("failure") is not None)


def test_the_summary_gives_the_verdict_the_rows_and_the_failing_items(regressed_run):
    text = (regressed_run / "summary.md").read_text()
    report = json.loads((regressed_run / "report.json").read_text())
    assert text.startswith("## Quality gate FAILED")
    assert f"{report['passed_cases']}/{report['total_cases']} items passed" in text
    for intent in report["intent_breakdown"]:
        assert f"| {intent} |" in text
    assert "`faq-returns-stale`" in text and "`pq-uzumaki-good`" not in text.split("### Failing items")[1]


def test_copies_for_ci_and_the_github_job_summary(tmp_path, monkeypatch):
    step_summary = tmp_path / "step_summary.md"
    step_summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step_summary))
    code = _run(tmp_path / "out", "cli_good.jsonl", "--junit", str(tmp_path / "ci" / "fmq.xml"),
                "--summary", str(tmp_path / "ci" / "fmq.md"))
    assert code == EXIT_PASSED
    assert (tmp_path / "ci" / "fmq.xml").read_bytes() == (tmp_path / "out" / "junit.xml").read_bytes()
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert (tmp_path / "ci" / "fmq.md").read_text() == summary
    assert step_summary.read_text() == "earlier step\n" + summary + "\n"
    assert ET.parse(tmp_path / "ci" / "fmq.xml").getroot().find(".//failure") is None


def _flip(run: Path, into: Path, test_id: str, passed: bool) -> Path:
    shutil.copytree(run, into)
    lines = []
    for line in (into / "results.jsonl").read_text().splitlines():
        result = json.loads(line)
        if result["test_id"] == test_id:
            result.update(passed=passed, failure_reasons=[] if passed else ["planted for the test"])
        lines.append(json.dumps(result))
    (into / "results.jsonl").write_text("\n".join(lines) + "\n")
    return into


def test_compare_takes_run_folders_and_separates_new_failures_from_failures_in_both(regressed_run, tmp_path, capsys):
    # regressed_run: faq-returns-stale fails, pq-uzumaki-good passes. The candidate also fails pq-uzumaki-good.
    candidate = _flip(regressed_run, tmp_path / "candidate", "pq-uzumaki-good", passed=False)
    code = main(["compare", str(regressed_run), str(candidate)])
    printed = capsys.readouterr().out
    assert code in (EXIT_PASSED, EXIT_GATE_FAILED)
    new = printed.split("new failures")[1].split("fixed")[0]
    both = printed.split("still failing")[1]
    assert "pq-uzumaki-good" in new and "planted for the test" in new and "faq-returns-stale" not in new
    assert "faq-returns-stale" in both and "pq-uzumaki-good" not in both


def test_compare_accepts_a_report_file_and_refuses_a_folder_without_a_report(regressed_run, tmp_path, capsys):
    assert main(["compare", str(regressed_run / "report.json"), str(regressed_run)]) == EXIT_PASSED
    assert "new failures (failing now, passing in the baseline): 0" in capsys.readouterr().out
    assert main(["compare", str(tmp_path), str(regressed_run)]) == EXIT_BAD_INPUT
    assert "no report.json there" in capsys.readouterr().err


def test_the_example_runs_from_any_folder_and_explains_itself(tmp_path, monkeypatch, capsys):
    # From a folder with nothing in it: the shipped golden set and catalog come from the checkout (or,
    # installed, from fmquality/bundled/). Not a terminal here, so progress is printed as lines.
    monkeypatch.chdir(tmp_path)
    code = main(["run", "--example", "--engine", "direct", "--filter", "intent=faq", "--out", "out"])
    printed = capsys.readouterr()
    assert code == EXIT_GATE_FAILED
    assert "defective on purpose" in printed.out and "FAILS by design" in printed.out
    assert "scoring candidate: 18/18 items (100%)" in printed.err
    assert f"report: {tmp_path / 'out' / 'report.html'}" in printed.out
    assert {"report.html", "report.json", "junit.xml", "summary.md"} <= {p.name for p in (tmp_path / "out").iterdir()}
    assert json.loads((tmp_path / "out" / "report.json").read_text())["catalog"]
