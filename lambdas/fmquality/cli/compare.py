"""`fmquality compare BASELINE CANDIDATE`: two runs, each a run folder or its report.json. Prints the
rubric's baseline rules over the aggregates (``report.build.compare_with_baseline``), then the per-item
difference from the runs' results.jsonl: new failures (failing now, passing in the baseline) apart from
the fixed items and from the items failing in both. Exit 1 when a subset regressed by the rules,
0 otherwise, 2 when a run cannot be read."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fmquality.cli.common import EXIT_BAD_INPUT, EXIT_GATE_FAILED, EXIT_PASSED, add_rubric_option, err, report_path

LISTED = 20  # items listed per group; the counts are always whole


def register(sub: Any) -> None:
    compare = sub.add_parser("compare", help="compare a candidate run with a baseline run (folders or report.json files)")
    compare.add_argument("baseline", help="the baseline: a run folder (report.json, results.jsonl) or its report.json")
    compare.add_argument("candidate", help="the candidate: a run folder or its report.json")
    add_rubric_option(compare, " (its baseline rules: allowed drops per subset)")
    compare.add_argument("--all", action="store_true", help=f"list every item of each group (default: the first {LISTED})")
    compare.set_defaults(command_fn=cmd_compare)


@dataclass(frozen=True)
class ItemOutcome:
    passed: bool
    score: float | None
    why: str


def cmd_compare(args: argparse.Namespace) -> int:
    from fmquality.config.rubric import load_rubric
    from fmquality.domain.errors import RubricError
    from fmquality.report.build import compare_with_baseline, load_report

    try:
        rubric = load_rubric(args.rubric)
        paths = [report_path(args.baseline), report_path(args.candidate)]
        for given, path in zip((args.baseline, args.candidate), paths):
            if not path.is_file():
                raise ValueError(f"{given}: no report.json there (give a run folder or a report.json file)")
        baseline, candidate = (load_report(p) for p in paths)
        items = [_item_outcomes(p, r) for p, r in zip(paths, (baseline, candidate))]
    except (RubricError, ValueError) as exc:
        err(f"error: {exc}")
        return EXIT_BAD_INPUT
    for label, path, report in (("baseline ", paths[0], baseline), ("candidate", paths[1], candidate)):
        print(f"{label} {path.parent}/ {report.run_id}: {report.passed_cases}/{report.total_cases} passed "
              f"(pass rate {report.pass_rate:.2f}), gate {'PASSED' if report.gate.passed else 'FAILED'}")
    flags = compare_with_baseline(candidate, baseline, rubric)
    for flag in flags:
        print(f"regressed {flag.subset}: {flag.baseline_mean:.3f} -> {flag.candidate_mean:.3f} "
              f"(drop {flag.drop:.3f} > {flag.allowed_drop:.3f})")
    if not flags:
        print("no regression against the baseline (by the rubric's allowed drops)")
    _print_item_diff(*items, limit=None if args.all else LISTED)
    return EXIT_GATE_FAILED if flags else EXIT_PASSED


def _item_outcomes(report_file: Path, report: Any) -> dict[str, ItemOutcome] | None:
    """test id -> outcome from the results.jsonl beside the report; None without one."""
    from fmquality.report.build import load_results
    from fmquality.report.junit import item_reasons

    results_file = report_file.with_name("results.jsonl")
    if not results_file.is_file():
        return None
    outcomes = {}
    for r in load_results(results_file):
        why = (r.error or "error record") if r.status == "error" else "; ".join(item_reasons(r)) if not r.passed else ""
        outcomes[r.test_id] = ItemOutcome(passed=r.passed, score=r.composite_score, why=why)
    return outcomes


def _print_item_diff(before: dict[str, ItemOutcome] | None, after: dict[str, ItemOutcome] | None,
                     limit: int | None) -> None:
    if before is None or after is None:
        print("per-item difference: not available (a run has no results.jsonl beside its report.json)")
        return
    common = [t for t in after if t in before]
    groups = {
        "new failures (failing now, passing in the baseline)": [t for t in common if before[t].passed and not after[t].passed],
        "fixed (passing now, failing in the baseline)": [t for t in common if not before[t].passed and after[t].passed],
        "still failing (in both runs)": [t for t in common if not before[t].passed and not after[t].passed],
    }
    for title, ids in groups.items():
        print(f"{title}: {len(ids)}")
        for test_id in ids[:limit]:
            print(f"  {test_id}  {_score(before[test_id].score)} -> {_score(after[test_id].score)}"
                  f"{'  ' + after[test_id].why if after[test_id].why else ''}")
        if limit is not None and len(ids) > limit:
            print(f"  ... {len(ids) - limit} more (--all lists them)")
    only_before, only_after = len(set(before) - set(after)), len(set(after) - set(before))
    if only_before or only_after:
        print(f"items only in the baseline: {only_before}; only in the candidate: {only_after}")


def _score(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"
