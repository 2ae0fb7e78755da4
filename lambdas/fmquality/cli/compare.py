"""`fmquality compare`: a candidate report.json against a baseline report.json, by the rubric's baseline
rules (``report.build.compare_with_baseline``). Exit 1 when a subset regressed."""

from __future__ import annotations

import argparse
from typing import Any

from fmquality.cli.common import EXIT_BAD_INPUT, EXIT_GATE_FAILED, EXIT_PASSED, err


def register(sub: Any) -> None:
    compare = sub.add_parser("compare", help="compare a candidate report.json with a baseline report.json")
    compare.add_argument("baseline")
    compare.add_argument("candidate")
    compare.add_argument("--rubric")
    compare.set_defaults(command_fn=cmd_compare)


def cmd_compare(args: argparse.Namespace) -> int:
    from fmquality.config.rubric import load_rubric
    from fmquality.domain.errors import RubricError
    from fmquality.report.build import compare_with_baseline, load_report

    try:
        rubric = load_rubric(args.rubric)
        baseline, candidate = load_report(args.baseline), load_report(args.candidate)
    except (RubricError, ValueError) as exc:
        err(f"error: {exc}")
        return EXIT_BAD_INPUT
    flags = compare_with_baseline(candidate, baseline, rubric)
    for flag in flags:
        print(f"{flag.subset}: {flag.baseline_mean:.3f} -> {flag.candidate_mean:.3f} "
              f"(drop {flag.drop:.3f} > {flag.allowed_drop:.3f})")
    if not flags:
        print("no regression against the baseline")
    return EXIT_GATE_FAILED if flags else EXIT_PASSED
