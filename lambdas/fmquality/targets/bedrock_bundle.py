"""Prompt bundles of the ``bedrock:<bundle>`` target: the chatbot's prompt as configuration.

A bundle is the chatbot's prompt as configuration: a YAML file (local, or ``s3://bucket/key?versionId=V``
for an exact object version) or a Bedrock Prompt Management prompt
(``arn:aws:bedrock:…:prompt/ID[:VERSION]``, VERSION ``DRAFT`` or a number, as GetPrompt takes it),
mapped to the same model::

    id: mangaassist-chat
    version: "2026-11-20.1"
    model_id: us.anthropic.claude-haiku-4-5-20251001-v1:0   # model or inference profile
    inference_config: {maxTokens: 600, temperature: 0.3}    # temperature OR topP, never both
    system_prompt: |                            # jinja2: catalog, retrieved_chunks, page_context, locale, query
      You are MangaAssist ... Answer in {{ locale }}.
      {% for p in catalog %}- {{ p.title }} ({{ p.asin }}): {{ p.price }} {{ p.currency }}, {{ p.availability }}
      {% endfor %}
    tool_config: {...}                                      # optional Converse toolConfig
    messages:                                               # optional chat template (a CHAT prompt's messages)
      - {role: user, content: "Question: {{ query }}"}      # the last one: a user turn that uses query

The bundle is loaded once when the target is built: a missing or malformed bundle stops the run
before any case, not 159 times. ``BundleRejected`` names a bundle Converse would refuse on every case:
``temperature`` with ``topP`` (Claude 4.5 models reject the pair with a ValidationException, which is
final), and ``UnsupportedPromptTemplate`` a Prompt Management construct this mapping cannot carry.
"""

from __future__ import annotations

import hashlib
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qs, unquote, urlsplit

from jinja2 import StrictUndefined, TemplateError, meta
from jinja2.sandbox import SandboxedEnvironment
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from fmquality.config.yamldoc import yaml_mapping
from fmquality.domain.errors import BundleRejected, UnsupportedPromptTemplate
from fmquality.targets.aws import ClientFactory, target_error


# GetPrompt's promptVersion: DRAFT or a number of 1 to 5 digits, not all zeros.
PROMPT_VERSION = re.compile(r"^(?:DRAFT|(?=[0-9]{1,5}$)[0-9]*[1-9][0-9]*)$")


PROMPT_ARN = re.compile(r"^(arn:aws[a-z-]*:bedrock:[a-z0-9-]+:\d{12}:prompt/[0-9a-zA-Z]{10})(?::([^:]*))?$")


# What a template may use: what the chatbot's retrieval gives it for this turn, and the turn's query.
TEMPLATE_VARIABLES = frozenset({"catalog", "retrieved_chunks", "page_context", "locale", "query"})


class InferenceConfig(BaseModel):
    """Converse ``inferenceConfig``, with Converse's own key names."""

    model_config = ConfigDict(extra="forbid")

    maxTokens: int | None = Field(default=None, ge=1)  # noqa: N815 - Converse's key
    temperature: float | None = Field(default=None, ge=0.0, le=1.0)
    topP: float | None = Field(default=None, ge=0.0, le=1.0)  # noqa: N815 - Converse's key
    stopSequences: list[str] | None = None  # noqa: N815 - Converse's key


class TemplateMessage(BaseModel):
    """One message of a chat template: its role and its text blocks, each a jinja2 template."""

    model_config = ConfigDict(extra="forbid")

    role: Literal["user", "assistant"]
    content: list[str] = Field(min_length=1)

    @field_validator("content", mode="before")
    @classmethod
    def _one_text(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value


class PromptBundle(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    version: str | None = None
    description: str | None = None
    model_id: str | None = None  # may come from the spec's model_id instead
    inference_config: InferenceConfig = Field(default_factory=InferenceConfig)
    system_prompt: str
    tool_config: dict[str, Any] | None = None
    # A chat template: sent around the conversation history (see the module's docstring).
    messages: list[TemplateMessage] = Field(default_factory=list)
    # Converse additionalModelRequestFields (a Prompt Management variant's own).
    additional_model_request_fields: dict[str, Any] | None = None


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


def load_bundle(ref: str, client: ClientFactory) -> LoadedBundle:
    """The bundle at ``ref`` (local path, s3:// URI or prompt ARN). ValueError names what is wrong."""
    if ref.startswith("s3://"):
        return _from_s3(ref, client)
    match = PROMPT_ARN.match(ref)
    if match:
        version = match.group(2)
        if version is not None and not PROMPT_VERSION.match(version):
            raise BundleRejected(f"bedrock prompt {ref}: version {version!r} is not DRAFT or a number from 1 to "
                                 "99999 (GetPrompt's promptVersion); leave it out for the working draft")
        return _from_prompt_management(match.group(1), version, client)
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
    # The strict reader: a key given twice or a NaN/infinite number (a temperature of .nan) is refused.
    data = yaml_mapping(text, f"bedrock bundle {where}", ValueError,
                        "a bundle (a mapping with id, version, model_id, system_prompt)")
    if isinstance(data.get("version"), (int, float)):
        data["version"] = str(data["version"])  # `version: 3` in YAML is a number
    try:
        bundle = PromptBundle.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
        raise ValueError(f"bedrock bundle {where}: {problems}") from exc
    check_bundle(bundle, f"bedrock bundle {where}")
    return bundle


def check_bundle(bundle: PromptBundle, label: str) -> None:
    """What Converse would refuse on every case, refused once here (``label`` names the bundle)."""
    config = bundle.inference_config
    if config.temperature is not None and config.topP is not None:
        raise BundleRejected(
            f"{label} (id {bundle.id}): inference_config sets both temperature and topP; Claude 4.5 models reject "
            "the pair on Converse (ValidationException, final). Keep one of them")
    compile_template(bundle.system_prompt, label)
    if not bundle.messages:
        return
    for index, message in enumerate(bundle.messages):
        for block in message.content:
            unknown = sorted(template_variables(block, label) - TEMPLATE_VARIABLES)
            if unknown:
                raise UnsupportedPromptTemplate(
                    f"{label}: message {index + 1} uses {unknown}, not a variable a case fills in "
                    f"({', '.join(sorted(TEMPLATE_VARIABLES))})")
    last = bundle.messages[-1]
    if last.role != "user" or not any("query" in template_variables(b, label) for b in last.content):
        raise UnsupportedPromptTemplate(
            f"{label}: the chat template's last message must be the user's turn and use {{{{query}}}} (the "
            "case's query goes there; the conversation history goes before it)")


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
                        source_version=prompt_version(prompt, version))


def prompt_version(prompt: dict[str, Any], requested: str | None) -> str | None:
    """The version GetPrompt answered (a versionless ARN is the working draft). The draft changes
    in place, so its version is ``DRAFT@<updatedAt>``: two runs on different drafts say so."""
    version = str(prompt["version"]) if prompt.get("version") else requested
    if version == "DRAFT" and prompt.get("updatedAt"):
        updated = prompt["updatedAt"]
        if isinstance(updated, datetime):
            updated = updated.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ") if updated.tzinfo else \
                updated.strftime("%Y-%m-%dT%H:%M:%S")
        return f"DRAFT@{updated}"
    return version


def bundle_from_prompt(prompt: dict[str, Any], where: str) -> PromptBundle:
    """A GetPrompt reply as a bundle: its FIRST variant's template, model and inference configuration.
    TEXT: the text is the system prompt. CHAT: the system blocks are the system prompt, the messages
    the chat template (the last one the user's turn, using ``{{query}}``), the tool configuration
    the toolConfig. Prompt Management's ``{{variable}}`` placeholders are jinja2 syntax, so the same
    context fills them; a variable outside it, a content block that is not text, an agent prompt
    (genAiResource) are refused with UnsupportedPromptTemplate. cachePoint blocks are left out
    (they change the cost of a call, not its answer)."""
    label = f"bedrock prompt {where}"
    variants = prompt.get("variants") or []
    if not variants:
        raise ValueError(f"{label}: the prompt has no variant")
    variant = variants[0]
    name = variant.get("name")
    if variant.get("genAiResource"):
        raise UnsupportedPromptTemplate(f"{label}: variant {name!r} runs an agent (genAiResource), not a model")
    config = variant.get("templateConfiguration") or {}
    tool_config = None
    messages: list[dict[str, Any]] = []
    declared: list[dict[str, Any]] = []
    if variant.get("templateType") == "TEXT" and (config.get("text") or {}).get("text"):
        system = config["text"]["text"]
        declared = config["text"].get("inputVariables") or []
    elif variant.get("templateType") == "CHAT" and ((config.get("chat") or {}).get("system")
                                                     or (config.get("chat") or {}).get("messages")):
        chat = config["chat"]
        system = "\n\n".join(_texts(chat.get("system") or [], f"{label}: system"))
        messages = [{"role": m.get("role"), "content": _texts(m.get("content") or [], f"{label}: message {i + 1}")}
                    for i, m in enumerate(chat.get("messages") or [])]
        tool_config = chat.get("toolConfiguration")
        declared = chat.get("inputVariables") or []
    else:
        raise ValueError(f"{label}: variant {name!r} has no text template or chat template")
    undeclared = sorted({v.get("name") for v in declared if isinstance(v, dict)} - TEMPLATE_VARIABLES - {None})
    used = sorted(template_variables(system, label) - TEMPLATE_VARIABLES)
    if undeclared or used:
        raise UnsupportedPromptTemplate(
            f"{label}: variable(s) {sorted(set(undeclared) | set(used))} are not filled by a case (a case fills "
            f"{', '.join(sorted(TEMPLATE_VARIABLES))})")
    text_inference = (variant.get("inferenceConfiguration") or {}).get("text") or {}
    data = {
        "id": prompt.get("name") or prompt.get("id") or where,
        "version": str(prompt["version"]) if prompt.get("version") else None,
        "model_id": variant.get("modelId"),
        "inference_config": {k: text_inference[k] for k in ("maxTokens", "temperature", "topP", "stopSequences")
                             if text_inference.get(k) is not None},
        "system_prompt": system,
        "tool_config": _without_cache_points(tool_config),
        "messages": [m for m in messages if m["content"]],
        "additional_model_request_fields": variant.get("additionalModelRequestFields") or None,
    }
    try:
        bundle = PromptBundle.model_validate(data)
    except ValidationError as exc:
        raise ValueError(f"{label}: {exc.errors()[0]['msg']}") from exc
    check_bundle(bundle, label)
    # The bundle version is the prompt's version; LoadedBundle records it once, as source_version.
    return bundle.model_copy(update={"version": None})


def _texts(blocks: list[dict[str, Any]], label: str) -> list[str]:
    """The text of each block; cachePoint blocks left out; anything else refused."""
    texts = []
    for block in blocks:
        if not isinstance(block, dict):
            raise UnsupportedPromptTemplate(f"{label}: a content block is not an object")
        kinds = set(block) - {"cachePoint"}
        if not kinds:
            continue
        if kinds != {"text"} or not isinstance(block["text"], str):
            raise UnsupportedPromptTemplate(f"{label}: {sorted(kinds)} content is not supported (text only)")
        texts.append(block["text"])
    return texts


def _without_cache_points(tool_config: dict[str, Any] | None) -> dict[str, Any] | None:
    if not tool_config:
        return tool_config
    tools = [t for t in tool_config.get("tools") or [] if not (isinstance(t, dict) and set(t) == {"cachePoint"})]
    return {**tool_config, "tools": tools}


_ENV = SandboxedEnvironment(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True)


def compile_template(source: str, where: str) -> Any:
    try:
        return _ENV.from_string(source)
    except TemplateError as exc:
        raise ValueError(f"{_label(where)}: not a valid jinja2 template: {exc}") from exc


def template_variables(source: str, where: str) -> set[str]:
    """The names a template reads from its context."""
    try:
        return meta.find_undeclared_variables(_ENV.parse(source))
    except TemplateError as exc:
        raise ValueError(f"{_label(where)}: not a valid jinja2 template: {exc}") from exc


def _label(where: str) -> str:
    return where if where.startswith("bedrock ") else f"bedrock bundle {where}"


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
