"""What the generic profiles' checks and signals return (``DimensionFinding``: a level or value with its
evidence, or nothing, and then the judge decides) and the readings they share: tool arguments
compared as a person would, how much of a claim the evidence carries, the scalar values of a tool
result."""

from __future__ import annotations

import json
import unicodedata
from typing import Any, Literal

from pydantic import BaseModel, Field

from fmquality.language.alignment import Unit, pair_precision, precision, read_units

# check: settled by a deterministic check (profile.check_settled); offline: the offline judge's signal;
# judge: nothing found, the Bedrock (or offline) judge decides; not_applicable: left out of the mean.
Source = Literal["check", "offline", "judge", "not_applicable"]


class DimensionFinding(BaseModel):
    dimension: str
    source: Source
    level: str | None = None
    value: float | None = Field(default=None, ge=0.0, le=1.0)
    sub_scores: dict[str, float] = Field(default_factory=dict)
    evidence: list[str] = Field(default_factory=list)


def normalise_value(value: Any) -> Any:
    """Argument values compared the way a person would: strings NFKC, trimmed, case-folded; numbers
    (and numeric strings) as floats; containers element by element."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        text = unicodedata.normalize("NFKC", value).strip().casefold()
        try:
            return float(text.replace(",", ""))
        except ValueError:
            return " ".join(text.split())
    if isinstance(value, dict):
        return {normalise_value(k): normalise_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [normalise_value(v) for v in value]
    return value


def arguments_match(expected: dict[str, Any], actual: dict[str, Any]) -> bool:
    """Subset match: every expected argument is in the call with the same normalised value."""
    got = normalise_value(actual)
    return all(normalise_value(k) in got and got[normalise_value(k)] == normalise_value(v) for k, v in expected.items())


def call_key(name: str, arguments: dict[str, Any]) -> str:
    return name + json.dumps(normalise_value(arguments), sort_keys=True, ensure_ascii=False)


def support(claim: Unit, evidence: list[Unit]) -> float:
    """How much of a claim sentence the evidence carries: the best single evidence sentence's share
    of its content words, tempered by the share of its word pairs in order found anywhere in the
    evidence (as ``judges/offline/grounding.py`` does)."""
    if not evidence:
        return 0.0
    best = max(precision(claim, e) for e in evidence)
    pairs = frozenset().union(*(e.pairs for e in evidence))
    in_order = pair_precision(claim, pairs)
    return best if in_order is None else max(in_order, best * in_order ** 0.5)


def leaves(value: Any) -> list[Any]:
    """The scalar values inside a tool result (strings, numbers), depth first."""
    if isinstance(value, dict):
        return [x for v in value.values() for x in leaves(v)]
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in leaves(v)]
    return [] if value is None else [value]


def units_of(text: str) -> list[Unit]:
    return read_units(text or "")
