"""Checkpoints taken before tier-2 calls (``checkpoints``): where each is kept, and what it restores."""

from __future__ import annotations

from dataclasses import dataclass

from gateway.store.interface import Store, Transaction
from gateway.store.repositories.rows import columns, typed

__all__ = ["Checkpoint", "checkpoint", "kept", "prune", "record"]


@dataclass(frozen=True)
class Checkpoint:
    id: str
    time: str
    kind: str  # git, copy
    workspace: str
    ref: str | None  # None once pruned
    call_id: str | None
    detail: str  # JSON


def record(tx: Transaction, row: Checkpoint) -> None:
    tx.execute(
        "INSERT INTO checkpoints (id, time, kind, workspace, ref, call_id, detail) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (row.id, row.time, row.kind, row.workspace, row.ref, row.call_id, row.detail),
    )


def checkpoint(store: Store, checkpoint_id: str) -> Checkpoint | None:
    rows = store.query(f"SELECT {columns(Checkpoint)} FROM checkpoints WHERE id = ?", (checkpoint_id,))
    return typed(Checkpoint, rows[0]) if rows else None


def kept(store: Store) -> list[tuple[str, str]]:
    """(id, time) of every checkpoint still restorable, newest first."""
    rows = store.query("SELECT id, time FROM checkpoints WHERE ref IS NOT NULL ORDER BY time DESC, id DESC")
    return [(row["id"], row["time"]) for row in rows]


def prune(tx: Transaction, checkpoint_id: str, detail: str) -> None:
    """What the checkpoint held is gone: its ref cleared, its detail saying when and why."""
    tx.execute(
        "UPDATE checkpoints SET ref = NULL, detail = ? WHERE id = ? AND ref IS NOT NULL", (detail, checkpoint_id)
    )
