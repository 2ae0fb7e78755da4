"""What the command modules share: the exit codes of the contract ``cli.main`` keeps, the scoring options
(`run --engine direct` and `calibrate` score the same way), and reading a run's inputs (rubric,
catalog, dataset, baseline) with every problem printed."""

from __future__ import annotations

import argparse
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fmquality.engines.direct import JudgeOptions

EXIT_PASSED, EXIT_GATE_FAILED, EXIT_BAD_INPUT, EXIT_RUN_FAILED = 0, 1, 2, 3


def err(message: str) -> None:
    print(message, file=sys.stderr)


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def add_scoring_options(parser: argparse.ArgumentParser) -> None:
    """What scoring in-process needs: `run --engine direct` and `calibrate` score the same way."""
    parser.add_argument("--judge", choices=["offline", "bedrock", "scripted"], default="offline",
                        help="who grades what the checks leave open: offline (local heuristics, no calls, the "
                             "default), bedrock (an LLM judge on Amazon Bedrock; needs AWS credentials), scripted "
                             "(verdicts from --judge-script, for tests)")
    parser.add_argument("--judge-model-id", help="Bedrock model or inference-profile id (default: the rubric's)")
    parser.add_argument("--judge-script", help="scripted judge: JSON file {\"test_id/dimension\": verdict|error}")
    add_rubric_option(parser)
    parser.add_argument("--catalog", help="catalog snapshot JSON; each case gets the entries of the products it concerns")
    parser.add_argument("--concurrency", type=int, default=4,
                        help="cases evaluated at once at the start (direct engine); adapts to throttling (AIMD)")
    parser.add_argument("--max-concurrency", type=int, default=64,
                        help="upper bound of the adaptive concurrency (direct engine, default 64)")
    parser.add_argument("--judge-mode", choices=["per_dimension", "combined"],
                        help="per_dimension: one judge call per dimension per case; combined: one call per case "
                             "(default: the rubric's judge.mode)")
    parser.add_argument("--workers", type=int, help="processes scoring with the offline or scripted judge "
                                                    "(direct engine; default: one per core for a run large enough)")
    parser.add_argument("--no-cache", action="store_true", help="do not read or write the verdict cache")
    parser.add_argument("--cache-dir", help="verdict cache folder (default .fmquality-cache/verdicts; "
                                            "on by default for the bedrock judge, for any judge when given)")


def add_rubric_option(parser: argparse.ArgumentParser, help_suffix: str = "") -> None:
    """--rubric, the one name of the rubric file in every command: a YAML path or a shipped rubric's name."""
    parser.add_argument("--rubric", type=rubric_argument, metavar="RUBRIC",
                        help="rubric YAML file, or the name of a shipped rubric (mangaassist-v3, research-agent-v1, "
                             f"tool-use-v1); default: mangaassist-v3{help_suffix}")


def rubric_argument(value: str) -> str:
    from fmquality.engines.shipped import resolve_rubric

    return resolve_rubric(value) or value


def report_path(value: str) -> Path:
    """A run's report.json given as the file or as the run folder holding it."""
    path = Path(value)
    return path / "report.json" if path.is_dir() else path


def judge_options(args: argparse.Namespace) -> "JudgeOptions":
    from fmquality.engines.direct import JudgeOptions

    return JudgeOptions(name=args.judge, model_id=args.judge_model_id, script=args.judge_script,
                        cache=not args.no_cache, cache_dir=args.cache_dir, concurrency=args.concurrency,
                        max_concurrency=args.max_concurrency, mode=args.judge_mode, workers=args.workers)


def load_inputs(args: argparse.Namespace, with_baseline: bool = False) -> tuple[Any, Any, Any] | None:
    """The rubric, the validated dataset and (optionally) the baseline report. On bad input every
    problem is printed and None is returned; with --skip-invalid, bad lines are printed and skipped."""
    from fmquality.config.rubric import load_rubric
    from fmquality.domain.errors import DatasetError, RubricError
    from fmquality.report.build import load_report
    from fmquality.run.dataset import load_catalog, load_dataset

    try:
        rubric = load_rubric(args.rubric)
        catalog = load_catalog(args.catalog) if args.catalog else None
        loaded = load_dataset(args.dataset, catalog, rubric.profile_spec.categories)
        baseline = load_report(report_path(args.baseline)) if with_baseline and args.baseline else None
    except (RubricError, DatasetError, ValueError) as exc:
        err(f"error: {exc}")
        for line_error in getattr(exc, "errors", []):
            err(f"  {line_error}")
        return None
    for line_error in loaded.errors:
        err(f"{line_error}")
    if loaded.errors and not args.skip_invalid:
        err(f"error: {len(loaded.errors)} invalid line(s) in {args.dataset}; nothing evaluated "
            "(use --skip-invalid to evaluate the valid lines)")
        return None
    if not loaded.cases:
        err("error: no valid test case in the dataset")
        return None
    return rubric, loaded, baseline
