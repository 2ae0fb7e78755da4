"""Test-case fields of the research-agent and tool-use profiles (issue 11, DESIGN section 4).

``Citation``, ``Source``, ``ToolCall`` and ``ExpectedTool`` are the types of the first-class optional
``TestCase`` fields (``citations``, ``sources``, ``tool_calls``, ``expected_tools``, ...), validated
by pydantic like every other field; ``fields_of(case)`` gathers them into the ``ProfileFields`` the
profile checks read. ``parse_profile_fields`` validates the same fields from a plain mapping (kept
for callers that hold raw data). This module imports nothing of ``fmquality.models`` (models imports
it).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from fmquality.domain.case import Citation, Complexity, ExpectedTool, Source, ToolCall


class ToolExpectation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    expected_tools: list[ExpectedTool] = Field(default_factory=list)
    forbidden_tools: list[str] = Field(default_factory=list)


class ProfileFields(BaseModel):
    """The profile-specific fields of one case; absent lists are empty, an absent expectation None."""

    model_config = ConfigDict(extra="ignore")

    citations: list[Citation] = Field(default_factory=list)
    sources: list[Source] = Field(default_factory=list)
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_expectation: ToolExpectation | None = None
    required_keywords: list[str] = Field(default_factory=list)
    required_facts: list[str] = Field(default_factory=list)
    complexity: Complexity | None = None

    @field_validator("required_keywords", "required_facts")
    @classmethod
    def _no_blank(cls, value: list[str]) -> list[str]:
        if any(not v.strip() for v in value):
            raise ValueError("entries must not be blank")
        return value

    @model_validator(mode="after")
    def _unique_source_ids(self) -> "ProfileFields":
        ids = [s.id for s in self.sources]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ValueError(f"sources: duplicate id(s) {dupes}")
        return self


FIELD_NAMES: tuple[str, ...] = tuple(f for f in ProfileFields.model_fields if f != "tool_expectation")
EXPECTATION_KEYS: tuple[str, ...] = tuple(ToolExpectation.model_fields)


def _field_path(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else ("." if out else "") + str(part)
    return out or "<line>"


def fields_of(case: Any) -> ProfileFields:
    """The profile fields of a ``TestCase`` (already validated as its own fields)."""
    expectation = None
    if case.expected_tools or case.forbidden_tools:
        expectation = ToolExpectation(expected_tools=list(case.expected_tools), forbidden_tools=list(case.forbidden_tools))
    return ProfileFields(citations=list(case.citations), sources=list(case.sources), tool_calls=list(case.tool_calls),
                         tool_expectation=expectation, required_keywords=list(case.required_keywords),
                         required_facts=list(case.required_facts), complexity=case.complexity)


def parse_profile_fields(case_metadata: dict[str, Any], source: str, line: int) -> tuple[ProfileFields | None, list[Any]]:
    """Validate the profile fields found in a case's ``metadata``. Returns the fields (None when any
    is invalid) and one ``LineError`` per problem, naming the file, the line and the field path
    (``tool_calls[1].arguments``)."""
    from fmquality.domain.errors import LineError

    data = {k: v for k, v in case_metadata.items() if k in FIELD_NAMES}
    # On a dataset line the expectation is two top-level lists, like expected_facts.
    if "expected_tools" in case_metadata or "forbidden_tools" in case_metadata:
        data["tool_expectation"] = {k: case_metadata[k] for k in EXPECTATION_KEYS if k in case_metadata}
    try:
        return ProfileFields.model_validate(data), []
    except ValidationError as exc:
        errors = []
        for err in exc.errors():
            reason = err["msg"]
            if err["type"] in ("literal_error", "enum"):
                reason = f"{reason} (got {err.get('input')!r})"
            loc = err["loc"][1:] if err["loc"][:1] == ("tool_expectation",) and len(err["loc"]) > 1 else err["loc"]
            errors.append(LineError(file=source, line=line, field=_field_path(loc), reason=reason))
        return None, errors
