"""A policy number the answer applies rather than restates: an amount its own arithmetic makes beside
the policy's number (the 140円 still missing to the 3,000円 minimum it states), the knowledge's rate
taken for the shopper's count ("every 100 points = $1.00 off": 600 points, $6.00), a duration the
knowledge gives in business days said in calendar days or weeks ("7-12 business days": "roughly two
weeks"). None of them contradicts the knowledge (``claims.policy.compare_policies``)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# ``claim`` and ``fact`` are ``claims.policy.PolicyNumber``s (that module imports this one).
PolicyNumber = Any


_BUSINESS = re.compile(r"\b(?:business|working)\s+days?\b|営業日")


def same_in_business_days(claim: PolicyNumber, fact: PolicyNumber) -> bool:
    """A duration in calendar days or weeks ("roughly two weeks") against one the knowledge gives in
    business days ("7-12 business days"): five business days to a week."""
    if not _BUSINESS.search(fact.text + " " + fact.sentence) or _BUSINESS.search(claim.text):
        return False
    low, high = claim.low * 5 / 7, claim.high * 5 / 7
    return low - 0.51 <= fact.high and fact.low - 0.51 <= high


_RATE_EN = re.compile(r"\b(?:every|per|each|for each|for every)\s+(?:(\d[\d,]*)\s*)?[a-z]")
_RATE_JA = re.compile(r"(\d[\d,]*)?\s*(?:ポイント|点|冊|円)?\s*(?:ごと|につき|あたり|毎)")


def rate_applied(claim: PolicyNumber, fact: PolicyNumber, counts: frozenset[float]) -> bool:
    """``claim`` is ``fact``'s rate taken n times (n >= 2) for a count n x base that the answer or the
    shopper gives (base: the "100" of "every 100 points", else 1)."""
    if claim.unit != fact.unit or fact.low <= 0 or claim.low <= fact.low:
        return False
    times = claim.low / fact.low
    if abs(times - round(times)) > 1e-6:
        return False
    for m in (*_RATE_EN.finditer(fact.sentence), *_RATE_JA.finditer(fact.sentence)):
        base = float(m.group(1).replace(",", "")) if m.group(1) else 1.0
        if round(times) * base in counts:
            return True
    return False


@dataclass(frozen=True)
class WorkedOut:
    """What the answer's own arithmetic works from."""

    derives: Callable[[str, float], bool]  # (unit, value): one step from the amounts in play makes it
    amounts: frozenset[tuple[str, float]]  # (unit, amount) of every amount the answer states
    counts: frozenset[float]  # every number the answer or the shopper gives

    def applies(self, claim: PolicyNumber, facts: list[PolicyNumber]) -> bool:
        """``claim``, which differs from the knowledge's ``facts``, is the answer's arithmetic beside
        the policy's own number, or the knowledge's rate applied. Without the policy's number beside it,
        a derived amount is read as the policy's ("free shipping kicks in at $30", $35 − $5)."""
        beside = any((k.unit, round(k.low, 2)) in self.amounts for k in facts)
        return (beside and self.derives(claim.unit, claim.low)) or any(rate_applied(claim, k, self.counts) for k in facts)
