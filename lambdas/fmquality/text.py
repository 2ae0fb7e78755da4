"""Text evidence shared by the dimension checks: tokens (English and Japanese), prices, numbers.

Japanese is segmented with TinySegmenter (a real, pure-Python word segmenter), never split on
spaces. Numbers are read with regular expressions before segmentation, because the segmenter cuts
"1,200" into single digits.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

import tinysegmenter

_CJK = r"\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uff66-\uff9f"
_CJK_RE = re.compile(f"[{_CJK}]")
_CJK_RUN_RE = re.compile(f"[{_CJK}ー々〆〤]+")
_LATIN_WORD_RE = re.compile(r"[a-z0-9]+(?:['’][a-z]+)?")
_SEGMENTER = tinysegmenter.TinySegmenter()

ENGLISH_STOPWORDS = frozenset(
    """a an the and or but if of to in on at by for with from about as is are was were be been being
    it its this that these those i you he she we they me my your our their his her them us do does
    did have has had can could will would should may might must shall not no yes so than then there
    here what which who whom whose when where why how all any both each few more most other some such
    only own same too very just also into over under again once up down out off s t don now please
    get got let lets one ones""".split()
)
JAPANESE_STOPWORDS = frozenset(
    "の は が を に で と も へ や か な だ です ます でした ました する し て た い ね よ こと もの これ それ あれ この その あの "
    "ある あり いる ない から まで より など ので けど けれど ください お ご さん 。 、 ！ ？".split()
)


def normalize(text: str) -> str:
    """NFKC (full-width to half-width), lower case, unified apostrophes."""
    return unicodedata.normalize("NFKC", text).lower().replace("’", "'")


def has_japanese(text: str) -> bool:
    return bool(_CJK_RE.search(text or ""))


def japanese_share(text: str) -> float:
    """Share of letters that are Japanese script (0 for pure English, near 1 for pure Japanese)."""
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return 0.0
    return sum(1 for c in letters if _CJK_RE.match(c)) / len(letters)


@lru_cache(maxsize=4096)
def _segment(run: str) -> tuple[str, ...]:
    return tuple(t for t in _SEGMENTER.tokenize(run) if t.strip())


def tokenize(text: str) -> list[str]:
    """Word tokens of mixed English/Japanese text, in order, normalised."""
    norm = normalize(text or "")
    tokens: list[str] = []
    pos = 0
    for match in _CJK_RUN_RE.finditer(norm):
        tokens.extend(_LATIN_WORD_RE.findall(norm[pos:match.start()]))
        tokens.extend(_segment(match.group()))
        pos = match.end()
    tokens.extend(_LATIN_WORD_RE.findall(norm[pos:]))
    return tokens


def _stem(token: str) -> str:
    # A light suffix strip so "recommendations"/"recommended" meet "recommend"; enough for overlap.
    for suffix in ("ations", "ation", "ings", "ing", "ies", "ed", "es", "s"):
        if len(token) > len(suffix) + 3 and token.endswith(suffix):
            return token[: -len(suffix)]
    return token


def content_tokens(text: str) -> set[str]:
    """Tokens that carry meaning: stopwords dropped, English lightly stemmed."""
    out: set[str] = set()
    for token in tokenize(text):
        if token in ENGLISH_STOPWORDS or token in JAPANESE_STOPWORDS:
            continue
        if has_japanese(token):
            out.add(token)
        elif len(token) > 1 or token.isdigit():
            out.add(_stem(token))
    return out


def coverage(needle: str, haystack: str) -> float:
    """Share of the needle's content tokens found in the haystack (0..1; 1 when needle is empty)."""
    wanted = content_tokens(needle)
    if not wanted:
        return 1.0
    return len(wanted & content_tokens(haystack)) / len(wanted)


def word_count(text: str) -> int:
    """Words for length rules: English words, and Japanese characters counted two per word."""
    norm = normalize(text or "")
    cjk_chars = len(_CJK_RE.findall(norm))
    latin_words = len(_LATIN_WORD_RE.findall(_CJK_RUN_RE.sub(" ", norm)))
    return latin_words + (cjk_chars + 1) // 2


def sentences(text: str) -> list[str]:
    parts = re.split(r"(?<=[.!?。！？])\s*|\n+", text or "")
    return [p.strip() for p in parts if p and p.strip()]


# --------------------------------------------------------------------------------------------------
# Numbers and prices
# --------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Price:
    amount: float
    currency: str  # "USD" or "JPY"
    text: str
    start: int


_NUM = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
_PRICE_PATTERNS = (
    (re.compile(rf"(?:US)?\$\s?({_NUM})"), "USD"),
    (re.compile(rf"({_NUM})\s?(?:USD|dollars?)\b", re.IGNORECASE), "USD"),
    (re.compile(rf"[¥￥]\s?({_NUM})"), "JPY"),
    (re.compile(rf"({_NUM})\s?(?:円|JPY\b|yen\b)", re.IGNORECASE), "JPY"),
)


def _to_float(number: str) -> float:
    return float(number.replace(",", ""))


def extract_prices(text: str) -> list[Price]:
    """Every price in the text: "$12.99", "12.99 USD", "¥1,200", "1,200円", "1200 yen"."""
    text = unicodedata.normalize("NFKC", text or "")
    found: dict[int, Price] = {}
    for pattern, currency in _PRICE_PATTERNS:
        for match in pattern.finditer(text):
            start = match.start(1)
            if start not in found:
                found[start] = Price(_to_float(match.group(1)), currency, match.group(0).strip(), match.start())
    return sorted(found.values(), key=lambda p: p.start)


def same_price(a: float, b: float, currency: str) -> bool:
    return abs(a - b) < (0.5 if currency == "JPY" else 0.005)


@dataclass(frozen=True)
class Quantity:
    value: float
    unit: str  # "day", "week", "month", "hour", "percent", "usd", "jpy", "item", "" (bare number)
    text: str


_UNIT_ALIASES = {
    "day": "day", "days": "day", "business day": "day", "business days": "day", "日": "day", "日間": "day",
    "営業日": "day",
    "week": "week", "weeks": "week", "週間": "week", "週": "week",
    "month": "month", "months": "month", "ヶ月": "month", "か月": "month", "カ月": "month",
    "hour": "hour", "hours": "hour", "時間": "hour",
    "%": "percent", "percent": "percent", "パーセント": "percent", "％": "percent",
    "item": "item", "items": "item", "volume": "item", "volumes": "item", "巻": "item", "点": "item",
}
_WORD_NUMBERS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
    "ten": 10, "eleven": 11, "twelve": 12, "fourteen": 14, "fifteen": 15, "twenty": 20, "thirty": 30,
    "forty-five": 45, "sixty": 60, "ninety": 90,
}
_UNIT_RE = "|".join(sorted((re.escape(u) for u in _UNIT_ALIASES), key=len, reverse=True))
_QUANTITY_RE = re.compile(rf"({_NUM}|{'|'.join(_WORD_NUMBERS)})[\s-]?({_UNIT_RE})?", re.IGNORECASE)


def extract_quantities(text: str) -> list[Quantity]:
    """Numbers with their units, including prices (as usd/jpy) and spelled-out numbers."""
    norm = unicodedata.normalize("NFKC", text or "")
    out: list[Quantity] = []
    price_spans: list[tuple[int, int]] = []
    for price in extract_prices(norm):
        out.append(Quantity(price.amount, price.currency.lower(), price.text))
        price_spans.append((price.start, price.start + len(price.text) + 1))
    for match in _QUANTITY_RE.finditer(norm):
        if any(s <= match.start() < e for s, e in price_spans):
            continue
        raw = match.group(1).lower()
        # Skip digits glued to letters (ASINs, order ids, "B0ABC123") and years/ids in long digit strings.
        before = norm[match.start() - 1] if match.start() > 0 else " "
        if before.isalnum() and not has_japanese(before) and raw[0].isdigit():
            continue
        value = float(_WORD_NUMBERS[raw]) if raw in _WORD_NUMBERS else _to_float(raw)
        unit = _UNIT_ALIASES.get((match.group(2) or "").lower(), "")
        out.append(Quantity(value, unit, match.group(0).strip()))
    return out


def numbers_in(text: str) -> set[float]:
    return {q.value for q in extract_quantities(text)}


# --------------------------------------------------------------------------------------------------
# Ordinals
# --------------------------------------------------------------------------------------------------

ORDINALS = {
    "first": 1, "1st": 1, "second": 2, "2nd": 2, "third": 3, "3rd": 3, "fourth": 4, "4th": 4,
    "fifth": 5, "5th": 5, "last": -1,
    "1つ目": 1, "一つ目": 1, "2つ目": 2, "二つ目": 2, "3つ目": 3, "三つ目": 3, "4つ目": 4, "5つ目": 5,
    "1番目": 1, "2番目": 2, "3番目": 3, "4番目": 4, "最初": 1, "最後": -1,
}
_ORDINAL_RE = re.compile(
    r"\b(first|1st|second|2nd|third|3rd|fourth|4th|fifth|5th|last)\s+(?:one|item|book|title|series|manga|volume|pick)\b"
    r"|(1つ目|一つ目|2つ目|二つ目|3つ目|三つ目|4つ目|5つ目|1番目|2番目|3番目|4番目|最初|最後)",
    re.IGNORECASE,
)


def find_ordinal(text: str) -> int | None:
    """The ordinal a user refers to ("the second one" -> 2, "最後の" -> -1), if any."""
    match = _ORDINAL_RE.search(unicodedata.normalize("NFKC", text or ""))
    if not match:
        return None
    word = (match.group(1) or match.group(2)).lower()
    return ORDINALS.get(word)


# --------------------------------------------------------------------------------------------------
# Romanization
# --------------------------------------------------------------------------------------------------

@lru_cache(maxsize=1)
def _kakasi():
    import pykakasi  # imported lazily: building its dictionaries costs ~0.4 s

    return pykakasi.kakasi()


def romanize(text: str) -> str:
    """Hepburn romanization of Japanese text (a fallback; catalog `title_romaji` is authoritative)."""
    return " ".join(part["hepburn"] for part in _kakasi().convert(text) if part["hepburn"].strip())


def loose_key(text: str) -> str:
    """Letters and digits only, lower case: for comparing titles and romanizations."""
    return re.sub(r"[^0-9a-z\u3040-\u30ff\u4e00-\u9fff]", "", normalize(text))


# --------------------------------------------------------------------------------------------------
# Stock status vocabulary (shared by availability_accuracy and product-card formatting)
# --------------------------------------------------------------------------------------------------

AVAILABILITY_PHRASES: dict[str, tuple[str, ...]] = {
    "in_stock": ("in stock", "available now", "ships today", "ready to ship", "在庫あり", "在庫があります", "すぐに発送"),
    "out_of_stock": ("out of stock", "sold out", "currently unavailable", "not available", "在庫切れ", "品切れ", "在庫がありません"),
    "preorder": ("pre-order", "preorder", "available for pre-order", "予約受付中", "予約受付", "予約注文"),
    "limited": ("limited stock", "only a few left", "few left", "残りわずか", "在庫僅少"),
}


def availability_mentions(text: str) -> list[tuple[str, int]]:
    """Stock statuses stated in the text, as (status, position), longest phrase first at a position.
    "not in stock" is read as out_of_stock, never as in_stock."""
    norm = normalize(text or "")
    hits: list[tuple[str, int]] = []
    taken: list[tuple[int, int]] = []
    phrases = sorted(((p, s) for s, ps in AVAILABILITY_PHRASES.items() for p in ps), key=lambda x: -len(x[0]))
    for phrase, status in phrases:
        start = norm.find(phrase)
        while start != -1:
            end = start + len(phrase)
            if not any(s <= start < e or s < end <= e for s, e in taken):
                effective = status
                if status == "in_stock" and re.search(r"(not|n't|no longer)\s+$", norm[max(0, start - 12):start]):
                    effective = "out_of_stock"
                hits.append((effective, start))
                taken.append((start, end))
            start = norm.find(phrase, end)
    return sorted(hits, key=lambda h: h[1])
