"""MangaAssist, the shopping assistant's scoring scheme: one folder per dimension.

Each dimension folder holds ``check.py`` (``check(case, rubric) -> CheckReport``: the deterministic
checks, which settle a sub-score only from evidence they attributed) and ``signal.py`` (``SIGNALS``:
the offline judge's reading of each sub-score the checks may leave open). The dimensions, their
sub-scores and weights are the profile's (``datasets/profiles/mangaassist.yaml``): ``DIMENSIONS`` and
``SUB_SCORES`` are read from it, for the code that speaks of MangaAssist's dimensions by name
(monitoring, review sheets, the Bedrock prompts).
"""

from __future__ import annotations

import importlib
from functools import cache
from types import ModuleType
from typing import TYPE_CHECKING, Any

from fmquality.config.profile import load_profile
from fmquality.domain.case import TestCase
from fmquality.scoring.plan import CheckReport
from fmquality.scoring.signal import SubScoreSignals

if TYPE_CHECKING:
    from fmquality.config.rubric import Rubric

PROFILE = load_profile("mangaassist")
DIMENSIONS: tuple[str, ...] = tuple(PROFILE.dimension_names)
SUB_SCORES: dict[str, tuple[str, ...]] = PROFILE.sub_score_table()


@cache
def dimension_module(name: str, part: str = "check") -> ModuleType:
    """A dimension's ``check`` or ``signal`` module, imported when first asked for (a caller that only
    needs the names above does not load the checks)."""
    if name not in DIMENSIONS:
        raise KeyError(f"unknown dimension {name!r}; expected one of {list(DIMENSIONS)}")
    return importlib.import_module(f"fmquality.schemes.mangaassist.{name}.{part}")


def render_case(case: TestCase) -> dict[str, Any]:
    """The case as data for the judge (the same for every dimension); a model judge fences it as
    content to evaluate, never instructions."""
    return {
        "intent": case.intent,
        "locale": case.locale,
        "conversation_history": [m.model_dump() for m in case.conversation_history],
        "page_context": case.page_context.model_dump(exclude_none=True),
        "user_query": case.query,
        "catalog": [c.model_dump(exclude_none=True) for c in case.catalog],
        "retrieved_chunks": case.retrieved_chunks,
        "expected_facts": case.expected_facts,
        "expected_products": case.expected_products,
        "reference_response": case.reference_response,
    }


class MangaAssistScheme:
    name = "mangaassist"
    judge_prompt = "mangaassist"
    combined_judging = True

    def render_case(self, case: TestCase) -> dict[str, Any]:
        return render_case(case)

    def check(self, dimension: str, case: TestCase, rubric: "Rubric") -> CheckReport:
        return dimension_module(dimension).check(case, rubric)

    def signals(self, dimension: str) -> SubScoreSignals:
        return SubScoreSignals(dimension_module(dimension, "signal").SIGNALS)


MANGAASSIST = MangaAssistScheme()
