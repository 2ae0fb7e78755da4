"""The verdict cache in the evaluation table (moto): item shape, TTL attribute, expiry, and the
scorer Lambdas' Bedrock judge sitting behind it."""

from __future__ import annotations

import pytest

from fmquality.schemes.mangaassist import render_case
from fmquality.judges.base import JudgeRequest
from fmquality.adapters.verdicts import DynamoVerdictStore
from fmquality.judges.cache import CachingJudge
from fmquality.judges.scripted import ScriptedJudge
from fmquality.domain.case import TestCase
from moto_env import TABLE

NOW = 1_750_000_000


def make_request(rubric, response="Hello! I'm MangaAssist. What are you in the mood to read?") -> JudgeRequest:
    case = TestCase(test_id="chat-001", intent="chitchat", query="hi", response=response)
    return JudgeRequest(dimension="fluency", sub_scores=["grammar", "tone"], case=case,
                        rubric_version=rubric.version, guidance=rubric.judge_guidance["fluency"],
                        case_data=render_case(case))


def test_a_verdict_is_stored_with_the_ttl_attribute_and_read_back(aws, rubric):
    clock = [float(NOW)]
    store = DynamoVerdictStore(TABLE, aws.ddb, clock=lambda: clock[0])
    inner = ScriptedJudge()
    judge = CachingJudge(inner, store)
    first = judge.judge(make_request(rubric), rubric)
    assert first.ok and not first.from_cache

    key = judge.key_for(make_request(rubric), rubric)
    item = aws.ddb.get_item(TableName=TABLE, Key={"pk": {"S": f"VERDICT#{key}"}, "sk": {"S": "VERDICT"}})["Item"]
    assert int(item["expires_at"]["N"]) == NOW + 30 * 86_400  # the table's TTL attribute, epoch seconds
    ttl = aws.ddb.describe_time_to_live(TableName=TABLE)["TimeToLiveDescription"]
    assert ttl["AttributeName"] == "expires_at"

    again = CachingJudge(ScriptedJudge(), store).judge(make_request(rubric), rubric)
    assert again.from_cache and again.calls == 0 and again.usage.cached_verdicts == 1
    assert again.verdict == first.verdict

    changed = CachingJudge(ScriptedJudge(), store).judge(make_request(rubric, response="Hi! Need a manga tip?"),
                                                         rubric)
    assert not changed.from_cache

    # DynamoDB deletes expired items lazily: an expired item that is still there is a miss.
    clock[0] = NOW + 31 * 86_400
    assert not CachingJudge(ScriptedJudge(), store).judge(make_request(rubric), rubric).from_cache


def test_errors_are_not_written_to_the_table(aws, rubric):
    store = DynamoVerdictStore(TABLE, aws.ddb)
    judge = CachingJudge(ScriptedJudge(default="judge call rejected: ValidationException"), store)
    assert not judge.judge(make_request(rubric), rubric).ok
    assert aws.ddb.scan(TableName=TABLE)["Count"] == 0


@pytest.mark.parametrize(("name", "cached"), [("bedrock", True), ("offline", False), ("scripted", False)])
def test_scorer_lambdas_cache_only_the_bedrock_judge_in_the_table(aws, monkeypatch, name, cached):
    import handlers

    handlers.reset_caches()
    judge = handlers.judge_for(name, "anthropic.claude-3-7-sonnet-20250219-v1:0" if name == "bedrock" else None)
    assert isinstance(judge, CachingJudge) == cached
    if cached:
        assert judge.inner.name == "bedrock" and isinstance(judge.store, DynamoVerdictStore)
        assert judge.store.table.table_name == TABLE

    monkeypatch.setenv("VERDICT_CACHE", "off")
    handlers.reset_caches()
    assert not isinstance(handlers.judge_for(name, None), CachingJudge)
