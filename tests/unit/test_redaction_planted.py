"""Planted personal data against the redactor, and benign shop text it must leave alone.

``tests/fixtures/pii/planted.jsonl``: one realistic shopper turn per line (English and Japanese),
``{"id", "locale", "intent", "text", "planted": [{"kind", "value", "must_vanish"?}]}``. Every planted
``value`` (and every ``must_vanish`` fragment of it, e.g. the street and number of an address) must be
gone from whatever is stored: verbatim, after NFKC (a full-width value stored as ASCII still counts),
case-insensitively, and, for the numeric kinds, as the same digit sequence with other separators.

``tests/fixtures/pii/benign.jsonl``: ``{"id", "locale", "intent", "text", "keep": [...]}``: shop text
with prices, ISBNs, ASINs, JAN codes, volumes, release dates, percentages and honorific look-alikes
(お客様, かぐや様は告らせたい, Dr. Stone). The text must come out unchanged.

The helpers here are shared with tests/integration/test_redaction_paths.py (every storage path).
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "pii"
KEY = "planted-set-test-key"
NUMERIC_KINDS = {"phone", "card", "my_number", "passport"}
KINDS = {"name", "my_number", "passport", "ip_address", "date_of_birth", "phone", "email", "card", "address",
         "postal_code", "order_id"}


def _read(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (FIXTURES / name).read_text(encoding="utf-8").splitlines() if line.strip()]


def load_planted() -> list[dict[str, Any]]:
    return _read("planted.jsonl")


def load_benign() -> list[dict[str, Any]]:
    return _read("benign.jsonl")


_ESCAPE = re.compile(r"\\u([dD][89abAB][0-9a-fA-F]{2})\\u([dD][c-fC-F][0-9a-fA-F]{2})|\\u([0-9a-fA-F]{4})")


def unescape_json(text: str) -> str:
    """``text`` with JSON \\uXXXX escapes (surrogate pairs too) decoded: a value stored escaped is
    still stored."""
    def one(m: re.Match) -> str:
        if m.group(3):
            return chr(int(m.group(3), 16))
        hi, lo = int(m.group(1), 16), int(m.group(2), 16)
        return chr(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00))

    return _ESCAPE.sub(one, text)


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def _digit_runs(text: str) -> list[str]:
    norm = unicodedata.normalize("NFKC", text).replace("ー", "-")
    return [re.sub(r"\D", "", m.group()) for m in re.finditer(r"\d(?:[\s.()\-/]*\d)*", norm)]


def leaked(item: dict[str, Any], stored: str) -> bool:
    """Whether a planted value (or a fragment that must vanish) is still in ``stored``."""
    hay = stored + "\n" + unescape_json(stored)
    folded = _fold(hay)
    for needle in [item["value"], *item.get("must_vanish", [])]:
        if needle in hay or _fold(needle) in folded:
            return True
    if item["kind"] in NUMERIC_KINDS:
        digits = re.sub(r"\D", "", unicodedata.normalize("NFKC", item["value"]))
        if len(digits) >= 7 and any(digits in run for run in _digit_runs(hay)):
            return True
    return False


def leaks_in(rows: list[dict[str, Any]], stored_by_row: dict[str, str]) -> list[str]:
    """``id:kind:value`` of every planted value still present in its row's stored text."""
    return [f"{row['id']}:{item['kind']}:{item['value']}" for row in rows for item in row["planted"]
            if leaked(item, stored_by_row[row["id"]])]


def over_redactions_in(rows: list[dict[str, Any]], stored_by_row: dict[str, str]) -> list[str]:
    """``id:string`` of every benign string no longer present in its row's stored text."""
    out = []
    for row in rows:
        hay = stored_by_row[row["id"]]
        hay = hay + "\n" + unescape_json(hay)
        out += [f"{row['id']}:{keep}" for keep in row["keep"] if keep not in hay]
    return out


def planted_count(rows: list[dict[str, Any]]) -> int:
    return sum(len(r["planted"]) for r in rows)


def benign_count(rows: list[dict[str, Any]]) -> int:
    return sum(len(r["keep"]) for r in rows)


def turn_for(row: dict[str, Any], index: int) -> dict[str, Any]:
    """A captured turn (TurnRecord shape, everything in clear as a producer sends it) carrying the
    row's text: as the query for even rows, in the conversation history for odd ones."""
    ja = row["locale"] == "ja-JP"
    turn: dict[str, Any] = {
        "turn_id": f"turn-{row['id']}", "session_id": f"sess-{row['id']}-raw",
        "timestamp": "2026-11-16T10:00:00+09:00", "locale": row["locale"], "intent": row["intent"],
        "query": row["text"], "response": "ご連絡ありがとうございます。確認いたします。" if ja else "Thanks, let me check that.",
        "model_id": "anthropic.claude-sonnet-4", "prompt_version": "p1", "latency_ms": 812.5,
    }
    if index % 2:
        turn["conversation_history"] = [{"role": "user", "content": row["text"]},
                                        {"role": "assistant", "content": turn["response"]}]
        turn["query"] = "その後どうなりましたか？" if ja else "Any update on that?"
    return turn


# --------------------------------------------------------------------------------------------------
# The fixture itself
# --------------------------------------------------------------------------------------------------


def test_fixture_covers_the_categories_in_both_languages():
    planted, benign = load_planted(), load_benign()
    kinds = Counter(item["kind"] for row in planted for item in row["planted"])
    assert planted_count(planted) >= 80 and set(kinds) == KINDS
    assert {r["locale"] for r in planted} == {r["locale"] for r in benign} == {"en-US", "ja-JP"}
    assert benign_count(benign) >= 20
    for row in planted:
        for item in row["planted"]:
            assert item["value"] in row["text"] and all(p in item["value"] for p in item.get("must_vanish", []))
    for row in benign:
        assert all(k in row["text"] for k in row["keep"])


def test_leak_check_sees_escaped_full_width_and_reformatted_values():
    phone = {"kind": "phone", "value": "０９０ー２２２２ー３３３３"}
    assert leaked(phone, "call 090-2222-3333") and leaked(phone, "call 090 2222 3333")
    assert leaked({"kind": "name", "value": "田中"}, json.dumps("田中様"))  # "\u7530\u4e2d\u69d8"
    assert leaked({"kind": "email", "value": "Sakura.Ito@Example.COM"}, "sakura.ito@example.com")
    assert not leaked(phone, "call [PHONE]")


# --------------------------------------------------------------------------------------------------
# The redactor on the text itself
# --------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def redactor():
    from fmquality.production.redact import Redactor

    return Redactor(KEY)


def test_planted_values_are_all_redacted(redactor):
    rows = load_planted()
    stored = {r["id"]: redactor.redact_text(r["text"]) for r in rows}
    found = leaks_in(rows, stored)
    assert found == [], f"{len(found)} of {planted_count(rows)} planted values leak: {found}"


def test_each_planted_value_is_counted_under_its_kind(redactor):
    wrong = []
    for row in load_planted():
        counts: Counter = Counter()
        redactor.redact_text(row["text"], counts)
        wanted = Counter(item["kind"] for item in row["planted"])
        wrong += [f"{row['id']}:{kind} (counted {dict(counts)})" for kind, n in wanted.items() if counts[kind] < n]
    assert wrong == []


def test_benign_text_is_left_unchanged(redactor):
    rows = load_benign()
    changed = {r["id"]: redactor.redact_text(r["text"]) for r in rows}
    assert over_redactions_in(rows, changed) == []
    assert [r["id"] for r in rows if changed[r["id"]] != r["text"]] == []


def test_a_second_pass_over_redacted_text_changes_nothing(redactor):
    for row in load_planted() + load_benign():
        once = redactor.redact_text(row["text"])
        counts: Counter = Counter()
        assert redactor.redact_text(once, counts) == once and not counts, (row["id"], once, counts)
