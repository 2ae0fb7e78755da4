"""`fmquality` command line: the parser, the dispatch and the exit-code contract. Each command group is
its own module with ``register(sub)`` (its options; ``command_fn`` the function to run):

    run                            cli/run.py        evaluate a dataset and apply the gate
    estimate                       cli/estimate.py   judge calls, tokens and cost before any call
    calibrate                      cli/calibrate.py  agreement with human ratings and labels
    sensitivity                    cli/sensitivity.py  perturbed acceptable answers: what each judge mode catches
    judge-calibration              cli/judge_calibration.py  a candidate judge model's ceremony
    replay                         cli/replay.py     a window of captured turns, candidate vs control
    schema                         cli/schema.py     the JSON Schema of a dataset line
    compare                        cli/compare.py    two runs (folders or report.json), per-item diff
    start | approve-baseline | catalog   cli/aws.py  the deployed gate
    doctor                         cli/doctor.py     a deployed stack's configuration, before the first run
    sample | drift | review        cli/watch.py      the production watch, locally
    regression add                 cli/regression.py an incident becomes a test case

Exit codes (``cli.common``, kept by ``main``): 0 the gate passed (or the command did its work), 1 the
gate failed, 2 bad input or usage, 3 the run could not be done.
"""

from __future__ import annotations

import argparse
import sys

from fmquality.cli import (calibrate, compare, doctor, estimate, judge_calibration, regression, replay, run, schema,
                           sensitivity, watch)
from fmquality.cli.common import EXIT_RUN_FAILED, err


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fmquality", description="FM output quality gate")
    parser.add_argument("--version", action="version", version=f"%(prog)s {installed_version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    for group in (run, estimate, calibrate, sensitivity, judge_calibration, schema, watch, compare, replay, regression,
                  doctor):
        group.register(sub)
    try:
        from fmquality.cli import aws
    except ImportError:  # the AWS runner is optional for a purely local install
        pass
    else:
        aws.register(sub)
    return parser


def installed_version() -> str:
    """The installed distribution's version; from a checkout without an install, the package's."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("fmquality")
    except PackageNotFoundError:
        from fmquality import __version__

        return __version__


def main(argv: list[str] | None = None) -> int:
    """One exit-code contract for every command: 0 the gate passed (or the command did its work), 1
    the gate failed, 2 bad input or usage (argparse exits 2 itself), 3 the run could not be done:
    missing credentials or region, an unreachable service, a missing module, an unwritable output,
    an internal error. A crash is never read as a failed gate."""
    args = build_parser().parse_args(argv)
    try:
        return args.command_fn(args)
    except KeyboardInterrupt:
        err("interrupted: the run was not done")
        return EXIT_RUN_FAILED
    except Exception as exc:  # noqa: BLE001 - the contract: anything unforeseen is "could not be done", said once
        _report_failure(exc)
        return EXIT_RUN_FAILED


def _report_failure(exc: Exception) -> None:
    from botocore.exceptions import BotoCoreError, NoCredentialsError, NoRegionError

    if isinstance(exc, (NoCredentialsError, NoRegionError)):
        err(f"error: {exc} (set AWS credentials and a region, e.g. AWS_PROFILE and AWS_REGION)")
    elif isinstance(exc, BotoCoreError):
        err(f"error: AWS could not be reached: {exc}")
    elif isinstance(exc, ImportError):
        err(f"error: a module this command needs is missing: {exc} (the default engine, the state machine run "
            "locally, needs the `local` extra: pip install 'fmquality[local]', or requirements-local.txt in a checkout)")
    elif isinstance(exc, OSError):
        err(f"error: {exc}")
    else:
        import traceback

        traceback.print_exc(file=sys.stderr)
        err(f"internal error: {type(exc).__name__}: {exc}")


if __name__ == "__main__":
    sys.exit(main())
