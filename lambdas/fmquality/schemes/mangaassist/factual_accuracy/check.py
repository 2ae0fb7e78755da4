"""Factual accuracy: is every claim backed by the catalog, the retrieved knowledge and the page context?

Checks settle a sub-score only from claims they attributed (``fmquality.claims.reading``):
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
from dataclasses import dataclass, field
from datetime import date as _date
from typing import TYPE_CHECKING

from fmquality.language.alignment import checkable, match_fact, read_units
from fmquality.claims.reading import (
    COMPATIBLE_STOCK,
    is_negated,
    PolicyNumber,
    Reading,
    compare_policies,
    conversation_topic,
    given_values,
    knowledge_policies,
    policy_numbers,
    price_claims,
    shopper_numbers,
    order_facts,
    stock_agrees,
    stock_claims,
)
from fmquality.scoring.plan import CheckReport
from fmquality.domain.case import CatalogItem, TestCase
from fmquality.domain.scores import HardFailure
from fmquality.claims.money import AmountReport, check_amounts
from fmquality.language.text import (
    DateMention,
    extract_prices,
    extract_quantities,
    find_dates,
    has_japanese,
    loose_key,
    normalize,
    romanize,
)

if TYPE_CHECKING:
    from fmquality.config.rubric import Rubric

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
    if len(unresolved) == len(matches) and all(m.score == 0.0 for m in matches):
        # Not one word or number of any fact it must convey: the answer is about something else. (A
        # reworded fact keeps some of its parts: on the labelled sets no acceptable answer reads so.)
        detail = "the answer conveys none of the expected facts: " + "; ".join(m.evidence for m in matches)
        report.hard_failures.append(HardFailure(rule="expected_facts_missing", dimension=NAME,
                                                sub_score="fact_coverage", detail=detail))
        report.set("fact_coverage", 0.0, *(m.evidence for m in matches))
        return
    if unresolved:
        report.ask_judge("fact_coverage", *(m.evidence for m in matches))
        return
    covered = sum(1 for m in matches if m.status == "covered")
    report.set("fact_coverage", covered / len(matches), *(m.evidence for m in matches))


def _price_accuracy(case: TestCase, reading: Reading, report: CheckReport) -> AmountReport:
    """Sets price_accuracy from the product prices and the discount arithmetic it could check;
    returns what it read, for no_hallucination."""
    claims = price_claims(reading)
    amounts = check_amounts(case, reading, claims)
    for _, detail in amounts.contradict:
        report.hard_failures.append(HardFailure(rule="price_contradiction", dimension=NAME,
                                                sub_score="price_accuracy", detail=detail))
    for detail in amounts.arithmetic_errors:
        report.hard_failures.append(HardFailure(rule="arithmetic_error", dimension=NAME,
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


def _availability_accuracy(reading: Reading, report: CheckReport) -> None:
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
    comparison = compare_policies(claims, knowledge_policies(case), given_values(case))
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
# How long a series is, said as such: "complete in 14 volumes", "45 volumes in all", 全14巻, 14巻で完結
# ("these 2 volumes", 「2巻まで」 are counts of something else).
_VOLUME_COUNT = re.compile(
    r"(?:complete(?:d)? (?:in|at|with)|(?:runs|ran|spans|spanned|totals?|has|had|wrapped up (?:at|in)|ended (?:at|in)|"
    r"finished (?:at|in)|concluded (?:at|in)|is|was)(?: a)?)\s+(\d+)(?:-| )volumes?\b"
    r"|(\d+) volumes? (?:in total|total|in all|long)\b|(\d+)-volume (?:series|run)\b|series of (\d+) volumes\b"
    r"|全\s*(\d+)\s*巻|(\d+)\s*巻(?:で)?完結")
# Edition words: a sentence about another edition than the listing's ("the 完全版 has 18 volumes").
_EDITION_WORDS = re.compile(r"完全版|新装版|愛蔵版|大型版|特装版|フルカラー|文庫版|ワイド版|\b(?:deluxe|perfect|omnibus|box set|collector'?s|"
                            r"3-in-1|vizbig|fullmetal edition|master edition|hardcover edition|special edition)\b")


# "作者は伊藤潤二（Junji Ito）先生です": a Japanese name, with its romanization when given.
_AUTHOR_JA = re.compile(r"(?:作者|著者|原作者|作画|漫画家)(?:は|:)\s*([^\s、。,(（)）]{2,15}?)\s*(?:[(（]([A-Za-z][A-Za-z .'-]{2,40})[)）])?"
                        r"\s*(?:先生|さん|氏)?(?:です|でございます|となります|。)")
# An answer to "who wrote it?" that opens with the name: "That's **Rumiko Takahashi**!".
_WHO_WROTE = re.compile(r"\bwho (?:wrote|writes|drew|draws|created|made|is the (?:author|mangaka|artist))\b|\bauthor of\b"
                        r"|作者は(?:誰|どなた)|誰が(?:書|描)")
_OPENING_NAME = re.compile(r"^\W*(?:(?i:that'?s|it'?s|it was|that would be|the author is|written by|by)\s+)?\**"
                           r"([A-Z][a-z]+(?:\s+[A-Z][a-z]+){1,2})\**")


def _named_authors(reading: Reading, nfkc: str) -> list[tuple[str, list[CatalogItem]]]:
    """Names the answer gives as a product's author in the ways the by/is patterns do not read: in
    Japanese (作者は…), and as the opening words of an answer to "who wrote it?"."""
    found = []
    for match in _AUTHOR_JA.finditer(nfkc):
        claimed = match.group(2) or match.group(1)
        found.append((claimed, reading.attach_one_market(match.start())))
    if _WHO_WROTE.search(normalize(reading.case.query)) and reading.spans:
        first = nfkc[reading.spans[0][0]:reading.spans[0][1]]
        opening = _OPENING_NAME.match(first.strip())
        asked = reading.focus or (reading.products[0] if len(reading.products) == 1 else None)
        if opening and asked:
            found.append((opening.group(1), reading.items([asked])))
    return found


def _author_names(item: CatalogItem) -> list[str]:
    names = [item.author or "", *(str(v) for k, v in (item.model_extra or {}).items() if k.startswith("author") and v)]
    return [n for n in names if n]


def _same_author(claimed: str, item: CatalogItem) -> bool | None:
    """Whether a name is the item's author; None when they are written in different scripts and the
    romanization does not settle it (a Japanese name against an English catalog entry)."""
    if has_japanese(claimed) != any(has_japanese(n) for n in _author_names(item)):
        roman = {loose_key(w) for w in romanize(claimed).split()} if has_japanese(claimed) else set()
        known = {loose_key(w) for n in _author_names(item) for w in (romanize(n) if has_japanese(n) else n).split()}
        return True if roman & known or {loose_key(w) for w in claimed.split()} & known else None
    claimed_words = {loose_key(w) for w in claimed.split()} - {""}
    for name in _author_names(item):
        known = {loose_key(w) for w in name.split()} - {""}
        if claimed_words & known or loose_key(claimed) in loose_key(name) or loose_key(name) in loose_key(claimed):
            return True
    return False


def _volume_count(item: CatalogItem) -> int | None:
    """How many volumes the series has, from a field that says so ("volumes", "series_volumes",
    "volume_count", "total_volumes"; not "volume", the number of this one)."""
    for key, value in (item.model_extra or {}).items():
        if isinstance(value, int) and not isinstance(value, bool) and key != "volume" \
                and ("volumes" in key or key in ("volume_count", "total_volumes")):
            return value
    return None


def _attribute_accuracy(reading: Reading, report: CheckReport) -> None:
    nfkc = unicodedata.normalize("NFKC", reading.text)
    right: list[str] = []
    wrong: list[str] = []
    named = _named_authors(reading, nfkc)
    for index, (start, end) in enumerate(reading.spans):
        if not reading.mentions_in(index) and not reading.products and not reading.case.page_context.current_asin \
                and not (index == 0 and named):
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
        if index == 0:
            claims += named  # read once, with the first sentence
        for claimed, about in claims:
            if _NOT_A_NAME.match(claimed):
                continue  # "arrives by August 20", "by Friday"
            items = [i for i in about if i.author]
            if not items or any(loose_key(claimed) in loose_key(t) for i in items for t in (i.title, i.title_romaji or "")):
                continue  # no author to compare with, or the "name" is the title itself
            same = [_same_author(claimed, i) for i in items]
            if any(same):
                right.append(f"{items[0].title} by {claimed}: matches the catalog")
            elif None not in same:
                wrong.append(f"{items[0].title} attributed to {claimed}; the catalog's author is {items[0].author}")
        plain = re.sub(r"[*_]", "", reading.norm[start:end])  # "complete at **42 volumes**"
        for match in _VOLUME_COUNT.finditer(plain):
            stated = int(next(g for g in match.groups() if g))
            items = [i for i in reading.attach(start) if _volume_count(i) is not None]
            other_edition = [w for w in _EDITION_WORDS.findall(reading.norm[start:end])
                             if not any(w in normalize(t) for i in items for t in (i.title, i.title_ja or ""))]
            if not items or other_edition:
                continue
            if any(_volume_count(i) == stated for i in items):
                right.append(f"{items[0].title}: {stated} volumes matches the catalog")
            else:
                wrong.append(f"{items[0].title}: {stated} volumes stated, catalog says {_volume_count(items[0])}")
    right, wrong = list(dict.fromkeys(right)), list(dict.fromkeys(wrong))
    if not right and not wrong:
        report.skip("attribute_accuracy", "no author or volume count attributed to a product")
        return
    for detail in wrong:
        report.hard_failures.append(HardFailure(rule="attribute_contradiction", dimension=NAME,
                                                sub_score="attribute_accuracy", detail=detail))
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
        if len(key) < 2 or _NOT_A_TITLE.search(normalize(title)) or not re.search(r"[^\W\d_]{2}", title) \
                or extract_prices(title):
            continue  # "**$29.97**" is an amount in bold, not a title
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


# A code called one, letters only included: "the code STUDENTMANGA", 「クーポンコード「WELCOME」」.
_NAMED_CODE = re.compile(r"(?:\bcode|\bcoupon|クーポンコード|コード)\s*[:：「『\"']?\s*([A-Z][A-Z0-9-]{3,15})(?![\w-])")
# A code presented as one: "use code FALL20", "FALL20 at checkout", 「クーポンコードMANGA10」.
_CODE_CUE = re.compile(r"\b(?:code|coupon|promo|voucher|enter|apply|use)\b|クーポン|コード")


def _date_offsets(case: TestCase, text: str) -> set[int]:
    """Day offsets a derived date may rest on: durations stated in the evidence or the answer (a
    business day may add a weekend), and a week either way."""
    offsets = {0, 1, 2, 3, 7}
    for source in (*case.retrieved_chunks, case.query, *(m.content for m in case.conversation_history), text):
        for q in extract_quantities(source):
            days = q.in_days()
            if days is not None and days <= 120:
                offsets |= {int(days) + extra for extra in range(0, 5)}
    return offsets


def _explained_date(date: DateMention, evidence: list[DateMention], offsets: set[int]) -> bool:
    """A date the evidence gives, or one that follows from an evidence date by a stated duration
    ("delivered 9/9, returnable for 8 days": 9/17)."""
    for known in evidence:
        year = known.year or date.year or 2024
        try:
            base = _date(year, known.month, known.day)
            stated = _date(date.year or year, date.month, date.day)
        except ValueError:
            continue
        if abs((stated - base).days) in offsets:
            return True
    return False


@dataclass
class Unsupported:
    """What the checks found the evidence does not support: ``problems`` they read completely (an
    unknown ASIN, an invented code, an order fact the page contradicts), ``hints`` they could not
    settle (a title or amount or date they cannot place), and what they verified."""

    problems: list[str] = field(default_factory=list)
    order_contradictions: list[str] = field(default_factory=list)
    codes: list[str] = field(default_factory=list)  # invented coupon or promo codes
    hints: list[str] = field(default_factory=list)
    verified: list[str] = field(default_factory=list)


def unsupported_claims(case: TestCase, reading: Reading, amounts: AmountReport,
                       silent_policies: list[PolicyNumber]) -> Unsupported:
    found = Unsupported()
    evidence = evidence_texts(case, reading)
    evidence_norm = normalize("\n".join(evidence))
    nfkc = unicodedata.normalize("NFKC", reading.text)
    catalog_asins = set(reading.by_asin)
    for asin in dict.fromkeys(ASIN_RE.findall(nfkc)):
        if case.catalog and asin not in catalog_asins and asin not in case.query:
            found.problems.append(f"ASIN {asin} is not in the catalog")
        else:
            found.verified.append(f"ASIN {asin}")
    found.hints += [f"title {t!r} is not in the catalog" for t in _unknown_titles(case, reading)]
    found.hints += _invented_volumes(case, reading)
    if reading.products:
        found.verified.append(f"{len(reading.products)} catalog product(s) named")
    orders = order_facts(case, reading)
    order_ids = {loose_key(i) for i in re.findall(r"\S+", " ".join(orders.verified))}
    plain_codes = list(CODE_RE.finditer(nfkc))
    covered = {i for c in plain_codes for i in range(c.start(), c.end())}
    codes = plain_codes + [m for m in _NAMED_CODE.finditer(nfkc) if m.start(1) not in covered]
    for match in codes:
        code = match.group(match.lastindex or 0)
        if ASIN_RE.fullmatch(code) or loose_key(code) in order_ids or any(code in v for v in orders.verified + orders.contradictions):
            continue
        if loose_key(code) in loose_key(evidence_norm):
            found.verified.append(f"code {code}")
        elif _CODE_CUE.search(normalize(nfkc[max(0, match.start() - 30):match.end() + 20])):
            found.codes.append(f"code {code!r} is presented as one and appears nowhere in the evidence")
        else:
            found.hints.append(f"{code!r} appears nowhere in the evidence")
    found.order_contradictions += orders.contradictions
    found.verified += orders.verified
    evidence_dates = [d for text in evidence for d in find_dates(text)]
    offsets = _date_offsets(case, reading.text)
    for date in find_dates(reading.text):
        shown = reading.norm[date.start:date.end]
        if any(date.same_day(k) for k in evidence_dates):
            found.verified.append(f"date {shown}")
        elif _explained_date(date, evidence_dates, offsets):
            found.verified.append(f"date {shown} (follows from a date of the evidence)")
        elif not any(shown in c for c in orders.contradictions):
            found.hints.append(f"date {shown!r} is neither in the evidence nor follows from it")
    evidence_values = {q.value for text in evidence for q in extract_quantities(text)}
    given = given_values(case)
    for claim in silent_policies:
        if claim.low not in evidence_values and claim.high not in evidence_values \
                and (claim.unit, round(claim.low, 3)) not in given and (claim.unit, round(claim.high, 3)) not in given:
            found.hints.append(f"{claim.text!r} ({claim.topic}) is not supported by the knowledge or the page")
    found.hints += [text for _, text in amounts.unexplained]
    found.verified += amounts.explained
    return found


def _no_hallucination(case: TestCase, reading: Reading, amounts: AmountReport,
                      silent_policies: list[PolicyNumber], report: CheckReport) -> None:
    found = unsupported_claims(case, reading, amounts, silent_policies) if has_evidence(case) else Unsupported()
    for rule, details in (("order_contradiction", found.order_contradictions), ("unsupported_code", found.codes)):
        for detail in details:
            report.hard_failures.append(HardFailure(rule=rule, dimension=NAME, sub_score="no_hallucination", detail=detail))
    problems = found.order_contradictions + found.codes + found.problems
    hints = [f"to verify: {h}" for h in found.hints]
    if problems:
        report.set("no_hallucination", UNSUPPORTED_FACTOR ** len(problems), *problems)
        report.findings.append("unsupported: " + "; ".join(problems))
        report.findings.extend(hints)
    elif checkable(case, reading.text) or hints:
        report.ask_judge("no_hallucination", *(["verified against the evidence: " + ", ".join(found.verified)]
                                               if found.verified else []), *hints)
    else:
        report.skip("no_hallucination", "the answer asserts nothing the evidence can speak to")


def check(case: TestCase, rubric: "Rubric") -> CheckReport:
    report = CheckReport()
    reading = Reading(case)
    _fact_coverage(case, reading.text, report)
    amounts = _price_accuracy(case, reading, report)
    _availability_accuracy(reading, report)
    claims = policy_numbers(reading.text, conversation_topic(case), shopper_numbers=shopper_numbers(case))
    claims = [c for c in claims if c.unit != "date"]
    silent = _policy_accuracy(case, claims, report)
    _attribute_accuracy(reading, report)
    _no_hallucination(case, reading, amounts, silent, report)
    return report
