"""Text evidence shared by the dimension checks: tokens (English and Japanese), prices, numbers.

Japanese is segmented with TinySegmenter (a real, pure-Python word segmenter), never split on
spaces. Numbers are read with regular expressions before segmentation, because the segmenter cuts
"1,200" into single digits.
"""

from __future__ import annotations

import re
from bisect import bisect_right
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


def word_count(text: str) -> int:
    """Words for length rules: English words, and Japanese characters counted two per word."""
    norm = normalize(text or "")
    cjk_chars = len(_CJK_RE.findall(norm))
    latin_words = len(_LATIN_WORD_RE.findall(_CJK_RUN_RE.sub(" ", norm)))
    return latin_words + (cjk_chars + 1) // 2


# --------------------------------------------------------------------------------------------------
# Numbers and prices
# --------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Price:
    amount: float
    currency: str  # "USD" or "JPY"
    text: str
    start: int  # in normalize(text)
    approx: bool = False  # "about $15", "just under fifteen dollars", "千円ほど"

    @property
    def end(self) -> int:
        return self.start + len(self.text)


# Numbers as written: digits ("1,200", "12.99"), English words ("twelve", "twenty-two", "a hundred")
# and Japanese numerals ("千", "二千五百"). Spelled forms are read only as whole words.
# Tokenized text (as NLP corpora ship it) spaces separators out: "235 , 000", "98 . 7".
_DIGITS = r"\d{1,3}(?:(?:,| , )\d{3})+(?:(?:\.| \. )\d+)?|\d+(?:(?:\.| \. )\d+)?"
_ONES = {"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
         "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
         "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19}
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80,
         "ninety": 90}
_SCALES = {"hundred": 100, "thousand": 1000}
_WORD = "|".join(sorted([*_ONES, *_TENS, *_SCALES], key=len, reverse=True))
_WORDS = rf"(?:(?:a|an|one)\s+)?(?:{_WORD})(?:[\s-]+(?:and\s+)?(?:{_WORD}))*"
_KANJI_DIGITS = {"〇": 0, "零": 0, "一": 1, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_KANJI_UNITS = {"十": 10, "百": 100, "千": 1000}
_KANJI = "[〇零一二三四五六七八九十百千万]+"
NUMBER = rf"(?P<num>{_DIGITS}|\b{_WORDS}\b|{_KANJI})"


def _to_float(number: str) -> float:
    return float(number.replace(",", "").replace(" ", ""))


def _words_value(words: str) -> float | None:
    total, current = 0, 0
    tokens = re.findall(r"[a-z]+", words.lower())
    for index, word in enumerate(tokens):
        if word in ("a", "an", "and"):
            # "a hundred" is 100; the "a" of "a two-week trip" is an article.
            if word != "and" and index + 1 < len(tokens) and tokens[index + 1] in _SCALES:
                current = current or 1
            continue
        if word in _ONES:
            current += _ONES[word]
        elif word in _TENS:
            current += _TENS[word]
        elif word == "hundred":
            current = max(current, 1) * 100
        elif word == "thousand":
            total += max(current, 1) * 1000
            current = 0
        else:
            return None
    return float(total + current)


def _kanji_value(numeral: str) -> float | None:
    total, section, digit = 0, 0, None
    for char in numeral:
        if char in _KANJI_DIGITS:
            digit = _KANJI_DIGITS[char] if digit is None else digit * 10 + _KANJI_DIGITS[char]
        elif char in _KANJI_UNITS:
            section += (digit if digit is not None else 1) * _KANJI_UNITS[char]
            digit = None
        elif char == "万":
            total += (section + (digit or 0)) * 10000
            section, digit = 0, None
    return float(total + section + (digit or 0))


def number_value(raw: str) -> float | None:
    """The value of a number as written: digits, English words or Japanese numerals."""
    raw = raw.strip()
    if re.fullmatch(_DIGITS, raw):
        return _to_float(raw)
    if re.fullmatch(_KANJI, raw):
        return _kanji_value(raw)
    return _words_value(raw)


# Hedges that make an amount approximate, before or after it.
_APPROX_BEFORE = re.compile(r"(about|around|roughly|approximately|approx\.?|nearly|almost|just under|just over|"
                            r"a little (?:under|over)|a bit (?:under|over)|約|およそ|大体|だいたい)\s*$")
_APPROX_AFTER = re.compile(r"^\s*(?:or so|ish|ほど|くらい|ぐらい|程度|前後|ちょっと|ちょい|弱|強|あまり)")

_CURRENCY_AFTER = {"usd": "USD", "dollar": "USD", "dollars": "USD", "buck": "USD", "bucks": "USD",
                   "円": "JPY", "jpy": "JPY", "yen": "JPY"}
_PRICE_RE = re.compile(
    rf"(?P<sym>us\$|\$|[¥￥])\s?(?P<n1>{_DIGITS})"
    rf"|{NUMBER}\s?(?P<unit>usd\b|dollars?\b|bucks?\b|円|jpy\b|yen\b)",
    re.IGNORECASE,
)


def extract_prices(text: str) -> list[Price]:
    """Every money amount in the text, with its position in ``normalize(text)``: "$12.99",
    "12.99 USD", "US$12", "twelve dollars", "12 bucks", "¥1,200", "1,200円", "千円", "1200 yen"."""
    norm = normalize(text or "")
    out: list[Price] = []
    for match in _PRICE_RE.finditer(norm):
        if match.group("sym"):
            amount = _to_float(match.group("n1"))
            currency = "JPY" if match.group("sym") in "¥￥" else "USD"
        else:
            value = number_value(match.group("num"))
            if value is None:
                continue
            amount, currency = value, _CURRENCY_AFTER[match.group("unit").lower()]
        start, end = match.start(), match.end()
        approx = bool(_APPROX_BEFORE.search(norm[max(0, start - 24):start]) or _APPROX_AFTER.match(norm[end:end + 6]))
        out.append(Price(amount, currency, norm[start:end], start, approx))
    return out


def same_price(a: float, b: float, currency: str, approx: bool = False) -> bool:
    """Exact to the smallest coin; a hedged amount ("about $15") within 10% or one unit of change."""
    if approx:
        return abs(a - b) <= max(0.1 * b, 1.0 if currency == "USD" else 100.0)
    return abs(a - b) < (0.5 if currency == "JPY" else 0.005)


@dataclass(frozen=True)
class Quantity:
    value: float
    unit: str  # "day", "week", "month", "year", "hour", "percent", "usd", "jpy", "item", "" (bare number)
    text: str
    start: int = 0  # in normalize(text)
    approx: bool = False

    @property
    def end(self) -> int:
        return self.start + len(self.text)

    def in_days(self) -> float | None:
        """A duration in days (a business day counts as a day), or None when it is not a duration."""
        factor = {"hour": 1 / 24, "day": 1, "week": 7, "month": 30, "year": 365}.get(self.unit)
        return None if factor is None else self.value * factor


_UNIT_ALIASES = {
    "day": "day", "days": "day", "business day": "day", "business days": "day", "working days": "day",
    "日": "day", "日間": "day", "営業日": "day",
    "week": "week", "weeks": "week", "週間": "week", "週": "week",
    "month": "month", "months": "month", "ヶ月": "month", "か月": "month", "カ月": "month", "ヵ月": "month",
    "year": "year", "years": "year", "年間": "year",
    "hour": "hour", "hours": "hour", "hrs": "hour", "時間": "hour",
    "%": "percent", "percent": "percent", "per cent": "percent", "パーセント": "percent",
    "item": "item", "items": "item", "volume": "item", "volumes": "item", "巻": "item", "点": "item",
    "冊": "item", "books": "item",
}
_UNIT_RE = "|".join(sorted((re.escape(u) for u in _UNIT_ALIASES), key=len, reverse=True))
# The words of units and currencies ("days", "percent", "dollars"): part of a number, not content.
UNIT_WORDS = frozenset(u for u in _UNIT_ALIASES if u.isalpha() and u.isascii()) | {"usd", "jpy", "yen", "dollar", "dollars",
                                                                                  "bucks", "buck", "per", "cent"}
_QUANTITY_RE = re.compile(rf"{NUMBER}(?:(?:\s?-\s?|\s)?(?P<unit>{_UNIT_RE})(?![a-z]))?", re.IGNORECASE)
# Fractions said in words: "half off", "a quarter off", "半額" (half price).
_FRACTIONS = re.compile(r"\b(half|a quarter|a third)\b(?=\s+(?:off|price|discount))|半額")
_FRACTION_PERCENT = {"half": 50.0, "a quarter": 25.0, "a third": 100 / 3, "半額": 50.0}


def extract_quantities(text: str) -> list[Quantity]:
    """Numbers with their units (see ``_quantities``)."""
    return list(_quantities(text or ""))


@lru_cache(maxsize=32768)
def _quantities(text: str) -> tuple[Quantity, ...]:
    """Numbers with their units and positions in ``normalize(text)``, including money (as usd/jpy),
    spelled numbers ("fifteen days", "a month", "two weeks"), Japanese numerals ("十五日") and
    fractions of a price ("half off" = 50 percent). Digits glued to letters (ASINs, order ids) are
    not numbers."""
    norm = normalize(text or "")
    out: list[Quantity] = []
    taken: list[tuple[int, int]] = []
    for price in extract_prices(norm):
        out.append(Quantity(price.amount, price.currency.lower(), price.text, price.start, price.approx))
        taken.append((price.start, price.end))
    for match in _QUANTITY_RE.finditer(norm):
        start, end = match.start(), match.end()
        # Prices come in order and never overlap: the one that could hold ``start`` is found by bisection.
        before_index = bisect_right(taken, (start, float("inf"))) - 1
        if before_index >= 0 and start < taken[before_index][1]:
            continue
        raw = match.group("num")
        unit = _UNIT_ALIASES.get((match.group("unit") or "").lower(), "")
        before = norm[start - 1] if start > 0 else " "
        if raw[0].isdigit() and before.isalnum() and not has_japanese(before):
            continue  # "B0ABC123", "ord-88812"
        if not raw[0].isdigit() and not unit:
            continue  # a spelled number without a unit is usually a word ("one of my favourites")
        if raw.lower() in ("a", "an"):
            continue
        value = number_value(raw)
        if value is None:
            continue
        approx = bool(_APPROX_BEFORE.search(norm[max(0, start - 24):start]) or _APPROX_AFTER.match(norm[end:end + 6]))
        out.append(Quantity(value, unit, norm[start:end].strip(), start, approx))
    for match in re.finditer(rf"\b(a|an)\s+(?P<unit>day|week|month|year|hour)\b", norm):
        out.append(Quantity(1.0, match.group("unit"), match.group(0), match.start()))
    for match in _FRACTIONS.finditer(norm):
        out.append(Quantity(_FRACTION_PERCENT[match.group(1) or match.group(0)], "percent", match.group(0), match.start()))
    return tuple(sorted(out, key=lambda q: q.start))


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


# The whole reference, for removing it from a text: "the second one", "2つ目について", "最後の".
ORDINAL_PHRASE = re.compile(
    r"\b(?:the\s+)?(?:first|1st|second|2nd|third|3rd|fourth|4th|fifth|5th|last)\s+"
    r"(?:one|item|book|title|series|manga|volume|pick)s?\b"
    r"|(?:[1-5１-５一二三四五]つ目|[1-4１-４]番目|最初|最後)(?:の(?:作品|商品|本|もの|やつ)?|について|は)?")


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

# Stock-status vocabulary of an online store, English and Japanese.
AVAILABILITY_PHRASES: dict[str, tuple[str, ...]] = {
    "in_stock": ("in stock", "available now", "available to order", "ships today", "ready to ship", "ships right away",
                 "back in stock", "在庫あり", "在庫がある", "在庫がござい", "在庫がありま", "在庫もありま", "すぐに発送",
                 "すぐにお届け", "即納"),
    "out_of_stock": ("out of stock", "sold out", "currently unavailable", "unavailable", "not available",
                     "not in stock", "no stock", "在庫切れ", "品切れ", "売り切れ", "完売", "在庫がありません",
                     "在庫がない", "在庫はありません", "在庫はない", "入荷待ち"),
    "preorder": ("pre-order", "preorder", "pre order", "available for pre-order", "not released yet",
                 "予約受付", "予約注文", "予約販売", "ご予約", "発売前"),
    "limited": ("limited stock", "only a few left", "few left", "few copies left", "low stock", "almost sold out",
                "selling fast", "残りわずか", "残り僅か", "在庫僅少", "残り少な", "在庫わずか"),
}
_AVAILABILITY_LONGEST_FIRST = sorted(
    ((p, s) for s, ps in AVAILABILITY_PHRASES.items() for p in ps), key=lambda x: -len(x[0])
)
# "isn't sold out", "not in stock", "no longer available": a negation just before the phrase.
_NEGATED_BEFORE = re.compile(r"(\bnot|n't|\bno longer|\bnever)(\s+\w+){0,2}\s*$")
# "売り切れではありません", "品切れじゃない": a negated copula right after the phrase.
_NEGATED_AFTER = re.compile(r"^\s*(では|じゃ)(ありません|ない|ございません)")
_NEGATION_FLIP = {"in_stock": "out_of_stock", "out_of_stock": "in_stock", "limited": "out_of_stock"}


def availability_mentions(text: str) -> list[tuple[str, int]]:
    """Stock statuses stated in the text, as (status, position in ``normalize(text)``), longest
    phrase first at a position. A negated status is read as its opposite ("isn't sold out" is in
    stock, "not in stock" is out of stock); a negated pre-order says nothing."""
    norm = normalize(text or "")
    hits: list[tuple[str, int]] = []
    taken: list[tuple[int, int]] = []
    for phrase, status in _AVAILABILITY_LONGEST_FIRST:
        start = norm.find(phrase)
        while start != -1:
            end = start + len(phrase)
            if not any(s <= start < e or s < end <= e for s, e in taken):
                taken.append((start, end))
                negated = _NEGATED_BEFORE.search(norm[max(0, start - 20):start]) or _NEGATED_AFTER.match(norm[end:end + 8])
                effective = _NEGATION_FLIP.get(status) if negated and "not" not in phrase and "ません" not in phrase \
                    and "ない" not in phrase else status
                if effective:
                    hits.append((effective, start))
            start = norm.find(phrase, end)
    return sorted(hits, key=lambda h: h[1])


# --------------------------------------------------------------------------------------------------
# Sentences that survive prices and abbreviations, list lines, romaji comparison
# --------------------------------------------------------------------------------------------------

# English full stops end a sentence only before whitespace or the end, and not after an abbreviation
# ("Vol. 2", "No. 5") or inside a number ("$12.99"); Japanese 。！？ always end one.
_ABBREVIATIONS = frozenset({"vol", "vols", "no", "nos", "e.g", "i.e", "mr", "mrs", "ms", "dr", "st", "jr", "ch", "etc",
                            "approx", "ed", "eds", "pp", "vs"})
_LONGEST_ABBREVIATION = max(map(len, _ABBREVIATIONS))
_ABBREVIATION_BEFORE = re.compile(r"([A-Za-z.]+)$")
_SENTENCE_END_RE = re.compile(rf"[。！？]+|[.!?]+(?=\s|$|[{_CJK}])")


# No sentence of a chatbot answer or a knowledge chunk is this long (the longest in every labelled set
# is under 800 characters); a longer run without a sentence end is cut at a space or comma before it,
# so the work done per claim inside its sentence stays bounded and reading stays linear in the text.
MAX_SENTENCE_CHARS = 1_000
_SOFT_CUT = re.compile(r"[\s,、，]")


def _bounded(start: int, end: int, text: str) -> list[tuple[int, int]]:
    """(start, end) cut into pieces of at most MAX_SENTENCE_CHARS, each ending after a space or comma
    in its second half when there is one."""
    pieces = []
    while end - start > MAX_SENTENCE_CHARS:
        limit = start + MAX_SENTENCE_CHARS
        cut = max((m.end() for m in _SOFT_CUT.finditer(text, start + MAX_SENTENCE_CHARS // 2, limit)), default=limit)
        pieces.append((start, cut))
        start = cut
    pieces.append((start, end))
    return pieces


def split_sentences(text: str) -> list[str]:
    """Sentences and lines of mixed English/Japanese text, as written. Never cuts "$12.99",
    "Vol. 2" or a "1." list marker off its sentence."""
    out: list[str] = []
    for line in (text or "").splitlines():
        start = 0
        pieces: list[tuple[int, int]] = []
        for match in _SENTENCE_END_RE.finditer(line):
            if match.group().startswith("."):
                if match.start() - start <= 16 and line[start:match.start()].strip().isdigit():
                    continue  # "1. One Piece": a list marker, not a sentence
                word = _ABBREVIATION_BEFORE.search(line, max(start, match.start() - _LONGEST_ABBREVIATION - 2),
                                                   match.start())
                if word and word.group(1).lower().rstrip(".") in _ABBREVIATIONS:
                    continue
            pieces.append((start, match.end()))
            start = match.end()
        pieces.append((start, len(line)))
        for piece_start, piece_end in pieces:
            for a, b in _bounded(piece_start, piece_end, line):
                piece = line[a:b].strip()
                if piece:
                    out.append(piece)
    return out


_LIST_MARKER_RE = re.compile(r"^\s*(?:[-•*・●▪‣◦◆◇■□○▶►★☆→]|\d{1,2}[.)．）]|[①-⑳]|\(\d{1,2}\))\s*")


def is_list_line(line: str) -> bool:
    """A bulleted ("-", "•", "*", "・") or numbered ("1.", "1)", "①") line with content after the marker."""
    match = _LIST_MARKER_RE.match(line or "")
    return bool(match) and bool(line[match.end():].strip()) and not re.match(r"^\s*\d+\.\d", line)


def list_items(text: str) -> list[str]:
    """The list lines of a text, in order, without their markers."""
    return [_LIST_MARKER_RE.sub("", line, count=1).strip() for line in (text or "").splitlines() if is_list_line(line)]


def romaji_key(text: str) -> str:
    """A loose key for romanized Japanese: accents and macrons dropped, long vowels folded
    ("Shōnen", "Shounen" and "shonen" all give "shonen"), letters and digits only."""
    decomposed = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", text or ""))
    plain = "".join(c for c in decomposed if not unicodedata.combining(c)).lower()
    plain = re.sub(r"[^0-9a-z]", "", plain)
    for long_vowel, short in (("ou", "o"), ("oo", "o"), ("uu", "u"), ("aa", "a"), ("ii", "i")):
        plain = plain.replace(long_vowel, short)
    return plain


# --------------------------------------------------------------------------------------------------
# Spans: sentences/list lines, name mentions and calendar dates (positions are in normalize(text))
# --------------------------------------------------------------------------------------------------



_NOT_A_SENTENCE_START = tuple("()（）[]］」』/|,、.:：;!?")
_VISIBLE = re.compile(r"\S")
_WORD_BEFORE = re.compile(r"([a-z]+)$")


def _next_visible(norm: str, pos: int) -> str:
    """The first non-space character at or after ``pos`` ("" at the end), without copying the rest."""
    match = _VISIBLE.search(norm, pos)
    return match.group() if match else ""


def segment_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence or list line of ``normalize(text)``: the positional twin of
    ``split_sentences``. It does not cut "Vol. 1", "No. 5" or "12.99", so a product and its price
    stay in one segment."""
    norm = normalize(text or "")
    spans: list[tuple[int, int]] = []
    start = 0
    for i, char in enumerate(norm):
        cut = char in "\n。！？!?"
        if char in "!?" and _next_visible(norm, i + 1) in _NOT_A_SENTENCE_START:
            cut = False  # "よつばと!（Yotsuba to! / Yotsuba&!）": the mark belongs to a title
        if char == "." and (i + 1 == len(norm) or norm[i + 1].isspace()):
            # Only the few characters before the mark are read: cost stays linear in the text.
            word = _WORD_BEFORE.search(norm, max(start, i - _LONGEST_ABBREVIATION - 1), i)
            head = norm[start:i] if i - start <= 16 else ""
            list_marker = head.strip().isdigit()  # "1. Berserk ..." starts a list line
            cut = not (word and word.group(1) in _ABBREVIATIONS) and not _next_visible(norm, i + 1).isdigit() \
                and not list_marker
        if cut:
            spans.extend(p for p in _bounded(start, i + 1, norm) if norm[p[0]:p[1]].strip())
            start = i + 1
    spans.extend(p for p in _bounded(start, len(norm), norm) if norm[p[0]:p[1]].strip())
    return spans


def phrase_in(needle: str, haystack: str) -> bool:
    """Case-, width- and spacing-insensitive containment (for forbidden phrases, ids, titles)."""
    n, h = normalize(needle).strip(), normalize(haystack)
    if not n:
        return False
    if n in h:
        return True
    key = loose_key(needle)
    return len(key) >= 4 and key in loose_key(haystack)


_MONTHS = {m: i for i, m in enumerate(
    "january february march april may june july august september october november december".split(), 1)}
_MONTHS.update({m[:3]: i for m, i in list(_MONTHS.items())})
_MONTHS["sept"] = 9
_MONTH_RE = "|".join(sorted(_MONTHS, key=len, reverse=True))
_DATE_PATTERNS = (
    re.compile(r"(?P<y>\d{4})[-/.](?P<m>\d{1,2})[-/.](?P<d>\d{1,2})"),
    re.compile(r"(?:(?P<y>\d{4})\s*年\s*)?(?P<m>\d{1,2})\s*月\s*(?P<d>\d{1,2})\s*日"),
    re.compile(rf"\b(?P<mn>{_MONTH_RE})\.?\s+(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s+(?P<y>\d{{4}}))?"),
    re.compile(rf"\b(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<mn>{_MONTH_RE})\b\.?(?:,?\s+(?P<y>\d{{4}}))?"),
    re.compile(r"(?<![\d/])(?P<m>\d{1,2})/(?P<d>\d{1,2})(?![\d/])"),
)


_DAY_RANGE_END = re.compile(r"\s*(?:[(（][^)）]{1,4}[)）])?\s*(?:-|–|—|〜|~|～|to|through|thru|から)\s*(\d{1,2})(?:日|st|nd|rd|th)?(?![\d/月:]|\.\d|\s*(?:days?|日間|business|営業日))")


@dataclass(frozen=True)
class DateMention:
    year: int | None
    month: int
    day: int
    start: int
    end: int

    def same_day(self, other: "DateMention") -> bool:
        years_agree = self.year is None or other.year is None or self.year == other.year
        return years_agree and (self.month, self.day) == (other.month, other.day)


def find_dates(text: str) -> list[DateMention]:
    """Calendar dates in ``normalize(text)``: "2024-05-12", "May 12th", "12 May 2024", "5月12日", "5/12"."""
    norm = normalize(text or "")
    out: list[DateMention] = []
    taken: set[int] = set()  # positions inside a date already found (an earlier pattern wins)
    for pattern in _DATE_PATTERNS:
        for match in pattern.finditer(norm):
            if not taken.isdisjoint(range(match.start(), match.end())):
                continue
            groups = match.groupdict()
            month = _MONTHS[groups["mn"]] if groups.get("mn") else int(groups["m"])
            day = int(groups["d"])
            if 1 <= month <= 12 and 1 <= day <= 31:
                year = int(groups["y"]) if groups.get("y") else None
                out.append(DateMention(year, month, day, match.start(), match.end()))
                taken.update(range(match.start(), match.end()))
                # The end of a range of days in one month: "November 14-30", 「11月14日〜30日」.
                end = _DAY_RANGE_END.match(norm, match.end())
                if end and 1 <= int(end.group(1)) <= 31:
                    out.append(DateMention(year, month, int(end.group(1)), end.start(1), end.end()))
                    taken.update(range(end.start(1), end.end()))
    return sorted(out, key=lambda d: d.start)
