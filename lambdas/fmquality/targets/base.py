"""Targets: what produces the answers a run scores.

A target spec is a string (CLI ``--target``/``--control``, execution input ``target``/``control``,
the pipeline's input) or the equivalent object:

  ``recorded``                              the dataset line's own ``response`` (the default)
  ``bedrock:<bundle>``                      a prompt bundle (YAML) answered through Converse; <bundle> is
                                            a local path, ``s3://bucket/key[?versionId=V]`` or a Bedrock
                                            Prompt Management ARN (``arn:aws:bedrock:…:prompt/ID[:VERSION]``)
  ``lambda:<function arn or name>``         the chatbot's own function
  ``http://…`` / ``https://…``              the chatbot's endpoint (POST, one JSON object per turn)
  ``python:<module>:<function>``            a function in this process (local runs and tests)
  ``ssm:<parameter name>``                  indirection: the parameter's value is a spec (the production
                                            target); resolved once per run

The object form adds options: ``{"spec": "<string>", "model_id": …, "headers_secret": …, "headers_env": …,
"timeout_s": …, "max_concurrency": …, "max_attempts": …, "max_response_bytes": …}``.

Which kinds a deployment accepts is ``targets.policy``'s business (``ALLOWED_TARGET_KINDS``).

``lambda``, ``http`` and ``python`` targets receive ``TargetRequest`` (only what the chatbot may see:
no labels, expected facts or reference answers) and answer a JSON object with at least ``response``.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from fmquality.domain.results import GenerationUsage
from fmquality.domain.case import Message, PageContext, TestCase

TargetKind = Literal["recorded", "bedrock", "lambda", "http", "python", "ssm"]
RECORDED = "recorded"
# The tag a replayed turn carries (``run.replay``): targets tell the chatbot (a field, a header).
REPLAY_TAG = "replay"
REPLAY_HEADER = "X-Replay"
DEFAULT_MAX_RESPONSE_BYTES = 1_000_000
# A chatbot that proxies an OpenAI-style API says ``finish_reason``; these name the same stops as
# Converse's ``stopReason`` does, which is what the rubric's ``generation.incomplete_stop_reasons`` lists.
STOP_REASON_SYNONYMS = {"length": "max_tokens", "content_filter": "content_filtered"}


class TargetSpec(BaseModel):
    """A parsed target spec. ``kind`` and ``ref`` come from the spec string; the rest are options."""

    model_config = ConfigDict(extra="forbid")

    kind: TargetKind
    ref: str = ""  # bundle location, function, URL, module:function or parameter name
    model_id: str | None = None  # bedrock: overrides the bundle's model (model-change runs)
    headers_secret: str | None = None  # http: Secrets Manager secret (ARN or name) holding a JSON object of headers
    headers_env: str | None = None  # http: environment variable holding a JSON object of headers (local runs)
    # The whole call, connect to last byte: a deadline, not a per-read timeout (a slow-drip endpoint
    # cannot hold a call past it).
    timeout_s: float = Field(default=30.0, gt=0, le=900)
    max_concurrency: int | None = Field(default=None, ge=1, le=10000)
    max_attempts: int = Field(default=4, ge=1, le=10)
    # http: the largest reply body read; a larger one is an error ("response too large"), never parsed.
    max_response_bytes: int = Field(default=DEFAULT_MAX_RESPONSE_BYTES, ge=1, le=64 * 1024 * 1024)

    @field_validator("ref")
    @classmethod
    def _strip(cls, value: str) -> str:
        return value.strip()

    @model_validator(mode="after")
    def _ref_present(self) -> "TargetSpec":
        if self.kind != "recorded" and not self.ref:
            raise ValueError(f"a {self.kind} target needs a location after '{self.kind}:'")
        if self.kind == "python" and self.ref.count(":") != 1:
            raise ValueError(f"a python target is python:<module>:<function>, got python:{self.ref}")
        return self

    @classmethod
    def parse(cls, value: "str | dict[str, Any] | TargetSpec | None") -> "TargetSpec":
        """``None`` and ``"recorded"`` are the recorded target. Raises ValueError naming the problem."""
        if value is None:
            return cls(kind="recorded")
        if isinstance(value, TargetSpec):
            return value
        if isinstance(value, dict):
            options = dict(value)
            text = options.pop("spec", None)
            if not isinstance(text, str):
                raise ValueError("a target object needs \"spec\": \"<kind>:<location>\"")
            return cls(**{**cls._split(text), **options})
        if isinstance(value, str):
            return cls(**cls._split(value))
        raise ValueError(f"a target is a spec string or object, got {type(value).__name__}")

    @staticmethod
    def _split(text: str) -> dict[str, str]:
        text = text.strip()
        if text == RECORDED:
            return {"kind": "recorded"}
        if text.startswith(("http://", "https://")):
            return {"kind": "http", "ref": text}
        kind, sep, ref = text.partition(":")
        if not sep or kind not in ("bedrock", "lambda", "python", "ssm"):
            raise ValueError(f"unknown target {text!r}: expected recorded, bedrock:…, lambda:…, http(s)://…, "
                             "python:<module>:<function> or ssm:<parameter>")
        return {"kind": kind, "ref": ref}

    def spec_string(self) -> str:
        if self.kind == "recorded":
            return RECORDED
        return self.ref if self.kind == "http" else f"{self.kind}:{self.ref}"

    def describe(self) -> dict[str, Any]:
        """What a report records of the spec (never a header value)."""
        return self.model_dump(exclude_none=True, exclude_defaults=True) | {"spec": self.spec_string()}


class TargetRequest(BaseModel):
    """One turn as the chatbot sees it. Built from a test case by ``request_for``: nothing the
    chatbot must not see (labels, expected facts or products, reference answers, the recorded answer)."""

    test_id: str
    query: str
    conversation_history: list[Message] = Field(default_factory=list)
    locale: str
    page_context: PageContext = Field(default_factory=PageContext)
    # A replay of captured traffic (``run.replay``): the chatbot must not act on it (no order changed, no
    # message sent). HTTP targets also send the header ``X-Replay: true``.
    replay: bool = False


def request_for(case: TestCase) -> TargetRequest:
    return TargetRequest(test_id=case.test_id, query=case.query, conversation_history=case.conversation_history,
                         locale=case.locale, page_context=case.page_context, replay=REPLAY_TAG in case.tags)


class TargetReply(BaseModel):
    """What a chatbot answers: ``response`` is required; the rest is kept when given."""

    model_config = ConfigDict(extra="ignore")

    response: str
    citations: list[Any] = Field(default_factory=list)
    tool_calls: list[Any] = Field(default_factory=list)
    latency_ms: float | None = None
    usage: GenerationUsage = Field(default_factory=GenerationUsage)
    cost_usd: float | None = None
    # Why the answer stopped: Converse's stopReason, or a chatbot's own ``stop_reason`` /
    # ``finish_reason`` (OpenAI's "length" and "content_filter" read as "max_tokens", "content_filtered").
    stop_reason: str | None = None
    # The version that served THIS answer (a Lambda's ExecutedVersion, an endpoint's X-Chatbot-Version
    # header): set by the target, never read from the chatbot's JSON, and it can change mid-run.
    _served_version: str | None = PrivateAttr(default=None)

    @model_validator(mode="before")
    @classmethod
    def _stop_reason(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("stop_reason") is None and data.get("finish_reason") is not None:
            data = {**data, "stop_reason": data["finish_reason"]}
        if isinstance(data, dict) and isinstance(data.get("stop_reason"), str):
            data = {**data, "stop_reason": STOP_REASON_SYNONYMS.get(data["stop_reason"], data["stop_reason"])}
        return data

    @property
    def served_version(self) -> str | None:
        return self._served_version

    def served_by(self, version: str | None) -> "TargetReply":
        self._served_version = version
        return self


class Target(Protocol):
    """Something that answers a case. ``id`` and ``version`` name what answered (a bundle's id and
    version, a function ARN and version, an endpoint URL) and are recorded in every result."""

    spec: TargetSpec

    @property
    def id(self) -> str: ...

    @property
    def version(self) -> str | None: ...

    def answer(self, case: TestCase) -> TargetReply:
        """One attempt. Raises TargetError (retryable or not) when no valid answer came back."""
        ...
