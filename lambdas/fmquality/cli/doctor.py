"""`fmquality doctor --stack NAME [--pipeline-stack NAME] [--region R]`: the deployed gate's
configuration checked with the caller's credentials before the first run (``run.doctor``).

Exit codes: 0 every check passed (warnings and skipped hints printed), 1 a check found a problem (each
printed with what to do), 3 the checks could not be done (no credentials or region, a stack not found
or not readable), 2 bad arguments (argparse).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Callable

from fmquality.cli.common import EXIT_GATE_FAILED, EXIT_PASSED, EXIT_RUN_FAILED, err

_LABELS = {"ok": "ok", "problem": "PROBLEM", "warning": "warning", "skipped": "skipped"}


def register(sub: Any) -> None:
    doctor = sub.add_parser(
        "doctor", help="check a deployed stack's configuration (models in the region, parameters, alerts, the "
                       "pipeline's trigger) before the first run; exit 1 when a check finds a problem")
    doctor.add_argument("--stack", required=True,
                        help="the evaluation stack's name, e.g. MangaAssistQuality-dev-Evaluation")
    doctor.add_argument("--pipeline-stack", help="the pipeline stack's name, e.g. MangaAssistQuality-dev-Pipeline")
    doctor.add_argument("--region", help="the stacks' region (default: the AWS configuration's)")
    doctor.set_defaults(command_fn=run_doctor_command)


def run_doctor_command(args: argparse.Namespace, client: Callable[[str], Any] | None = None) -> int:
    from botocore.exceptions import BotoCoreError, ClientError

    from fmquality.run.doctor import PROBLEM, CannotCheck, diagnose

    region = args.region
    try:
        if client is None:
            import boto3

            session = boto3.session.Session(region_name=args.region)
            region = session.region_name
            if not region:
                err("fmquality doctor: no region: pass --region or set AWS_REGION; nothing was checked")
                return EXIT_RUN_FAILED
            if session.get_credentials() is None:
                err("fmquality doctor: no AWS credentials (set AWS_PROFILE, or the AWS_ACCESS_KEY_ID pair); nothing "
                    "was checked")
                return EXIT_RUN_FAILED
            client = session_clients(session)
        findings = diagnose(client, args.stack, region or "", args.pipeline_stack)
    except CannotCheck as exc:
        err(f"fmquality doctor: {exc}; nothing more was checked")
        return EXIT_RUN_FAILED
    except (BotoCoreError, ClientError) as exc:  # a profile that does not exist, an unreachable endpoint, ...
        err(f"fmquality doctor: the checks could not be done: {exc}")
        return EXIT_RUN_FAILED
    print_findings(findings, args.stack, region)
    return EXIT_GATE_FAILED if any(f.status == PROBLEM for f in findings) else EXIT_PASSED


def session_clients(session: Any) -> Callable[[str], Any]:
    """service name -> one client of the session (the region's), made when first asked for."""
    clients: dict[str, Any] = {}

    def client(name: str) -> Any:
        if name not in clients:
            clients[name] = session.client(name)
        return clients[name]

    return client


def print_findings(findings: list[Any], stack: str, region: str | None, out: Any = None) -> None:
    out = out or sys.stdout
    print(f"fmquality doctor: {stack} in {region}", file=out)
    for finding in findings:
        print(f"  {_LABELS.get(finding.status, finding.status):<8} {finding.check}: {finding.detail}", file=out)
        if finding.fix and finding.status != "skipped":
            print(f"  {'':<8} {'fix' if finding.status != 'ok' else 'hint'}: {finding.fix}", file=out)
    counts = {status: sum(f.status == status for f in findings) for status in _LABELS}
    verdict = ("problems found: fix them before the first run" if counts["problem"]
               else "ready for a first run")
    plural = {"problem": "problems", "warning": "warnings"}
    print(", ".join(f"{n} {plural.get(status, status) if n > 1 else status}" for status, n in counts.items() if n)
          + f": {verdict}", file=out)
