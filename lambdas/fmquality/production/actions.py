"""Acting on a drift alarm (``QualityDriftDetected``), each by configuration:

- **replay**: start the evaluation state machine on the alarm's window, the current production target
  against the previous one: ``{"trigger": "drift:replay", "replay": {"from", "to"}, "target", "control",
  "drift": <stratum and report link>}`` (the replay options of the execution input);
- **recommend**: emit ``QualityRollbackRecommended`` naming the version to restore (the production
  target parameter's previous value) and the version in service;
- **restore** (off unless configured, on ``QualityRollbackRecommended``): write the version to restore
  into the production target's SSM parameter, unless the parameter changed since the recommendation.

The versions are the production target parameter's values (``GetParameterHistory``): what production
runs now, and what it ran before. Clients are passed in."""

from __future__ import annotations

import json
import re
from typing import Any

from fmquality.production.drift_alerts import ROLLBACK_RECOMMENDED

REPLAY_TRIGGER = "drift:replay"


def target_versions(ssm: Any, parameter: str) -> tuple[str | None, str | None]:
    """(current value, the value before it) of the production target parameter."""
    values: list[str] = []
    for page in ssm.get_paginator("get_parameter_history").paginate(Name=parameter):
        values.extend(p["Value"] for p in page["Parameters"])
    current = values[-1] if values else None
    previous = next((v for v in reversed(values[:-1]) if v != current), None)
    return current, previous


def execution_name(detail: dict[str, Any]) -> str:
    raw = f"drift-{detail['window']['to']}-{detail['stratum']['key']}"
    return re.sub(r"[^A-Za-z0-9_-]", "-", raw)[:80]


def replay_input(detail: dict[str, Any], current: str, previous: str) -> dict[str, Any]:
    return {"trigger": REPLAY_TRIGGER, "replay": {"from": detail["window"]["from"], "to": detail["window"]["to"]},
            "target": current, "control": previous,
            "drift": {"stratum": detail["stratum"], "report_link": detail.get("report_link")}}


def start_replay(sfn: Any, state_machine_arn: str, detail: dict[str, Any], current: str, previous: str) -> str | None:
    """Start the replay; the same alarm twice (a redelivered event) starts it once (the execution name)."""
    try:
        return sfn.start_execution(stateMachineArn=state_machine_arn, name=execution_name(detail),
                                   input=json.dumps(replay_input(detail, current, previous)))["executionArn"]
    except sfn.exceptions.ExecutionAlreadyExists:
        return None


def rollback_detail(detail: dict[str, Any], current: str, previous: str, parameter: str) -> dict[str, Any]:
    return {"parameter": parameter, "restore_version": previous, "current_version": current,
            "stratum": detail["stratum"], "window": detail["window"], "drop": detail.get("drop"),
            "report_link": detail.get("report_link")}


def on_drift(detail: dict[str, Any], *, ssm: Any, parameter: str, sfn: Any | None, state_machine_arn: str | None,
             put_event: Any | None) -> dict[str, Any]:
    """Replay (when ``sfn`` is given) and recommend (when ``put_event`` is given); what was done."""
    current, previous = target_versions(ssm, parameter)
    if current is None or previous is None:
        return {"replay": None, "recommended": None, "reason": f"{parameter} has no previous version"}
    out: dict[str, Any] = {"current": current, "previous": previous, "replay": None, "recommended": None}
    if sfn is not None and state_machine_arn:
        out["replay"] = start_replay(sfn, state_machine_arn, detail, current, previous)
    if put_event is not None:
        put_event(ROLLBACK_RECOMMENDED, rollback_detail(detail, current, previous, parameter))
        out["recommended"] = previous
    return out


def restore(detail: dict[str, Any], *, ssm: Any) -> dict[str, Any]:
    """Write ``restore_version`` into the parameter, only while it still holds ``current_version``."""
    parameter = detail["parameter"]
    now = ssm.get_parameter(Name=parameter)["Parameter"]["Value"]
    if now != detail["current_version"]:
        return {"restored": False, "reason": "the parameter changed since the recommendation"}
    ssm.put_parameter(Name=parameter, Value=detail["restore_version"], Type="String", Overwrite=True)
    return {"restored": True, "parameter": parameter, "value": detail["restore_version"]}
