"""Claims an answer makes, each tied to what it is about.

The checks (``dimensions/*``) and the offline judge read answers through this module so that a
number is only ever compared with the catalog or the knowledge when it was attributed: a price to
the product it describes, a stock status to its product, a duration or percentage to the store
policy it states (return window, refund time, free-shipping threshold, ...), with its negation and
its conditions. A number the shopper gave ("I opened it 10 days ago") or a reference point ("30
days from delivery" names delivery as the start, not the policy) is not a claim.

The policy-topic and condition words below are the general vocabulary of an online store's
policies (returns, refunds, exchanges, cancellations, shipping, delivery, payment, discounts,
points, pre-orders) in English and Japanese; they name what a number is about and were not taken
from any dataset line.
"""

from __future__ import annotations

import json
import re
import unicodedata
from bisect import bisect_right
from collections import defaultdict
from dataclasses import dataclass, field
from functools import cached_property, lru_cache

from fmquality.language.catalog_index import Mention, index_for, products_in_play
from fmquality.domain.case import CatalogItem, TestCase
from fmquality.claims.money import DISCOUNT_CONTEXT, item_prices, role_of, table_roles, written_arithmetic
from fmquality.language.text import (
    ENGLISH_STOPWORDS,
    DateMention,
    Price,
    Quantity,
    availability_mentions,
    extract_prices,
    extract_quantities,
    find_dates,
    has_japanese,
    is_list_line,
    japanese_share,
    list_items,
    loose_key,
    normalize,
    number_value,
    same_price,
    segment_spans,
)

# --------------------------------------------------------------------------------------------------
# Sentences: negation and conditions
# --------------------------------------------------------------------------------------------------

_CONTRACTIONS = (("can't", "can not"), ("cannot", "can not"), ("won't", "will not"), ("n't", " not"))
_NEGATION_EN = re.compile(r"\b(not|no|never|none|nothing|neither|nor|without|no longer)\b")
_NEGATION_JA = re.compile(r"ません|ない(?!よう)|なかった|ず[、。に]|ずに|不可|できかね|お断り|なし(?![か])")
_CONDITION = re.compile(
    r"\b(if|only if|as long as|as soon as|provided|once|when|after|before|until)\b"
    r"|場合|なら|たら|ければ|次第|ただし"
)


def expand_contractions(norm: str) -> str:
    for short, long in _CONTRACTIONS:
        norm = norm.replace(short, long)
    return norm


def negation_count(norm: str) -> int:
    """Negations in a (normalized) clause: "not", "n't", "never", "no", ません, ない, ず..."""
    expanded = expand_contractions(norm)
    return len(_NEGATION_EN.findall(expanded)) + len(_NEGATION_JA.findall(norm))


def is_negated(norm: str) -> bool:
    return negation_count(norm) % 2 == 1


EXCEPTION_CLAUSE = re.compile(r"\bunless\b|\bexcept\b|を除き|でない限り|場合を除")


def is_conditional(norm: str) -> bool:
    """A claim made under a condition ("if it arrived damaged, ..."). What follows "unless" is an
    exception to the claim, not a condition of it: "opened items cannot be returned unless damaged"
    is a plain refusal."""
    return _CONDITION.search(EXCEPTION_CLAUSE.split(norm)[0]) is not None


def is_question(norm: str) -> bool:
    return norm.rstrip().endswith(("?", "？")) or re.search(r"(ですか|ますか|でしょうか)[。？?]?\s*$", norm) is not None


# --------------------------------------------------------------------------------------------------
# An answer read once: sentences, product mentions, attribution
# --------------------------------------------------------------------------------------------------

_BACK_REFERENCE = re.compile(
    r"\b(it|it's|its|this one|that one|this title|this volume|this book|this series|this set|your copy|the book|"
    r"the volume|the series|the set)\b|こちら|この商品|この作品|この本|本作|同作|その作品|それ"
)
_COLLECTIVE = re.compile(r"\b(all|both|every|each of|all of them|they are|they're)\b|すべて|全て|どちらも|いずれも|どれも")


def text_currency(text: str, locale_japanese: bool = False) -> str:
    """The currency a text deals in: the one its prices use, else JPY for Japanese text."""
    currencies = {p.currency for p in extract_prices(text)}
    if len(currencies) == 1:
        return currencies.pop()
    return "JPY" if japanese_share(text) > 0.5 or (locale_japanese and not text.strip()) else "USD"


def _title_words(item: CatalogItem) -> set[str]:
    """The words of a listing's titles: English words, volume numbers, Japanese title parts."""
    words: set[str] = set()
    for title in (item.title, item.title_ja or ""):
        norm = normalize(title)
        volume = re.search(r"(\d+)\s*[)）]?\s*$", norm)  # the number a title ends on is its volume
        words |= {w for w in re.findall(r"[a-z0-9']+|[^\sa-z0-9'!?,.:;()（）・/&-]+", norm)
                  if len(w) >= 2 and not w.isdigit()}
        words |= {volume.group(1)} if volume else set()
    return {w for w in words if w not in ENGLISH_STOPWORDS} - {"vol", "vols", "set", "edition"}


def distinct_words(items: list[CatalogItem]) -> dict[str, set[str]]:
    """Per listing, the title words no other of ``items`` has (特装版, "Collector's Edition", "12")."""
    own = {i.asin: _title_words(i) for i in items}
    return {asin: words - set().union(*(w for a, w in own.items() if a != asin)) for asin, words in own.items()}


def told_apart(items: list[CatalogItem], sentence: str) -> list[CatalogItem]:
    """Of listings that share a name (two editions, two volumes), the one whose own title words the
    sentence (normalized) uses; all of them when it uses none or several."""
    if len(items) < 2:
        return items
    distinct = distinct_words(items)
    hits = [i for i in items if any(_word_in(w, sentence) for w in distinct[i.asin])]
    return hits if len(hits) == 1 else items


def _word_position(word: str, text: str) -> int | None:
    """Where a title word stands in a normalized text (a number as a volume: "vol. 12", 「12巻」)."""
    if has_japanese(word):
        found = text.find(word)
        return None if found < 0 else found
    if word.isdigit():
        match = re.search(rf"(?:vol(?:ume)?\.?\s*|#|第\s*)0*{word}(?!\d)|(?<!\d){word}\s*巻", text)
    else:
        match = re.search(rf"(?<![a-z0-9']){re.escape(word)}(?![a-z0-9'])", text)
    return match.start() if match else None


def _word_in(word: str, sentence: str) -> bool:
    return _word_position(word, sentence) is not None


class Reading:
    """One text of a case (the answer, by default) read once: normalized text, sentence and list-line
    spans, catalog products named, and which product a statement at a position is about."""

    def __init__(self, case: TestCase, text: str | None = None) -> None:
        self.case = case
        self.text = case.response or "" if text is None else text
        self.norm = normalize(self.text)
        self.spans = segment_spans(self.text)
        self.by_asin = case.catalog_by_asin()
        self.currency = text_currency(self.text, case.is_japanese)
        self.mentions: list[Mention] = index_for(case.catalog).mentions(self.text, self.currency) if case.catalog else []

    @cached_property
    def focus(self) -> str | None:
        """The product the shopper asked about: the one "the second one" points at, else the one the
        query names, else the page's product."""
        reference = ordinal_reference(self.case)
        if reference is not None and len(reference.target.asins) == 1:
            return reference.target.asins[0]
        named = index_for(self.case.catalog).named(self.case.query) if self.case.catalog else []
        if len(named) == 1:
            return named[0]
        return self.case.page_context.current_asin if self.case.page_context.current_asin in self.by_asin else None

    @cached_property
    def in_play(self) -> list[str]:
        """The products the case concerns (named anywhere in it, on the page or expected): the rest
        of a catalog snapshot is the store's shelf, not part of this conversation."""
        return products_in_play(self.case) if self.case.catalog else []

    @cached_property
    def products(self) -> list[str]:
        """ASINs named, in order of first mention."""
        return list(dict.fromkeys(a for m in self.mentions for a in m.asins))

    def sentence(self, index: int) -> str:
        start, end = self.spans[index]
        return self.norm[start:end]

    @cached_property
    def _span_starts(self) -> list[int]:
        return [start for start, _end in self.spans]

    def _span_holding(self, pos: int) -> int | None:
        """The sentence whose span holds ``pos`` (spans are ordered and disjoint: found by bisection,
        so reading stays linear in the answer's length)."""
        index = bisect_right(self._span_starts, pos) - 1
        return index if index >= 0 and pos < self.spans[index][1] else None

    def sentence_of(self, pos: int) -> int:
        index = self._span_holding(pos)
        return len(self.spans) - 1 if index is None else index

    @cached_property
    def _mentions_by_sentence(self) -> dict[int, list[Mention]]:
        grouped: dict[int, list[Mention]] = {}
        for mention in self.mentions:
            index = self._span_holding(mention.start)
            if index is not None:
                grouped.setdefault(index, []).append(mention)
        return grouped

    def mentions_in(self, index: int) -> list[Mention]:
        return self._mentions_by_sentence.get(index, [])

    def items(self, asins: tuple[str, ...] | list[str]) -> list[CatalogItem]:
        return [self.by_asin[a] for a in asins if a in self.by_asin]

    def attach(self, pos: int) -> list[CatalogItem]:
        """The catalog item(s) a statement at ``pos`` is about: the nearest product named before it
        in the same sentence or list line (else the nearest after it); for a card's follow-up line
        the product of the line above; for a sentence that refers back ("it", "this volume", "こちら")
        the product of the sentence before; for "all"/"both" every product named; else the only
        product in play, or the product on the page. Several items when the name is shared by
        several listings (two editions of one title)."""
        if not self.spans:
            return []
        index = self.sentence_of(pos)
        inside = self.mentions_in(index)
        if inside:
            before = [m for m in inside if m.end <= pos]
            nearest = max(before, key=lambda m: m.end) if before else min(inside, key=lambda m: m.start)
            return self._told_apart(self.items(nearest.asins), index)
        collective, refers_back = self._sentence_cues(index)
        if collective and len(self.products) > 1:
            return self.items(self.products)
        if refers_back and self.focus in self.products:
            return self.items([self.focus])  # "it" is most likely what the shopper asked about
        for back in range(1, 7):
            if index - back < 0:
                break
            earlier = self.mentions_in(index - back)
            card = self._card_line(index, index - back)
            if earlier and (refers_back and back <= 2 or card):
                return self._told_apart(self.items(earlier[-1].asins), index)
            # A card runs on over its lines ("- Premise: ...", "- Vol. 1: $12.99") up to its header.
            if earlier or not (back <= 2 or self._card_line(index - back + 1, index - back)):
                break
        named = self._told_apart(self.items(self.in_play), index)
        if len(named) == 1 and len(self.in_play) > 1:
            return named  # "the special edition is a pre-order": the one listing that word names
        if len(self.products) == 1:
            return self.items(self.products)
        if not self.products:
            current = self.by_asin.get(self.case.page_context.current_asin or "")
            if current is not None:
                return [current]
            if len(self.in_play) == 1:
                return self.items(self.in_play)
        return []

    # Per sentence, read once however many amounts and statuses it holds (a sentence may be long).
    @cached_property
    def _cue_cache(self) -> dict[int, tuple[bool, bool]]:
        return {}

    @cached_property
    def _told_apart_cache(self) -> dict[tuple[tuple[str, ...], int], list[CatalogItem]]:
        return {}

    def _sentence_cues(self, index: int) -> tuple[bool, bool]:
        """Whether sentence ``index`` speaks of every product ("both", "all") and refers back ("it")."""
        if index not in self._cue_cache:
            sentence = self.sentence(index)
            self._cue_cache[index] = (bool(_COLLECTIVE.search(sentence)), bool(_BACK_REFERENCE.search(sentence)))
        return self._cue_cache[index]

    def _told_apart(self, items: list[CatalogItem], index: int) -> list[CatalogItem]:
        key = (tuple(i.asin for i in items), index)
        if key not in self._told_apart_cache:
            self._told_apart_cache[key] = told_apart(items, self.sentence(index))
        return list(self._told_apart_cache[key])

    def _card_line(self, index: int, header: int) -> bool:
        """Whether sentence ``index`` continues the product card that starts at sentence ``header``: an
        indented line, or a plain line under a list line ("1. **Gyo**" / "Price: $10.00")."""
        start = self.spans[index][0]
        line_start = self.norm.rfind("\n", 0, start) + 1
        if line_start != start and self.norm[line_start:start].strip():
            return False  # a second sentence on the same line, not a card line
        line = self.norm[start:self.spans[index][1]]
        header_line = self.norm[self.spans[header][0]:self.spans[header][1]].strip("\n")
        return line[:1].isspace() or (is_list_line(header_line) and not is_list_line(line.strip("\n")))

    def attach_one_market(self, pos: int, currency: str | None = None) -> list[CatalogItem]:
        """Like ``attach``; when a title is sold in both markets, the listing in the sentence's
        currency (or ``currency``), else the text's."""
        items = self.attach(pos)
        if len({i.currency for i in items}) < 2:
            return items
        start, end = self.spans[self.sentence_of(pos)]
        stated = {p.currency for p in extract_prices(self.norm[start:end])}
        market = currency or (stated.pop() if len(stated) == 1 else self.currency)
        return [i for i in items if i.currency == market] or items


# --------------------------------------------------------------------------------------------------
# Prices and stock statuses of products
# --------------------------------------------------------------------------------------------------

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


def shopper_amounts(case: TestCase) -> set[tuple[str, float]]:
    """(currency, amount) of every amount in the shopper's own turns."""
    texts = [case.query, *(m.content for m in case.conversation_history if m.role == "user")]
    return {(p.currency, round(p.amount, 2)) for t in texts for p in extract_prices(t)}


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
                                      for i in items for p in item_prices(i)) \
                and DISCOUNT_CONTEXT.search(reading.sentence(reading.sentence_of(price.start))):
            role = "sale"
        out.append(PriceClaim(price, items, role))
    return out


def price_agrees(claim: PriceClaim) -> bool:
    return any(same_price(claim.price.amount, p, claim.price.currency, claim.price.approx)
               for item in claim.items for p in item_prices(item))


@dataclass(frozen=True)
class StockClaim:
    status: str
    position: int
    items: tuple[CatalogItem, ...]
    collective: bool = False  # "both are in stock": said of every item, not of one of them


# Stated vs catalog statuses that are not a contradiction ("only a few left" of an in-stock item,
# "not available yet" of a pre-order).
COMPATIBLE_STOCK = {("limited", "in_stock"), ("in_stock", "limited"), ("out_of_stock", "preorder")}


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
    for status, pos in availability_mentions(reading.text):
        index = reading.sentence_of(pos)
        sentence = reading.sentence(index)
        if _CONDITION.search(reading.norm[max(reading.spans[index][0], pos - 25):pos]):
            continue  # "it ships when it is back in stock": a condition, not the item's status
        if _COLLECTIVE.search(sentence):
            named = {a for m in reading.mentions_in(index) for a in m.asins}
            named |= {i.asin for i in listed if any(_word_in(w, sentence) for w in apart.get(i.asin, ()))}
            if len(named) >= 2:
                out.append(StockClaim(status, pos, tuple(reading.items(tuple(named))), collective=True))
                continue
        out.append(StockClaim(status, pos, tuple(reading.attach_one_market(pos))))
    return out


def stock_agrees(claim: StockClaim) -> bool:
    agrees = [i.availability == claim.status or (claim.status, i.availability) in COMPATIBLE_STOCK for i in claim.items]
    return all(agrees) if claim.collective else any(agrees)


# --------------------------------------------------------------------------------------------------
# Policy numbers: a duration, percentage or amount tied to the policy it states
# --------------------------------------------------------------------------------------------------

POLICY_TOPICS: dict[str, tuple[str, ...]] = {
    # Longer, more specific topics first: "free shipping" before "shipping".
    "free_shipping": ("free shipping", "ships free", "shipping is free", "送料無料", "送料が無料"),
    "shipping_fee": ("shipping fee", "shipping cost", "delivery fee", "shipping charge", "送料"),
    "refund": ("refund", "money back", "reimburse", "返金", "払い戻"),
    "return": ("return", "send it back", "send back", "返品", "返送"),
    "exchange": ("exchange", "replacement", "replace", "交換"),
    "cancel": ("cancel", "キャンセル", "取り消"),
    "payment": ("payment", "pay ", "pay.", "paid", "支払", "入金", "決済", "振込"),
    "points": ("point", "ポイント", "還元"),
    "discount": ("% off", "percent off", " off", "discount", "sale", "coupon", "割引", "オフ", "引き", "セール", "クーポン"),
    "delivery": ("deliver", "arrive", "arrival", "eta", "get to you", "reach you", "お届け", "到着", "配達", "届"),
    "shipping": ("ship", "dispatch", "send out", "発送", "出荷"),
    "preorder": ("pre-order", "preorder", "予約"),
}
# Conditions that make two numbers for one policy both true, mapped to one canonical condition.
CONDITIONS = {
    "unopened": "unopened", "sealed": "unopened", "unread": "unopened", "未開封": "unopened", "未使用": "unopened",
    "opened": "opened", "開封": "opened",
    "damaged": "damaged", "defective": "damaged", "torn": "damaged", "misprint": "damaged", "破損": "damaged",
    "不良": "damaged", "汚損": "damaged", "wrong item": "damaged", "誤配送": "damaged",
    "digital": "digital", "ebook": "digital", "電子": "digital",
    "international": "international", "overseas": "international", "海外": "international",
    "express": "express", "速達": "express", "お急ぎ": "express", "standard": "standard", "通常配送": "standard",
    "member": "member", "prime": "member", "会員": "member",
}
_POLICY_UNITS = {"day", "week", "month", "year", "hour", "percent", "usd", "jpy"}
_REFERENCE_BEFORE = re.compile(r"(from|of|after|since|upon|following)\s+(the\s+|your\s+|its\s+)?$")
# The shopper's own circumstance, not a policy: "10 days ago", "10日前に", "for 3 days now".
_ELAPSED_AFTER = re.compile(r"^\s*(ago|back|earlier|前に|前|経)")


def _reference_point(norm: str, start: int, end: int) -> bool:
    return bool(_REFERENCE_BEFORE.search(norm[:start])) or norm[end:end + 1] == "後" or norm[end:end + 2] == "から"


_TOPIC_PATTERNS = [(topic, re.compile(re.escape(word) if has_japanese(word) or not word[0].isalpha()
                                       else rf"(?<![a-z]){re.escape(word)}"))
                   for topic, words in POLICY_TOPICS.items() for word in words]


@lru_cache(maxsize=16384)
def topic_words(norm: str) -> tuple[tuple[int, str], ...]:
    """(position, topic) of each policy word that names a policy (reference points left out)."""
    out: list[tuple[int, str]] = []
    taken: list[tuple[int, int]] = []
    for topic, pattern in _TOPIC_PATTERNS:
        for match in pattern.finditer(norm):
            if any(s <= match.start() < e for s, e in taken):
                continue
            taken.append((match.start(), match.end()))
            if not _reference_point(norm, match.start(), match.end()):
                out.append((match.start(), topic))
    return tuple(sorted(out))


def conditions_in(norm: str) -> frozenset[str]:
    found = set()
    for word, canonical in CONDITIONS.items():
        # "unopened" must not also count as "opened", nor 未開封 as 開封.
        if re.search(rf"(?<![a-z未]){re.escape(word)}", norm):
            found.add(canonical)
    return frozenset(found)


def context_topic(text: str) -> str | None:
    """The first policy a text (the shopper's question, an earlier answer) is about."""
    words = topic_words(normalize(text or ""))
    return words[0][1] if words else None


def conversation_topic(case: TestCase) -> str | None:
    """The policy a follow-up answer continues when it leaves it implicit ("you're still inside the
    15-day window"): the last policy an earlier assistant turn gave a number for, else the policy the
    shopper's question names."""
    for message in reversed(case.conversation_history):
        if message.role == "assistant":
            numbers = [n for n in policy_numbers(message.content) if n.unit != "date"]
            if numbers:
                return numbers[-1].topic
    return context_topic(case.query)


@dataclass(frozen=True)
class PolicyNumber:
    topic: str
    unit: str  # "duration" (in days), "percent", "usd", "jpy", "date"
    low: float
    high: float  # == low unless the text gives a range ("5-7 business days")
    text: str
    conditions: frozenset[str]
    negated: bool
    sentence: str

    def agrees(self, other: "PolicyNumber") -> bool:
        """Same value, or one inside the other's range ("a week" within "5-7 days")."""
        tolerance = 1e-6 if self.unit != "duration" else 0.51
        return self.low - tolerance <= other.high and other.low - tolerance <= self.high


def _unit_of(q: Quantity) -> tuple[str, float] | None:
    """The kind of unit a policy number is compared in, and its value in it (durations in days)."""
    if q.unit in ("usd", "jpy", "percent"):
        return q.unit, q.value
    days = q.in_days()
    return None if days is None else ("duration", days)


# A number belongs to the policy its clause is about: the first policy word of the clause before it
# ("once we receive your return, | the refund goes back to your payment method within 5-7 days" is
# the refund time). The policy itself outranks the process it involves: in "your refund arrives
# within 5 days" the number is the refund time, not a delivery time.
_PROCESS_TOPICS = ("delivery", "shipping")
_CLAUSE_CUT = re.compile(r"[,;；、。]|\b(?:and|but|so|while|whereas)\b|しかし")


def _topic_of(sentence: str, words: tuple[tuple[int, str], ...], position: int, context: str | None) -> str | None:
    """The topic of the number's clause; a clause without one ("..., within 5-7 business days")
    continues the nearest clause before it that has one; then the sentence after it; then the
    conversation's topic."""
    cuts = [0] + [m.end() for m in _CLAUSE_CUT.finditer(sentence[:position])]
    following_cut = _CLAUSE_CUT.search(sentence, position)
    clause_end = following_cut.start() if following_cut else len(sentence)
    bounds = list(zip(cuts, cuts[1:] + [position + 1]))
    # Before the number in its clause, then after it in the same clause (Japanese puts the verb
    # last: 「5〜7営業日以内に返金いたします」), then the clauses before.
    for start, end in [bounds[-1], (position, clause_end), *reversed(bounds[:-1])]:
        clause = [t for p, t in words if start <= p < end]
        if clause:
            # "payment method" is usually where money goes, not a payment deadline.
            ranked = sorted(clause, key=lambda t: (t in _PROCESS_TOPICS, t == "payment"))
            return ranked[0]
    after = [t for p, t in words if p > position]
    return after[0] if after else context


_DATE_RANGE_JOIN = re.compile(r"^\s*(?:[(（][^)）]{1,4}[)）])?\s*(?:から|〜|~|～|-|–|to|through|and)\s*$")
# A value the text says is no longer the policy's: "(previously $25)", "was 30 days", 旧, 以前は.
_STALE_BEFORE = re.compile(r"(?:previously|formerly|used to be|was|were|old|旧|以前は|以前の|変更前|改定前)\W{0,3}$")
_SHIPPING_TOPICS = frozenset({"shipping", "shipping_fee", "free_shipping", "delivery"})
_FEE_KINDS = (("return_fee", re.compile(r"label|return|返送|返品")),
              ("cod_fee", re.compile(r"\bcod\b|cash on delivery|代引|代金引換")),
              ("wrapping_fee", re.compile(r"wrap|ラッピング|包装")),
              ("shipping_fee", re.compile(r"ship|deliver|送料|配送")))


def _money_topic(sentence: str, q: Quantity, words: tuple[tuple[int, str], ...], topic: str | None) -> str | None:
    """The policy an amount states, from its role (``money.role_of``): a threshold is the free-shipping
    line (or a code's minimum order), a fee is the fee its words name, "$5 off" is a discount; a
    product's price, a total, a difference or what points are worth is no policy number."""
    role = role_of(sentence, Price(q.value, q.unit.upper(), q.text, q.start), set())
    named = {t for _, t in words}
    if role == "threshold":
        if topic in _SHIPPING_TOPICS or "free_shipping" in named:
            return "free_shipping"
        return "minimum_order" if topic == "discount" or "discount" in named else None
    if role == "fee":
        window = sentence[max(0, q.start - 30):q.end + 20]
        return next((kind for kind, cue in _FEE_KINDS if cue.search(window)), "fee")
    if role == "discount":
        return "discount"
    return None  # a product's price, a total, a difference, points' worth: no policy number


# "5-7 business days", "5〜7営業日", "three to five days": the low end before the range's unit.
_RANGE_LOW = re.compile(r"(?P<low>\d+(?:\.\d+)?|[a-z]+)\s*(?:-|–|—|〜|~|～|to|から)\s*$")


def policy_numbers(text: str, context: str | None = None, *,
                   shopper_numbers: set[tuple[str, float]] | None = None) -> list[PolicyNumber]:
    """Durations, percentages and money thresholds or fees, each tied to the nearest policy word of
    its sentence (before it, else after it, else ``context``, the topic of the conversation).
    Reference points, elapsed time ("10 days ago") and numbers the shopper gave
    (``shopper_numbers``: (unit, value) pairs) are left out, as are product prices."""
    norm = normalize(text or "")
    out: list[PolicyNumber] = []
    for start, end in segment_spans(text):
        sentence = norm[start:end]
        words = topic_words(sentence)
        conditions = conditions_in(sentence)
        negated = is_negated(sentence)
        dates = find_dates(sentence)
        for q in extract_quantities(sentence):
            kind = _unit_of(q) if q.unit in _POLICY_UNITS else None
            if kind is None or any(d.start <= q.start < d.end for d in dates):
                continue  # not a policy unit, or part of a date ("5月12日" is not 12 days)
            if q.unit == "day" and any(0 <= q.start - d.end <= 4 for d in dates) and \
                    _DATE_RANGE_JOIN.match(sentence[max(d.end for d in dates if d.end <= q.start):q.start]):
                continue  # "3月28日から30日": the end of a range of dates
            if _ELAPSED_AFTER.match(sentence[q.end:q.end + 4]):
                continue
            if shopper_numbers and (q.unit, q.value) in shopper_numbers:
                continue
            if _STALE_BEFORE.search(sentence[max(0, q.start - 24):q.start]):
                continue  # "(previously $25)": a value the policy no longer has
            unit, high = kind
            low = high
            range_low = _RANGE_LOW.search(sentence[max(0, q.start - 12):q.start])
            if range_low:
                value = number_value(range_low.group("low"))
                if value is not None and value < q.value:
                    low = high * value / q.value
            topic = _topic_of(sentence, words, q.start, context)
            if unit in ("usd", "jpy"):
                topic = _money_topic(sentence, q, words, topic)
                if topic is None:
                    continue
            if topic is None:
                continue
            out.append(PolicyNumber(topic, unit, low, high, q.text, conditions, negated, sentence))
        for date in dates:
            date_topic = next((t for p, t in reversed(words) if p <= date.start and t in ("delivery", "shipping")),
                              next((t for p, t in words if t in ("delivery", "shipping")), None))
            if date_topic:
                value = date.month * 100 + date.day
                out.append(PolicyNumber(date_topic, "date", value, value, sentence[date.start:date.end], conditions,
                                        negated, sentence))
    return out


def shopper_numbers(case: TestCase) -> set[tuple[str, float]]:
    """(unit, value) of every quantity in the shopper's own turns."""
    texts = [case.query, *(m.content for m in case.conversation_history if m.role == "user")]
    return {(q.unit, q.value) for t in texts for q in extract_quantities(t)}


@dataclass
class PolicyComparison:
    agree: list[tuple[PolicyNumber, PolicyNumber]] = field(default_factory=list)
    contradict: list[tuple[PolicyNumber, list[PolicyNumber]]] = field(default_factory=list)
    unknown: list[PolicyNumber] = field(default_factory=list)  # the knowledge says nothing on it


def _conditions_fit(claim: PolicyNumber, fact: PolicyNumber) -> bool:
    return not claim.conditions or not fact.conditions or bool(claim.conditions & fact.conditions)


def _day_number(date: DateMention) -> int:
    """Days since a fixed origin (the year assumed when not given: only differences are used)."""
    from datetime import date as calendar_date  # noqa: PLC0415

    try:
        return calendar_date(date.year or 2000, date.month, date.day).toordinal()
    except ValueError:
        return calendar_date(date.year or 2000, date.month, 28).toordinal()


def given_values(case: TestCase) -> set[tuple[str, float]]:
    """(unit kind, value) of every duration, percentage and amount the knowledge or the shopper
    gives, whatever it is about, and the durations one step of arithmetic makes of them ("a 30-day
    window, bought 10 days ago": 20 days left)."""
    shopper = [case.query, *(m.content for m in case.conversation_history if m.role == "user")]
    known = {kind for t in case.retrieved_chunks for q in extract_quantities(t) if (kind := _unit_of(q)) is not None}
    said = {kind for t in shopper for q in extract_quantities(t) if (kind := _unit_of(q)) is not None}
    values = known | said
    knowledge_days = {v for unit, v in known if unit == "duration"}
    # Days between the dates in play (delivered 11/3, today 11/10): elapsed time is a shopper's number too.
    dates = [d for t in [*shopper, *case.retrieved_chunks, case.response or "",
                         case.page_context.model_dump_json(exclude_none=True)] for d in find_dates(t)]
    # Distinct days only: a calendar holds few, however many times a long text repeats them.
    days = sorted({_day_number(d) for d in dates})
    shopper_days = {v for unit, v in said if unit == "duration"} | {
        float(later - earlier) for i, earlier in enumerate(days) for later in days[i + 1:]}
    values |= {("duration", abs(k - d)) for k in knowledge_days for d in shopper_days}
    values |= {("duration", k + d) for k in knowledge_days for d in shopper_days}
    return {(unit, round(v, 3)) for unit, v in values}


def compare_policies(claims: list[PolicyNumber], knowledge: list[PolicyNumber],
                     given: set[tuple[str, float]] = frozenset()) -> PolicyComparison:
    """Each claim against the knowledge's numbers for the same topic and kind of unit: agreeing
    (same value or inside the range, compatible conditions), contradicting (the knowledge gives the
    topic a different value under compatible conditions) or unknown (the knowledge is silent)."""
    result = PolicyComparison()
    for claim in claims:
        if claim.unit == "date":
            continue
        same = [k for k in knowledge if k.topic == claim.topic and k.unit == claim.unit]
        fitting = [k for k in same if _conditions_fit(claim, k)]
        match = next((k for k in fitting if claim.agrees(k)), None)
        # A value the knowledge gives another topic may be misattributed by the reading ("refunds
        # within 7 business days after we receive the return"): a contradiction only when the value
        # appears nowhere in the knowledge.
        elsewhere = any(k.unit == claim.unit and claim.agrees(k) for k in knowledge) or any(
            unit == claim.unit and claim.low - 0.51 <= v <= claim.high + 0.51 if unit == "duration" else
            unit == claim.unit and abs(v - claim.low) < 1e-6 for unit, v in given)
        if match is not None:
            result.agree.append((claim, match))
        elif fitting and not claim.negated and not elsewhere:
            result.contradict.append((claim, fitting))
        else:
            result.unknown.append(claim)
    return result


def knowledge_policies(case: TestCase) -> list[PolicyNumber]:
    return [n for chunk in case.retrieved_chunks for n in policy_numbers(chunk)]


# --------------------------------------------------------------------------------------------------
# Claims compared across sentences and turns (intra_turn, cross_turn)
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ValueStatement:
    """One value a text gives one subject: a product's price or stock status, a policy's number."""

    subject: str  # "policy:<topic>:<unit>"
    value: str
    shown: str
    sentence: str
    conditions: frozenset[str] = frozenset()  # "unopened", "damaged", ...: a policy's conditions


def value_statements(reading: Reading, context: str | None = None,
                     shoppers: set[tuple[str, float]] | None = None) -> list[ValueStatement]:
    """The single policy values an answer gives, for comparing within it and across turns. A
    product's price and stock status are the catalog's to judge (a second price of one product is a
    price contradiction when it is wrong, and a sale, a total or another product's price when it is
    not), so they are not compared here."""
    out: list[ValueStatement] = []
    for number in policy_numbers(reading.text, context, shopper_numbers=shoppers):
        if number.low != number.high or number.negated or number.unit == "date" or \
                (number.topic == "discount" and number.unit in ("usd", "jpy")):
            continue  # a range or a negated number is not a single value; a date is an event's; an amount off varies with the order
        out.append(ValueStatement(f"policy:{number.topic}:{number.unit}", f"{number.low:g}", number.text,
                                  number.sentence, number.conditions))
    return out


def conflicting_values(first: list[ValueStatement], second: list[ValueStatement]) -> list[tuple[ValueStatement, ValueStatement]]:
    """Pairs that give one subject two different values (each pair once). Two policy numbers under
    different conditions ("unopened: 15 days", "damaged: 30 days") are both true; a number stated
    without conditions is the general rule and conflicts with any other."""
    by_subject: dict[str, list[ValueStatement]] = defaultdict(list)
    for statement in first:
        by_subject[statement.subject].append(statement)
    out: list[tuple[ValueStatement, ValueStatement]] = []
    seen: set[tuple[str, frozenset[str]]] = set()
    for statement in second:
        for earlier in by_subject.get(statement.subject, []):
            key = (statement.subject, frozenset({earlier.value, statement.value}))
            same_case = not earlier.conditions or not statement.conditions or earlier.conditions == statement.conditions
            if earlier.value != statement.value and earlier.sentence != statement.sentence and same_case \
                    and key not in seen:
                seen.add(key)
                out.append((earlier, statement))
    return out


# --------------------------------------------------------------------------------------------------
# References to an earlier list: "the second one", 「2つ目」
# --------------------------------------------------------------------------------------------------

_LABEL_CUT = re.compile(r"\s[-–—:]\s|[:：(（$¥￥,、—–|]|\s-\s")


@dataclass(frozen=True)
class ListedEntry:
    position: int  # 1-based
    label: str
    asins: tuple[str, ...]  # the catalog item(s) the line names, empty when none


def listed_entries(case: TestCase, turn: str) -> list[ListedEntry]:
    """The items an assistant turn listed, in order: its bulleted or numbered lines (each matched to
    the catalog item it names), or else the catalog items it names, when there are several."""
    index = index_for(case.catalog)
    currency = text_currency(turn, case.is_japanese)
    lines = list_items(turn)
    if len(lines) >= 2:
        entries = []
        for position, line in enumerate(lines, start=1):
            mentions = index.mentions(line, currency)
            best = max(mentions, key=lambda m: (m.end - m.start, -m.start)) if mentions else None
            # A line that names a shared title, or none, is matched by the words that tell one listing
            # apart ("1. 完全版 1巻", "2. Special Edition").
            candidates = [case.catalog_by_asin()[a] for a in best.asins] if best else list(case.catalog)
            apart = told_apart(candidates, normalize(line))
            asins = tuple(i.asin for i in apart) if len(apart) == 1 or best else ()
            label = _LABEL_CUT.split(line.replace("*", "").strip())[0].strip()
            entries.append(ListedEntry(position, label, asins))
        return entries
    named = index.named(turn, currency)
    if len(named) >= 2:
        return [ListedEntry(i, a, (a,)) for i, a in enumerate(named, start=1)]
    return []


@dataclass(frozen=True)
class OrdinalReference:
    ordinal: int  # 1-based, -1 for "the last one"
    target: ListedEntry
    entries: list[ListedEntry]


def ordinal_reference(case: TestCase) -> OrdinalReference | None:
    """What "the second one" in the shopper's query points at in the assistant's last list."""
    from fmquality.language.text import find_ordinal

    ordinal = find_ordinal(case.query)
    if ordinal is None:
        return None
    for message in reversed(case.conversation_history):
        if message.role == "assistant":
            entries = listed_entries(case, message.content)
            if entries:
                if abs(ordinal) > len(entries):
                    return None
                return OrdinalReference(ordinal, entries[ordinal - 1] if ordinal > 0 else entries[-1], entries)
    return None


def _label_named(reading: Reading, entry: ListedEntry, entries: list[ListedEntry]) -> list[int]:
    """Where the answer names a listed entry: a mention of its catalog item that no other entry's item
    shares, or a word of its title that the other listed items' titles lack ("the full-colour one");
    its label when it has no item."""
    if entry.asins:
        others = {a for e in entries if e is not entry for a in e.asins}
        hits = [m.start for m in reading.mentions if set(m.asins) & set(entry.asins) and not set(m.asins) & others]
        listed = reading.items(tuple(dict.fromkeys(a for e in entries for a in e.asins)))
        words = set().union(*(distinct_words(listed).get(a, set()) for a in entry.asins)) if len(listed) > 1 else set()
        hits += [p for w in words if (p := _word_position(w, reading.norm)) is not None]
        return sorted(hits)
    label = normalize(entry.label)
    return [m.start() for m in re.finditer(re.escape(label), reading.norm)] if len(label) >= 3 else []


def resolve_ordinal(reference: OrdinalReference, reading: Reading) -> tuple[str, list[str]]:
    """("target", evidence) when the answer is about the referenced entry, ("other", ...) when it is
    about another listed entry instead, ("none", ...) when it names none of them. An entry that
    shares its name with others (two volumes of a series) cannot tell them apart and is ignored."""
    def own(entry: ListedEntry) -> list[int]:
        shared = [e for e in reference.entries if e is not entry and set(e.asins) & set(entry.asins)]
        return [] if shared else _label_named(reading, entry, reference.entries)

    target_hits = own(reference.target)
    rivals = sorted(((len(own(e)), min(own(e)), e) for e in reference.entries
                     if e is not reference.target and own(e)), key=lambda r: (-r[0], r[1]))
    name = reference.target.label or ",".join(reference.target.asins)
    if not target_hits and rivals:
        rival = rivals[0][2]
        return "other", [f"the shopper referred to listed item {reference.target.position} ({name}); the answer is "
                         f"about item {rival.position} ({rival.label})"]
    if not target_hits:
        return "none", [f"the answer names none of the listed items; item {reference.target.position} ({name}) was meant"]
    if rivals and (rivals[0][0] > len(target_hits) or (rivals[0][0] == len(target_hits) and rivals[0][1] < min(target_hits))):
        rival = rivals[0][2]
        return "other", [f"the answer names listed item {reference.target.position} ({name}) but is mainly about item "
                         f"{rival.position} ({rival.label})"]
    return "target", [f"the reference resolves to listed item {reference.target.position} ({name})"]


# --------------------------------------------------------------------------------------------------
# Order status
# --------------------------------------------------------------------------------------------------

_STATUS_FAMILIES = {
    "delivered": "delivered",
    "shipped": "shipped", "in_transit": "shipped", "in transit": "shipped", "out_for_delivery": "shipped",
    "out for delivery": "shipped", "dispatched": "shipped", "on_the_way": "shipped",
    "processing": "processing", "pending": "processing", "preparing": "processing", "ordered": "processing",
    "confirmed": "processing", "not_shipped": "processing",
    "cancelled": "cancelled", "canceled": "cancelled",
    "delayed": "delayed",
}
# Phrases that state an order's status (not "once it ships"), English and Japanese.
ORDER_STATUS_PHRASES: dict[str, tuple[str, ...]] = {
    "delivered": ("has been delivered", "was delivered", "is delivered", "already delivered", "配達済", "配達完了",
                  "お届け済", "配達されました", "お届けしました", "お届けいたしました"),
    "shipped": ("has shipped", "has been shipped", "was shipped", "already shipped", "is on its way", "is on the way",
                "in transit", "out for delivery", "has been dispatched", "was dispatched", "has left our warehouse",
                "発送済", "発送しました", "発送されました", "発送いたしました", "出荷済", "配送中", "輸送中", "配達中"),
    "processing": ("being prepared", "still processing", "is processing", "being processed", "hasn't shipped",
                   "has not shipped", "not yet shipped", "not shipped yet", "hasn't been shipped", "has not been shipped",
                   "準備中", "未発送", "処理中", "まだ発送されていません", "まだ発送しておりません"),
    "cancelled": ("has been cancelled", "has been canceled", "was cancelled", "was canceled", "is cancelled",
                  "is canceled", "キャンセルされ", "キャンセル済"),
    "delayed": ("delayed", "is running late", "遅延", "遅れて"),
}


def status_family(status: str | None) -> str | None:
    if not status:
        return None
    key = normalize(status).strip().replace("-", "_")
    return _STATUS_FAMILIES.get(key) or _STATUS_FAMILIES.get(key.replace("_", " "))


# Shipped, in any tense or form ("it's already on its way", "went out yesterday"); negated, it says
# the order is still being prepared ("hasn't shipped yet").
_SHIPPED = re.compile(r"\b(?:shipped|dispatched|on its way|on the way|in transit|out for delivery|went out|sent out|"
                      r"left (?:our|the) warehouse)\b|発送済|発送しました|発送されました|発送いたしました|出荷済|配送中|輸送中")
_SHIP_NEGATED = re.compile(r"(?:\bnot|n't|\bnever)(?:\s+\w+){0,2}\s*$|まだ")


def stated_order_statuses(text: str) -> set[str]:
    norm = normalize(text)
    # A phrase under a condition ("発送されましたら", "once it has shipped") states nothing yet.
    found = {family for family, phrases in ORDER_STATUS_PHRASES.items()
             for p in phrases for m in re.finditer(re.escape(p), norm)
             if not re.match(r"ら|次第|たら", norm[m.end():m.end() + 2])
             and not _CONDITION.search(norm[max(0, m.start() - 20):m.start()].split(".")[-1])}
    for match in _SHIPPED.finditer(norm):
        before = norm[max(0, match.start() - 20):match.start()]
        if _CONDITION.search(before.split(".")[-1]) or re.match(r"ら|次第|たら", norm[match.end():match.end() + 2]):
            continue  # "once it ships", "as soon as it's on its way"
        found.add("processing" if _SHIP_NEGATED.search(before) else "shipped")
    return found


def subjects_of(case: TestCase, sentence: str) -> frozenset[str]:
    """What a sentence is about: the catalog products it names and the policy topics it states."""
    products = index_for(case.catalog).named(sentence) if case.catalog else []
    return frozenset(products) | {t for _, t in topic_words(normalize(sentence))}


# --------------------------------------------------------------------------------------------------
# Orders on the page: ids, statuses, carriers and dates, each compared with what the answer says
# --------------------------------------------------------------------------------------------------

# Parcel carriers of the US and Japanese markets, by the names shoppers and staff use.
CARRIERS: dict[str, tuple[str, ...]] = {
    "ups": ("ups",), "usps": ("usps", "postal service", "u.s. mail"), "fedex": ("fedex", "fed ex"), "dhl": ("dhl",),
    "ontrac": ("ontrac",), "lasership": ("lasership",), "amazon": ("amazon logistics",),
    "yamato": ("ヤマト運輸", "ヤマト", "クロネコ", "yamato"), "sagawa": ("佐川急便", "佐川", "sagawa"),
    "japan_post": ("日本郵便", "ゆうパック", "ゆうパケット", "ゆうメール", "japan post"), "seino": ("西濃運輸", "西濃"),
}
_CARRIER_PATTERNS = [(name, re.compile(re.escape(word) if has_japanese(word) else rf"(?<![a-z]){re.escape(word)}(?![a-z])"))
                     for name, words in CARRIERS.items() for word in words]
# What a date in an order answer is the date of, by the nearest cue before it in its clause.
_DATE_ROLE_CUES = (
    ("delivery", re.compile(r"\b(?:arriv\w*|deliver\w*|eta|get (?:it|there|to you)|reach\w*|expected|due)\b"
                            r"|お届け|到着|配達|届")),
    ("ship", re.compile(r"\b(?:ship\w*|dispatch\w*|went out|sent out|left (?:our|the) (?:warehouse|facility))\b|発送|出荷")),
    # A deadline or a window's end ("the return window ended on", 返品期限): not a date of the order.
    ("other", re.compile(r"\b(?:return\w*|refund\w*|window|deadline|until|through|thru|ends?|ended|expires?|"
                         r"cancel\w*|sale|release\w*|valid|by when)\b|期限|返品|返金|まで|締め切り|発売|キャンセル")),
)
_DEADLINE_AFTER = re.compile(r"^\W{0,3}(?:まで|迄|までに)")
_DATE_HEDGE = re.compile(r"\b(?:around|about|approximately|roughly|or so|give or take|usually|typically)\b|ごろ|頃|前後|目安|程度")


def carriers_in(text: str) -> set[str]:
    norm = normalize(text or "")
    return {name for name, pattern in _CARRIER_PATTERNS if pattern.search(norm)}


def _page_orders(case: TestCase) -> list[dict]:
    """The orders the page shows: ``order`` and any list of ``orders`` (as plain dicts)."""
    page = case.page_context.model_dump(exclude_none=True)
    orders = [page["order"]] if isinstance(page.get("order"), dict) else []
    orders += [o for o in page.get("orders") or [] if isinstance(o, dict)] if isinstance(page.get("orders"), list) else []
    return orders


def _record_dates(record: object, key: str = "") -> list[tuple[str, DateMention]]:
    """(role, date) of every date field of an order record, its items included: eta/delivered ->
    delivery, ship -> ship, anything else (release, order date) -> other."""
    out: list[tuple[str, DateMention]] = []
    if isinstance(record, dict):
        for k, v in record.items():
            out += _record_dates(v, str(k).lower())
    elif isinstance(record, list):
        for v in record:
            out += _record_dates(v, key)
    elif isinstance(record, str):
        role = "delivery" if any(w in key for w in ("eta", "deliver", "arriv")) else "ship" if "ship" in key else "other"
        out += [(role, d) for d in find_dates(record)]
    return out


@dataclass
class OrderFacts:
    contradictions: list[str] = field(default_factory=list)
    verified: list[str] = field(default_factory=list)


def order_facts(case: TestCase, reading: Reading) -> OrderFacts:
    """What the answer says of the orders on the page, compared field by field: an order id of the
    page's shape that is not the page's, a carrier the page does not name, a delivery or ship date
    that none of the page's orders has (stated plainly, not hedged or under a condition), a status
    of the only order that contradicts its status. Each is a claim read completely; anything less
    (an order with items in several states, a hedged date) is left to the judge."""
    facts = OrderFacts()
    orders = _page_orders(case)
    if not orders:
        return facts
    nfkc = unicodedata.normalize("NFKC", reading.text)
    ids = [str(o["order_id"]) for o in orders if o.get("order_id")]
    for order_id in ids:
        shape = re.sub(r"[A-Za-z]", "[A-Za-z]", re.sub(r"\d", r"\\d", re.escape(order_id)))
        for match in re.finditer(rf"(?<![\w-]){shape}(?![\w-])", nfkc):
            if loose_key(match.group()) in {loose_key(i) for i in ids}:
                facts.verified.append(f"order id {match.group()}")
            else:
                facts.contradictions.append(f"order id {match.group()} is not the page's ({', '.join(ids)})")
    page_carriers = set().union(*(carriers_in(json.dumps(o, ensure_ascii=False)) for o in orders))
    said_carriers = carriers_in(reading.text)
    if page_carriers and said_carriers:
        wrong = said_carriers - page_carriers
        if wrong and not (said_carriers & page_carriers):
            facts.contradictions.append(f"carrier {', '.join(sorted(wrong))} stated, the order ships with "
                                        f"{', '.join(sorted(page_carriers))}")
        elif not wrong:
            facts.verified.append(f"carrier {', '.join(sorted(said_carriers))}")
    page_dates = [d for o in orders for d in _record_dates(o)]
    whole_page = [d for _, d in _record_dates(case.page_context.model_dump(exclude_none=True))]
    roles = {role for role, _ in page_dates}
    for index in range(len(reading.spans)):
        sentence = reading.sentence(index)
        if is_conditional(sentence) or is_negated(sentence) or is_question(sentence):
            continue
        for date in find_dates(sentence):
            before = sentence[:date.start]
            cues = [(m.start(), role) for role, cue in _DATE_ROLE_CUES for m in cue.finditer(before)]
            after_cues = [(m.start(), role) for role, cue in _DATE_ROLE_CUES for m in cue.finditer(sentence[date.end:])]
            role = max(cues)[1] if cues else (min(after_cues)[1] if after_cues and has_japanese(sentence) else None)
            if _DEADLINE_AFTER.match(sentence[date.end:]):
                role = "other"  # 「11月19日までに」, "by Nov 19 to ...": a deadline, not the order's date
            shown = sentence[date.start:date.end]
            if any(date.same_day(d) for d in whole_page):
                facts.verified.append(f"date {shown}")
            elif role in roles and not _DATE_HEDGE.search(sentence):
                known = ", ".join(f"{d.month}/{d.day}" for r, d in page_dates if r == role)
                facts.contradictions.append(f"{role} date {shown!r} stated, the order's is {known}")
    if len(orders) == 1 and not any(isinstance(v, list) and v and isinstance(v[0], dict) and "status" in v[0]
                                    for v in orders[0].values()):
        family = status_family(str(orders[0].get("status") or ""))
        claimed = stated_order_statuses(reading.text)
        if family and claimed:
            # "in transit" of a shipped order, "delayed" of any open order are not contradictions.
            allowed = {family} | ({"delayed"} if family in ("shipped", "processing") else set())
            if claimed - allowed and family not in claimed:
                facts.contradictions.append(f"status stated as {sorted(claimed)}, the order is {orders[0].get('status')}")
            else:
                facts.verified.append(f"order status {orders[0].get('status')}")
    return facts


# --------------------------------------------------------------------------------------------------
# Text addressed to the grader
# --------------------------------------------------------------------------------------------------

# Text addressed to whoever grades the answer ("Note to the evaluator: ... score 5"): the vocabulary
# of grading, in English and Japanese. It is part of the answer a shopper would read.
_GRADER_ADDRESS = re.compile(
    r"\b(?:note|message|instructions?|reminder)s?\s+(?:to|for)\s+(?:the\s+|any\s+)?(?:ai\s+|llm\s+)?"
    r"(?:evaluators?|graders?|judges?|reviewers?|assessors?|raters?|scorers?)\b"
    r"|(?:^|\n|[.!?]\s+)\(?\s*(?:to the\s+)?(?:evaluator|grader|judge|reviewer|assessor|rater|scorer)s?\s*[:：,]"
    r"|\b(?:score|rate|grade|mark)\s+(?:this|the|my)\s+(?:response|answer|reply)\b"
    r"|\b(?:this|the|my)\s+(?:response|answer|reply)\s+(?:deserves|merits|should (?:get|receive|be (?:given|rated|scored|graded)))\b"
    r"|\b(?:give|assign|award)\s+(?:this|it|me)\s+(?:a\s+)?(?:score|rating|grade|full marks|top marks|5 stars|five stars|\d\s*/\s*\d)"
    r"|\bignore (?:all |any )?(?:the )?(?:previous|prior|above|earlier|other) (?:instructions|rules|criteria|guidelines)\b"
    r"|\b(?:scoring|evaluation|grading) (?:rubric|criteria|guidelines)\b"
    r"|(?:評価者|採点者|審査員|評価AI|ジャッジ|レビュアー)(?:様|の方|へ|各位)?(?:へ|に|:|：|、)"
    r"|(?:この|本)(?:回答|応答|返答)(?:は|を|に)[^。]{0,12}(?:満点|高評価|最高評価|5点|５点|高く評価)"
    r"|満点をつけ|高く評価してください")


def grader_address(text: str) -> list[str]:
    """Phrases of the text addressed to whoever grades it."""
    return list(dict.fromkeys(m.group(0).strip() for m in _GRADER_ADDRESS.finditer(normalize(text))))


def without_grader_address(text: str) -> str:
    """The text without its sentences (or lines) addressed to the grader."""
    return "\n".join(line for line in re.split(r"(?<=[.!?。！？])\s+|\n", text or "")
                      if not _GRADER_ADDRESS.search(normalize(line)))
