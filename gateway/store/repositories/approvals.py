"""Tier-3 approvals (``approvals``): each bound to one call's key and the site it runs at."""

from __future__ import annotations

from dataclasses import astuple, dataclass

from gateway.store.interface import Store, Transaction
from gateway.store.repositories.rows import columns, typed

__all__ = [
    "Approval",
    "approval",
    "approval_in",
    "approved_elsewhere",
    "expire",
    "granted",
    "insert",
    "listed",
    "pending_for",
    "settle",
    "settled_for",
    "use",
]


@dataclass(frozen=True)
class Approval:
    id: str
    call_key: str
    state: str  # pending, approved, denied, expired, used, denied-used
    created: str
    expires: str
    principal: str  # JSON
    tool: str
    arguments_digest: str
    request: str  # JSON
    settled_by: str | None
    settled_at: str | None
    used_by_call: str | None
    channel: str | None  # None: asked before schema 6, authorises nothing
    confinement: str | None  # JSON


_SELECT = f"SELECT {columns(Approval)} FROM approvals"


def insert(tx: Transaction, row: Approval) -> None:
    tx.execute(f"INSERT INTO approvals ({columns(Approval)}) VALUES ({', '.join('?' * 14)})", astuple(row))


def approval(store: Store, approval_id: str) -> Approval | None:
    rows = store.query(f"{_SELECT} WHERE id = ?", (approval_id,))
    return typed(Approval, rows[0]) if rows else None


def approval_in(tx: Transaction, approval_id: str) -> Approval | None:
    row = tx.execute(f"{_SELECT} WHERE id = ?", (approval_id,)).fetchone()
    return typed(Approval, row) if row is not None else None


def pending_for(tx: Transaction, key: str, channel: str, now: str) -> Approval | None:
    """The call's pending approval asked on this channel, not expired by ``now``."""
    sql = f"{_SELECT} WHERE call_key = ? AND channel = ? AND state = 'pending' AND expires > ?"
    row = tx.execute(sql, (key, channel, now)).fetchone()
    return typed(Approval, row) if row is not None else None


def settled_for(tx: Transaction, key: str, channel: str) -> Approval | None:
    """The call's first settled (approved or denied), unused approval asked on this channel."""
    sql = (
        f"{_SELECT} WHERE call_key = ? AND channel = ? AND state IN ('approved', 'denied') ORDER BY settled_at LIMIT 1"
    )
    row = tx.execute(sql, (key, channel)).fetchone()
    return typed(Approval, row) if row is not None else None


def expire(tx: Transaction, approval_id: str) -> None:
    tx.execute("UPDATE approvals SET state = 'expired' WHERE id = ?", (approval_id,))


def settle(tx: Transaction, approval_id: str, state: str, by: str, at: str) -> None:
    tx.execute(
        "UPDATE approvals SET state = ?, settled_by = ?, settled_at = ? WHERE id = ?", (state, by, at, approval_id)
    )


def use(tx: Transaction, approval_id: str, state: str, call_id: str) -> None:
    tx.execute("UPDATE approvals SET state = ?, used_by_call = ? WHERE id = ?", (state, call_id, approval_id))


def approved_elsewhere(store: Store, tool: str, arguments_digest: str, key: str) -> list[Approval]:
    """Approved calls of this tool with these arguments under another call key."""
    sql = f"{_SELECT} WHERE tool = ? AND arguments_digest = ? AND state = 'approved' AND call_key != ?"
    return [typed(Approval, row) for row in store.query(sql, (tool, arguments_digest, key))]


def listed(store: Store, state: str | None = None) -> list[Approval]:
    """Newest first: those in ``state``, or the last 500."""
    if state:
        rows = store.query(f"{_SELECT} WHERE state = ? ORDER BY created DESC", (state,))
    else:
        rows = store.query(f"{_SELECT} ORDER BY created DESC LIMIT 500")
    return [typed(Approval, row) for row in rows]


def granted(tx: Transaction) -> list[Approval]:
    """Approvals people gave (approved, or approved and used), oldest first."""
    rows = tx.execute(f"{_SELECT} WHERE state IN ('approved', 'used') ORDER BY created").fetchall()
    return [typed(Approval, row) for row in rows]
