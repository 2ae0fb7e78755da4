"""A stand-in chatbot for ``python:`` targets in the end-to-end tests.

It answers a turn with the answer recorded for that test id in the shipped fixtures (it is sent only
the turn, never the recorded answer, so it looks it up, as a deployed chatbot "knows" its answers),
except where a test asks for a regression or an outage.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

_FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
_RECORDED: dict[str, dict[str, Any]] = {
    row["test_id"]: row
    for name in ("cli_good.jsonl",)
    for row in (json.loads(line) for line in (_FIXTURES / name).read_text(encoding="utf-8").splitlines() if line)
}
# What the regressed chatbot says to policy questions: a stale 30-day window (the policy is 15 days).
STALE_FAQ = ("You can return unopened items within 30 days of delivery, and your refund reaches the original "
             "payment method within 5-7 business days.")


def _turn(request: Any) -> dict[str, Any]:
    return request.model_dump(mode="json") if hasattr(request, "model_dump") else dict(request)


def recorded(request: Any) -> dict[str, Any]:
    """The production chatbot: the recorded answers."""
    turn = _turn(request)
    return {"response": _RECORDED[turn["test_id"]]["response"], "usage": {"input_tokens": 100, "output_tokens": 20}}


def regressed_on_faq(request: Any) -> dict[str, Any]:
    """A candidate that regressed on one intent (faq) and answers everything else as before."""
    turn = _turn(request)
    if _RECORDED[turn["test_id"]]["intent"] == "faq":
        return {"response": STALE_FAQ, "usage": {"input_tokens": 100, "output_tokens": 25}}
    return recorded(request)


def down(request: Any) -> dict[str, Any]:
    """A chatbot that never answers."""
    raise ConnectionError("chatbot endpoint refused the connection")


def longest_japanese(request: Any) -> dict[str, Any]:
    """A chatbot answering at the rubric's limits.max_response_chars, in Japanese (tests/e2e/test_payload_budget)."""
    from fmquality.config.rubric import load_rubric

    sentence = "ご注文の商品は未開封であれば、お届けから十五日以内に返品いただけます。"
    limit = load_rubric().limits.max_response_chars
    return {"response": (sentence * (limit // len(sentence) + 1))[:limit], "usage": {"input_tokens": 100, "output_tokens": 20}}
