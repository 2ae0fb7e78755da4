"""What an offline signal is: the offline judge's reading of a sub-score, or of a whole dimension.

A scheme gives the offline judge (``judges/offline``) its signals dimension by dimension
(``Scheme.signals``), in one of two shapes:

- ``SubScoreSignals``: one function per sub-score, each returning a ``Signal`` (MangaAssist: every
  sub-score is read on its own, and a heuristic reading counts with the weight its measured agreement
  with people earns);
- ``DimensionSignal``: one function for the whole dimension, returning a ``DimensionReading`` (the
  generic profiles: the dimension read at one value, a level of the profile when it describes them).

A signal that has nothing to read raises ``Abstain`` with the reason: the sub-score is left unscored,
never given a middle or a full mark.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fmquality.domain.case import TestCase

if TYPE_CHECKING:
    from fmquality.config.rubric import Rubric


class Abstain(Exception):
    """No evidence to grade this sub-score (or dimension) with; the message says why."""


@dataclass(frozen=True)
class Signal:
    """A sub-score read from the text, with what it was read from. ``finding`` marks a reading that
    rests on one specific, named defect (plain speech to a shopper, an impolite formula, a sales pitch
    nobody asked for): it is graded as a verdict, at its level, and may fail an item at the lowest
    one. Any other reading is heuristic: it counts through the composite with the weight its
    measured agreement with people earns (``judges/offline/agreement.yaml``), and never fails an item
    alone."""

    score: float
    evidence: list[str]
    finding: bool = False


# case, rubric, the hints the checks left with the judge request -> the reading (or Abstain)
SignalFn = Callable[[TestCase, "Rubric", Sequence[str]], Signal]


@dataclass(frozen=True)
class SubScoreSignals:
    """A dimension whose sub-scores are read one by one; a sub-score without a function abstains."""

    by_sub_score: Mapping[str, SignalFn]


@dataclass(frozen=True)
class DimensionReading:
    """A whole dimension read at one ``value`` (``level`` names it when the profile describes levels).
    ``sub_scores`` holds the sub-scores the reading tells apart; the others take ``value``."""

    value: float
    evidence: list[str]
    sub_scores: Mapping[str, float]
    level: str | None = None

    def score_of(self, sub_score: str) -> float:
        return self.sub_scores.get(sub_score, self.value)


@dataclass(frozen=True)
class DimensionSignal:
    """A dimension read as a whole (raises Abstain when there is nothing to read)."""

    read: Callable[[TestCase, "Rubric"], DimensionReading]


OfflineSignals = SubScoreSignals | DimensionSignal
