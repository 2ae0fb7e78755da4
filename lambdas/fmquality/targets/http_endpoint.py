"""The ``http(s)://…`` target: the chatbot's endpoint, one POST of a TargetRequest per turn.

``http.client`` on purpose, not ``requests``: moto patches ``requests`` (and botocore's transport)
while a mock is active, and a test's local chatbot must be reached for real. And not
``urllib.request`` either: it follows redirects with the request's headers (credentials included) to
whatever host the redirect names, and its timeout is per socket read, so an endpoint that drips one
byte a second holds a "3 s" call for as long as it likes.

What a call may cost is bounded:

- one deadline for the whole call (``timeout_s``, connect to last byte), on a monotonic clock: every
  socket operation gets what is left of it, and a watchdog cuts the connection when it passes;
- the body read is capped (``max_response_bytes``, default 1 MB): a larger answer is an error
  (``response too large``), never parsed;
- redirects are not followed (a 3xx is a final error).

Header credentials (``headers_env`` locally, ``headers_secret`` on AWS) are bound to hosts: the
variable or secret holds ``{"allowed_hosts": ["chat.example.com", "*.chat.example.com",
"127.0.0.1:8765"], "headers": {"X-Api-Key": "…"}}``, and a target URL on any other host (or plain
``http://`` to a host that is not loopback) is refused before the first case with
``HeaderSecretRefused``, the headers never sent.
"""

from __future__ import annotations

import http.client
import ipaddress
import json
import os
import socket
import ssl
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlsplit

from pydantic import ValidationError

from fmquality.domain.case import TestCase
from fmquality.targets.aws import ClientFactory, target_error
from fmquality.domain.errors import TargetError
from fmquality.targets.base import REPLAY_HEADER, TargetReply, TargetSpec, request_for
from fmquality.domain.errors import HeaderSecretRefused

VERSION_HEADER = "X-Chatbot-Version"
MAX_RETRY_AFTER_S = 30.0
ERROR_BODY_CHARS = 200
READ_CHUNK_BYTES = 64 * 1024
HEADER_CONFIG_KEYS = {"allowed_hosts", "headers"}
HEADER_CONFIG_SHAPE = '{"allowed_hosts": ["<host>[:<port>]", ...], "headers": {"<Header-Name>": "<value>", ...}}'


@dataclass(frozen=True)
class HeaderConfig:
    """Headers and the hosts they may be sent to. ``where`` names the source (never its values)."""

    headers: dict[str, str] = field(repr=False)
    allowed_hosts: tuple[str, ...]
    where: str

    def check(self, url: str) -> None:
        """HeaderSecretRefused unless ``url``'s host is one the headers are bound to (and, over plain
        http, a loopback host: credentials never cross a network in clear text)."""
        parts = urlsplit(url)
        host = (parts.hostname or "").lower().rstrip(".")
        if not any(_host_matches(entry, host, _port(parts)) for entry in self.allowed_hosts):
            raise HeaderSecretRefused(
                f"{self.where} is bound to {list(self.allowed_hosts)}, not to {host or url!r}: its headers are "
                "not sent to another host")
        if parts.scheme == "http" and not _is_loopback(host):
            raise HeaderSecretRefused(f"{self.where}: its headers are sent over https only (or plain http to a "
                                      f"loopback host), not to http://{host}")


def _port(parts: Any) -> int:
    try:
        port = parts.port
    except ValueError:
        port = None
    return port if port is not None else (443 if parts.scheme == "https" else 80)


def _host_matches(entry: str, host: str, port: int) -> bool:
    bound = urlsplit("//" + entry)
    bound_host = (bound.hostname or "").lower().rstrip(".")
    try:
        bound_port = bound.port
    except ValueError:
        return False
    if bound_port is not None and bound_port != port:
        return False
    if bound_host.startswith("*."):  # subdomains of a DNS name; an IP address is never one
        return not _is_ip(host) and host.endswith(bound_host[1:]) and host != bound_host[2:]
    return bool(host) and host == bound_host


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def headers_from_env(name: str) -> HeaderConfig:
    raw = os.environ.get(name)
    if raw is None:
        raise ValueError(f"headers_env: environment variable {name} is not set")
    return header_config(raw, f"environment variable {name}")


def headers_from_secret(secret_id: str, client: ClientFactory) -> HeaderConfig:
    try:
        raw = client("secretsmanager").get_secret_value(SecretId=secret_id).get("SecretString")
    except Exception as exc:  # noqa: BLE001 - named below, the run cannot start without its headers
        raise ValueError(f"headers_secret {secret_id}: {target_error(exc, 'GetSecretValue')}") from exc
    if raw is None:
        raise ValueError(f"headers_secret {secret_id}: the secret holds no SecretString")
    return header_config(raw, f"headers_secret {secret_id}")


def header_config(raw: str, where: str) -> HeaderConfig:
    """``{"allowed_hosts": [...], "headers": {...}}`` read from a variable or a secret. Never echoes a
    value: it holds credentials. A bare object of headers (bound to no host) is refused."""
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{where} is not JSON (expected {HEADER_CONFIG_SHAPE})") from exc
    if not isinstance(value, dict):
        raise ValueError(f"{where} must be a JSON object: {HEADER_CONFIG_SHAPE}")
    if "allowed_hosts" not in value or "headers" not in value:
        raise HeaderSecretRefused(f"{where} names no allowed_hosts: header credentials are bound to the hosts "
                                  f"they may be sent to, {HEADER_CONFIG_SHAPE}")
    unknown = sorted(set(value) - HEADER_CONFIG_KEYS)
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {unknown}; expected {HEADER_CONFIG_SHAPE}")
    headers, hosts = value["headers"], value["allowed_hosts"]
    if not isinstance(headers, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in headers.items()):
        raise ValueError(f"{where}: headers must be a JSON object of header names to string values")
    if (not isinstance(hosts, list) or not hosts
            or not all(isinstance(h, str) and h.strip() and "/" not in h for h in hosts)):
        raise ValueError(f"{where}: allowed_hosts must be a non-empty list of host names (host or host:port, "
                         "*.domain for its subdomains)")
    return HeaderConfig(headers=dict(headers), allowed_hosts=tuple(h.strip().lower() for h in hosts), where=where)


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
        """``headers``: given by the caller (trusted, sent as is); otherwise from the spec's
        ``headers_env`` or ``headers_secret``, checked against the hosts they are bound to."""
        self.spec = spec
        parts = urlsplit(spec.ref)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"http target {spec.ref!r}: expected http(s)://host[:port]/path")
        try:
            parts.port
        except ValueError as exc:
            raise ValueError(f"http target {spec.ref!r}: {exc}") from exc
        if headers is None:
            config: HeaderConfig | None = None
            if spec.headers_env:
                config = headers_from_env(spec.headers_env)
            elif spec.headers_secret:
                if client is None:
                    from fmquality.targets.aws import default_client_factory

                    client = default_client_factory(spec.timeout_s)
                config = headers_from_secret(spec.headers_secret, client)
            if config is not None:
                config.check(spec.ref)
            headers = config.headers if config is not None else {}
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
        request = request_for(case)
        body = request.model_dump_json().encode("utf-8")
        sent = {**self._headers, REPLAY_HEADER: "true"} if request.replay else self._headers
        status, headers, payload = _post(self.spec, body, sent)
        if status >= 300:
            detail = " ".join(payload.decode("utf-8", "replace").split())[:ERROR_BODY_CHARS]
            if status < 400:
                raise TargetError(f"HTTP {status}: redirects are not followed")
            retryable = status == 429 or status >= 500
            raise TargetError(f"HTTP {status}{': ' + detail if detail else ''}", retryable=retryable,
                              retry_after_s=retry_after_seconds(headers.get("Retry-After")) if retryable else None,
                              unavailable=status >= 500)
        version = headers.get(VERSION_HEADER)
        if version:
            self._version = version
        return parse_reply(payload, "http").served_by(version)


def _post(spec: TargetSpec, body: bytes, headers: Mapping[str, str]) -> tuple[int, http.client.HTTPMessage, bytes]:
    """One POST within ``spec.timeout_s`` overall: (status, headers, body). A 2xx body is read whole
    up to ``spec.max_response_bytes``; an error reply's body only as far as a short snippet."""
    timeout = spec.timeout_s
    deadline = time.monotonic() + timeout
    parts = urlsplit(spec.ref)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    if parts.scheme == "https":
        conn: http.client.HTTPConnection = http.client.HTTPSConnection(
            parts.hostname, parts.port, timeout=timeout, context=ssl.create_default_context())
    else:
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)
    expired = threading.Event()
    sockets: list[socket.socket] = []

    def cut() -> None:
        # The deadline passed: whatever read is blocked (a header or body byte that trickles in
        # under the per-read timeout) ends now.
        expired.set()
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    watchdog = threading.Timer(timeout, cut)
    watchdog.daemon = True
    watchdog.start()
    try:
        conn.connect()
        if conn.sock is not None:
            sockets.append(conn.sock)  # kept: the connection drops its reference once a reply will close
        if expired.is_set():
            raise TimeoutError
        _left(conn.sock, deadline)
        conn.request("POST", path, body=body, headers=dict(headers))
        _left(conn.sock, deadline)
        response = conn.getresponse()
        sock = sockets[0] if sockets else None
        if 200 <= response.status < 300:
            payload = _read_capped(response, sock, deadline, spec.max_response_bytes, strict=True)
            if expired.is_set():
                raise TimeoutError
        else:
            try:  # the status is the message; the body only a bonus, read if it comes in time
                payload = _read_capped(response, sock, deadline, ERROR_BODY_CHARS * 4, strict=False)
            except (OSError, http.client.HTTPException):
                payload = b""
        return response.status, response.headers, payload
    except TargetError:
        raise
    except ssl.SSLCertVerificationError as exc:
        raise TargetError(f"TLS certificate of {parts.hostname} rejected: {exc.verify_message}") from exc
    except (TimeoutError, socket.timeout) as exc:
        raise _timed_out(timeout) from exc
    except (OSError, http.client.HTTPException) as exc:  # refused, reset mid-reply, cut by the watchdog, ...
        if expired.is_set() or time.monotonic() >= deadline:
            raise _timed_out(timeout) from exc
        raise TargetError(f"connection failed: {type(exc).__name__}: {exc}".rstrip(": "), retryable=True,
                          unavailable=True) from exc
    finally:
        watchdog.cancel()
        conn.close()
        for sock in sockets:
            try:
                sock.close()
            except OSError:
                pass


def _timed_out(timeout: float) -> TargetError:
    return TargetError(f"timed out after {timeout:g} s (the deadline of the whole call)", retryable=True)


def _left(sock: socket.socket | None, deadline: float) -> None:
    """Give the next socket operation what is left of the deadline (TimeoutError when nothing is)."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise TimeoutError
    if sock is not None:
        sock.settimeout(remaining)


def _read_capped(response: http.client.HTTPResponse, sock: socket.socket | None, deadline: float, limit: int,
                 *, strict: bool) -> bytes:
    """The body, at most ``limit`` bytes, before the deadline. ``strict``: more than ``limit`` is an
    error (an answer); otherwise the first ``limit`` bytes are enough (an error reply's snippet)."""
    declared = response.getheader("Content-Length")
    if strict and declared and declared.strip().isdigit() and int(declared) > limit:
        raise TargetError(f"response too large: {int(declared)} bytes declared, the limit is {limit}")
    chunks: list[bytes] = []
    total = 0
    while True:
        _left(sock, deadline)
        chunk = response.read1(READ_CHUNK_BYTES)
        if not chunk:
            break
        total += len(chunk)
        chunks.append(chunk)
        if total > limit:
            if strict:
                raise TargetError(f"response too large: more than {limit} bytes (max_response_bytes)")
            break
    return b"".join(chunks)[:limit] if not strict else b"".join(chunks)
