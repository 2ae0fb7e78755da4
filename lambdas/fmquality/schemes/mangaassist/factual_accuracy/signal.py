"""Grounding: how much of what an answer asserts the evidence carries (factual_accuracy).

The evidence of a case is its catalog records (each written out as one sentence), its retrieved
chunks, its page context and the conversation itself (the shopper's words and earlier turns). Each
claim sentence of the answer is aligned with the evidence:

- specifics (numbers with their units, dates, codes) must appear in the evidence; each one that does
  not halves the score, so one invented number fails the item's floor;
- prose support is the share of the sentence's word pairs (in order) found in the evidence, or, when
  higher, of its content words found in the best single evidence sentence; the mean over claim
  sentences. Prose the evidence does not carry costs at most a third of the score (``PROSE_WEIGHT``): a
  plot summary the catalog does not hold is an embellishment, an invented price a failure.

This is the signal measured against human ratings on QAGS-CNNDM (README, "Calibration").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from fmquality.language.alignment import (
    Unit,
    checkable,
    held_to_evidence,
    match_fact,
    pair_precision,
    precision,
    prose_evidence,
    read_units,
    significant_numbers,
    subject_tokens,
)
from fmquality.language.stock import COMPATIBLE_STOCK
from fmquality.claims.exclusions import granted_despite
from fmquality.schemes.mangaassist.factual_accuracy.attributes import VOLUME_COUNT
from fmquality.claims.reading import reading_of
from fmquality.claims.policy import conversation_topic, policy_numbers, shopper_numbers
from fmquality.claims.commerce import item_prices, price_claims, stock_claims
from fmquality.domain.case import TestCase
from fmquality.scoring.signal import Abstain, Signal, SignalFn
from fmquality.language.negation import is_conditional
from fmquality.language.text import normalize, segment_spans
from fmquality.language.numbers import extract_quantities, find_dates, same_price

if TYPE_CHECKING:
    from fmquality.config.rubric import Rubric

PROSE_WEIGHT = 0.35
UNSUPPORTED_FACTOR = 0.5


def _evidence_numbers(case: TestCase) -> tuple[set[float], list]:
    """Every number and date the case gives: catalog fields, knowledge, page, the conversation."""
    texts = [*case.retrieved_chunks, case.page_context.model_dump_json(exclude_none=True), case.query,
             *(m.content for m in case.conversation_history), case.reference_response or ""]
    values = {q.value for t in texts for q in extract_quantities(t)}
    reading = reading_of(case)
    for item in reading.items(reading.in_play):
        values |= {v for v in item_prices(item)}
        values |= {float(v) for v in (item.model_extra or {}).values() if isinstance(v, (int, float))}
        values |= {q.value for t in (item.title, item.title_ja or "") for q in extract_quantities(t)}
    dates = [d for t in texts for d in find_dates(t)]
    return values, dates


def unsupported_specifics(claim: Unit, values: set[float], dates: list) -> list[str]:
    out = []
    written = {v for k, v in claim.numbers if k == "as written"}
    for kind, value in sorted(significant_numbers(claim)):  # sorted: the same evidence on every run
        if value not in values and not written & values:
            out.append(f"{value:g} ({kind})")
    for date in claim.dates:
        if not any(date.same_day(d) for d in dates):
            out.append(f"date {date.month}/{date.day}")
    return out


# Perks a store may promise: extras, gifts, credits, each named. One the evidence never mentions is
# invented. A category word alone (特典, "extras") names no perk: the answer may be listing the
# evidence's own extras under it; "a free gift message" is a service said to cost nothing, not a gift.
PERKS = re.compile(r"\b(?:bonus (?:item|gift|print|card|booklet|chapter|content|cover)|freebie|free gift(?! (?:message|note|wrap|wrapping|receipt|option))|apology coupon|art print|poster|bookmark|"
                   r"postcard|shikishi|sticker|acrylic stand|tote bag|first[- ]print(?:ing)? (?:bonus|extra)|exclusive (?:cover|extra|"
                   r"print|booklet|card)|art ?book)\b|おまけ|画集|ノベルティ|ブックカバー|しおり|栞|ポストカード|色紙|ステッカー|"
                   r"アクリルスタンド|クリアファイル|先着\d+名")


# Offers a store makes in the knowledge when it makes them at all (a coupon, store credit, points): one
# the answer promises the shopper ("we'll add a $5 coupon", ポイントを付与します) when no evidence of
# the case speaks of that kind of offer is invented.
OFFERS = re.compile(r"\b(?:coupon|store credit|credit|voucher|gift card|promo code|discount code)s?\b|クーポン|割引コード|ポイント")
_PROMISE = re.compile(r"\b(?:we'?ll|we will|i'?ll|i will|we'?ve|i'?ve|we have|i have)\s+(?:also\s+|just\s+|gladly\s+)?"
                      r"(?:add|added|give|given|send|sent|issue|issued|apply|applied|credit|credited|include|throw in)\b"
                      r"|\byou'?ll (?:also )?(?:get|receive)\b|差し上げ|お送りいたします|お送りします|付与いたします|付与します|進呈")


def invented_perk(case: TestCase, text: str) -> str | None:
    """A perk the answer promises (a bonus, a gift, a coupon, a credit) that no evidence of the case
    mentions."""
    evidence = normalize(" ".join([*case.retrieved_chunks, case.page_context.model_dump_json(exclude_none=True),
                                   case.query, *(m.content for m in case.conversation_history),
                                   *(i.model_dump_json() for i in case.catalog)]))
    norm = normalize(text)
    for match in PERKS.finditer(norm):
        if match.group(0) not in evidence:
            return f"promises {match.group(0)!r}, which no evidence of the case mentions"
    for start, end in segment_spans(norm):
        sentence = norm[start:end]
        offer = OFFERS.search(sentence)
        if offer and _PROMISE.search(sentence) and not OFFERS.search(evidence) and not is_conditional(sentence):
            return f"promises {offer.group(0)!r} ({sentence.strip()[:60]!r}); no evidence of the case speaks of any"
    return None


# Of the checks' hints, the kind that, measured on the labelled sets, marks defective answers only
# (README, "The offline judge"): a date that neither the evidence gives nor follows from it by a
# stated duration. (A policy number the knowledge does not give was one too, until a hold-out showed
# it misread durations of other things: "valid for a month".)
DECISIVE_HINTS = re.compile(r"to verify: date '.*' is neither in the evidence nor follows from it")


def from_hints(hints: list[str] | tuple) -> Signal | None:
    """A finding the checks left to the judge and the offline judge settles: see ``DECISIVE_HINTS``."""
    found = [h for h in hints if DECISIVE_HINTS.search(h)]
    return Signal(0.0, [f"the checks found: {h.removeprefix('to verify: ')}" for h in found], finding=True) if found else None


def grounding(case: TestCase, text: str) -> Signal:
    perk = invented_perk(case, text) if case.retrieved_chunks or case.catalog else None
    if perk:
        return Signal(0.0, [perk], finding=True)
    claims = checkable(case, text)
    if not claims:
        raise Abstain("the answer asserts nothing the evidence can speak to")
    evidence = prose_evidence(case)
    subject = subject_tokens(case)
    values, dates = _evidence_numbers(case)
    pairs = frozenset().union(*(u.pairs for u in evidence)) if evidence else frozenset()
    supports: list[float] = []
    specifics: list[str] = []
    read = 0  # numbers and dates compared with the evidence
    weakest: tuple[float, str] = (2.0, "")
    for claim in claims:
        specifics += unsupported_specifics(claim, values, dates)
        read += len(significant_numbers(claim)) + len(claim.dates)
        if not held_to_evidence(claim, evidence, subject):
            continue
        best = max(precision(claim, e) for e in evidence)
        in_order = pair_precision(claim, pairs)
        support = best if in_order is None else max(in_order, best * in_order ** 0.5)
        supports.append(support)
        weakest = min(weakest, (support, claim.text.strip()[:80]))
    if not supports and not read:
        raise Abstain("no claim held to the evidence and no specific to check")
    if specifics and not (case.retrieved_chunks or case.page_context.model_dump(exclude_none=True)
                          or reading_of(case).in_play):
        # Nothing in the case could carry a number the shopper did not give (25 degrees in Tokyo
        # today, a training cut-off year): it is made up, whatever its role. A catalog snapshot's
        # products that the conversation never names are the store's shelf, not evidence.
        return Signal(0.0, ["the case carries no product in play, knowledge or page, yet the answer states: "
                            + ", ".join(specifics)], finding=True)
    prose = sum(supports) / len(supports) if supports else 1.0  # only specifics were checked
    score = UNSUPPORTED_FACTOR ** len(specifics) * (1 - PROSE_WEIGHT * (1 - prose))
    why = [f"{len(claims)} checkable claim sentence(s); {read} number(s) and date(s) checked against the whole case, "
           f"{read - len(specifics)} found in it"]
    if supports:
        why.append(f"{len(supports)} held to the knowledge, which carries {prose:.0%} of their wording on average")
    if weakest[0] < 0.5:
        why.append(f"least supported: {weakest[1]!r} ({weakest[0]:.0%})")
    if specifics:
        why.append("specifics not in the evidence: " + ", ".join(specifics))
    return Signal(score, why)


def fact_coverage(case: TestCase, text: str) -> Signal:
    units = read_units(text)
    matches = [match_fact(fact, units) for fact in case.expected_facts]
    if not matches:
        raise Abstain("no expected facts")
    values = [1.0 if m.status == "covered" else 0.0 if m.status == "contradicted" else m.score for m in matches]
    return Signal(sum(values) / len(values), [m.evidence for m in matches])


def loose_prices(case: TestCase) -> Signal:
    """Prices the checks could not tie to one product: each must be the price of some product in play."""
    reading = reading_of(case)
    loose = [c for c in price_claims(reading) if c.product_price and not c.items]
    if not loose:
        raise Abstain("no price left to compare")
    in_play = reading.items(reading.in_play)
    ok = [c for c in loose if any(same_price(c.price.amount, p, c.price.currency, c.price.approx)
                                  for i in in_play if i.currency == c.price.currency for p in item_prices(i))]
    return Signal(len(ok) / len(loose), [f"{c.price.text}: {'a' if c in ok else 'no'} catalog price in play" for c in loose])


def loose_statuses(case: TestCase) -> Signal:
    reading = reading_of(case)
    loose = [c for c in stock_claims(reading) if not c.items]
    if not loose:
        raise Abstain("no stock status left to compare")
    products = reading.items(reading.products or reading.in_play)
    ok = [c for c in loose if any(i.availability == c.status or (c.status, i.availability) in COMPATIBLE_STOCK
                                  for i in products)]
    return Signal(len(ok) / len(loose), [f"{c.status}: {'the status of' if c in ok else 'the status of none of'} "
                                         "the products in play" for c in loose])


def policy_numbers_grounded(case: TestCase, text: str) -> Signal:
    """Policy numbers the knowledge gives no number for: each must appear somewhere in the evidence."""
    claims = [c for c in policy_numbers(text, conversation_topic(case), shopper_numbers=shopper_numbers(case))
              if c.unit != "date"]
    if not claims:
        raise Abstain("no policy number to compare")
    evidence = [*case.retrieved_chunks, case.page_context.model_dump_json(exclude_none=True)]
    # In the claims' units: durations in days ("48時間" is 2), the rest as written.
    quantities = [q for t in evidence for q in extract_quantities(t)]
    values = {q.value for q in quantities} | {d for q in quantities if (d := q.in_days()) is not None} \
        | {d.day for t in evidence for d in find_dates(t)}
    supported = [c for c in claims if c.low in values or c.high in values]
    return Signal(len(supported) / len(claims),
                  [f"{c.text} ({c.topic}): {'in' if c in supported else 'not in'} the evidence" for c in claims])


def invented_series_length(case: TestCase, text: str) -> str | None:
    """A series' length stated as such ("complete in 10 volumes", 全10巻) with a number that no
    evidence of the case carries (the attribute check compares it when the catalog gives a count)."""
    counts = list(VOLUME_COUNT.finditer(re.sub(r"[*_]", "", normalize(text))))
    if not counts:
        return None  # most answers: the case's evidence numbers are read once, by grounding
    values, _dates = _evidence_numbers(case)
    for match in counts:
        stated = int(next(g for g in match.groups() if g))
        if float(stated) not in values:
            return f"states the series' length ({match.group(0)!r}), which no evidence of the case gives"
    return None


def no_hallucination_signal(case: TestCase, rubric: "Rubric", hints: Sequence[str]) -> Signal:
    """A decisive hint of the checks (``DECISIVE_HINTS``), a policy granted in the one case the
    knowledge excludes (``claims.exclusions``), else the grounding of the answer."""
    found = granted_despite(case) or invented_series_length(case, case.response or "")
    if found:
        return Signal(0.0, [found], finding=True)
    return from_hints(hints) or grounding(case, case.response or "")


# The offline judge's reading of each sub-score the checks may leave open (attribute_accuracy: none).
SIGNALS: dict[str, SignalFn] = {
    "fact_coverage": lambda case, rubric, hints: fact_coverage(case, case.response or ""),
    "no_hallucination": no_hallucination_signal,
    "price_accuracy": lambda case, rubric, hints: loose_prices(case),
    "availability_accuracy": lambda case, rubric, hints: loose_statuses(case),
    "policy_accuracy": lambda case, rubric, hints: policy_numbers_grounded(case, case.response or ""),
}
