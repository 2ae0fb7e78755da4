"""The pause before trying again, one rule for every retry loop of the gate (the judge's Converse calls,
a target's generation, a throttled dimension asked again, capture's PutRecordBatch, a catalog load's
BatchWriteItem): exponential backoff with full jitter (AWS Architecture Blog, "Exponential Backoff And
Jitter"), so many clients throttled at once do not come back at once."""

from __future__ import annotations

import random
from collections.abc import Callable


def full_jitter(retry_index: int, base_s: float, cap_s: float, rng: Callable[[], float] = random.random) -> float:
    """Seconds to wait before retry ``retry_index`` (0 for the first retry): uniform in
    [0, min(cap_s, base_s * 2**retry_index)]."""
    return rng() * min(cap_s, base_s * (2**retry_index))
