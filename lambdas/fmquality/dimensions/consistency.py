"""Consistency: does the answer agree with itself, with earlier assistant turns and with the persona?

- intra_turn: the same product given two prices or two incompatible stock statuses, or the same
  policy (e.g. the return window) given two numbers, is a deterministic contradiction. Otherwise the
  judge decides (yes/no flips need reading); the offline judge looks for negation flips.
- cross_turn: "the second one" must resolve to the item the assistant listed second in its last
  list (client incident 3), and prices, stock statuses and policy numbers must not silently differ
  from what the assistant said before.
- persona: the assistant never discloses being a language model or names another assistant.

The catalog-mention helpers here (``title_keys``, ``find_mentions``, ``mentioned_items``) are also
used by the fluency dimension.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from functools import lru_cache

from fmquality.dimensions.base import CheckReport, response_text
from fmquality.judges.base import JudgeVerdict
from fmquality.models import CatalogItem, TestCase
from fmquality.rubric import Rubric
from fmquality.text import (
    availability_mentions,
    extract_prices,
    extract_quantities,
    find_dates,
    find_ordinal,
    find_phrase,
    has_japanese,
    is_list_line,
    japanese_share,
    list_items,
    normalize,
    phrase_key,
    same_price,
    split_sentences,
)

NAME = "consistency"

# --------------------------------------------------------------------------------------------------
# Catalog mentions
# --------------------------------------------------------------------------------------------------

# Where an English title stops being the series name: "One Piece, Vol. 3", "Naruto: Box Set 1".
_TITLE_BASE_RE = re.compile(r",|:|\(|（|\s[-–—]\s|\s+vol(?:ume)?\b\.?|\s+#\d", re.IGNORECASE)
_JA_VOLUME_RE = re.compile(r"\s*(?:第?\d+巻?|\d+)\s*$")


def _long_enough(key: str) -> bool:
    # Two kanji are a real name ("呪術"); Latin names need three letters ("Gyo") and match whole words.
    letters = key.replace(" ", "")
    return len(letters) >= (2 if has_japanese(letters) else 3)


def title_keys(item: CatalogItem) -> frozenset[str]:
    """``phrase_key`` forms under which a response may name a catalog item: full titles (English,
    Japanese, romaji), their series names without the volume or subtitle, and the ASIN."""
    return _title_keys(item.asin, item.title, item.title_ja, item.title_romaji)


@lru_cache(maxsize=4096)
def _title_keys(asin: str, *names: str | None) -> frozenset[str]:
    # Cached by the names: every case carries the same catalog, and the keys were being rebuilt for
    # every item on every mention lookup (most of a run's time).
    keys: set[str] = set()
    for name in names:
        if not name:
            continue
        keys.add(phrase_key(name))
        keys.add(phrase_key(_TITLE_BASE_RE.split(name)[0]))
        keys.add(phrase_key(_JA_VOLUME_RE.sub("", name)))
    keys.add(phrase_key(asin))
    return frozenset(k for k in keys if _long_enough(k))


def text_currency(text: str) -> str:
    """The currency a text deals in: the one its prices use, else JPY for Japanese text, else USD.
    It decides between two editions of one title (the US and the Japanese edition)."""
    currencies = {p.currency for p in extract_prices(text)}
    if len(currencies) == 1:
        return currencies.pop()
    return "JPY" if japanese_share(text) > 0.5 else "USD"


@dataclass(frozen=True)
class Mention:
    start: int
    end: int
    asin: str


def find_mentions(text: str, catalog: list[CatalogItem], prefer_currency: str | None = None) -> list[Mention]:
    """Catalog items named in the text, in order (positions in ``phrase_key(text)``). Where one name
    contains another ("One Piece Vol 2" vs "One Piece") the longer one wins. Two items named by the
    very same words (two editions of a title) both stay, unless ``prefer_currency`` picks one."""
    haystack = phrase_key(text)
    spans: list[Mention] = []
    for item in catalog:
        for key in title_keys(item):
            spans.extend(Mention(pos, pos + len(key), item.asin) for pos in find_phrase(haystack, key))
    spans.sort(key=lambda m: (-(m.end - m.start), m.start))
    kept: list[Mention] = []
    for span in spans:
        clash = [k for k in kept if span.start < k.end and k.start < span.end]
        if not clash or all((k.start, k.end) == (span.start, span.end) for k in clash):
            if not any(k.asin == span.asin and k.start == span.start for k in kept):
                kept.append(span)
    if prefer_currency:
        currency = {c.asin: c.currency for c in catalog}
        by_span: dict[tuple[int, int], list[Mention]] = defaultdict(list)
        for m in kept:
            by_span[(m.start, m.end)].append(m)
        kept = []
        for group in by_span.values():
            preferred = [m for m in group if currency[m.asin] == prefer_currency]
            kept.extend(preferred if preferred and len(preferred) < len(group) else group)
    return sorted(kept, key=lambda m: (m.start, m.asin))


def mentioned_items(text: str, catalog: list[CatalogItem], prefer_currency: str | None = None) -> list[str]:
    """ASINs named in the text, in order of first mention, without repeats."""
    seen: list[str] = []
    for mention in find_mentions(text, catalog, prefer_currency):
        if mention.asin not in seen:
            seen.append(mention.asin)
    return seen


def _display(item: CatalogItem | None, fallback: str) -> str:
    return f"'{item.title}'" if item else f"'{fallback}'"


# --------------------------------------------------------------------------------------------------
# Facts a text states: prices and stock per product, numbers per policy
# --------------------------------------------------------------------------------------------------

# A price next to these words is a fee, a threshold, a discount or an old price, not the item's price.
_NOT_ITEM_PRICE = (
    "ship", "free", "over ", "above", "orders", "coupon", "discount", " off", "save", "was ", "originally",
    "regular", "sale", "total", "subtotal", "bundle", "box set", "points", "fee",
    "送料", "以上", "割引", "セール", "通常", "クーポン", "ポイント", "合計", "手数料", "円引",
)
# Sentences that refer back to the product under discussion without naming it.
_BACK_REFERENCE_RE = re.compile(
    r"\b(it|it's|its|this one|that one|this title|this volume|this book|this set)\b|こちら|この商品|この作品|本作|同作|その作品"
)
_CONTRADICTORY_STOCK = (
    frozenset({"in_stock", "out_of_stock"}),
    frozenset({"limited", "out_of_stock"}),
    frozenset({"in_stock", "preorder"}),
)


@dataclass
class ProductFacts:
    # asin -> [(amount, currency, the sentence it came from)]
    prices: dict[str, list[tuple[float, str, str]]] = field(default_factory=lambda: defaultdict(list))
    # asin -> [(status, sentence)]
    stock: dict[str, list[tuple[str, str]]] = field(default_factory=lambda: defaultdict(list))


def _units(text: str) -> list[list[str]]:
    """Lines, each split into sentences; a list line is one unit (one product card)."""
    out: list[list[str]] = []
    for line in (text or "").splitlines():
        if not line.strip():
            continue
        out.append([line.strip()] if is_list_line(line) else split_sentences(line))
    return out


def _name_positions(sentence_norm: str, item: CatalogItem) -> list[int]:
    names = {item.title, _TITLE_BASE_RE.split(item.title)[0], item.title_ja, item.title_romaji}
    return [m.start() for name in names if name and len(name.strip()) >= 2
            for m in re.finditer(re.escape(normalize(name).strip()), sentence_norm)]


def _attribute_by_position(sentence: str, items: list[CatalogItem], facts: "ProductFacts") -> None:
    """A sentence naming several products ("Slime is $10.99, while Mushoku Tensei is $12.99"): each
    price or stock status belongs to the product named last before it, if the words between them
    do not make it a fee or an old price."""
    norm = normalize(sentence)
    marks = sorted((pos, item.asin) for item in items for pos in _name_positions(norm, item))
    if len({a for _, a in marks}) < 2:
        return

    def owner(position: int) -> str | None:
        before = [(p, a) for p, a in marks if p <= position]
        if not before:
            return None
        start = before[-1][0]
        return None if any(w in norm[start:position] for w in _NOT_ITEM_PRICE) else before[-1][1]

    for price in extract_prices(sentence):
        asin = owner(price.start)
        if asin:
            facts.prices[asin].append((price.amount, price.currency, sentence))
    for status, position in availability_mentions(sentence):
        asin = owner(position)
        if asin:
            facts.stock[asin].append((status, sentence))


def product_facts(text: str, catalog: list[CatalogItem], subject: str | None = None) -> ProductFacts:
    """Prices and stock statuses the text gives each catalog item. A sentence counts for an item
    when it names exactly that item, or when it refers back ("it", "こちら") to the one item named
    just before (or to ``subject``, the product the page is about)."""
    facts = ProductFacts()
    currency = text_currency(text)
    for line in _units(text):
        current = subject
        for sentence in line:
            named = mentioned_items(sentence, catalog, currency)
            if len(named) > 1:
                _attribute_by_position(sentence, [c for c in catalog if c.asin in named], facts)
                current = None
                continue
            if len(named) == 1:
                current = named[0]
                target = current
            elif not named and current and _BACK_REFERENCE_RE.search(normalize(sentence)):
                target = current
            else:
                if len(named) > 1:
                    current = None
                continue
            low = normalize(sentence)
            if not any(word in low for word in _NOT_ITEM_PRICE):
                for price in extract_prices(sentence):
                    facts.prices[target].append((price.amount, price.currency, sentence))
            for status, _ in availability_mentions(sentence):
                facts.stock[target].append((status, sentence))
    return facts


def _distinct_prices(entries: list[tuple[float, str, str]]) -> list[tuple[float, str, str]]:
    out: list[tuple[float, str, str]] = []
    for amount, currency, sentence in entries:
        if not any(c == currency and same_price(a, amount, currency) for a, c, _ in out):
            out.append((amount, currency, sentence))
    return out


def _fmt_price(amount: float, currency: str) -> str:
    return f"¥{amount:,.0f}" if currency == "JPY" else f"${amount:,.2f}"


_POLICY_TOPICS: dict[str, tuple[str, ...]] = {
    "free_shipping": ("free shipping", "送料無料"),
    "return": ("return", "返品"),
    "refund": ("refund", "返金"),
    "exchange": ("exchange", "交換"),
    "cancel": ("cancel", "キャンセル"),
    "delivery": ("deliver", "arrive", "arrival", "eta", "expected", "お届け", "到着", "配達"),
    "shipping": ("ship", "配送", "発送"),
    "discount": ("% off", "discount", "割引", "オフ"),
    "points": ("point", "ポイント"),
}
# Words that make two different numbers for one policy legitimate (different conditions).
# Words that make two different numbers for one policy legitimate (different conditions), each
# mapped to one canonical condition so "sealed" and "unopened" count as the same one.
_QUALIFIERS = {
    "unopened": "unopened", "sealed": "unopened", "未開封": "unopened", "未使用": "unopened",
    "opened": "opened", "開封": "opened",
    "damaged": "damaged", "defective": "damaged", "破損": "damaged", "不良": "damaged",
    "digital": "digital", "international": "international", "海外": "international",
    "express": "express", "速達": "express", "standard": "standard", "prime": "member", "member": "member",
    "会員": "member",
}
_POLICY_UNITS = {"day", "week", "month", "hour", "percent"}


_REFERENCE_BEFORE_RE = re.compile(r"(from|of|after|since|upon)\s+(the\s+|your\s+)?$")


def _is_reference_point(sentence_norm: str, start: int, end: int) -> bool:
    """"30 days from delivery", "到着後15日": the word names when the clock starts, not the policy."""
    return bool(_REFERENCE_BEFORE_RE.search(sentence_norm[:start])) or sentence_norm[end:end + 1] == "後" \
        or sentence_norm[end:end + 2] == "から"


def topic_words(sentence_norm: str) -> list[tuple[int, str]]:
    """(position, topic) of each policy word that names a policy (reference points left out)."""
    out: list[tuple[int, str]] = []
    taken: list[tuple[int, int]] = []
    for topic, words in _POLICY_TOPICS.items():  # longer, more specific topics come first
        for word in words:
            for match in re.finditer(re.escape(word), sentence_norm):
                if any(s <= match.start() < e for s, e in taken):
                    continue
                taken.append((match.start(), match.end()))
                if not _is_reference_point(sentence_norm, match.start(), match.end()):
                    out.append((match.start(), topic))
    return sorted(out)


def _topic_at(sentence_norm: str, position: int, context_topic: str | None = None) -> str | None:
    """The policy a number belongs to: the nearest policy word before it ("return ... within 30
    days"), else the nearest after it, else the topic of the conversation (``context_topic``)."""
    words = topic_words(sentence_norm)
    before = [t for p, t in words if p <= position]
    after = [t for p, t in words if p > position]
    if before:
        return before[-1]
    if after:
        return after[0]
    return context_topic


def context_topic(text: str) -> str | None:
    """The first policy a text (the shopper's question, an earlier answer) is about."""
    words = topic_words(normalize(text or ""))
    return words[0][1] if words else None


@dataclass(frozen=True)
class PolicyNumber:
    topic: str
    unit: str
    value: float
    text: str
    qualifiers: frozenset[str]
    sentence: str


def _qualifiers(norm: str) -> frozenset[str]:
    found = set()
    for word, canonical in _QUALIFIERS.items():
        # "unopened" must not also count as "opened", nor 未開封 as 開封.
        if re.search(rf"(?<![a-z未]){re.escape(word)}", norm):
            found.add(canonical)
    return frozenset(found)


# A money amount is a policy number only as a threshold ("free shipping over $35", "3,000円以上").
_THRESHOLD_BEFORE_RE = re.compile(r"(over|under|above|below|more than|less than|at least|minimum of|from)\s*$")
_THRESHOLD_AFTER_RE = re.compile(r"^\s*(以上|未満|から|or more|and up)")


def policy_numbers(text: str, context: str | None = None) -> list[PolicyNumber]:
    """Durations, percentages and free-shipping thresholds, each tied to the nearest policy word in
    its sentence ("returns ... within 30 days" -> ("return", "day", 30)). Numbers with no policy
    word in their sentence are left out."""
    out: list[PolicyNumber] = []
    for sentence in split_sentences(text):
        norm = normalize(sentence)
        qualifiers = _qualifiers(norm)
        for quantity in extract_quantities(sentence):
            if quantity.unit not in _POLICY_UNITS and quantity.unit not in {"usd", "jpy"}:
                continue
            position = max(norm.find(normalize(quantity.text)), 0)
            topic = _topic_at(norm, position, context)
            if quantity.unit in {"usd", "jpy"}:
                end = position + len(normalize(quantity.text))
                is_threshold = _THRESHOLD_BEFORE_RE.search(norm[:position]) or _THRESHOLD_AFTER_RE.search(norm[end:])
                if not is_threshold or topic not in {"free_shipping", "shipping", "delivery"}:
                    continue
                topic = "free_shipping"  # the order amount that decides the shipping fee
            if topic is None:
                continue
            out.append(PolicyNumber(topic, quantity.unit, quantity.value, quantity.text, qualifiers, sentence))
        for date in find_dates(sentence):
            # Dates are about an order only when the sentence speaks of shipping or delivery at all
            # ("the expected date of delivery is June 7" names delivery only as a reference point).
            if not any(w in norm for w in _POLICY_TOPICS["delivery"] + _POLICY_TOPICS["shipping"]):
                continue
            topic = _topic_at(norm, date.start, "delivery")
            if topic in {"delivery", "shipping"}:
                out.append(PolicyNumber(topic, "date", date.month * 100 + date.day, norm[date.start:date.end],
                                        qualifiers, sentence))
    return out


def _single_valued(numbers: list[PolicyNumber]) -> dict[tuple[str, str, frozenset[str], str], PolicyNumber]:
    """(topic, unit, qualifiers, sentence) -> number, only where the sentence gives one value for it
    (a range like "5-7 business days" is not a claim of a single number)."""
    grouped: dict[tuple[str, str, frozenset[str], str], list[PolicyNumber]] = defaultdict(list)
    for n in numbers:
        grouped[(n.topic, n.unit, n.qualifiers, n.sentence)].append(n)
    return {k: v[0] for k, v in grouped.items() if len({n.value for n in v}) == 1}


def policy_conflicts(earlier: list[PolicyNumber], later: list[PolicyNumber]) -> list[tuple[PolicyNumber, PolicyNumber]]:
    """Pairs giving the same policy (topic, unit, conditions) two different single values."""
    a = _single_valued(earlier)
    b = _single_valued(later)
    out: list[tuple[PolicyNumber, PolicyNumber]] = []
    for (topic, unit, quals, sent_a), first in a.items():
        for (topic_b, unit_b, quals_b, sent_b), second in b.items():
            if (topic, unit, quals) == (topic_b, unit_b, quals_b) and sent_a != sent_b and first.value != second.value:
                if not any((p.value, q.value) == (first.value, second.value) for p, q in out):
                    out.append((first, second))
    return out


# --------------------------------------------------------------------------------------------------
# intra_turn
# --------------------------------------------------------------------------------------------------


def _subject(case: TestCase, text: str) -> str | None:
    """The product a reply is about when it names at most one: the page's product, or the single
    catalog item the text names."""
    named = mentioned_items(text, case.catalog, text_currency(text))
    if len(named) == 1:
        return named[0]
    if not named and case.page_context.current_asin in case.catalog_by_asin():
        return case.page_context.current_asin
    return None


def intra_turn_contradictions(case: TestCase) -> list[str]:
    text = response_text(case)
    catalog = case.catalog_by_asin()
    findings: list[str] = []
    facts = product_facts(text, case.catalog, _subject(case, text))
    for asin, entries in facts.prices.items():
        distinct = _distinct_prices(entries)
        by_currency: dict[str, list[tuple[float, str, str]]] = defaultdict(list)
        for entry in distinct:
            by_currency[entry[1]].append(entry)
        for currency, values in by_currency.items():
            if len(values) > 1:
                shown = " and ".join(_fmt_price(a, currency) for a, _, _ in values)
                findings.append(f"{_display(catalog.get(asin), asin)} is given two prices in one answer: {shown}")
    for asin, entries in facts.stock.items():
        statuses = {s for s, _ in entries}
        for pair in _CONTRADICTORY_STOCK:
            if pair <= statuses:
                first, second = sorted(pair)
                findings.append(
                    f"{_display(catalog.get(asin), asin)} is called both {first.replace('_', ' ')} and "
                    f"{second.replace('_', ' ')} in one answer"
                )
    numbers = policy_numbers(text, context_topic(case.query))
    reported: set[tuple[str, frozenset[float]]] = set()
    for first, second in policy_conflicts(numbers, numbers):
        key = (first.topic, frozenset({first.value, second.value}))
        if key not in reported:  # the pair comes back in both orders
            reported.add(key)
            what = f"the {first.topic} date" if first.unit == "date" else f"the {first.topic} policy"
            findings.append(f"{what} is stated as '{first.text}' and also as '{second.text}'")
    return list(dict.fromkeys(findings))


_CONTRACTIONS = (
    ("isn't", "is not"), ("aren't", "are not"), ("can't", "can not"), ("cannot", "can not"),
    ("won't", "will not"), ("doesn't", "does not"), ("don't", "do not"), ("hasn't", "has not"),
    ("haven't", "have not"), ("it's", "it is"),
)
_CLAIM_RE = re.compile(
    r"\b([a-z0-9]+)\s+(is|are|can|will|does|do|has|have)\s+(?:(?:also|still|currently|really|always|now)\s+)?"
    r"(not\s+|never\s+)?(?:(?:also|still|currently|really|always|now|be)\s+)*([a-z]{3,})"
)
_JA_CLAIM_RE = re.compile(r"([\u4e00-\u9fff\u30a0-\u30ff]{1,6})(?:が|は|も)?(でき|あり|い)(ます|ません)")
_CONDITIONAL = ("if ", "unless", "only", "except", "however", "but ", "opened", "once", "after", "before",
                "as soon as", "again", "when ", "later",
                "場合", "ただし", "除き", "開封", "なら", "でも", "ですが")


def negation_flips(texts_before: list[str], text: str) -> list[str]:
    """Claims stated both ways ("it is available" ... "it is not available", "返品できます" ...
    "返品できません"), within ``text`` or between earlier texts and ``text``. Sentences with a
    condition ("if", "unless", "場合") are left out: those often state both sides on purpose."""

    def claims(source: str) -> dict[tuple[str, ...], set[bool]]:
        out: dict[tuple[str, ...], set[bool]] = defaultdict(set)
        for sentence in split_sentences(source):
            norm = normalize(sentence)
            if any(c in norm for c in _CONDITIONAL):
                continue
            for short, long in _CONTRACTIONS:
                norm = norm.replace(short, long)
            for m in _CLAIM_RE.finditer(norm):
                subject, verb, negation, predicate = m.groups()
                if subject in {"there", "which", "that", "who", "what"}:
                    continue
                out[(subject, verb, predicate)].add(not negation)
            for m in _JA_CLAIM_RE.finditer(norm):
                out[(m.group(1), m.group(2))].add(m.group(3) == "ます")
        return out

    now = claims(text)
    findings = [f"'{' '.join(k)}' is stated both positively and negatively" for k, v in now.items() if len(v) > 1]
    before: dict[tuple[str, ...], set[bool]] = defaultdict(set)
    for earlier in texts_before:
        for k, v in claims(earlier).items():
            before[k] |= v
    for key, polarity in now.items():
        if len(polarity) == 1 and before.get(key) and before[key] != polarity and key[0] not in {"i", "you", "we"}:
            findings.append(f"'{' '.join(key)}' is now stated {'positively' if True in polarity else 'negatively'}, "
                            "the opposite of an earlier assistant turn")
    return findings


_MODAL_RE = re.compile(r"\b(can|may|will)\s+(not\s+)?(?:be\s+)?(?:[a-z]+ly\s+)?([a-z]{4,})")
_JA_MODAL_RE = re.compile(r"([\u4e00-\u9fff\u30a0-\u30ff]{2,6})(?:が|は|も|を)?(?:でき|いただけ|可能で)(ます|ません|す)")


def _stem_verb(word: str) -> str:
    for suffix in ("ed", "s"):
        if word.endswith(suffix) and len(word) > len(suffix) + 3:
            return word[: -len(suffix)]
    return word


# "it can't ship this week ... I'll notify you as soon as it can ship again" is no contradiction.
_LATER_OR_IF = ("as soon as", "once ", "when ", "again", "if ", "after ", "later", "たら", "次第", "再入荷", "場合")


def permission_flips(text: str, query: str) -> list[str]:
    """An answer that grants something and then refuses the same thing for the shopper's own case:
    "you can return Tomie" ... "opened items cannot be returned" when the shopper said they opened it.
    A positive claim without conditions and a negative one whose conditions the query shares (or
    the same conditions on both) contradict each other."""
    query_conditions = _qualifiers(normalize(query))
    claims: dict[str, dict[bool, list[frozenset[str]]]] = defaultdict(lambda: {True: [], False: []})
    for sentence in split_sentences(text):
        norm = normalize(sentence)
        for short, long in _CONTRACTIONS:
            norm = norm.replace(short, long)
        # What follows "unless" is an exception to the claim, not a condition of it.
        conditions = _qualifiers(re.split(r"\bunless\b|\bexcept\b|を除き|でない限り", norm)[0])
        if any(w in norm for w in _LATER_OR_IF):
            conditions = conditions | {"later or conditional"}
        for m in _MODAL_RE.finditer(norm):
            claims[f"{m.group(1)} {_stem_verb(m.group(3))}"][m.group(2) is None].append(conditions)
        for m in _JA_MODAL_RE.finditer(norm):
            claims[m.group(1)][m.group(2) != "ません"].append(conditions)
    out: list[str] = []
    for claim, sides in claims.items():
        for yes in sides[True]:
            for no in sides[False]:
                if yes == no or (not yes and no and no <= query_conditions):
                    out.append(f"'{claim}' is both granted and refused for the shopper's case")
    return list(dict.fromkeys(out))


# --------------------------------------------------------------------------------------------------
# cross_turn
# --------------------------------------------------------------------------------------------------


@dataclass
class ListedEntry:
    position: int  # 1-based
    label: str
    item: CatalogItem | None
    keys: frozenset[str]


_LABEL_CUT_RE = re.compile(r"\s[-–—:]\s|[:：(（$¥￥,、—–]|\s-\s")


def _line_keys(line: str) -> frozenset[str]:
    """A name for a list line that matches no catalog item: the text before the price or dash."""
    label = _LABEL_CUT_RE.split(line.replace("**", "").replace("*", "").strip("「」\"' "))[0]
    key = phrase_key(label)
    return frozenset({key}) if _long_enough(key) else frozenset()


def listed_entries(turn: str, catalog: list[CatalogItem]) -> list[ListedEntry]:
    """The items an assistant turn listed, in order: its numbered or bulleted lines (each matched to
    the catalog item it names), or else the catalog items it names, when there are several."""
    by_asin = {c.asin: c for c in catalog}
    currency = text_currency(turn)
    lines = list_items(turn)
    entries: list[ListedEntry] = []
    if len(lines) >= 2:
        for position, line in enumerate(lines, start=1):
            mentions = find_mentions(line, catalog, currency)
            item = None
            if mentions:
                best = max(mentions, key=lambda m: (m.end - m.start, -m.start))
                item = by_asin[best.asin]
            keys = title_keys(item) if item else _line_keys(line)
            entries.append(ListedEntry(position, line, item, keys))
        return entries
    named = mentioned_items(turn, catalog, currency)
    if len(named) >= 2:
        return [ListedEntry(i, by_asin[a].title, by_asin[a], title_keys(by_asin[a])) for i, a in enumerate(named, start=1)]
    return []


def _hits(text_key: str, entry: ListedEntry, others: list[ListedEntry]) -> tuple[int, int]:
    """How often, and first where, the text names the entry with a name not shared with another
    listed entry (two volumes of one series share the series name, which then decides nothing)."""
    shared = {k for o in others for k in o.keys}
    own = [k for k in entry.keys if k not in shared and not any(find_phrase(s, k) for s in shared)]
    positions = {p for key in own for p in find_phrase(text_key, key)}
    return len(positions), min(positions, default=len(text_key) + 1)


_ORDINAL_WORDS = {1: "first", 2: "second", 3: "third", 4: "fourth", 5: "fifth", -1: "last"}


def ordinal_resolution(case: TestCase) -> tuple[float, str] | None:
    """Score and evidence for "the second one" style references, or None when there is none to resolve."""
    ordinal = find_ordinal(case.query)
    if ordinal is None:
        return None
    entries: list[ListedEntry] = []
    for message in reversed(case.conversation_history):
        if message.role == "assistant":
            entries = listed_entries(message.content, case.catalog)
            if entries:
                break
    if not entries:
        return None
    word = _ORDINAL_WORDS.get(ordinal, f"#{ordinal}")
    if ordinal > len(entries):
        return None
    target = entries[ordinal - 1] if ordinal > 0 else entries[-1]
    others = [e for e in entries if e is not target]
    text_key = phrase_key(response_text(case))
    target_count, target_first = _hits(text_key, target, others)
    rivals = sorted(
        ((c, f, e) for e in others for c, f in [_hits(text_key, e, [x for x in entries if x is not e])] if c),
        key=lambda r: (-r[0], r[1]),
    )
    target_name = _display(target.item, target.label)
    if target_count == 0 and rivals:
        rival = rivals[0][2]
        return 0.0, (
            f"the user asked about the {word} listed item ({target_name}, item {target.position}) but the response "
            f"talks about {_display(rival.item, rival.label)} (item {rival.position})"
        )
    if target_count == 0:
        return 0.5, f"the response does not name the {word} listed item {target_name} the user referred to"
    if rivals and (rivals[0][0] > target_count or (rivals[0][0] == target_count and rivals[0][1] < target_first)):
        rival = rivals[0][2]
        return 0.4, (
            f"the response names {target_name} (the {word} listed item) but is mainly about "
            f"{_display(rival.item, rival.label)} (item {rival.position})"
        )
    return 1.0, f"'the {word} one' resolves to {target_name} (item {target.position}) and the response is about it"


# In the shopper's turn or the page context: the facts may have changed since the earlier answer.
_CHANGE_SIGNALS = ("changed", "change", "update", "new price", "price drop", "restock", "back in stock", "anymore",
                   "値下げ", "値上げ", "再入荷", "変更", "今は")
# In the response: the assistant says it is correcting or updating what it said.
_ACKNOWLEDGEMENTS = ("correction", "sorry", "apolog", "mistake", "updated", "changed", "now", "actually",
                     "訂正", "失礼", "申し訳", "変更", "現在")


def _change_indicated(case: TestCase) -> bool:
    query = normalize(case.query)
    page_extra = normalize(" ".join(str(v) for v in (case.page_context.model_extra or {}).values()))
    return any(w in query or w in page_extra for w in _CHANGE_SIGNALS)


def cross_turn_contradictions(case: TestCase) -> list[tuple[float, str]]:
    """(score, evidence) for each product or policy fact the response states differently from an
    earlier assistant turn."""
    earlier_turns = [m.content for m in case.conversation_history if m.role == "assistant"]
    text = response_text(case)
    catalog = case.catalog_by_asin()
    change_indicated = _change_indicated(case)
    acknowledged = any(w in normalize(text) for w in _ACKNOWLEDGEMENTS)
    out: list[tuple[float, str]] = []

    def judge_change(name: str, before: str, now: str, now_matches_catalog: bool) -> None:
        detail = f"{name}: an earlier assistant turn said {before}, the response says {now}"
        if change_indicated:
            return
        if now_matches_catalog and acknowledged:
            return
        if now_matches_catalog:
            out.append((0.6, detail + " (the new value matches the catalog, but the change is not acknowledged)"))
        else:
            out.append((0.0, detail))

    now_facts = product_facts(text, case.catalog, _subject(case, text))
    before_prices: dict[str, list[tuple[float, str, str]]] = defaultdict(list)
    before_stock: dict[str, set[str]] = defaultdict(set)
    for turn in earlier_turns:
        facts = product_facts(turn, case.catalog, _subject(case, turn))
        for asin, entries in facts.prices.items():
            before_prices[asin].extend(entries)
        for asin, entries in facts.stock.items():
            before_stock[asin] |= {s for s, _ in entries}

    for asin, entries in now_facts.prices.items():
        item = catalog.get(asin)
        for amount, currency, _ in _distinct_prices(entries):
            earlier = [(a, c) for a, c, _ in _distinct_prices(before_prices.get(asin, [])) if c == currency]
            if earlier and not any(same_price(a, amount, currency) for a, _ in earlier):
                matches = bool(item and item.currency == currency and same_price(item.price, amount, currency))
                judge_change(f"price of {_display(item, asin)}", _fmt_price(earlier[0][0], currency),
                             _fmt_price(amount, currency), matches)
    for asin, entries in now_facts.stock.items():
        item = catalog.get(asin)
        now_statuses = {s for s, _ in entries}
        earlier = before_stock.get(asin, set())
        for pair in _CONTRADICTORY_STOCK:
            for now_status in now_statuses & pair:
                (other,) = pair - {now_status}
                if other in earlier and now_status not in earlier:
                    matches = bool(item and item.availability == now_status)
                    judge_change(f"stock of {_display(item, asin)}", other.replace("_", " "),
                                 now_status.replace("_", " "), matches)

    before_numbers = [n for turn in earlier_turns for n in policy_numbers(turn, context_topic(case.query))]
    topics_before = [n.topic for n in before_numbers if n.unit != "date"]
    # A follow-up answer often leaves the policy implicit ("you have 30 days from delivery").
    context = topics_before[-1] if topics_before else context_topic(case.query)
    order = case.page_context.order
    order_dates = {"delivery": order.eta, "shipping": order.ship_date} if order else {}
    for first, second in policy_conflicts(before_numbers, policy_numbers(text, context)):
        if second.unit == "date":
            truth = find_dates(order_dates.get(second.topic) or "")
            matches = bool(truth) and truth[0].month * 100 + truth[0].day == second.value
            judge_change(f"the {second.topic} date", f"'{first.text}'", f"'{second.text}'", matches)
        elif not change_indicated:
            out.append((0.0, f"the {first.topic} policy: an earlier assistant turn said '{first.text}', "
                             f"the response says '{second.text}'"))
    return list(dict.fromkeys(out))


# --------------------------------------------------------------------------------------------------
# persona
# --------------------------------------------------------------------------------------------------


def persona_breaks(text: str, rubric: Rubric) -> list[str]:
    norm = normalize(text)
    found: list[str] = []
    for phrase in rubric.persona.forbidden_disclosures:
        needle = normalize(phrase)
        # Latin phrases match whole words ("siri" must not match inside another word).
        pattern = re.escape(needle) if has_japanese(needle) else rf"(?<![a-z0-9]){re.escape(needle)}(?![a-z0-9])"
        if re.search(pattern, norm):
            found.append(phrase)
    return found


# --------------------------------------------------------------------------------------------------
# The module contract
# --------------------------------------------------------------------------------------------------


def check(case: TestCase, rubric: Rubric) -> CheckReport:
    report = CheckReport()
    text = response_text(case)

    contradictions = intra_turn_contradictions(case)
    if contradictions:
        report.set("intra_turn", 0.1, *contradictions)
        report.findings.extend(contradictions)
    else:
        report.ask_judge("intra_turn")

    if not any(m.role == "assistant" for m in case.conversation_history):
        report.skip("cross_turn")
    else:
        results: list[tuple[float, str]] = []
        resolved = ordinal_resolution(case)
        if resolved:
            results.append(resolved)
        results.extend(cross_turn_contradictions(case))
        if results:
            report.set("cross_turn", min(s for s, _ in results), *(e for _, e in results))
            report.findings.extend(e for s, e in results if s < 1.0)
        else:
            report.ask_judge("cross_turn")

    breaks = persona_breaks(text, rubric)
    if breaks:
        report.set("persona", 0.0, *(f"persona break: the response says '{b}'" for b in breaks))
        report.findings.append(f"persona break: {', '.join(breaks)}")
    else:
        report.set("persona", 1.0, "no persona break found")
    return report


def offline_verdict(case: TestCase, rubric: Rubric, sub_scores: list[str]) -> JudgeVerdict:
    text = response_text(case)
    earlier = [m.content for m in case.conversation_history if m.role == "assistant"]
    scores: dict[str, float] = {}
    evidence: list[str] = []
    notes: list[str] = []
    if "intra_turn" in sub_scores:
        flips = negation_flips([], text) + permission_flips(text, case.query)
        scores["intra_turn"] = 0.3 if flips else 0.9
        evidence.extend(f"intra_turn: {f}" for f in flips)
        notes.append("intra_turn: " + ("a claim is stated both ways" if flips
                                       else "no price, stock, policy-number or negation contradiction found"))
    if "cross_turn" in sub_scores:
        flips = [f for f in negation_flips(earlier, text) if "earlier assistant turn" in f]
        scores["cross_turn"] = 0.35 if flips else 0.85
        evidence.extend(f"cross_turn: {f}" for f in flips)
        notes.append("cross_turn: " + ("the response reverses an earlier assistant claim" if flips
                                       else "no reversal of an earlier assistant claim found"))
    if "persona" in sub_scores:  # normally settled by check(); kept for a judge asked directly
        breaks = persona_breaks(text, rubric)
        scores["persona"] = 0.0 if breaks else 1.0
        notes.append("persona: " + (f"breaks {breaks}" if breaks else "no persona break found"))
    # A lexical scan finds flips but cannot prove their absence: modest confidence either way.
    return JudgeVerdict(
        sub_scores=scores,
        rationale="offline consistency scan; " + "; ".join(notes),
        evidence=evidence,
        confidence=0.55,
    )
