"""Whether something is covered: a campaign's or a policy's scope ("電子書籍は対象外です", 「ブルーロックは
対象です」) and who pays a cost (「返送料はお客様のご負担」 / 「当社負担」), read from Japanese text.

A statement is read when a topic (a noun phrase marked with は or も, a title in 『』) is followed, before
the next topic of its sentence, by a predicate of scope or of payer, with no が-marked phrase between
them ("本キャンペーンは紙のコミックスのみが対象": the campaign is not what is covered). Questions and
conditions (場合, なら, ければ) are not read. Two statements speak of one thing when one topic contains the
other once 『』, 版 and の are set aside (電子書籍版 and 電子書籍), and they contradict when they give it
the two values. English wording is not read here: silent.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fmquality.language.negation import is_question
from fmquality.language.text import normalize, segment_spans, strip_markup

_TOPIC = re.compile(r"(?P<subject>『[^』]{1,40}』(?:の[\u3040-\u30ff\u4e00-\u9fffー]{1,8})?|[\u30a0-\u30ff\u4e00-\u9fffー]"
                    r"[\u3040-\u30ff\u4e00-\u9fffー]{1,11})(?:は|も)(?![いゃ])")
# Particles that make "Xで/に/と + は" a frame, not a topic (当店では, 場合には).
_FRAME_END = ("で", "に", "と", "から", "まで", "より", "場合", "際", "時")
_NOT_COVERED = re.compile(r"対象外|対象(?:では|じゃ)(?:ありません|ございません|ない)|対象(?:に|と)(?:は)?なりません|適用(?:され|でき)ません")
_COVERED = re.compile(r"対象(?:でございます|です|となります|になります|となっております|になっております|となる)")
_SHOPPER_PAYS = re.compile(r"お客様(?:の)?ご?負担(?:と|に)?(?:なります|でございます|です|いただ)")
_STORE_PAYS = re.compile(r"(?:当社|当店|弊社)(?:の)?(?:負担|にて負担)|お客様(?:の)?ご?負担(?:は)?(?:ございません|ありません|なし)|無料(?:でございます|です|となります)")
_CONDITION = re.compile(r"場合|なら|ければ|たら")


@dataclass(frozen=True)
class Scope:
    subject: str  # the topic as written
    kind: str  # "covered" or "payer"
    value: str  # covered: "yes"/"no"; payer: "shopper"/"store"
    sentence: str


def _key(subject: str) -> str:
    return re.sub(r"[『』「」]|版$|の", "", subject)


def scopes(text: str) -> list[Scope]:
    out: list[Scope] = []
    norm = normalize(strip_markup(text or ""))
    for start, end in segment_spans(norm):
        sentence = norm[start:end]
        if is_question(sentence) or _CONDITION.search(sentence):
            continue
        topics = [m for m in _TOPIC.finditer(sentence) if not m.group("subject").endswith(_FRAME_END)]
        for i, topic in enumerate(topics):
            rest = sentence[topic.end(): topics[i + 1].start() if i + 1 < len(topics) else len(sentence)]
            for kind, value, pattern in (("covered", "no", _NOT_COVERED), ("covered", "yes", _COVERED),
                                         ("payer", "store", _STORE_PAYS), ("payer", "shopper", _SHOPPER_PAYS)):
                found = pattern.search(rest)
                if found and "が" not in rest[: found.start()]:
                    out.append(Scope(topic.group("subject"), kind, value, sentence.strip()))
                    break
    return out


def same_thing(a: Scope, b: Scope) -> bool:
    ka, kb = _key(a.subject), _key(b.subject)
    return a.kind == b.kind and len(min(ka, kb, key=len)) >= 2 and (ka in kb or kb in ka)


def conflicts(first: list[Scope], second: list[Scope], *, general_first: bool = False) -> list[tuple[Scope, Scope]]:
    """Pairs that give one thing the two values of one kind. ``general_first``: the first are rules (the
    knowledge's), which speak of a statement of the second only when their topic is within its topic
    ("電子書籍" covers "『薬屋』の電子書籍版"; "お客様都合による返品の返送料" does not cover every "返送料")."""
    return [(a, b) for a in first for b in second if a is not b and a.value != b.value and same_thing(a, b)
            and (not general_first or _key(a.subject) in _key(b.subject))]


def describe(a: Scope, b: Scope) -> str:
    what = {"yes": "covered", "no": "not covered", "shopper": "paid by the shopper", "store": "paid by the store"}
    return f"{a.subject} is {what[a.value]} ({a.sentence[:50]!r}) and {what[b.value]} ({b.sentence[:50]!r})"
