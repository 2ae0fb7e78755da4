"""Consistency signals: claims about the same thing compared for polarity, and who the answer says it is.

- intra_turn / cross_turn: every pair of claim sentences about the same subject (the same product
  or policy topic, or mostly the same words) within the answer, or between an earlier assistant
  turn and the answer, is compared: one affirmed and the other negated, neither under a condition,
  is a contradiction. The score is the share of compared pairs that agree.
- persona: an answer that says what the assistant is either names the persona or the store's
  assistant role, or presents itself as something else.
"""

from __future__ import annotations

import re

from fmquality.language.alignment import Unit, comparable_pairs, read_units, subject_tokens
from fmquality.language.negation import is_conditional, polarity_differs
from fmquality.claims.policy import subjects_of
from fmquality.schemes.mangaassist.consistency.check import SELF_REFERENCE
from fmquality.domain.case import TestCase
from fmquality.scoring.signal import Abstain, Signal, SignalFn
from fmquality.config.rubric import Rubric
from fmquality.language.text import normalize

_ROLE = re.compile(r"\b(?:assistant|shopping assistant|store assistant|helper|staff)\b|アシスタント|スタッフ|店員")


def _compare(case: TestCase, pairs: list[tuple[Unit, Unit]]) -> Signal:
    names = subject_tokens(case)
    flips = [(a, b) for a, b in pairs
             if polarity_differs(a, b, names) and not is_conditional(a.text) and not is_conditional(b.text)]
    evidence = [f"{len(pairs) - len(flips)} of {len(pairs)} pairs of claims about the same thing agree"]
    evidence += [f"stated both ways: {a.text.strip()!r} / {b.text.strip()!r}" for a, b in flips[:3]]
    return Signal(1.0 - len(flips) / len(pairs), evidence)


def intra_turn(case: TestCase) -> Signal:
    units = read_units(case.response or "")
    pairs = comparable_pairs(units, units, lambda u: subjects_of(case, u.text), same_text=True)
    if not pairs:
        raise Abstain("no two claims about the same thing")
    return _compare(case, pairs)


def cross_turn(case: TestCase) -> Signal:
    earlier = [u for m in case.conversation_history if m.role == "assistant" for u in read_units(m.content)]
    pairs = comparable_pairs(earlier, read_units(case.response or ""), lambda u: subjects_of(case, u.text))
    if not pairs:
        raise Abstain("the answer says nothing about what the earlier turns said")
    return _compare(case, pairs)


def persona(case: TestCase, rubric: Rubric) -> Signal:
    norm = normalize(case.response or "")
    if normalize(rubric.persona.name) in norm:
        return Signal(1.0, [f"presents itself as {rubric.persona.name}"])
    if _ROLE.search(norm):
        return Signal(1.0, ["presents itself as the store's assistant"])
    said = SELF_REFERENCE.search(norm)
    if said is None:
        raise Abstain("the answer does not say what it is")
    return Signal(0.0, [f"presents itself as {norm[said.start():said.end() + 30].strip()!r}, not as the store's assistant"])


# The offline judge's reading of each sub-score the checks may leave open.
SIGNALS: dict[str, SignalFn] = {
    "intra_turn": lambda case, rubric, hints: intra_turn(case),
    "cross_turn": lambda case, rubric, hints: cross_turn(case),
    "persona": lambda case, rubric, hints: persona(case, rubric),
}
