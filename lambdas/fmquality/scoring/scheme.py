"""What a scoring scheme is: the code that scores the dimensions a profile describes.

A profile (``datasets/profiles/<name>.yaml``) is data: its dimensions, sub-scores, weights, levels,
``check_settled``, ``applies_when``, the composite and the letter grades. It names its scheme
(``scheme: <name>``); the scheme is the code behind those names:

- ``check(dimension, case, rubric)``: the deterministic checks of one dimension, as a ``CheckReport``
  that places each of the dimension's sub-scores exactly once (settled from evidence, not applicable,
  or left to the judge with hints) - ``scoring.plan`` turns it into a plan;
- ``signals(dimension)``: the offline judge's readings of what the checks left open
  (``scoring.signal``);
- ``render_case(case)``: the case as data for a judge (the fields the scheme's dimensions read);
- ``judge_prompt`` and ``combined_judging``: which Bedrock prompt grades its dimensions, and whether
  the open dimensions of a case may be graded in one call.

The composite and the letter grades are not the scheme's: ``scoring.composite`` computes them from
the profile and the rubric, the same for every scheme. Schemes live in ``fmquality.schemes`` (a layer
above this one) and are found by name with ``fmquality.schemes.scheme_for(rubric)``; the scoring
functions are given the scheme, they never look one up.
"""

from __future__ import annotations

from typing import Literal, Protocol

from fmquality.scoring.plan import SchemeChecks
from fmquality.scoring.signal import OfflineSignals

# "mangaassist": the shopping assistant's prompt (judges/bedrock/prompts.py: levels 1-5 per sub-score,
# the casebook, the store's conventions; it has a combined form). "profile_levels": the prompt built
# from the profile's dimension, its description and its described levels, one dimension per call.
JudgePrompt = Literal["mangaassist", "profile_levels"]


class Scheme(SchemeChecks, Protocol):
    """The code that scores a profile's dimensions: ``render_case`` and ``check`` (``SchemeChecks``),
    the offline signals, and how the Bedrock judge grades its dimensions."""

    name: str
    judge_prompt: JudgePrompt
    combined_judging: bool

    def signals(self, dimension: str) -> OfflineSignals: ...
