"""A small local chatbot endpoint for tests and demos of ``http`` targets.

It answers a POSTed TargetRequest (``{"test_id", "query", "conversation_history", "locale",
"page_context"}``) with ``{"response": …, "latency_ms": …}`` taken from the dataset's recorded
``response`` of that test_id, after sleeping the configured latency. Knobs that make it a worse or
flakier chatbot, so a gate has something to catch:

- ``--regress intent=faq,tag=policy``: cases matching ANY of the selectors get an off-topic, fact-free
  answer instead of theirs (a prompt change that broke those intents);
- ``--status 500``: every request is answered with that HTTP status;
- ``--fail-rate 0.2``: that share of requests (seeded, reproducible) is answered with HTTP 503.

Every request body received is kept (``server.requests``) so a test can check what the chatbot
was sent (``server.request_headers`` their headers). Stdlib only; binds 127.0.0.1.

    python -m bench.chatbot --dataset datasets/mangaassist/golden.jsonl --port 8080 --latency-ms 50
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import threading
import time
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

VERSION = "bench-chatbot-1"
# What a broken prompt answers: on no topic, with no product, price, date or policy in it.
REGRESSED_ANSWER = ("Thanks for your message! I'm always happy to chat. Let me know if there is anything else "
                    "you would like to talk about today.")
REGRESSED_ANSWER_JA = "メッセージありがとうございます！ほかに何かお話ししたいことがあれば、いつでもどうぞ。"


def load_answers(dataset: str | Path) -> dict[str, dict[str, Any]]:
    """test_id -> the dataset line (its recorded response, intent, tags and locale)."""
    lines: dict[str, dict[str, Any]] = {}
    for number, raw in enumerate(Path(dataset).read_text(encoding="utf-8").splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            line = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{dataset}:{number}: not JSON: {exc.msg}") from exc
        if isinstance(line, dict) and isinstance(line.get("test_id"), str):
            lines[line["test_id"]] = line
    return lines


def parse_selectors(text: str | None) -> list[tuple[str, str]]:
    """``intent=faq,tag=policy,locale=ja-JP,test_id=x`` -> [(field, value)]."""
    selectors = []
    for part in (text or "").split(","):
        if not part.strip():
            continue
        field, sep, value = part.partition("=")
        field, value = field.strip(), value.strip()
        if not sep or field not in ("intent", "tag", "locale", "test_id") or not value:
            raise ValueError(f"bad --regress selector {part!r}: expected intent=X, tag=X, locale=X or test_id=X")
        selectors.append((field, value))
    return selectors


def matches(line: dict[str, Any], selectors: Iterable[tuple[str, str]]) -> bool:
    for field, value in selectors:
        if field == "tag" and value in (line.get("tags") or []):
            return True
        if field != "tag" and line.get(field) == value:
            return True
    return False


class ChatbotServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, port: int, answers: dict[str, dict[str, Any]], *, latency_ms: float = 0.0,
                 regress: list[tuple[str, str]] | None = None, status: int | None = None,
                 fail_rate: float = 0.0, seed: int = 0, version: str | None = VERSION) -> None:
        super().__init__(("127.0.0.1", port), ChatbotHandler)
        self.answers = answers
        self.latency_ms = latency_ms
        self.regress = regress or []
        self.status = status
        self.fail_rate = fail_rate
        self.version = version
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []
        self.request_headers: list[dict[str, str]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/chat"

    def reply_for(self, request: dict[str, Any], headers: dict[str, str] | None = None) -> tuple[int, dict[str, Any]]:
        """(HTTP status, JSON body) of one request."""
        with self._lock:
            self.requests.append(request)
            self.request_headers.append(dict(headers or {}))
            fail = self.fail_rate > 0 and self._rng.random() < self.fail_rate
        if self.status is not None and self.status != 200:
            return self.status, {"error": f"configured to answer {self.status}"}
        if fail:
            return 503, {"error": "injected failure"}
        test_id = request.get("test_id")
        line = self.answers.get(test_id) if isinstance(test_id, str) else None
        if line is None:
            return 404, {"error": f"unknown test_id {test_id!r}"}
        if self.regress and matches(line, self.regress):
            japanese = str(line.get("locale", "")).lower().startswith("ja")
            return 200, {"response": REGRESSED_ANSWER_JA if japanese else REGRESSED_ANSWER}
        if not isinstance(line.get("response"), str):
            return 404, {"error": f"no recorded response for {test_id!r}"}
        return 200, {"response": line["response"]}


class ChatbotHandler(BaseHTTPRequestHandler):
    server: ChatbotServer
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        started = time.perf_counter()
        length = int(self.headers.get("Content-Length") or 0)
        try:
            request = json.loads(self.rfile.read(length) or b"null")
        except json.JSONDecodeError:
            request = None
        if not isinstance(request, dict):
            self._send(400, {"error": "expected a JSON object"})
            return
        status, body = self.server.reply_for(request, dict(self.headers))
        if status == 200 and self.server.latency_ms > 0:
            time.sleep(self.server.latency_ms / 1000.0)
        if status == 200:
            body["latency_ms"] = round((time.perf_counter() - started) * 1000.0, 3)
        self._send(status, body)

    def _send(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if self.server.version:
            self.send_header("X-Chatbot-Version", self.server.version)
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - http.server's signature
        pass  # quiet: tests and demos print their own summaries


def serve(dataset: str | Path, port: int = 0, *, latency_ms: float = 0.0, regress: str | None = None,
          status: int | None = None, fail_rate: float = 0.0, seed: int = 0,
          version: str | None = VERSION) -> tuple[ChatbotServer, threading.Thread, str]:
    """Start the chatbot in a background thread: (server, thread, url). Stop it with
    ``server.shutdown(); server.server_close()``. ``port=0`` picks a free port."""
    server = ChatbotServer(port, load_answers(dataset), latency_ms=latency_ms, regress=parse_selectors(regress),
                           status=status, fail_rate=fail_rate, seed=seed, version=version)
    thread = threading.Thread(target=server.serve_forever, name="bench-chatbot", daemon=True)
    thread.start()
    return server, thread, server.url


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.chatbot", description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", required=True, help="JSON Lines dataset whose responses are the answers")
    parser.add_argument("--port", type=int, default=8080, help="port on 127.0.0.1 (0: any free port)")
    parser.add_argument("--latency-ms", type=float, default=0.0, help="sleep before each answer")
    parser.add_argument("--regress", help="answer matching cases badly: intent=X,tag=Y,locale=Z,test_id=W")
    parser.add_argument("--fail-rate", type=float, default=0.0, help="share of requests answered with HTTP 503")
    parser.add_argument("--status", type=int, help="answer every request with this HTTP status")
    parser.add_argument("--seed", type=int, default=0, help="seed of --fail-rate")
    args = parser.parse_args(argv)
    if not 0.0 <= args.fail_rate <= 1.0:
        parser.error("--fail-rate must be between 0 and 1")
    try:
        server = ChatbotServer(args.port, load_answers(args.dataset), latency_ms=args.latency_ms,
                               regress=parse_selectors(args.regress), status=args.status,
                               fail_rate=args.fail_rate, seed=args.seed)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"chatbot answering {len(server.answers)} test ids at {server.url}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
