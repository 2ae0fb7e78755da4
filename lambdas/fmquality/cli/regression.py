"""`fmquality regression add`: an incident becomes a test case (``run.regression``).

    fmquality regression add --from-turn TURN_ID [--turns DIR] --expect "..." --dataset FILE
    fmquality regression add --from-run RUN_DIR --item TEST_ID --expect "..." --dataset FILE
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import get_args

from fmquality.cli.common import EXIT_BAD_INPUT, EXIT_PASSED, err
from fmquality.domain.case import ExpectedBehavior

DEFAULT_DATASET = "datasets/mangaassist/regression.jsonl"


def register(sub: argparse._SubParsersAction) -> None:
    group = sub.add_parser("regression", help="turn an incident into a regression test case")
    commands = group.add_subparsers(dest="regression_command", required=True)
    add = commands.add_parser("add", help="append a redacted, labelled case tagged 'regression' to a dataset")
    source = add.add_mutually_exclusive_group(required=True)
    source.add_argument("--from-turn", metavar="TURN_ID", help="a captured turn (its id or its stored token)")
    source.add_argument("--from-run", metavar="RUN_DIR", help="a run's output folder (with --item)")
    add.add_argument("--item", metavar="TEST_ID", help="the run's item to turn into a case (with --from-run)")
    add.add_argument("--turns", default=".fmquality-local",
                     help="root of the local turn store (its production/turns/dt=* folders)")
    add.add_argument("--expect", required=True, help="what a good answer does: the case's reference answer")
    add.add_argument("--behavior", choices=list(get_args(ExpectedBehavior)),
                     help="the behaviour that is correct (refuse, defer, answer_within_policy, route_to_human)")
    add.add_argument("--incident", help="the incident's id (default: the turn's or the item's id)")
    add.add_argument("--dataset", default=DEFAULT_DATASET, help=f"dataset file to append to (default {DEFAULT_DATASET})")
    add.set_defaults(command_fn=cmd_regression_add)


def cmd_regression_add(args: argparse.Namespace) -> int:
    from fmquality.cli.watch import _sample_redactor
    from fmquality.domain.errors import DatasetError
    from fmquality.run import regression

    if args.from_run and not args.item:
        err("error: --from-run needs --item TEST_ID")
        return EXIT_BAD_INPUT
    try:
        redactor = _sample_redactor()
        if args.from_turn:
            case = regression.case_from_turn(regression.find_turn(Path(args.turns), args.from_turn), redactor)
        else:
            case = regression.case_from_run(Path(args.from_run), args.item)
        incident = args.incident or (args.from_turn or args.item)
        line = regression.regression_case(case, args.expect, incident, redactor, args.behavior)
        regression.append_case(Path(args.dataset), line)
    except (DatasetError, ValueError, OSError) as exc:
        err(f"error: {exc}")
        return EXIT_BAD_INPUT
    print(f"appended {line['test_id']} to {args.dataset}")
    return EXIT_PASSED
