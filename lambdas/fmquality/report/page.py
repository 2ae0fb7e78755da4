"""report.html: one self-contained page (inline style, script and SVG; nothing fetched) to review a run in.

The page is written in one pass, in pieces (``write_page``): the server-rendered sections
(``page_assets``), then one JSON record per item, per control result and per dataset line
(``page_items``), each written as it is built, then the script (``page_script``) that draws the items
table and the details pane from them. Two sources feed it:

- ``render_report_html``: results in memory (Aggregate on AWS holds full results; the direct engine
  its summaries, whose records have no sub-scores or evidence). The dataset lines come from the
  report's dataset when it is a readable local file.
- ``write_run_page``: an output folder, after the run: report.json, then results.jsonl,
  control_results.jsonl and the dataset streamed line by line (memory flat in the number of cases),
  the trend from earlier runs' report.json files, and the user's own file paths in place of the
  s3:// URIs the local state machine was given. This is the complete page.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from jinja2 import DictLoader, Environment, select_autoescape

from fmquality.domain.report import RunReport
from fmquality.files import StreamedFile
from fmquality.report.agreement import kappa_subsets
from fmquality.report.charts import bar_chart_svg, difference_strip_svg, paired_chart_svg
from fmquality.report.page_assets import CALIBRATION_SECTION, PAGE_CSS, RUN_PAGE
from fmquality.report.page_history import TrendPoint, read_history, trend_svg
from fmquality.report.page_items import case_record, control_record, item_record, iter_jsonl, iter_results
from fmquality.report.page_script import PAGE_SCRIPT
from fmquality.report.verdict_rule import RULE

Write = Callable[[str], None]
# The table filters of the gate's misses against the human labels; a link opens the page with one
# applied: report.html#filter=<filter> (the CLI's closing note names them).
DEFECTIVE_PASSED = "label=defective&status=passed"
ACCEPTABLE_FAILED = "label=acceptable&status=notpassed"
RESULTS, CONTROL_RESULTS, REPORT_JSON, REPORT_HTML = ("results.jsonl", "control_results.jsonl", "report.json",
                                                     "report.html")  # run.layout's names (a higher layer)

_ENV = Environment(loader=DictLoader({"run_page.html": RUN_PAGE, "calibration_section.html": CALIBRATION_SECTION}),
                   autoescape=select_autoescape(default=True, default_for_string=True))
_ENV.globals["kappa_subsets"] = kappa_subsets


def _json(value: Any) -> str:
    """JSON safe inside a <script> element: no "<" can close it."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")


def _write_array(write: Write, element_id: str, records: Iterable[dict[str, Any] | None]) -> None:
    write(f'<script type="application/json" id="{element_id}">[')
    first = True
    for record in records:
        if record is None:
            continue
        write(("\n" if first else ",\n") + _json(record))
        first = False
    write("]</script>\n")


def paired_groups(report: RunReport) -> dict[str, list[Any]]:
    """The paired items as a reviewer reads them: new failures (fail in the candidate, pass in the
    control), fixed (the other way round), failing in both; worst difference first."""
    groups: dict[str, list[Any]] = {"new": [], "fixed": [], "both": []}
    for item in report.paired.items if report.paired else []:
        if not item.candidate_passed:
            groups["new" if item.control_passed else "both"].append(item)
        elif not item.control_passed:
            groups["fixed"].append(item)
    return groups


def is_generated_run(report: RunReport) -> bool:
    """The candidate's answers came from a target, not from the dataset (whose labels are for those)."""
    return bool(report.target) and (report.target or {}).get("kind", "recorded") != "recorded"


def first_things(report: RunReport, groups: dict[str, list[Any]], min_pass_rate: float) -> list[dict[str, str]]:
    """What a reviewer should look at first, most telling first; each may carry a table filter (the
    script adds the hard failures, which need every item)."""
    out: list[dict[str, str]] = []
    if groups["new"]:
        out.append({"text": f"{len(groups['new'])} new failure(s): failing in the candidate, passing in the control",
                    "filter": "paired=new"})
    regressed = [i for i in ([report.paired.overall] if report.paired and report.paired.overall else [])
                 + (list(report.paired.subsets) if report.paired else []) if i.regressed]
    for interval in regressed[:3]:
        out.append({"text": f"{interval.subset} regressed: candidate − control {interval.mean_difference:+.3f} "
                            f"[{interval.ci_low:+.3f}, {interval.ci_high:+.3f}]", "filter": _subset_filter(interval.subset)})
    out.append({"text": "", "filter": "", "id": "first-hard"})  # the script fills it: it needs every item
    tagged = [b for name, b in report.tag_breakdown.items() if name == "regression" and b.passed < b.total]
    if tagged:
        out.append({"text": f"{tagged[0].total - tagged[0].passed} item(s) tagged regression failed",
                    "filter": "tag=regression&status=notpassed"})
    below = [(name, b) for name, b in report.intent_breakdown.items() if b.pass_rate < min_pass_rate]
    if below:
        worst = sorted(below, key=lambda nb: nb[1].pass_rate)
        out.append({"text": f"{len(below)} intent(s) below the {min_pass_rate:.2f} pass rate: " + ", ".join(
            f"{name} {b.pass_rate:.2f} ({b.passed}/{b.total})" for name, b in worst),
            "filter": f"intent={worst[0][0]}&status=notpassed"})
    for flag in report.regression_flags[:3]:
        out.append({"text": f"{flag.subset} mean fell {flag.drop:.3f} below the baseline", "filter": _subset_filter(flag.subset)})
    if report.unscored_cases:
        out.append({"text": f"{report.unscored_cases} item(s) unscored or in error: no verdict for them",
                    "filter": "status=unscored" if not report.error_cases else "status=error"})
    calibration = report.calibration
    if calibration and calibration.defective_passed:
        out.append({"text": f"{calibration.defective_passed} item(s) labelled defective passed: "
                            f"{', '.join(calibration.defective_passed_ids[:5])}", "filter": DEFECTIVE_PASSED})
    if calibration and calibration.acceptable_failed:
        out.append({"text": f"{calibration.acceptable_failed} item(s) labelled acceptable failed: "
                            f"{', '.join(calibration.acceptable_failed_ids[:5])}", "filter": ACCEPTABLE_FAILED})
    return out


def _subset_filter(subset: str) -> str:
    kind, _, name = subset.partition(":")
    return f"{kind}={name}&status=notpassed" if kind in ("intent", "locale", "tag") else "status=notpassed"


def display_location(uri: str | None, local_paths: dict[str, str]) -> str | None:
    """The user's own path for a file the local engine uploaded (the same file name under the
    embedded bucket), else ``uri`` as it is."""
    if not uri:
        return uri
    for path in local_paths.values():
        if uri.startswith("s3://") and uri.rsplit("/", 1)[-1] == Path(path).name:
            return path
    return uri


def write_page(write: Write, report: RunReport, items: Iterable[dict[str, Any]], *,
               control_items: Iterable[dict[str, Any]] = (), cases: Callable[[set[str]], Iterable[dict | None]] | None = None,
               history: list[TrendPoint] | None = None, history_from: str | None = None,
               local_paths: dict[str, str] | None = None, min_pass_rate: float = 0.9) -> None:
    """The whole page, piece by piece. ``cases`` is called after the items with their ids and yields
    the dataset side of those items (``case_record``)."""
    groups = paired_groups(report)
    paths = local_paths or {}
    history = history or []
    write(_ENV.get_template("run_page.html").render(
        r=report, css=PAGE_CSS, first=first_things(report, groups, min_pass_rate), paired_groups=groups,
        dataset=display_location(report.dataset, paths), catalog=display_location(report.catalog, paths),
        generated=is_generated_run(report),
        intent_chart=bar_chart_svg({k: b.pass_rate for k, b in report.intent_breakdown.items()}, threshold=min_pass_rate),
        dimension_chart=bar_chart_svg(dict(report.dimension_averages)),
        paired_chart=paired_chart_svg(report.paired) if report.paired else "",
        difference_strip=difference_strip_svg(report.paired) if report.paired else "",
        trend=trend_svg(history, report.run_id), trend_runs=len(history), history_from=history_from))
    paired = {i.test_id: [i.candidate_passed, i.control_passed, i.candidate_score, i.control_score, i.difference]
              for i in report.paired.items} if report.paired else None
    write(f'<script type="application/json" id="fmq-report">'
          f'{_json({"dimensions": list(report.dimension_averages), "judge": report.judge, "paired": paired, "rule": RULE})}</script>\n')
    ids: set[str] = set()

    def remembered(records: Iterable[dict[str, Any]]) -> Iterable[dict[str, Any]]:
        for record in records:
            ids.add(record["id"])
            yield record

    _write_array(write, "fmq-items", remembered(items))
    _write_array(write, "fmq-control", control_items)
    _write_array(write, "fmq-cases", cases(ids) if cases else ())
    write(f"<script>{PAGE_SCRIPT}</script>\n</body></html>\n")


def dataset_cases(path: Path | None) -> Callable[[set[str]], Iterable[dict | None]] | None:
    """The dataset lines of the items on the page, read from ``path`` (None when it is not a
    readable local file, e.g. an s3:// URI on AWS)."""
    if path is None or not path.is_file():
        return None

    def cases(ids: set[str]) -> Iterable[dict | None]:
        try:
            for line in iter_jsonl(path):
                if line.get("test_id") in ids:
                    yield case_record(line)
        except (OSError, UnicodeDecodeError):
            return
    return cases


def render_report_html(report: RunReport, results: list[Any], min_pass_rate: float = 0.9,
                       control_results: list[Any] | None = None) -> str:
    """The page from results in memory (full results or ``run.summary`` summaries)."""
    parts: list[str] = []
    local = Path(report.dataset) if report.dataset and "://" not in report.dataset else None
    if control_results is not None:
        control_items: Iterable[dict[str, Any]] = (control_record(r) for r in control_results)
    else:  # the control's answers to the failing items, as report.json keeps them
        passed = {i.test_id: i.control_passed for i in report.paired.items} if report.paired else {}
        control_items = ({"id": x["test_id"], "score": x.get("control_score"), "answer": x.get("control_response"),
                          "status": {True: "passed", False: "failed"}.get(passed.get(x["test_id"]), "scored")}
                         for x in report.failing_items if "control_response" in x)
    write_page(parts.append, report, (item_record(r) for r in results), control_items=control_items,
               cases=dataset_cases(local), min_pass_rate=min_pass_rate)
    return "".join(parts)


def write_run_page(out: Path, *, dataset: Path | None = None, catalog: Path | None = None,
                   history: Path | None = None, min_pass_rate: float = 0.9) -> Path:
    """(Re)write ``out``/report.html from the run's files in ``out`` (see the module docstring).
    ``dataset`` and ``catalog`` are the files the user gave; ``history`` the folder of earlier runs
    (default: the folder ``out`` is in). Raises ValueError when ``out`` holds no readable report."""
    try:
        report = RunReport.model_validate_json((out / REPORT_JSON).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{out / REPORT_JSON}: not a readable run report: {exc}") from exc
    history_folder = history if history is not None else out.resolve().parent
    points = read_history(history_folder, json.loads(report.model_dump_json(include={
        "run_id", "finished_at", "started_at", "pass_rate", "mean_composite", "dataset", "total_cases"})))
    paths = {name: str(path) for name, path in (("dataset", dataset), ("catalog", catalog)) if path is not None}
    control = out / CONTROL_RESULTS
    target = out / REPORT_HTML
    with StreamedFile(target) as file:
        write_page(file.write, report, (item_record(r) for r in iter_results(out / RESULTS)),
                   control_items=(control_record(r) for r in iter_results(control)) if control.is_file() else (),
                   cases=dataset_cases(dataset or (Path(report.dataset) if "://" not in report.dataset else None)),
                   history=points, history_from=str(history_folder), local_paths=paths,
                   min_pass_rate=min_pass_rate)
        file.publish()
    return target
