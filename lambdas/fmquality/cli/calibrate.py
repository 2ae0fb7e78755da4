"""`fmquality calibrate`: agreement of the scores and verdicts with human ratings and labels, for one data
set or every set of a plan; optionally the threshold fit and the signal agreement. The figures are
``run.calibrate``'s (and ``report.html``'s rendering); the sets are scored by the direct engine."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from fmquality.cli.common import (EXIT_BAD_INPUT, EXIT_PASSED, add_scoring_options, err, judge_options,
                                  load_inputs, now)
from fmquality.engines.outputs import write_atomically


def register(sub: Any) -> None:
    calibrate = sub.add_parser(
        "calibrate", help="agreement of the scores and verdicts with human ratings and labels",
        description="Spearman's rho and Kendall's tau-b of scores with numeric human ratings, Cohen's kappa "
                    "of the verdicts with label.acceptable; one data set, or every set of a plan.")
    source = calibrate.add_mutually_exclusive_group(required=True)
    source.add_argument("--dataset", help="JSON Lines dataset carrying the human ratings and/or labels")
    source.add_argument("--plan", help="calibration plan YAML (e.g. datasets/calibration.yaml): every set and pair in it")
    add_scoring_options(calibrate)
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
    calibrate.set_defaults(command_fn=cmd_calibrate)


def _calibration_specs(args) -> tuple[list[tuple], list[str] | None] | None:
    """(name, dataset, catalog, pairs) of every set to measure, pairs being (score, human field, info),
    and the plan's agreement_sets (None: every labelled set). None on a bad plan or option (printed)."""
    from fmquality.report.calibration import DEFAULT_SCORES, check_score_name
    from fmquality.run.calibrate import load_plan
    from fmquality.domain.errors import PlanError

    if args.plan:
        if args.results or args.human or args.score:
            err("error: --results, --human and --score apply to --dataset; a plan names its own pairs")
            return None
        try:
            plan = load_plan(args.plan)
            return [(s.name, plan.path(s.dataset), plan.path(s.catalog) if s.catalog else None,
                     [(p.score, p.human, p.info) for p in s.pairs]) for s in plan.sets], plan.agreement_sets
        except PlanError as exc:
            err(f"error: {exc}")
            return None
    try:
        scores = [check_score_name(name) for name in args.score] or list(DEFAULT_SCORES)
    except ValueError as exc:
        err(f"error: {exc}")
        return None
    pairs = [(score, human, False) for human in args.human for score in scores]
    return [(Path(args.dataset).stem, Path(args.dataset), args.catalog, pairs)], None


def _fit_options(args, set_names: list[str]) -> tuple[float, list[str] | None] | None:
    """(target false-alarm rate, the sets named by --fit-sets or None for every labelled set); None on
    a bad option (printed)."""
    if not args.fit:
        if args.fit_sets or args.target_fpr is not None:
            err("error: --target-fpr and --fit-sets apply with --fit")
            return None
        return 0.05, None
    target = 0.05 if args.target_fpr is None else args.target_fpr
    if not 0 <= target < 1:
        err(f"error: --target-fpr must lie in [0, 1), not {target}")
        return None
    if not args.fit_sets:
        return target, None
    named = [n.strip() for n in args.fit_sets.split(",") if n.strip()]
    unknown = [n for n in named if n not in set_names]
    if unknown or not named:
        err(f"error: --fit-sets {args.fit_sets!r}: unknown set(s) {unknown}; the sets are {set_names}")
        return None
    return target, named


def _measure_set(args, name: str, dataset: Path, catalog, pairs):
    """Score one set in-process (or read --results) and measure it: (the set's calibration, its
    results carrying the lines' labels, the judge's model id or None when read from --results);
    None on bad input (printed)."""
    from fmquality.run.calibrate import measure_set, with_line_labels
    from fmquality.report.build import load_results

    inputs = load_inputs(argparse.Namespace(**{**vars(args), "dataset": str(dataset),
                                                "catalog": str(catalog) if catalog else None}))
    if inputs is None:
        return None
    rubric, loaded, _ = inputs
    model_id = None
    if args.results:
        try:
            results = load_results(args.results)
        except ValueError as exc:
            err(f"error: {exc}")
            return None
        unknown = {r.test_id for r in results} - {c.test_id for c in loaded.cases}
        if unknown:
            err(f"note: {len(unknown)} result(s) in {args.results} match no line of {dataset} and are ignored")
        provenance = {"results_file": args.results,
                      "rubric_version": ", ".join(sorted({r.rubric_version for r in results})) or None}
    else:
        from fmquality.engines.direct import evaluate, make_judge

        options = judge_options(args)
        try:
            judge = make_judge(options, rubric)
        except (ValueError, OSError) as exc:
            err(f"error: {exc}")
            return None
        results = evaluate(loaded.cases, rubric, judge, f"calibrate-{name}", options)
        provenance = {"judge": args.judge, "rubric_version": rubric.version}
        model_id = judge.model_id
    measured = measure_set(name, str(dataset), loaded.cases, results, pairs, **provenance)
    return measured, with_line_labels(loaded.cases, results), model_id


def _print_calibration(report, console, details: bool) -> None:
    from rich.table import Table

    from fmquality.report.agreement import kappa_subsets
    from fmquality.report.calibration import SUMMARY_COLUMNS, summary_rows

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


def _print_families(report, console) -> None:
    """Per labelled set: per defect family, the defective answers the set's judge mode failed."""
    from rich.table import Table

    sets = [s for s in report.sets if s.calibration and s.calibration.families]
    if not sets:
        return
    families = list(dict.fromkeys(f.family for s in sets for f in s.calibration.families))
    table = Table(title="Defective answers caught per defect family", caption="caught/defective per set and "
                  "judge mode; label.defect kinds grouped into families, a kind the table does not know as 'other'")
    table.add_column("family")
    for s in sets:
        table.add_column(f"{s.name}\n{s.judge or 'results'}", justify="right")
    table.add_column("kinds (all sets)", overflow="fold")
    for family in families:
        cells, kinds = [], {}
        for s in sets:
            f = next((x for x in s.calibration.families if x.family == family), None)
            cells.append("–" if f is None else f"{f.caught}/{f.defective} {100 * f.recall:.0f}%")
            for kind, n in (f.kinds.items() if f else ()):
                kinds[kind] = kinds.get(kind, 0) + n
        shown = ", ".join(f"{k} {n}" for k, n in sorted(kinds.items()))
        table.add_row(family, *cells, shown if len(shown) <= 120 else shown[:117] + "...")
    console.print(table)


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
    from fmquality.report.threshold_fit import fit_thresholds, threshold_diff
    from fmquality.domain.errors import RubricError
    from fmquality.config.rubric import default_rubric_path, parse_rubric

    sets = [n for n in (fit_sets or labelled) if n in labelled]
    for name in fit_sets or []:
        if name not in labelled:
            err(f"note: --fit-sets {name}: not measured or not labelled, left out of the fit")
    try:
        path = Path(args.rubric) if args.rubric else default_rubric_path()
        text = path.read_text(encoding="utf-8")
        rubric = parse_rubric(text, str(path))
    except OSError as exc:
        err(f"error: {args.rubric}: cannot read rubric: {exc.strerror or exc}")
        return None
    except RubricError as exc:
        err(f"error: {exc}")
        return None
    here = Path.cwd().resolve()
    shown = os.path.relpath(path.resolve(), here) if path.resolve().is_relative_to(here) else str(path)
    fit = fit_thresholds([r for n in sets for r in labelled[n]],
                         {name: rule.threshold for name, rule in rubric.intents.items()}, target,
                         sets=sets, rubric=shown, rubric_version=rubric.version)
    try:
        diff = threshold_diff(text, shown, {row.name: row.proposed for row in fit.intents if row.changed})
    except ValueError as exc:
        err(f"error: {exc}")
        return None
    return fit.model_copy(update={"diff": diff})


def _signals(labelled: dict[str, list], model_ids: dict[str, str | None], agreement_sets: list[str] | None):
    from fmquality.report.signal_agreement import signal_agreement

    names = [n for n in (agreement_sets or labelled) if n in labelled]
    for name in agreement_sets or []:
        if name not in labelled:
            err(f"note: agreement set {name}: not measured or not labelled, left out of the signals")
    judges = sorted({model_ids[n] for n in names if model_ids.get(n)})
    return signal_agreement([r for n in names for r in labelled[n]], ", ".join(judges) or "unknown", names)


def _semantic_scale(labelled: dict[str, list], names: list[str]):
    """Where acceptable answers of the agreement sets stand in meaning to their question (the scale
    of the offline judge's semantic reading), None without the embedding model."""
    from fmquality.language.semantic import measure_scale

    pairs = [(r.query or "", r.response or "") for n in names for r in labelled.get(n, []) if r.label.get("acceptable")]
    scale = measure_scale(pairs, names)
    if scale is None:
        err("note: no semantic scale written (the sentence-embedding model is not installed, or no acceptable answers)")
    return scale


def cmd_calibrate(args) -> int:
    from fmquality.report.calibration import CalibrationReport
    from fmquality.report.check_fires import check_table

    specs = _calibration_specs(args)
    if specs is None:
        return EXIT_BAD_INPUT
    specs, agreement_sets = specs
    options = _fit_options(args, [name for name, *_ in specs])
    if options is None:
        return EXIT_BAD_INPUT
    target_fpr, fit_sets = options
    measured = _measure_sets(args, specs)
    if measured is None:
        return EXIT_BAD_INPUT
    sets, labelled, model_ids = measured
    report = CalibrationReport(generated_at=now(), plan=args.plan, sets=sets,
                               checks=check_table(labelled) if labelled else None)
    if args.fit:
        fit = _fit(args, labelled, fit_sets, target_fpr)
        if fit is None:
            return EXIT_BAD_INPUT
        report = report.model_copy(update={"fit": fit})
    scale = None
    if args.signals_out:
        report = report.model_copy(update={"signals": _signals(labelled, model_ids, agreement_sets)})
        scale = _semantic_scale(labelled, report.signals.measured_on)
    written = _write_calibration(args, report, scale)
    if args.json:
        print(report.model_dump_json(indent=2))
    else:
        _print_report(args, report, written)
    return EXIT_PASSED


def _measure_sets(args, specs: list[tuple]) -> tuple[list, dict[str, list], dict[str, str | None]] | None:
    """Every set measured (an optional set of a plan whose file is missing is skipped): the sets'
    calibrations, the labelled results of each labelled set, and the judge model of each set."""
    from fmquality.report.agreement import is_labelled
    from fmquality.report.calibration import SetCalibration

    sets = []
    labelled: dict[str, list] = {}  # set name -> its results carrying the lines' labels, labelled sets only
    model_ids: dict[str, str | None] = {}
    for name, dataset, catalog, pairs in specs:
        if args.plan and not dataset.is_file():
            # Optional sets (not written yet, or public data this machine does not have) are skipped.
            err(f"skipped {name}: {dataset} not found")
            sets.append(SetCalibration(name=name, dataset=str(dataset), skipped="dataset not found"))
            continue
        measured = _measure_set(args, name, dataset, catalog, pairs)
        if measured is None:
            return None
        calibration, results, model_ids[name] = measured
        sets.append(calibration)
        if any(is_labelled(r) for r in results):
            labelled[name] = [r for r in results if is_labelled(r)]
    return sets, labelled, model_ids


def _write_calibration(args, report, scale=None) -> list[Path]:
    """calibration.json and .html (and the threshold-fit diff) into --out, the signals YAML to
    --signals-out and the semantic scale (``semantic_scale.yaml``) beside it."""
    from fmquality.config.semantic_scale import scale_yaml
    from fmquality.report.html import render_calibration_html
    from fmquality.report.signal_agreement import signals_yaml

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
        if scale is not None:
            write_atomically(signals_out.with_name("semantic_scale.yaml"), scale_yaml(scale, command))
            written.append(signals_out.with_name("semantic_scale.yaml"))
    return written


def _print_report(args, report, written: list[Path]) -> None:
    from rich.console import Console

    console = Console(width=None if sys.stdout.isatty() else 200)  # piped: do not wrap at 80 columns
    _print_calibration(report, console, details=not args.plan)
    _print_families(report, console)
    if report.checks is not None:
        _print_checks(report.checks, console)
    if report.fit is not None:
        _print_fit(report.fit, console)
    if report.signals is not None:
        _print_signals(report.signals, console)
    if written:
        console.print(f"written: {', '.join(str(p) for p in written)}", highlight=False)
