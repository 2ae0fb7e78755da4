"""junit.xml: a run as JUnit XML, the test-report format CI systems read (GitHub Actions reporters,
GitLab, Jenkins, CodeBuild reports).

One <testsuite> per intent and one <testcase> per item of the candidate arm (classname
``fmquality.<intent>.<locale>``, name the test id): a failed item carries a <failure> with its reasons,
an error record an <error> with its error, an unscored item <skipped> with why. A last suite,
``fmquality.gate``, holds one test case for the gate itself, failed with the gate's reasons: a gate can
fail on a rule no single item breaks (a pass rate, a paired regression)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterable

from fmquality.domain.report import RunReport
from fmquality.domain.results import EvaluationResult

_MAX_MESSAGE = 500  # the message attribute is a one-line summary; the element's text has every reason


def item_reasons(result: EvaluationResult) -> list[str]:
    """Why an item failed: its failure reasons, then any hard failure they do not already mention."""
    reasons = list(result.failure_reasons)
    for hard in result.hard_failures:
        where = hard.dimension + (f".{hard.sub_score}" if hard.sub_score else "")
        if not any(hard.detail in reason for reason in reasons):
            reasons.append(f"hard failure {hard.rule} ({where}): {hard.detail}")
    if not reasons and result.composite_score is not None:
        reasons.append(f"composite {result.composite_score:.3f} below the threshold {result.threshold:.2f}")
    return reasons


def item_outcome(result: EvaluationResult) -> str:
    """passed, failed, error or skipped (unscored): the JUnit outcome of one item."""
    if result.status == "error":
        return "error"
    if result.status == "unscored":
        return "skipped"
    return "passed" if result.passed else "failed"


def _testcase(result: EvaluationResult) -> ET.Element:
    case = ET.Element("testcase", {"name": result.test_id, "classname": f"fmquality.{result.intent}.{result.locale}",
                                   "time": _seconds(result)})
    outcome = item_outcome(result)
    if outcome == "failed":
        reasons = item_reasons(result)
        failure = ET.SubElement(case, "failure", {"message": _one_line(reasons), "type": "ItemFailed"})
        failure.text = "\n".join(reasons)
    elif outcome == "error":
        error = ET.SubElement(case, "error", {"message": _one_line([result.error or "error record"]),
                                              "type": "ItemError"})
        error.text = result.error or "error record"
    elif outcome == "skipped":
        why = "; ".join(result.failure_reasons) or _unscored_reason(result)
        ET.SubElement(case, "skipped", {"message": _one_line([why])})
    return case


def _unscored_reason(result: EvaluationResult) -> str:
    reasons = [f"{name}: {score.unscored_reason}" for name, score in result.dimension_scores.items()
               if score.unscored_reason]
    return "; ".join(reasons) or "unscored"


def _seconds(result: EvaluationResult) -> str:
    latency = result.generation.latency_ms if result.generation else None
    return f"{(latency or 0) / 1000:.3f}"


def _one_line(reasons: list[str]) -> str:
    text = "; ".join(reasons).replace("\n", " ")
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 1] + "…"


def _suite(name: str, cases: list[ET.Element], timestamp: str | None) -> ET.Element:
    counts = {kind: sum(1 for c in cases if c.find(kind) is not None) for kind in ("failure", "error", "skipped")}
    attributes = {"name": name, "tests": str(len(cases)), "failures": str(counts["failure"]),
                  "errors": str(counts["error"]), "skipped": str(counts["skipped"]),
                  "time": f"{sum(float(c.get('time', '0')) for c in cases):.3f}"}
    if timestamp:
        attributes["timestamp"] = timestamp[:19]  # the xsd's xs:dateTime without a zone
    suite = ET.Element("testsuite", attributes)
    suite.extend(cases)
    return suite


def _gate_case(report: RunReport) -> ET.Element:
    case = ET.Element("testcase", {"name": "quality gate", "classname": "fmquality.gate", "time": "0.000"})
    if not report.gate.passed:
        failure = ET.SubElement(case, "failure", {"message": _one_line(report.gate.reasons), "type": "GateFailed"})
        failure.text = "\n".join(report.gate.reasons)
    return case


def render_junit(report: RunReport, results: Iterable[EvaluationResult]) -> str:
    """The JUnit XML text of a run: its candidate items by intent, then the gate."""
    by_intent: dict[str, list[ET.Element]] = {}
    for result in results:
        if result.arm == "candidate":
            by_intent.setdefault(result.intent, []).append(_testcase(result))
    suites = [_suite(f"fmquality.{intent}", cases, report.started_at) for intent, cases in sorted(by_intent.items())]
    suites.append(_suite("fmquality.gate", [_gate_case(report)], report.started_at))
    root = ET.Element("testsuites", {"name": f"fmquality {report.run_id}"})
    for key in ("tests", "failures", "errors", "skipped"):
        root.set(key, str(sum(int(s.get(key, "0")) for s in suites)))
    root.extend(suites)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
