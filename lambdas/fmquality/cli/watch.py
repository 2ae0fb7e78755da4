"""`fmquality sample | drift | drift approve | review export | review import`: the production watch.

Exit codes as the main CLI: 0 fine, 1 drift flagged, 2 bad input or usage.
"""

from __future__ import annotations

import argparse
import json
from datetime import date
from pathlib import Path
from typing import Any

# The main contract's codes; for `drift`, 1 means drift flagged.
from fmquality.cli.common import EXIT_BAD_INPUT, EXIT_GATE_FAILED as EXIT_FLAGGED, EXIT_PASSED as EXIT_OK, err
from fmquality.cli.common import rubric_argument

# --rubric is the rubric file's one name in every command; --watch-config, its old name here, still works.
_RUBRIC_FLAGS = ("--rubric", "--watch-config")


def register(sub: Any) -> None:
    """Add the watch's subcommands to the main parser's subparsers."""
    sample = sub.add_parser("sample", help="stratified sample of captured production turns as a dataset")
    sample.add_argument("--turns", nargs="+", required=True, help="turn files or folders (JSON Lines, Firehose objects)")
    sample.add_argument("--from", dest="day_from", required=True, help="first day (YYYY-MM-DD, UTC)")
    sample.add_argument("--to", dest="day_to", required=True, help="last day (YYYY-MM-DD, UTC), inclusive")
    sample.add_argument("--out", required=True, help="dataset file to write (JSON Lines; a file, not a folder)")
    sample.add_argument("--rate", type=float, help="share of the window's turns (default: the rubric's production.sampling, 0.01)")
    sample.add_argument("--min-per-stratum", type=int, help="minimum per intent x locale (default: the rubric's production.sampling, 30)")
    sample.add_argument("--seed", type=int, help="sampling seed (default: the rubric's production.sampling)")
    sample.add_argument(*_RUBRIC_FLAGS, dest="watch_config", type=rubric_argument, metavar="RUBRIC",
                        help="rubric YAML (or a shipped rubric's name) whose production section to use "
                             "(default: the shipped rubric)")

    drift = sub.add_parser("drift", help="CUSUM and KS drift of run folders against reference run folders; "
                                         "`drift approve` writes the reference")
    drift.add_argument("action", nargs="?", choices=["approve"],
                       help="approve: write production/drift/reference.json from a window (--from/--to) or a run (--run)")
    drift.add_argument("--runs", nargs="+", help="run folders (results.jsonl, report.json), in order")
    drift.add_argument("--reference", nargs="+", help="reference run folders")
    drift.add_argument("--from", dest="window_from", help="approve: window start (ISO 8601, UTC if no offset)")
    drift.add_argument("--to", dest="window_to", help="approve: window end, exclusive")
    drift.add_argument("--run", dest="run_id", help="approve: a run id (its results are the reference)")
    drift.add_argument("--runs-dir", default="runs", help="approve, locally: folder of run folders (default runs)")
    drift.add_argument("--out-dir", default=".", help="approve, locally: where production/drift/reference.json goes")
    drift.add_argument("--table", help="approve on AWS: the evaluation table holding the results")
    drift.add_argument("--bucket", help="approve on AWS: the data bucket the reference is written to")
    drift.add_argument("--approved-by", help="approve: who approves (recorded in the reference)")
    drift.add_argument("--state", help="drift state JSON to read and update (CUSUM carried across invocations)")
    drift.add_argument(*_RUBRIC_FLAGS, dest="watch_config", type=rubric_argument, metavar="RUBRIC",
                       help="rubric YAML (or a shipped rubric's name) whose production section holds the watch settings")
    drift.add_argument("--json", action="store_true", help="print the drift reports as JSON")

    review = sub.add_parser("review", help="human review queue: export items, import verdicts")
    rsub = review.add_subparsers(dest="review_command", required=True)
    export = rsub.add_parser("export", help="write the run's review queue as CSV or JSONL")
    export.add_argument("--run", help="run id (required with --table; default with --run-dir: its report's)")
    export.add_argument("--format", choices=["csv", "jsonl"], default="csv",
                        help="csv (a spreadsheet for reviewers, the default) or jsonl (one item per line)")
    export.add_argument("--out", required=True, help="review file to write (CSV or JSONL by --format; a file, not a folder)")
    _queue_options(export)
    imp = rsub.add_parser("import", help="read reviewer verdicts (CSV or JSONL) into the queue; print kappa")
    imp.add_argument("file")
    imp.add_argument("--run", help="run id (required with --table when the file has no run_id column)")
    _queue_options(imp)
    for parser in (sample, drift, review):
        parser.set_defaults(command_fn=dispatch)


def _queue_options(parser: argparse.ArgumentParser) -> None:
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--run-dir", default=None, help="local run folder (queue: review.jsonl; default runs/latest)")
    where.add_argument("--table", help="evaluation table (AWS): queue items REVIEW#<run_id>")
    parser.add_argument(*_RUBRIC_FLAGS, dest="watch_config", type=rubric_argument, metavar="RUBRIC",
                        help="rubric YAML (or a shipped rubric's name) whose production section holds the watch settings")


def dispatch(args: argparse.Namespace) -> int:
    from fmquality.domain.errors import WatchConfigError

    try:
        if args.command == "sample":
            return cmd_sample(args)
        if args.command == "drift":
            return cmd_drift_approve(args) if args.action == "approve" else cmd_drift(args)
        if args.command == "review":
            return cmd_review_export(args) if args.review_command == "export" else cmd_review_import(args)
    except (WatchConfigError, FileNotFoundError, ValueError) as exc:
        err(f"error: {exc}")
        return EXIT_BAD_INPUT
    raise ValueError(f"unknown command {args.command}")


def _config(args: argparse.Namespace):
    from fmquality.config.watch_loader import load_watch_config

    return load_watch_config(args.watch_config) if getattr(args, "watch_config", None) else load_watch_config()


def cmd_sample(args: argparse.Namespace) -> int:
    from fmquality.production.sample import dataset_text, read_turn_files, stratified_sample

    config = _config(args).sampling
    try:
        day_from, day_to = date.fromisoformat(args.day_from), date.fromisoformat(args.day_to)
    except ValueError as exc:
        err(f"error: --from/--to: {exc}")
        return EXIT_BAD_INPUT
    if day_to < day_from:
        err("error: --to is before --from")
        return EXIT_BAD_INPUT
    redactor = _sample_redactor()
    turns, errors = read_turn_files(args.turns)
    for e in errors[:20]:
        err(f"skipped: {e}")
    sampled, summary = stratified_sample(
        turns, rate=args.rate if args.rate is not None else config.rate,
        min_per_stratum=args.min_per_stratum if args.min_per_stratum is not None else config.min_per_stratum,
        seed=args.seed if args.seed is not None else config.seed, day_from=day_from, day_to=day_to)
    if not sampled:
        err(f"error: no turn between {day_from} and {day_to}")
        return EXIT_BAD_INPUT
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(dataset_text(sampled, redactor), encoding="utf-8")
    print(f"{summary.sampled} of {summary.population} turns ({summary.sampled / summary.population:.1%}) "
          f"from {summary.window_from} to {summary.window_to} -> {out}")
    print(f"{'intent':18s} {'locale':7s} {'turns':>7s} {'sampled':>8s}")
    for s in summary.strata:
        print(f"{s.intent:18s} {s.locale:7s} {s.population:7d} {s.sampled:8d}")
    if errors:
        err(f"{len(errors)} bad turn line(s) skipped")
    return EXIT_OK


def _sample_redactor():
    """The redaction of ``fmquality sample``: a turn file may come straight from a producer. Keyed like
    the stream (ORDER_HASH_SECRET_ID or FMQ_ORDER_HASH_KEY), so stored turns keep their tokens; with
    no key, a one-off random key (tokens then match nothing outside this sample) and a note."""
    import os
    import secrets

    from fmquality.production.redact import ORDER_KEY_SECRET_ENV, Redactor, order_key_from_environment
    from fmquality.domain.errors import RedactionKeyMissing

    client = None
    if os.environ.get(ORDER_KEY_SECRET_ENV):
        import boto3

        client = boto3.client("secretsmanager")
    try:
        return Redactor(order_key_from_environment(secrets_client=client))
    except RedactionKeyMissing:
        err("note: no FMQ_ORDER_HASH_KEY or ORDER_HASH_SECRET_ID: turn, session and order ids in the sample are "
             "hashed under a one-off key (ids already stored as tokens are kept)")
        return Redactor(secrets.token_bytes(32))
    except Exception as exc:  # noqa: BLE001 - Secrets Manager unreachable: a usage error, not a traceback
        raise ValueError(f"cannot read the hashing key from {ORDER_KEY_SECRET_ENV}: {type(exc).__name__}") from None


def _load_run(folder: str):
    from fmquality.report.build import load_report, load_results

    path = Path(folder)
    return load_report(path / "report.json"), load_results(path / "results.jsonl")


def _instant(text: str, flag: str):
    from datetime import datetime, timezone

    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        raise ValueError(f"{flag}: {exc}") from None
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)


def _run_reader(args: argparse.Namespace):
    """Results of a run id: from the evaluation table (--table), else runs/<run_id>/results.jsonl."""
    if args.table:
        from fmquality.adapters.dynamodb import EvaluationTable

        return EvaluationTable(args.table).results_for_run

    def read(run_id: str):
        from fmquality.report.build import load_results

        path = Path(args.runs_dir) / run_id / "results.jsonl"
        return load_results(path) if path.is_file() else []
    return read


def cmd_drift_approve(args: argparse.Namespace) -> int:
    """`fmquality drift approve --from --to | --run`: the same function as the deployed action."""
    from fmquality.run.online import REFERENCE_KEY, approve_run, approve_window

    if bool(args.run_id) == bool(args.window_from or args.window_to) or bool(args.window_from) != bool(args.window_to):
        raise ValueError("give either --from and --to, or --run")
    config, read = _config(args), _run_reader(args)
    if args.run_id:
        reference = approve_run(read, args.run_id, config, args.approved_by)
    else:
        start, end = _instant(args.window_from, "--from"), _instant(args.window_to, "--to")
        if end <= start:
            raise ValueError("--to is not after --from")
        reference = approve_window(read, start, end, config, args.approved_by)
    text = reference.model_dump_json(indent=1)
    if args.bucket:
        import boto3

        boto3.client("s3").put_object(Bucket=args.bucket, Key=REFERENCE_KEY, Body=text.encode("utf-8"),
                                      ContentType="application/json")
        where = f"s3://{args.bucket}/{REFERENCE_KEY}"
    else:
        path = Path(args.out_dir) / REFERENCE_KEY
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        where = str(path)
    print(f"reference of {reference.source.get('items')} item(s), {len(reference.strata)} strata -> {where}")
    return EXIT_OK


def cmd_drift(args: argparse.Namespace) -> int:
    from fmquality.production.drift import DriftState, build_reference, detect_drift
    from fmquality.production.monitor import monitor_status

    if not args.runs or not args.reference:
        raise ValueError("drift needs --runs and --reference (or: drift approve)")
    config = _config(args)
    reference_runs = [_load_run(f) for f in args.reference]
    reference = build_reference([r for _, r in reference_runs], config.drift, [rep.run_id for rep, _ in reference_runs])
    state_path = Path(args.state) if args.state else None
    state = DriftState.model_validate_json(state_path.read_text(encoding="utf-8")) \
        if state_path and state_path.is_file() else DriftState()
    flagged_any = False
    reports = []
    for folder in args.runs:
        report, results = _load_run(folder)
        drift, state = detect_drift(results, reference, state, config.drift, report.run_id)
        monitor = monitor_status(results, config)
        reports.append({"run_id": report.run_id, "drift": drift.model_dump(mode="json"),
                        "monitor": monitor.model_dump(mode="json")})
        flagged_any = flagged_any or bool(drift.flagged)
        if not args.json:
            print(f"run {report.run_id}: monitor {monitor.status} (pass rate {monitor.overall.pass_rate})")
            for s in drift.strata:
                comp = s.measures.get("composite")
                if not s.tested:
                    print(f"  {s.intent:18s} {s.locale:7s} not tested: {s.note}")
                    continue
                ks = f"KS D={s.ks.statistic:.3f} p={s.ks.p_value:.2g}" if s.ks else "KS n/a"
                shift = f"{comp.shift:+.3f}" if comp else "n/a (no composite)"
                print(f"  {s.intent:18s} {s.locale:7s} n={s.items:3d} shift {shift} CUSUM {s.cusum:6.2f} "
                      f"sigma {ks} {'DRIFT ' + ','.join(s.reasons) if s.flag else ''}".rstrip())
    if state_path:
        state_path.write_text(state.model_dump_json(indent=1), encoding="utf-8")
    if args.json:
        print(json.dumps(reports, indent=1, ensure_ascii=False))
    return EXIT_FLAGGED if flagged_any else EXIT_OK


def _queue(args: argparse.Namespace):
    from fmquality.adapters.review_queue import DynamoReviewQueue, LocalReviewQueue

    if args.table:
        if not args.run and getattr(args, "review_command", "") == "export":
            raise ValueError("--run is required with --table")
        return DynamoReviewQueue(args.table), args.run
    run_dir = Path(args.run_dir or "runs/latest")
    queue = LocalReviewQueue(run_dir)
    run_id = args.run
    if not queue.exists():
        # First export of a local run: build its queue from results.jsonl.
        from fmquality.production.review import select_for_review

        report, results = _load_run(str(run_dir))
        run_id = run_id or report.run_id
        queue.add(select_for_review(results, _config(args).review, run_id))
    elif run_id is None and (run_dir / "report.json").is_file():
        from fmquality.report.build import load_report

        run_id = load_report(run_dir / "report.json").run_id
    return queue, run_id


def cmd_review_export(args: argparse.Namespace) -> int:
    from fmquality.production.review_exchange import export_text

    queue, run_id = _queue(args)
    items = queue.items(run_id)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(export_text(items, args.format).encode("utf-8"))  # as built: no newline translation
    pending = sum(1 for i in items if i.status == "pending")
    print(f"{len(items)} review item(s) of run {run_id} ({pending} pending) -> {out}")
    return EXIT_OK


def _print_agreement(agreement) -> None:
    print(f"reviewed {agreement.reviewed}, pending {agreement.pending}")
    for s in agreement.subsets:
        k = s.pass_fail
        value = f"{k.value:.3f}" if k.value is not None else f"n/a ({k.undefined_reason})"
        dims = ", ".join(f"{d} {w.value:.3f}" if w.value is not None else f"{d} n/a" for d, w in s.dimensions.items())
        print(f"  {s.subset:22s} n={s.reviewed:3d} kappa {value}" + (f"; weighted: {dims}" if dims else ""))


def cmd_review_import(args: argparse.Namespace) -> int:
    from fmquality.production.review_agreement import judge_agreement
    from fmquality.production.review_exchange import apply_verdicts, parse_verdicts

    verdicts, errors, blank = parse_verdicts(args.file)
    queue, run_id = _queue(args)
    run_ids = {v.run_id for v in verdicts if v.run_id} or ({run_id} if run_id else set())
    if not run_ids:
        raise ValueError("the file has no run_id column: give --run")
    items = [i for r in sorted(run_ids) for i in queue.items(r)]
    updated, more = apply_verdicts(items, verdicts, args.file)
    problems = errors + more
    if problems:
        for p in problems:
            err(str(p))
        err(f"{len(problems)} problem(s): nothing imported")
        return EXIT_BAD_INPUT
    queue.update(updated)
    print(f"imported {len(updated)} verdict(s) from {args.file} ({blank} row(s) left blank)")
    for r in sorted(run_ids):
        print(f"run {r}:")
        _print_agreement(judge_agreement(queue.items(r)))
    return EXIT_OK
