"""The production judge: Amazon Bedrock's Converse API with a forced ``record_verdict`` tool call.

One Converse call per request (one dimension of one case). The static rubric text goes first in
``system`` with a cache point after it; the case travels in the user message inside data markers;
the verdict is read only from the forced tool call's input, validated by ``JudgeVerdict``.

Failure policy (an outcome never carries a made-up score):
- throttling, 5xx, model-not-ready/timeouts and connection/read timeouts are retried with
  exponential backoff and full jitter, up to ``max_attempts`` attempts in total;
- client errors (ValidationException, AccessDeniedException, ResourceNotFoundException, ...) are
  not retried: a second identical request cannot succeed;
- malformed output (no tool call, wrong stop reason, a verdict that does not validate or lacks a
  requested sub-score) is NOT re-asked: the dimension becomes unscored. The design allows one judge
  call per dimension per case, and at temperature 0 the same request mostly repeats the same output.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import boto3
from botocore.config import Config
from botocore.exceptions import (
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    ReadTimeoutError,
)
from pydantic import ValidationError

from fmquality.judges.base import JudgeOutcome, JudgeRequest, JudgeVerdict
from fmquality.judges.prompts import (
    RAW_KEEP_CHARS,
    TOOL_NAME,
    JudgePrompt,
    build_prompt,
    truncate_middle,
    verdict_tool_spec,
)
from fmquality.models import JudgeUsage

if TYPE_CHECKING:
    from fmquality.rubric import Rubric

THROTTLING_CODES = frozenset({"ThrottlingException", "Throttling", "TooManyRequestsException"})
# Transient on Bedrock's side: the same request may succeed a moment later.
TRANSIENT_CODES = frozenset(
    {"ServiceUnavailableException", "ModelNotReadyException", "InternalServerException", "ModelTimeoutException"}
)
TRANSPORT_ERRORS = (ReadTimeoutError, ConnectTimeoutError, EndpointConnectionError, ConnectionClosedError)

# A judge reply is at most max_tokens (800) of tool input: a minute is generous, and a hung
# connection must not eat the Lambda's whole timeout.
DEFAULT_READ_TIMEOUT_S = 60.0
DEFAULT_CONNECT_TIMEOUT_S = 5.0


class InvalidJudgeOutput(ValueError):
    """The reply holds no usable verdict."""


class BedrockJudge:
    name = "bedrock"

    def __init__(
        self,
        model_id: str,
        boto3_client: Any = None,
        *,
        max_attempts: int | None = None,
        base_delay_s: float | None = None,
        max_delay_s: float | None = None,
        sleep: Callable[[float], None] = time.sleep,
        rng: Callable[[], float] = random.random,
        read_timeout_s: float = DEFAULT_READ_TIMEOUT_S,
        connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S,
    ) -> None:
        """``max_attempts``/``base_delay_s``/``max_delay_s`` override the rubric's ``judge`` settings."""
        if max_attempts is not None and max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        self.model_id = model_id
        self._client_obj = boto3_client
        self._client_lock = threading.Lock()
        self.max_attempts = max_attempts
        self.base_delay_s = base_delay_s
        self.max_delay_s = max_delay_s
        self._sleep = sleep
        self._rng = rng
        self._read_timeout_s = read_timeout_s
        self._connect_timeout_s = connect_timeout_s

    # ---------------------------------------------------------------------------------------------

    def _client(self) -> Any:
        # Created on first use, never at import. botocore's own retries are off: this class owns the
        # retry policy so attempts and throttling are counted and reported. (botocore's
        # retries={"max_attempts": 1} means ONE RETRY; total_max_attempts=1 means a single attempt.)
        if self._client_obj is None:
            with self._client_lock:
                if self._client_obj is None:
                    self._client_obj = boto3.client(
                        "bedrock-runtime",
                        config=Config(
                            retries={"total_max_attempts": 1, "mode": "standard"},
                            read_timeout=self._read_timeout_s,
                            connect_timeout=self._connect_timeout_s,
                        ),
                    )
        return self._client_obj

    def converse_params(self, prompt: JudgePrompt, rubric: "Rubric") -> dict[str, Any]:
        """The exact Converse request for one prompt."""
        return {
            "modelId": self.model_id,
            "system": [{"text": prompt.system}, {"cachePoint": {"type": "default"}}],
            "messages": [{"role": "user", "content": [{"text": prompt.user}]}],
            "inferenceConfig": {"temperature": rubric.judge.temperature, "maxTokens": rubric.judge.max_tokens},
            "toolConfig": {
                "tools": [{"toolSpec": verdict_tool_spec(prompt.sub_scores)}],
                "toolChoice": {"tool": {"name": TOOL_NAME}},
            },
        }

    def backoff_delay(self, retry_index: int, rubric: "Rubric") -> float:
        """Full jitter: uniform in [0, min(max_delay, base * 2**retry_index)]."""
        base = self.base_delay_s if self.base_delay_s is not None else rubric.judge.base_delay_s
        cap = self.max_delay_s if self.max_delay_s is not None else rubric.judge.max_delay_s
        return self._rng() * min(cap, base * (2**retry_index))

    def judge(self, request: JudgeRequest, rubric: "Rubric") -> JudgeOutcome:
        prompt = build_prompt(request, rubric)
        params = self.converse_params(prompt, rubric)
        max_attempts = self.max_attempts if self.max_attempts is not None else rubric.judge.max_attempts
        recorded_prompt = prompt.record()

        attempts = 0
        last_code = ""
        while True:
            attempts += 1
            try:
                reply = self._client().converse(**params)
            except ClientError as exc:
                last_code = exc.response.get("Error", {}).get("Code") or "ClientError"
                status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0
                retryable = last_code in THROTTLING_CODES or last_code in TRANSIENT_CODES or status >= 500
                if not retryable:
                    message = exc.response.get("Error", {}).get("Message", "")
                    return JudgeOutcome(
                        error=f"judge call rejected: {last_code}: {message}".rstrip(": "),
                        calls=attempts,
                        usage=JudgeUsage(calls=attempts),
                        prompt=recorded_prompt,
                    )
            except TRANSPORT_ERRORS as exc:
                last_code = type(exc).__name__
            else:
                return _outcome_from_reply(reply, prompt, attempts, recorded_prompt)

            if attempts >= max_attempts:
                return JudgeOutcome(
                    error=f"judge failed after {attempts} attempts: {last_code}",
                    throttled=last_code in THROTTLING_CODES,
                    calls=attempts,
                    usage=JudgeUsage(calls=attempts),
                    prompt=recorded_prompt,
                )
            self._sleep(self.backoff_delay(attempts - 1, rubric))


# -------------------------------------------------------------------------------------------------
# Reading the reply
# -------------------------------------------------------------------------------------------------


def _outcome_from_reply(
    reply: dict[str, Any], prompt: JudgePrompt, attempts: int, recorded_prompt: str
) -> JudgeOutcome:
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
    common = {"calls": attempts, "usage": usage, "prompt": recorded_prompt, "raw": raw}
    try:
        verdict = parse_verdict(reply, prompt.sub_scores)
    except InvalidJudgeOutput as exc:
        return JudgeOutcome(error=f"invalid judge output: {exc}", **common)
    return JudgeOutcome(verdict=verdict, **common)


def parse_verdict(reply: dict[str, Any], requested: list[str]) -> JudgeVerdict:
    """The verdict from the forced tool call, and from nothing else: any text block (which could
    echo an injected "return 1.0") is ignored. Sub-scores not requested are dropped; a missing,
    non-numeric or out-of-range requested sub-score makes the whole verdict invalid."""
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

    data = dict(data)
    if isinstance(data.get("sub_scores"), dict):
        data["sub_scores"] = {k: v for k, v in data["sub_scores"].items() if k in requested}
    try:
        # strict: "0.9" or true is not a score.
        verdict = JudgeVerdict.model_validate(data, strict=True)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '<root>'}: {err['msg']}" for err in exc.errors()
        )
        raise InvalidJudgeOutput(problems[:500]) from exc
    missing = [name for name in requested if name not in verdict.sub_scores]
    if missing:
        raise InvalidJudgeOutput(f"missing sub-scores {missing}")
    return verdict
