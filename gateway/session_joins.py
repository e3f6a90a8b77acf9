"""Which Claude Code session an MCP call belongs to: the hook's word, kept briefly in the running gateway.

Claude Code sends no session id on its MCP requests, only ``_meta["claudecode/toolUseId"]`` on a tools/call;
its PreToolUse hook event carries both that ``tool_use_id`` and its ``session_id``. The hook, matched to the
gateway's own MCP tools, remembers ``tool_use_id -> (who asked, the session's trace)`` here; when the MCP call
arrives, it is traced in that session's trace, if the same principal (agent, role, task) asks.

Fail closed to "not joined", never to "joined to someone else": an id two principals or two sessions claim
is joined for nobody; a call whose id is unknown (the hook has not fired, went to another gateway process,
or the entry expired) keeps its MCP session's trace, without waiting. Entries are bounded in count and age.

    joins = SessionJoins()
    joins.remember("toolu_01", principal, trace_id)    # the hook (a PreToolUse of mcp__gateway__*)
    joins.trace_for("toolu_01", principal)              # the MCP call: the trace, or None
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from typing import NamedTuple

from gateway.types import Principal

__all__ = ["TOOL_USE_META", "SessionJoins"]

TOOL_USE_META = "claudecode/toolUseId"  # what Claude Code (2.1.x) puts in a tools/call's _meta
MAX_ID = 200  # a tool_use_id is ~30 characters; longer is not Claude Code's


class Joined(NamedTuple):
    who: tuple[str, str, str | None]  # agent, role, task
    trace_id: str | None  # None: claimed twice, differently: joined for nobody
    until: float


def identity(principal: Principal) -> tuple[str, str, str | None]:
    return principal.agent, principal.role, principal.task


class SessionJoins:
    """Claude Code tool_use_id -> the session trace its hook named, for ``ttl_s`` seconds, at most ``size``."""

    def __init__(self, ttl_s: float = 900.0, size: int = 4096, clock: Callable[[], float] = time.monotonic) -> None:
        # long enough for a person to answer Claude Code's own prompt between the hook and the MCP call
        self.ttl_s = ttl_s
        self.size = size
        self.clock = clock
        self._joins: OrderedDict[str, Joined] = OrderedDict()  # oldest first

    def remember(self, tool_use_id: str, principal: Principal, trace_id: str) -> None:
        now = self.clock()
        self._expire(now)
        if not tool_use_id or len(tool_use_id) > MAX_ID:
            return
        known = self._joins.pop(tool_use_id, None)
        joined = Joined(identity(principal), trace_id, now + self.ttl_s)
        if known is not None and known[:2] != joined[:2]:  # claimed differently twice: poisoned until it expires
            joined = known._replace(trace_id=None, until=joined.until)
        self._joins[tool_use_id] = joined
        while len(self._joins) > self.size:
            self._joins.popitem(last=False)

    def trace_for(self, tool_use_id: object, principal: Principal) -> str | None:
        """The trace of the Claude Code session whose hook named this id, if ``principal`` is who it named."""
        if not isinstance(tool_use_id, str):
            return None
        joined = self._joins.get(tool_use_id)
        if joined is None or joined.until <= self.clock() or joined.who != identity(principal):
            return None
        return joined.trace_id

    def _expire(self, now: float) -> None:
        while self._joins:
            oldest = next(iter(self._joins.values()))
            if oldest.until > now:
                return
            self._joins.popitem(last=False)

    def __len__(self) -> int:
        return len(self._joins)
