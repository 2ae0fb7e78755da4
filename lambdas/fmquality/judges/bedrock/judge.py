"""The production judge: Amazon Bedrock's Converse API with a forced ``record_verdict`` tool call.
This module holds the client, the request it sends, the retry policy and the one re-ask; the
package's other modules hold the prompt assembly (``prompts.py``, from the prose in ``data/`` and
the profile's levels), the tool schema (``schema.py``) and the reading of a reply (``reply.py``).

One Converse call per request (one dimension of one case), or per combined request (every
dimension of one case that needs the judge, one object per dimension in the tool input). The static
rubric text goes first in ``system`` with a cache point after it when the static prefix (tool schema
+ system text) reaches the model's minimum cacheable size (``judge.min_cache_tokens``; below it
Bedrock caches nothing and says nothing, so the cache point is left out and a warning is logged
once); the case travels in the user message inside data markers; the verdict is read only from the
forced tool call's input (evidence, rationale, then one level from 1 to 5 per sub-score), validated
strictly and mapped to a ``JudgeVerdict``.

Failure policy (an outcome never carries a made-up score):
- throttling, 5xx, model errors (ModelErrorException, HTTP 424), model-not-ready/timeouts and
  connection/read timeouts are retried with exponential backoff and full jitter
  (``fmquality.retry.full_jitter``), up to ``max_attempts`` attempts in total;
- configuration errors (ValidationException, AccessDeniedException, ResourceNotFoundException,
  UnrecognizedClientException and the other credential codes of ``MISCONFIGURATION_CODES``; missing
  credentials or region) raise ``JudgeMisconfigured`` at once: a second identical request cannot
  succeed and no other item could be judged either, so the run stops (exit 3, a named execution
  error) instead of leaving every dimension unscored;
- other client errors are not retried: the dimension is left unscored with the reason;
- malformed output (no tool call, wrong stop reason, a verdict that does not validate or lacks a
  requested sub-score) is re-asked ONCE: the conversation is sent again with the model's reply and,
  as the tool result of its call (or as user text when it made none), the parser's reason and what
  a valid call holds, so the model can correct it. A second invalid reply leaves the dimension
  unscored with both reasons. The re-ask shares the ``max_attempts`` budget (it gets the attempts
  the first ask left), so the worst case time of a judge call is unchanged; it counts in ``calls``
  and its tokens in the usage.
"""

from __future__ import annotations

import json
import logging
import math
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
    NoCredentialsError,
    NoRegionError,
    PartialCredentialsError,
    ReadTimeoutError,
)

from fmquality.domain.errors import InvalidJudgeOutput, JudgeMisconfigured
from fmquality.domain.scores import JudgeUsage
from fmquality.judges.base import (
    CombinedJudgeOutcome,
    CombinedJudgeRequest,
    JudgeOutcome,
    JudgeRequest,
)
from fmquality.judges.bedrock.prompts import (
    RAW_KEEP_CHARS,
    CombinedJudgePrompt,
    JudgePrompt,
    build_combined_prompt,
    build_prompt,
    reask_note,
    truncate_middle,
)
from fmquality.judges.bedrock.reply import parse_combined_verdict, parse_verdict, reply_usage_and_raw
from fmquality.judges.bedrock.schema import TOOL_NAME
from fmquality.retry import full_jitter

if TYPE_CHECKING:
    from fmquality.config.rubric import Rubric

LOG = logging.getLogger(__name__)

THROTTLING_CODES = frozenset({"ThrottlingException", "Throttling", "TooManyRequestsException"})
# Transient on Bedrock's side: the same request may succeed a moment later. ModelErrorException
# (HTTP 424, "an error while processing the model", in botocore's bedrock-runtime model for Converse)
# is below 500, so it is named here.
TRANSIENT_CODES = frozenset(
    {"ServiceUnavailableException", "ModelNotReadyException", "InternalServerException", "ModelTimeoutException",
     "ModelErrorException"}
)
TRANSPORT_ERRORS = (ReadTimeoutError, ConnectTimeoutError, EndpointConnectionError, ConnectionClosedError)
# The judge as configured cannot be called (model id, grant, model access, credentials): the same for
# every item, so the run stops with JudgeMisconfigured. ValidationException is here because the
# request's shape is fixed by the rubric and the model (a case's size is bounded by the rubric's limits);
# Bedrock answers it for an unknown model id or one that does not support the request.
MISCONFIGURATION_CODES = frozenset(
    {"ValidationException", "AccessDeniedException", "ResourceNotFoundException", "UnrecognizedClientException",
     "InvalidSignatureException", "ExpiredTokenException", "InvalidClientTokenId", "SignatureDoesNotMatch",
     "IncompleteSignature", "MissingAuthenticationToken"}
)
# Raised before a request leaves the machine: no credentials, or no region to send it to.
CREDENTIAL_ERRORS = (NoCredentialsError, PartialCredentialsError, NoRegionError)
# A judge refused as misconfigured raises the same error again, without a call, for this long: the
# other items in flight of the run stop at once (a Lambda container's judge lives across runs, so the
# memory is short and a fixed grant is seen on the next run).
REFUSAL_MEMORY_S = 30.0

# A judge reply is at most max_tokens_cap (3,200) tokens of tool input: a minute is generous, and a hung
# connection must not eat the Lambda's whole timeout.
DEFAULT_READ_TIMEOUT_S = 60.0
DEFAULT_CONNECT_TIMEOUT_S = 5.0


# -- prompt caching: is the static prefix long enough to be cached? ----------------------------------

CACHE_POINT = {"cachePoint": {"type": "default"}}
CHARS_PER_TOKEN = 4  # the estimate `fmquality estimate` and bench/standin.py make, so the three agree

_warned: set[tuple[str, str, str]] = set()
_warned_lock = threading.Lock()


def static_prefix_tokens(tool_config: dict[str, Any], system_text: str) -> int:
    """Estimated tokens of what a cache point after the system text would close: the tool config
    (tools come before the system text in the model's prompt) and the system text, at about four
    characters per token, computed exactly as `fmquality estimate` and the stand-in compute it."""
    tools = json.dumps(tool_config, sort_keys=True)
    return sum(math.ceil(len(text) / CHARS_PER_TOKEN) for text in (tools, system_text) if text)


def _warn_once(key: tuple[str, str, str], message: str, *args: Any) -> None:
    """Once per process for each (model, rubric version, kind): a Lambda container or a CLI run says
    it once, not once per call."""
    with _warned_lock:
        if key in _warned:
            return
        _warned.add(key)
    LOG.warning(message, *args)


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
        self._observer: Any = None
        self._refused: tuple[float, str] | None = None  # (monotonic time, message) of a misconfiguration

    # ---------------------------------------------------------------------------------------------

    def _misconfigured(self, message: str) -> JudgeMisconfigured:
        self._refused = (time.monotonic(), message)
        return JudgeMisconfigured(message)

    def _check_refused(self) -> None:
        refused = self._refused
        if refused is not None and time.monotonic() - refused[0] < REFUSAL_MEMORY_S:
            raise JudgeMisconfigured(f"{refused[1]} (refused {time.monotonic() - refused[0]:.0f} s ago; not asked again)")

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

    def converse_params(self, prompt: JudgePrompt | CombinedJudgePrompt, rubric: "Rubric") -> dict[str, Any]:
        """The exact Converse request for one prompt (one dimension, or several in combined mode)."""
        if isinstance(prompt, CombinedJudgePrompt):
            # One verdict per dimension: the output budget grows with the dimensions graded.
            max_tokens = rubric.judge.max_tokens_for(len(prompt.sub_scores))
        else:
            max_tokens = rubric.judge.max_tokens
        tool_config = {"tools": [{"toolSpec": prompt.tool}], "toolChoice": {"tool": {"name": TOOL_NAME}}}
        # The cachePoint closes the static prefix. Assumption (Anthropic's prompt order, tools then
        # system then messages, which the stand-in and `fmquality estimate` share): the cached prefix
        # is the tool schema plus the system text, both fixed by the rubric and the requested sub-scores.
        system: list[dict[str, Any]] = [{"text": prompt.system}]
        if self._cacheable(tool_config, prompt, rubric):
            system.append({"cachePoint": dict(CACHE_POINT["cachePoint"])})
        return {
            "modelId": self.model_id,
            "system": system,
            "messages": [{"role": "user", "content": [{"text": prompt.user}]}],
            "inferenceConfig": {"temperature": rubric.judge.temperature, "maxTokens": max_tokens},
            "toolConfig": tool_config,
        }

    def _cacheable(self, tool_config: dict[str, Any], prompt: JudgePrompt | CombinedJudgePrompt,
                   rubric: "Rubric") -> bool:
        """Whether to close the static prefix with a cache point. Below the model's minimum Bedrock
        accepts the cache point and caches nothing, silently: the point is left out and a warning is
        logged once. A model without a ``judge.min_cache_tokens`` entry keeps the cache point (as
        before), with a warning once that nothing checks it is cached."""
        minimum = rubric.judge.min_cache_tokens_for(self.model_id)
        what = prompt.dimension if isinstance(prompt, JudgePrompt) else "combined"
        if minimum is None:
            _warn_once((self.model_id, rubric.version, "unlisted"),
                       "prompt caching unchecked: rubric %s has no judge.min_cache_tokens entry for %s; the "
                       "judge sends a cache point, but whether Bedrock caches the static prefix is not known",
                       rubric.version, self.model_id)
            return True
        tokens = static_prefix_tokens(tool_config, prompt.system)
        if tokens >= minimum:
            return True
        _warn_once((self.model_id, rubric.version, "short"),
                   "prompt caching off: the judge's static prefix for rubric %s (%s: about %d tokens) is under "
                   "the minimum cacheable prefix of %s (%d tokens), so Bedrock would cache nothing; requests "
                   "whose static prefix is under the minimum are sent without a cache point",
                   rubric.version, what, tokens, self.model_id, minimum)
        return False

    def backoff_delay(self, retry_index: int, rubric: "Rubric") -> float:
        """Full jitter: uniform in [0, min(max_delay, base * 2**retry_index)]."""
        base = self.base_delay_s if self.base_delay_s is not None else rubric.judge.base_delay_s
        cap = self.max_delay_s if self.max_delay_s is not None else rubric.judge.max_delay_s
        return full_jitter(retry_index, base, cap, self._rng)

    # -- observer (adaptive concurrency) ------------------------------------------------------------

    def set_observer(self, observer: Any) -> None:
        """``observer.call_started() -> token`` before each Converse attempt and
        ``observer.call_finished(token, outcome)`` after it, outcome "ok", "throttled" or "error":
        the direct engine's AIMD controller learns of every throttle (and every success) from the
        judge itself."""
        self._observer = observer

    def _observed_converse(self, params: dict[str, Any]) -> Any:
        observer = getattr(self, "_observer", None)
        token = observer.call_started() if observer is not None else None
        outcome = "error"
        try:
            reply = self._client().converse(**params)
            outcome = "ok"
            return reply
        except ClientError as exc:
            if (exc.response.get("Error", {}).get("Code") or "") in THROTTLING_CODES:
                outcome = "throttled"
            raise
        finally:
            if observer is not None:
                observer.call_finished(token, outcome)

    # -- requests ----------------------------------------------------------------------------------

    def request_text(self, request: JudgeRequest | CombinedJudgeRequest, rubric: "Rubric") -> str:
        """The exact Converse request body (model id, system text, messages, inference settings and
        tool schema) as canonical JSON: what the verdict cache hashes."""
        if isinstance(request, CombinedJudgeRequest):
            params = self.converse_params(build_combined_prompt(request, rubric), rubric)
        else:
            params = self.converse_params(build_prompt(request, rubric), rubric)
        return json.dumps(params, sort_keys=True, ensure_ascii=False, separators=(",", ":"))

    def judge(self, request: JudgeRequest, rubric: "Rubric") -> JudgeOutcome:
        prompt = build_prompt(request, rubric)
        verdict, common = self._ask(
            self.converse_params(prompt, rubric), rubric, prompt,
            lambda reply: parse_verdict(reply, prompt.sub_scores, prompt.level_values))
        return JudgeOutcome(verdict=verdict, **common)

    supports_combined = True

    def judge_combined(self, request: CombinedJudgeRequest, rubric: "Rubric") -> CombinedJudgeOutcome:
        """One Converse call for every dimension of the request (combined mode)."""
        prompt = build_combined_prompt(request, rubric)
        verdicts, common = self._ask(self.converse_params(prompt, rubric), rubric, prompt,
                                     lambda reply: parse_combined_verdict(reply, prompt.sub_scores))
        return CombinedJudgeOutcome(verdicts=verdicts, **common)

    def _ask(self, params: dict[str, Any], rubric: "Rubric", prompt: JudgePrompt | CombinedJudgePrompt,
             parse: Callable[[dict[str, Any]], Any]) -> tuple[Any, dict[str, Any]]:
        """(parsed verdict(s) or None, the other outcome fields): one call with its retries, and ONE
        re-ask when the reply does not validate (see the module doc)."""
        recorded = prompt.record()
        budget = self.max_attempts if self.max_attempts is not None else rubric.judge.max_attempts
        reply, common, error, throttled = self._converse_with_retries(params, rubric, recorded, budget)
        if reply is None:
            return None, {**common, "error": error, "throttled": throttled}
        common.update(reply_usage_and_raw(reply, common["calls"]))
        try:
            return parse(reply), common
        except InvalidJudgeOutput as exc:
            first = str(exc)
        left = budget - common["calls"]
        if left < 1:
            return None, {**common, "error": f"invalid judge output: {first} (not re-asked: no attempts left)"}

        cut_off = reply.get("stopReason") == "max_tokens"
        again = {**params, "messages": reask_messages(params["messages"], reply,
                                                      reask_note(prompt, first, cut_off=cut_off))}
        reply2, common2, error2, throttled2 = self._converse_with_retries(again, rubric, recorded, left)
        calls = common["calls"] + common2["calls"]
        if reply2 is None:
            return None, {**common, "calls": calls, "usage": common["usage"].add(common2["usage"]),
                          "error": f"{error2} (re-asking after invalid judge output: {first})",
                          "throttled": throttled2}
        second = reply_usage_and_raw(reply2, common2["calls"])
        half = RAW_KEEP_CHARS // 2
        raw = (f"{truncate_middle(common['raw'], half)}\n[re-asked after invalid judge output]\n"
               f"{truncate_middle(second['raw'], half)}")
        out = {**common, "calls": calls, "usage": common["usage"].add(second["usage"]), "raw": raw}
        try:
            parsed = parse(reply2)
        except InvalidJudgeOutput as exc:
            return None, {**out, "error": f"invalid judge output: {exc} (re-asked once after: {first})"}
        return parsed, out

    def _converse_with_retries(
        self, params: dict[str, Any], rubric: "Rubric", recorded_prompt: str, max_attempts: int
    ) -> tuple[dict[str, Any] | None, dict[str, Any], str | None, bool]:
        """(reply or None, outcome fields, error, throttled): the retry policy of the module doc,
        within ``max_attempts`` attempts."""
        attempts = 0
        last_code = ""
        self._check_refused()
        while True:
            attempts += 1
            try:
                reply = self._observed_converse(params)
            except CREDENTIAL_ERRORS as exc:
                raise self._misconfigured(f"the Bedrock judge ({self.model_id}) cannot be called: "
                                          f"{type(exc).__name__}: {exc}") from exc
            except ClientError as exc:
                last_code = exc.response.get("Error", {}).get("Code") or "ClientError"
                status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0
                retryable = last_code in THROTTLING_CODES or last_code in TRANSIENT_CODES or status >= 500
                if last_code in MISCONFIGURATION_CODES:
                    message = exc.response.get("Error", {}).get("Message", "")
                    raise self._misconfigured(f"the Bedrock judge ({self.model_id}) was refused: {last_code}: "
                                              f"{message}".rstrip(": ")) from exc
                if not retryable:
                    message = exc.response.get("Error", {}).get("Message", "")
                    return None, _failed_common(attempts, recorded_prompt), \
                        f"judge call rejected: {last_code}: {message}".rstrip(": "), False
            except TRANSPORT_ERRORS as exc:
                last_code = type(exc).__name__
            else:
                return reply, {"calls": attempts, "prompt": recorded_prompt}, None, False

            if attempts >= max_attempts:
                return None, _failed_common(attempts, recorded_prompt), \
                    f"judge failed after {attempts} attempts: {last_code}", last_code in THROTTLING_CODES
            self._sleep(self.backoff_delay(attempts - 1, rubric))


def _failed_common(attempts: int, recorded_prompt: str) -> dict[str, Any]:
    return {"calls": attempts, "usage": JudgeUsage(calls=attempts), "prompt": recorded_prompt}


def reask_messages(messages: list[dict[str, Any]], reply: dict[str, Any], note: str) -> list[dict[str, Any]]:
    """The conversation of the re-ask: the first request's messages, the model's reply as the
    assistant turn (its text and tool-call blocks; an input that is not an object is sent back as an
    empty one), then a user turn with an error ``toolResult`` carrying ``note`` for every tool call
    (Converse wants a result for each call of the previous turn, results first), or ``note`` as text
    when the reply called no tool. A reply with nothing to send back gets ``note`` added to the user
    message instead (roles must alternate, and an assistant turn may not be empty)."""
    content = ((reply.get("output") or {}).get("message") or {}).get("content") or []
    turn: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    for block in content:
        if not isinstance(block, dict):
            continue
        if isinstance(block.get("text"), str) and block["text"].strip():
            turn.append({"text": block["text"]})
        call = block.get("toolUse")
        if isinstance(call, dict) and call.get("toolUseId") and call.get("name"):
            data = call.get("input")
            turn.append({"toolUse": {"toolUseId": call["toolUseId"], "name": call["name"],
                                     "input": data if isinstance(data, dict) else {}}})
            results.append({"toolResult": {"toolUseId": call["toolUseId"], "content": [{"text": note}],
                                           "status": "error"}})
    if not turn:
        *before, last = messages
        return [*before, {**last, "content": [*last["content"], {"text": note}]}]
    answer = results or [{"text": note}]
    return [*messages, {"role": "assistant", "content": turn}, {"role": "user", "content": answer}]
