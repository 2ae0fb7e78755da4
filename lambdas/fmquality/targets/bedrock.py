"""The ``bedrock:<bundle>`` target: a versioned prompt bundle (``targets.bedrock_bundle``) answered
through Converse.

Messages sent to Converse are the chat template's messages but its last, the case's conversation
history, then the template's last message (the current turn; without a template, the query), made
valid for Converse: blank turns left out, a leading assistant turn dropped, consecutive turns of the
same role merged into one message (their texts as separate blocks). A case with nothing left to send
fails with ``ConversationRejected``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from jinja2 import TemplateError

from fmquality.config.pricing import cost_usd
from fmquality.domain.case import TestCase
from fmquality.domain.errors import ConversationRejected, TargetError
from fmquality.domain.results import GenerationUsage
from fmquality.domain.scores import JudgeUsage
from fmquality.targets.aws import ClientFactory, default_client_factory, target_error
from fmquality.targets.base import TargetReply, TargetSpec
from fmquality.targets.bedrock_bundle import LoadedBundle, compile_template, load_bundle

if TYPE_CHECKING:
    from fmquality.config.rubric import ModelPrice

PriceLookup = Callable[[str | None], "ModelPrice | None"]


# --------------------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------------------


# --------------------------------------------------------------------------------------------------
# Answering
# --------------------------------------------------------------------------------------------------


def template_context(case: TestCase) -> dict[str, Any]:
    """What a template may use: what the chatbot's retrieval would give it for this turn, and the query."""
    return {
        "catalog": [item.model_dump(mode="json", exclude_none=True) for item in case.catalog],
        "retrieved_chunks": list(case.retrieved_chunks),
        "page_context": case.page_context.model_dump(mode="json", exclude_none=True),
        "locale": case.locale,
        "query": case.query,
    }


def normalise_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Converse's rules for ``messages``: the first is the user's, roles alternate. Blank text blocks
    and turns left without one are left out, leading assistant turns dropped (the model cannot
    answer what it said first), consecutive turns of one role merged into one message."""
    merged: list[dict[str, Any]] = []
    for message in messages:
        content = [b for b in message["content"] if not isinstance(b.get("text"), str) or b["text"].strip()]
        if not content or (not merged and message["role"] != "user"):
            continue
        if merged and merged[-1]["role"] == message["role"]:
            merged[-1]["content"].extend(content)
        else:
            merged.append({"role": message["role"], "content": list(content)})
    return merged


class BedrockTarget:
    def __init__(self, spec: TargetSpec, client: ClientFactory | None = None, *,
                 loaded: LoadedBundle | None = None, price_for: PriceLookup | None = None) -> None:
        self.spec = spec
        self._client = client or default_client_factory(spec.timeout_s)
        self.loaded = loaded or load_bundle(spec.ref, self._client)
        self.bundle = self.loaded.bundle
        self.model_id = spec.model_id or self.bundle.model_id
        if not self.model_id:
            raise ValueError(f"bedrock bundle {spec.ref}: no model_id in the bundle and none in the target spec")
        self._template = compile_template(self.bundle.system_prompt, spec.ref)
        self._messages = [(m.role, [compile_template(text, spec.ref) for text in m.content])
                          for m in self.bundle.messages]
        self._price = price_for(self.model_id) if price_for else None

    @property
    def id(self) -> str:
        return self.bundle.id

    @property
    def version(self) -> str | None:
        return self.loaded.target_version

    def converse_params(self, case: TestCase) -> dict[str, Any]:
        """The exact Converse request for one case."""
        context = template_context(case)
        try:
            system = self._template.render(**context)
            template = [{"role": role, "content": [{"text": t.render(**context)} for t in texts]}
                        for role, texts in self._messages]
        except TemplateError as exc:
            raise TargetError(f"the prompt of {self.bundle.id} does not render for this case: {exc}") from exc
        history = [{"role": m.role, "content": [{"text": m.content}]} for m in case.conversation_history]
        if template:  # the template's turns, the history, then the template's current turn (with the query)
            turns = template[:-1] + history + template[-1:]
        else:
            turns = history + [{"role": "user", "content": [{"text": case.query}]}]
        messages = normalise_messages(turns)
        if not messages or messages[-1]["role"] != "user":
            raise ConversationRejected(f"ConversationRejected: case {case.test_id} leaves no user turn to send "
                                       "to Converse once blank and leading assistant turns are left out")
        params: dict[str, Any] = {"modelId": self.model_id, "messages": messages}
        if system.strip():
            params["system"] = [{"text": system}]
        inference = self.bundle.inference_config.model_dump(exclude_none=True)
        if inference:
            params["inferenceConfig"] = inference
        if self.bundle.tool_config:
            params["toolConfig"] = self.bundle.tool_config
        if self.bundle.additional_model_request_fields:
            params["additionalModelRequestFields"] = self.bundle.additional_model_request_fields
        return params

    def answer(self, case: TestCase) -> TargetReply:
        params = self.converse_params(case)
        try:
            reply = self._client("bedrock-runtime").converse(**params)
        except Exception as exc:  # noqa: BLE001 - mapped: throttling/5xx/timeouts retryable, the rest final
            raise target_error(exc, "Converse") from exc
        content = ((reply.get("output") or {}).get("message") or {}).get("content") or []
        text = "".join(block["text"] for block in content if isinstance(block.get("text"), str))
        tool_calls = [{"name": b["toolUse"].get("name"), "input": b["toolUse"].get("input"),
                       "tool_use_id": b["toolUse"].get("toolUseId")}
                      for b in content if isinstance(b.get("toolUse"), dict)]
        tokens = reply.get("usage") or {}
        usage = JudgeUsage(input_tokens=int(tokens.get("inputTokens", 0)),
                           output_tokens=int(tokens.get("outputTokens", 0)),
                           cache_read_tokens=int(tokens.get("cacheReadInputTokens", 0)),
                           cache_write_tokens=int(tokens.get("cacheWriteInputTokens", 0)))
        # Unknown price is None, not 0: a model absent from the rubric's judge.prices is not free.
        cost = round(cost_usd(usage, self._price), 6) if self._price is not None else None
        return TargetReply(response=text, tool_calls=tool_calls, cost_usd=cost, stop_reason=reply.get("stopReason"),
                           usage=GenerationUsage(input_tokens=usage.input_tokens, output_tokens=usage.output_tokens)
                           ).served_by(self.version)
