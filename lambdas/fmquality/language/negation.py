"""Negation and conditions: whether a statement is denied, made under a condition, or asked.

The one home of the rules that decide what a sentence asserts, in English and Japanese:

- negation of a clause (``is_negated``: "not", "n't", "never", ません, ない, ず, ...), and the
  words a negation governs (``negated_tokens``: "cannot be combined" negates "combine", 返品できません
  negates 返品), so that two sentences stating one thing with opposite polarity are told apart
  (``polarity_differs``);
- a negation right around a phrase ("isn't sold out", 売り切れではありません: ``negated_before``,
  ``negated_after``; "hasn't shipped yet", まだ: ``not_yet_before``);
- conditions: a claim made under one ("if it arrived damaged, ...", 場合, たら: ``is_conditional``,
  ``condition_in``, ``conditional_ending``); what "unless" introduces is an exception to the claim,
  not a condition of it (``EXCEPTION_CLAUSE``); and the store conditions under which two policy
  numbers are both true ("unopened: 15 days", "damaged: 30 days": ``conditions_in``);
- questions (``is_question``).

The words are the grammar of English and Japanese and the conditions of an online store's policies,
not phrases taken from a dataset. A new negation word goes into ``_NEGATION_WORDS`` (English) or
both Japanese patterns (characters of a clause, tokens of the segmenter).
"""

from __future__ import annotations

import re
from typing import Protocol

from fmquality.language.text import is_hiragana, tokenize
from fmquality.language.vocabulary import concept_tokens

# --------------------------------------------------------------------------------------------------
# Negation of a clause
# --------------------------------------------------------------------------------------------------

_CONTRACTIONS = (("can't", "can not"), ("cannot", "can not"), ("won't", "will not"), ("n't", " not"))
# English negation words ("no longer" reads as its "no"); contractions are expanded first.
_NEGATION_WORDS = ("not", "no", "never", "none", "nothing", "neither", "nor", "without")
_NEGATION_EN = re.compile(rf"\b({'|'.join(_NEGATION_WORDS)})\b")
# Japanese negation in a clause's characters, and as the segmenter's tokens (for its scope).
_NEGATION_JA = re.compile(r"ません|ない(?!よう)|なかった|ず[、。に]|ずに|不可|できかね|お断り|なし(?![か])")
_NEGATION_JA_TOKEN = re.compile(r"^(?:ない|ません|ませ|ず|なかっ|なく|ぬ|不可)$")
# As a token, "non" is the prefix of "non-refundable": it negates the word it is joined to.
_NEGATION_EN_TOKEN = re.compile(rf"^(?:{'|'.join(_NEGATION_WORDS)}|non)$")


def expand_contractions(norm: str) -> str:
    for short, long in _CONTRACTIONS:
        norm = norm.replace(short, long)
    return norm


def _negation_count(norm: str) -> int:
    """Negations in a (normalized) clause: "not", "n't", "never", "no", ません, ない, ず..."""
    expanded = expand_contractions(norm)
    return len(_NEGATION_EN.findall(expanded)) + len(_NEGATION_JA.findall(norm))


def is_negated(norm: str) -> bool:
    return _negation_count(norm) % 2 == 1


# --------------------------------------------------------------------------------------------------
# Negation right around a phrase
# --------------------------------------------------------------------------------------------------

# "isn't sold out", "not in stock", "no longer available": a negation up to two words before.
_NEGATED_BEFORE = re.compile(r"(\bnot|n't|\bno longer|\bnever)(\s+\w+){0,2}\s*$")
# "売り切れではありません", "品切れじゃない": a negated copula right after.
_NEGATED_AFTER = re.compile(r"^\s*(では|じゃ)(ありません|ない|ございません)")
# "hasn't shipped yet", "not on its way", まだ発送: what has not happened yet.
_NOT_YET_BEFORE = re.compile(r"(?:\bnot|n't|\bnever)(?:\s+\w+){0,2}\s*$|まだ")


def negated_before(before: str) -> bool:
    """Whether the text just before a phrase negates it."""
    return _NEGATED_BEFORE.search(before) is not None


def negated_after(after: str) -> bool:
    """Whether the text just after a phrase negates it (a Japanese negated copula)."""
    return _NEGATED_AFTER.match(after) is not None


def not_yet_before(before: str) -> bool:
    """Whether the text before an event phrase says it has not happened (yet)."""
    return _NOT_YET_BEFORE.search(before) is not None


# --------------------------------------------------------------------------------------------------
# Conditions
# --------------------------------------------------------------------------------------------------

_CONDITION = re.compile(
    r"\b(if|only if|as long as|as soon as|provided|once|when|after|before|until)\b"
    r"|場合|なら|たら|ければ|次第|ただし"
)
EXCEPTION_CLAUSE = re.compile(r"\bunless\b|\bexcept\b|を除き|でない限り|場合を除")
# A Japanese verb ending that makes a statement a condition: 発送されましたら, 入荷次第.
_CONDITIONAL_ENDING = re.compile(r"ら|次第|たら")


def condition_in(text: str) -> bool:
    """Whether the text holds a condition word ("if", "once", "when", 場合, たら, ...)."""
    return _CONDITION.search(text) is not None


def conditional_ending(after: str) -> bool:
    """Whether the text right after a verb phrase makes it a condition (ら, 次第, たら)."""
    return _CONDITIONAL_ENDING.match(after) is not None


def is_conditional(norm: str) -> bool:
    """A claim made under a condition ("if it arrived damaged, ..."). What follows "unless" is an
    exception to the claim, not a condition of it: "opened items cannot be returned unless damaged"
    is a plain refusal."""
    return condition_in(EXCEPTION_CLAUSE.split(norm)[0])


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


# "unopened" must not also count as "opened", nor 未開封 as 開封. Compiled once.
_CONDITION_PATTERNS = [(re.compile(rf"(?<![a-z未]){re.escape(word)}"), canonical) for word, canonical in CONDITIONS.items()]


def conditions_in(norm: str) -> frozenset[str]:
    """The store conditions a (normalized) text names, canonical ("sealed" is "unopened")."""
    return frozenset(canonical for pattern, canonical in _CONDITION_PATTERNS if pattern.search(norm))


def is_question(norm: str) -> bool:
    return norm.rstrip().endswith(("?", "？")) or re.search(r"(ですか|ますか|でしょうか)[。？?]?\s*$", norm) is not None


# --------------------------------------------------------------------------------------------------
# What a negation governs, and opposite polarity
# --------------------------------------------------------------------------------------------------

_CLAUSE = re.compile(r"[,;:!?、。—–]|\s-\s|\.(?=\s|$)|\b(?:but|unless|except|so|because|although|though|while|and|or|if|when)\b")
# Adverbs sit between a negation and what it denies ("does not currently offer").
_ADVERB = re.compile(r"^(?:[a-z]+ly|still|yet|always|ever|even|just|also|quite|really|actually|anymore|right)$")


def _concepts_of(word: str) -> set[str]:
    return {c for c in concept_tokens(word) if not c.startswith("~")}


def _scoped(words: list[str]) -> set[int]:
    """Indexes of the words of one clause that a negation governs."""
    scoped: set[int] = set()
    for index, word in enumerate(words):
        if _NEGATION_EN_TOKEN.match(word):
            following = next((i for i in range(index + 1, len(words))
                              if _concepts_of(words[i]) and not _ADVERB.match(words[i])), None)
            if following is not None:
                scoped.add(following)
        elif _NEGATION_JA_TOKEN.match(word):
            # Past a chain of function words: 受け(する こと が でき)ません.
            previous = next((i for i in range(index - 1, max(-1, index - 8), -1)
                             if _concepts_of(words[i]) and not is_hiragana(words[i])), None)
            if previous is not None:
                scoped.add(previous)
                # 返品をお受けすることができません: the negated verb's object is refused with it.
                if previous >= 2 and words[previous - 1] == "を" and _concepts_of(words[previous - 2]):
                    scoped.add(previous - 2)
    return scoped


def negated_tokens(norm: str) -> frozenset[str]:
    """Content words a negation governs: in English the first content word after "not", "never",
    "no", "n't" in the same clause ("cannot be combined with other discounts" negates "combined"); in
    Japanese the word right before ない / ません / ず (返品できません negates 返品)."""
    negated: set[str] = set()
    affirmed: set[str] = set()
    for clause in _CLAUSE.split(expand_contractions(norm)):
        words = tokenize(clause)
        scoped = _scoped(words)
        for index, word in enumerate(words):
            if index in scoped:
                negated.update(_concepts_of(word))
            elif not scoped:
                affirmed.update(_concepts_of(word))
    # A word also stated in a clause without negation is affirmed ("no charge when you order; you
    # are charged when it ships"); the other words of a negated clause are neither.
    return frozenset(negated - affirmed)


class Stated(Protocol):
    """A statement as alignment reads it (``alignment.Unit``): its content words and the negated ones."""

    tokens: frozenset[str]
    negated: frozenset[str]


def polarity_differs(a: Stated, b: Stated, names: frozenset[str] = frozenset()) -> bool:
    """Whether two sentences state what they share with opposite polarity: a word they both carry is
    negated in one and not in the other. ``names`` (the products' names) are what the sentences are
    about, not what they say: "no Chainsaw Man, then" does not deny "Chainsaw Man is $11.99"."""
    shared = (a.tokens & b.tokens) - names
    return bool((a.negated & shared) ^ (b.negated & shared))
