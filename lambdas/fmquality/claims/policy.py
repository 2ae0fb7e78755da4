"""Policy numbers: a duration, percentage or amount an answer states, tied to the store policy it
states (return window, refund time, free-shipping threshold, fees, ...), with its conditions and its
negation; and their comparison with the knowledge, within an answer and across turns.

Claims read: every number of a policy unit (days, weeks, percent, an amount that is a threshold, fee
or discount) with the topic of its clause (``policy_numbers``; a clause without a topic continues
the one before, then the conversation's topic). A number the shopper gave ("I opened it 10 days
ago"), a reference point ("30 days from delivery" names delivery as the start, not the policy), a
value the text says is no longer the policy's ("previously $25") and a product's price are not
policy claims. Compared: each claim with the knowledge's numbers for the same topic and unit under
compatible conditions (``compare_policies``), and two values one answer or conversation gives one
policy (``conflicting_values``).

Left to the judge: a claim the knowledge is silent on (``unknown``), a value the knowledge gives some
other topic (possibly a misattribution by the reading), a negated or ranged value in a conflict.

The policy-topic words are the general vocabulary of an online store's policies (returns, refunds,
exchanges, cancellations, shipping, delivery, payment, discounts, points, pre-orders) in English and
Japanese; they name what a number is about and were not taken from any dataset line. A new topic is
an entry of ``POLICY_TOPICS``; the store conditions ("unopened", "damaged") are
``language.negation.CONDITIONS``.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from functools import lru_cache

from fmquality.language.attribution import reported_at
from fmquality.claims.money import role_of
from fmquality.claims.policy_applied import WorkedOut, same_in_business_days
from fmquality.claims.reading import Reading
from fmquality.domain.case import TestCase
from fmquality.language.catalog_index import index_for
from fmquality.language.negation import conditions_in, is_negated
from fmquality.language.numbers import (
    DateMention,
    Price,
    Quantity,
    extract_quantities,
    find_dates,
    joins_dates,
    range_low,
)
from fmquality.language.text import has_japanese, normalize, segment_spans

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
_POLICY_UNITS = {"day", "week", "month", "year", "hour", "percent", "usd", "jpy"}
_REFERENCE_BEFORE = re.compile(r"(from|of|after|since|upon|following)\s+(the\s+|your\s+|its\s+)?$")
# The shopper's own circumstance, not a policy: "10 days ago", "10日前に", "for 3 days now".
# What makes a Japanese 「N日」 a duration rather than a day of the month.
_JA_DURATION_AFTER = re.compile(r"^\s*(?:以内|間|以上|未満|後|前|ほど|程|前後|経過|を過ぎ|を超え|かか|まで|で(?!ござ|す|し))")
_JA_DURATION_BEFORE = re.compile(r"(?:後|から|より|含めて|以降|以内に?|最大|約)\s*$")
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


def policy_numbers(text: str, context: str | None = None, *,
                   shopper_numbers: set[tuple[str, float]] | None = None) -> list[PolicyNumber]:
    """Durations, percentages and money thresholds or fees, each tied to the nearest policy word of
    its sentence (before it, else after it, else ``context``, the topic of the conversation).
    Reference points, elapsed time ("10 days ago") and numbers the shopper gave
    (``shopper_numbers``: (unit, value) pairs) are left out, as are product prices."""
    norm = normalize(text or "")
    out: list[PolicyNumber] = []
    for start, end in segment_spans(text):
        out += _sentence_numbers(norm[start:end], context, shopper_numbers)
    return out


def _sentence_numbers(sentence: str, context: str | None,
                      shopper_numbers: set[tuple[str, float]] | None) -> list[PolicyNumber]:
    """The policy numbers of one normalized sentence, then the delivery or shipping dates it gives."""
    words = topic_words(sentence)
    conditions = conditions_in(sentence)
    negated = is_negated(sentence)
    dates = find_dates(sentence)
    out: list[PolicyNumber] = []
    for q in extract_quantities(sentence):
        kind = _unit_of(q) if q.unit in _POLICY_UNITS else None
        if kind is None or _not_a_policy_number(sentence, q, dates, shopper_numbers):
            continue
        unit, high = kind
        low_end = range_low(sentence, q.start, q.value, reach=12)  # "5-7 business days"
        low = high if low_end is None else high * low_end / q.value
        topic = _topic_of(sentence, words, q.start, context)
        if unit in ("usd", "jpy"):
            topic = _money_topic(sentence, q, words, topic)
        if topic is not None:
            out.append(PolicyNumber(topic, unit, low, high, q.text, conditions, negated, sentence))
    for date in dates:
        date_topic = next((t for p, t in reversed(words) if p <= date.start and t in ("delivery", "shipping")),
                          next((t for p, t in words if t in ("delivery", "shipping")), None))
        if date_topic:
            value = date.month * 100 + date.day
            out.append(PolicyNumber(date_topic, "date", value, value, sentence[date.start:date.end], conditions,
                                    negated, sentence))
    return out


def _not_a_policy_number(sentence: str, q: Quantity, dates: list[DateMention],
                         shopper_numbers: set[tuple[str, float]] | None) -> bool:
    """Part of a date ("5月12日" is not 12 days), the end of a range of dates ("3月28日から30日"),
    elapsed time ("10 days ago"), a number the shopper gave, or a value the policy no longer has
    ("(previously $25)")."""
    if any(d.start <= q.start < d.end for d in dates):
        return True
    if q.unit == "day" and q.text.endswith("日") and not (_JA_DURATION_AFTER.match(sentence[q.end:q.end + 4])
                                                       or _JA_DURATION_BEFORE.search(sentence[max(0, q.start - 4):q.start])):
        return True  # 「1日にご注文の場合、3日が期限」: days of the month, not durations
    if q.unit == "day" and any(0 <= q.start - d.end <= 4 for d in dates) and \
            joins_dates(sentence[max(d.end for d in dates if d.end <= q.start):q.start]):
        return True
    return bool(_ELAPSED_AFTER.match(sentence[q.end:q.end + 4])
                or (shopper_numbers and (q.unit, q.value) in shopper_numbers)
                or _STALE_BEFORE.search(sentence[max(0, q.start - 24):q.start]))


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
                     given: set[tuple[str, float]] = frozenset(), worked: WorkedOut | None = None) -> PolicyComparison:
    """Each claim against the knowledge's numbers for the same topic and kind of unit: agreeing
    (same value or inside the range, compatible conditions), contradicting (the knowledge gives the
    topic a different value under compatible conditions) or unknown (the knowledge is silent)."""
    result = PolicyComparison()
    # "Shipping: $0.00" is the knowledge's free shipping, whether or not the order qualifies (the judge's).
    free_shipping = any(k.topic == "free_shipping" for k in knowledge)
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
        if match is None and claim.unit == "duration":
            match = next((k for k in fitting if same_in_business_days(claim, k)), None)
        free = free_shipping and claim.high == 0 and claim.unit in ("usd", "jpy")
        if match is not None:
            result.agree.append((claim, match))
        # What the answer works out (``worked``: a shortfall, a rate applied) is no second value of it.
        elif fitting and not claim.negated and not elsewhere and not free and not (worked and worked.applies(claim, fitting)):
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


def reported_number(number: PolicyNumber) -> bool:
    """A number the answer attributes to another source ("the text you pasted says 20%")."""
    at = number.sentence.find(number.text)
    return at >= 0 and reported_at(number.sentence, at)


def value_statements(reading: Reading, context: str | None = None,
                     shoppers: set[tuple[str, float]] | None = None) -> list[ValueStatement]:
    """The single policy values an answer gives, for comparing within it and across turns. A
    product's price and stock status are the catalog's to judge (a second price of one product is a
    price contradiction when it is wrong, and a sale, a total or another product's price when it is
    not), so they are not compared here."""
    out: list[ValueStatement] = []
    prices = {(i.currency.lower(), round(i.price, 2)) for i in reading.items(reading.in_play)}
    for number in policy_numbers(reading.text, context, shopper_numbers=shoppers):
        if number.low != number.high or number.negated or number.unit == "date" or \
                (number.topic == "discount" and number.unit in ("usd", "jpy")):
            continue  # a range or a negated number is not a single value; a date is an event's; an amount off varies with the order
        if (number.unit, round(number.low, 2)) in prices:
            continue  # a product's price in a sentence about shipping ("Vol. 1 at $10.99 + ..."): the catalog's
        if reported_number(number):
            continue  # another source's number ("the text you pasted says 20%"): not the answer's own
        section = _section_of(reading.norm, number.sentence)
        conditions = number.conditions | ({f"section:{section}"} if section else set())
        out.append(ValueStatement(f"policy:{number.topic}:{number.unit}", f"{number.low:g}", number.text,
                                  number.sentence, frozenset(conditions)))
    return out


# A heading line of the answer ("**Without MangaPass**", "### Option B"): what follows it is said of
# that case, so two sections may give one fee two values ("$4.99" without a membership, "$0" with).
_HEADING = re.compile(r"^[ \t]*(?:#{1,6}[ \t]+[^\n]+|\*\*[^*\n]+\*\*:?|__[^_\n]+__:?)[ \t]*$", re.MULTILINE)


def _section_of(norm: str, sentence: str) -> str | None:
    at = norm.find(sentence.strip())
    if at < 0:
        return None
    headings = [m for m in _HEADING.finditer(norm, 0, at)]
    return headings[-1].group(0).strip(" \t#*_:") if headings else None


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


def subjects_of(case: TestCase, sentence: str) -> frozenset[str]:
    """What a sentence is about: the catalog products it names and the policy topics it states."""
    products = index_for(case.catalog).named(sentence) if case.catalog else []
    return frozenset(products) | {t for _, t in topic_words(normalize(sentence))}
