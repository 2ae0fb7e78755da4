"""make_judge: the judge each Lambda builds from its JUDGE / JUDGE_MODEL_ID environment."""

from __future__ import annotations

import boto3
import pytest

from fmquality.judges.factory import make_judge
from fmquality.judges.offline import OfflineJudge
from fmquality.judges.scripted import ScriptedJudge


def test_offline_and_scripted():
    assert isinstance(make_judge("offline", None), OfflineJudge)
    scripted = make_judge("scripted", None)
    assert isinstance(scripted, ScriptedJudge) and scripted.script == {} and scripted.default is None


def test_bedrock_uses_the_given_client_and_model(rubric):
    from fmquality.judges.bedrock.judge import BedrockJudge

    client = boto3.client("bedrock-runtime", region_name="us-east-1")
    judge = make_judge("bedrock", "eu.anthropic.claude-3-5-sonnet-20240620-v1:0", boto3_client=client)
    assert isinstance(judge, BedrockJudge)
    assert judge.model_id == "eu.anthropic.claude-3-5-sonnet-20240620-v1:0"
    # Without a model id the rubric's pinned model is used.
    assert make_judge("bedrock", None, boto3_client=client, rubric=rubric).model_id == rubric.judge.model_id


def test_an_unknown_judge_is_refused():
    with pytest.raises(ValueError, match="unknown judge 'gpt'"):
        make_judge("gpt", None)
