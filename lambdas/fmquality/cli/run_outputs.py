"""What `fmquality run` says around a run: the notice before the shipped example starts (its gate fails
by design), the closing note (where report.html is and what to read first), and the CI copies of the
run's junit.xml and summary.md (--junit, --summary, GitHub's job summary)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from fmquality.report.page import ACCEPTABLE_FAILED, DEFECTIVE_PASSED
from fmquality.run import layout

STEP_SUMMARY_VARIABLE = "GITHUB_STEP_SUMMARY"


def example_notice(cases: list[Any]) -> str:
    labelled = [c for c in cases if c.label is not None]
    defective = sum(1 for c in labelled if not c.label.acceptable)
    return (f"The example is the shipped MangaAssist golden set: {len(cases)} items, {defective} of them with "
            "answers that are defective on purpose (a wrong price, an invented product, a rude tone...) to show "
            "that the gate catches them. So the gate FAILS by design (exit 1); items passing that should fail, "
            "or failing that should pass, are what to look at.")


def closing_note(out: Path, report: Any, example: bool) -> str:
    html = (out / layout.REPORT_HTML).absolute()
    first = ("the gate's reasons at the top, then the failing items (hard failures first)" if not report.gate.passed
             else "the per-intent table and the lowest-scoring items")
    lines = [f"report: {html}", f"  open it in a browser; read {first}."]
    calibration = getattr(report, "calibration", None)
    if example or (calibration and (calibration.defective_passed or calibration.acceptable_failed)):
        # Each miss of the gate is one filter of the items table: a link opens the page with it applied.
        lines.append("  'against the labels' above counts the defective answers that passed and the good ones "
                     "that failed: each is a miss of the gate; open them first, filtered:")
        lines.append(f"    defective that passed: {html.as_uri()}#filter={DEFECTIVE_PASSED}")
        lines.append(f"    acceptable that failed: {html.as_uri()}#filter={ACCEPTABLE_FAILED}")
    lines.append(f"  for CI: {out / layout.JUNIT} (JUnit XML) and {out / layout.SUMMARY_MD} (Markdown summary).")
    return "\n".join(lines)


def publish_ci_outputs(out: Path, junit: str | None, summary: str | None) -> list[str]:
    """Copy junit.xml and summary.md where CI wants them; append summary.md to GitHub's job summary
    when the variable is set. Returns what was done, one line each."""
    done = []
    for source, target in ((out / layout.JUNIT, junit), (out / layout.SUMMARY_MD, summary)):
        if target and source.is_file():
            Path(target).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
            done.append(f"wrote {target}")
    step_summary = os.environ.get(STEP_SUMMARY_VARIABLE)
    if step_summary and (out / layout.SUMMARY_MD).is_file():
        with open(step_summary, "a", encoding="utf-8") as file:
            file.write((out / layout.SUMMARY_MD).read_text(encoding="utf-8") + "\n")
        done.append(f"appended the summary to ${STEP_SUMMARY_VARIABLE}")
    return done
