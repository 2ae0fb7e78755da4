"""The scoring schemes, by the name a profile gives them (``scheme:`` in ``datasets/profiles/*.yaml``).

A scheme is the code behind a profile's dimensions (``scoring.scheme.Scheme``): MangaAssist's dimension
modules (``schemes/mangaassist/``, one folder per dimension: its checks and its offline signals), and
the generic profiles (``schemes/profiles/``: research-agent, tool-use), which read the test case's
profile fields. Adding a scheme adds its module and one entry below.

The registry lives here, not in ``scoring``: the layers above (``run``, ``judges``) look a scheme up
and hand it to the scoring functions, so every import points down and nothing registers itself on
import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fmquality.domain.errors import ProfileError
from fmquality.schemes.mangaassist import MANGAASSIST
from fmquality.schemes.profiles.research_agent import RESEARCH_AGENT
from fmquality.schemes.profiles.tool_use import TOOL_USE
from fmquality.scoring.scheme import Scheme

if TYPE_CHECKING:
    from fmquality.config.rubric import Rubric

SCHEMES: dict[str, Scheme] = {s.name: s for s in (MANGAASSIST, RESEARCH_AGENT, TOOL_USE)}


def scheme_named(name: str) -> Scheme:
    try:
        return SCHEMES[name]
    except KeyError:
        raise ProfileError(f"no scoring scheme named {name!r} (known: {', '.join(sorted(SCHEMES))})") from None


def scheme_for(rubric: "Rubric") -> Scheme:
    """The scheme of the rubric's profile."""
    return scheme_named(rubric.profile_spec.scheme)
