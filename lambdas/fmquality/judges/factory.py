"""Build a judge by name: ``offline`` (default, deterministic), ``bedrock`` (Converse), ``scripted`` (tests)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Union

from fmquality.judges.offline import OfflineJudge
from fmquality.judges.scripted import ScriptedJudge

if TYPE_CHECKING:
    from fmquality.judges.bedrock.judge import BedrockJudge
    from fmquality.config.rubric import Rubric

JUDGE_NAMES = ("offline", "bedrock", "scripted")


def make_judge(
    name: str,
    model_id: str | None = None,
    boto3_client: Any = None,
    *,
    rubric: "Rubric | None" = None,
) -> Union[OfflineJudge, "BedrockJudge", ScriptedJudge]:
    """``model_id`` pins the Bedrock model or inference profile; without it the rubric's
    ``judge.model_id`` is used (``rubric`` or else the embedded default rubric).
    ``boto3_client`` is the bedrock-runtime client (bedrock only)."""
    if name == "offline":
        return OfflineJudge()
    if name == "scripted":
        # A ScriptedJudge without a script agrees with full marks on every asked sub-score:
        # the deterministic checks still decide the sub-scores they can settle.
        return ScriptedJudge(model_id=model_id) if model_id else ScriptedJudge()
    if name == "bedrock":
        # Imported here so the offline and scripted paths never load the Bedrock code.
        from fmquality.judges.bedrock.judge import BedrockJudge

        if not model_id:
            if rubric is None:
                from fmquality.config.rubric import load_rubric

                rubric = load_rubric()
            model_id = rubric.judge.model_id
        return BedrockJudge(model_id=model_id, boto3_client=boto3_client)
    raise ValueError(f"unknown judge {name!r}; expected one of {list(JUDGE_NAMES)}")
