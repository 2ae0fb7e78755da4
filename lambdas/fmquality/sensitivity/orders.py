"""Factual operators on the order on the page and on the retrieved policy: the order's status or its
carrier, and a number the policy states (days, percent, a threshold), changed in the answer to what the
evidence does not say."""

from __future__ import annotations

import re

from fmquality.domain.case import TestCase
from fmquality.sensitivity.base import Context, Perturbed, answer, catalog_prices, order_values, pick, with_response
from fmquality.sensitivity.text import find_all, format_money, money_in, quantities_in, replace_span, same_amount

# (statuses the phrase states, pattern, replacement, statuses the replacement states)
STATUS_PHRASES: tuple[tuple[set[str], str, str, set[str]], ...] = (
    ({"processing", "preorder_pending", "backordered"}, r"\bhasn't shipped(?: yet)?|\bhas not shipped(?: yet)?",
     "has already shipped", {"shipped", "in_transit"}),
    ({"processing"}, r"\bstill processing\b|\bis processing\b|\bbeing processed\b", "already delivered", {"delivered"}),
    ({"delivered"}, r"\b(?:was|been|is|marked(?: \S+){0,3} as) delivered\b", "is still in transit", {"in_transit"}),
    ({"delivered"}, r"\bdelivered\b", "not delivered yet", {"in_transit", "processing", "shipped"}),
    ({"shipped", "in_transit", "delayed", "delivered", "partially_shipped"}, r"\b(?:has |was )?shipped\b",
     "has not shipped yet", {"processing"}),
    ({"in_transit", "shipped", "delayed"}, r"\bin transit\b|\bon (?:its|the) way\b", "already delivered", {"delivered"}),
    ({"backordered", "partially_shipped"}, r"\bon backorder\b|\bbackordered\b", "in stock and already delivered",
     {"delivered"}),
    ({"delayed"}, r"\brunning late\b|\bdelayed\b", "on schedule", {"in_transit"}),
    ({"shipped", "in_transit", "delivered", "partially_shipped"}, r"発送済み|出荷済み", "未発送", {"processing"}),
    ({"in_transit", "shipped", "delayed"}, r"配送中|輸送中", "配達完了", {"delivered"}),
    ({"delivered"}, r"お届けしております|お届けいたしました|お届けしました", "まだ発送しておりません", {"processing"}),
    ({"delivered"}, r"お届け済み|配達完了|配達済み", "未発送", {"processing"}),
    ({"processing", "preorder_pending"}, r"準備中|未発送|未出荷", "発送済み", {"shipped"}),
)


def wrong_order_status(case: TestCase, ctx: Context) -> Perturbed | None:
    text = answer(case)
    statuses = {str(v).lower() for v in order_values(case, lambda k: k == "status")}
    if not statuses:
        return None
    found, taken = [], []
    for states, pattern, replacement, new_states in STATUS_PHRASES:
        for m in re.finditer(pattern, text, re.I):
            if any(s < m.end() and m.start() < e for s, e in taken):
                continue
            taken.append((m.start(), m.end()))
            if states & statuses and not new_states & statuses:
                found.append((m.start(), m.end(), replacement))
    if not found:
        return None
    start, end, replacement = pick(ctx, found)
    return Perturbed(with_response(case, replace_span(text, start, end, replacement)),
                     f"order status {text[start:end]!r} stated as {replacement!r} (order: {sorted(statuses)})")


CARRIERS_EN = ("UPS", "FedEx", "USPS", "DHL", "OnTrac")
CARRIERS_JA = ("ヤマト運輸", "佐川急便", "日本郵便", "西濃運輸")


def wrong_carrier(case: TestCase, ctx: Context) -> Perturbed | None:
    text = answer(case)
    carriers = sorted({str(v) for v in order_values(case, lambda k: k == "carrier")})
    hits = [(s, c) for c in carriers for s in find_all(text, c)]
    if not hits:
        return None
    span, carrier = pick(ctx, hits)
    pool = CARRIERS_JA if carrier in CARRIERS_JA or re.search(r"[\u3040-\u9fff]", carrier) else CARRIERS_EN
    other = pick(ctx, [c for c in pool if c not in carriers and c not in carrier])
    # every mention of that carrier (the spans find_all reads: a whole word in Latin script, any
    # occurrence in Japanese, where words are not spaced), so the answer names one carrier the order
    # does not have
    new = text
    for found in reversed(find_all(text, carrier)):
        new = replace_span(new, found.start, found.end, other)
    return Perturbed(with_response(case, new), f"carrier {carrier!r} stated as {other!r}")


def wrong_policy_number(case: TestCase, ctx: Context) -> Perturbed | None:
    """A number the retrieved knowledge states with its unit (days, hours, percent, points, a money
    threshold or fee that is no catalog price), stated by the answer with the same unit, changed."""
    text = answer(case)
    chunks = "\n".join(case.retrieved_chunks)
    if not chunks:
        return None
    stated = {(q.value, q.unit) for q in quantities_in(chunks)}
    units = [(q.start, q.end, q.value, q.unit) for q in quantities_in(text) if (q.value, q.unit) in stated]
    prices = [p for p, _ in catalog_prices(case)]
    chunk_money = [m.value for m in money_in(chunks)]
    amounts = [m for m in money_in(text) if any(same_amount(m.value, v) for v in chunk_money)
               and not any(same_amount(m.value, p) for p in prices)]
    candidates: list[tuple] = [("unit", *u) for u in units] + [("money", m) for m in amounts]
    if not candidates:
        return None
    choice = pick(ctx, candidates)
    if choice[0] == "money":
        money = choice[1]
        step = 10 if money.currency == "USD" else 1000
        value = money.value + step if money.value >= step else money.value * 2
        rendered = format_money(value, money)
        return Perturbed(with_response(case, replace_span(text, money.start, money.end, rendered)),
                         f"policy amount {text[money.start:money.end]} stated as {rendered}")
    _, start, end, value, unit = choice
    in_chunks = {v for v, u in stated if u == unit}
    options = [n for n in (value * 2, value + 7, value + 5, value + 3, value * 3) if n not in in_chunks and n != value]
    if unit == "percent":
        options = [n for n in options if n < 100] or [max(1, value // 2)]
    new = pick(ctx, options)
    return Perturbed(with_response(case, replace_span(text, start, end, str(new))),
                     f"policy number {value} {unit} stated as {new} {unit}")
