"""Factual accuracy: is every claim backed by the catalog, the retrieved knowledge and the page context?

Checks settle a sub-score only from claims they attributed (``fmquality.claims``):
- price_accuracy / availability_accuracy: each price or stock status tied to the product it is
  about and compared with that product's catalog entry; a contradiction is a hard failure. A price
  or status the checks could not tie to a product goes to the judge; none stated: not applicable.
- policy_accuracy: each duration, percentage or threshold tied to its policy topic (return window,
  refund time, free-shipping threshold, ...) and compared with the knowledge's number for that
  topic under compatible conditions; a contradiction is a hard failure. Topics the knowledge is
  silent on are the judge's.
- attribute_accuracy: authors and volume counts attributed to a product, against the catalog.
- fact_coverage: settled when every expected fact was found conveyed or contradicted in the answer;
  a fact the checks could not find (it may be reworded) sends the sub-score to the judge.
- no_hallucination: set low when the checks find something the evidence does not support (an
  unknown title or ASIN, a date, amount, code or volume that is nowhere in the evidence, an order
  id or status that contradicts the order); one such claim fails the item. When they find nothing,
  the judge decides (what they verified goes with the request as a hint).
"""

from __future__ import annotations

import re
import unicodedata
from typing import TYPE_CHECKING

from fmquality.alignment import checkable, match_fact, read_units
from fmquality.claims import (
    PolicyNumber,
    Reading,
    compare_policies,
    conversation_topic,
    knowledge_policies,
    policy_numbers,
    price_agrees,
    price_claims,
    shopper_numbers,
    stated_order_statuses,
    status_family,
    stock_agrees,
    stock_claims,
)
from fmquality.dimensions.base import CheckReport
from fmquality.models import CatalogItem, HardFailure, TestCase
from fmquality.text import extract_quantities, find_dates, loose_key, normalize

if TYPE_CHECKING:
    from fmquality.rubric import Rubric

NAME = "factual_accuracy"

ASIN_RE = re.compile(r"\bB0[0-9A-Z]{8}\b")
# A code the shopper would type: letters and digits mixed, in capitals ("MANGA20", "SPRING-15").
CODE_RE = re.compile(r"(?<![\w-])(?=[A-Z0-9-]*[A-Z])(?=[A-Z0-9-]*\d)[A-Z][A-Z0-9-]{3,15}(?![\w-])")
# How much one unsupported claim costs: 0.5 per claim, so a single one is below the item floor.
UNSUPPORTED_FACTOR = 0.5


def evidence_texts(case: TestCase, reading: Reading) -> list[str]:
    """What an answer may rest on: the records of the products in play, retrieved chunks, page
    context, the conversation."""
    records = [" ".join(str(v) for v in item.model_dump(exclude_none=True).values())
               for item in reading.items(reading.in_play)]
    return [*records, *case.retrieved_chunks, case.page_context.model_dump_json(exclude_none=True), case.query,
            *(m.content for m in case.conversation_history)]


def has_evidence(case: TestCase) -> bool:
    return bool(case.catalog or case.retrieved_chunks or case.page_context.model_dump(exclude_none=True))


# --------------------------------------------------------------------------------------------------
# Sub-scores
# --------------------------------------------------------------------------------------------------


def _fact_coverage(case: TestCase, text: str, report: CheckReport) -> None:
    if not case.expected_facts:
        report.skip("fact_coverage", "no expected facts")
        return
    units = read_units(text)
    matches = [match_fact(fact, units) for fact in case.expected_facts]
    unresolved = [m for m in matches if m.status == "not_found"]
    if unresolved:
        report.ask_judge("fact_coverage", *(m.evidence for m in matches))
        return
    covered = sum(1 for m in matches if m.status == "covered")
    report.set("fact_coverage", covered / len(matches), *(m.evidence for m in matches))


def _price_accuracy(reading: Reading, report: CheckReport) -> list[float]:
    """Sets price_accuracy; returns the amounts it attributed to products."""
    claims = [c for c in price_claims(reading) if c.product_price]
    if not claims:
        report.skip("price_accuracy", "no product price stated")
        return []
    chunk_numbers = {q.value for chunk in reading.case.retrieved_chunks for q in extract_quantities(chunk)}
    right, wrong, loose = [], [], []
    for claim in claims:
        if not claim.items:
            loose.append(claim.price.text)
        elif price_agrees(claim):
            right.append(f"{claim.price.text} = catalog price of {claim.items[0].title}")
        elif claim.price.amount in chunk_numbers:
            right.append(f"{claim.price.text} for {claim.items[0].title} is the retrieved knowledge's (a promotion)")
        else:
            shown = ", ".join(f"{i.title}: {i.price:g} {i.currency}" for i in claim.items)
            wrong.append(f"{claim.price.text} stated, catalog says {shown}")
    for detail in wrong:
        report.hard_failures.append(HardFailure(rule="price_contradiction", dimension=NAME,
                                                sub_score="price_accuracy", detail=detail))
    if loose and not wrong:
        report.ask_judge("price_accuracy", *right, "price(s) not tied to a catalog product: " + ", ".join(loose))
    else:
        report.set("price_accuracy", len(right) / (len(right) + len(wrong)), *(wrong + right))
    return [c.price.amount for c in claims if c.items]


def _availability_accuracy(reading: Reading, report: CheckReport) -> None:
    claims = stock_claims(reading)
    if not claims:
        report.skip("availability_accuracy", "no stock status stated")
        return
    right, wrong, loose = [], [], []
    for claim in claims:
        if not claim.items:
            loose.append(claim.status)
        elif stock_agrees(claim):
            right.append(f"{claim.items[0].title}: {claim.status} agrees with the catalog")
        else:
            wrong.append(f"{claim.items[0].title} said to be {claim.status}, catalog says {claim.items[0].availability}")
    for detail in wrong:
        report.hard_failures.append(HardFailure(rule="availability_contradiction", dimension=NAME,
                                                sub_score="availability_accuracy", detail=detail))
    if loose and not wrong:
        report.ask_judge("availability_accuracy", *right, "stock status(es) not tied to a product: " + ", ".join(loose))
    else:
        report.set("availability_accuracy", len(right) / (len(right) + len(wrong)), *(wrong + right))


def _policy_accuracy(case: TestCase, claims: list[PolicyNumber], report: CheckReport) -> list[PolicyNumber]:
    """Sets policy_accuracy; returns the claims the knowledge is silent on."""
    if not claims:
        report.skip("policy_accuracy", "no policy number stated")
        return []
    if not case.retrieved_chunks:
        report.ask_judge("policy_accuracy", "policy numbers with no retrieved knowledge: "
                         + ", ".join(f"{c.text} ({c.topic})" for c in claims))
        return claims
    comparison = compare_policies(claims, knowledge_policies(case))
    right = [f"{c.text!r} ({c.topic}) matches the knowledge ({k.text!r})" for c, k in comparison.agree]
    wrong = [f"{c.text!r} ({c.topic}) contradicts the knowledge ({', '.join(repr(k.text) for k in ks)})"
             for c, ks in comparison.contradict]
    for detail in wrong:
        report.hard_failures.append(HardFailure(rule="policy_contradiction", dimension=NAME,
                                                sub_score="policy_accuracy", detail=detail))
    if wrong:
        # One stale policy number makes the answer wrong, however many others are right.
        report.set("policy_accuracy", 0.0, *(wrong + right))
    elif right and not comparison.unknown:
        report.set("policy_accuracy", 1.0, *right)
    else:
        report.ask_judge("policy_accuracy", *right, *(f"{c.text!r} ({c.topic}): the knowledge gives no number for it"
                                                       for c in comparison.unknown))
    return comparison.unknown


_BY_NAME = re.compile(r"(?<!published )(?<!translated )(?<!illustrated )(?<!sold )(?<!shipped )(?<!fulfilled )"
                      r"(?<!recommended )(?<!distributed )(?<!imprint )(?<!made )(?<!stocked )"
                      r"\bby\s+(?:the\s+(?:legendary|great|late|acclaimed)\s+)?([A-Z][\w.'-]+(?:\s+[A-Z][\w.'-]+){0,3})")
_NOT_A_NAME = re.compile(r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|mon|tue|wed|thu|fri|sat|sun|tomorrow|"
                         r"today|tonight|noon|midnight|the end|end of|next|this|then|email|phone|mail)", re.IGNORECASE)
_POSSESSIVE = re.compile(r"\b([A-Z][\w.-]+(?:\s+[A-Z][\w.-]+){0,2})'s\s+")
_AUTHOR_IS = re.compile(r"\b(?:author|mangaka|creator|writer)\s+(?:is|was)\s+([A-Z][\w.'-]+(?:\s+[A-Z][\w.'-]+){0,3})")
_VOLUME_COUNT = re.compile(r"(\d+)\s*(?:volumes?|vols?\b|books? in (?:the|all))|全\s*(\d+)\s*巻|(\d+)\s*巻(?:完結|で完結|まで)")


def _author_names(item: CatalogItem) -> list[str]:
    names = [item.author or "", *(str(v) for k, v in (item.model_extra or {}).items() if k.startswith("author") and v)]
    return [n for n in names if n]


def _same_author(claimed: str, item: CatalogItem) -> bool:
    claimed_words = {loose_key(w) for w in claimed.split()} - {""}
    for name in _author_names(item):
        known = {loose_key(w) for w in name.split()} - {""}
        if claimed_words & known or loose_key(claimed) in loose_key(name) or loose_key(name) in loose_key(claimed):
            return True
    return False


def _volume_count(item: CatalogItem) -> int | None:
    for key in ("volumes", "volume_count", "total_volumes", "volumes_total"):
        value = (item.model_extra or {}).get(key)
        if isinstance(value, int):
            return value
    return None


def _attribute_accuracy(reading: Reading, report: CheckReport) -> None:
    nfkc = unicodedata.normalize("NFKC", reading.text)
    right: list[str] = []
    wrong: list[str] = []
    for index, (start, end) in enumerate(reading.spans):
        if not reading.mentions_in(index) and not reading.products and not reading.case.page_context.current_asin:
            continue
        sentence = nfkc[start:end]
        claims = [(m.group(1), reading.attach_one_market(start + m.start()))
                  for regex in (_BY_NAME, _AUTHOR_IS) for m in regex.finditer(sentence)]
        for m in _POSSESSIVE.finditer(sentence):
            # "Naoki Urasawa's Pluto": the name is about the title right after it.
            after = next((x for x in reading.mentions if 0 <= x.start - (start + m.end()) <= 2), None)
            inside = any(x.start <= start + m.start() < x.end for x in reading.mentions)
            if after is not None and not inside:
                claims.append((m.group(1), reading.items(after.asins)))
        for claimed, about in claims:
            if _NOT_A_NAME.match(claimed):
                continue  # "arrives by August 20", "by Friday"
            items = [i for i in about if i.author]
            if not items or any(loose_key(claimed) in loose_key(t) for i in items for t in (i.title, i.title_romaji or "")):
                continue  # no author to compare with, or the "name" is the title itself
            if any(_same_author(claimed, i) for i in items):
                right.append(f"{items[0].title} by {claimed}: matches the catalog")
            else:
                wrong.append(f"{items[0].title} attributed to {claimed}; the catalog's author is {items[0].author}")
        for match in _VOLUME_COUNT.finditer(reading.norm[start:end]):
            stated = int(next(g for g in match.groups() if g))
            items = [i for i in reading.attach(start + match.start()) if _volume_count(i) is not None]
            if not items:
                continue
            if any(_volume_count(i) == stated for i in items):
                right.append(f"{items[0].title}: {stated} volumes matches the catalog")
            else:
                wrong.append(f"{items[0].title}: {stated} volumes stated, catalog says {_volume_count(items[0])}")
    right, wrong = list(dict.fromkeys(right)), list(dict.fromkeys(wrong))
    if not right and not wrong:
        report.skip("attribute_accuracy", "no author or volume count attributed to a product")
        return
    report.set("attribute_accuracy", len(right) / (len(right) + len(wrong)), *(wrong + right))


# --------------------------------------------------------------------------------------------------
# no_hallucination
# --------------------------------------------------------------------------------------------------

_TITLE_CANDIDATE = re.compile(r"『([^』]{2,60})』|\*\*([^*\n]{3,60})\*\*|(?<![\w*])\*([^*\n]{3,60})\*(?![\w*])")
_PRODUCT_CUE = re.compile(r"\$|¥|円|\bvol|\bvolume|巻|\bby\b|in stock|out of stock|pre-?order|在庫|予約|作者|edition|版")
_NOT_A_TITLE = re.compile(r":$|^(note|tip|price|availability|status|return|refund|shipping|order|in stock|out of stock|"
                          r"step \d|option \d)\b")
_VOLUME_NUMBER = re.compile(r"\b(?:vol(?:ume)?\.?\s*|#)(\d{1,3})\b|第?\s*(\d{1,3})\s*巻(?!完結|で完結|まで)")
_SERIES_VOLUME = re.compile(r"(?:vol(?:ume)?\.?\s*|#|第\s*)(\d{1,3})|(\d{1,3})\s*巻|[(（](\d{1,3})[)）]\s*$|\s(\d{1,3})\s*$")


def _unknown_titles(case: TestCase, reading: Reading) -> list[str]:
    """Product-like titles (『…』, **bold** or *italic* with a product cue) that no catalog item
    carries and that nobody in the conversation or the knowledge brought up."""
    if not case.catalog:
        return []
    context = loose_key(" ".join([case.query, *(m.content for m in case.conversation_history), *case.retrieved_chunks]))
    names = [loose_key(n) for item in case.catalog for n in (item.title, item.title_ja, item.title_romaji) if n]
    out = []
    nfkc = unicodedata.normalize("NFKC", reading.text)
    for match in _TITLE_CANDIDATE.finditer(nfkc):
        title = next(g for g in match.groups() if g).strip()
        key = loose_key(title)
        if len(key) < 2 or _NOT_A_TITLE.search(normalize(title)):
            continue
        if any(key in n or (len(n) >= 3 and n in key) for n in names) or key in context:
            continue
        start, end = reading.spans[reading.sentence_of(match.start())] if reading.spans else (0, len(nfkc))
        if match.group(1) or _PRODUCT_CUE.search(reading.norm[start:end]):
            out.append(title)
    return list(dict.fromkeys(out))


def _invented_volumes(case: TestCase, reading: Reading) -> list[str]:
    """"Volume 5" of a series whose catalog listings carry volume numbers, none of them 5."""
    out = []
    for match in _VOLUME_NUMBER.finditer(reading.norm):
        number = int(match.group(1) or match.group(2))
        items = reading.attach(match.start())
        if not items:
            continue
        listed = set()
        for item in items:
            for title in (item.title, item.title_ja or ""):
                found = _SERIES_VOLUME.search(normalize(title))
                if found:
                    listed.add(int(next(g for g in found.groups() if g)))
        if listed and number not in listed and str(number) not in case.query:
            out.append(f"volume {number} of {items[0].title} is not in the catalog (listed: {sorted(listed)})")
    return out


def _order_problems(case: TestCase, reading: Reading) -> tuple[list[str], list[str]]:
    order = case.page_context.order
    problems: list[str] = []
    verified: list[str] = []
    if order is None:
        return problems, verified
    family = status_family(order.status)
    claimed = stated_order_statuses(reading.text)
    if family and claimed:
        # "in transit" of a shipped order, "delayed" of any open order are not contradictions.
        allowed = {family} | ({"delayed"} if family in ("shipped", "processing") else set())
        if claimed - allowed and family not in claimed:
            problems.append(f"status stated as {sorted(claimed)}, the order is {order.status}")
        else:
            verified.append(f"order status {order.status}")
    if order.order_id:
        shape = re.sub(r"[A-Za-z]", "[A-Za-z]", re.sub(r"\d", r"\\d", re.escape(order.order_id)))
        for match in re.finditer(rf"(?<![\w-]){shape}(?![\w-])", unicodedata.normalize("NFKC", reading.text)):
            if loose_key(match.group()) != loose_key(order.order_id):
                problems.append(f"order id {match.group()} differs from {order.order_id}")
            else:
                verified.append("order id")
    return problems, verified


def unsupported_claims(case: TestCase, reading: Reading, product_amounts: list[float],
                       silent_policies: list[PolicyNumber]) -> tuple[list[str], list[str]]:
    """Claims the evidence does not support, and what was verified, found by the checks."""
    problems: list[str] = []
    verified: list[str] = []
    evidence = evidence_texts(case, reading)
    evidence_norm = normalize("\n".join(evidence))
    nfkc = unicodedata.normalize("NFKC", reading.text)
    catalog_asins = set(reading.by_asin)
    for asin in dict.fromkeys(ASIN_RE.findall(nfkc)):
        if case.catalog and asin not in catalog_asins and asin not in case.query:
            problems.append(f"ASIN {asin} is not in the catalog")
        else:
            verified.append(f"ASIN {asin}")
    problems += [f"title {t!r} is not in the catalog" for t in _unknown_titles(case, reading)]
    problems += _invented_volumes(case, reading)
    if reading.products:
        verified.append(f"{len(reading.products)} catalog product(s) named")
    for code in dict.fromkeys(CODE_RE.findall(nfkc)):
        if ASIN_RE.fullmatch(code) or (case.page_context.order and code == case.page_context.order.order_id):
            continue
        if loose_key(code) not in loose_key(evidence_norm):
            problems.append(f"code {code!r} appears nowhere in the evidence")
        else:
            verified.append(f"code {code}")
    evidence_dates = [d for text in evidence for d in find_dates(text)]
    if case.page_context.order is not None or case.retrieved_chunks:
        for date in find_dates(reading.text):
            shown = reading.norm[date.start:date.end]
            if any(date.same_day(k) for k in evidence_dates):
                verified.append(f"date {shown}")
            else:
                problems.append(f"date {shown!r} is not in the order or the knowledge")
    evidence_values = {q.value for text in evidence for q in extract_quantities(text)}
    for claim in silent_policies:
        if claim.low not in evidence_values and claim.high not in evidence_values:
            problems.append(f"{claim.text!r} ({claim.topic}) is not supported by the knowledge or the page")
    for claim in price_claims(reading):
        if not claim.product_price and claim.price.amount not in evidence_values \
                and claim.price.amount not in product_amounts and not any(
                    c.text == claim.price.text for c in silent_policies):
            problems.append(f"amount {claim.price.text!r} is not supported by the evidence")
    order_problems, order_verified = _order_problems(case, reading)
    return problems + order_problems, verified + order_verified


def _no_hallucination(case: TestCase, reading: Reading, product_amounts: list[float],
                      silent_policies: list[PolicyNumber], report: CheckReport) -> None:
    problems, verified = unsupported_claims(case, reading, product_amounts, silent_policies) if has_evidence(case) \
        else ([], [])
    if problems:
        report.set("no_hallucination", UNSUPPORTED_FACTOR ** len(problems), *problems)
        report.findings.append("unsupported: " + "; ".join(problems))
    elif checkable(case, reading.text):
        report.ask_judge("no_hallucination", *(["verified against the evidence: " + ", ".join(verified)] if verified else []))
    else:
        report.skip("no_hallucination", "the answer asserts nothing the evidence can speak to")


def check(case: TestCase, rubric: "Rubric") -> CheckReport:
    report = CheckReport()
    reading = Reading(case)
    _fact_coverage(case, reading.text, report)
    product_amounts = _price_accuracy(reading, report)
    _availability_accuracy(reading, report)
    claims = policy_numbers(reading.text, conversation_topic(case), shopper_numbers=shopper_numbers(case))
    claims = [c for c in claims if c.unit != "date"]
    silent = _policy_accuracy(case, claims, report)
    _attribute_accuracy(reading, report)
    _no_hallucination(case, reading, product_amounts, silent, report)
    return report
