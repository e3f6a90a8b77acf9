"""Which Claude Code session an MCP call belongs to: the hook's word, kept in the store.

Claude Code sends no session id on its MCP requests, only ``_meta["claudecode/toolUseId"]`` on a tools/call (over
HTTP and over stdio alike); its PreToolUse hook event carries both that ``tool_use_id`` and its ``session_id``.
The hook, for a tool Claude Code names ``mcp__<server>__<tool>``, remembers ``tool_use_id -> (who asked, the tool
it named, the session's trace)`` in the store; when the MCP call arrives, at any gateway process on that store
(this one after a restart, a replica, a worker, a stdio server Claude Code started), it is traced in that
session's trace if the same principal (agent, role, task) asks for the tool the hook named, whatever the server is
called in Claude Code's config: the id, the verified principal and the tool bind the call, not the name.

Fail closed to "not joined", never to "joined to someone else": an id two principals, two sessions or two tools
claim is joined for nobody; a call whose id is unknown (the hook has not fired, or the entry expired) keeps its
MCP session's trace, without waiting. Entries are bounded in count and age.

    joins = SessionJoins(store)
    joins.remember("toolu_01", principal, "mcp__gateway__fs_read", trace_id)   # the hook
    joins.trace_for("toolu_01", principal, "fs_read")                          # the MCP call: the trace, or None
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import replace

from gateway.store import Store
from gateway.store.repositories import session_joins
from gateway.store.repositories.session_joins import Joined
from gateway.types import Principal

__all__ = ["MCP_TOOL", "TOOL_USE_META", "SessionJoins", "hooked_name"]

TOOL_USE_META = "claudecode/toolUseId"  # what Claude Code (2.1.x) puts in a tools/call's _meta
MCP_TOOL = "mcp__"  # how Claude Code names an MCP server's tool: mcp__<server>__<tool>
MAX_ID = 200  # a tool_use_id is ~30 characters; longer is not Claude Code's
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")  # what Claude Code replaces with "_" in the names it offers


def hooked_name(tool: str) -> str:
    """The suffix Claude Code's name for an MCP server's ``tool`` ends with: ``__<tool>``, as it spells it."""
    return "__" + _UNSAFE.sub("_", tool)


def names(hooked_tool: str, tool: str) -> bool:
    """Whether the hook's ``mcp__<server>__<tool>`` (any non-empty server) names ``tool``."""
    suffix = hooked_name(tool)
    return hooked_tool.startswith(MCP_TOOL) and hooked_tool.endswith(suffix) and len(hooked_tool) > 5 + len(suffix)


class SessionJoins:
    """Claude Code tool_use_id -> the session trace its hook named, for ``ttl_s`` seconds, at most ``size``."""

    def __init__(
        self, store: Store, ttl_s: float = 900.0, size: int = 4096, clock: Callable[[], float] = time.time
    ) -> None:
        # long enough for a person to answer Claude Code's own prompt between the hook and the MCP call; the
        # clock is the wall clock: every process sharing the store reads the same expiry
        self.store = store
        self.ttl_s = ttl_s
        self.size = size
        self.clock = clock

    def remember(self, tool_use_id: str, principal: Principal, hooked_tool: str, trace_id: str) -> None:
        """The hook's word, in one transaction: a second, different claim on the id poisons it until it expires."""
        if not tool_use_id or len(tool_use_id) > MAX_ID:
            return
        now = self.clock()
        claim = Joined(
            tool_use_id, principal.agent, principal.role, principal.task, hooked_tool, trace_id, now + self.ttl_s
        )
        with self.store.transaction() as tx:
            known = session_joins.joined_in(tx, tool_use_id, now)
            if known is not None and (known.trace_id is None or _claim(known) != _claim(claim)):
                claim = replace(known, trace_id=None, expires=claim.expires)
            session_joins.write(tx, claim)
            session_joins.expire(tx, now, self.size)

    def trace_for(self, tool_use_id: object, principal: Principal, tool: str) -> str | None:
        """The trace of the Claude Code session whose hook named this id and ``tool``, if ``principal`` is who
        it named; None otherwise (the call keeps its own trace)."""
        if not isinstance(tool_use_id, str) or not tool_use_id or len(tool_use_id) > MAX_ID:
            return None
        joined = session_joins.joined(self.store, tool_use_id, self.clock())
        if joined is None or (joined.agent, joined.role, joined.task) != (
            principal.agent,
            principal.role,
            principal.task,
        ):
            return None
        return joined.trace_id if names(joined.hooked_tool, tool) else None

    def __len__(self) -> int:
        return session_joins.live(self.store, self.clock())


def _claim(joined: Joined) -> tuple[object, ...]:
    """What a claim on an id says: who, which tool, which session (not when it expires)."""
    return joined.agent, joined.role, joined.task, joined.hooked_tool, joined.trace_id
