"""The ``http(s)://…`` target: the chatbot's endpoint, one POST of a TargetRequest per turn.

urllib.request on purpose, not ``requests``: moto patches ``requests`` (and botocore's transport)
while a mock is active, and a test's local chatbot must be reached for real.
"""

from __future__ import annotations

import json
import os
import socket
import urllib.error
import urllib.request
from collections.abc import Mapping
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from typing import Any

from pydantic import ValidationError

from fmquality.models import TestCase
from fmquality.targets.aws import ClientFactory, target_error
from fmquality.targets.base import TargetError, TargetReply, TargetSpec, request_for

VERSION_HEADER = "X-Chatbot-Version"
MAX_RETRY_AFTER_S = 30.0
ERROR_BODY_CHARS = 200


def headers_from_env(name: str) -> dict[str, str]:
    raw = os.environ.get(name)
    if raw is None:
        raise ValueError(f"headers_env: environment variable {name} is not set")
    return _header_object(raw, f"environment variable {name}")


def headers_from_secret(secret_id: str, client: ClientFactory) -> dict[str, str]:
    try:
        raw = client("secretsmanager").get_secret_value(SecretId=secret_id).get("SecretString")
    except Exception as exc:  # noqa: BLE001 - named below, the run cannot start without its headers
        raise ValueError(f"headers_secret {secret_id}: {target_error(exc, 'GetSecretValue')}") from exc
    if raw is None:
        raise ValueError(f"headers_secret {secret_id}: the secret holds no SecretString")
    return _header_object(raw, f"secret {secret_id}")


def _header_object(raw: str, where: str) -> dict[str, str]:
    # Never echo the value: it holds credentials.
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{where} is not JSON (expected an object of header names to values)") from exc
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise ValueError(f"{where} must be a JSON object of header names to string values")
    return value


def retry_after_seconds(value: str | None, now: datetime | None = None) -> float | None:
    """An HTTP Retry-After (seconds or an HTTP date) in seconds, capped at 30; None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=timezone.utc)
        seconds = (when - (now or datetime.now(timezone.utc))).total_seconds()
    return min(MAX_RETRY_AFTER_S, max(0.0, seconds))


def parse_reply(body: bytes | str, where: str) -> TargetReply:
    """The chatbot's reply, validated: a JSON object with a string ``response``; TargetError naming
    what was wrong otherwise (a malformed reply is final: asking again repeats the bug)."""
    try:
        data = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise TargetError(f"{where}: reply is not JSON ({exc.msg if hasattr(exc, 'msg') else exc})") from exc
    return reply_from_object(data, where)


def reply_from_object(data: Any, where: str) -> TargetReply:
    if not isinstance(data, dict):
        raise TargetError(f"{where}: reply is a JSON {type(data).__name__}, expected an object with a string "
                          "\"response\"")
    try:
        return TargetReply.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or '<root>'}: {e['msg']}" for e in exc.errors())
        raise TargetError(f"{where}: invalid reply: {problems}"[:500]) from exc


class HttpTarget:
    def __init__(self, spec: TargetSpec, client: ClientFactory | None = None,
                 headers: Mapping[str, str] | None = None) -> None:
        self.spec = spec
        if headers is None:
            headers = {}
            if spec.headers_env:
                headers = headers_from_env(spec.headers_env)
            elif spec.headers_secret:
                if client is None:
                    from fmquality.targets.aws import default_client_factory

                    client = default_client_factory(spec.timeout_s)
                headers = headers_from_secret(spec.headers_secret, client)
        self._headers = {"Content-Type": "application/json", "Accept": "application/json", **headers}
        self._version: str | None = None

    @property
    def id(self) -> str:
        return self.spec.ref

    @property
    def version(self) -> str | None:
        """The version header of the latest answer (None until one arrived, or when the endpoint sends none)."""
        return self._version

    def answer(self, case: TestCase) -> TargetReply:
        body = request_for(case).model_dump_json().encode("utf-8")
        request = urllib.request.Request(self.spec.ref, data=body, headers=self._headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.spec.timeout_s) as reply:  # noqa: S310 - the operator's URL
                payload = reply.read()
                version = reply.headers.get(VERSION_HEADER)
        except urllib.error.HTTPError as exc:
            status = exc.code
            detail = _body_snippet(exc)
            retryable = status == 429 or status >= 500
            raise TargetError(f"HTTP {status}{': ' + detail if detail else ''}", retryable=retryable,
                              retry_after_s=retry_after_seconds(exc.headers.get("Retry-After")) if retryable else None
                              ) from exc
        except (TimeoutError, socket.timeout) as exc:
            raise TargetError(f"timed out after {self.spec.timeout_s:g} s", retryable=True) from exc
        except urllib.error.URLError as exc:
            reason = exc.reason
            if isinstance(reason, (TimeoutError, socket.timeout)):
                raise TargetError(f"timed out after {self.spec.timeout_s:g} s", retryable=True) from exc
            raise TargetError(f"connection failed: {reason}", retryable=True) from exc
        except (ConnectionError, OSError) as exc:  # reset mid-reply, refused after connect, ...
            raise TargetError(f"connection failed: {type(exc).__name__}: {exc}", retryable=True) from exc
        if version:
            self._version = version
        return parse_reply(payload, "http").served_by(version)


def _body_snippet(exc: urllib.error.HTTPError) -> str:
    try:
        text = exc.read().decode("utf-8", "replace")
    except Exception:  # noqa: BLE001 - the status is the message; the body is a bonus
        return ""
    text = " ".join(text.split())
    return text[:ERROR_BODY_CHARS]
