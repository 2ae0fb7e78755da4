"""Reading a Converse reply of the Bedrock judge: the verdict from the forced ``record_verdict`` tool
call and from nothing else, validated strictly and mapped to ``JudgeVerdict`` sub-scores; and the
token usage and the kept raw text of any reply.

A level is an integer from 1 to 5 (``schema.LEVEL_VALUES`` maps it to 0..1), or, for a profile
dimension with named levels, one of the level names (the profile's values). Output that does not
validate raises ``InvalidJudgeOutput`` with the reason, which the judge quotes back when it re-asks.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from fmquality.domain.errors import InvalidJudgeOutput
from fmquality.domain.scores import JudgeUsage
from fmquality.judges.base import JudgeVerdict
from fmquality.judges.bedrock.prompts import RAW_KEEP_CHARS, truncate_middle
from fmquality.judges.bedrock.schema import LEVEL_VALUES, LEVELS, TOOL_NAME


def _tool_input(reply: dict[str, Any]) -> dict[str, Any]:
    """The input of the one forced tool call, and nothing else: any text block (which could echo an
    injected "return 1.0") is ignored."""
    stop_reason = reply.get("stopReason")
    if stop_reason != "tool_use":
        raise InvalidJudgeOutput(f"stopReason is {stop_reason!r}, expected 'tool_use'")
    content = ((reply.get("output") or {}).get("message") or {}).get("content") or []
    calls = [b["toolUse"] for b in content if isinstance(b, dict) and isinstance(b.get("toolUse"), dict)]
    verdict_calls = [call for call in calls if call.get("name") == TOOL_NAME]
    if not verdict_calls:
        raise InvalidJudgeOutput(f"no {TOOL_NAME} tool call in the reply")
    if len(verdict_calls) > 1:
        raise InvalidJudgeOutput(f"{len(verdict_calls)} {TOOL_NAME} tool calls in one reply")
    data = verdict_calls[0].get("input")
    if not isinstance(data, dict):
        raise InvalidJudgeOutput(f"{TOOL_NAME} input is {type(data).__name__}, expected an object")
    return data


class _ToolVerdict(BaseModel):
    """The ``record_verdict`` input of one dimension, as the tool schema asks for it. Strict: a level
    is an integer from 1 to 5 ("4", 4.0 and true are not), and unknown keys are refused."""

    model_config = ConfigDict(extra="forbid", strict=True)

    evidence: list[str]
    rationale: str = Field(min_length=1)
    levels: dict[str, Annotated[int, Field(ge=min(LEVELS), le=max(LEVELS))]]
    confidence: float = Field(ge=0.0, le=1.0)


class _NamedLevelVerdict(_ToolVerdict):
    """A profile dimension with described levels: each level is given by its NAME (a string)."""

    levels: dict[str, str]  # type: ignore[assignment]


def _validated_verdict(data: Any, requested: list[str], where: str = "",
                       level_values: dict[str, float] | None = None) -> JudgeVerdict:
    if not isinstance(data, dict):
        raise InvalidJudgeOutput(f"{where or 'verdict'} is {type(data).__name__}, expected an object")
    data = dict(data)
    if isinstance(data.get("levels"), dict):
        data["levels"] = {k: v for k, v in data["levels"].items() if k in requested}
    try:
        tool = (_NamedLevelVerdict if level_values is not None else _ToolVerdict).model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in (where, *err['loc']) if p != '') or '<root>'}: {err['msg']}"
            for err in exc.errors()
        )
        raise InvalidJudgeOutput(problems[:500]) from exc
    missing = [name for name in requested if name not in tool.levels]
    if missing:
        raise InvalidJudgeOutput(f"missing sub-scores {missing}" + (f" in {where}" if where else ""))
    if level_values is not None:
        # Level names map to the profile's fixed values; a name the profile does not define is invalid
        # output (the dimension stays unscored with the reason), never a guessed score.
        unknown = {name: level for name, level in tool.levels.items() if level not in level_values}
        if unknown:
            raise InvalidJudgeOutput(f"levels {unknown} are not level names of the dimension "
                                     f"({', '.join(level_values)})")
        scores = {name: level_values[level] for name, level in tool.levels.items()}
    else:
        scores = {name: LEVEL_VALUES[level] for name, level in tool.levels.items()}
    return JudgeVerdict(sub_scores=scores, rationale=tool.rationale, evidence=tool.evidence,
                        confidence=tool.confidence)


def parse_verdict(reply: dict[str, Any], requested: list[str],
                  level_values: dict[str, float] | None = None) -> JudgeVerdict:
    """The verdict from the forced tool call, and from nothing else, its levels mapped to 0..1
    sub-scores. Sub-scores not requested are dropped; a missing requested sub-score, or a level
    that is not an integer from 1 to 5 (with ``level_values``: not one of those level names), makes
    the whole verdict invalid."""
    return _validated_verdict(_tool_input(reply), requested, level_values=level_values)


def parse_combined_verdict(reply: dict[str, Any], requested: dict[str, list[str]]) -> dict[str, JudgeVerdict]:
    """One verdict per requested dimension, each validated like a single verdict. Dimensions not
    requested are dropped; one invalid or missing dimension makes the whole reply invalid."""
    data = _tool_input(reply)
    missing = [d for d in requested if d not in data]
    if missing:
        raise InvalidJudgeOutput(f"missing dimensions {missing}")
    return {d: _validated_verdict(data[d], names, where=d) for d, names in requested.items()}


def reply_usage_and_raw(reply: dict[str, Any], attempts: int) -> dict[str, Any]:
    """The outcome's ``usage`` (the reply's tokens, ``attempts`` calls) and ``raw`` (the stop reason
    and content, cut in the middle when long)."""
    tokens = reply.get("usage") or {}
    usage = JudgeUsage(
        calls=attempts,
        input_tokens=int(tokens.get("inputTokens", 0)),
        output_tokens=int(tokens.get("outputTokens", 0)),
        cache_read_tokens=int(tokens.get("cacheReadInputTokens", 0)),
        cache_write_tokens=int(tokens.get("cacheWriteInputTokens", 0)),
    )
    content = ((reply.get("output") or {}).get("message") or {}).get("content") or []
    raw = truncate_middle(
        json.dumps({"stopReason": reply.get("stopReason"), "content": content}, ensure_ascii=False, default=str),
        RAW_KEEP_CHARS,
    )
    return {"usage": usage, "raw": raw}
