"""Personal data redaction, applied before a turn is stored (in the chatbot-side CaptureClient, again
in the Firehose transformation Lambda, so a careless producer cannot store PII, and in ``fmquality
sample``, which may read a producer's own turn files).

Always on decoded text: a record is parsed (or its JSON escapes decoded) before anything is matched,
because in ASCII-escaped JSON (``json.dumps``' default) Japanese text and full-width digits are
``\\uXXXX`` sequences that no pattern sees.

What is replaced, and in which order, is ``language/pii/`` (its ``detect`` module): order ids ->
``ord_<16 hex>``, an HMAC-SHA256 of the id under a secret key (the same id always gives the same
token within a key, so "where is my order" turns stay comparable; without the key the id cannot be
recovered or guessed by hashing candidates); e-mail addresses, cards, My Number, passports, IP
addresses, dates of birth, postal codes, addresses, phones and names -> ``[EMAIL]``, ``[CARD]``, ...
``[NAME]``. A second pass over redacted text changes nothing (the tokens match no pattern; ids
already in token form are kept), so the transformation Lambda is idempotent over a redacting client.

Identifiers: ``turn_id`` -> ``turn_<16 hex>`` and ``session_id`` -> ``sess_<16 hex>``, HMACs under the
same key (separate domains, so an id never hashes to another kind's token). ``page_context`` keeps only
what the scorers read (``PAGE_CONTEXT_ALLOWED``); every other key is dropped and counted under
``page_context_dropped``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from fmquality.domain.errors import RedactionKeyMissing
from fmquality.language.pii.common import normalize_width
from fmquality.language.pii.detect import TOKENS, find_personal_data
from fmquality.language.pii.orders import ORDER_ID_PATTERNS, order_ids_in

ORDER_TOKEN_PREFIX = "ord_"
TURN_TOKEN_PREFIX = "turn_"
SESSION_TOKEN_PREFIX = "sess_"
ORDER_KEY_ENV = "FMQ_ORDER_HASH_KEY"
ORDER_KEY_SECRET_ENV = "ORDER_HASH_SECRET_ID"
PAGE_CONTEXT_DROPPED = "page_context_dropped"
_ID_TOKEN = {prefix: re.compile(rf"{prefix}[0-9a-f]{{16}}") for prefix in
             (ORDER_TOKEN_PREFIX, TURN_TOKEN_PREFIX, SESSION_TOKEN_PREFIX)}

# ---- page context: what the scorers read (relevance, consistency, claims, money), nothing else.
_SCALAR = "scalar"
_ORDER_ID = "order_id"
_ITEM = {"asin": _SCALAR, "title": _SCALAR, "price": _SCALAR, "qty": _SCALAR}
_ORDER = {"order_id": _ORDER_ID, "status": _SCALAR, "ship_date": _SCALAR, "eta": _SCALAR, "carrier": _SCALAR,
          "items": [{**_ITEM, "status": _SCALAR}]}
PAGE_CONTEXT_ALLOWED: dict[str, Any] = {
    "current_asin": _SCALAR,
    "store_section": _SCALAR,
    "order": _ORDER,
    "orders": [_ORDER],
    "cart": ({"items": [_ITEM]}, [_ITEM]),  # {"items": [...]} or the list of items itself
}
_DROP = object()
# HMAC domains: a turn id, a session id and an order id of the same text never share a token.
_TURN_DOMAIN = b"turn_id\x00"
_SESSION_DOMAIN = b"session_id\x00"


_JSON_ESCAPE = re.compile(r'\\(u[0-9a-fA-F]{4}|["\\/bfnrt])')
_SIMPLE_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def unescape_json_text(text: str) -> str:
    """JSON string escapes (``\\u7530``, surrogate pairs, ``\\n``) decoded in text that is not (or not
    entirely) valid JSON, so what is matched is what a reader would see."""
    out = _JSON_ESCAPE.sub(lambda m: chr(int(m.group(1)[1:], 16)) if m.group(1)[0] == "u"
                           else _SIMPLE_ESCAPES[m.group(1)], text)
    return out.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def decode_bytes(raw: bytes) -> str:
    """UTF-8 (the contract), else CP932 (a Windows/Shift_JIS producer), else UTF-8 with replacements."""
    for encoding in ("utf-8", "cp932"):
        try:
            return raw.decode(encoding)
        except UnicodeDecodeError:
            continue
    return raw.decode("utf-8", "replace")


class Redactor:
    """Replaces personal data in text and in captured turns. ``order_key`` is the HMAC key of the
    order-id, turn-id and session-id tokens (bytes or str); ``order_id_patterns`` overrides the order
    id formats."""

    def __init__(self, order_key: bytes | str, order_id_patterns: tuple[str, ...] = ORDER_ID_PATTERNS) -> None:
        if not order_key:
            raise RedactionKeyMissing("an order-id hashing key is required")
        self._key = order_key.encode("utf-8") if isinstance(order_key, str) else bytes(order_key)
        self._order_ids = [re.compile(p) for p in order_id_patterns]
        self._default_order_ids = order_id_patterns == ORDER_ID_PATTERNS

    # ---- keyed tokens

    def _hmac(self, domain: bytes, value: str) -> str:
        return hmac.new(self._key, domain + normalize_width(value).strip().encode("utf-8"), hashlib.sha256).hexdigest()[:16]

    def order_token(self, order_id: str) -> str:
        return f"{ORDER_TOKEN_PREFIX}{self._hmac(b'', order_id)}"

    def turn_token(self, turn_id: str) -> str:
        """``turn_<16 hex>``: the stored turn id (and so the sampled test_id); a token is kept as it is."""
        return turn_id if _ID_TOKEN[TURN_TOKEN_PREFIX].fullmatch(turn_id) else \
            TURN_TOKEN_PREFIX + self._hmac(_TURN_DOMAIN, turn_id)

    def session_token(self, session_id: str) -> str:
        """``sess_<16 hex>``: the stored session id; a token is kept as it is."""
        return session_id if _ID_TOKEN[SESSION_TOKEN_PREFIX].fullmatch(session_id) else \
            SESSION_TOKEN_PREFIX + self._hmac(_SESSION_DOMAIN, session_id)

    def _order_field_token(self, order_id: str) -> str:
        return order_id if _ID_TOKEN[ORDER_TOKEN_PREFIX].fullmatch(order_id) else self.order_token(order_id)

    # ---- text

    def redact_text(self, text: str, counts: Counter | None = None, protect: Iterable[str] = ()) -> str:
        """``text`` with every personal-data span replaced; ``counts`` (if given) gets +1 per span and
        kind. ``protect``: phrases (catalog titles) that are never taken for a person's name."""
        if not isinstance(text, str) or not text:
            return text
        norm = normalize_width(text)
        spans: list[tuple[int, int, str, str]] = []  # start, end, kind, replacement

        def claim(start: int, end: int, kind: str, replacement: str | None = None) -> bool:
            if start >= end or any(start < e and s < end for s, e, _, _ in spans):
                return False
            spans.append((start, end, kind, replacement or TOKENS[kind]))
            return True

        order_ids_in(norm, claim, self._order_ids, self._default_order_ids, self.order_token)
        find_personal_data(norm, claim, [p for p in protect if isinstance(p, str) and p.strip()],
                           found=lambda: bool(spans))
        if not spans:
            return text
        out: list[str] = []
        last = 0
        for start, end, kind, replacement in sorted(spans):
            out.append(text[last:start])
            out.append(replacement)
            last = end
            if counts is not None:
                counts[kind] += 1
        out.append(text[last:])
        return "".join(out)

    # ---- values and turns

    def redact_value(self, value: Any, counts: Counter | None = None, protect: Iterable[str] = ()) -> Any:
        """Every string inside nested dicts/lists redacted (keys kept)."""
        if isinstance(value, str):
            return self.redact_text(value, counts, protect)
        if isinstance(value, Mapping):
            return {k: self.redact_value(v, counts, protect) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.redact_value(v, counts, protect) for v in value]
        return value

    def redact_number(self, value: Any, counts: Counter | None = None) -> Any:
        """An integer that reads as personal data (a card or phone sent as a number) becomes its token."""
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 1_000_000:
            text = str(value)
            redacted = self.redact_text(text, counts)
            return redacted if redacted != text else value
        return value

    def filter_page_context(self, page: Any, counts: Counter | None = None,
                            protect: Iterable[str] = ()) -> dict[str, Any]:
        """The page context reduced to ``PAGE_CONTEXT_ALLOWED``: text redacted, the order id (any
        format) as its token, every other key dropped and counted under ``page_context_dropped``."""
        counts = counts if counts is not None else Counter()
        protect = list(protect) + _titles_in(page)
        if not isinstance(page, Mapping):
            counts[PAGE_CONTEXT_DROPPED] += 1
            return {}
        out = self._filter(page, PAGE_CONTEXT_ALLOWED, counts, protect)
        return {} if out is _DROP else out

    def _filter(self, value: Any, schema: Any, counts: Counter, protect: list[str]) -> Any:
        if isinstance(schema, tuple):  # alternatives by shape
            schema = next((s for s in schema if isinstance(value, list if isinstance(s, list) else Mapping)), schema[0])
        if schema == _SCALAR:
            if value is None or isinstance(value, (bool, float)):
                return value
            if isinstance(value, int):
                return self.redact_number(value, counts)
            if isinstance(value, str):
                return self.redact_text(value, counts, protect)
        elif schema == _ORDER_ID:
            if value is None:
                return None
            if isinstance(value, (str, int)) and not isinstance(value, bool):
                token = self._order_field_token(str(value))
                if token != str(value):
                    counts["order_id"] += 1
                return token
        elif isinstance(schema, list):
            if isinstance(value, list):
                kept = [self._filter(v, schema[0], counts, protect) for v in value]
                return [v for v in kept if v is not _DROP]
        elif isinstance(value, Mapping):
            out = {}
            for key, inner in value.items():
                if isinstance(key, str) and key in schema:
                    kept = self._filter(inner, schema[key], counts, protect)
                    if kept is not _DROP:
                        out[key] = kept
                else:
                    counts[PAGE_CONTEXT_DROPPED] += 1
            return out
        counts[PAGE_CONTEXT_DROPPED] += 1
        return _DROP

    def redact_turn(self, turn: Mapping[str, Any]) -> tuple[dict[str, Any], Counter]:
        """A captured turn (a dict in the TurnRecord shape) with its free text redacted: query,
        history, response and retrieved chunks; ``turn_id`` and ``session_id`` as keyed tokens; the
        page context reduced to its allow-list (the order id as its token whatever its format).
        Timestamps, versions and the catalog (public product data) are kept as they are. Returns the
        new dict and the counts per kind (``page_context_dropped``: keys dropped from the page)."""
        counts: Counter = Counter()
        out = dict(turn)
        protect = _titles_in(out.get("catalog"))
        if isinstance(out.get("turn_id"), str) and out["turn_id"]:
            out["turn_id"] = self.turn_token(out["turn_id"])
        if isinstance(out.get("session_id"), str) and out["session_id"]:
            out["session_id"] = self.session_token(out["session_id"])
        for name in ("query", "response"):
            if isinstance(out.get(name), str):
                out[name] = self.redact_text(out[name], counts, protect)
        if isinstance(out.get("conversation_history"), list):
            out["conversation_history"] = [
                {**m, "content": self.redact_text(m.get("content", ""), counts, protect)} if isinstance(m, Mapping) else m
                for m in out["conversation_history"]
            ]
        if out.get("page_context") is not None:
            out["page_context"] = self.filter_page_context(out["page_context"], counts, protect)
        if isinstance(out.get("retrieved_chunks"), list):
            out["retrieved_chunks"] = self.redact_value(out["retrieved_chunks"], counts, protect)
        return out, counts

    def redact_loose(self, value: Any, counts: Counter | None = None) -> Any:
        """Anything decoded from a record the schema refused: every string (keys too) and every
        long integer redacted, ids hashed, the page context reduced to its allow-list."""
        counts = counts if counts is not None else Counter()
        if isinstance(value, Mapping):
            out: dict[str, Any] = {}
            for key, inner in value.items():
                name = self.redact_text(key, counts) if isinstance(key, str) else str(key)
                if key == "turn_id" and isinstance(inner, str) and inner:
                    out[name] = self.turn_token(inner)
                elif key == "session_id" and isinstance(inner, str) and inner:
                    out[name] = self.session_token(inner)
                elif key == "page_context" and inner is not None:
                    out[name] = self.filter_page_context(inner, counts)
                else:
                    out[name] = self.redact_loose(inner, counts)
            return out
        if isinstance(value, (list, tuple)):
            return [self.redact_loose(v, counts) for v in value]
        if isinstance(value, str):
            return self.redact_text(value, counts)
        return self.redact_number(value, counts)

    def redact_raw(self, text: str, counts: Counter | None = None) -> str:
        """Text that is not JSON (a record cut short, another format): JSON escapes decoded first,
        turn/session ids in ``"turn_id": "..."`` pairs hashed, then redacted as text."""
        decoded = unescape_json_text(text)
        decoded = re.sub(r'("turn_id"\s*:\s*")([^"\\]*)(")', lambda m: m.group(1) + self.turn_token(m.group(2)) + m.group(3)
                         if m.group(2) else m.group(0), decoded)
        decoded = re.sub(r'("session_id"\s*:\s*")([^"\\]*)(")',
                         lambda m: m.group(1) + self.session_token(m.group(2)) + m.group(3) if m.group(2) else m.group(0),
                         decoded)
        return self.redact_text(decoded, counts)


def _titles_in(value: Any) -> list[str]:
    """Titles (and authors) of catalog or page items: never taken for a person's name."""
    found: list[str] = []
    if isinstance(value, Mapping):
        for key, inner in value.items():
            if key in ("title", "title_ja", "title_romaji", "author") and isinstance(inner, str):
                found.append(inner)
            else:
                found += _titles_in(inner)
    elif isinstance(value, (list, tuple)):
        for inner in value:
            found += _titles_in(inner)
    return found


def order_key_from_environment(environ: Mapping[str, str] | None = None, secrets_client: Any = None) -> bytes:
    """The order-id hashing key: the Secrets Manager secret named by ORDER_HASH_SECRET_ID (AWS; the
    client is passed in), else the FMQ_ORDER_HASH_KEY variable (local). Raises when neither is set."""
    env = os.environ if environ is None else environ
    secret_id = env.get(ORDER_KEY_SECRET_ENV)
    if secret_id:
        if secrets_client is None:
            raise RedactionKeyMissing(f"{ORDER_KEY_SECRET_ENV} is set but no Secrets Manager client was given")
        response = secrets_client.get_secret_value(SecretId=secret_id)
        value = response.get("SecretString") or response.get("SecretBinary")
        if not value:
            raise RedactionKeyMissing(f"secret {secret_id} is empty")
        return value.encode("utf-8") if isinstance(value, str) else bytes(value)
    value = env.get(ORDER_KEY_ENV)
    if value:
        return value.encode("utf-8")
    raise RedactionKeyMissing(f"set {ORDER_KEY_SECRET_ENV} (Secrets Manager) or {ORDER_KEY_ENV} (local) to hash order ids")


def refused_envelope(raw: bytes, reasons: list[str], redactor: Redactor) -> tuple[str, Counter]:
    """What is kept of a record the schema refused: ``{"refused": [reasons], "record": ...}`` with the
    record decoded (JSON parsed, or its escapes decoded) and redacted, never the bytes as sent."""
    counts: Counter = Counter()
    text = decode_bytes(raw)
    try:
        record: Any = redactor.redact_loose(json.loads(text), counts)
    except ValueError:
        record = redactor.redact_raw(text, counts)
    safe_reasons = [redactor.redact_text(r, counts) for r in reasons]
    return json.dumps({"refused": safe_reasons, "record": record, "redactions": dict(sorted(counts.items()))},
                      ensure_ascii=False), counts
