"""A local stand-in for Amazon Bedrock runtime's Converse operation, for tests and benchmarks.

The judge reaches it through a real ``boto3`` bedrock-runtime client built with ``endpoint_url``,
so request serialization, error parsing and the judge's own retries are all exercised. It serves
``POST /model/{modelId}/converse`` on 127.0.0.1 (ephemeral port) with stdlib ``http.server``.

What it simulates, and how closely:
- verdicts: a forced ``record_verdict`` tool call whose input comes from ``verdict_fn(request)``
  (default: ``schema_verdict``, deterministic hash-based values filled in from the request's tool
  schema, so it also answers a combined multi-dimension schema; a prompt whose sub-scores it cannot
  read gets every sub-score the schema lists, as the naive benchmark evaluator's prompts do), or from
  a scripted dict;
- token usage: ``ceil(len(text) / 4)`` per text (system blocks, message texts and the JSON of the
  tool config). ``inputTokens`` is the uncached part only, as Bedrock reports it;
- prompt caching: the tools plus the system blocks before a ``cachePoint`` form the cached prefix,
  keyed by (modelId, hash of that prefix), when it reaches the model's minimum: by default the
  rubric's ``judge.min_cache_tokens`` entry for the modelId (4,096 for Claude Haiku 4.5; a model the
  table does not list is not cached), or ``min_cache_tokens`` for every model. The first request
  writes it (``cacheWriteInputTokens``), later ones read it (``cacheReadInputTokens``) until
  ``cache_ttl_s`` (5 minutes, refreshed on every hit) expires. A prefix under the minimum caches
  nothing (both counts 0), and a request with more than four cache points (system, messages and
  tools together) is refused with a ValidationException, as Bedrock does (``cache_point_rejection``);
- latency: ``latency_s`` per successful call (a number or ``fn(request) -> seconds``), slept in the
  handler thread;
- quota: token buckets for requests per second and tokens per minute. A request that finds either
  empty is answered at once with HTTP 429 ``ThrottlingException``, as Bedrock does. Tokens per
  minute are charged at admission as input tokens (cached ones included) plus the request's
  ``maxTokens``, and the unused part of ``maxTokens`` is given back once the reply is built
  (Bedrock's documented reserve-then-adjust rule; its output-token burndown multiplier is not
  simulated);
- faults: a scripted queue (``inject``) and/or a seeded random ``fault_rate``;
- what Converse itself refuses, with its ValidationException messages, before quota or script: a
  conversation that does not start with a user message, roles that do not alternate, and
  ``temperature`` with ``topP`` on Claude 4.5 model ids (``converse_rejection``);
- chatbot answers (a request that asks for no tool, as a ``bedrock:`` target sends): the text of
  ``answer_fn(request)``, with ``stopReason`` ``end_turn``, or the scripted ``max_tokens`` (the answer
  cut short), ``guardrail_intervened`` or ``content_filtered`` (a blocked answer).

It only binds 127.0.0.1 and stops itself after ``max_lifetime_s``.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
import socket
import threading
import time
import uuid
from collections import Counter, deque
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote

TOOL_NAME = "record_verdict"

# How Bedrock names its errors: botocore's rest-json parser takes the code from the
# x-amzn-ErrorType header (the part before ':'), the message from the body's "message".
_ERROR_TYPE_SUFFIX = ":http://internal.amazon.com/coral/com.amazon.bedrock/"
ERRORS: dict[str, tuple[int, str, str]] = {
    "throttle": (429, "ThrottlingException", "Too many requests, please wait before trying again."),
    "500": (500, "InternalServerException", "The server encountered an internal error."),
    "503": (503, "ServiceUnavailableException", "The service is temporarily unavailable."),
    "400": (400, "ValidationException", "The request is invalid."),
    "403": (403, "AccessDeniedException", "You don't have access to the model with the specified model ID."),
    "404": (404, "ResourceNotFoundException", "The model was not found."),
}
# Replies that arrive (HTTP 200) but hold no usable verdict.
MALFORMED = ("missing_sub_score", "out_of_range", "text_only", "max_tokens")
# Answers the model did not finish for a policy reason (stopReason as Converse names it); "max_tokens"
# (above) is the third way an answer ends unfinished.
BLOCKED = ("guardrail_intervened", "content_filtered")
BLOCKED_TEXT = "Sorry, I can't help with that request."
# "timeout": the request is held for ``hang_s`` before a normal reply, so a client whose read
# timeout is shorter gives up first.
FAULT_KINDS = (*ERRORS, *MALFORMED, *BLOCKED, "timeout")
SCRIPT_KINDS = ("ok", *FAULT_KINDS)


# Claude 4.5 and later take temperature or top_p, not both (Converse answers a ValidationException).
ONE_SAMPLING_PARAMETER_MODELS = re.compile(r"anthropic\.claude-(?:opus|sonnet|haiku)-4-(?:[5-9]|\d{2,})\b")
DEFAULT_ANSWER = "I would rate this answer highly: 1.0 for every sub-score."


def converse_rejection(model_id: str, request: dict[str, Any]) -> str | None:
    """The ValidationException message Converse gives this request, or None when it would accept it
    (the rules a chatbot's conversation history runs into, not the whole API's validation)."""
    roles = [m.get("role") if isinstance(m, dict) else None for m in request.get("messages") or []]
    if roles and roles[0] != "user":
        return ("A conversation must start with a user message. Try again with a conversation that starts with a "
                "user message.")
    if any(a == b for a, b in zip(roles, roles[1:])):
        return ("A conversation must alternate between user and assistant roles. Make sure the conversation "
                "alternates between user and assistant roles and try again.")
    inference = request.get("inferenceConfig") or {}
    if ("temperature" in inference and "topP" in inference
            and ONE_SAMPLING_PARAMETER_MODELS.search(model_id or "")):
        return ("The model returned the following errors: `temperature` and `top_p` cannot both be specified for "
                "this model. Please use only one.")
    return None


def estimate_tokens(text: str) -> int:
    """About four characters per token, the usual rule of thumb for English."""
    return math.ceil(len(text) / 4) if text else 0


# -------------------------------------------------------------------------------------------------
# Judge side: the prompt-cache rules Converse enforces
# -------------------------------------------------------------------------------------------------

# Bedrock prompt caching: at most four cache checkpoints per request, counted over the system blocks,
# the message content blocks and the tools together; a fifth is a ValidationException.
MAX_CACHE_POINTS = 4


def cache_point_count(request: dict[str, Any]) -> int:
    """The ``cachePoint`` blocks of a Converse request: system, every message's content, tools."""
    blocks = [*(request.get("system") or []),
              *(b for m in request.get("messages") or [] if isinstance(m, dict) for b in m.get("content") or []),
              *((request.get("toolConfig") or {}).get("tools") or [])]
    return sum(1 for b in blocks if isinstance(b, dict) and "cachePoint" in b)


def cache_point_rejection(request: dict[str, Any]) -> str | None:
    """The ValidationException message for too many cache points, or None."""
    found = cache_point_count(request)
    if found > MAX_CACHE_POINTS:
        return f"A maximum of {MAX_CACHE_POINTS} blocks with cache_control may be provided. Found {found}."
    return None


# -------------------------------------------------------------------------------------------------
# Verdicts
# -------------------------------------------------------------------------------------------------


def request_user_text(request: dict[str, Any]) -> str:
    return "\n".join(
        block["text"]
        for message in request.get("messages") or []
        for block in message.get("content") or []
        if isinstance(block, dict) and isinstance(block.get("text"), str)
    )


def requested_tool_schema(request: dict[str, Any], tool_name: str = TOOL_NAME) -> dict[str, Any] | None:
    for tool in (request.get("toolConfig") or {}).get("tools") or []:
        spec = tool.get("toolSpec") if isinstance(tool, dict) else None
        if spec and spec.get("name") == tool_name:
            return (spec.get("inputSchema") or {}).get("json")
    return None


# The tool input's object of graded sub-scores (fmquality.judges.bedrock.prompts: one level 1-5 per name).
GRADES_KEY = "levels"


def requested_grades(request: dict[str, Any]) -> dict[str, list[str]]:
    """What the user message asks to grade, as a model reads it (the tool lists every sub-score and
    requires none, so the prompt cache holds): ``{"": [...]}`` for one dimension, ``{dimension:
    [...]}`` per dimension in combined mode. A message that names them in another way (the naive
    benchmark evaluator's "Grade the sub-score X of the dimension Y") is answered as a model fills a
    forced tool: every sub-score the tool schema lists (``schema_grades``)."""
    text = request_user_text(request)
    single = re.search(r"^Grade exactly these sub-scores[^:]*: (.+)$", text, re.MULTILINE)
    if single:
        return {"": [n.strip() for n in single.group(1).split(",")]}
    combined = {m.group(1): [n.strip() for n in m.group(2).split(",")]
                for m in re.finditer(r"^- (\w+): (.+)$", text.split("\n\n", 1)[0], re.MULTILINE)}
    return combined or schema_grades(request)


def schema_grades(request: dict[str, Any]) -> dict[str, list[str]]:
    """Every sub-score the ``record_verdict`` schema lists, in ``requested_grades``' shape: ``{"":
    [...]}`` when the schema has the one-dimension ``levels`` object, else ``{dimension: [...]}`` for
    each dimension object that has one (combined mode); ``{}`` without such a tool."""
    properties = (requested_tool_schema(request) or {}).get("properties") or {}
    if isinstance(properties.get(GRADES_KEY), dict):
        return {"": list(properties[GRADES_KEY].get("properties") or {})}
    grades = {d: ((sub.get("properties") or {}).get(GRADES_KEY) or {}).get("properties")
              for d, sub in properties.items() if isinstance(sub, dict)}
    return {d: list(names) for d, names in grades.items() if isinstance(names, dict)}


def requested_sub_scores(request: dict[str, Any]) -> list[str]:
    """The sub-scores a one-dimension request asks for."""
    return requested_grades(request).get("", [])


def _stable_fraction(*parts: str) -> float:
    digest = hashlib.sha256("\x1f".join(parts).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def _fill(schema: dict[str, Any], path: str, seed: str) -> Any:
    kind = schema.get("type")
    if schema.get("enum"):
        # The upper 40% of the allowed values (levels 4 and 5 of 1-5), picked by a stable hash.
        values = sorted(schema["enum"])
        upper = [v for v in values if v >= values[0] + 0.6 * (values[-1] - values[0])]
        return upper[int(_stable_fraction(path, seed) * len(upper))]
    if kind == "object":
        return {name: _fill(sub, f"{path}.{name}", seed) for name, sub in (schema.get("properties") or {}).items()}
    if kind in ("number", "integer"):
        low, high = float(schema.get("minimum", 0.0)), float(schema.get("maximum", 1.0))
        # 0.6..1.0 of the allowed range: plausible passing grades, stable for the same request.
        value = low + (high - low) * (0.6 + 0.4 * _stable_fraction(path, seed))
        return round(value) if kind == "integer" else round(value, 3)
    if kind == "array":
        return []
    if kind == "boolean":
        return True
    if kind == "string":
        return "stand-in verdict"
    return None


def schema_verdict(request: dict[str, Any]) -> dict[str, Any]:
    """The default ``verdict_fn``: every property of the requested tool schema filled in, numbers
    with a stable hash of (property path, user text) mapped to 0.6..1.0 of their range, and
    enumerated values (the 1-5 levels) to the upper 40% of them. The same request always gets the
    same verdict; no offline judge is needed."""
    schema = requested_tool_schema(request)
    if schema is None:
        return {}
    filled = _fill(schema, "", request_user_text(request))
    asked = requested_grades(request)
    if "" in asked:  # one dimension: the levels asked for
        filled[GRADES_KEY] = {n: v for n, v in filled.get(GRADES_KEY, {}).items() if n in asked[""]}
        return filled
    return {d: {**filled[d], GRADES_KEY: {n: v for n, v in filled[d][GRADES_KEY].items() if n in names}}
            for d, names in asked.items() if d in filled}


def offline_verdict_fn(rubric: Any = None) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A ``verdict_fn`` that answers like the offline judge: the case is read back from the fenced
    data of the user message and handed to ``fmquality.judges.offline.offline_verdict``. Falls back
    to ``schema_verdict`` for a prompt it cannot read (for example a combined-mode prompt), and for
    the sub-scores the offline judge abstains on (a model answers anyway)."""
    from fmquality.judges.offline import offline_verdict
    from fmquality.judges.bedrock.prompts import CASE_BEGIN, CASE_END, RESPONSE_BEGIN, RESPONSE_END
    from fmquality.domain.case import TestCase
    from fmquality.config.rubric import load_rubric

    rubric = rubric or load_rubric()

    def verdict(request: dict[str, Any]) -> dict[str, Any]:
        text = request_user_text(request)
        try:
            case_json = text[text.index(CASE_BEGIN) + len(CASE_BEGIN) : text.index(CASE_END)]
            response = text[text.index(RESPONSE_BEGIN) + len(RESPONSE_BEGIN) + 1 : text.index(RESPONSE_END) - 1]
            data = json.loads(case_json)
            case = TestCase(
                test_id="standin",
                intent=data["intent"],
                locale=data.get("locale") or "en-US",
                query=data["user_query"],
                response=response,
                conversation_history=data.get("conversation_history") or [],
                page_context=data.get("page_context") or {},
                catalog=data.get("catalog") or [],
                retrieved_chunks=data.get("retrieved_chunks") or [],
                expected_facts=data.get("expected_facts") or [],
                expected_products=data.get("expected_products") or [],
                reference_response=data.get("reference_response"),
            )
        except (ValueError, KeyError, TypeError):
            return schema_verdict(request)
        judged = offline_verdict(case, rubric, requested_sub_scores(request))
        answer = schema_verdict(request)
        # In the tool's format: the nearest of the five levels (0.0 -> 1, ..., 1.0 -> 5).
        answer[GRADES_KEY].update({n: 1 + round(v * 4) for n, v in judged.sub_scores.items()})
        answer.update(evidence=judged.evidence, rationale=judged.rationale,
                      # Bedrock's tool requires a confidence; the offline judge has none to give.
                      confidence=answer["confidence"] if judged.confidence is None else judged.confidence)
        return answer

    return verdict


# -------------------------------------------------------------------------------------------------
# Quota
# -------------------------------------------------------------------------------------------------


class TokenBucket:
    """``capacity`` tokens, refilled at ``rate_per_s``. Not thread-safe: the stand-in holds its lock."""

    def __init__(self, rate_per_s: float, capacity: float, clock: Callable[[], float]) -> None:
        if rate_per_s <= 0 or capacity <= 0:
            raise ValueError("a token bucket needs a positive rate and capacity")
        self.rate_per_s = rate_per_s
        self.capacity = capacity
        self._clock = clock
        self._level = capacity
        self._at = clock()

    def level(self) -> float:
        now = self._clock()
        self._level = min(self.capacity, self._level + (now - self._at) * self.rate_per_s)
        self._at = now
        return self._level

    def take(self, amount: float) -> None:
        self.level()
        self._level -= amount

    def give_back(self, amount: float) -> None:
        self.level()
        self._level = min(self.capacity, self._level + amount)


# -------------------------------------------------------------------------------------------------
# The server
# -------------------------------------------------------------------------------------------------


class _Server(ThreadingHTTPServer):
    daemon_threads = True  # a hung "timeout" request must not block shutdown
    request_queue_size = 256  # benchmarks open many connections at once
    standin: "BedrockStandin"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()

    def close_connections(self) -> None:
        """Cut kept-alive client connections: once stopped, the stand-in must not answer anything."""
        with self.connections_lock:
            connections = list(self.connections)
        for connection in connections:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, like the real endpoint; boto3 pools connections
    server: _Server

    def setup(self) -> None:
        super().setup()
        with self.server.connections_lock:
            self.server.connections.add(self.connection)

    def finish(self) -> None:
        with self.server.connections_lock:
            self.server.connections.discard(self.connection)
        try:
            super().finish()
        except OSError:
            pass

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's name
        pass  # quiet: the stand-in keeps its own counters and log

    def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        status, headers, payload = self.server.standin._handle(self.path, body)
        try:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            # The client gave up (read timeout): exactly what a "timeout" fault is for.
            self.close_connection = True

    def do_GET(self) -> None:  # noqa: N802
        self.do_POST()


class BedrockStandin:
    """A Converse stand-in. Use as ``with BedrockStandin(...) as standin:`` or ``start()``/``stop()``.

    Arguments (all keyword-only):
      verdict_fn          fn(request_json) -> record_verdict tool input; default ``schema_verdict``
      answer_fn           fn(request_json) -> the text of a reply to a request that asks for no tool
                          (a chatbot's answer); default a fixed sentence
      latency_s           seconds per successful call, or fn(request_json) -> seconds (default 0)
      requests_per_second quota; None means unlimited
      burst               request-bucket capacity (default: one second's worth, at least 1)
      tokens_per_minute   quota; None means unlimited (bucket capacity is one minute's worth)
      fault_rate          probability that an admitted request gets a random fault (seeded)
      fault_kinds         which faults the random draw picks from (default: "500")
      seed                seed of the fault RNG
      min_cache_tokens    minimum cacheable prefix for every model, in estimated tokens (default: per
                          model, from the default rubric's judge.min_cache_tokens)
      cache_ttl_s         prompt-cache lifetime, refreshed on every hit (default 300)
      hang_s              how long a "timeout" fault holds the request (default 30; ``stop`` ends it)
      keep_bodies         keep each parsed request body in the log (turn off for long benchmarks)
      max_lifetime_s      the server stops itself after this long (default 600)
      clock               monotonic clock for the buckets, the cache TTL and log timestamps
    """

    def __init__(
        self,
        *,
        verdict_fn: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
        answer_fn: Callable[[dict[str, Any]], str] | None = None,
        latency_s: float | Callable[[dict[str, Any]], float] = 0.0,
        requests_per_second: float | None = None,
        burst: float | None = None,
        tokens_per_minute: float | None = None,
        fault_rate: float = 0.0,
        fault_kinds: Iterable[str] = ("500",),
        seed: int = 0,
        min_cache_tokens: int | None = None,
        cache_ttl_s: float = 300.0,
        hang_s: float = 30.0,
        keep_bodies: bool = True,
        max_lifetime_s: float = 600.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.fault_kinds = tuple(fault_kinds)
        unknown = [k for k in self.fault_kinds if k not in FAULT_KINDS]
        if unknown:
            raise ValueError(f"unknown fault kinds {unknown}; expected some of {FAULT_KINDS}")
        if not 0.0 <= fault_rate <= 1.0:
            raise ValueError("fault_rate must be within 0..1")
        self.verdict_fn = verdict_fn or schema_verdict
        self.answer_fn = answer_fn or (lambda _request: DEFAULT_ANSWER)
        self.latency_s = latency_s
        self.fault_rate = fault_rate
        self.min_cache_tokens = min_cache_tokens
        if min_cache_tokens is None:
            from fmquality.config.rubric import load_rubric  # the table `fmquality estimate` reads too

            self._table_minimum = load_rubric().judge.min_cache_tokens_for
        self.cache_ttl_s = cache_ttl_s
        self.hang_s = hang_s
        self.keep_bodies = keep_bodies
        self.max_lifetime_s = max_lifetime_s
        self._clock = clock
        self._lock = threading.Lock()
        self._lifecycle_lock = threading.Lock()
        self._rng = random.Random(seed)
        self._script: deque[str | dict[str, Any]] = deque()
        self._cache: dict[tuple[str, str], float] = {}  # (modelId, prefix hash) -> expiry
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._timer: threading.Timer | None = None
        self._started_at = clock()
        self._in_flight = 0
        self._rps_bucket: TokenBucket | None = None
        self._tpm_bucket: TokenBucket | None = None
        self.set_quota(requests_per_second=requests_per_second, burst=burst, tokens_per_minute=tokens_per_minute)
        self.reset()

    # -- lifecycle ---------------------------------------------------------------------------------

    def start(self) -> "BedrockStandin":
        with self._lifecycle_lock:
            if self._server is None:
                self._start()
        return self

    def _start(self) -> None:
        self._stopping.clear()
        server = _Server(("127.0.0.1", 0), _Handler)
        server.standin = self
        self._server = server
        self._started_at = self._clock()
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="bedrock-standin", daemon=True
        )
        self._thread.start()
        self._timer = threading.Timer(self.max_lifetime_s, self.stop)
        self._timer.daemon = True
        self._timer.start()

    def stop(self) -> None:
        """Idempotent. Wakes requests held by latency or a "timeout" fault, cuts kept-alive
        connections, and returns once the port is closed (``running`` turns False only then)."""
        with self._lifecycle_lock:
            server, timer = self._server, self._timer
            if server is None:
                return
            self._timer = None
            self._stopping.set()
            if timer is not None and timer is not threading.current_thread():
                timer.cancel()
            server.shutdown()
            server.server_close()
            server.close_connections()
            if self._thread is not None:
                self._thread.join(timeout=5)
            self._server = None

    def __enter__(self) -> "BedrockStandin":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._server is not None

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the stand-in is not running")
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def client(
        self,
        *,
        read_timeout: float = 10.0,
        connect_timeout: float = 2.0,
        max_pool_connections: int = 50,
        region_name: str = "us-east-1",
    ) -> Any:
        """A real bedrock-runtime client pointed at the stand-in, with fake credentials and botocore's
        own retries off (one HTTP attempt per call, as ``BedrockJudge`` configures its client)."""
        import boto3
        from botocore.config import Config

        return boto3.client(
            "bedrock-runtime",
            endpoint_url=self.url,
            region_name=region_name,
            aws_access_key_id="standin",
            aws_secret_access_key="standin",
            aws_session_token="standin",
            config=Config(
                retries={"total_max_attempts": 1, "mode": "standard"},
                read_timeout=read_timeout,
                connect_timeout=connect_timeout,
                max_pool_connections=max_pool_connections,
            ),
        )

    # -- control -------------------------------------------------------------------------------------

    def set_quota(
        self,
        *,
        requests_per_second: float | None = None,
        burst: float | None = None,
        tokens_per_minute: float | None = None,
    ) -> None:
        """Replace the quota (None means unlimited); buckets start full."""
        with self._lock:
            self.requests_per_second = requests_per_second
            self.tokens_per_minute = tokens_per_minute
            self._rps_bucket = (
                TokenBucket(requests_per_second, burst or max(1.0, requests_per_second), self._clock)
                if requests_per_second
                else None
            )
            self._tpm_bucket = (
                TokenBucket(tokens_per_minute / 60.0, tokens_per_minute, self._clock) if tokens_per_minute else None
            )

    def inject(self, items: Iterable[str | dict[str, Any]]) -> None:
        """Script the next requests, in arrival order. Each item is a kind from ``SCRIPT_KINDS``
        ("ok", "throttle", "500", "503", "400", "403", "404", "missing_sub_score", "out_of_range",
        "text_only", "max_tokens", "guardrail_intervened", "content_filtered", "timeout") or a dict used
        as the tool input of that reply.
        Error kinds answer at once, before the quota; the others are subject to the quota, and a
        request the quota throttles does not consume a scripted item."""
        items = list(items)
        for item in items:
            if not isinstance(item, dict) and item not in SCRIPT_KINDS:
                raise ValueError(f"unknown scripted item {item!r}; expected a dict or one of {SCRIPT_KINDS}")
        with self._lock:
            self._script.extend(items)

    def pending(self) -> int:
        """Scripted items not consumed yet."""
        with self._lock:
            return len(self._script)

    def reset(self) -> None:
        """Clear counters, the request log, the script and the prompt cache (not the quota)."""
        with self._lock:
            self._script.clear()
            self._cache.clear()
            self.log: list[dict[str, Any]] = []
            self._counts: Counter[str] = Counter()
            self._faults: Counter[str] = Counter()
            self._per_model: dict[str, Counter[str]] = {}
            self._max_in_flight = 0

    def stats(self) -> dict[str, Any]:
        """A snapshot of the counters.

        requests        every request received (whatever its answer)
        ok              HTTP 200 replies (malformed ones included)
        throttled       429s: quota and scripted ones
        quota_throttled 429s from the token buckets only
        faults          {kind: count} of injected faults (scripted and random, "throttle" included)
        per_model       {modelId: {requests, ok, throttled, faults}}
        input_tokens / output_tokens / cache_read_tokens / cache_write_tokens   summed over 200s
        cache_reads / cache_writes   requests that read / wrote the prompt cache
        max_in_flight   the most requests in the handler at once
        """
        with self._lock:
            counts = dict(self._counts)
            return {
                "requests": counts.get("requests", 0),
                "ok": counts.get("ok", 0),
                "throttled": counts.get("throttled", 0),
                "quota_throttled": counts.get("quota_throttled", 0),
                "faults": dict(self._faults),
                "per_model": {model: dict(c) for model, c in self._per_model.items()},
                "input_tokens": counts.get("input_tokens", 0),
                "output_tokens": counts.get("output_tokens", 0),
                "cache_read_tokens": counts.get("cache_read_tokens", 0),
                "cache_write_tokens": counts.get("cache_write_tokens", 0),
                "cache_reads": counts.get("cache_reads", 0),
                "cache_writes": counts.get("cache_writes", 0),
                "max_in_flight": self._max_in_flight,
            }

    def requests(self, model_id: str | None = None) -> list[dict[str, Any]]:
        """The parsed request bodies received (needs ``keep_bodies``), optionally for one model."""
        with self._lock:
            return [e["body"] for e in self.log if "body" in e and (model_id is None or e["model_id"] == model_id)]

    # -- request handling ------------------------------------------------------------------------

    def _count(self, model_id: str, key: str, amount: int = 1) -> None:
        self._counts[key] += amount
        self._per_model.setdefault(model_id, Counter())[key] += amount

    def _handle(self, path: str, raw: bytes) -> tuple[int, dict[str, str], bytes]:
        started = self._clock()
        parts = path.split("?", 1)[0].strip("/").split("/")
        model_id = unquote(parts[1]) if len(parts) == 3 and parts[0] == "model" else ""
        try:
            request = json.loads(raw or b"{}")
        except ValueError:
            request = None
        # status/kind stay None while the request is in the handler (e.g. held by latency or "timeout").
        entry: dict[str, Any] = {
            "t": round(started - self._started_at, 4), "model_id": model_id, "status": None, "kind": None,
        }
        with self._lock:
            self._count(model_id, "requests")
            if self.keep_bodies and isinstance(request, dict):
                entry["body"] = request
            self.log.append(entry)
            self._in_flight += 1
            self._max_in_flight = max(self._max_in_flight, self._in_flight)
        try:
            status, headers, payload, kind = self._answer(model_id, parts, request, started)
        finally:
            with self._lock:
                self._in_flight -= 1
        with self._lock:
            entry["status"], entry["kind"] = status, kind
        return status, headers, payload

    def _answer(
        self, model_id: str, parts: list[str], request: Any, started: float
    ) -> tuple[int, dict[str, str], bytes, str]:
        if len(parts) != 3 or parts[0] != "model" or parts[2] != "converse":
            return (*self._error(404, "UnknownOperationException", "The stand-in only serves Converse."), "unknown")
        if not isinstance(request, dict) or not request.get("messages"):
            return (*self._error(400, "ValidationException", "messages must not be empty."), "invalid")
        rejection = converse_rejection(model_id, request)
        if rejection is not None:
            return (*self._error(400, "ValidationException", rejection), "invalid")
        too_many = cache_point_rejection(request)  # judge side: Converse's cache-point limit
        if too_many is not None:
            return (*self._error(400, "ValidationException", too_many), "invalid")

        prompt = self._prompt_tokens(model_id, request)
        with self._lock:
            # Scripted errors answer before the quota: they script exactly what the next call sees.
            if self._script and isinstance(self._script[0], str) and self._script[0] in ERRORS:
                kind = self._script.popleft()
                return (*self._fault(model_id, kind), kind)
            if not self._admit(prompt["total"] + int((request.get("inferenceConfig") or {}).get("maxTokens") or 0)):
                self._count(model_id, "throttled")
                self._count(model_id, "quota_throttled")
                status, code, message = ERRORS["throttle"]
                return (*self._error(status, code, message), "quota")
            scripted = self._script.popleft() if self._script else "ok"
            if scripted == "ok" and self.fault_rate and self._rng.random() < self.fault_rate:
                scripted = self._rng.choice(self.fault_kinds)
            if isinstance(scripted, str) and scripted in ERRORS:
                return (*self._fault(model_id, scripted), scripted)
            if isinstance(scripted, str) and scripted != "ok":
                self._count(model_id, "faults")
                self._faults[scripted] += 1
            cache_read, cache_write = self._use_cache(model_id, prompt)

        delay = self.hang_s if scripted == "timeout" else self._latency(request)
        if delay > 0:
            self._stopping.wait(delay)

        kind = scripted if isinstance(scripted, str) else "ok"
        if kind in BLOCKED:
            reply = {"output": {"message": {"role": "assistant", "content": [{"text": BLOCKED_TEXT}]}},
                     "stopReason": kind}
        elif not isinstance(scripted, dict) and requested_tool_schema(request, self._tool_name(request)) is None:
            reply = self._answer_reply(request, kind)
        else:
            tool_input = scripted if isinstance(scripted, dict) else self.verdict_fn(request)
            reply = self._reply(request, tool_input, kind)
        output_tokens = estimate_tokens(json.dumps(reply["output"], ensure_ascii=False))
        input_tokens = prompt["total"] - cache_read - cache_write
        reply["usage"] = {
            "inputTokens": input_tokens,
            "outputTokens": output_tokens,
            "totalTokens": input_tokens + output_tokens + cache_read + cache_write,
            "cacheReadInputTokens": cache_read,
            "cacheWriteInputTokens": cache_write,
        }
        reply["metrics"] = {"latencyMs": int((self._clock() - started) * 1000)}
        with self._lock:
            if self._tpm_bucket is not None:
                reserved = int((request.get("inferenceConfig") or {}).get("maxTokens") or 0)
                self._tpm_bucket.give_back(max(0, reserved - output_tokens))
            self._count(model_id, "ok")
            for key, value in (
                ("input_tokens", input_tokens),
                ("output_tokens", output_tokens),
                ("cache_read_tokens", cache_read),
                ("cache_write_tokens", cache_write),
            ):
                self._count(model_id, key, value)
        kind = "scripted" if isinstance(scripted, dict) else scripted
        return 200, {"x-amzn-RequestId": str(uuid.uuid4())}, json.dumps(reply).encode("utf-8"), kind

    def _latency(self, request: dict[str, Any]) -> float:
        latency = self.latency_s
        return float(latency(request) if callable(latency) else latency)

    def _admit(self, tokens: int) -> bool:
        """Both buckets must have room; only then is anything taken (caller holds the lock)."""
        rps, tpm = self._rps_bucket, self._tpm_bucket
        if rps is not None and rps.level() < 1:
            return False
        # A request larger than a whole minute's quota is charged the whole bucket, not refused forever.
        tokens = min(tokens, tpm.capacity) if tpm is not None else tokens
        if tpm is not None and tpm.level() < tokens:
            return False
        if rps is not None:
            rps.take(1)
        if tpm is not None:
            tpm.take(tokens)
        return True

    def _fault(self, model_id: str, kind: str) -> tuple[int, dict[str, str], bytes]:
        """An injected error reply (caller holds the lock)."""
        self._count(model_id, "faults")
        self._faults[kind] += 1
        if kind == "throttle":
            self._count(model_id, "throttled")
        status, code, message = ERRORS[kind]
        return self._error(status, code, message)

    @staticmethod
    def _error(status: int, code: str, message: str) -> tuple[int, dict[str, str], bytes]:
        headers = {"x-amzn-ErrorType": code + _ERROR_TYPE_SUFFIX, "x-amzn-RequestId": str(uuid.uuid4())}
        return status, headers, json.dumps({"message": message}).encode("utf-8")

    def _prompt_tokens(self, model_id: str, request: dict[str, Any]) -> dict[str, Any]:
        """Estimated prompt tokens, and the cacheable prefix: the tools (which precede the system
        text in the model's prompt) plus the system blocks before the first cachePoint."""
        tools = json.dumps(request.get("toolConfig"), sort_keys=True) if request.get("toolConfig") else ""
        system = [b for b in request.get("system") or [] if isinstance(b, dict)]
        cut = next((i for i, b in enumerate(system) if "cachePoint" in b), None)
        system_tokens = [estimate_tokens(b.get("text") or "") for b in system]
        total = estimate_tokens(tools) + sum(system_tokens) + estimate_tokens(request_user_text(request))
        if cut is None:
            return {"total": total, "prefix_tokens": 0, "prefix_key": None}
        prefix_text = "\x1e".join(b.get("text") or "" for b in system[:cut])
        key = hashlib.sha256(f"{tools}\x1d{prefix_text}".encode("utf-8")).hexdigest()
        return {"total": total, "prefix_tokens": estimate_tokens(tools) + sum(system_tokens[:cut]), "prefix_key": key}

    def _use_cache(self, model_id: str, prompt: dict[str, Any]) -> tuple[int, int]:
        """(cache read tokens, cache write tokens) for an admitted request (caller holds the lock)."""
        tokens, key = prompt["prefix_tokens"], prompt["prefix_key"]
        minimum = self._min_cache_tokens(model_id)
        if key is None or minimum is None or tokens < minimum:
            return 0, 0
        now = self._clock()
        expiry = self._cache.get((model_id, key))
        self._cache[(model_id, key)] = now + self.cache_ttl_s
        if expiry is not None and expiry > now:
            self._count(model_id, "cache_reads")
            return tokens, 0
        self._count(model_id, "cache_writes")
        return 0, tokens

    def _min_cache_tokens(self, model_id: str) -> int | None:
        return self.min_cache_tokens if self.min_cache_tokens is not None else self._table_minimum(model_id)

    @staticmethod
    def _tool_name(request: dict[str, Any]) -> str:
        forced = ((request.get("toolConfig") or {}).get("toolChoice") or {}).get("tool") or {}
        return forced.get("name") or TOOL_NAME

    def _answer_reply(self, request: dict[str, Any], kind: str) -> dict[str, Any]:
        """A text answer (no tool asked for): ``answer_fn``'s, cut in half by a scripted "max_tokens"."""
        text = str(self.answer_fn(request))
        stop_reason = "end_turn"
        if kind == "max_tokens":
            text, stop_reason = text[: max(1, len(text) // 2)], "max_tokens"
        return {"output": {"message": {"role": "assistant", "content": [{"text": text}]}}, "stopReason": stop_reason}

    @classmethod
    def _reply(cls, request: dict[str, Any], tool_input: dict[str, Any], kind: str) -> dict[str, Any]:
        tool_input = json.loads(json.dumps(tool_input))  # never hand out the caller's own dict
        tool_name = cls._tool_name(request)
        if kind == "text_only" or requested_tool_schema(request, tool_name) is None:
            content = [{"text": DEFAULT_ANSWER}]
            return {"output": {"message": {"role": "assistant", "content": content}}, "stopReason": "end_turn"}
        scores = tool_input.get(GRADES_KEY)
        if kind == "missing_sub_score" and isinstance(scores, dict) and scores:
            scores.pop(next(reversed(scores)))
        if kind == "out_of_range" and isinstance(scores, dict) and scores:
            scores[next(iter(scores))] = 7
        tool_use = {"toolUseId": "tooluse_" + uuid.uuid4().hex[:22], "name": tool_name, "input": tool_input}
        stop_reason = "max_tokens" if kind == "max_tokens" else "tool_use"
        return {
            "output": {"message": {"role": "assistant", "content": [{"toolUse": tool_use}]}},
            "stopReason": stop_reason,
        }
