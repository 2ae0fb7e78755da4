"""Thin Lambda entry points: parse the event, call the core through the adapters, return a model.

boto3 clients are created on first use and kept for the life of the container (``aws_client``),
never at import, so a test can import a handler inside ``moto.mock_aws``.
"""

from __future__ import annotations

import os
from functools import cache
from typing import Any

# The Bedrock judge owns its retries (backoff with jitter, then JudgeThrottled for Step Functions):
# botocore makes a single attempt so the two never multiply.
_CLIENT_CONFIGS: dict[str, dict[str, Any]] = {
    "bedrock-runtime": {"read_timeout": 60, "connect_timeout": 5,
                        "retries": {"total_max_attempts": 1, "mode": "standard"}},
}


@cache
def aws_client(service: str) -> Any:
    import boto3
    from botocore.config import Config

    settings = _CLIENT_CONFIGS.get(service, {"retries": {"mode": "standard"}})
    return boto3.client(service, config=Config(**settings))


@cache
def run_rubric(bucket: str, key: str) -> Any:
    """The resolved rubric Prepare wrote for a run (runs/<run_id>/rubric.json), read once per
    container: every item of a run uses the same key."""
    from fmquality.adapters.s3 import S3Store
    from fmquality.config.rubric import Rubric

    return Rubric.model_validate(S3Store(aws_client("s3")).read_json(bucket, key))


@cache
def run_targets(bucket: str, key: str) -> dict[str, Any]:
    """The target specs Prepare wrote for a run (runs/<run_id>/targets.json, ``ssm:`` already resolved):
    {"candidate": TargetSpec, "control": TargetSpec | None}, read once per container."""
    from fmquality.adapters.s3 import S3Store
    from fmquality.targets.base import TargetSpec

    raw = S3Store(aws_client("s3")).read_json(bucket, key)
    return {arm: TargetSpec.model_validate(raw[arm]) if raw.get(arm) else None for arm in ("candidate", "control")}


@cache
def judge_for(name: str, model_id: str | None) -> Any:
    """One judge per container, so its connection is reused.

    The Bedrock judge sits behind the verdict cache in the evaluation table (TABLE_NAME; items
    VERDICT#<hash> with the expires_at TTL), so re-scoring an unchanged item makes no Bedrock call.
    VERDICT_CACHE=off turns it off. The offline and scripted judges are never cached (free)."""
    from fmquality.judges.factory import make_judge

    client = aws_client("bedrock-runtime") if name == "bedrock" else None
    judge = make_judge(name, model_id, boto3_client=client)
    table_name = os.environ.get("TABLE_NAME")
    if name == "bedrock" and table_name and os.environ.get("VERDICT_CACHE", "on").lower() != "off":
        from fmquality.judges.cache import CachingJudge, DynamoVerdictStore

        judge = CachingJudge(judge, DynamoVerdictStore(table_name, aws_client("dynamodb")))
    return judge


def reset_caches() -> None:
    """Forget cached clients, rubrics, targets and judges (tests: each moto mock is a fresh account)."""
    import sys

    aws_client.cache_clear()
    run_rubric.cache_clear()
    run_targets.cache_clear()
    judge_for.cache_clear()
    # The Generate function's targets, only if that handler was ever imported (it imports the target code).
    generate_module = sys.modules.get("handlers.generate")
    if generate_module is not None:
        generate_module.target_for.cache_clear()
