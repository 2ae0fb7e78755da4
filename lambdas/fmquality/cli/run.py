"""`fmquality run`: evaluate a dataset and apply the quality gate, on the local state machine (the default:
the deployed ASL and handlers on embedded AWS, ``engines.local``) or in-process (``engines.direct``).
Both write the same files into --out (report.html, report.json, results.jsonl, junit.xml, summary.md);
this module reads the options, checks the inputs and prints (``cli.progress``, ``cli.run_outputs``).
"""

from __future__ import annotations

import argparse
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from fmquality.cli.common import (EXIT_BAD_INPUT, EXIT_GATE_FAILED, EXIT_PASSED, EXIT_RUN_FAILED,
                                  add_scoring_options, err, judge_options, load_inputs)
from fmquality.cli.progress import run_progress
from fmquality.cli.run_outputs import closing_note, example_notice, publish_ci_outputs
from fmquality.domain.errors import RunNotDone
from fmquality.engines.outputs import FolderStorage, clear_run_outputs
from fmquality.run import layout


def register(sub: Any) -> None:
    run = sub.add_parser("run", help="evaluate a dataset and apply the quality gate")
    source = run.add_mutually_exclusive_group(required=True)
    source.add_argument("--dataset", help="JSON Lines dataset")
    source.add_argument("--example", action="store_true",
                        help="the shipped MangaAssist golden set and its catalog (defective answers on purpose: "
                             "its gate fails by design)")
    add_scoring_options(run)
    run.add_argument("--baseline", help="report.json (or the run folder holding it) of the baseline run to compare with")
    run.add_argument("--out", default="runs/latest",
                     help="output folder: report.html, report.json, results.jsonl, junit.xml, summary.md "
                          "(default runs/latest)")
    run.add_argument("--history", metavar="DIR",
                     help="folder of earlier runs' output folders for the report's trend (default: the folder --out is in)")
    run.add_argument("--junit", metavar="PATH", help="also copy the run's junit.xml (one test case per item) to PATH")
    run.add_argument("--summary", metavar="PATH",
                     help="also copy the run's summary.md (gate, pass rates, failing items) to PATH; with "
                          "GITHUB_STEP_SUMMARY set it is appended there too")
    run.add_argument("--skip-invalid", action="store_true", help="evaluate valid lines; write bad ones to rejected.jsonl")
    run.add_argument("--run-id", help="run id (default: generated)")
    run.add_argument("--filter", metavar="EXPR",
                     help="score a subset: key=value[,value...] clauses joined by ';' (AND; values in a clause: OR); "
                          "keys tag, intent (category), locale, complexity, test_id, e.g. \"tag=policy,retrieval;locale=ja-JP\"")
    run.add_argument("--trigger", default="manual",
                     help="what started the run, recorded in the report and its metrics (default manual; "
                          "e.g. ci, schedule, pipeline)")
    run.add_argument("--quiet", action="store_true", help="no progress (bar or lines) and no table")
    run.add_argument("--engine", choices=["stepfunctions-local", "direct"], default="stepfunctions-local",
                     help="stepfunctions-local: the real state machine and handlers on embedded AWS (default); "
                          "direct: the same core in-process, faster")
    run.add_argument("--target", metavar="SPEC",
                     help="what answers the cases (default: recorded, the dataset's own responses): "
                          "bedrock:<bundle.yaml|s3://…[?versionId=V]|prompt ARN>, lambda:<function>, "
                          "http(s)://<endpoint>, python:<module>:<function>, ssm:<parameter>, or a JSON object "
                          "{\"spec\": …, \"max_concurrency\": …, \"timeout_s\": …, …}")
    run.add_argument("--control", metavar="SPEC",
                     help="a second target answering the same cases (e.g. production); the gate compares the "
                          "two arms pairwise and control_results.jsonl holds the control's results")
    run.set_defaults(command_fn=cmd_run)


def cmd_run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from fmquality.domain.errors import FilterError
    from fmquality.run.subsets import parse_filter

    out = Path(args.out)
    console = Console(stderr=False, quiet=args.quiet)
    if args.example:
        use_example(args)
    inputs = load_inputs(args, with_baseline=True)
    if inputs is None:
        return EXIT_BAD_INPUT
    rubric, loaded, baseline = inputs
    if args.example:
        console.print(example_notice(loaded.cases), highlight=False, soft_wrap=True)
    try:
        subset = parse_filter(args.filter)
    except FilterError as exc:
        err(f"error: {exc}")
        return EXIT_BAD_INPUT
    try:
        clear_run_outputs(out)  # an earlier run's report never looks like this run's
    except OSError as exc:
        err(f"error: cannot write to {out}: {exc.strerror or exc}")
        return EXIT_RUN_FAILED
    if loaded.errors:
        layout.write_text(FolderStorage(out), layout.REJECTED, layout.rejected_text(loaded.errors))
        err(f"skipped {len(loaded.errors)} invalid line(s): see {out / layout.REJECTED}")
    if args.engine == "stepfunctions-local":
        code = _on_state_machine(args, out, console, baseline)
    else:
        code = _direct(args, out, console, rubric, loaded, baseline, subset)
    if code in (EXIT_PASSED, EXIT_GATE_FAILED) and (out / layout.REPORT_JSON).is_file():
        _review_page(args, out, rubric)
        _finish(args, out, console)
    return code


def _review_page(args: argparse.Namespace, out: Path, rubric: Any) -> None:
    """report.html rewritten from the run's files with what only this machine has: the dataset's expected
    facts and reference answers, the user's own file paths, and the trend of earlier runs."""
    from fmquality.report.page import write_run_page

    write_run_page(out, dataset=Path(args.dataset), catalog=Path(args.catalog) if args.catalog else None,
                   history=Path(args.history) if args.history else None, min_pass_rate=rubric.gate.min_pass_rate)


def use_example(args: argparse.Namespace) -> None:
    """--example: the shipped golden set and, unless given, its catalog (from a checkout or the package)."""
    from fmquality.engines.shipped import EXAMPLE_CATALOG, EXAMPLE_DATASET

    args.dataset = str(EXAMPLE_DATASET)
    args.catalog = args.catalog or str(EXAMPLE_CATALOG)


def _finish(args: argparse.Namespace, out: Path, console: Any) -> None:
    """The CI copies, then where the report is and what to read first (the run cleared --out before it
    started: a report.json there is this run's)."""
    from fmquality.report.build import load_report

    for line in publish_ci_outputs(out, args.junit, args.summary):
        console.print(line, highlight=False)
    console.print(closing_note(out, load_report(out / layout.REPORT_JSON), args.example), highlight=False, soft_wrap=True)


def print_summary(report: Any, console: Any) -> None:
    from rich.table import Table

    table = Table(title=f"Quality gate: {'PASSED' if report.gate.passed else 'FAILED'}  ({report.run_id})")
    for column in ("intent", "cases", "passed", "pass rate", "mean composite", "unscored"):
        table.add_column(column, justify="left" if column == "intent" else "right")
    for name, b in report.intent_breakdown.items():
        table.add_row(name, str(b.total), str(b.passed), f"{b.pass_rate:.2f}",
                      "-" if b.avg_score is None else f"{b.avg_score:.3f}", str(b.unscored))
    table.add_row("all", str(report.total_cases), str(report.passed_cases), f"{report.pass_rate:.2f}",
                  "-" if report.mean_composite is None else f"{report.mean_composite:.3f}",
                  str(report.unscored_cases), style="bold")
    console.print(table)
    averages = ", ".join(f"{d} {v:.3f}" for d, v in report.dimension_averages.items() if v is not None)
    console.print(f"dimension averages: {averages}")
    if report.calibration:
        c = report.calibration
        kappa = "" if c.kappa is None else (
            f", kappa {c.kappa.value:.3f}" if c.kappa.value is not None else f", kappa undefined ({c.kappa.undefined_reason})")
        console.print(f"against the labels: {c.acceptable_failed}/{c.acceptable} acceptable items failed, "
                      f"{c.defective_passed}/{c.defective} defective items passed{kappa}", highlight=False)
    for reason in report.gate.reasons:
        console.print(f"[red]x[/red] {reason}", highlight=False)


def run_not_done(exc: Exception) -> int:
    """A run stopped on its first items because it cannot be done (a misconfigured judge, a target that
    is down): exit 3 with the error's name, and no verdict (no report is written)."""
    err(f"error: the run could not be done: {type(exc).__name__}: {exc}")
    return EXIT_RUN_FAILED


def _no_answer_generated(results: list[Any]) -> bool:
    """Every case an error record because its answer could not be generated (an unreachable or broken
    target): nothing was evaluated, so no gate verdict is given."""
    failed = ("generation failed", "GenerationFailed")  # the direct engine's and the state machine's wording
    if bool(results) and all(r.status == "error" and (r.error or "").startswith(failed) for r in results):
        err(f"error: the target answered none of the {len(results)} cases: the run could not be done "
            f"({results[0].error})")
        return True
    return False


# ---- --engine direct --------------------------------------------------------------------------------

def _direct(args: argparse.Namespace, out: Path, console: Any, rubric: Any, loaded: Any, baseline: Any,
            subset: Any) -> int:
    from fmquality.engines import direct
    from fmquality.report.build import gate_summary
    from fmquality.run.prepare import select_cases

    selection = select_cases(loaded.cases, subset)
    if not selection.cases:
        err(f"error: the filter selects no case ({selection.filter_line})")
        return EXIT_BAD_INPUT
    options = judge_options(args)
    try:
        judge = direct.make_judge(options, rubric)
        targets = direct.build_targets({"candidate": (args.target, "--target"),
                                        "control": (args.control, "--control")}, rubric,
                                       judge_model_id=direct.judge_model_of(options, judge))
    except (ValueError, OSError) as exc:
        err(f"error: {exc}")
        return EXIT_BAD_INPUT
    run = direct.DirectRun(
        run_id=args.run_id or f"local-{datetime.now(timezone.utc):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:6]}",
        dataset=args.dataset, catalog=args.catalog, trigger=args.trigger, selection=selection,
        rejected_lines=layout.rejected_line_count(loaded.errors), baseline=baseline, targets=targets)
    progress = run_progress("scoring", console, args.quiet)

    def start(arm: str, total: int) -> Any:
        task = progress.add_task(arm, total=total)
        return lambda _result: progress.advance(task)

    try:
        with progress:
            outcome = direct.run_direct(run, rubric, judge, options, out, progress=start)
    except RunNotDone as exc:
        return run_not_done(exc)
    report = outcome.report
    print_summary(report, console)
    _print_direct_run(console, outcome, out)
    if _no_answer_generated(outcome.results_by_arm["candidate"]):
        return EXIT_RUN_FAILED
    if not report.gate.passed:
        console.print(gate_summary(report), highlight=False)
    return EXIT_PASSED if report.gate.passed else EXIT_GATE_FAILED


def _print_direct_run(console: Any, outcome: Any, out: Path) -> None:
    """How many cases in how long, failed generations, and what the judge cost."""
    arms, elapsed = outcome.results_by_arm, outcome.seconds
    evaluated = sum(len(r) for r in arms.values())
    generating = "generated and scored" if outcome.report.target or outcome.report.control_target else "scored"
    console.print(f"{evaluated} cases {generating} in {elapsed:.2f} s ({evaluated / elapsed:.1f} cases/s"
                  f"{', ' + str(len(arms)) + ' arms' if len(arms) > 1 else ''}); outputs in {out}/", highlight=False)
    for arm, results in arms.items():
        failed = [r for r in results if r.generation is not None and r.generation.error is not None]
        if failed:
            console.print(f"[red]{len(failed)} {arm} generation(s) failed[/red] (error records, not scored): "
                          f"{failed[0].test_id}: {failed[0].generation.error}", highlight=False)
    usage = outcome.report.judge_usage
    if usage.calls or usage.cached_verdicts:
        cost = "unknown (no price for the model)" if usage.usd_estimate is None else f"~${usage.usd_estimate:.4f}"
        console.print(f"judge: {usage.calls} calls ({usage.calls_per_case} per case), {usage.cached_verdicts} "
                      f"verdicts from the cache, {usage.input_tokens:,} input + {usage.output_tokens:,} output + "
                      f"{usage.cache_read_tokens:,} cache-read + {usage.cache_write_tokens:,} cache-write tokens, "
                      f"cost {cost}", highlight=False)


# ---- --engine stepfunctions-local -------------------------------------------------------------------

def _on_state_machine(args: argparse.Namespace, out: Path, console: Any, baseline: Any) -> int:
    from fmquality.engines.direct import parse_target_option

    if args.judge_script:
        err("error: --judge-script needs --engine direct")
        return EXIT_BAD_INPUT
    try:  # the execution resolves and builds the targets; a malformed spec is refused here already
        parse_target_option(args.target, "--target")
        parse_target_option(args.control, "--control")
    except ValueError as exc:
        err(f"error: {exc}")
        return EXIT_BAD_INPUT
    return _run_state_machine(args, out, console, baseline)


def _run_state_machine(args: argparse.Namespace, out: Path, console: Any, baseline: Any) -> int:
    """The deployed state machine, on embedded AWS; its files copied into --out."""
    from fmquality.engines import local
    from fmquality.judges.cache import DEFAULT_CACHE_DIR

    progress = run_progress("state machine", console, args.quiet)
    with progress:
        task = progress.add_task("items", total=None)
        outcome = local.run_local_execution(
            dataset_path=Path(args.dataset), catalog_path=Path(args.catalog) if args.catalog else None,
            rubric_path=Path(args.rubric) if args.rubric else None,
            baseline_report=baseline.model_dump(mode="json") if baseline else None,
            judge=args.judge, judge_model_id=args.judge_model_id, skip_invalid=args.skip_invalid,
            trigger=args.trigger, run_id=args.run_id, filter=args.filter or None, judge_mode=args.judge_mode,
            on_progress=lambda done, total: progress.update(task, completed=done, total=total or None),
            # The specs as given (a JSON object form as the object): the execution resolves them.
            target=_spec_input(args.target), control=_spec_input(args.control),
            verdict_cache_dir=None if args.no_cache else Path(args.cache_dir or DEFAULT_CACHE_DIR).absolute())
    return _state_machine_outcome(outcome, out, console)


def _spec_input(value: str | None) -> Any:
    """A --target/--control value as the execution input carries it: the JSON object form as an object."""
    import json

    return json.loads(value) if value is not None and value.lstrip().startswith("{") else value


def _state_machine_outcome(outcome: Any, out: Path, console: Any) -> int:
    from fmquality.domain.report import RunReport
    from fmquality.domain.results import EvaluationResult

    storage = FolderStorage(out)
    if outcome.rejected_jsonl:  # an empty file would suggest lines were rejected
        layout.write_outputs(storage, "", {layout.REJECTED: outcome.rejected_jsonl})
    stages = ", ".join(f"{name} {seconds:.2f} s" for name, seconds in outcome.stage_seconds.items())
    if outcome.report is None:
        err(f"execution {outcome.status}: state {outcome.failed_state!r} failed with {outcome.error}: {outcome.cause}")
        err(f"stages: {stages}")
        return EXIT_BAD_INPUT if outcome.error == "DatasetRejected" else EXIT_RUN_FAILED
    report = RunReport.model_validate({**outcome.report, "execution": outcome.execution})
    # The embedded bucket goes with the run: a result's judge_trace_uri s3://<local bucket>/runs/<run>/judge/...
    # is read from <out>/judge/... (docs/running.md).
    for key, body in outcome.judge_traces.items():
        storage.write_bytes(key, body, layout.content_type(key))
    layout.write_outputs(storage, "", {layout.RESULTS: outcome.results_jsonl or "",
                                       layout.CONTROL_RESULTS: outcome.control_results_jsonl,
                                       layout.REPORT_HTML: outcome.report_html or "",
                                       layout.REPORT_JSON: report.model_dump_json(indent=2)})
    print_summary(report, console)
    console.print(f"{report.total_cases} cases through the state machine in {outcome.wall_seconds:.2f} s "
                  f"({report.total_cases / outcome.wall_seconds:.1f} cases/s); stages: {stages}; outputs in {out}/",
                  highlight=False)
    results = [EvaluationResult.model_validate_json(line) for line in (outcome.results_jsonl or "").splitlines()
               if line.strip()]
    if _no_answer_generated(results):
        return EXIT_RUN_FAILED
    if outcome.status == "SUCCEEDED":
        return EXIT_PASSED
    if outcome.error == "QualityGateFailed":
        console.print(f"execution failed: QualityGateFailed: {outcome.cause}", highlight=False)
        return EXIT_GATE_FAILED
    err(f"execution {outcome.status}: state {outcome.failed_state!r} failed with {outcome.error}: {outcome.cause}")
    return EXIT_RUN_FAILED
