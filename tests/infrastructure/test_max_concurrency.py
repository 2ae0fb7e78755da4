"""The Distributed Map's MaxConcurrency, derived from the Bedrock quota (infra/config.py)."""

from __future__ import annotations

import pytest

from infra.config import ConfigError, derive_max_concurrency, parse_config

BASE = {"env_name": "test", "judge_model_id": "anthropic.claude-haiku-4-5-20251001-v1:0"}


def test_littles_law_worked_examples():
    # 600 rpm x 0.8 = 8 calls/s; x 3 s per call = 24 calls in flight; / 4 calls per item = 6 items.
    assert derive_max_concurrency(600, calls_per_case=4, seconds_per_call=3, utilization_target=0.8) == 6
    # Fewer calls per item (the checks settle some dimensions) let more items run: 24 / 2 = 12.
    assert derive_max_concurrency(600, calls_per_case=2, seconds_per_call=3, utilization_target=0.8) == 12
    # Rounded down, never up: 200 x 0.8 x 3 / (60 x 4) = 2.0; 200 x 0.8 x 2 / 240 = 1.33 -> 1.
    assert derive_max_concurrency(200, 4, 3, 0.8) == 2
    assert derive_max_concurrency(200, 4, 2, 0.8) == 1


def test_the_formula_moves_the_right_way_and_stays_in_bounds():
    assert derive_max_concurrency(1200, 4, 3) > derive_max_concurrency(600, 4, 3)
    assert derive_max_concurrency(600, 4, 6) > derive_max_concurrency(600, 4, 3)
    assert derive_max_concurrency(600, 2, 3) > derive_max_concurrency(600, 4, 3)
    assert derive_max_concurrency(600, 4, 3, 0.5) < derive_max_concurrency(600, 4, 3, 1.0)
    assert derive_max_concurrency(1, 4, 0.1) == 1  # a tiny quota still runs one item
    assert derive_max_concurrency(10_000_000, 1, 60) == 1000  # bounded
    with pytest.raises(ValueError):
        derive_max_concurrency(0, 4, 3)


def test_config_derives_max_concurrency_from_the_quota_unless_pinned():
    derived = parse_config({**BASE, "judge_quota": {"requests_per_minute": 600, "seconds_per_call": 3}})
    assert derived.max_concurrency == 4 == derived.derived_max_concurrency  # floor(24 / 5): one call per dimension

    measured = parse_config({**BASE, "judge_quota": {"requests_per_minute": 600, "seconds_per_call": 3,
                                                     "calls_per_case": 2.96}})
    assert measured.max_concurrency == 8  # floor(24 / 2.96)

    pinned = parse_config({**BASE, "max_concurrency": 3, "judge_quota": {"requests_per_minute": 600}})
    assert pinned.max_concurrency == 3 and pinned.derived_max_concurrency == 4

    assert parse_config(BASE).max_concurrency == 10  # neither: the old default
    assert parse_config({**BASE, "max_concurrency": None}).max_concurrency == 10


def test_a_bad_quota_is_named():
    with pytest.raises(ConfigError, match="judge_quota.requests_per_minute"):
        parse_config({**BASE, "judge_quota": {"requests_per_minute": 0}})
    with pytest.raises(ConfigError, match="judge_quota.calls_per_case"):
        parse_config({**BASE, "judge_quota": {"requests_per_minute": 600, "calls_per_case": 11}})
