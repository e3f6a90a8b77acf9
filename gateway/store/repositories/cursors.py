"""Where each reader of the ledger has got to (``cursors``): the escalation notifier, the review index."""

from __future__ import annotations

from dataclasses import dataclass

from gateway.store.interface import Store, Transaction

__all__ = ["Position", "move", "place", "position", "position_in", "step"]


@dataclass(frozen=True)
class Position:
    seq: int  # the last ledger row the reader is done with
    tries: int  # failed attempts at the row after it


def position(store: Store, name: str) -> Position | None:
    rows = store.query("SELECT seq, tries FROM cursors WHERE name = ?", (name,))
    return Position(int(rows[0]["seq"]), int(rows[0]["tries"])) if rows else None


def position_in(tx: Transaction, name: str) -> Position | None:
    row = tx.execute("SELECT seq, tries FROM cursors WHERE name = ?", (name,)).fetchone()
    return Position(int(row["seq"]), int(row["tries"])) if row is not None else None


def place(tx: Transaction, name: str, seq: int) -> None:
    """The cursor at ``seq`` unless it is placed already (a reader starting beside another never moves it)."""
    tx.execute("INSERT INTO cursors (name, seq, tries) VALUES (?, ?, 0) ON CONFLICT (name) DO NOTHING", (name, seq))


def move(tx: Transaction, name: str, seq: int, tries: int = 0) -> None:
    tx.execute(
        "INSERT INTO cursors (name, seq, tries) VALUES (?, ?, ?) "
        "ON CONFLICT (name) DO UPDATE SET seq = excluded.seq, tries = excluded.tries",
        (name, seq, tries),
    )


def step(tx: Transaction, name: str, seq: int) -> None:
    """Move the cursor to ``seq`` if it stood just before it (a reader that was caught up stays caught up)."""
    tx.execute("UPDATE cursors SET seq = ? WHERE name = ? AND seq = ?", (seq, name, seq - 1))
