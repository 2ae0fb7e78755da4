"""`fmquality replay`: a time window of captured turns answered by a candidate and a control, judged, and
compared turn by turn (``run.replay``; the paired run is the direct engine's, as `fmquality run --target
--control` does it). The estimated cost is stated first; above the budget nothing starts without
--approve-cost. Targets are told it is a replay and may call read-side tools only (``targets.replay``).

Writes into --out the run's files (results, control_results, report), replay-diff.jsonl (the turns
that changed), replay-summary.json (cost, window, per-stratum counts) and review.jsonl (the turns the
candidate now fails, queued for people). Exit 0 done, 2 bad input or over budget, 3 not done.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from fmquality.cli.common import EXIT_BAD_INPUT, EXIT_PASSED, EXIT_RUN_FAILED, add_scoring_options, err, judge_options

DEFAULT_TURNS = "production/turns"


def register(sub: Any) -> None:
    from fmquality.run.replay import DEFAULT_BUDGET_USD, DEFAULT_CHANGE_THRESHOLD

    parser = sub.add_parser("replay", help="answer a window of captured turns with a candidate and a control, "
                                           "judge both and diff them turn by turn")
    parser.add_argument("--from", dest="start", required=True, metavar="ISO", help="window start (inclusive)")
    parser.add_argument("--to", dest="end", required=True, metavar="ISO", help="window end (exclusive)")
    parser.add_argument("--filter", metavar="EXPR", help="a subset of the window's turns (fmquality run --filter)")
    parser.add_argument("--target", required=True, metavar="SPEC", help="the candidate")
    parser.add_argument("--control", required=True, metavar="SPEC", help="the control (e.g. the production target)")
    parser.add_argument("--turns", default=DEFAULT_TURNS, metavar="DIR",
                        help=f"captured turns (files or a folder of them; default {DEFAULT_TURNS})")
    parser.add_argument("--budget", type=float, default=DEFAULT_BUDGET_USD, metavar="USD",
                        help=f"refuse to start above this estimated cost without --approve-cost (default {DEFAULT_BUDGET_USD})")
    parser.add_argument("--approve-cost", action="store_true", help="start even above the budget")
    parser.add_argument("--threshold", type=float, default=DEFAULT_CHANGE_THRESHOLD,
                        help=f"a composite move larger than this is a difference (default {DEFAULT_CHANGE_THRESHOLD})")
    parser.add_argument("--read-only-tools", metavar="NAME,...",
                        help="the tools a replayed answer may call (default: $REPLAY_READ_ONLY_TOOLS or the built-in list)")
    parser.add_argument("--out", default="runs/replay", help="output folder (default runs/replay)")
    parser.add_argument("--run-id", help="run id (default: generated)")
    add_scoring_options(parser)
    parser.set_defaults(command_fn=cmd_replay)


def _cases(args: argparse.Namespace) -> list[Any] | None:
    """The window's turns as replay cases, filtered; None on bad input (printed)."""
    from fmquality.domain.errors import FilterError
    from fmquality.production.sample import read_turn_files
    from fmquality.run.replay import parse_window, replay_cases, turns_in_window
    from fmquality.run.subsets import apply_filter, parse_filter

    try:
        start, end = parse_window(args.start, args.end)
        turns, bad = read_turn_files([args.turns])
        subset = parse_filter(args.filter)
    except (ValueError, FileNotFoundError, FilterError) as exc:
        err(f"error: {exc}")
        return None
    for line in bad[:20]:
        err(f"skipped: {line}")
    cases, filter_line = apply_filter(replay_cases(turns_in_window(turns, start, end)), subset)
    if not cases:
        err(f"error: no captured turn in [{args.start}, {args.end}) under {args.turns} ({filter_line})")
        return None
    return cases


def _targets(args: argparse.Namespace, rubric: Any, options: Any, judge: Any) -> dict[str, Any] | None:
    from fmquality.engines import direct
    from fmquality.targets.replay import ReadOnlyTarget, read_only_tools

    allowed = read_only_tools(args.read_only_tools.split(",") if args.read_only_tools else None)
    try:
        built = direct.build_targets({"candidate": (args.target, "--target"), "control": (args.control, "--control")},
                                     rubric, judge_model_id=direct.judge_model_of(options, judge))
    except (ValueError, OSError) as exc:
        err(f"error: {exc}")
        return None
    return {arm: direct.ArmTarget(ReadOnlyTarget(a.target, allowed), a.requested) for arm, a in built.items()}


def cmd_replay(args: argparse.Namespace) -> int:
    from fmquality.config.rubric import load_rubric
    from fmquality.domain.errors import RubricError
    from fmquality.engines import direct
    from fmquality.run.replay import replay_cost

    cases = _cases(args)
    if cases is None:
        return EXIT_BAD_INPUT
    options = judge_options(args)
    try:
        rubric = load_rubric(args.rubric)
        judge = direct.make_judge(options, rubric)
    except (RubricError, ValueError, OSError) as exc:
        err(f"error: {exc}")
        return EXIT_BAD_INPUT
    targets = _targets(args, rubric, options, judge)
    if targets is None:
        return EXIT_BAD_INPUT
    cost = replay_cost(cases, rubric, judge=options.name, judge_model_id=direct.judge_model_of(options, judge),
                       generating_models={arm: getattr(t.target.inner, "model_id", None) for arm, t in targets.items()},
                       mode=options.mode)
    print(f"replay of {cost.turns} turn(s): estimated cost ${cost.total_usd:.4f} (judge ${cost.judge_usd:.4f}, "
          f"{cost.judge_calls} calls; generation ${cost.generation_usd:.4f}); budget ${args.budget:.2f}")
    for note in cost.notes:
        print(f"  note: {note}")
    if cost.total_usd > args.budget and not args.approve_cost:
        err(f"error: the estimated cost ${cost.total_usd:.4f} is above the budget ${args.budget:.2f}: "
            "pass --approve-cost to start it")
        return EXIT_BAD_INPUT
    return _replay(args, cases, rubric, judge, options, targets, cost)


def _replay(args, cases, rubric, judge, options, targets, cost) -> int:
    from datetime import datetime, timezone

    from fmquality.adapters.review_queue import LocalReviewQueue
    from fmquality.engines import direct
    from fmquality.engines.outputs import clear_run_outputs, write_atomically
    from fmquality.run.gate_review import failing_review_items
    from fmquality.run.prepare import Selection
    from fmquality.run.replay import REPLAY_TRIGGER, diff_by_stratum, turn_diff
    from fmquality.run.subsets import distribution

    out = Path(args.out)
    clear_run_outputs(out)
    run = direct.DirectRun(
        run_id=args.run_id or f"replay-{datetime.now(timezone.utc):%Y%m%dT%H%M%S}", dataset=str(args.turns),
        catalog=None, trigger=REPLAY_TRIGGER, selection=Selection(cases, f"window [{args.start}, {args.end})",
                                                                   distribution(cases)),
        rejected_lines=0, baseline=None, targets=targets)
    outcome = direct.run_direct(run, rubric, judge, options, out)
    candidate, control = outcome.results_by_arm["candidate"], outcome.results_by_arm["control"]
    if all(r.status == "error" for r in candidate + control):
        err(f"error: no turn could be answered and judged ({candidate[0].error}): the replay could not be done")
        return EXIT_RUN_FAILED
    rows = turn_diff(candidate, control, args.threshold)
    regressed = {row["test_id"] for row in rows if not row["candidate_passed"]}
    queued = LocalReviewQueue(out).add(failing_review_items([r for r in candidate if r.test_id in regressed],
                                                            run.run_id))
    strata = diff_by_stratum(rows, candidate)
    write_atomically(out / "replay-diff.jsonl", "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))
    summary = {"run_id": run.run_id, "window": {"from": args.start, "to": args.end}, "filter": args.filter,
               "target": args.target, "control": args.control, "threshold": args.threshold,
               "cost": cost.model_dump(), "differences": len(rows), "queued_for_review": queued, "strata": strata}
    write_atomically(out / "replay-summary.json", json.dumps(summary, indent=2, ensure_ascii=False))
    print(f"{len(rows)} of {len(candidate)} turn(s) changed (threshold {args.threshold}); {queued} queued for review")
    for stratum, counts in strata.items():
        if counts["regression"] or counts["improvement"] or counts["moved"]:
            print(f"  {stratum}: {counts['regression']} regression(s), {counts['improvement']} improvement(s), "
                  f"{counts['moved']} moved, of {counts['turns']}")
    print(f"outputs in {out}/ (replay-diff.jsonl, replay-summary.json, review.jsonl, report.html)")
    return EXIT_PASSED
