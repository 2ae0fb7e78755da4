"""Weekly sampler: read the last ``window_days`` days of captured turns, draw the stratified sample,
write it as datasets/production/sample-<date>.jsonl and start the evaluation state machine on it
(trigger ``schedule:production-sample``, recorded target)."""

from __future__ import annotations

import json
import uuid
from datetime import date, datetime, timedelta, timezone
from typing import Any

from aws_lambda_powertools import Logger, Tracer
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import Field

from fmquality.adapters.s3 import S3Store, s3_uri
from fmquality.config.watch import WatchConfig
from fmquality.config.watch_loader import load_watch_config
from fmquality.production.sample import (SAMPLE_TRIGGER, dataset_text, read_turns_s3, sample_key,
                                         stratified_sample)
from handlers import aws_client
from handlers.env import FunctionEnv, load_env

logger = Logger()
tracer = Tracer()


class SamplerEnv(FunctionEnv):
    state_machine_arn: str = Field(alias="STATE_MACHINE_ARN", min_length=1)


@tracer.capture_method
def run_sampler(today: date, env: SamplerEnv, config: WatchConfig, s3: Any, sfn: Any) -> dict[str, Any]:
    days = [today - timedelta(days=n) for n in range(config.sampling.window_days, 0, -1)]
    turns, errors = read_turns_s3(s3, env.bucket_name, days)
    if errors:
        logger.warning("bad turn lines skipped", extra={"count": len(errors), "first": errors[:3]})
    sampled, summary = stratified_sample(turns, rate=config.sampling.rate,
                                         min_per_stratum=config.sampling.min_per_stratum,
                                         seed=config.sampling.seed, day_from=days[0], day_to=days[-1])
    if not sampled:
        logger.warning("no turns captured in the window", extra={"from": days[0].isoformat(), "to": days[-1].isoformat()})
        return {"sampled": 0, "population": 0, "started": False}
    key = sample_key(today)
    S3Store(s3).write_text(env.bucket_name, key, dataset_text(sampled), "application/x-ndjson")
    execution = sfn.start_execution(
        stateMachineArn=env.state_machine_arn,
        name=f"production-sample-{today.isoformat()}-{uuid.uuid4().hex[:8]}",
        input=json.dumps({"trigger": SAMPLE_TRIGGER, "dataset": s3_uri(env.bucket_name, key)}),
    )
    logger.info("sample written, evaluation started",
                extra={"sampled": summary.sampled, "population": summary.population, "key": key})
    return {"sampled": summary.sampled, "population": summary.population, "dataset": s3_uri(env.bucket_name, key),
            "execution_arn": execution["executionArn"], "started": True,
            "strata": [s.model_dump() for s in summary.strata]}


@logger.inject_lambda_context(log_event=False, clear_state=True)
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    env = load_env(SamplerEnv)
    raw = (event or {}).get("time")  # EventBridge scheduled events carry the time
    today = datetime.fromisoformat(raw.replace("Z", "+00:00")).date() if raw else datetime.now(timezone.utc).date()
    return run_sampler(today, env, load_watch_config(), aws_client("s3"), aws_client("stepfunctions"))
