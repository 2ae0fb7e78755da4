"""Relevance: does the answer serve what the shopper asked, with the right products, in context?

Checks settle a sub-score only from what they found:
- intent_relevance: forbidden content in the answer sets it to 0 (and is a hard failure); otherwise
  the judge reads the answer against the query.
- product_relevance: every expected product named and no other settles it; other products named
  (they may fit or not), expected ones not named (the answer may say "your copy" or "both"), or
  products named with nothing expected go to the judge. Not applicable when no product is named or
  expected.
- context_relevance: an ordinal reference ("the second one") resolved to the right or the wrong
  listed item, the page's product or order named, settle it; other page context or a follow-up
  that leans on earlier turns goes to the judge. Not applicable without either.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from fmquality.claims import Reading, ordinal_reference, resolve_ordinal
from fmquality.dimensions.base import CheckReport, response_text
from fmquality.models import HardFailure, TestCase
from fmquality.text import find_dates, normalize, phrase_in

if TYPE_CHECKING:
    from fmquality.rubric import Rubric

NAME = "relevance"

# A follow-up that leans on the earlier turns: "it", "that one", "those", 「それ」「その」.
ANAPHORA = re.compile(
    r"(?<![a-z])(it|its|this|that|these|those|them|they|both|this one|that one|the same|same one|the other)(?![a-z])"
    r"|これ|それ|あれ|この|その|あの|こちら|そちら|本作|同作|さっき|先ほど|前の"
)


def forbidden_hits(case: TestCase) -> list[str]:
    text = response_text(case)
    return [phrase for phrase in case.forbidden_content if phrase.strip() and phrase_in(phrase, text)]


def _product_relevance(case: TestCase, reading: Reading, report: CheckReport) -> None:
    named = [a for a in reading.products]
    named += [a for a in case.expected_products if a not in named and a in reading.text]  # named by ASIN
    expected = list(dict.fromkeys(case.expected_products))
    if not expected:
        if named:
            report.ask_judge("product_relevance", "products named (no product was expected): " + ", ".join(named))
        else:
            report.skip("product_relevance", "no product named or expected")
        return
    hits = [a for a in expected if a in named]
    others = [a for a in named if a not in expected]
    if not named:
        report.ask_judge("product_relevance", "the answer names no catalog product; expected: " + ", ".join(expected))
        return
    missing = [a for a in expected if a not in hits]
    titles = {i.asin: i.title for i in case.catalog}
    evidence = [f"{len(hits)}/{len(expected)} expected products named"]
    if missing:
        evidence.append("not named: " + ", ".join(f"{titles.get(a, a)} ({a})" for a in missing))
    if others or missing:
        # Other products may fit or not, and a product not named may be referred to otherwise ("both
        # cost $12.99"): the judge reads it.
        report.ask_judge("product_relevance", *evidence,
                         *(["also named: " + ", ".join(f"{titles.get(a, a)} ({a})" for a in others)] if others else []))
        return
    report.set("product_relevance", 1.0, *evidence)


def _order_used(case: TestCase, reading: Reading) -> list[str]:
    order = case.page_context.order
    if order is None:
        return []
    used = []
    if order.order_id and phrase_in(order.order_id, reading.text):
        used.append("order id")
    for label, value in (("eta", order.eta), ("ship date", order.ship_date)):
        known = find_dates(value or "")
        if known and any(a.same_day(k) for a in find_dates(reading.text) for k in known):
            used.append(label)
    return used


def _context_relevance(case: TestCase, reading: Reading, report: CheckReport) -> None:
    reference = ordinal_reference(case)
    if reference is not None:
        outcome, evidence = resolve_ordinal(reference, reading)
        if outcome == "none":
            report.ask_judge("context_relevance", *evidence)
        else:
            report.set("context_relevance", 1.0 if outcome == "target" else 0.0, *evidence)
        return
    page = case.page_context
    leans_on_history = bool(case.conversation_history) and ANAPHORA.search(normalize(case.query)) is not None
    current = page.current_asin if page.current_asin in reading.by_asin else None
    if not (current or page.order or page.store_section or leans_on_history or (page.model_extra or {})):
        report.skip("context_relevance", "no page context and the query does not lean on earlier turns")
        return
    used = _order_used(case, reading)
    if current and current in reading.products:
        used.append(f"the page's product {reading.by_asin[current].title}")
    if used:
        report.set("context_relevance", 1.0, "uses the page context: " + ", ".join(used))
    else:
        report.ask_judge("context_relevance", "no page-context detail found in the answer")


def check(case: TestCase, rubric: "Rubric") -> CheckReport:
    report = CheckReport()
    reading = Reading(case)
    forbidden = forbidden_hits(case)
    if forbidden:
        detail = "forbidden content in the response: " + "; ".join(repr(f) for f in forbidden)
        report.hard_failures.append(HardFailure(rule="forbidden_content", dimension=NAME,
                                                sub_score="intent_relevance", detail=detail))
        report.set("intent_relevance", 0.0, detail)
    else:
        report.ask_judge("intent_relevance")
    _product_relevance(case, reading, report)
    _context_relevance(case, reading, report)
    return report
