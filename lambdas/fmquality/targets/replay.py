"""Read-only replay: a target answering replayed traffic (cases tagged ``replay``) is told so (the
request's ``"replay": true``, the HTTP header ``X-Replay: true``: ``targets.base.request_for``), and
by contract it may only call read-side tools. ``ReadOnlyTarget`` wraps any target: an answer to a
replayed case whose ``tool_calls`` name a tool outside the read-only allow-list is refused, a final
TargetError, so the item becomes an error record ("write-side tool refused in replay: <tools>"),
never a score. Cases that are not replays pass through untouched.

The allow-list: ``READ_ONLY_TOOLS_ENV`` (comma-separated), else ``DEFAULT_READ_ONLY_TOOLS``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from fmquality.domain.case import TestCase
from fmquality.domain.errors import TargetError
from fmquality.targets.base import REPLAY_TAG, Target, TargetReply, TargetSpec

REFUSED = "write-side tool refused in replay"
READ_ONLY_TOOLS_ENV = "REPLAY_READ_ONLY_TOOLS"
# MangaAssist's read-side tools: they look things up and change nothing.
DEFAULT_READ_ONLY_TOOLS = frozenset({"search_catalog", "get_product", "get_order_status", "track_order",
                                     "lookup_policy", "recommend_titles", "get_recommendations"})


def read_only_tools(configured: Iterable[str] | None = None) -> frozenset[str]:
    """The allow-list: given, else the environment's, else the default."""
    if configured is not None:
        return frozenset(t.strip() for t in configured if t.strip())
    raw = os.environ.get(READ_ONLY_TOOLS_ENV, "")
    return frozenset(t.strip() for t in raw.split(",") if t.strip()) or DEFAULT_READ_ONLY_TOOLS


def tool_name(call: Any) -> str | None:
    """A tool call's name in the shapes chatbots answer: {"name"}, Converse {"toolUse": {"name"}},
    OpenAI {"function": {"name"}}, or a bare string."""
    if isinstance(call, str):
        return call
    if not isinstance(call, dict):
        return None
    for nested in ("toolUse", "function"):
        if isinstance(call.get(nested), dict) and isinstance(call[nested].get("name"), str):
            return call[nested]["name"]
    name = call.get("name")
    return name if isinstance(name, str) else None


def refused_tools(reply: TargetReply, allowed: frozenset[str]) -> list[str]:
    """The tools an answer called that are not on the allow-list (an unnamed call counts as refused)."""
    names = [tool_name(call) for call in reply.tool_calls]
    return sorted({name or "<unnamed>" for name in names if name not in allowed})


class ReadOnlyTarget:
    """``inner`` with the replay contract enforced on replayed cases."""

    def __init__(self, inner: Target, allowed: frozenset[str] | None = None) -> None:
        self.inner = inner
        self.allowed = read_only_tools() if allowed is None else allowed
        rules = getattr(inner, "generation_rules", None)
        if rules is not None:
            self.generation_rules = rules

    def __getattr__(self, name: str) -> Any:  # anything else is the wrapped target's own
        return getattr(self.inner, name)

    @property
    def spec(self) -> TargetSpec:
        return self.inner.spec

    @property
    def id(self) -> str:
        return self.inner.id

    @property
    def version(self) -> str | None:
        return self.inner.version

    def answer(self, case: TestCase) -> TargetReply:
        reply = self.inner.answer(case)
        if REPLAY_TAG in case.tags:
            refused = refused_tools(reply, self.allowed)
            if refused:
                raise TargetError(f"{REFUSED}: {', '.join(refused)}")
        return reply
