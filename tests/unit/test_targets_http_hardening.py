"""The http target's bounds: header credentials go only to the hosts they are bound to; the body read
is capped; one deadline covers the whole call (a slow-drip endpoint cannot stretch it); redirects are
not followed. Servers are local (127.0.0.1), raw sockets where the test needs byte-level control."""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from fmquality.domain.case import TestCase
from fmquality.targets import TargetError, TargetSpec, make_target
from fmquality.targets.http_endpoint import HeaderConfig, HttpTarget, header_config
from fmquality.domain.errors import HeaderSecretRefused


def make_case() -> TestCase:
    return TestCase.model_validate({"test_id": "faq-returns-001", "intent": "faq", "query": "Can I return it?",
                                    "response": "recorded"})


# -- servers ------------------------------------------------------------------------------------------


class RawServer:
    """Accepts connections on 127.0.0.1 and hands each to ``behave(conn)`` in a thread."""

    def __init__(self, behave):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.behave = behave
        self.stop = threading.Event()
        self.requests = 0
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}/chat"

    def _serve(self):
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.requests += 1
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn):
        try:
            _read_request(conn)
            self.behave(conn, self.stop)
        except OSError:
            pass
        finally:
            conn.close()

    def close(self):
        self.stop.set()
        self.sock.close()


def _read_request(conn) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        data += conn.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                   if line.lower().startswith(b"content-length")), 0)
    while len(body) < length:
        body += conn.recv(65536)
    return head


@pytest.fixture
def raw_server():
    servers = []

    def start(behave):
        server = RawServer(behave)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()


def drip(data: bytes, every_s: float, stop: threading.Event, conn) -> None:
    for byte in data:
        if stop.wait(every_s):
            return
        conn.sendall(bytes([byte]))


# -- 3. deadline and body cap -------------------------------------------------------------------------


def test_a_slow_drip_body_cannot_hold_the_call_past_its_deadline(raw_server):
    body = json.dumps({"response": "x" * 200}).encode()

    def behave(conn, stop):
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                     + str(len(body)).encode() + b"\r\n\r\n")
        drip(body, 0.2, stop, conn)  # one byte every 0.2 s: each read is well inside a 1.5 s timeout

    server = raw_server(behave)
    target = HttpTarget(TargetSpec.parse({"spec": server.url, "timeout_s": 1.5}))
    started = time.monotonic()
    with pytest.raises(TargetError, match="timed out after 1.5 s") as info:
        target.answer(make_case())
    assert time.monotonic() - started < 2.5
    assert info.value.retryable


def test_slow_drip_headers_are_cut_at_the_deadline_too(raw_server):
    def behave(conn, stop):
        drip(b"HTTP/1.1 200 OK\r\nX-Padding: " + b"a" * 200 + b"\r\n\r\n", 0.2, stop, conn)

    server = raw_server(behave)
    started = time.monotonic()
    with pytest.raises(TargetError, match="timed out") as info:
        HttpTarget(TargetSpec.parse({"spec": server.url, "timeout_s": 1.0})).answer(make_case())
    assert time.monotonic() - started < 2.0 and info.value.retryable


def _serve_body(body: bytes, chunked: bool = False):
    def behave(conn, stop):
        if chunked:
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
            for start in range(0, len(body), 4096):
                piece = body[start:start + 4096]
                conn.sendall(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
            conn.sendall(b"0\r\n\r\n")
        else:
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                         + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body)

    return behave


def test_a_reply_over_the_default_1_mb_is_refused_as_too_large(raw_server):
    big = json.dumps({"response": "y" * 1_100_000}).encode()
    server = raw_server(_serve_body(big))
    with pytest.raises(TargetError, match="response too large") as info:
        HttpTarget(TargetSpec.parse(server.url)).answer(make_case())
    assert not info.value.retryable  # asking again gets the same answer


def test_the_cap_holds_without_a_content_length_and_is_configurable(raw_server):
    body = json.dumps({"response": "z" * 20_000}).encode()
    chunked = raw_server(_serve_body(body, chunked=True))
    with pytest.raises(TargetError, match="response too large: more than 10000 bytes"):
        HttpTarget(TargetSpec.parse({"spec": chunked.url, "max_response_bytes": 10_000})).answer(make_case())
    fits = raw_server(_serve_body(body, chunked=True))
    reply = HttpTarget(TargetSpec.parse({"spec": fits.url, "max_response_bytes": 50_000})).answer(make_case())
    assert reply.response == "z" * 20_000


def test_redirects_are_not_followed(raw_server):
    def behave(conn, stop):
        conn.sendall(b"HTTP/1.1 302 Found\r\nLocation: /elsewhere\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")

    server = raw_server(behave)
    with pytest.raises(TargetError, match="HTTP 302: redirects are not followed") as info:
        HttpTarget(TargetSpec.parse(server.url)).answer(make_case())
    assert not info.value.retryable
    time.sleep(0.1)
    assert server.requests == 1


# -- 2. header credentials bound to hosts --------------------------------------------------------------


class HeaderEcho(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), _EchoHandler)
        self.headers_seen: list[dict] = []
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/chat"


class _EchoHandler(BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802
        self.rfile.read(int(self.headers["Content-Length"]))
        self.server.headers_seen.append(dict(self.headers))
        data = json.dumps({"response": "ok"}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def echo():
    server = HeaderEcho()
    yield server
    server.shutdown()
    server.server_close()


def _env(monkeypatch, value) -> str:
    monkeypatch.setenv("FMQ_TEST_HEADERS", json.dumps(value))
    return "FMQ_TEST_HEADERS"


def test_headers_are_sent_to_a_host_they_are_bound_to(echo, monkeypatch):
    name = _env(monkeypatch, {"allowed_hosts": ["127.0.0.1"], "headers": {"X-Api-Key": "k3y"}})
    reply = make_target(TargetSpec.parse({"spec": echo.url, "headers_env": name})).answer(make_case())
    assert reply.response == "ok" and echo.headers_seen[0]["X-Api-Key"] == "k3y"


@pytest.mark.parametrize("bound", [["chat.example.com"], ["127.0.0.1:1"], ["*.0.0.1"]])
def test_headers_bound_elsewhere_are_refused_before_any_request(echo, monkeypatch, bound):
    name = _env(monkeypatch, {"allowed_hosts": bound, "headers": {"X-Api-Key": "k3y"}})
    with pytest.raises(HeaderSecretRefused, match="not to '127.0.0.1'") as info:
        make_target(TargetSpec.parse({"spec": echo.url, "headers_env": name}))
    assert "k3y" not in str(info.value) and echo.headers_seen == []


def test_a_bare_header_object_is_bound_to_no_host_and_refused(monkeypatch):
    name = _env(monkeypatch, {"Authorization": "Bearer t0ken"})
    with pytest.raises(HeaderSecretRefused, match="names no allowed_hosts") as info:
        make_target(TargetSpec.parse({"spec": "https://chat.example.com/turn", "headers_env": name}))
    assert "t0ken" not in str(info.value)


class FakeSecrets:
    def __init__(self, value):
        self.value = value

    def get_secret_value(self, SecretId):  # noqa: N803 - boto3's name
        return {"SecretString": json.dumps(self.value)}


def test_a_secret_from_secrets_manager_is_bound_the_same_way():
    secret = FakeSecrets({"allowed_hosts": ["chat.example.com"], "headers": {"X-Api-Key": "s3cr3t"}})
    client = lambda service: {"secretsmanager": secret}[service]  # noqa: E731
    target = make_target(TargetSpec.parse({"spec": "https://chat.example.com/turn", "headers_secret": "chat"}), client)
    assert target._headers["X-Api-Key"] == "s3cr3t"
    with pytest.raises(HeaderSecretRefused, match="headers_secret chat is bound to \\['chat.example.com'\\], "
                                                  "not to 'evil.example.net'"):
        make_target(TargetSpec.parse({"spec": "https://evil.example.net/turn", "headers_secret": "chat"}), client)
    # Plain http carries credentials in clear text: only to a loopback host.
    with pytest.raises(HeaderSecretRefused, match="https only"):
        make_target(TargetSpec.parse({"spec": "http://chat.example.com/turn", "headers_secret": "chat"}), client)


def test_host_matching_rules():
    config = HeaderConfig(headers={}, allowed_hosts=("chat.example.com", "*.bots.example.com", "localhost:8765"),
                          where="test")
    config.check("https://CHAT.example.com./turn")
    config.check("https://eu.bots.example.com/turn")
    config.check("http://localhost:8765/turn")
    for url in ("https://bots.example.com/turn", "https://chat.example.com.evil.net/turn",
                "http://localhost:9999/turn", "https://example.com/turn"):
        with pytest.raises(HeaderSecretRefused):
            config.check(url)


@pytest.mark.parametrize("value, message", [
    ({"allowed_hosts": [], "headers": {}}, "non-empty list"),
    ({"allowed_hosts": ["https://chat.example.com/"], "headers": {}}, "non-empty list"),
    ({"allowed_hosts": ["a"], "headers": {"X": 1}}, "string values"),
    ({"allowed_hosts": ["a"], "headers": {}, "extra": 1}, "unknown key"),
])
def test_malformed_header_configs_are_named(value, message):
    with pytest.raises(ValueError, match=message):
        header_config(json.dumps(value), "secret s")
