"""`fmquality` command line: run | estimate | calibrate | schema | compare | start | approve-baseline | catalog.

Exit codes: 0 the gate passed, 1 the gate failed, 2 bad input or usage, 3 the run failed otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path

from fmquality.engines.outputs import clear_run_outputs, put_run_outputs, write_atomically

EXIT_PASSED, EXIT_GATE_FAILED, EXIT_BAD_INPUT, EXIT_RUN_FAILED = 0, 1, 2, 3


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _err(message: str) -> None:
    print(message, file=sys.stderr)


def _add_scoring_options(parser: argparse.ArgumentParser) -> None:
    """What scoring in-process needs: `run --engine direct` and `calibrate` score the same way."""
    parser.add_argument("--judge", choices=["offline", "bedrock", "scripted"], default="offline")
    parser.add_argument("--judge-model-id", help="Bedrock model or inference-profile id (default: the rubric's)")
    parser.add_argument("--judge-script", help="scripted judge: JSON file {\"test_id/dimension\": verdict|error}")
    parser.add_argument("--rubric", help="rubric YAML (default: the embedded mangaassist-v3)")
    parser.add_argument("--catalog", help="catalog snapshot JSON; each case gets the entries of the products it concerns")
    parser.add_argument("--concurrency", type=int, default=4,
                        help="cases evaluated at once at the start (direct engine); adapts to throttling (AIMD)")
    parser.add_argument("--max-concurrency", type=int, default=64,
                        help="upper bound of the adaptive concurrency (direct engine, default 64)")
    parser.add_argument("--judge-mode", choices=["per_dimension", "combined"],
                        help="per_dimension: one judge call per dimension per case; combined: one call per case "
                             "(direct engine only; default: the rubric's judge.mode)")
    parser.add_argument("--no-cache", action="store_true", help="do not read or write the verdict cache")
    parser.add_argument("--cache-dir", help="verdict cache folder (default .fmquality-cache/verdicts; "
                                            "on by default for the bedrock judge, for any judge when given)")


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fmquality", description="FM output quality gate")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="evaluate a dataset and apply the quality gate")
    run.add_argument("--dataset", required=True, help="JSON Lines dataset")
    _add_scoring_options(run)
    run.add_argument("--baseline", help="report.json of the baseline run to compare with")
    run.add_argument("--out", default="runs/latest", help="output folder (default runs/latest)")
    run.add_argument("--skip-invalid", action="store_true", help="evaluate valid lines; write bad ones to rejected.jsonl")
    run.add_argument("--run-id", help="run id (default: generated)")
    run.add_argument("--filter", metavar="EXPR",
                     help="score a subset: key=value[,value...] clauses joined by ';' (AND; values in a clause: OR); "
                          "keys tag, intent (category), locale, complexity, test_id, e.g. \"tag=policy,retrieval;locale=ja-JP\"")
    run.add_argument("--trigger", default="manual")
    run.add_argument("--quiet", action="store_true", help="no progress bar or table")
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

    estimate = sub.add_parser("estimate", help="expected judge calls, tokens and cost of a run, before any call")
    estimate.add_argument("--dataset", required=True, help="JSON Lines dataset")
    estimate.add_argument("--catalog", help="catalog snapshot JSON; each case gets the entries of the products it concerns")
    estimate.add_argument("--rubric", help="rubric YAML (default: the embedded mangaassist-v3)")
    estimate.add_argument("--judge-mode", choices=["per_dimension", "combined"],
                          help="default: the rubric's judge.mode")
    estimate.add_argument("--judge-model-id", help="model whose prices apply (default: the rubric's)")
    estimate.add_argument("--min-cache-tokens", type=int,
                          help="the model's minimum cacheable prompt prefix, in tokens "
                               "(default: the rubric's judge.min_cache_tokens entry for the model)")
    estimate.add_argument("--skip-invalid", action="store_true", help="estimate the valid lines only")
    estimate.add_argument("--json", action="store_true", help="print the estimate as JSON")

    calibrate = sub.add_parser(
        "calibrate", help="agreement of the scores and verdicts with human ratings and labels",
        description="Spearman's rho and Kendall's tau-b of scores with numeric human ratings, Cohen's kappa "
                    "of the verdicts with label.acceptable; one data set, or every set of a plan.")
    source = calibrate.add_mutually_exclusive_group(required=True)
    source.add_argument("--dataset", help="JSON Lines dataset carrying the human ratings and/or labels")
    source.add_argument("--plan", help="calibration plan YAML (e.g. datasets/calibration.yaml): every set and pair in it")
    _add_scoring_options(calibrate)
    calibrate.add_argument("--results", help="an existing results.jsonl to read (joined to the lines by test_id) "
                                             "instead of scoring the dataset")
    calibrate.add_argument("--human", action="append", default=[], metavar="FIELD",
                           help="numeric field of the line, dotted (human.consistency); repeatable")
    calibrate.add_argument("--score", action="append", default=[], metavar="NAME",
                           help="composite, DIMENSION or DIMENSION.SUB_SCORE; repeatable "
                                "(default: every dimension and the composite)")
    calibrate.add_argument("--skip-invalid", action="store_true", help="measure the valid lines only")
    calibrate.add_argument("--json", action="store_true", help="print the figures as JSON")
    calibrate.add_argument("--out", help="folder to write calibration.json and calibration.html to")
    calibrate.add_argument("--fit", action="store_true",
                           help="propose per-intent pass thresholds from the labelled sets, pooled, and print the "
                                "rubric diff (written to OUT/threshold-fit.diff; the rubric itself is never written)")
    calibrate.add_argument("--target-fpr", type=float, metavar="RATE",
                           help="--fit: the share of acceptable items of an intent allowed to fail (default 0.05)")
    calibrate.add_argument("--fit-sets", metavar="NAME,...",
                           help="--fit: the labelled sets to fit on (default: every labelled set)")
    calibrate.add_argument("--signals-out", metavar="FILE",
                           help="write the AUC of every judged sub-score, acceptable vs defective answers, on the "
                                "plan's agreement_sets (default: every labelled set) as YAML to FILE")

    sub.add_parser("schema", help="print the JSON Schema of one dataset line")

    # Production watch (issue 10): sample | drift | review export/import.
    from fmquality.cli import watch as watch_cli

    watch_cli.register(sub)

    compare = sub.add_parser("compare", help="compare a candidate report.json with a baseline report.json")
    compare.add_argument("baseline")
    compare.add_argument("candidate")
    compare.add_argument("--rubric")

    try:
        from fmquality.cli.aws import add_approve_command, add_catalog_command, add_start_command
    except ImportError:  # the AWS runner is optional for a purely local install
        pass
    else:
        add_start_command(sub)
        add_approve_command(sub)
        add_catalog_command(sub)
    return parser


def _make_judge(args, rubric=None):
    from fmquality.judges.factory import make_judge

    judge = make_judge(args.judge, args.judge_model_id, rubric=rubric)
    if args.judge == "scripted" and args.judge_script:
        from fmquality.judges.base import JudgeVerdict

        raw = json.loads(Path(args.judge_script).read_text(encoding="utf-8"))
        for key, entry in raw.items():
            test_id, dimension = key.rsplit("/", 1)
            judge.script[(test_id, dimension)] = entry if isinstance(entry, str) else JudgeVerdict.model_validate(entry)
    # The verdict cache: on by default for Bedrock (calls cost money and quota); the offline judge is
    # free, so caching it is pointless unless a cache folder is asked for explicitly.
    if not args.no_cache and (args.judge == "bedrock" or args.cache_dir):
        from fmquality.judges.cache import CachingJudge, LocalVerdictStore

        judge = CachingJudge(judge, LocalVerdictStore(args.cache_dir))
    return judge


def _print_summary(report, console) -> None:
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


def _no_answer_generated(results) -> bool:
    """Every case an error record because its answer could not be generated (an unreachable or broken
    target): nothing was evaluated, so no gate verdict is given."""
    return bool(results) and all(r.status == "error" and (r.error or "").startswith("generation failed")
                                 for r in results)


def write_outputs(out: Path, results, report, rubric, control_results=None) -> None:
    from fmquality.engines.outputs import put_run_outputs
    from fmquality.report.build import results_to_jsonl
    from fmquality.report.html import render_html

    put_run_outputs(out, {
        "results.jsonl": results_to_jsonl(results),
        "control_results.jsonl": results_to_jsonl(control_results) if control_results else None,
        "report.html": render_html(report, results, rubric.gate.min_pass_rate),
        "report.json": report.model_dump_json(indent=2),
    })


def _load_inputs(args, with_baseline: bool = False):
    """The rubric, the validated dataset and (optionally) the baseline report. On bad input every
    problem is printed and None is returned; with --skip-invalid, bad lines are printed and skipped."""
    from fmquality.domain.errors import DatasetError
    from fmquality.run.dataset import load_catalog, load_dataset
    from fmquality.report.build import load_report
    from fmquality.domain.errors import RubricError
    from fmquality.config.rubric import load_rubric

    try:
        rubric = load_rubric(args.rubric)
        catalog = load_catalog(args.catalog) if args.catalog else None
        loaded = load_dataset(args.dataset, catalog, rubric.profile_spec.categories)
        baseline = load_report(args.baseline) if with_baseline and args.baseline else None
    except (RubricError, DatasetError, ValueError) as exc:
        _err(f"error: {exc}")
        for line_error in getattr(exc, "errors", []):
            _err(f"  {line_error}")
        return None
    for line_error in loaded.errors:
        _err(f"{line_error}")
    if loaded.errors and not args.skip_invalid:
        _err(f"error: {len(loaded.errors)} invalid line(s) in {args.dataset}; nothing evaluated "
             "(use --skip-invalid to evaluate the valid lines)")
        return None
    if not loaded.cases:
        _err("error: no valid test case in the dataset")
        return None
    return rubric, loaded, baseline


def _evaluate_direct(args, cases, rubric, judge, run_id: str, on_result=None, target=None, arm="candidate"):
    """The direct engine: every case scored in-process (`run --engine direct` and `calibrate`)."""
    from fmquality.run.evaluate import evaluate_cases

    return evaluate_cases(cases, rubric, judge, run_id=run_id, concurrency=max(1, args.concurrency),
                          max_concurrency=max(1, args.max_concurrency), mode=args.judge_mode, on_result=on_result,
                          target=target, arm=arm)


def _parse_target_option(value: str | None, option: str):
    """A --target/--control value as a TargetSpec (None when absent). A value starting with "{" is
    the JSON object form. Raises ValueError naming the option."""
    from fmquality.targets import TargetSpec

    if value is None:
        return None
    try:
        raw = json.loads(value) if value.lstrip().startswith("{") else value
        return TargetSpec.parse(raw)
    except ValueError as exc:  # json and pydantic errors are ValueErrors
        raise ValueError(f"{option} {value!r}: {exc}") from exc


def _build_targets(args, rubric):
    """(candidate, control) of the direct engine, each (target, the spec as given), ``ssm:`` specs
    resolved once for the run. (None, None) stands for "no target": the candidate then scores the
    recorded responses exactly as before. Raises ValueError on a bad spec; a missing module or an
    unreachable service propagates to main() as "the run could not be done" (exit 3)."""
    from fmquality.targets import make_target, resolve_spec
    from fmquality.targets.aws import default_client_factory

    built = []
    client = None
    for value, option in ((args.target, "--target"), (args.control, "--control")):
        spec = _parse_target_option(value, option)
        if spec is None:
            built.append((None, None))
            continue
        client = client or default_client_factory(spec.timeout_s)
        try:
            target = make_target(resolve_spec(spec, client), client, rubric=rubric)
        except (ValueError, FileNotFoundError) as exc:
            raise ValueError(f"{option}: {exc}") from exc
        except ImportError as exc:
            raise ImportError(f"{option}: {exc}") from exc
        built.append((target, spec))
    return built[0], built[1]


def _target_record(target, requested=None) -> dict | None:
    """What report.json says answered: the spec's options (never a header value), id and version
    (read after the run: an endpoint's or a function's version is known once it has answered), and
    the ``ssm:`` parameter it was resolved from."""
    if target is None:
        return None
    record = target.spec.describe() | {"id": target.id, "version": target.version}
    if requested is not None and requested.kind == "ssm":
        record["resolved_from"] = requested.spec_string()
    return record


def cmd_run(args) -> int:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from fmquality.report.build import build_report, gate_summary

    out = Path(args.out)
    console = Console(stderr=False, quiet=args.quiet)
    inputs = _load_inputs(args, with_baseline=True)
    if inputs is None:
        return EXIT_BAD_INPUT
    rubric, loaded, baseline = inputs
    from fmquality.domain.errors import FilterError
    from fmquality.run.subsets import apply_filter, distribution, parse_filter

    try:
        subset = parse_filter(getattr(args, "filter", None))
    except FilterError as exc:
        _err(f"error: {exc}")
        return EXIT_BAD_INPUT
    try:
        clear_run_outputs(out)  # an earlier run's report never looks like this run's
    except OSError as exc:
        _err(f"error: cannot write to {out}: {exc.strerror or exc}")
        return EXIT_RUN_FAILED
    if loaded.errors:
        write_atomically(out / "rejected.jsonl", "".join(
            json.dumps(line_error.model_dump(), ensure_ascii=False) + "\n" for line_error in loaded.errors))
        _err(f"skipped {len(loaded.errors)} invalid line(s): see {out / 'rejected.jsonl'}")

    if args.engine == "stepfunctions-local":
        if args.judge_script:
            _err("error: --judge-script needs --engine direct")
            return EXIT_BAD_INPUT
        if args.judge_mode == "combined":
            _err("error: --judge-mode combined needs --engine direct (the state machine scores each "
                 "dimension in its own Lambda)")
            return EXIT_BAD_INPUT
        try:  # the execution resolves and builds the targets; a malformed spec is refused here already
            _parse_target_option(args.target, "--target")
            _parse_target_option(args.control, "--control")
        except ValueError as exc:
            _err(f"error: {exc}")
            return EXIT_BAD_INPUT
        return _run_state_machine(args, out, console, rubric, baseline)

    spread = distribution(loaded.cases)
    loaded.cases, filter_line = apply_filter(loaded.cases, subset)
    if not loaded.cases:
        _err(f"error: the filter selects no case ({filter_line})")
        return EXIT_BAD_INPUT
    try:
        judge = _make_judge(args, rubric)
        (target, target_spec), (control, control_spec) = _build_targets(args, rubric)
    except (ValueError, OSError) as exc:
        _err(f"error: {exc}")
        return EXIT_BAD_INPUT

    run_id = args.run_id or f"local-{datetime.now(timezone.utc):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:6]}"
    started, t0 = _now(), time.perf_counter()
    show_progress = sys.stdout.isatty() and not args.quiet
    progress = Progress(TextColumn("scoring"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                        console=console, disable=not show_progress)
    arms = [("candidate", target)] + ([("control", control)] if control is not None else [])
    arm_results: dict[str, list] = {}
    with progress:
        for arm, arm_target in arms:
            # The candidate first, then the control on the same cases (each arm generates and scores).
            task = progress.add_task(arm, total=len(loaded.cases))
            arm_results[arm] = _evaluate_direct(args, loaded.cases, rubric, judge, run_id,
                                                on_result=lambda _r, t=task: progress.advance(t),
                                                target=arm_target, arm=arm)
    elapsed = time.perf_counter() - t0
    results, control_results = arm_results["candidate"], arm_results.get("control")
    report = build_report(results, rubric, run_id=run_id, dataset=args.dataset, trigger=args.trigger,
                          judge=args.judge, engine="direct", baseline=baseline,
                          rejected_lines=len(loaded.errors), started_at=started, finished_at=_now(),
                          judge_model_id=judge.model_id if args.judge == "bedrock" else None,
                          control_results=control_results or None, target=_target_record(target, target_spec),
                          control_target=_target_record(control, control_spec),
                          filter_description=filter_line, distribution=spread)
    write_outputs(out, results, report, rubric, control_results=control_results)
    _print_summary(report, console)
    evaluated = sum(len(r) for r in arm_results.values())
    generating = "generated and scored" if target is not None or control is not None else "scored"
    console.print(f"{evaluated} cases {generating} in {elapsed:.2f} s ({evaluated / elapsed:.1f} cases/s"
                  f"{', ' + str(len(arms)) + ' arms' if len(arms) > 1 else ''}); outputs in {out}/", highlight=False)
    _print_generation_failures(console, arm_results)
    usage = report.judge_usage
    if usage.calls or usage.cached_verdicts:
        cost = "unknown (no price for the model)" if usage.usd_estimate is None else f"~${usage.usd_estimate:.4f}"
        console.print(f"judge: {usage.calls} calls ({usage.calls_per_case} per case), {usage.cached_verdicts} "
                      f"verdicts from the cache, {usage.input_tokens:,} input + {usage.output_tokens:,} output + "
                      f"{usage.cache_read_tokens:,} cache-read + {usage.cache_write_tokens:,} cache-write tokens, "
                      f"cost {cost}", highlight=False)
    if _no_answer_generated(results):
        _err(f"error: the target answered none of the {len(results)} cases: the run could not be done "
             f"({results[0].error})")
        return EXIT_RUN_FAILED
    if not report.gate.passed:
        console.print(gate_summary(report), highlight=False)
    return EXIT_PASSED if report.gate.passed else EXIT_GATE_FAILED


def _print_generation_failures(console, arm_results: dict[str, list]) -> None:
    for arm, results in arm_results.items():
        failed = [r for r in results if r.generation is not None and r.generation.error is not None]
        if failed:
            console.print(f"[red]{len(failed)} {arm} generation(s) failed[/red] (error records, not scored): "
                          f"{failed[0].test_id}: {failed[0].generation.error}", highlight=False)


def _run_state_machine(args, out: Path, console, rubric, baseline) -> int:
    """`fmquality run --engine stepfunctions-local`: the deployed state machine, on embedded AWS."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from fmquality.judges.cache import DEFAULT_CACHE_DIR
    from fmquality.engines.local import run_local_execution
    from fmquality.domain.report import RunReport

    show_progress = sys.stdout.isatty() and not args.quiet
    progress = Progress(TextColumn("state machine"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                        console=console, disable=not show_progress)
    with progress:
        task = progress.add_task("items", total=None)
        outcome = run_local_execution(
            dataset_path=Path(args.dataset),
            catalog_path=Path(args.catalog) if args.catalog else None,
            rubric_path=Path(args.rubric) if args.rubric else None,
            baseline_report=baseline.model_dump(mode="json") if baseline else None,
            judge=args.judge, judge_model_id=args.judge_model_id, skip_invalid=args.skip_invalid,
            trigger=args.trigger, run_id=args.run_id,
            **({"filter": args.filter} if getattr(args, "filter", None) else {}),
            on_progress=lambda done, total: progress.update(task, completed=done, total=total or None),
            # The raw spec strings: the execution resolves them. Passed only when given, so a run without
            # targets works whether or not this engine version takes the parameters.
            **{k: v for k, v in (("target", args.target), ("control", args.control)) if v is not None},
            verdict_cache_dir=None if args.no_cache else Path(args.cache_dir or DEFAULT_CACHE_DIR).absolute(),
        )
    if outcome.rejected_jsonl is not None:
        put_run_outputs(out, {"rejected.jsonl": outcome.rejected_jsonl})
    stages = ", ".join(f"{name} {seconds:.2f} s" for name, seconds in outcome.stage_seconds.items())
    if outcome.report is None:
        _err(f"execution {outcome.status}: state {outcome.failed_state!r} failed with "
             f"{outcome.error}: {outcome.cause}")
        _err(f"stages: {stages}")
        return EXIT_BAD_INPUT if outcome.error == "DatasetRejected" else EXIT_RUN_FAILED
    report = RunReport.model_validate({**outcome.report, "execution": outcome.execution})
    put_run_outputs(out, {"results.jsonl": outcome.results_jsonl or "",
                          "control_results.jsonl": outcome.control_results_jsonl,
                          "report.html": outcome.report_html or "",
                          "report.json": report.model_dump_json(indent=2)})
    _print_summary(report, console)
    console.print(f"{report.total_cases} cases through the state machine in {outcome.wall_seconds:.2f} s "
                  f"({report.total_cases / outcome.wall_seconds:.1f} cases/s); stages: {stages}; outputs in {out}/",
                  highlight=False)
    from fmquality.domain.results import EvaluationResult

    results = [EvaluationResult.model_validate_json(line) for line in (outcome.results_jsonl or "").splitlines()
               if line.strip()]
    if _no_answer_generated(results):
        _err(f"error: the target answered none of the {len(results)} cases: the run could not be done "
             f"({results[0].error})")
        return EXIT_RUN_FAILED
    if outcome.status == "SUCCEEDED":
        return EXIT_PASSED
    if outcome.error == "QualityGateFailed":
        console.print(f"execution failed: QualityGateFailed: {outcome.cause}", highlight=False)
        return EXIT_GATE_FAILED
    _err(f"execution {outcome.status}: state {outcome.failed_state!r} failed with {outcome.error}: {outcome.cause}")
    return EXIT_RUN_FAILED


def _calibration_specs(args) -> tuple[list[tuple], list[str] | None] | None:
    """(name, dataset, catalog, pairs) of every set to measure, pairs being (score, human field, info),
    and the plan's agreement_sets (None: every labelled set). None on a bad plan or option (printed)."""
    from fmquality.run.calibrate import DEFAULT_SCORES, check_score_name, load_plan
    from fmquality.domain.errors import PlanError

    if args.plan:
        if args.results or args.human or args.score:
            _err("error: --results, --human and --score apply to --dataset; a plan names its own pairs")
            return None
        try:
            plan = load_plan(args.plan)
            return [(s.name, plan.path(s.dataset), plan.path(s.catalog) if s.catalog else None,
                     [(p.score, p.human, p.info) for p in s.pairs]) for s in plan.sets], plan.agreement_sets
        except PlanError as exc:
            _err(f"error: {exc}")
            return None
    try:
        scores = [check_score_name(name) for name in args.score] or list(DEFAULT_SCORES)
    except ValueError as exc:
        _err(f"error: {exc}")
        return None
    pairs = [(score, human, False) for human in args.human for score in scores]
    return [(Path(args.dataset).stem, Path(args.dataset), args.catalog, pairs)], None


def _fit_options(args, set_names: list[str]) -> tuple[float, list[str] | None] | None:
    """(target false-alarm rate, the sets named by --fit-sets or None for every labelled set); None on
    a bad option (printed)."""
    if not args.fit:
        if args.fit_sets or args.target_fpr is not None:
            _err("error: --target-fpr and --fit-sets apply with --fit")
            return None
        return 0.05, None
    target = 0.05 if args.target_fpr is None else args.target_fpr
    if not 0 <= target < 1:
        _err(f"error: --target-fpr must lie in [0, 1), not {target}")
        return None
    if not args.fit_sets:
        return target, None
    named = [n.strip() for n in args.fit_sets.split(",") if n.strip()]
    unknown = [n for n in named if n not in set_names]
    if unknown or not named:
        _err(f"error: --fit-sets {args.fit_sets!r}: unknown set(s) {unknown}; the sets are {set_names}")
        return None
    return target, named


def _measure_set(args, name: str, dataset: Path, catalog, pairs):
    """Score one set in-process (or read --results) and measure it: (the set's calibration, its
    results carrying the lines' labels, the judge's model id or None when read from --results);
    None on bad input (printed)."""
    from fmquality.run.calibrate import measure_set, with_line_labels
    from fmquality.report.build import load_results

    inputs = _load_inputs(argparse.Namespace(**{**vars(args), "dataset": str(dataset),
                                                "catalog": str(catalog) if catalog else None}))
    if inputs is None:
        return None
    rubric, loaded, _ = inputs
    model_id = None
    if args.results:
        try:
            results = load_results(args.results)
        except ValueError as exc:
            _err(f"error: {exc}")
            return None
        unknown = {r.test_id for r in results} - {c.test_id for c in loaded.cases}
        if unknown:
            _err(f"note: {len(unknown)} result(s) in {args.results} match no line of {dataset} and are ignored")
        provenance = {"results_file": args.results,
                      "rubric_version": ", ".join(sorted({r.rubric_version for r in results})) or None}
    else:
        try:
            judge = _make_judge(args, rubric)
        except (ValueError, OSError) as exc:
            _err(f"error: {exc}")
            return None
        results = _evaluate_direct(args, loaded.cases, rubric, judge, run_id=f"calibrate-{name}")
        provenance = {"judge": args.judge, "rubric_version": rubric.version}
        model_id = judge.model_id
    measured = measure_set(name, str(dataset), loaded.cases, results, pairs, **provenance)
    return measured, with_line_labels(loaded.cases, results), model_id


def _print_calibration(report, console, details: bool) -> None:
    from rich.table import Table

    from fmquality.run.calibrate import SUMMARY_COLUMNS, kappa_subsets, summary_rows

    table = Table(title="Calibration against human judgments")
    for column in SUMMARY_COLUMNS:
        table.add_column(column, justify="left" if column in ("set", "pair") else "right")
    for row in summary_rows(report):
        table.add_row(*row.values())
    console.print(table)
    if not details:
        return
    for s in report.sets:
        cal = s.calibration
        if not cal:
            continue
        kappas = Table(title=f"{s.name}: verdicts against label.acceptable")
        for column in ("subset", "n", "kappa", "passed·acc", "passed·def", "failed·acc", "failed·def"):
            kappas.add_column(column, justify="left" if column == "subset" else "right")
        for subset, k in kappa_subsets(cal):
            kappas.add_row(subset, str(k.n), k.undefined_reason if k.value is None else f"{k.value:.3f}",
                           str(k.passed_acceptable), str(k.passed_defective), str(k.failed_acceptable),
                           str(k.failed_defective))
        console.print(kappas)


def _print_checks(checks, console) -> None:
    from rich.table import Table

    if not checks.rows:
        console.print("no check fired on a labelled answer", highlight=False)
        return
    table = Table(title="Checks on the labelled answers: fired on acceptable / defective "
                        "(! = fired on an acceptable answer: fix or demote)")
    table.add_column("!", justify="center")
    table.add_column("check")
    table.add_column("kind")
    for name in checks.sets:
        table.add_column(f"{name}\nacceptable", justify="right")
        table.add_column(f"{name}\ndefective", justify="right")
    for row in checks.rows:
        cells = []
        for name in checks.sets:
            c = row.by_set[name]
            cells += [f"{c.fired_acceptable}/{c.acceptable}", f"{c.fired_defective}/{c.defective}"]
        kind = "hard failure" if row.kind == "hard_failure" else "sub-score"
        table.add_row("!" if row.flagged else "", row.check, kind, *cells, style="bold red" if row.flagged else None)
    console.print(table)


def _print_fit(fit, console) -> None:
    from rich.table import Table

    def counts(c) -> list[str]:
        return [f"{c.acceptable_failed_now}/{c.acceptable}", f"{c.acceptable_failed_proposed}/{c.acceptable}",
                f"{c.defective_passed_now}/{c.defective}", f"{c.defective_passed_proposed}/{c.defective}"]

    columns = ("acc. failing now", "acc. failing proposed", "def. passing now", "def. passing proposed")
    table = Table(title=f"Threshold fit: target false-alarm rate {fit.target_fpr:g} per intent, "
                        f"on {', '.join(fit.sets) or 'no set'} pooled")
    for column in ("intent", "current", "proposed", "allowed", "fixed failures", *columns, "note"):
        table.add_column(column, justify="left" if column in ("intent", "note") else "right")
    for row in fit.intents:
        table.add_row(row.name, f"{row.current:.2f}", f"{row.proposed:.2f}", str(row.allowed),
                      str(row.fixed_failures), *counts(row), row.note or "",
                      style="bold" if row.changed else None)
    table.add_row("all", "", "", "", "", *counts(fit.overall), "", style="bold")
    console.print(table)
    locales = Table(title="Threshold fit by locale (each item at its intent's threshold)")
    for column in ("locale", *columns):
        locales.add_column(column, justify="left" if column == "locale" else "right")
    for row in fit.locales:
        locales.add_row(row.name, *counts(row))
    console.print(locales)
    for note in fit.notes:
        console.print(f"note: {note}", highlight=False)
    if fit.diff:
        console.print(f"proposed edit of {fit.rubric} (not applied):", highlight=False)
        console.out(fit.diff, end="", highlight=False)
    else:
        console.print(f"threshold fit: no threshold of {fit.rubric} changes", highlight=False)


def _print_signals(signals, console) -> None:
    from rich.table import Table

    table = Table(title=f"Agreement of {signals.judge}'s judged sub-scores with the labels "
                        f"({', '.join(signals.measured_on) or 'no set'})")
    for column in ("sub-score", "AUC", "acceptable", "defective", "weight"):
        table.add_column(column, justify="left" if column == "sub-score" else "right")
    for name, s in signals.signals.items():
        table.add_row(name, "–" if s.auc is None else f"{s.auc:.3f}", str(s.acceptable), str(s.defective),
                      f"{s.weight:.3f}")
    console.print(table)


def _fit(args, labelled: dict[str, list], fit_sets: list[str] | None, target: float):
    """The threshold fit over the fit sets that were measured and labelled; None on a rubric that
    cannot be read or edited (printed)."""
    from fmquality.run.calibrate import fit_thresholds, threshold_diff
    from fmquality.domain.errors import RubricError
    from fmquality.config.rubric import default_rubric_path, parse_rubric

    sets = [n for n in (fit_sets or labelled) if n in labelled]
    for name in fit_sets or []:
        if name not in labelled:
            _err(f"note: --fit-sets {name}: not measured or not labelled, left out of the fit")
    try:
        path = Path(args.rubric) if args.rubric else default_rubric_path()
        text = path.read_text(encoding="utf-8")
        rubric = parse_rubric(text, str(path))
    except OSError as exc:
        _err(f"error: {args.rubric}: cannot read rubric: {exc.strerror or exc}")
        return None
    except RubricError as exc:
        _err(f"error: {exc}")
        return None
    here = Path.cwd().resolve()
    shown = os.path.relpath(path.resolve(), here) if path.resolve().is_relative_to(here) else str(path)
    fit = fit_thresholds([r for n in sets for r in labelled[n]],
                         {name: rule.threshold for name, rule in rubric.intents.items()}, target,
                         sets=sets, rubric=shown, rubric_version=rubric.version)
    try:
        diff = threshold_diff(text, shown, {row.name: row.proposed for row in fit.intents if row.changed})
    except ValueError as exc:
        _err(f"error: {exc}")
        return None
    return fit.model_copy(update={"diff": diff})


def _signals(labelled: dict[str, list], model_ids: dict[str, str | None], agreement_sets: list[str] | None):
    from fmquality.run.calibrate import signal_agreement

    names = [n for n in (agreement_sets or labelled) if n in labelled]
    for name in agreement_sets or []:
        if name not in labelled:
            _err(f"note: agreement set {name}: not measured or not labelled, left out of the signals")
    judges = sorted({model_ids[n] for n in names if model_ids.get(n)})
    return signal_agreement([r for n in names for r in labelled[n]], ", ".join(judges) or "unknown", names)


def cmd_calibrate(args) -> int:
    from rich.console import Console

    from fmquality.run.calibrate import (
        CalibrationReport,
        SetCalibration,
        check_table,
        is_labelled,
        signals_yaml,
    )
    from fmquality.report.html import render_calibration_html

    specs = _calibration_specs(args)
    if specs is None:
        return EXIT_BAD_INPUT
    specs, agreement_sets = specs
    options = _fit_options(args, [name for name, *_ in specs])
    if options is None:
        return EXIT_BAD_INPUT
    target_fpr, fit_sets = options
    sets = []
    labelled: dict[str, list] = {}  # set name -> its results carrying the lines' labels, labelled sets only
    model_ids: dict[str, str | None] = {}
    for name, dataset, catalog, pairs in specs:
        if args.plan and not dataset.is_file():
            # Optional sets (not written yet, or public data this machine does not have) are skipped.
            _err(f"skipped {name}: {dataset} not found")
            sets.append(SetCalibration(name=name, dataset=str(dataset), skipped="dataset not found"))
            continue
        measured = _measure_set(args, name, dataset, catalog, pairs)
        if measured is None:
            return EXIT_BAD_INPUT
        calibration, results, model_ids[name] = measured
        sets.append(calibration)
        if any(is_labelled(r) for r in results):
            labelled[name] = [r for r in results if is_labelled(r)]
    report = CalibrationReport(generated_at=_now(), plan=args.plan, sets=sets,
                               checks=check_table(labelled) if labelled else None)
    if args.fit:
        fit = _fit(args, labelled, fit_sets, target_fpr)
        if fit is None:
            return EXIT_BAD_INPUT
        report = report.model_copy(update={"fit": fit})
    if args.signals_out:
        report = report.model_copy(update={"signals": _signals(labelled, model_ids, agreement_sets)})
    written = []
    if args.out:
        out = Path(args.out)
        write_atomically(out / "calibration.html", render_calibration_html(report))
        write_atomically(out / "calibration.json", report.model_dump_json(indent=2))
        written += [out / "calibration.json", out / "calibration.html"]
        if report.fit is not None:
            write_atomically(out / "threshold-fit.diff", report.fit.diff)
            written.append(out / "threshold-fit.diff")
    if report.signals is not None:
        source = f"--plan {args.plan}" if args.plan else f"--dataset {args.dataset}"
        signals_out = Path(args.signals_out)

        command = f"fmquality calibrate {source} --signals-out {signals_out}"
        write_atomically(signals_out, signals_yaml(report.signals, command))
        written.append(signals_out)
    if args.json:
        print(report.model_dump_json(indent=2))
    else:
        console = Console(width=None if sys.stdout.isatty() else 200)  # piped: do not wrap at 80 columns
        _print_calibration(report, console, details=not args.plan)
        if report.checks is not None:
            _print_checks(report.checks, console)
        if report.fit is not None:
            _print_fit(report.fit, console)
        if report.signals is not None:
            _print_signals(report.signals, console)
        if written:
            console.print(f"written: {', '.join(str(p) for p in written)}", highlight=False)
    return EXIT_PASSED


def cmd_estimate(args) -> int:
    from fmquality.run.estimate import estimate_run, format_estimate

    inputs = _load_inputs(args)
    if inputs is None:
        return EXIT_BAD_INPUT
    rubric, loaded, _ = inputs
    estimate = estimate_run(loaded.cases, rubric, mode=args.judge_mode, model_id=args.judge_model_id,
                            min_cache_tokens=args.min_cache_tokens)
    print(estimate.model_dump_json(indent=2) if args.json else format_estimate(estimate))
    return EXIT_PASSED


def cmd_schema(_args) -> int:
    from fmquality.run.dataset import dataset_json_schema

    print(json.dumps(dataset_json_schema(), indent=2, ensure_ascii=False))
    return EXIT_PASSED


def cmd_compare(args) -> int:
    from fmquality.report.build import compare_with_baseline, load_report
    from fmquality.domain.errors import RubricError
    from fmquality.config.rubric import load_rubric

    try:
        rubric = load_rubric(args.rubric)
        baseline, candidate = load_report(args.baseline), load_report(args.candidate)
    except (RubricError, ValueError) as exc:
        _err(f"error: {exc}")
        return EXIT_BAD_INPUT
    flags = compare_with_baseline(candidate, baseline, rubric)
    for flag in flags:
        print(f"{flag.subset}: {flag.baseline_mean:.3f} -> {flag.candidate_mean:.3f} "
              f"(drop {flag.drop:.3f} > {flag.allowed_drop:.3f})")
    if not flags:
        print("no regression against the baseline")
    return EXIT_GATE_FAILED if flags else EXIT_PASSED


def main(argv: list[str] | None = None) -> int:
    """One exit-code contract for every command: 0 the gate passed (or the command did its work), 1
    the gate failed, 2 bad input or usage (argparse exits 2 itself), 3 the run could not be done:
    missing credentials or region, an unreachable service, a missing module, an unwritable output,
    an internal error. A crash is never read as a failed gate."""
    parser = _build_parser()
    args = parser.parse_args(argv)
    try:
        return _dispatch(parser, args)
    except KeyboardInterrupt:
        _err("interrupted: the run was not done")
        return EXIT_RUN_FAILED
    except Exception as exc:  # noqa: BLE001 - the contract: anything unforeseen is "could not be done", said once
        from botocore.exceptions import BotoCoreError, NoCredentialsError, NoRegionError

        if isinstance(exc, (NoCredentialsError, NoRegionError)):
            _err(f"error: {exc} (set AWS credentials and a region, e.g. AWS_PROFILE and AWS_REGION)")
        elif isinstance(exc, BotoCoreError):
            _err(f"error: AWS could not be reached: {exc}")
        elif isinstance(exc, ImportError):
            _err(f"error: a module this command needs is missing: {exc} (install the project's requirements)")
        elif isinstance(exc, OSError):
            _err(f"error: {exc}")
        else:
            import traceback

            traceback.print_exc(file=sys.stderr)
            _err(f"internal error: {type(exc).__name__}: {exc}")
        return EXIT_RUN_FAILED


def _dispatch(parser, args) -> int:
    if args.command == "run":
        return cmd_run(args)
    if args.command == "estimate":
        return cmd_estimate(args)
    if args.command == "calibrate":
        return cmd_calibrate(args)
    if args.command == "schema":
        return cmd_schema(args)
    if args.command == "compare":
        return cmd_compare(args)
    if args.command == "approve-baseline":
        from fmquality.cli.aws import run_approve_command

        return run_approve_command(args)
    if args.command == "start":
        from fmquality.cli.aws import run_start_command

        return run_start_command(args)
    if args.command == "catalog":
        from fmquality.cli.aws import run_catalog_command

        return run_catalog_command(args)
    if args.command in ("sample", "drift", "review"):
        from fmquality.cli import watch as watch_cli

        return watch_cli.dispatch(args)
    parser.error(f"unknown command {args.command}")
    return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
