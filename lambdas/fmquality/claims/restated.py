"""A clause of the knowledge said again with another number: where an answer's clause and a clause of
the retrieved knowledge say the same thing around a duration or a percentage (most of the smaller
one's content words are shared), the answer gives a value that the knowledge clause does not, and
that no evidence of the case gives anywhere.

This reads what the policy reading by topic (``claims.policy``) cannot place: a knowledge sentence
whose policy has no topic word ("Damaged items: report within 14 days of delivery",
「受け取り期限は店舗到着から7日間」), and a range restated with another end ("1〜2営業日" as "1〜9営業日").
Silent on: a number the evidence gives anywhere (the shopper's own, another policy's), a question, a
condition or a negation the knowledge clause does not carry, and a sentence that also gives the
knowledge clause's own numbers (the other one is then something else: the days left, a total)."""

from __future__ import annotations

import re

from fmquality.domain.case import TestCase
from fmquality.language.alignment import Unit, read_units, unit_of
from fmquality.language.negation import is_conditional, is_question, polarity_differs

# The kinds of number a policy clause states (``language.alignment``): durations in days, percentages.
KINDS = ("duration", "percent")
# Clause boundaries: punctuation, brackets, dashes, and the conjunctions that join two statements.
_CLAUSE = re.compile(r"[、;：。!?！？()（）「」『』—–]|[,:](?!\d)|\s-\s|\b(?:but|so|though|while|whereas)\b|けど|けれど|ですが|ますが|ので")
# Said about the same thing: this share of the smaller clause's content words in both, and at least
# this many of them (Japanese counts its character pairs too).
SHARED_SHARE = 0.5
SHARED_MIN = 2


def _numbers(unit: Unit) -> set[tuple[str, float]]:
    return {(k, v) for k, v in unit.numbers if k in KINDS}


def _clauses(text: str) -> list[tuple[Unit, Unit]]:
    """(sentence, clause) for every clause with a duration or a percentage."""
    out = []
    for sentence in read_units(text):
        if not _numbers(sentence):
            continue
        for piece in _CLAUSE.split(sentence.text):
            clause = unit_of(piece)
            if _numbers(clause):
                out.append((sentence, clause))
    return out


def _words(unit: Unit) -> frozenset[str]:
    return frozenset(t for t in unit.tokens if not t.startswith("~"))


def _same_saying(a: Unit, b: Unit) -> float:
    """How much two clauses share around their numbers: 0 unless they share at least SHARED_MIN
    words (or twice as many Japanese character pairs) and SHARED_SHARE of the smaller clause."""
    shared_words, shared = _words(a) & _words(b), a.tokens & b.tokens
    if len(shared_words) < SHARED_MIN and len(shared - shared_words) < 2 * SHARED_MIN:
        return 0.0
    share = len(shared) / max(1, min(len(a.tokens), len(b.tokens)))
    return share if share >= SHARED_SHARE else 0.0


def _evidence_numbers(case: TestCase) -> set[tuple[str, float]]:
    texts = [*case.retrieved_chunks, case.query, *(m.content for m in case.conversation_history),
             case.page_context.model_dump_json(exclude_none=True), *(i.model_dump_json() for i in case.catalog)]
    return {n for text in texts for u in read_units(text) for n in _numbers(u)}


def restated_with_another_number(case: TestCase, text: str) -> list[str]:
    """Each answer clause that restates a knowledge clause with another duration or percentage."""
    knowledge = [c for chunk in case.retrieved_chunks for _, c in _clauses(chunk)]
    if not knowledge:
        return []
    given = _evidence_numbers(case)
    out = []
    for sentence, clause in _clauses(text):
        if is_question(sentence.text):
            continue
        scored = [(_same_saying(clause, k), k) for k in knowledge]
        share, source = max(scored, key=lambda sk: sk[0])
        if not share or polarity_differs(source, clause) or (is_conditional(clause.text) and not is_conditional(source.text)):
            continue
        mine, said = _numbers(clause), _numbers(sentence)
        for kind, value in sorted(mine - given):
            own = {v for k, v in _numbers(source) if k == kind}
            if own and not own <= {v for k, v in said if k == kind}:
                out.append(f"{clause.text.strip()[:60]!r} restates the knowledge's {source.text.strip()[:60]!r} with "
                           f"{value:g} where it gives {', '.join(f'{v:g}' for v in sorted(own))} ({kind}, in days)"
                           if kind == "duration" else
                           f"{clause.text.strip()[:60]!r} restates the knowledge's {source.text.strip()[:60]!r} with "
                           f"{value:g}% where it gives {', '.join(f'{v:g}%' for v in sorted(own))}")
                break
    return list(dict.fromkeys(out))
