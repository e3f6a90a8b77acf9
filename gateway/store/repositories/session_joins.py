"""Claude Code's hook and MCP calls joined (``session_joins``): a hook's tool_use_id, who announced it, the tool it
named, and the session's trace (NULL: claimed twice, differently, so it joins nobody)."""

from __future__ import annotations

from dataclasses import astuple, dataclass

from gateway.store.interface import Store, Transaction
from gateway.store.repositories.rows import columns, typed

__all__ = ["Joined", "expire", "joined", "joined_in", "live", "write"]


@dataclass(frozen=True)
class Joined:
    tool_use_id: str
    agent: str
    role: str
    task: str | None
    hooked_tool: str  # the tool name the hook saw: mcp__<server>__<tool>
    trace_id: str | None
    expires: float  # epoch seconds


_SELECT = f"SELECT {columns(Joined)} FROM session_joins"


def joined(store: Store, tool_use_id: str, now: float) -> Joined | None:
    """The id's join, unless it has expired by ``now``."""
    rows = store.query(f"{_SELECT} WHERE tool_use_id = ? AND expires > ?", (tool_use_id, now))
    return typed(Joined, rows[0]) if rows else None


def joined_in(tx: Transaction, tool_use_id: str, now: float) -> Joined | None:
    """``joined`` under the transaction's write lock (to claim the id)."""
    row = tx.execute(f"{_SELECT} WHERE tool_use_id = ? AND expires > ?", (tool_use_id, now)).fetchone()
    return typed(Joined, row) if row is not None else None


def write(tx: Transaction, row: Joined) -> None:
    tx.execute(
        f"INSERT INTO session_joins ({columns(Joined)}) VALUES (?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (tool_use_id) DO UPDATE SET agent = excluded.agent, role = excluded.role, "
        "task = excluded.task, hooked_tool = excluded.hooked_tool, trace_id = excluded.trace_id, "
        "expires = excluded.expires",
        astuple(row),
    )


def expire(tx: Transaction, now: float, keep: int) -> None:
    """Drop the joins expired by ``now``, and all but the ``keep`` that expire last."""
    tx.execute("DELETE FROM session_joins WHERE expires <= ?", (now,))
    tx.execute(
        "DELETE FROM session_joins WHERE expires < "
        "(SELECT expires FROM session_joins ORDER BY expires DESC LIMIT 1 OFFSET ?)",
        (keep - 1,),
    )


def live(store: Store, now: float) -> int:
    """How many joins have not expired by ``now``."""
    return int(store.query("SELECT COUNT(*) FROM session_joins WHERE expires > ?", (now,))[0][0])
