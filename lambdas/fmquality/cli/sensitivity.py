"""`fmquality sensitivity`: the sensitivity suite on a labelled set (``run.sensitivity``). The acceptable
answers are perturbed by every operator (docs/sensitivity.md), the perturbed and the unperturbed answers
are scored in-process by each judge mode asked (default: offline, and scripted = the deterministic checks
alone), and the table shows per operator and locale the share each mode fails, with its Wilson 95%
interval, beside the false alarms on the unperturbed answers.

Exit 0 the suite was measured, 2 bad input (a bad dataset, no acceptable answer, an unknown operator),
3 the run could not be done."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from fmquality.cli.common import EXIT_BAD_INPUT, EXIT_PASSED, add_rubric_option, err, judge_options, load_inputs, now

DEFAULT_JUDGES = ("offline", "scripted")


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "sensitivity", help="perturb the acceptable answers of a labelled set and measure what each judge mode catches",
        description="Apply the perturbation operators (each a defect by construction) to the acceptable answers "
                    "of a labelled set and report, per operator and locale, the share each judge mode fails "
                    "with its Wilson 95% interval, beside the false alarms on the unperturbed answers.")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--dataset", help="labelled JSON Lines set (label.acceptable)")
    source.add_argument("--plan", help="calibration plan YAML: every set of it with acceptable answers (see --sets)")
    parser.add_argument("--sets", metavar="NAME,...", help="--plan: only these sets")
    parser.add_argument("--judge", action="append", choices=["offline", "scripted", "bedrock"], metavar="MODE",
                        help="judge mode, repeatable: offline, scripted (the checks alone: a judge that agrees with "
                             "everything), bedrock (needs AWS credentials); default: offline and scripted")
    parser.add_argument("--judge-model-id", help="Bedrock model or inference-profile id (default: the rubric's)")
    parser.add_argument("--judge-script", help="scripted judge: JSON file of verdicts (default: none, it agrees)")
    add_rubric_option(parser)
    parser.add_argument("--catalog", help="catalog snapshot JSON; each case gets the entries of the products it concerns")
    parser.add_argument("--operators", metavar="NAME,...", help="only these operators (default: all; see --list)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the operators' choices (default 0)")
    parser.add_argument("--per-operator", type=int, metavar="N",
                        help="at most N perturbed answers per operator, drawn with the seed (default: all)")
    parser.add_argument("--out", metavar="DIR", help="write sensitivity.json and sensitivity.md to DIR (atomically)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--list", action="store_true", help="list the operators and exit")
    parser.add_argument("--by-locale", action="store_true", help="print the per-locale rows too (files always have them)")
    parser.add_argument("--skip-invalid", action="store_true", help="measure the valid lines only")
    parser.add_argument("--workers", type=int, help="processes scoring with the offline or scripted judge")
    parser.add_argument("--concurrency", type=int, default=4, help="cases judged at once (bedrock)")
    parser.add_argument("--max-concurrency", type=int, default=64, help="upper bound of the adaptive concurrency")
    parser.add_argument("--judge-mode", choices=["per_dimension", "combined"], help="default: the rubric's")
    parser.add_argument("--no-cache", action="store_true", help="do not read or write the verdict cache")
    parser.add_argument("--cache-dir", help="verdict cache folder")
    parser.set_defaults(command_fn=cmd_sensitivity)


def _list() -> int:
    from fmquality.sensitivity.registry import OPERATORS

    for op in OPERATORS:
        print(f"{op.family:12} {op.name:26} {'/'.join(op.locales):6} {op.summary}")
    return EXIT_PASSED


def judge_options_for(args: argparse.Namespace, name: str):
    """The options of judge mode ``name`` from the command's options (a script only for scripted)."""
    return replace(judge_options(argparse.Namespace(**{**vars(args), "judge": name})),
                   script=args.judge_script if name == "scripted" else None)


def measure_suite(cases: list, rubric: Any, judges: dict, operators: list, seed: int, dataset: str,
                  per_operator: int | None = None):
    """The suite on ``cases``, scored by each judge (``label -> JudgeOptions``); returns the report."""
    from fmquality.engines.direct import make_judge, score_arm
    from fmquality.run.sensitivity import build_suite, measure

    acceptable, perturbations = build_suite(cases, operators, seed, per_operator)
    scored = acceptable + [p.case for p in perturbations]
    outcomes = {}
    for label, options in judges.items():
        judge = make_judge(options, rubric)
        summaries = score_arm(scored, rubric, judge, f"sensitivity-{label}", options, lambda _line: None)
        outcomes[label] = {s.test_id: s for s in summaries}
    return measure(acceptable, perturbations, operators, outcomes, dataset=dataset, seed=seed,
                   generated_at=now(), rubric_version=rubric.version)


def print_table(report: Any, by_locale: bool, title: str | None = None) -> None:
    from rich.console import Console
    from rich.table import Table

    from fmquality.run.sensitivity import columns, table_rows

    console = Console(width=None if sys.stdout.isatty() else 200)
    table = Table(title=title or f"Sensitivity suite: {report.acceptable} acceptable answers of {report.dataset} "
                                 "perturbed; caught = the mode fails the perturbed answer (Wilson 95%)")
    for column in columns(report):
        table.add_column(column, justify="left" if column in ("family", "operator", "locale") else "right")
    previous = None
    for row in table_rows(report, locales=by_locale):
        kind = row[1] if row[1] in ("(family)", "unperturbed") else "operator"
        if previous is not None and kind != previous:
            table.add_section()
        previous = kind
        table.add_row(*row, style="bold" if kind != "operator" else None)
    console.print(table)
    for note in report.notes:
        console.print(f"note: {note}", highlight=False)


def _specs(args: argparse.Namespace) -> list[tuple[str, str, str | None]] | None:
    """(name, dataset, catalog) of every set to measure: --dataset, or the plan's sets (--sets names
    some); None on a bad plan or option (printed)."""
    if args.dataset:
        if args.plan or args.sets:
            err("error: --dataset and --plan/--sets exclude each other")
            return None
        return [(Path(args.dataset).stem, args.dataset, args.catalog)]
    if not args.plan:
        err("error: --dataset or --plan is required (or --list)")
        return None
    from fmquality.domain.errors import PlanError
    from fmquality.run.calibrate import load_plan

    try:
        plan = load_plan(args.plan)
        specs = [(s.name, str(plan.path(s.dataset)), str(plan.path(s.catalog)) if s.catalog else None) for s in plan.sets]
    except PlanError as exc:
        err(f"error: {exc}")
        return None
    if args.sets:
        named = [n.strip() for n in args.sets.split(",") if n.strip()]
        unknown = [n for n in named if n not in [name for name, *_ in specs]]
        if unknown:
            err(f"error: --sets: unknown set(s) {unknown}; the plan's sets are {[name for name, *_ in specs]}")
            return None
        specs = [spec for spec in specs if spec[0] in named]
    return specs


def cmd_sensitivity(args: argparse.Namespace) -> int:
    from fmquality.engines.outputs import write_atomically
    from fmquality.run.sensitivity import acceptable_cases, render_markdown
    from fmquality.sensitivity.registry import select

    if args.list:
        return _list()
    specs = _specs(args)
    if specs is None:
        return EXIT_BAD_INPUT
    try:
        operators = select([n.strip() for n in args.operators.split(",") if n.strip()] if args.operators else None)
    except KeyError as exc:
        err(f"error: --operators: {exc.args[0]}")
        return EXIT_BAD_INPUT
    judges = list(dict.fromkeys(args.judge or DEFAULT_JUDGES))
    reports = []
    for name, dataset, catalog in specs:
        if args.plan and not Path(dataset).is_file():
            err(f"skipped {name}: {dataset} not found")
            continue
        inputs = load_inputs(argparse.Namespace(**{**vars(args), "dataset": dataset, "catalog": catalog}))
        if inputs is None:
            return EXIT_BAD_INPUT
        rubric, loaded, _ = inputs
        if not acceptable_cases(loaded.cases):
            if args.plan:
                err(f"skipped {name}: no line labelled acceptable with an answer")
                continue
            err(f"error: {dataset}: no line is labelled acceptable with an answer; nothing to perturb")
            return EXIT_BAD_INPUT
        report = measure_suite(loaded.cases, rubric, {j: judge_options_for(args, j) for j in judges}, operators,
                               args.seed, dataset, args.per_operator)
        reports.append((name, report))
        written = []
        if args.out:
            out = Path(args.out) / name if args.plan else Path(args.out)
            write_atomically(out / "sensitivity.json", report.model_dump_json(indent=2))
            write_atomically(out / "sensitivity.md", render_markdown(report, _command_line()))
            written = [out / "sensitivity.json", out / "sensitivity.md"]
        if args.json:
            print(report.model_dump_json(indent=2))
        else:
            print_table(report, args.by_locale)
            if written:
                print(f"written: {', '.join(str(p) for p in written)}")
    if not reports:
        err("error: no set with acceptable answers was measured")
        return EXIT_BAD_INPUT
    return EXIT_PASSED


def _command_line() -> str:
    return "fmquality " + " ".join(sys.argv[1:])
