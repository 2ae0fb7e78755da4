"""Personal data redaction, applied before a turn is stored (in the chatbot-side CaptureClient, and
again in the Firehose transformation Lambda, so a careless producer cannot store PII).

What is replaced, in this order (earlier kinds win where two overlap):
- order ids -> ``ord_<16 hex>``, an HMAC-SHA256 of the id under a secret key (the same id always
  gives the same token within a key, so "where is my order" turns stay comparable; without the key
  the id cannot be recovered or guessed by hashing candidates);
- e-mail addresses -> ``[EMAIL]``;
- card numbers: 13-19 digits, spaces or dashes between groups, that pass the Luhn check -> ``[CARD]``
  (a 13-digit ISBN or a product code that fails Luhn is left alone);
- postal addresses: Japanese (〒 postal codes; 都道府県 / 市区町村 / 丁目 / 番地 / 号 or 1-2-3
  blocks) and US (a street number, street name and suffix, and/or "City, ST 12345") -> ``[ADDRESS]``
  (a lone 〒 code -> ``[POSTAL_CODE]``);
- phone numbers: international (+81 ..., +1 ...), US ((555) 123-4567, 555-123-4567, 555.123.4567),
  Japanese (03-1234-5678, 090-1234-5678, 0120-123-456, 09012345678) -> ``[PHONE]``.

Full-width digits and signs (０９０－１２３４－５６７８, ＠) are matched through a same-length
normalized copy of the text, so the spans replaced are exactly those of the original. Numeric
patterns use ASCII-only boundaries: in Japanese text the characters around a number are word
characters, so ``\\b`` would never match there. A second pass over redacted text changes nothing
(the tokens match no pattern), so the transformation Lambda is idempotent over a redacting client.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
from collections import Counter
from collections.abc import Mapping
from typing import Any

ORDER_TOKEN_PREFIX = "ord_"
ORDER_KEY_ENV = "FMQ_ORDER_HASH_KEY"
ORDER_KEY_SECRET_ENV = "ORDER_HASH_SECRET_ID"

# Full-width digits, letters and signs -> ASCII, one character for one (same length).
_FULLWIDTH = {code: code - 0xFEE0 for code in range(0xFF01, 0xFF5F)}
_FULLWIDTH.update({0x2212: ord("-"), 0x2010: ord("-"), 0x2011: ord("-"), 0x2012: ord("-"), 0x2013: ord("-"),
                   0x2014: ord("-"), 0x3000: ord(" ")})

_NB = r"(?<![0-9A-Za-z_])"  # ASCII-only left boundary
_NA = r"(?![0-9A-Za-z_])"  # ASCII-only right boundary

ORDER_ID_PATTERNS: tuple[str, ...] = (
    # MangaAssist order ids: MA + 7 upper-case letters/digits, at least one digit (MAQ7K29XB).
    rf"{_NB}MA(?=[A-Z]*[0-9])[A-Z0-9]{{7}}{_NA}",
    # Marketplace-style 3-7-7 digit ids (123-4567890-1234567).
    rf"{_NB}\d{{3}}-\d{{7}}-\d{{7}}{_NA}",
)
_EMAIL = re.compile(r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}(?![A-Za-z0-9-])")
_CARD = re.compile(rf"{_NB}\d(?:[ -]?\d){{12,18}}{_NA}")
_JP_POSTAL = re.compile(r"(?:〒|郵便番号[:：]?)\s?\d{3}-?\d{4}" + _NA)
_PREF = r"(?:東京都|北海道|大阪府|京都府|[一-龯]{2,3}県)"
_KANJI_KANA = r"[一-龯ぁ-んァ-ヶー々ヶ]"
_BLOCK = r"(?:\d+(?:丁目|番地|番|号)|[-]\d+)"
_MUNICIPALITY = r"[一-龯ァ-ヶー々]"  # no hiragana: a particle (は, に) never starts an address
_JP_ADDRESS = re.compile(
    rf"(?:{_PREF}\s?)?{_MUNICIPALITY}{{1,12}}?[市区町村郡]{_KANJI_KANA}{{0,12}}?\d+(?:丁目|番地|番|号|-\d+){_BLOCK}*"
    rf"(?:\s?{_KANJI_KANA}{{0,12}}\d+号室)?"
)
_JP_PREF_ADDRESS = re.compile(rf"{_PREF}{_KANJI_KANA}{{1,20}}?\d+(?:丁目|番地|-\d+){_BLOCK}*")
_STREET_SUFFIX = (r"(?:Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Lane|Ln|Drive|Dr|Court|Ct|Way|Place|Pl|"
                  r"Terrace|Ter|Parkway|Pkwy|Highway|Hwy|Circle|Cir)")
_US_STREET = re.compile(
    rf"{_NB}\d{{1,6}}\s+(?:[NSEW]\.?\s+)?(?:[A-Z][A-Za-z'-]*\s+){{1,4}}{_STREET_SUFFIX}\.?"
    r"(?:,?\s+(?:Apt|Apartment|Suite|Ste|Unit|#)\.?\s*#?[A-Za-z0-9-]+)?"
    r"(?:,\s*(?:[A-Z][A-Za-z.]*\s?){1,3},?\s*[A-Z]{2}\s+\d{5}(?:-\d{4})?" + _NA + ")?"
)
_US_CITY_ZIP = re.compile(r"(?:[A-Z][A-Za-z.]*\s?){1,3},\s*[A-Z]{2}\s+\d{5}(?:-\d{4})?" + _NA)
_PHONES = (
    re.compile(rf"(?<![0-9A-Za-z_+])\+\d{{1,3}}(?:[ .-]?\(?\d{{1,4}}\)?){{2,4}}[ .-]?\d{{2,4}}{_NA}"),  # international
    re.compile(rf"(?<![0-9A-Za-z_(-])\(\d{{3}}\)\s?\d{{3}}[ .-]\d{{4}}{_NA}"),  # (555) 123-4567
    re.compile(rf"(?<![0-9A-Za-z_-])(?:1[ .-])?\d{{3}}[ .-]\d{{3}}[ .-]\d{{4}}{_NA}"),  # US
    re.compile(rf"{_NB}0\d{{1,4}}-\d{{1,4}}-\d{{3,4}}{_NA}"),  # Japanese with dashes
    re.compile(rf"{_NB}0[5789]0\d{{8}}{_NA}"),  # Japanese mobile, no separators
    re.compile(rf"{_NB}0\d{{9}}{_NA}"),  # Japanese landline, no separators
)

KINDS = ("order_id", "email", "card", "address", "postal_code", "phone")


class RedactionKeyMissing(RuntimeError):
    """No order-id hashing key: refusing to store order ids in a recoverable form."""


def luhn_valid(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2 == 1:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def normalize_width(text: str) -> str:
    """Full-width digits/letters/signs to ASCII, one character for one (indices are preserved)."""
    return text.translate(_FULLWIDTH)


class Redactor:
    """Replaces personal data in text and in captured turns. ``order_key`` is the HMAC key of the
    order-id tokens (bytes or str); ``order_id_patterns`` overrides the order id formats."""

    def __init__(self, order_key: bytes | str, order_id_patterns: tuple[str, ...] = ORDER_ID_PATTERNS) -> None:
        if not order_key:
            raise RedactionKeyMissing("an order-id hashing key is required")
        self._key = order_key.encode("utf-8") if isinstance(order_key, str) else bytes(order_key)
        self._order_ids = [re.compile(p) for p in order_id_patterns]

    def order_token(self, order_id: str) -> str:
        digest = hmac.new(self._key, normalize_width(order_id).strip().encode("utf-8"), hashlib.sha256).hexdigest()
        return f"{ORDER_TOKEN_PREFIX}{digest[:16]}"

    def redact_text(self, text: str, counts: Counter | None = None) -> str:
        """``text`` with every personal-data span replaced; ``counts`` (if given) gets +1 per span and kind."""
        if not text:
            return text
        norm = normalize_width(text)
        spans: list[tuple[int, int, str, str]] = []  # start, end, kind, replacement

        def claim(match: re.Match, kind: str, replacement: str) -> None:
            start, end = match.span()
            if any(start < e and s < end for s, e, _, _ in spans):
                return
            spans.append((start, end, kind, replacement))

        for pattern in self._order_ids:
            for m in pattern.finditer(norm):
                claim(m, "order_id", self.order_token(m.group()))
        for m in _EMAIL.finditer(norm):
            claim(m, "email", "[EMAIL]")
        for m in _CARD.finditer(norm):
            digits = re.sub(r"\D", "", m.group())
            if 13 <= len(digits) <= 19 and luhn_valid(digits):
                claim(m, "card", "[CARD]")
        for m in _JP_POSTAL.finditer(norm):
            claim(m, "postal_code", "[POSTAL_CODE]")
        for pattern in (_JP_PREF_ADDRESS, _JP_ADDRESS, _US_STREET, _US_CITY_ZIP):
            for m in pattern.finditer(norm):
                claim(m, "address", "[ADDRESS]")
        for pattern in _PHONES:
            for m in pattern.finditer(norm):
                claim(m, "phone", "[PHONE]")
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

    def redact_value(self, value: Any, counts: Counter | None = None) -> Any:
        """Every string inside nested dicts/lists redacted (keys kept)."""
        if isinstance(value, str):
            return self.redact_text(value, counts)
        if isinstance(value, Mapping):
            return {k: self.redact_value(v, counts) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.redact_value(v, counts) for v in value]
        return value

    def redact_turn(self, turn: Mapping[str, Any]) -> tuple[dict[str, Any], Counter]:
        """A captured turn (a dict in the TurnRecord shape) with its free text redacted: query,
        history, response, page context (an order id field there becomes its token whatever its
        format) and retrieved chunks. Identifiers, timestamps, versions and the catalog (public
        product data) are kept as they are. Returns the new dict and the counts per kind."""
        counts: Counter = Counter()
        out = dict(turn)
        for name in ("query", "response"):
            if isinstance(out.get(name), str):
                out[name] = self.redact_text(out[name], counts)
        if isinstance(out.get("conversation_history"), list):
            out["conversation_history"] = [
                {**m, "content": self.redact_text(m.get("content", ""), counts)} if isinstance(m, Mapping) else m
                for m in out["conversation_history"]
            ]
        if isinstance(out.get("page_context"), Mapping):
            page = dict(out["page_context"])
            order = page.get("order")
            if isinstance(order, Mapping) and isinstance(order.get("order_id"), str):
                oid = order["order_id"]
                if not oid.startswith(ORDER_TOKEN_PREFIX):
                    counts["order_id"] += 1
                    page["order"] = {**order, "order_id": self.order_token(oid)}
            out["page_context"] = self.redact_value(page, counts)
        if isinstance(out.get("retrieved_chunks"), list):
            out["retrieved_chunks"] = self.redact_value(out["retrieved_chunks"], counts)
        return out, counts


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
