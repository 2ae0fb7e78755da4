"""The Wilson score interval of a binomial proportion (Wilson 1927): k successes in n trials.

Unlike the normal approximation it stays inside [0, 1] and is informative at k = 0 and k = n, which is
where the sensitivity suite's shares live (an operator caught 40 of 40 times is not "100% +- 0")."""

from __future__ import annotations

import math

Z95 = 1.959963984540054  # the 97.5th percentile of the standard normal


def wilson_interval(k: int, n: int, z: float = Z95) -> tuple[float, float] | None:
    """(low, high) of the interval for k/n; None when n is 0 (no trial: no interval)."""
    if n < 0 or k < 0 or k > n:
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")
    if n == 0:
        return None
    p = k / n
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    # at k = 0 and k = n the bound is exactly 0 or 1 (rounding would leave it a hair inside)
    low = 0.0 if k == 0 else max(0.0, centre - half)
    high = 1.0 if k == n else min(1.0, centre + half)
    return low, high
