"""The ``bedrock_standin`` fixture: a local Bedrock Converse stand-in per test.

Not a conftest.py on purpose (another module owns that file): test modules import the fixture with
``from tests.integration.conftest_standin import bedrock_standin  # noqa: F401``.
"""

from __future__ import annotations

import pytest

from bench.standin import BedrockStandin


@pytest.fixture
def bedrock_standin():
    """A running stand-in with no latency, no quota and no faults; tests reconfigure it with
    ``set_quota``, ``inject`` and its attributes. ``hang_s`` is short so a "timeout" fault never
    holds a thread for long, and the lifetime bound keeps a stuck test from leaking a server."""
    with BedrockStandin(hang_s=2.0, max_lifetime_s=120.0) as standin:
        yield standin
