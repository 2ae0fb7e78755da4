"""Factual operators: one fact the answer states, taken from the case's evidence (a catalog field, the
order on the page, a number of the retrieved policy), changed to a value no evidence gives. The answer
then states something the evidence contradicts: a defect by construction. An answer that states no such
fact is skipped (the operator does not apply)."""

from __future__ import annotations

import re
from datetime import timedelta

from fmquality.domain.case import TestCase
from fmquality.sensitivity.base import (Context, Perturbed, answer, authors_of, catalog_prices, evidence_text,
                                        mentions_of, order_dates, order_values, pick, with_response)
from fmquality.sensitivity.text import (date_mentions, find_all, format_money, is_japanese_text, money_in, parse_iso,
                                        render_date, replace_span, same_amount, sentences)

# ------------------------------------------------------------------ price


def new_price(value: float, currency: str, taken: list[float], ctx: Context) -> float:
    """A price near ``value`` that no catalog entry (nor any amount in ``taken``) has."""
    steps = [1, 2, 3, 4, 5, 6] if currency == "USD" else [100, 200, 300, 150, 250, 400]
    ctx.rng.shuffle(steps)
    for step in steps:
        for candidate in (value + step, value - step):
            if candidate > 0 and not any(same_amount(candidate, t) for t in taken):
                return round(candidate, 2)
    return round(value * 3 + (0.99 if currency == "USD" else 0), 2)


def wrong_price(case: TestCase, ctx: Context) -> Perturbed | None:
    text = answer(case)
    prices = catalog_prices(case)
    stated = [m for m in money_in(text) if any(same_amount(m.value, p) and m.currency == c for p, c in prices)]
    if not stated:
        return None
    target = pick(ctx, stated)
    taken = [p for p, _ in prices] + [m.value for m in money_in(evidence_text(case) + "\n" + text)]
    value = new_price(target.value, target.currency, taken, ctx)
    rendered = format_money(value, target)
    return Perturbed(with_response(case, replace_span(text, target.start, target.end, rendered)),
                     f"catalog price {text[target.start:target.end]} stated as {rendered}")


# ------------------------------------------------------------------ stock

# (availability class, pattern, replacement stating another class). Checked in this order; the first
# pattern that matches a span claims it.
STOCK_PHRASES: tuple[tuple[str, str, str], ...] = (
    ("out_of_stock", r"\bout of stock\b", "in stock"),
    ("out_of_stock", r"\bsold out\b", "in stock"),
    ("out_of_stock", r"\bcurrently unavailable\b", "available now"),
    ("preorder", r"\bavailable (?:for|to) pre-?order\b", "in stock and ready to ship"),
    ("limited", r"\b(?:only a few (?:copies )?left|limited stock|low stock)\b", "out of stock"),
    ("in_stock", r"\bin stock\b", "out of stock"),
    ("out_of_stock", r"在庫がございません", "在庫がございます"),
    ("out_of_stock", r"在庫がありません", "在庫があります"),
    ("out_of_stock", r"在庫切れ|品切れ|売り切れ", "在庫あり"),
    ("preorder", r"予約受付中|ご予約を承って(?:おります|いる)", "在庫あり（即日発送）"),
    ("limited", r"残りわずか|在庫僅少", "在庫切れ"),
    ("in_stock", r"在庫がございます", "在庫がございません"),
    ("in_stock", r"在庫があります", "在庫がありません"),
    ("in_stock", r"在庫あり", "在庫切れ"),
)
_NEGATED_BEFORE = re.compile(r"(?:\bnot|n't|\bno longer|\bback|\bwhen|\bonce|\bif|\bcomes)\s+(?:\w+\s+){0,2}$", re.I)


def stock_statements(case: TestCase) -> list[tuple[int, int, str, str]]:
    """(start, end, class, replacement) of every availability the answer states that agrees with the
    catalog entries it is about (those named in its sentence, else every entry of the case)."""
    text = answer(case)
    if not case.catalog:
        return []
    found: list[tuple[int, int, str, str]] = []
    taken: list[tuple[int, int]] = []
    for cls, pattern, replacement in STOCK_PHRASES:
        for m in re.finditer(pattern, text, re.I):
            if any(s < m.end() and m.start() < e for s, e in taken):
                continue
            taken.append((m.start(), m.end()))
            if _NEGATED_BEFORE.search(text[max(0, m.start() - 30):m.start()]):
                continue
            sentence = next((s for s in sentences(text) if s.start <= m.start() < s.end), None)
            about = [i for i in case.catalog if sentence and mentions_of(sentence.text, i)] or case.catalog
            if all(i.availability == cls for i in about):
                found.append((m.start(), m.end(), cls, replacement))
    return sorted(found)


def wrong_availability(case: TestCase, ctx: Context) -> Perturbed | None:
    statements = stock_statements(case)
    if not statements:
        return None
    start, end, cls, replacement = pick(ctx, statements)
    text = answer(case)
    return Perturbed(with_response(case, replace_span(text, start, end, replacement)),
                     f"availability {text[start:end]!r} ({cls}) stated as {replacement!r}")


# ------------------------------------------------------------------ author

OTHER_AUTHORS_EN = ("Naoki Urasawa", "Rumiko Takahashi", "Takehiko Inoue", "Hajime Isayama", "Kentaro Miura",
                    "Yoshihiro Togashi", "Hirohiko Araki", "Junji Ito", "Eiichiro Oda", "Akira Toriyama")
OTHER_AUTHORS_JA = ("浦沢直樹", "高橋留美子", "井上雄彦", "諫山創", "三浦建太郎", "冨樫義博", "荒木飛呂彦", "伊藤潤二",
                    "尾田栄一郎", "鳥山明")


def wrong_author(case: TestCase, ctx: Context) -> Perturbed | None:
    text = answer(case)
    authors = {a for item in case.catalog for a in authors_of(item)}
    known = " ".join(authors) + evidence_text(case)
    hits = []
    for author in sorted(authors, key=lambda a: (-len(a), a)):  # a set: sorted fully, whatever the hash seed
        spans = find_all(text, author)
        if not spans and not is_japanese_text(author) and len(author.split()) > 1 and len(author.split()[-1]) >= 4:
            spans = find_all(text, author.split()[-1])  # "by Yamada"
        hits += [(s, author) for s in spans]
    if not hits:
        return None
    span, author = pick(ctx, hits)
    pool = OTHER_AUTHORS_JA if is_japanese_text(span.text) else OTHER_AUTHORS_EN
    choices = [a for a in pool if a not in known and a.split()[-1] not in known]
    other = pick(ctx, choices)
    if span.text != author and not is_japanese_text(other):
        other = other.split()[-1]  # a surname for a surname
    return Perturbed(with_response(case, replace_span(text, span.start, span.end, other)),
                     f"author {span.text!r} stated as {other!r}")


# ------------------------------------------------------------------ volume count / volume number

_VOLUME_COUNT = (re.compile(r"(?<![\d.])(\d+)(?=\s*volumes?\b|-volume\b)", re.I), re.compile(r"全(\d+)巻"),
                 re.compile(r"(?<![\d.])(\d+)(?=巻(?:まで|完結|で完結))"))
_VOLUME_NUMBER = (re.compile(r"\bVol(?:ume|\.)?\s?(\d+)\b", re.I), re.compile(r"(?<![\d.全])(\d+)(?=巻)"))


def wrong_volume(case: TestCase, ctx: Context) -> Perturbed | None:
    text = answer(case)
    counts = {int(v) for item in case.catalog for k, v in (item.model_extra or {}).items()
              if k in ("series_volumes", "volumes") and isinstance(v, (int, float))}
    numbers = {int(v) for item in case.catalog for k, v in (item.model_extra or {}).items()
               if k == "volume" and isinstance(v, (int, float))}
    candidates = [(m.start(1), m.end(1), int(m.group(1)), "volume count") for p in _VOLUME_COUNT
                  for m in p.finditer(text) if int(m.group(1)) in counts]
    if not candidates:
        candidates = [(m.start(1), m.end(1), int(m.group(1)), "volume number") for p in _VOLUME_NUMBER
                      for m in p.finditer(text) if int(m.group(1)) in numbers]
    if not candidates:
        return None
    start, end, value, what = pick(ctx, candidates)
    stated = {int(n) for n in re.findall(r"\d+", text)}
    options = [value + k for k in (2, 3, 4, 5, 7) if value + k not in counts | numbers | stated]
    new = pick(ctx, options) if options else value + 11
    return Perturbed(with_response(case, replace_span(text, start, end, str(new))),
                     f"{what} {value} stated as {new}")


# ------------------------------------------------------------------ dates (release date, order dates)


def shift_date(case: TestCase, ctx: Context, dates: list, what: str) -> Perturbed | None:
    text = answer(case)
    mentions = [m for d in dates for m in date_mentions(text, d)]
    if not mentions:
        return None
    target = pick(ctx, mentions)
    known = set(dates)
    for days in ctx.rng.sample([3, 4, 5, 6, 8, 9, 10, 12], 8):
        new = target.value + timedelta(days=days if ctx.rng.random() < 0.7 else -days)
        if new not in known and not date_mentions(text, new):
            break
    rendered = render_date(new, target.form)
    return Perturbed(with_response(case, replace_span(text, target.start, target.end, rendered)),
                     f"{what} {text[target.start:target.end]!r} stated as {rendered!r}")


def wrong_release_date(case: TestCase, ctx: Context) -> Perturbed | None:
    dates = [d for item in case.catalog for d in [parse_iso((item.model_extra or {}).get("release_date"))] if d]
    dates += [d for d in [parse_iso(v) for v in order_values(case, lambda k: k == "release_date")] if d]
    return shift_date(case, ctx, dates, "release date")


def wrong_order_date(case: TestCase, ctx: Context) -> Perturbed | None:
    dates = [d for d in order_dates(case)]
    return shift_date(case, ctx, dates, "order date")
