"""Numbers as written, and what they measure: amounts of money, quantities with their units, ranges,
calendar dates and ordinals, in English and Japanese.

Numbers are read with regular expressions on ``normalize(text)`` (before any segmentation: the
segmenter cuts "1,200" into single digits), and every position is in that normalized text. Spelled
numbers ("twelve", "twenty-two") and Japanese numerals ("二千五百") are read as well as digits.

Ranges live here too: "5-7 business days", "five to seven days", 「5〜7営業日」 (``range_low``),
"November 14-30", 「11月14日〜30日」 (``find_dates``) and the join between two dates
(``joins_dates``). What an amount *is* (a price, a threshold like "3,000円以上", a fee) is a claim,
read in ``claims.money``.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right
from dataclasses import dataclass
from functools import lru_cache

from fmquality.language.text import has_japanese, normalize, script_of

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
    "year": "year", "years": "year", "年間": "year", "年後": "year", "年以内": "year",  # not 年 alone: 2025年 is a date
    "hour": "hour", "hours": "hour", "hrs": "hour", "時間": "hour",
    "%": "percent", "percent": "percent", "per cent": "percent", "パーセント": "percent",
    "item": "item", "items": "item", "volume": "item", "volumes": "item", "巻": "item", "点": "item",
    "冊": "item", "books": "item",
}
_UNIT_RE = "|".join(sorted((re.escape(u) for u in _UNIT_ALIASES), key=len, reverse=True))
# The words of units and currencies ("days", "percent", "dollars"): part of a number, not content.
UNIT_WORDS = frozenset(u for u in _UNIT_ALIASES if u.isalpha() and u.isascii()) | {"usd", "jpy", "yen", "dollar", "dollars",
                                                                                  "bucks", "buck", "per", "cent"}
# A unit word ends where a word does ("5 days", not "5 dayspring"); a % sign may touch what follows ("30%OFF").
_QUANTITY_RE = re.compile(rf"{NUMBER}(?:(?:\s?-\s?|\s)?(?P<unit>{_UNIT_RE})(?:(?<=%)|(?![a-z])))?", re.IGNORECASE)
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
    for match in re.finditer(r"\b(a|an)\s+(?P<unit>day|week|month|year|hour)\b", norm):
        out.append(Quantity(1.0, match.group("unit"), match.group(0), match.start()))
    for match in _FRACTIONS.finditer(norm):
        out.append(Quantity(_FRACTION_PERCENT[match.group(1) or match.group(0)], "percent", match.group(0), match.start()))
    return tuple(sorted(out, key=lambda q: q.start))


# --------------------------------------------------------------------------------------------------
# Ranges: "5-7 business days", "five to seven days", 「5〜7営業日」, 「3月28日から30日」
# --------------------------------------------------------------------------------------------------

# The low end of a range, just before the number that carries the range's unit.
_RANGE_LOW = re.compile(r"(?P<low>\d+(?:\.\d+)?|[a-z]+)\s*(?:-|–|—|〜|~|～|to|から)\s*$")
# What may stand between a date and the end of its range ("3月28日から30日", "May 1 through 3").
_DATE_RANGE_JOIN = re.compile(r"^\s*(?:[(（][^)）]{1,4}[)）])?\s*(?:から|〜|~|～|-|–|to|through|and)\s*$")


def range_low(norm: str, start: int, value: float, reach: int) -> float | None:
    """The low end of the range whose high end is the number ``value`` at ``start`` in ``norm``, read
    in the ``reach`` characters before it ("5-7 days": 5 for the 7); None when it is no range."""
    match = _RANGE_LOW.search(norm[max(0, start - reach):start])
    low = number_value(match.group("low")) if match else None
    return low if low is not None and low < value else None


def joins_dates(between: str) -> bool:
    """Whether ``between`` (the text from a date to a day number) makes that number the end of a range
    of dates ("3月28日から30日"), not a count of days."""
    return _DATE_RANGE_JOIN.match(between) is not None


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
# Calendar dates (positions are in normalize(text))
# --------------------------------------------------------------------------------------------------

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
    re.compile(r"(?<![\d/.])(?P<m>\d{1,2})/(?P<d>\d{1,2})(?![\d/])"),  # not a rating: "4.8/5"
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

# --------------------------------------------------------------------------------------------------
# The currency of a text
# --------------------------------------------------------------------------------------------------


def text_currency(text: str, locale_japanese: bool = False) -> str:
    """The currency a text deals in: the one its prices use, else JPY for Japanese text."""
    currencies = {p.currency for p in extract_prices(text)}
    if len(currencies) == 1:
        return currencies.pop()
    return "JPY" if script_of(text) == "japanese" or (locale_japanese and not text.strip()) else "USD"
