"""Claims of commerce: the prices an answer states, with their roles and the products they are
attributed to, and the stock statuses it states of products; and what can be checked of them.

Claims read: every money amount with its role (``claims.money``) and, for a product's own price
(unit, list or sale), its product (``price_claims``); every stock status with the product(s) it is
said of, "both are in stock" of every product named (``stock_claims``). Checked
(``check_amounts``, ``stock_agrees``):

- a unit or list price against the catalog price of the product it is attributed to;
- a sale price as arithmetic: the list price (stated, else the catalog's) less the discount stated in
  its sentence, in the shopper's question or in the knowledge about that product; a discount found
  and a result that does not follow from it is an arithmetic error;
- arithmetic the answer writes out ("528円＋770円", "$45 minus 15% is $38.25") as arithmetic;
- every other amount (a total, a difference, points worth, a remaining amount) is *explained* when
  one step of arithmetic over the amounts in play gives it (``claims.arithmetic``).

Left to the judge: an amount nothing explains (a hint, never a contradiction), a price with no
product to compare with (``loose``), a status said under a condition ("it ships when it is back in
stock"). Thresholds and fees are policy numbers (``claims.policy``), not checked here.
"""

from __future__ import annotations

import re

from dataclasses import dataclass, field

from fmquality.claims.arithmetic import AmountsInPlay, close, written_arithmetic
from fmquality.claims.discounts import PriceClaim, discount_arithmetic, item_prices, labelled_discount
from fmquality.claims.money import DISCOUNT_CONTEXT, role_of, table_roles
from fmquality.claims.reading import COLLECTIVE, Reading
from fmquality.domain.case import CatalogItem, TestCase
from fmquality.language.catalog_index import distinct_words, title_keys, told_apart, word_position
from fmquality.language.negation import condition_in
from fmquality.language.numbers import Price, extract_prices, extract_quantities, same_price
from fmquality.language.stock import COMPATIBLE_STOCK, availability_mentions, purchase_prompts

# --------------------------------------------------------------------------------------------------
# Prices and stock statuses of products
# --------------------------------------------------------------------------------------------------


def shopper_amounts(case: TestCase) -> set[tuple[str, float]]:
    """(currency, amount) of every amount in the shopper's own turns."""
    texts = [case.query, *(m.content for m in case.conversation_history if m.role == "user")]
    return {(p.currency, round(p.amount, 2)) for t in texts for p in extract_prices(t)}


# A sentence that derives a price from what the one before said ("That takes it from $12.99 to about
# $10.39", "With HORRORFEST it would be about $21.24").
_DERIVED = re.compile(r"\b(?:takes? it|brings? it|comes? (?:out )?to|would (?:be|come to|cost)|works? out|makes? it|"
                      r"(?:down|drops?) to)\b|になります|となります|で購入できます")


# A promotion code the knowledge defines ("the code HORRORFEST gives 15% off", 「コードMANGA10」).
_KNOWLEDGE_CODE = re.compile(r"\bcode\s+[\"'「]?([A-Z][A-Z0-9]{3,})\b|コード\s*[「『]?([A-Z][A-Z0-9]{3,})")


def _knowledge_codes(case: TestCase) -> set[str]:
    return {(m.group(1) or m.group(2)).lower() for chunk in case.retrieved_chunks for m in _KNOWLEDGE_CODE.finditer(chunk)}


def _discounted_here(reading: Reading, pos: int) -> bool:
    """A price in a sentence about a discount (or naming a promotion code the knowledge defines), or
    one that derives it from the discount just stated."""
    index = reading.sentence_of(pos)
    sentence = reading.sentence(index)
    if DISCOUNT_CONTEXT.search(sentence) or any(code in sentence for code in _knowledge_codes(reading.case)):
        return True
    return index > 0 and bool(_DERIVED.search(reading.sentence(index))) \
        and bool(DISCOUNT_CONTEXT.search(reading.sentence(index - 1)))


def price_claims(reading: Reading) -> list[PriceClaim]:
    """Every amount of the answer with its role; a product's price is attributed to its product. A
    price in a sentence about a discount that is not the catalog's is read as the sale price."""
    out: list[PriceClaim] = []
    shoppers = shopper_amounts(reading.case)
    prices = extract_prices(reading.text)
    # The terms of a sum the answer writes out ("1,298円（528円＋770円）") are its operands, checked
    # as arithmetic, not prices of the product the sentence is about.
    terms = {p.start for a in written_arithmetic(reading.norm, prices) for p in prices
             if a.start <= p.start < a.end and p.start != a.result.start}
    laid_out = table_roles(reading.norm)
    for price in prices:
        if reading.reported(price.start):
            out.append(PriceClaim(price, (), "reported"))  # another source's amount: not the answer's claim
            continue
        if price.start in terms:
            out.append(PriceClaim(price, (), "term"))
            continue
        role = laid_out.get(price.start) or role_of(reading.norm, price, shoppers)
        items: tuple[CatalogItem, ...] = ()
        if role in ("unit", "list", "sale"):
            if not reading.in_play:
                role = "unknown" if role == "unit" else role  # no product to be the price of
            else:
                attached = reading.attach(price.start)
                items = tuple(i for i in attached if i.currency == price.currency)
                if attached and not items:
                    continue  # a product's price in a currency it is not sold in: we do not convert
        if role == "unit" and not any(same_price(price.amount, p, price.currency, price.approx)
                                      for i in items for p in item_prices(i)) and _discounted_here(reading, price.start):
            role = "sale"
        out.append(PriceClaim(price, items, role))
    return out


@dataclass(frozen=True)
class StockClaim:
    status: str
    position: int
    items: tuple[CatalogItem, ...]
    collective: bool = False  # "both are in stock": said of every item, not of one of them


_KIND_OF_ORDER = re.compile(r"\b(?:orders?|carts?|shipments?|anything)\s+(?:with|containing|that (?:includes?|contains?|has|have)|"
                            r"including)\s+(?:an?\s+|any\s+)?$")


def stock_claims(reading: Reading) -> list[StockClaim]:
    """Stock statuses stated of products; without products in play ("pre-orders are charged when
    they ship") a status word describes a kind of order, not a product's stock. A status said of
    "both" or "all" is said of every listing its sentence names, by title or by the words that tell
    one listing apart ("Vol. 11 and Vol. 12 are in stock")."""
    if not reading.in_play:
        return []
    out = []
    listed = reading.items(reading.in_play)
    apart = distinct_words(listed) if len(listed) > 1 else {}
    for status, pos in sorted(availability_mentions(reading.text) + purchase_prompts(reading.text), key=lambda h: h[1]):
        if reading.reported(pos):
            continue  # another source's claim ("one product note says it's in stock"): the judge's
        index = reading.sentence_of(pos)
        sentence = reading.sentence(index)
        if condition_in(reading.norm[max(reading.spans[index][0], pos - 25):pos]):
            continue  # "it ships when it is back in stock": a condition, not the item's status
        if _KIND_OF_ORDER.search(reading.norm[max(reading.spans[index][0], pos - 40):pos]):
            continue  # "orders with a pre-order ship together": a kind of order, not a product's status
        if COLLECTIVE.search(sentence):
            # In order of mention, then of listing: the same claim (and evidence) on every run.
            named = list(dict.fromkeys([a for m in reading.mentions_in(index) for a in m.asins] + [
                i.asin for i in listed if any(word_position(w, sentence) is not None for w in apart.get(i.asin, ()))]))
            if len(named) >= 2:
                out.append(StockClaim(status, pos, tuple(reading.items(tuple(named))), collective=True))
                continue
        out.append(StockClaim(status, pos, tuple(reading.attach_one_market(pos))))
    return out


def stock_agrees(claim: StockClaim) -> bool:
    agrees = [i.availability == claim.status or (claim.status, i.availability) in COMPATIBLE_STOCK for i in claim.items]
    return all(agrees) if claim.collective else any(agrees)


# --------------------------------------------------------------------------------------------------
# Checking the amounts of an answer
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Amount:
    price: Price
    role: str
    items: tuple[CatalogItem, ...]  # the products a unit, list or sale price is attributed to


@dataclass
class AmountReport:
    """What the checks found about the answer's amounts."""

    agree: list[str] = field(default_factory=list)  # product prices that match the catalog
    contradict: list[tuple[Amount, str]] = field(default_factory=list)  # a product price the catalog contradicts
    arithmetic_errors: list[str] = field(default_factory=list)  # a sale price or written sum that does not follow
    explained: list[str] = field(default_factory=list)  # derived amounts one step of arithmetic gives
    unexplained: list[tuple[Amount, str]] = field(default_factory=list)  # amounts nothing explains: hints for the judge
    loose: list[str] = field(default_factory=list)  # product prices with no product to compare with
    amounts: list[Amount] = field(default_factory=list)

    @property
    def product_prices(self) -> list[Amount]:
        return [a for a in self.amounts if a.role in ("unit", "list", "sale")]


def amounts_in_play(case: TestCase, reading: Reading) -> AmountsInPlay:
    """Every amount and number an answer's arithmetic may start from (see ``AmountsInPlay``)."""
    pool = AmountsInPlay()
    for item in reading.items(reading.in_play):
        for key, value in item.model_dump(exclude_none=True).items():
            if "price" in key:
                pool.add_value(value, item.currency)
    for text in (*case.retrieved_chunks, case.query, *(m.content for m in case.conversation_history)):
        pool.add_text(text)
    currency = "JPY" if case.is_japanese else "USD"
    pool.add_structure(case.page_context.model_dump(exclude_none=True), currency)
    return pool


def check_amounts(case: TestCase, reading: Reading, claims: list[PriceClaim]) -> AmountReport:
    """Check what can be checked of the answer's amounts (``claims``: each with its role and products;
    see the module docstring)."""
    report = AmountReport()
    pool = amounts_in_play(case, reading)
    knowledge_amounts = {q.value for chunk in case.retrieved_chunks for q in extract_quantities(chunk)}
    # What the page shows (a cart's subtotal, an order's total) is the page's amount, whatever product
    # the sentence also names ("your cart is at $31.97 ... Vol. 3 would get you over the line").
    page = AmountsInPlay()
    page.add_structure(case.page_context.model_dump(exclude_none=True), "JPY" if case.is_japanese else "USD")
    knowledge_amounts |= {a for amounts in page.money.values() for a in amounts if a >= 1}
    written = written_arithmetic(reading.norm, [c.price for c in claims])
    for arithmetic in written:
        if arithmetic.correct:
            report.explained.append(f"{arithmetic.result.text} = {arithmetic.expression}")
        else:
            report.arithmetic_errors.append(f"{arithmetic.expression} makes {arithmetic.expected:,.2f}, "
                                            f"the answer says {arithmetic.result.text}")
    results = {a.result.start for a in written}
    derived: list[PriceClaim] = []  # amounts to explain by arithmetic, once the product prices are read
    for claim in claims:
        report.amounts.append(Amount(claim.price, claim.role, claim.items))
        if claim.price.start in results or claim.role in ("threshold", "fee", "budget", "shopper", "term", "reported"):
            continue  # written arithmetic is checked above; policy numbers, the shopper's own and reported ones elsewhere
        if claim.role in ("unit", "list"):
            if _worked_out_beside_price(claim, claims, reading, pool):
                derived.append(claim)  # explained (or not) as arithmetic below, like any derived amount
            elif _check_catalog_price(claim, report, pool, knowledge_amounts, reading):
                derived.append(claim)
            continue
        if claim.role == "difference" and (verdict := labelled_discount(case, reading, claim, claims)) is not None:
            (report.agree if verdict[0] else report.arithmetic_errors).append(verdict[1])
            continue
        if claim.role in ("sale", "total"):
            verdict = discount_arithmetic(case, reading, claim, claims, pool)
            if verdict is not None:
                (report.agree if verdict[0] else report.arithmetic_errors).append(verdict[1])
                continue
        derived.append(claim)
    # A derived amount is explained by one step from the amounts in play, or from the answer's own
    # amounts that are themselves the evidence's or explained (a total from an explained subtotal),
    # never from one another in a circle.
    grounded = pool.with_amounts(c.price for c in claims if c.role in ("unit", "list", "fee", "threshold", "shopper", "term")
                                 or c.price.start in results)
    _explain(derived, grounded, report)
    return report


_WORKED_OUT = re.compile(r"%|\bdeposit|\bremaining\b|\bbalance\b|\bthe rest\b|\bdifference\b|\bmore\b|\bless\b|\bsave|"
                         r"頭金|内金|残り|残額|差額|割引|お得")


def _worked_out_beside_price(claim: PriceClaim, claims: list[PriceClaim], reading: Reading, pool: AmountsInPlay) -> bool:
    """An amount that is not its product's price, beside that price (in its sentence, or anywhere when
    its line says how it is worked out), that a difference or percentage of the answer's own amounts
    makes ("raises your total by $4.80, which makes that volume effectively $4.80 instead of $11.99"):
    the answer's arithmetic, not a price."""
    prices = {p for i in claim.items for p in item_prices(i)}
    if not prices or any(close(p, claim.price.amount, claim.price.currency) for p in prices):
        return False
    index = reading.sentence_of(claim.price.start)
    stated = [c for c in claims if c is not claim and any(close(p, c.price.amount, c.price.currency) for p in prices)]
    # The price in the same sentence, or anywhere in the answer when the amount's own line says how it
    # is worked out ("1. At order: 20% deposit → $18.00" under "Box Set ($90.00)").
    line_start = reading.norm.rfind("\n", 0, claim.price.start) + 1
    line = reading.norm[line_start:claim.price.start]
    beside = any(reading.sentence_of(c.price.start) == index for c in stated) or (stated and _WORKED_OUT.search(line))
    return beside and pool.with_amounts(c.price for c in claims if c is not claim).derives(claim.price.amount, claim.price.currency)


def _edition_named_instead(claim: PriceClaim, reading: Reading) -> CatalogItem | None:
    """Another listing of the same title (an edition the answer never names in full) whose price the
    amount is, when the amount's sentence or the one before tells that listing apart by its own word
    ("... the paperback of Vol. 25? It's $9.99" beside "Vol. 25 (Digital)")."""
    asins = {i.asin for i in claim.items}
    keys = set().union(*(title_keys(i) for i in claim.items))
    siblings = [i for i in reading.case.catalog if i.asin not in asins and title_keys(i) & keys]
    if not siblings:
        return None
    index = reading.sentence_of(claim.price.start)
    context = " ".join(reading.sentence(i) for i in (index - 1, index) if i >= 0)
    told = told_apart([*claim.items, *siblings], context)
    if len(told) == 1 and told[0].asin not in asins \
            and any(close(p, claim.price.amount, claim.price.currency) for p in item_prices(told[0])):
        return told[0]
    return None


def _check_catalog_price(claim: PriceClaim, report: AmountReport, pool: AmountsInPlay,
                         knowledge_amounts: set[float], reading: Reading) -> bool:
    """A unit or list price against its product's catalog price, into ``report``; True when it is
    left to explain as a total the words did not mark ("¥1,056" beside a ¥528 volume: two copies)."""
    price, items = claim.price, claim.items
    if not items:
        report.loose.append(price.text)
    elif any(close(p, price.amount, price.currency) or (price.approx and abs(p - price.amount) <= 0.1 * p)
             for i in items for p in item_prices(i)):
        report.agree.append(f"{price.text} = catalog price of {items[0].title}")
    elif price.amount in knowledge_amounts:
        report.agree.append(f"{price.text} for {items[0].title} is the knowledge's or the page's (a promotion, a cart)")
    elif (edition := _edition_named_instead(claim, reading)) is not None:
        report.agree.append(f"{price.text} = catalog price of {edition.title}, the edition the answer names")
    elif pool.explains_as_total(price.amount, price.currency) is not None:
        return True
    else:
        shown = ", ".join(f"{i.title}: {i.price:g} {i.currency}" for i in items)
        report.contradict.append((Amount(price, claim.role, items), f"{price.text} stated, catalog says {shown}"))
    return False


def _explain(derived: list[PriceClaim], grounded: AmountsInPlay, report: AmountReport) -> None:
    """Derived amounts explained by one step from ``grounded``, each explained one grounding the next;
    the rest unexplained (a sale price with no product: loose)."""
    open_claims = list(derived)
    progress = True
    while open_claims and progress:
        progress = False
        for claim in list(open_claims):
            how = grounded.explains(claim.price.amount, claim.price.currency)
            if how:
                report.explained.append(f"{claim.price.text} ({claim.role}) = {how}")
                grounded = grounded.with_amounts([claim.price])
                open_claims.remove(claim)
                progress = True
    for claim in open_claims:
        if claim.role == "sale" and not claim.items:
            report.loose.append(claim.price.text)
        else:
            report.unexplained.append((Amount(claim.price, claim.role, claim.items),
                                       f"{claim.price.text} ({claim.role}): no sum, difference or discount of the "
                                       "amounts in play gives it"))
