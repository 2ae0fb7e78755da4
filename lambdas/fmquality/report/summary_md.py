"""summary.md: a run in Markdown for a pipeline or pull-request page (GitHub's job summary, a PR
comment, CodePipeline's execution summary): the gate verdict and why, the pass rate, one row per
intent and per locale, the defective answers caught per defect family (labelled runs), the failing items with their reasons and, in a paired run, the comparison with
the control (new failures apart from the items that fail in both arms)."""

from __future__ import annotations

from collections.abc import Iterable

from fmquality.domain.report import Breakdown, RunReport
from fmquality.domain.results import EvaluationResult
from fmquality.report.junit import item_outcome, item_reasons

MAX_ITEMS = 100  # a job summary is capped (GitHub: 1 MiB); report.html and junit.xml list every item


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _breakdown_table(title: str, rows: dict[str, Breakdown]) -> list[str]:
    lines = [f"| {title} | cases | passed | pass rate | mean composite | unscored |", "|---|---:|---:|---:|---:|---:|"]
    for name, b in sorted(rows.items()):
        mean = "-" if b.avg_score is None else f"{b.avg_score:.3f}"
        lines.append(f"| {_cell(name)} | {b.total} | {b.passed} | {b.pass_rate:.2f} | {mean} | {b.unscored} |")
    return lines + [""]


def _headline(report: RunReport) -> list[str]:
    verdict = "PASSED" if report.gate.passed else "FAILED"
    mean = "-" if report.mean_composite is None else f"{report.mean_composite:.3f}"
    lines = [f"## Quality gate {verdict}: `{report.run_id}`", "",
             f"**{report.passed_cases}/{report.total_cases} items passed** (pass rate {report.pass_rate:.2f}, "
             f"mean composite {mean}); {report.failed_cases} failed, {report.error_cases} error records, "
             f"{report.unscored_cases} unscored. Dataset `{report.dataset}`, rubric {report.rubric_version}, "
             f"judge {report.judge}, engine {report.engine}.", ""]
    if report.gate.reasons:
        lines += ["Gate rules broken:", ""] + [f"- {_cell(reason)}" for reason in report.gate.reasons] + [""]
    return lines


def _failing_items(results: list[EvaluationResult]) -> list[str]:
    failing = [r for r in results if r.arm == "candidate" and item_outcome(r) in ("failed", "error")]
    if not failing:
        return []
    lines = [f"### Failing items ({len(failing)})", "", "| item | intent | locale | composite | why |",
             "|---|---|---|---:|---|"]
    for r in sorted(failing, key=lambda r: (r.composite_score is not None, r.composite_score or 0.0, r.test_id))[:MAX_ITEMS]:
        why = [r.error or "error record"] if r.status == "error" else item_reasons(r)
        score = "-" if r.composite_score is None else f"{r.composite_score:.3f}"
        lines.append(f"| `{r.test_id}` | {r.intent} | {r.locale} | {score} | {_cell('; '.join(why))} |")
    if len(failing) > MAX_ITEMS:
        lines.append(f"\n{len(failing) - MAX_ITEMS} more: see report.html or junit.xml.")
    return lines + [""]


def _paired(report: RunReport) -> list[str]:
    paired = report.paired
    if paired is None:
        return []
    new = [i.test_id for i in paired.items if not i.candidate_passed and i.control_passed]
    fixed = [i.test_id for i in paired.items if i.candidate_passed and not i.control_passed]
    both = [i.test_id for i in paired.items if not i.candidate_passed and not i.control_passed]
    lines = [f"### Paired comparison with the control ({paired.pairs} pairs, {paired.confidence:.0%} intervals)", "",
             f"Control pass rate {paired.control_pass_rate:.2f}. **New failures ({len(new)})**: "
             f"{', '.join(f'`{t}`' for t in new[:MAX_ITEMS]) or 'none'}. Fixed ({len(fixed)}): "
             f"{', '.join(f'`{t}`' for t in fixed[:MAX_ITEMS]) or 'none'}. Failing in both arms: {len(both)}.", "",
             "| subset | n | candidate | control | difference [interval] | allowed drop | regressed |",
             "|---|---:|---:|---:|---|---:|---|"]
    for interval in ([paired.overall] if paired.overall else []) + list(paired.subsets):
        lines.append(f"| {_cell(interval.subset)} | {interval.n} | {interval.candidate_mean:.3f} | "
                     f"{interval.control_mean:.3f} | {interval.mean_difference:+.3f} [{interval.ci_low:+.3f}, "
                     f"{interval.ci_high:+.3f}] | {interval.allowed_drop:.3f} | {'yes' if interval.regressed else 'no'} |")
    return lines + [""]


def _families(report: RunReport) -> list[str]:
    """Per defect family, the labelled defective answers the gate failed (a blind spot shows as a low row)."""
    cal = report.calibration
    if cal is None or not cal.families:
        return []
    lines = [f"### Defective answers caught, per defect family (judge {report.judge})", "",
             "| family | caught | defective | recall | kinds |", "|---|---:|---:|---:|---|"]
    for f in cal.families:
        kinds = ", ".join(f"{k} {n}" for k, n in f.kinds.items())
        lines.append(f"| {f.family} | {f.caught} | {f.defective} | {100 * (f.recall or 0):.0f}% | {_cell(kinds)} |")
    return lines + [""]


def render_summary_md(report: RunReport, results: Iterable[EvaluationResult]) -> str:
    results = list(results)
    lines = _headline(report)
    lines += ["### By intent", ""] + _breakdown_table("intent", report.intent_breakdown)
    lines += ["### By locale", ""] + _breakdown_table("locale", report.locale_breakdown)
    lines += _families(report) + _paired(report) + _failing_items(results)
    return "\n".join(lines).rstrip() + "\n"
