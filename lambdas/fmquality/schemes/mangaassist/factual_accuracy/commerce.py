"""Prices and stock: each price or stock status tied to the product it is about and compared with that
product's catalog entry (price_accuracy, availability_accuracy). A contradiction is a hard failure; a
price or status the checks could not tie to a product goes to the judge; none stated: not applicable.
A product the catalog lists as out of stock, offered with a promise that it ships, is a contradiction
too."""

from __future__ import annotations

import re

from fmquality.claims.commerce import AmountReport, check_amounts, price_claims, stock_agrees, stock_claims
from fmquality.claims.reading import Reading
from fmquality.domain.case import TestCase
from fmquality.domain.scores import HardFailure
from fmquality.language.negation import is_negated
from fmquality.language.stock import COMPATIBLE_STOCK
from fmquality.schemes.mangaassist.factual_accuracy import DIMENSION
from fmquality.scoring.plan import CheckReport


def price_accuracy(case: TestCase, reading: Reading, report: CheckReport) -> AmountReport:
    """Sets price_accuracy from the product prices and the discount arithmetic it could check;
    returns what it read, for no_hallucination."""
    claims = price_claims(reading)
    amounts = check_amounts(case, reading, claims)
    for _, detail in amounts.contradict:
        report.hard_failures.append(HardFailure(rule="price_contradiction", dimension=DIMENSION,
                                                sub_score="price_accuracy", detail=detail))
    for detail in amounts.arithmetic_errors:
        report.hard_failures.append(HardFailure(rule="arithmetic_error", dimension=DIMENSION,
                                                sub_score="price_accuracy", detail=detail))
    wrong = [d for _, d in amounts.contradict] + amounts.arithmetic_errors
    right = amounts.agree
    priced = [c for c in claims if c.product_price]
    if not priced and not wrong:
        report.skip("price_accuracy", "no product price stated")
    elif wrong or (right and not amounts.loose and not _unexplained_prices(amounts)):
        report.set("price_accuracy", len(right) / (len(right) + len(wrong)), *(wrong + right))
    else:
        report.ask_judge("price_accuracy", *right, *(["price(s) not tied to a catalog product: " + ", ".join(amounts.loose)]
                                                     if amounts.loose else []), *_unexplained_prices(amounts))
    return amounts


def _unexplained_prices(amounts: AmountReport) -> list[str]:
    """Sale prices of products that no discount in play explains."""
    return [text for amount, text in amounts.unexplained if amount.role == "sale"]


# A promise that a product can be had now: it ships or arrives, it can be ordered today.
_PROMISE = re.compile(r"\b(?:ships? (?:today|tomorrow|right away|immediately|out today|same[- ]day)|will ship (?:today|tomorrow|"
                      r"right away)|should (?:arrive|get there|be there)|(?:arrive|get there|be there) (?:before|by|in time)|"
                      r"order (?:it )?(?:today|now)|add (?:it )?to (?:your )?cart|yes,? you can(?: get it)?|in time for)\b"
                      r"|すぐに?(?:発送|お届け)|発送いたします|お届けできます|お届けいたします|間に合います")
_UNAVAILABLE = re.compile(r"\b(?:out of stock|sold out|unavailable|not available|restock|back in stock|reprint|"
                          r"pre-?order|not (?:yet )?released)\b|在庫切れ|品切れ|売り切れ|入荷|重版|予約|発売前")


def _promised_unavailable(reading: Reading) -> list[str]:
    """A product the catalog lists as out of stock, offered with a promise that it ships or arrives,
    where the answer never says it is unavailable: sold as available without saying so."""
    if _UNAVAILABLE.search(reading.norm):
        return []
    out = []
    for item in reading.items(reading.products or reading.in_play):
        if item.availability != "out_of_stock":
            continue
        for index in range(len(reading.spans)):
            sentence = reading.sentence(index)
            if _PROMISE.search(sentence) and not is_negated(sentence) and item in reading.attach(reading.spans[index][0]):
                out.append(f"{item.title} (out of stock in the catalog) offered as available: {sentence.strip()[:60]!r}")
                break
    return out


def availability_accuracy(reading: Reading, report: CheckReport) -> None:
    claims = stock_claims(reading)
    promised = _promised_unavailable(reading)
    if not claims and not promised:
        report.skip("availability_accuracy", "no stock status stated")
        return
    right, wrong, loose = [], list(promised), []
    for claim in claims:
        if not claim.items:
            loose.append(claim.status)
        elif stock_agrees(claim):
            right.append(f"{claim.items[0].title}: {claim.status} agrees with the catalog")
        else:
            differ = [i for i in claim.items if i.availability != claim.status
                      and (claim.status, i.availability) not in COMPATIBLE_STOCK] or list(claim.items)
            wrong.append(f"{differ[0].title} said to be {claim.status}, catalog says {differ[0].availability}")
    for detail in wrong:
        report.hard_failures.append(HardFailure(rule="availability_contradiction", dimension=DIMENSION,
                                                sub_score="availability_accuracy", detail=detail))
    if loose and not wrong:
        report.ask_judge("availability_accuracy", *right, "stock status(es) not tied to a product: " + ", ".join(loose))
    else:
        report.set("availability_accuracy", len(right) / (len(right) + len(wrong)), *(wrong + right))
