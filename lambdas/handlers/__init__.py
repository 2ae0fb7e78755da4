"""What the Lambda entry points share: AWS clients, a run's rubric and targets, the target of an arm and
the judge, each made on first use and kept for the life of the container (never at import, so a test
can import a handler inside ``moto.mock_aws``; ``reset_caches`` forgets them all).
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from fmquality.adapters.s3 import BucketStorage, S3Store
from fmquality.config.environment import function_environment
from fmquality.config.rubric import Rubric
from fmquality.run import layout

# The Bedrock judge owns its retries (backoff with jitter, then JudgeThrottled for Step Functions):
# botocore makes a single attempt so the two never multiply.
_CLIENT_CONFIGS: dict[str, dict[str, Any]] = {
    "bedrock-runtime": {"read_timeout": 60, "connect_timeout": 5,
                        "retries": {"total_max_attempts": 1, "mode": "standard"}},
}


# Clients given from outside instead of made here: the local engine's Bedrock judge client, made from
# the user's own credentials before the engine replaces them with embedded AWS's fake ones.
_GIVEN_CLIENTS: dict[str, Any] = {}


def give_client(service: str, client: Any | None) -> None:
    """Use ``client`` for ``service`` (None: make one again); forgets the clients and judges made."""
    if client is None:
        _GIVEN_CLIENTS.pop(service, None)
    else:
        _GIVEN_CLIENTS[service] = client
    reset_caches()


@cache
def aws_client(service: str) -> Any:
    if service in _GIVEN_CLIENTS:
        return _GIVEN_CLIENTS[service]
    import boto3
    from botocore.config import Config

    settings = _CLIENT_CONFIGS.get(service, {"retries": {"mode": "standard"}})
    return boto3.client(service, config=Config(**settings))


def run_storage(bucket: str) -> BucketStorage:
    """The bucket of the run's files (``run.layout``)."""
    return BucketStorage(S3Store(aws_client("s3")), bucket)


@cache
def run_rubric(bucket: str, key: str) -> Rubric:
    """The resolved rubric Prepare wrote for a run, read once per container: every item of a run uses it."""
    return layout.read_rubric(run_storage(bucket), key)


@cache
def _run_case(bucket: str, key: str) -> str:
    return json.dumps(layout.read_case(run_storage(bucket), key), ensure_ascii=False)


def resolved_item(event: dict[str, Any]) -> dict[str, Any]:
    """The event with a case stub (a large case Prepare wrote to its own file, ``domain.payload``) replaced
    by the case; a generated answer, which the state carries in the generation record for a stub, set
    as its response (none when the generation failed). Any other event as it came."""
    item = event.get("item")
    if not layout.is_case_stub(item):
        return event
    case = json.loads(_run_case(event["bucket"], item[layout.CASE_REF]))
    generation = event.get("generation")
    if isinstance(generation, dict):
        case["response"] = None if generation.get("error") else generation.get("response")
    return {**event, "item": case}


@cache
def run_targets(bucket: str, key: str) -> layout.RunTargets:
    """The target specs Prepare wrote for a run (``ssm:`` already resolved), read once per container."""
    return layout.read_targets(run_storage(bucket), key)


@cache
def target_for(bucket: str, targets_key: str, arm: str, rubric_key: str | None) -> Any:
    """One target per run and arm per container, so its client and loaded prompt bundle are reused; the
    run's rubric prices Bedrock answers."""
    from fmquality.run.targets import arm_target  # the target implementations: Generate's only

    rubric = run_rubric(bucket, rubric_key) if rubric_key else None
    return arm_target(run_targets(bucket, targets_key), arm, rubric, where=f"s3://{bucket}/{targets_key}")


@cache
def judge_for(name: str, model_id: str | None) -> Any:
    """One judge per container, so its connection is reused.

    The Bedrock judge sits behind the verdict cache in the evaluation table (TABLE_NAME; items
    VERDICT#<hash> with the expires_at TTL), so re-scoring an unchanged item makes no Bedrock call.
    VERDICT_CACHE=off turns it off. The offline and scripted judges are never cached (free)."""
    from fmquality.judges.factory import make_judge

    client = aws_client("bedrock-runtime") if name == "bedrock" else None
    judge = make_judge(name, model_id, boto3_client=client)
    environment = function_environment()
    table_name = environment.get("TABLE_NAME")
    if name == "bedrock" and table_name and environment.get("VERDICT_CACHE", "on").lower() != "off":
        from fmquality.adapters.verdicts import DynamoVerdictStore
        from fmquality.judges.cache import CachingJudge

        judge = CachingJudge(judge, DynamoVerdictStore(table_name, aws_client("dynamodb")))
    return judge


def reset_caches() -> None:
    """Forget cached clients, rubrics, targets and judges (tests: each moto mock is a fresh account)."""
    for cached in (aws_client, run_rubric, _run_case, run_targets, target_for, judge_for):
        cached.cache_clear()
