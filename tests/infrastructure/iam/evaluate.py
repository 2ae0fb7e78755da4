"""Evaluate IAM requests against identity policies with @cloud-copilot/iam-simulate (npm, pinned in
package.json / package-lock.json), through simulate.mjs: one node process per batch.

The simulator implements AWS's policy evaluation logic (explicit Deny over Allow, wildcards and
NotAction/NotResource, every condition operator including ForAllValues/ForAnyValue and IfExists) and
validates each request: the action must exist, the resource ARN must be one of the action's resource
types, and the context keys must be ones the action supports, so a request we model wrongly fails
loudly instead of passing.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SCRIPT = Path(__file__).resolve().parent / "simulate.mjs"
ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "node_modules" / "@cloud-copilot" / "iam-simulate"

ALLOWED = "Allowed"


class EvaluatorUnavailable(RuntimeError):
    pass


@dataclass(frozen=True)
class Evaluation:
    decision: str  # Allowed | ImplicitlyDenied | ExplicitlyDenied | Error
    errors: Any = None

    @property
    def allowed(self) -> bool:
        return self.decision == ALLOWED


def available() -> str | None:
    """Why the evaluator cannot run here, or None."""
    if shutil.which("node") is None:
        return "node is not installed"
    if not PACKAGE.exists():
        return f"{PACKAGE.relative_to(ROOT)} is missing: run `npm ci` (make test does)"
    return None


def principal_for(role_arn: str) -> str:
    """The session a service assumes the role as (Lambda, Step Functions, CodePipeline, EventBridge)."""
    account = role_arn.split(":")[4]
    name = role_arn.rsplit("/", 1)[1]
    return f"arn:aws:sts::{account}:assumed-role/{name}/session"


def evaluate(requests: list[dict[str, Any]]) -> list[Evaluation]:
    """``requests``: {"role_arn", "action", "resource", "context", "policies": [{"name", "policy"}],
    "resource_policy" (optional)}, in order. Every request is made over TLS (aws:SecureTransport true), as
    the SDKs make them."""
    problem = available()
    if problem:
        raise EvaluatorUnavailable(problem)
    batch = []
    for i, request in enumerate(requests):
        account = request["role_arn"].split(":")[4]
        if any("managed_policy_arn" in p for p in request["policies"]):
            raise ValueError(f"{request['role_arn']}: a managed policy is attached; list its document to evaluate it")
        batch.append({"id": str(i), "principal": principal_for(request["role_arn"]), "action": request["action"],
                      "resource": request["resource"], "account": account,
                      "context": {"aws:SecureTransport": "true", **(request.get("context") or {})},
                      "policies": request["policies"], "resourcePolicy": request.get("resource_policy")})
    completed = subprocess.run(["node", str(SCRIPT)], input=json.dumps({"requests": batch}), capture_output=True,
                               text=True, cwd=ROOT, check=False, timeout=600)
    if completed.returncode != 0:
        raise RuntimeError(f"simulate.mjs failed ({completed.returncode}): {completed.stderr[-2000:]}")
    results = {r["id"]: r for r in json.loads(completed.stdout)["results"]}
    return [Evaluation(results[str(i)]["decision"], results[str(i)]["errors"]) for i in range(len(requests))]
