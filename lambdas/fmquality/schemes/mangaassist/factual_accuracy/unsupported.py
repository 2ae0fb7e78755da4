"""What the evidence does not support (no_hallucination): an unknown ASIN, an invented coupon or promo
code, an order fact the page contradicts (each read completely: set low, one fails the item), and
what the checks cannot place (a title no catalog item carries, a volume number the listings do not
have, a date or amount that neither the evidence gives nor follows from it): hints for the judge.
When they find nothing, the judge decides, with what they verified as a hint."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from datetime import date as _date

from fmquality.claims.commerce import AmountReport
from fmquality.claims.orders import order_facts
from fmquality.claims.policy import PolicyNumber, given_values
from fmquality.claims.reading import Reading
from fmquality.domain.case import TestCase
from fmquality.domain.scores import HardFailure
from fmquality.language.alignment import checkable
from fmquality.language.numbers import DateMention, extract_prices, extract_quantities, find_dates
from fmquality.language.text import loose_key, normalize
from fmquality.schemes.mangaassist.factual_accuracy import DIMENSION
from fmquality.scoring.plan import CheckReport

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
            if days is not None and days <= 366:  # up to a year ("1年後の同日まで有効")
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


def no_hallucination(case: TestCase, reading: Reading, amounts: AmountReport,
                      silent_policies: list[PolicyNumber], report: CheckReport) -> None:
    found = unsupported_claims(case, reading, amounts, silent_policies) if has_evidence(case) else Unsupported()
    for rule, details in (("order_contradiction", found.order_contradictions), ("unsupported_code", found.codes)):
        for detail in details:
            report.hard_failures.append(HardFailure(rule=rule, dimension=DIMENSION, sub_score="no_hallucination", detail=detail))
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
