"""Drift action: on ``QualityDriftDetected`` starts the replay and/or emits ``QualityRollbackRecommended``
(REPLAY_ENABLED / RECOMMEND_ROLLBACK); on ``QualityRollbackRecommended`` (its rule exists only when
``production_watch.online.restore_on_recommendation`` is on) restores the previous production target
(``fmquality.production.actions``)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Tracer
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import Field

from fmquality.adapters.eventbridge import EventPublisher
from fmquality.production.actions import on_drift, restore
from fmquality.production.drift_alerts import DRIFT_DETECTED, ROLLBACK_RECOMMENDED
from handlers import aws_client
from handlers.env import FunctionEnv, load_env

logger = Logger()
tracer = Tracer()


class DriftActionEnv(FunctionEnv):
    production_target_parameter: str = Field(alias="PRODUCTION_TARGET_PARAMETER", min_length=1)
    state_machine_arn: str | None = Field(alias="STATE_MACHINE_ARN", default=None)
    replay_enabled: bool = Field(alias="REPLAY_ENABLED", default=True)
    recommend_rollback: bool = Field(alias="RECOMMEND_ROLLBACK", default=True)
    restore_enabled: bool = Field(alias="RESTORE_ENABLED", default=False)


@logger.inject_lambda_context(log_event=False, clear_state=True)
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    env = load_env(DriftActionEnv)
    kind, detail = event.get("detail-type"), event.get("detail") or {}
    if kind == DRIFT_DETECTED:
        events = EventPublisher(env.event_bus_name, aws_client("events"))
        out = on_drift(detail, ssm=aws_client("ssm"), parameter=env.production_target_parameter,
                       sfn=aws_client("stepfunctions") if env.replay_enabled else None,
                       state_machine_arn=env.state_machine_arn,
                       put_event=events.put if env.recommend_rollback else None)
    elif kind == ROLLBACK_RECOMMENDED and env.restore_enabled:
        out = restore(detail, ssm=aws_client("ssm"))
    else:
        out = {"skipped": f"{kind} not acted on"}
    logger.info("drift action", extra=out)
    return out
