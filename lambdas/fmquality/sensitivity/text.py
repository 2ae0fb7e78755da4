"""What the operators read in an answer: its sentences, the money amounts, numbers with units, dates and
names it states, each with its position so an operator changes exactly that span.

Written for the operators alone (they build defects the scoring code is measured against, so they do
not share its reading of text): plain regular expressions over the formats a shop answer uses, English
and Japanese."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date

JA_CHARS = re.compile(r"[\u3040-\u30ff\u3400-\u9fff]")
_SENTENCE = re.compile(r"[^。！？!?\n]+(?:[。！？!?]+|(?<=[a-z0-9\)\*])\.(?=\s|$)|$)|[^\n]+", re.M)


def is_japanese_text(text: str) -> bool:
    return bool(JA_CHARS.search(text))


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    text: str


def replace_span(text: str, start: int, end: int, new: str) -> str:
    return text[:start] + new + text[end:]


ABBREVIATION = re.compile(r"(?:\b(?:Vol|No|vs|Mr|Mrs|Ms|Dr|St|e\.g|i\.e|approx)|\b[A-Z])$")


def sentences(text: str) -> list[Span]:
    """The answer's sentences with their offsets: split after 。！？!? and after a full stop that ends
    a word, and at line breaks."""
    out: list[Span] = []
    for line in re.finditer(r"[^\n]+", text):
        chunk, base = line.group(0), line.start()
        start = 0
        for m in re.finditer(r"[。！？!?]+|\.(?=\s|$)", chunk):
            end = m.end()
            if m.group(0) == "." and ABBREVIATION.search(chunk[:m.start()]):
                continue
            if chunk[start:end].strip():
                out.append(_span(text, base + start, base + end))
            start = end
        if chunk[start:].strip():
            out.append(_span(text, base + start, base + len(chunk)))
    return out


def _span(text: str, start: int, end: int) -> Span:
    while start < end and text[start].isspace():
        start += 1
    return Span(start, end, text[start:end])


def paragraphs(text: str) -> list[Span]:
    return [Span(m.start(), m.end(), m.group(0)) for m in re.finditer(r"[^\n]+(?:\n(?!\s*\n)[^\n]+)*", text)
            if m.group(0).strip()]


# ------------------------------------------------------------------ money

@dataclass(frozen=True)
class Money:
    start: int
    end: int
    value: float
    currency: str  # USD | JPY
    decimals: bool
    commas: bool
    style: str  # "$", "¥", "￥" (symbol before) or "円" (after)


_USD = re.compile(r"\$\s?(\d{1,3}(?:,\d{3})+|\d+)(\.\d{1,2})?")
_YEN_BEFORE = re.compile(r"([¥￥])\s?(\d{1,3}(?:,\d{3})+|\d+)")
_YEN_AFTER = re.compile(r"(\d{1,3}(?:,\d{3})+|\d+)\s?円")


def money_in(text: str) -> list[Money]:
    found: list[Money] = []
    for m in _USD.finditer(text):
        whole = m.group(1)
        value = float(whole.replace(",", "") + (m.group(2) or ""))
        found.append(Money(m.start(), m.end(), value, "USD", bool(m.group(2)), "," in whole, "$"))
    for m in _YEN_BEFORE.finditer(text):
        found.append(Money(m.start(), m.end(), float(m.group(2).replace(",", "")), "JPY", False,
                           "," in m.group(2), m.group(1)))
    for m in _YEN_AFTER.finditer(text):
        if m.start() > 0 and (text[m.start() - 1].isdigit() or text[m.start() - 1] in ",."):
            continue
        found.append(Money(m.start(), m.end(), float(m.group(1).replace(",", "")), "JPY", False,
                           "," in m.group(1), "円"))
    return sorted(found, key=lambda x: x.start)


def format_money(value: float, like: Money) -> str:
    if like.currency == "USD":
        body = f"{value:,.2f}" if like.decimals or value != int(value) else f"{int(value):,}"
        if not like.commas:
            body = body.replace(",", "")
        return "$" + body
    body = f"{int(round(value)):,}" if like.commas or value >= 10000 else str(int(round(value)))
    return body + "円" if like.style == "円" else like.style + body


def same_amount(a: float, b: float) -> bool:
    return abs(a - b) < 0.005


# ------------------------------------------------------------------ numbers with a unit

# (unit name, pattern with one group for the number). Japanese dates (3月4日) are excluded from 日.
NUMBER_UNITS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("days", re.compile(r"(?<![\d.,$])(\d+)(?:\s|-)(?:business\s|calendar\s)?days?\b", re.I)),
    ("hours", re.compile(r"(?<![\d.,$])(\d+)(?:\s|-)hours?\b", re.I)),
    ("percent", re.compile(r"(?<![\d.,$])(\d+)\s?(?:%|％|percent\b)", re.I)),
    ("points", re.compile(r"(?<![\d.,$])(\d+)\s?(?:points?\b|ポイント|pt\b)", re.I)),
    ("日", re.compile(r"(?<![\d月,.])(\d+)\s?(?:営業日|日間|日以内|日)(?!本)")),
    ("times", re.compile(r"(?<![\d.,$])(\d+)\s?(?:倍|x\b)", re.I)),
    ("items", re.compile(r"(?<![\d.,$])(\d+)\s?(?:点|枚|冊)")),
)


@dataclass(frozen=True)
class Quantity:
    start: int  # the number's span
    end: int
    value: int
    unit: str


def quantities_in(text: str) -> list[Quantity]:
    found = []
    for unit, pattern in NUMBER_UNITS:
        for m in pattern.finditer(text):
            found.append(Quantity(m.start(1), m.end(1), int(m.group(1)), unit))
    return sorted(found, key=lambda q: q.start)


# ------------------------------------------------------------------ dates

MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December")


def parse_iso(value: object) -> date | None:
    if not isinstance(value, str):
        return None
    m = re.fullmatch(r"(\d{4})-(\d{2})-(\d{2})(?:T.*)?", value.strip())
    if not m:
        return None
    try:
        return date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except ValueError:
        return None


def date_renderings(d: date) -> list[tuple[str, str]]:
    """(format name, text) of the ways an answer writes ``d``, longest first."""
    month, short = MONTHS[d.month - 1], MONTHS[d.month - 1][:3]
    forms = [
        ("ja_full", f"{d.year}年{d.month}月{d.day}日"),
        ("iso", d.isoformat()),
        ("en_full", f"{month} {d.day}, {d.year}"),
        ("en_short_year", f"{short} {d.day}, {d.year}"),
        ("ja_md", f"{d.month}月{d.day}日"),
        ("en_md", f"{month} {d.day}"),
        ("en_short", f"{short} {d.day}"),
    ]
    return forms


def render_date(d: date, form: str) -> str:
    return dict(date_renderings(d))[form]


@dataclass(frozen=True)
class DateMention:
    start: int
    end: int
    form: str
    value: date


def date_mentions(text: str, d: date) -> list[DateMention]:
    """Where the answer states ``d`` (a day number followed by another digit is no match)."""
    found: list[DateMention] = []
    taken: list[tuple[int, int]] = []
    for form, rendered in date_renderings(d):
        for m in re.finditer(re.escape(rendered) + r"(?![\d])", text):
            if form in ("en_md", "en_short") and re.match(r",?\s?\d{4}", text[m.end():]):
                continue
            if any(s <= m.start() < e for s, e in taken):
                continue
            if m.start() > 0 and text[m.start() - 1].isdigit():
                continue
            taken.append((m.start(), m.end()))
            found.append(DateMention(m.start(), m.end(), form, d))
    return sorted(found, key=lambda x: x.start)


def find_all(text: str, needle: str, word: bool = True) -> list[Span]:
    """Occurrences of ``needle`` (case-sensitive): a Latin needle as a whole word, bounded by no Latin
    letter or digit (so "UPS" is found in 「UPSにて」, where kana follow it), a Japanese one anywhere."""
    if not needle:
        return []
    if word and not is_japanese_text(needle):
        pattern = r"(?<![A-Za-z0-9])" + re.escape(needle) + r"(?![A-Za-z0-9])"
    else:
        pattern = re.escape(needle)
    return [Span(m.start(), m.end(), m.group(0)) for m in re.finditer(pattern, text)]
