"""When a pre-order is paid for: the event a charge is tied to, read from the knowledge and the answer.

A timing claim is read completely when one sentence names its subject (a pre-order), a charge verb
("charged", "billed", 請求, 決済, 引き落とし) and, in the charge's own clause, the event it happens at:
the order being placed ("at checkout", "immediately", 「ご予約の時点で」) or the item shipping ("when
the item ships", 「発送時に」). "You won't be charged until it ships" ties the charge to shipping;
"not when you place it" denies placing. Anything else (a release date, a deposit, an authorization,
a sentence that also speaks of in-stock items, a question or a condition) is not read: silent.

Two uses, both of one reading:
- ``knowledge_contradictions``: the answer ties a pre-order's charge to an event the knowledge does
  not, where the knowledge ties it to exactly one event and speaks of no deposit or authorization.
- ``timing_flips``: the answer ties the charge for one undistinguished subject ("each item", "both")
  to two different events.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fmquality.language.negation import expand_contractions, is_question
from fmquality.language.text import has_japanese, normalize, segment_spans

PLACE, SHIP = "when the order is placed", "when the item ships"

_PREORDER = re.compile(r"\bpre-?orders?\b|\bpre-?ordered\b|予約")
# Another kind of item in the same sentence: the charge may be that item's, not the pre-order's.
_OTHER_ITEM = re.compile(r"\bin[- ]stock\b|\bregular (?:orders?|items?)\b|\bother (?:item|one|book)s?\b|在庫あり|在庫品|通常(?:商品|注文)")
# A charge in parts, or a hold that is not a charge: the timing of "the charge" is then not one event.
_PARTIAL = re.compile(r"\bdeposit|\bauthori[sz]|\bbalance\b|\bremaining\b|\bthe rest\b|\bhold\b|\binstal?lments?\b|\d+ ?%|"
                      r"頭金|内金|手付|前金|残金|残額|残り|与信|分割")
_CHARGE_EN = re.compile(r"\b(?:charg(?:e|ed|es|ing)|bill(?:ed|s|ing)?|debit(?:ed|s)?|(?:full amount|payment) (?:is|will be|gets?) "
                        r"(?:taken|collected|captured|processed))\b(?! address)(?! of charge)")
_CHARGE_JA = re.compile(r"請求|決済|引き落と|課金|お支払いが確定|代金をいただ")
# Any word of paying, for the knowledge's deposits and holds ("a 20% deposit at order").
_PAYS = re.compile(_CHARGE_EN.pattern + "|" + _CHARGE_JA.pattern + r"|\bpa(?:y|id)|支払")
_NEGATED_CHARGE_EN = re.compile(r"(?:\bnot|\bnever|\bnothing|\bno)\b(?:\s+\w+){0,2}\s*$")
# Events in English, read in the charge's clause after (or just before) the verb.
_EVENT_EN = (
    (SHIP, re.compile(r"\b(?:when|once|after|as soon as|until|till|the day|the moment|at the time)\b(?:\s+[\w'-]+){0,4}?\s+"
                      r"(?:ships?|shipped|dispatch(?:es|ed)?|goes out|is sent|are sent)\b"
                      r"|\b(?:at|on|upon)\s+(?:the time of\s+)?(?:shipping|shipment|dispatch)\b")),
    (PLACE, re.compile(r"\b(?:when|once|as soon as|the moment|at the time)\b(?:\s+[\w'-]+){0,3}?\s+"
                       r"(?:place[sd]?|order(?:s|ed)?|pre-?order(?:s|ed)?|check(?:s|ed)? out|buy|purchase[sd]?)\b"
                       r"|\b(?:at|upon|on)\s+(?:the time of\s+)?(?:checkout|check-out|ordering|purchase|order)\b"
                       r"|\b(?:immediately|right away|right now|up ?front|today|now)\b")),
)
_EVENT_JA = (
    (SHIP, re.compile(r"(?:発送|出荷)(?:され)?たら|(?:発送|出荷)(?:時|後|の際|された時点|の時点|される(?:とき|時|際|タイミング)|のタイミング)")),
    (PLACE, re.compile(r"(?:ご?予約|ご?注文|ご?購入)(?:の|した|された|いただいた|確定の?)?(?:時点|時|際|タイミング)|予約時|注文時|"
                       r"すぐに|即時|即座に|今すぐ|本日")),
)
# A condition narrows the subject ("if you pay by PayPal", 「クレジットカードの場合」): not read. "When" is
# not one here: it introduces the event itself.
_CONDITION = re.compile(r"\b(?:if|unless|provided|as long as|only for)\b|場合|なら|ければ")
_DENIED_JA = re.compile(r"^に?(?:では|じゃ)(?:なく|ありません|ない)")
_CLAUSE_END_EN = re.compile(r"[,;:!?—–(]|\.(?=\s|$)|\b(?:but|and|so|while|whereas|although|though)\b")


@dataclass(frozen=True)
class ChargeTiming:
    event: str
    preorder: bool  # the sentence names a pre-order
    other_item: bool  # ... or another kind of item too
    sentence: str


def _english_events(sentence: str) -> list[str]:
    out: list[str] = []
    for verb in _CHARGE_EN.finditer(sentence):
        negated = _NEGATED_CHARGE_EN.search(sentence[: verb.start()]) is not None
        after = sentence[verb.end():]
        end = _CLAUSE_END_EN.search(after)
        clause = after[: end.start()] if end else after
        # "immediately charged": an event word just before the verb belongs to it too.
        before = sentence[max(0, verb.start() - 16): verb.start()]
        # "when the pre-order ships" names the shipping; its "when the pre-order" is not the placing.
        shipping = [m.start() for m in _EVENT_EN[0][1].finditer(clause)]
        for event, pattern in _EVENT_EN:
            found = [m for m in pattern.finditer(clause) if event == SHIP or m.start() not in shipping]
            for m in (*found, *(m for m in pattern.finditer(before) if event == PLACE)):
                denied = re.search(r"\bnot\s*$", m.string[: m.start()]) is not None
                # "won't be charged until it ships": the charge comes with the event.
                if negated and not re.match(r"(?:until|till)\b", m.group(0)):
                    continue
                if not denied:
                    out.append(event)
    return out


def _japanese_events(sentence: str) -> list[str]:
    out: list[str] = []
    for verb in _CHARGE_JA.finditer(sentence):
        before = sentence[max(0, verb.start() - 40): verb.start()]
        after = sentence[verb.end(): verb.end() + 12]
        if re.match(r"^[^。、]{0,6}(?:ません|ない|されず|しない)", after):
            continue  # 「請求されません」: a charge denied says nothing about when one happens
        for event, pattern in _EVENT_JA:
            for m in pattern.finditer(before):
                if not _DENIED_JA.match(before[m.end():]):
                    out.append(event)
    return out


def _sentences(text: str) -> list[str]:
    norm = expand_contractions(normalize(text))
    return [norm[start:end] for start, end in segment_spans(norm)]


def timings(text: str) -> list[ChargeTiming]:
    """The charge timings a text states plainly (not asked, not conditional, not in parts)."""
    return _timings(_sentences(text))


def _timings(sentences: list[str]) -> list[ChargeTiming]:
    out: list[ChargeTiming] = []
    for sentence in sentences:
        if is_question(sentence) or _CONDITION.search(sentence) or _PARTIAL.search(sentence):
            continue
        events = _japanese_events(sentence) if has_japanese(sentence) else _english_events(sentence)
        for event in dict.fromkeys(events):
            out.append(ChargeTiming(event, _PREORDER.search(sentence) is not None,
                                    _OTHER_ITEM.search(sentence) is not None, sentence.strip()))
    return out


def knowledge_timing(chunks: list[str]) -> str | None:
    """The one event the knowledge ties a pre-order's charge to; None when it gives none, several, or
    speaks of a deposit or an authorization beside it (the charge is then not one event)."""
    events: set[str] = set()
    for chunk in chunks:
        sentences = _sentences(chunk)
        if any(_PREORDER.search(s) and _PARTIAL.search(s) and _PAYS.search(s) for s in sentences):
            return None
        events |= {t.event for t in _timings(sentences) if t.preorder and not t.other_item}
    return events.pop() if len(events) == 1 else None


def knowledge_contradictions(answer: str, chunks: list[str]) -> list[str]:
    """A pre-order's charge tied to an event the knowledge does not tie it to."""
    known = knowledge_timing(chunks)
    if known is None:
        return []
    return list(dict.fromkeys(
        f"the answer says a pre-order is charged {t.event} ({t.sentence!r}); the knowledge says {known}"
        for t in timings(answer) if t.preorder and not t.other_item and t.event != known))


def timing_flips(answer: str) -> list[str]:
    """The charge for one undistinguished subject ("each item", "both") tied to two events."""
    plain = [t for t in timings(answer) if not t.preorder and not t.other_item]
    events = {t.event for t in plain}
    if len(events) < 2:
        return []
    first = next(t for t in plain if t.event == PLACE)
    second = next(t for t in plain if t.event == SHIP)
    return [f"the charge is said to come {PLACE} ({first.sentence!r}) and {SHIP} ({second.sentence!r})"]
