"""The one-sided downward CUSUM (Page's cumulative sum): it accumulates how far each observation
falls below a target beyond an allowed slack, and signals once the sum passes a decision limit.
A run of small drops signals where one observation alone would not.
"""

from __future__ import annotations


def cusum_down(previous: float, value: float, target: float, slack: float) -> float:
    """S = max(0, S_prev + (target - value) - slack): the sum after one more observation."""
    return max(0.0, previous + (target - value) - slack)

