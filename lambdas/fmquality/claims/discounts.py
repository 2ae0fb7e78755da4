"""Discounts the answer works out: the percentages and fixed amounts that apply to a price, a sale
price or a discounted total checked against its base, the base the answer names ("$49.98 before the
discount and $37.98 after"), and a discount line under its labelled subtotal. Split from
``claims.commerce``, which reads every amount of an answer and calls these for the discounted ones.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fmquality.claims.arithmetic import AmountsInPlay, close, discounted
from fmquality.claims.money import DISCOUNT_CONTEXT, discount_follows
from fmquality.claims.reading import Reading
from fmquality.domain.case import CatalogItem, TestCase
from fmquality.language.catalog_index import index_for
from fmquality.language.numbers import Price, extract_quantities
from fmquality.language.text import normalize, strip_markup


@dataclass(frozen=True)
class PriceClaim:
    """A money amount of the answer with its role (``money.ROLES``) and, for a product's own price
    (unit, list or sale), the products it is attributed to (same currency; may be empty)."""

    price: Price
    items: tuple[CatalogItem, ...]
    role: str

    @property
    def product_price(self) -> bool:
        """A product's own price: the catalog's, or a sale price of it."""
        return self.role in ("unit", "list", "sale")


def item_prices(item: CatalogItem) -> list[float]:
    """The catalog price plus any other price field the snapshot carries (sale_price, list_price)."""
    extra = [v for k, v in (item.model_extra or {}).items() if "price" in k and isinstance(v, (int, float))]
    return [item.price, *extra]


def percents_for(case: TestCase, reading: Reading, price: Price,
                  items: tuple[CatalogItem, ...]) -> tuple[set[float], set[float]]:
    """Discounts (percent, amount) that apply to a price: stated in its sentence or line, in the
    shopper's question, or in the knowledge about its product (any knowledge when it names no product)."""
    start, end = reading.spans[reading.sentence_of(price.start)]
    line_start = reading.norm.rfind("\n", 0, price.start) + 1
    line_end = reading.norm.find("\n", price.end)
    local = reading.norm[min(start, line_start):max(end, line_end if line_end != -1 else len(reading.norm))]
    texts = [local, case.query]
    asins = {i.asin for i in items}
    index = index_for(case.catalog) if case.catalog else None
    for chunk in case.retrieved_chunks:
        named = set(index.named(chunk)) if index is not None else set()
        if not named or named & asins:
            texts.append(chunk)
    percents: set[float] = set()
    amounts: set[float] = set()
    for text in texts:
        norm = normalize(text)
        for q in extract_quantities(text):
            if q.unit == "percent":
                percents.add(q.value)
            elif q.unit == price.currency.lower() and discount_follows(strip_markup(norm[q.end:q.end + 12])):
                amounts.add(q.value)
    return percents, amounts


_DISCOUNT_LABEL = re.compile(r"\bdiscount\b|割引額?|値引き額?")
_SUBTOTAL_LABEL = re.compile(r"\b(?:subtotal|cart total)\b|小計|お買い上げ金額")


def labelled_discount(case: TestCase, reading: Reading, claim: PriceClaim,
                       claims: list[PriceClaim]) -> tuple[bool, str] | None:
    """A discount on a line that says so ("Discount: −$4.80"), under the one subtotal that the lines just
    above give as one ("Subtotal: $23.98"), with one percentage in play and no fixed discount: it is
    that share of the subtotal, or an arithmetic error. None when the layout is not that one."""
    price = claim.price
    line_start = reading.norm.rfind("\n", 0, price.start) + 1
    if not _DISCOUNT_LABEL.search(reading.norm[line_start:price.start]):
        return None
    above = line_start
    for _ in range(4):  # the four lines above
        above = reading.norm.rfind("\n", 0, max(0, above - 1)) + 1
    subtotals = [c for c in claims if above <= c.price.start < line_start and c.price.currency == price.currency
                 and _SUBTOTAL_LABEL.search(reading.norm[reading.norm.rfind("\n", 0, c.price.start) + 1:c.price.start])]
    percents, fixed = percents_for(case, reading, price, claim.items)
    if len(subtotals) != 1 or len(percents) != 1 or fixed:
        return None
    base, pct = subtotals[0].price.amount, next(iter(percents))
    if close(base * pct / 100, price.amount, price.currency):
        return True, f"{price.text} = {pct:g}% of the subtotal {subtotals[0].price.text}"
    return False, f"{price.text} is not {pct:g}% of the subtotal {subtotals[0].price.text}"


_BEFORE_DISCOUNT = re.compile(r"^\W*(?:before|without) (?:the |any |your )?(?:discount|sale|coupon|code|savings)\b|^\W*(?:の)?割引前")
_AFTER_DISCOUNT = re.compile(r"^\W*after\b|^\W*(?:の)?割引後")


def _named_base(reading: Reading, claim: PriceClaim, claims: list[PriceClaim], sentence_start: int) -> float | None:
    """The amount the claim's sentence calls the price before the discount, when the claim itself is
    called the price after it ("$49.98 before the discount and $37.98 after"); None otherwise."""
    if not _AFTER_DISCOUNT.match(reading.norm[claim.price.end:claim.price.end + 20]):
        return None
    named = [c.price.amount for c in claims if sentence_start <= c.price.start < claim.price.start
             and c.price.currency == claim.price.currency
             and _BEFORE_DISCOUNT.match(reading.norm[c.price.end:c.price.end + 30])]
    return named[-1] if named else None


def discount_arithmetic(case: TestCase, reading: Reading, claim: PriceClaim, claims: list[PriceClaim],
                        others: AmountsInPlay) -> tuple[bool, str] | None:
    """A sale price or a discounted total checked against its base less the discount in play: (True,
    why) when it follows, (False, why) when base and discount are both known and it does not follow
    from them or from any other step of arithmetic, None when there is nothing to compute with."""
    price, items = claim.price, claim.items
    if claim.role == "sale" and any(close(p, price.amount, price.currency) for i in items for p in item_prices(i)):
        return True, f"{price.text} = catalog price of {items[0].title}"
    percents, fixed = percents_for(case, reading, price, items)
    line_start = reading.norm.rfind("\n", 0, price.start) + 1
    sentence_start = reading.spans[reading.sentence_of(price.start)][0]
    bases = {c.price.amount for c in claims if c.price.currency == price.currency and c.role in ("unit", "list", "total", "shopper")
             and min(line_start, sentence_start) <= c.price.start < price.start}
    if claim.role == "sale":
        bases |= {p for i in items for p in item_prices(i)}
    # "$49.98 before the discount and $37.98 after": the answer names its base and its result.
    named_base = _named_base(reading, claim, claims, sentence_start)
    if named_base is not None:
        bases = {named_base}
    expected = {v for b in bases for pct in percents for v in discounted(b, pct, price.currency)}
    expected |= {b - d for b in bases for d in fixed}
    if any(close(v, price.amount, price.currency) for v in expected):
        return True, f"{price.text} follows from the discount stated for it"
    # A percentage and the amount it takes off the one base ("20% off takes $12.19 off") are one discount.
    if len(bases) == 1 and len(percents) == 1:
        fixed = {d for d in fixed if not close(d, next(iter(bases)) * next(iter(percents)) / 100, price.currency)}
    # An error only when the arithmetic was read completely: one base and one discount in play.
    if len(bases) != 1 or len(percents) + len(fixed) != 1 \
            or DISCOUNT_CONTEXT.search(reading.sentence(reading.sentence_of(price.start))) is None:
        return None
    # One step on from an amount the answer worked out right before it ("15% off $38.00 brings the
    # subtotal to $32.30 ... shipping $5.99 ... your total $38.29").
    steps = [c.price for c in claims if c is not claim and c.price.start < price.start
             and any(close(v, c.price.amount, price.currency) for v in expected)]
    if named_base is None and (others.explains(price.amount, price.currency)
                               or (steps and others.with_amounts(steps).explains(price.amount, price.currency))):
        return None
    shown = [f"{b:,g} less {pct:g}%" for b in sorted(bases) for pct in sorted(percents)]
    shown += [f"{b:,g} less {d:,g}" for b in sorted(bases) for d in sorted(fixed)]
    return False, f"{price.text} does not follow from {', '.join(shown)}"
