"""`fmquality judge-calibration`: the ceremony a new judge model goes through (docs/calibration.md). The
human-labelled set is scored twice in-process, by the current judge and by the candidate; the candidate
is accepted only if its Cohen's kappa with the labels beats the current judge's by more than 0.05 and it
holds the sensitivity suite on the set's acceptable answers: per defect family it catches the perturbed
answers the current judge catches, within 5 points, without more false alarms (``run.calibrate.decide_judge``,
``run.sensitivity.suite_held``). The decision, both kappas and both judges' suite figures are appended
to the run history.

Exit 0 the candidate is accepted, 1 it is not (the current judge stays pinned), 2 bad input, 3 the
calibration could not be done (a judge that cannot be called: no credentials or region, a model id or
grant Bedrock refuses), with no decision appended.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from fmquality.cli.common import (EXIT_BAD_INPUT, EXIT_GATE_FAILED, EXIT_PASSED, EXIT_RUN_FAILED, add_scoring_options,
                                  err, load_inputs, now)
from fmquality.domain.errors import RunNotDone

DEFAULT_LABELS = "datasets/mangaassist/golden.jsonl"
DEFAULT_CATALOG = "datasets/mangaassist/catalog.json"
DEFAULT_HISTORY = "calibration/judge-history.jsonl"


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "judge-calibration", help="accept a candidate judge model only if it agrees better with the human labels",
        description="Re-score the human-labelled set with the current judge and a candidate; the candidate is "
                    "accepted only if Cohen's kappa improves by more than 0.05. The decision goes to the history.")
    parser.add_argument("--candidate", required=True, metavar="MODEL", help="the candidate judge's model id")
    parser.add_argument("--labels", metavar="FILE", help=f"labelled JSON Lines set (default {DEFAULT_LABELS}, "
                                                         f"with {DEFAULT_CATALOG})")
    parser.add_argument("--candidate-script", metavar="FILE",
                        help="--judge scripted: the candidate's verdict script (the current judge's is --judge-script)")
    parser.add_argument("--history", default=DEFAULT_HISTORY, metavar="FILE",
                        help=f"the run history the decision is appended to (default {DEFAULT_HISTORY})")
    parser.add_argument("--suite-per-operator", type=int, default=20, metavar="N",
                        help="sensitivity suite: at most N perturbed answers per operator, drawn with the seed, scored "
                             "by both judges (default 20; 0: every one)")
    parser.add_argument("--suite-seed", type=int, default=0, help="sensitivity suite: the operators' seed (default 0)")
    parser.add_argument("--json", action="store_true", help="print the decision as JSON")
    add_scoring_options(parser)
    parser.set_defaults(command_fn=cmd_judge_calibration, judge="bedrock")


def _inputs(args: argparse.Namespace) -> tuple[Any, Any] | None:
    labels = args.labels or DEFAULT_LABELS
    catalog = args.catalog or (DEFAULT_CATALOG if not args.labels else None)
    inputs = load_inputs(argparse.Namespace(**{**vars(args), "dataset": labels, "catalog": catalog,
                                               "skip_invalid": False}))
    if inputs is None:
        return None
    rubric, loaded, _ = inputs
    return rubric, loaded


def _judges(args: argparse.Namespace, rubric: Any) -> tuple[Any, Any, Any, Any] | None:
    """(current options, current judge, candidate options, candidate judge); None on a bad option (printed)."""
    from dataclasses import replace

    from fmquality.engines.direct import make_judge
    from fmquality.cli.common import judge_options

    if args.judge == "offline":
        err("error: the offline judge is no model: judge-calibration compares --judge bedrock (or scripted) models")
        return None
    if args.judge == "scripted" and bool(args.judge_script) != bool(args.candidate_script):
        err("error: --judge scripted needs both --judge-script (current) and --candidate-script (candidate)")
        return None
    current = judge_options(args)
    # The verdict cache is keyed by the judge model, so the two judges never read each other's verdicts.
    candidate = replace(current, model_id=args.candidate, script=args.candidate_script)
    try:
        return current, make_judge(current, rubric), candidate, make_judge(candidate, rubric)
    except (ValueError, OSError) as exc:
        err(f"error: {exc}")
        return None


def cmd_judge_calibration(args: argparse.Namespace) -> int:
    from fmquality.engines.direct import evaluate
    from fmquality.run.calibrate import append_judge_decision, decide_judge

    inputs = _inputs(args)
    if inputs is None:
        return EXIT_BAD_INPUT
    rubric, loaded = inputs
    judges = _judges(args, rubric)
    if judges is None:
        return EXIT_BAD_INPUT
    current_options, current_judge, candidate_options, candidate_judge = judges
    if not any(case.label is not None for case in loaded.cases):
        err(f"error: {args.labels or DEFAULT_LABELS}: no line carries label.acceptable; nothing to calibrate on")
        return EXIT_BAD_INPUT
    from fmquality.cli.sensitivity import measure_suite
    from fmquality.sensitivity.registry import OPERATORS

    try:
        current = evaluate(loaded.cases, rubric, current_judge, "judge-calibration-current", current_options)
        candidate = evaluate(loaded.cases, rubric, candidate_judge, "judge-calibration-candidate", candidate_options)
        suite = measure_suite(loaded.cases, rubric, {"current": current_options, "candidate": candidate_options},
                              list(OPERATORS), args.suite_seed, str(args.labels or DEFAULT_LABELS),
                              args.suite_per_operator or None)
    except RunNotDone as exc:  # no decision and no history entry: neither judge was measured
        err(f"error: the calibration could not be done: {type(exc).__name__}: {exc}")
        return EXIT_RUN_FAILED
    decision = decide_judge(
        loaded.cases, current, candidate, current_judge=f"{args.judge}:{current_judge.model_id}",
        candidate_judge=f"{args.judge}:{candidate_judge.model_id}", rubric_version=rubric.version,
        labels=str(args.labels or DEFAULT_LABELS), decided_at=now(), suite=suite)
    history = append_judge_decision(Path(args.history), decision)
    if args.json:
        print(decision.model_dump_json(indent=2))
    else:
        print(f"judge calibration on {decision.labels} ({decision.labelled_items} labelled items, rubric "
              f"{decision.rubric_version}): {decision.current_judge} vs {decision.candidate_judge}: {decision.reason}")
        print(f"decision appended to {history}")
    return EXIT_PASSED if decision.accepted else EXIT_GATE_FAILED
