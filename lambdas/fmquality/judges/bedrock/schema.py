"""The ``record_verdict`` tool the Bedrock judge is forced to call: its name, the numbered levels it
grades on, and its JSON schemas (one dimension, several dimensions at once, a profile dimension).

A tool schema is part of the cached prompt prefix (Converse caches the tools and the system text up
to the cache point), so each one depends only on the dimension(s) graded, never on the case: it lists
every sub-score and requires none, and the user message names the sub-scores to grade.
"""

from __future__ import annotations

from typing import Any

TOOL_NAME = "record_verdict"

# The five numbered levels, best first, as the prompt's scale section and the tool schema name them.
LEVELS = (5, 4, 3, 2, 1)
# Level -> the 0..1 sub-score a JudgeVerdict carries: evenly spaced, 1 is 0.0 and 5 is 1.0.
LEVEL_VALUES: dict[int, float] = {level: (level - 1) / 4 for level in LEVELS}

_LEVEL_SCHEMA = {"type": "integer", "enum": sorted(LEVELS)}


def verdict_schema(sub_scores: list[str]) -> dict[str, Any]:
    """One dimension's verdict. Evidence and rationale come before the levels, so a model that
    writes the fields in order reasons before it grades."""
    return {
        "type": "object",
        "properties": {
            "evidence": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Write first: short quotes, copied exactly from the answer or the case "
                               "data, that decide the levels.",
            },
            "rationale": {
                "type": "string",
                "minLength": 1,
                "description": "Write second: two to four sentences naming the decisive defects or "
                               "strengths.",
            },
            "levels": {
                "type": "object",
                "description": "Write third: one level per listed sub-score, 5 (nothing to fix) to 1 "
                               "(failed outright).",
                "properties": {name: dict(_LEVEL_SCHEMA) for name in sub_scores},
                "minProperties": 1,
                "additionalProperties": False,
            },
            "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        },
        "required": ["evidence", "rationale", "levels", "confidence"],
        "additionalProperties": False,
    }


def verdict_tool_spec(sub_scores: list[str]) -> dict[str, Any]:
    """The forced tool of one dimension graded on the numbered levels, listing all its sub-scores."""
    return {
        "name": TOOL_NAME,
        "description": (
            "Record the grade of the answer under evaluation: short evidence quotes, a short "
            "rationale, one level from 1 to 5 per requested sub-score, and a confidence."
        ),
        "inputSchema": {"json": verdict_schema(sub_scores)},
    }


def combined_verdict_tool_spec(sub_scores: dict[str, list[str]]) -> dict[str, Any]:
    """One object per dimension (``sub_scores``: every dimension of the rubric with all its
    sub-scores), each shaped like the single-dimension verdict; none required."""
    return {
        "name": TOOL_NAME,
        "description": (
            "Record the grade of the answer under evaluation: for each requested dimension, short "
            "evidence quotes, a short rationale, one level from 1 to 5 per requested sub-score, and a "
            "confidence."
        ),
        "inputSchema": {
            "json": {
                "type": "object",
                "properties": {d: verdict_schema(names) for d, names in sub_scores.items()},
                "minProperties": 1,
                "additionalProperties": False,
            }
        },
    }


def level_verdict_tool_spec(dimension: str, sub_scores: list[str], level_names: list[str] | None) -> dict[str, Any]:
    """The forced tool of a profile dimension: a level NAME per sub-score when the profile describes
    named levels (``level_names``, best first), else an integer 1..5."""
    schema = verdict_schema(sub_scores)
    if level_names:
        schema["properties"]["levels"]["properties"] = {
            name: {"type": "string", "enum": list(level_names)} for name in sub_scores}
        schema["properties"]["levels"]["description"] = (
            f"Write third: for each listed sub-score, one level name: {', '.join(level_names)} (best first).")
    return {
        "name": TOOL_NAME,
        "description": (f"Record the grade of the answer under evaluation on {dimension}: short evidence "
                        "quotes, a short rationale, one level per requested sub-score, and a confidence."),
        "inputSchema": {"json": schema},
    }
