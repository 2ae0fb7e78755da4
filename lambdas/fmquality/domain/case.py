"""What a run is given: a test case (one dataset line, with the profile fields of the research-agent
and tool-use profiles), its conversation, page and catalog entries, and its human label.

These pydantic models are the input contract of the README's dataset format: unknown fields are kept
in ``metadata``, every other field is validated.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, field_validator, model_validator


class Intent(str, Enum):
    RECOMMENDATION = "recommendation"
    PRODUCT_QUESTION = "product_question"
    FAQ = "faq"
    ORDER_TRACKING = "order_tracking"
    RETURN_REQUEST = "return_request"
    PROMOTION = "promotion"
    CHECKOUT_HELP = "checkout_help"
    CHITCHAT = "chitchat"


class Message(BaseModel):
    model_config = ConfigDict(extra="forbid")

    role: Literal["user", "assistant"]
    content: str


class OrderContext(BaseModel):
    model_config = ConfigDict(extra="allow")

    order_id: str | None = None
    status: str | None = None
    ship_date: str | None = None
    eta: str | None = None


# The signed-in shopper's verified age band. (A catalog entry's age rating stays free text, "teen",
# "16+", "Mature (17+)", 「全年齢」: the checks read the youngest age it names.)
AgeBand = Literal["under_13", "13_17", "18_plus"]
# What a red-team (or probe) case expects of a careful assistant.
ExpectedBehavior = Literal["refuse", "defer", "answer_within_policy", "route_to_human"]


class Account(BaseModel):
    model_config = ConfigDict(extra="allow")

    age_band: AgeBand | None = None


class PageContext(BaseModel):
    model_config = ConfigDict(extra="allow")

    current_asin: str | None = None
    store_section: str | None = None
    order: OrderContext | None = None
    account: Account | None = None


class CatalogItem(BaseModel):
    model_config = ConfigDict(extra="allow")

    asin: str = Field(min_length=1)
    title: str = Field(min_length=1)
    price: float = Field(ge=0, allow_inf_nan=False)
    currency: Literal["USD", "JPY"] = "USD"
    availability: Literal["in_stock", "out_of_stock", "preorder", "limited"] = "in_stock"
    author: str | None = None
    title_ja: str | None = None
    title_romaji: str | None = None
    genre: str | None = None


class Label(BaseModel):
    model_config = ConfigDict(extra="allow")

    acceptable: StrictBool  # "yes" or 1 is not a label: the line is refused, naming the field
    defect: str | None = None
    notes: str | None = None


def check_locale(value: str) -> str:
    """A language-region tag such as 'en-US' or 'ja-JP' (test cases and captured turns alike)."""
    parts = value.split("-")
    if len(parts) != 2 or not parts[0].isalpha() or not parts[1].isalnum():
        raise ValueError(f"locale must look like 'en-US' or 'ja-JP', got {value!r}")
    return value


Complexity = Literal["simple", "medium", "complex"]


SourceKind = Literal["web", "kb", "paper", "tool", "other"]


class Citation(BaseModel):
    """A citation in the answer: the sentence (or span) it is attached to and the source it names."""

    model_config = ConfigDict(extra="forbid")

    source_id: str = Field(min_length=1)
    sentence: str = Field(min_length=1)
    quote: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _span_is_sentence(cls, data: Any) -> Any:
        # "span" is accepted as a synonym of "sentence" (a citation may cover part of a sentence).
        if isinstance(data, dict) and "span" in data and "sentence" not in data:
            data = {**data, "sentence": data["span"]}
            data.pop("span")
        return data


class Source(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    title: str = Field(min_length=1)
    kind: SourceKind
    url: str | None = None
    text: str | None = None


class ToolCall(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)
    result: Any = None
    error: str | None = None

    @property
    def failed(self) -> bool:
        return bool(self.error)


class ExpectedTool(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    # Subset match: every argument given here must be in the call with the same (normalised) value.
    arguments: dict[str, Any] | None = None


class TestCase(BaseModel):
    """One line of the JSON Lines dataset. Unknown fields are moved into ``metadata``.

    ``intent`` is a category of the rubric's profile (for MangaAssist one of ``Intent``); the dataset
    loader checks it against the profile's categories. The profile fields (``citations`` ...
    ``complexity``) are optional and empty by default; the research-agent and tool-use checks read
    them."""

    __test__ = False  # not a pytest class
    model_config = ConfigDict(extra="forbid")

    test_id: str = Field(min_length=1)
    intent: str = Field(min_length=1)
    locale: str = "en-US"
    query: str
    response: str | None = None
    conversation_history: list[Message] = Field(default_factory=list)
    page_context: PageContext = Field(default_factory=PageContext)
    expected_products: list[str] = Field(default_factory=list)
    expected_facts: list[str] = Field(default_factory=list)
    forbidden_content: list[str] = Field(default_factory=list)
    reference_response: str | None = None
    retrieved_chunks: list[str] = Field(default_factory=list)
    catalog: list[CatalogItem] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    label: Label | None = None
    # Profile fields (research-agent, tool-use): what the agent cited, retrieved and called, and what
    # the case expects of it.
    citations: list[Citation] = Field(default_factory=list)
    sources: list[Source] = Field(default_factory=list)
    tool_calls: list[ToolCall] = Field(default_factory=list)
    expected_tools: list[ExpectedTool] = Field(default_factory=list)
    forbidden_tools: list[str] = Field(default_factory=list)
    required_keywords: list[str] = Field(default_factory=list)
    required_facts: list[str] = Field(default_factory=list)
    complexity: Complexity | None = None
    expected_behavior: ExpectedBehavior | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _keep_unknown_fields(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        known = set(cls.model_fields)
        unknown = {k: v for k, v in data.items() if k not in known}
        if not unknown:
            return data
        kept = {k: v for k, v in data.items() if k in known}
        metadata = dict(kept.get("metadata") or {})
        metadata.update(unknown)
        kept["metadata"] = metadata
        return kept

    @field_validator("intent", mode="before")
    @classmethod
    def _intent_value(cls, value: Any) -> Any:
        return value.value if isinstance(value, Enum) else value

    @field_validator("required_keywords", "required_facts", "forbidden_tools")
    @classmethod
    def _entries_not_blank(cls, value: list[str]) -> list[str]:
        if any(not v.strip() for v in value):
            raise ValueError("entries must not be blank")
        return value

    @model_validator(mode="after")
    def _unique_source_ids(self) -> "TestCase":
        ids = [s.id for s in self.sources]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ValueError(f"sources: duplicate id(s) {dupes}")
        return self

    @field_validator("query")
    @classmethod
    def _query_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("query must not be empty")
        return value

    @field_validator("locale")
    @classmethod
    def _locale_shape(cls, value: str) -> str:
        return check_locale(value)

    @property
    def is_japanese(self) -> bool:
        return self.locale.lower().startswith("ja")

    def catalog_by_asin(self) -> dict[str, CatalogItem]:
        return {item.asin: item for item in self.catalog}
