"""The ``bedrock:<bundle>`` target: a versioned prompt bundle answered through Converse.

A bundle is the chatbot's prompt as configuration: a YAML file (local, or ``s3://bucket/key?versionId=V``
for an exact object version) or a Bedrock Prompt Management prompt (``arn:aws:bedrock:…:prompt/ID[:VERSION]``),
mapped to the same model::

    id: mangaassist-chat
    version: "2026-11-20.1"
    model_id: us.anthropic.claude-haiku-4-5-20251001-v1:0   # model or inference profile
    inference_config: {maxTokens: 600, temperature: 0.3, topP: 0.9}
    system_prompt: |                                        # jinja2: catalog, retrieved_chunks, page_context, locale
      You are MangaAssist ... Answer in {{ locale }}.
      {% for p in catalog %}- {{ p.title }} ({{ p.asin }}): {{ p.price }} {{ p.currency }}, {{ p.availability }}
      {% endfor %}
    tool_config: {...}                                      # optional Converse toolConfig

The bundle is loaded once when the target is built: a missing or malformed bundle stops the run
before any case, not 159 times.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, unquote, urlsplit

import yaml
from jinja2 import StrictUndefined, TemplateError
from jinja2.sandbox import SandboxedEnvironment
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from fmquality.judges.pricing import cost_usd
from fmquality.models import GenerationUsage, JudgeUsage, TestCase
from fmquality.targets.aws import ClientFactory, default_client_factory, target_error
from fmquality.targets.base import TargetError, TargetReply, TargetSpec

if TYPE_CHECKING:
    from fmquality.rubric import ModelPrice

PROMPT_ARN = re.compile(r"^(arn:aws[a-z-]*:bedrock:[a-z0-9-]+:\d{12}:prompt/[0-9a-zA-Z]{10})(?::([0-9A-Za-z]{1,5}))?$")
PriceLookup = Callable[[str | None], "ModelPrice | None"]


class InferenceConfig(BaseModel):
    """Converse ``inferenceConfig``, with Converse's own key names."""

    model_config = ConfigDict(extra="forbid")

    maxTokens: int | None = Field(default=None, ge=1)  # noqa: N815 - Converse's key
    temperature: float | None = Field(default=None, ge=0.0, le=1.0)
    topP: float | None = Field(default=None, ge=0.0, le=1.0)  # noqa: N815 - Converse's key
    stopSequences: list[str] | None = None  # noqa: N815 - Converse's key


class PromptBundle(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    version: str | None = None
    description: str | None = None
    model_id: str | None = None  # may come from the spec's model_id instead
    inference_config: InferenceConfig = Field(default_factory=InferenceConfig)
    system_prompt: str
    tool_config: dict[str, Any] | None = None


class LoadedBundle(BaseModel):
    bundle: PromptBundle
    location: str
    source_version: str | None = None  # the S3 VersionId or the Prompt Management version
    text_digest: str | None = None  # of the YAML text: names an unversioned local bundle

    @property
    def target_version(self) -> str | None:
        """The bundle's ``version``, ``@`` the S3 object version when there is one: both matter (the
        YAML says what the author meant, the object version what was actually read)."""
        parts = [p for p in (self.bundle.version, self.source_version) if p]
        if parts:
            return "@".join(parts)
        return f"sha256:{self.text_digest}" if self.text_digest else None


# --------------------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------------------


def load_bundle(ref: str, client: ClientFactory) -> LoadedBundle:
    """The bundle at ``ref`` (local path, s3:// URI or prompt ARN). ValueError names what is wrong."""
    if ref.startswith("s3://"):
        return _from_s3(ref, client)
    match = PROMPT_ARN.match(ref)
    if match:
        return _from_prompt_management(match.group(1), match.group(2), client)
    if ref.startswith("arn:"):
        raise ValueError(f"bedrock bundle {ref!r}: not a Prompt Management prompt ARN "
                         "(arn:aws:bedrock:REGION:ACCOUNT:prompt/ID[:VERSION])")
    path = Path(ref)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"bedrock bundle {ref}: {exc.strerror or exc}") from exc
    return LoadedBundle(bundle=parse_bundle(text, ref), location=ref, text_digest=_digest(text))


def parse_bundle(text: str, where: str) -> PromptBundle:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ValueError(f"bedrock bundle {where}: not YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise ValueError(f"bedrock bundle {where}: expected a mapping with id, version, model_id, system_prompt")
    if isinstance(data.get("version"), (int, float)):
        data["version"] = str(data["version"])  # `version: 3` in YAML is a number
    try:
        bundle = PromptBundle.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
        raise ValueError(f"bedrock bundle {where}: {problems}") from exc
    compile_template(bundle.system_prompt, where)
    return bundle


def _from_s3(uri: str, client: ClientFactory) -> LoadedBundle:
    parts = urlsplit(uri)
    bucket, key = parts.netloc, unquote(parts.path.lstrip("/"))
    if not bucket or not key:
        raise ValueError(f"bedrock bundle {uri}: expected s3://bucket/key[?versionId=V]")
    query = parse_qs(parts.query)
    unknown = set(query) - {"versionId"}
    if unknown:
        raise ValueError(f"bedrock bundle {uri}: unknown query parameter(s) {sorted(unknown)}; only versionId")
    params: dict[str, str] = {"Bucket": bucket, "Key": key}
    if query.get("versionId"):
        params["VersionId"] = query["versionId"][0]
    try:
        reply = client("s3").get_object(**params)
        text = reply["Body"].read().decode("utf-8")
    except Exception as exc:  # noqa: BLE001 - the run cannot start without its bundle
        raise ValueError(f"bedrock bundle {uri}: {target_error(exc, 'GetObject')}") from exc
    version_id = reply.get("VersionId")
    if version_id == "null":  # an object written before versioning was enabled
        version_id = None
    return LoadedBundle(bundle=parse_bundle(text, uri), location=uri, source_version=version_id,
                        text_digest=_digest(text))


def _from_prompt_management(arn: str, version: str | None, client: ClientFactory) -> LoadedBundle:
    params = {"promptIdentifier": arn}
    if version:
        params["promptVersion"] = version
    where = f"{arn}:{version}" if version else arn
    try:
        prompt = client("bedrock-agent").get_prompt(**params)
    except Exception as exc:  # noqa: BLE001 - the run cannot start without its prompt
        raise ValueError(f"bedrock prompt {where}: {target_error(exc, 'GetPrompt')}") from exc
    return LoadedBundle(bundle=bundle_from_prompt(prompt, where), location=where,
                        source_version=None if not prompt.get("version") else str(prompt["version"]))


def bundle_from_prompt(prompt: dict[str, Any], where: str) -> PromptBundle:
    """A GetPrompt reply as a bundle: its FIRST variant's template (TEXT, or a CHAT template's system
    blocks), model and inference configuration. Prompt Management's ``{{variable}}`` placeholders are
    jinja2 syntax, so the same context fills them."""
    variants = prompt.get("variants") or []
    if not variants:
        raise ValueError(f"bedrock prompt {where}: the prompt has no variant")
    variant = variants[0]
    config = variant.get("templateConfiguration") or {}
    tool_config = None
    if variant.get("templateType") == "TEXT" and (config.get("text") or {}).get("text"):
        system = config["text"]["text"]
    elif variant.get("templateType") == "CHAT" and (config.get("chat") or {}).get("system"):
        chat = config["chat"]
        system = "\n\n".join(block["text"] for block in chat["system"] if block.get("text"))
        tool_config = chat.get("toolConfiguration")
    else:
        raise ValueError(f"bedrock prompt {where}: variant {variant.get('name')!r} has no text template or "
                         "chat system prompt")
    text_inference = (variant.get("inferenceConfiguration") or {}).get("text") or {}
    data = {
        "id": prompt.get("name") or prompt.get("id") or where,
        "version": str(prompt["version"]) if prompt.get("version") else None,
        "model_id": variant.get("modelId"),
        "inference_config": {k: text_inference[k] for k in ("maxTokens", "temperature", "topP", "stopSequences")
                             if text_inference.get(k) is not None},
        "system_prompt": system,
        "tool_config": tool_config,
    }
    try:
        bundle = PromptBundle.model_validate(data)
    except ValidationError as exc:
        raise ValueError(f"bedrock prompt {where}: {exc.errors()[0]['msg']}") from exc
    compile_template(bundle.system_prompt, where)
    # The bundle version is the prompt's version; LoadedBundle records it once, as source_version.
    return bundle.model_copy(update={"version": None})


_ENV = SandboxedEnvironment(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True)


def compile_template(source: str, where: str) -> Any:
    try:
        return _ENV.from_string(source)
    except TemplateError as exc:
        raise ValueError(f"bedrock bundle {where}: system_prompt is not a valid jinja2 template: {exc}") from exc


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


# --------------------------------------------------------------------------------------------------
# Answering
# --------------------------------------------------------------------------------------------------


def template_context(case: TestCase) -> dict[str, Any]:
    """What the system prompt may use: what the chatbot's retrieval would give it for this turn."""
    return {
        "catalog": [item.model_dump(mode="json", exclude_none=True) for item in case.catalog],
        "retrieved_chunks": list(case.retrieved_chunks),
        "page_context": case.page_context.model_dump(mode="json", exclude_none=True),
        "locale": case.locale,
    }


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
        self._price = price_for(self.model_id) if price_for else None

    @property
    def id(self) -> str:
        return self.bundle.id

    @property
    def version(self) -> str | None:
        return self.loaded.target_version

    def converse_params(self, case: TestCase) -> dict[str, Any]:
        """The exact Converse request for one case."""
        try:
            system = self._template.render(**template_context(case))
        except TemplateError as exc:
            raise TargetError(f"system_prompt of {self.bundle.id} does not render for this case: {exc}") from exc
        messages = [{"role": m.role, "content": [{"text": m.content}]} for m in case.conversation_history]
        messages.append({"role": "user", "content": [{"text": case.query}]})
        params: dict[str, Any] = {"modelId": self.model_id, "messages": messages}
        if system.strip():
            params["system"] = [{"text": system}]
        inference = self.bundle.inference_config.model_dump(exclude_none=True)
        if inference:
            params["inferenceConfig"] = inference
        if self.bundle.tool_config:
            params["toolConfig"] = self.bundle.tool_config
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
        return TargetReply(response=text, tool_calls=tool_calls, cost_usd=cost,
                           usage=GenerationUsage(input_tokens=usage.input_tokens, output_tokens=usage.output_tokens)
                           ).served_by(self.version)
