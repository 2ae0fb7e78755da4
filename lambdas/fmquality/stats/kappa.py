"""Agreement beyond chance between two raters: Cohen's kappa of two yes/no verdicts (the gate's
pass/fail against a person's acceptable/defective) with its 2x2 table, and the quadratic-weighted
kappa of two ordinal ratings (scores binned to a few levels). A kappa that the data cannot define
is None with the reason, never 0.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel

from fmquality.domain.report import Kappa

LEVELS = 5


def cohen_kappa(pairs: Iterable[tuple[bool, bool]]) -> Kappa:
    """Cohen's kappa of (passed, acceptable) pairs: (p_o - p_e) / (1 - p_e), with p_o the observed
    agreement and p_e the agreement expected from the two sides' marginals. Undefined when a side
    has one class only: kappa is then 0 or 0/0 whatever the agreement, so it is not reported."""
    table = {(True, True): 0, (True, False): 0, (False, True): 0, (False, False): 0}
    for passed, acceptable in pairs:
        table[(bool(passed), bool(acceptable))] += 1
    counts = dict(passed_acceptable=table[(True, True)], passed_defective=table[(True, False)],
                  failed_acceptable=table[(False, True)], failed_defective=table[(False, False)])
    n = sum(table.values())
    passed = table[(True, True)] + table[(True, False)]
    acceptable = table[(True, True)] + table[(False, True)]
    reason = None
    if n == 0:
        reason = "no labelled item"
    elif passed in (0, n):
        reason = f"every item {'passed' if passed else 'failed'}"
    elif acceptable in (0, n):
        reason = f"every label is {'acceptable' if acceptable else 'defective'}"
    if reason:
        return Kappa(n=n, value=None, undefined_reason=reason, **counts)
    observed = (table[(True, True)] + table[(False, False)]) / n
    expected = (passed * acceptable + (n - passed) * (n - acceptable)) / (n * n)
    return Kappa(n=n, value=round((observed - expected) / (1 - expected), 4), **counts)


class WeightedKappa(BaseModel):
    """A quadratic-weighted kappa over ``n`` pairs, rounded to 4 decimals, or why it is undefined."""

    n: int
    value: float | None
    undefined_reason: str | None = None


def quadratic_weighted_kappa(pairs: Iterable[tuple[int, int]], levels: int = LEVELS) -> WeightedKappa:
    """1 - sum(w O) / sum(w E) over pairs of levels 1..``levels``, w_ij = (i - j)^2 / (levels - 1)^2,
    O the observed table and E the table expected from its marginals."""
    data = list(pairs)
    n = len(data)
    if n < 2:
        return WeightedKappa(n=n, value=None, undefined_reason=f"{n} pair(s): kappa needs at least 2")
    observed = [[0] * levels for _ in range(levels)]
    for a, b in data:
        observed[a - 1][b - 1] += 1
    row = [sum(r) for r in observed]
    col = [sum(observed[i][j] for i in range(levels)) for j in range(levels)]
    num = den = 0.0
    for i in range(levels):
        for j in range(levels):
            w = (i - j) ** 2 / (levels - 1) ** 2
            num += w * observed[i][j]
            den += w * row[i] * col[j] / n
    if den == 0:
        return WeightedKappa(n=n, value=None, undefined_reason="both sides give one and the same level")
    return WeightedKappa(n=n, value=round(1 - num / den, 4))
