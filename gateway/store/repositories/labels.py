"""Information-flow labels of sessions (``flow_labels``): what raised them, and the files the session
downloaded or decoded; a clean session has no row."""

from __future__ import annotations

from dataclasses import dataclass

from gateway.store.interface import Row, Store, Transaction

__all__ = ["Labelled", "labelled", "labelled_in", "lower", "sessions", "write"]


@dataclass(frozen=True)
class Labelled:
    session: str
    sources: str  # JSON: what raised the labels
    files: str  # JSON: the files it downloaded or decoded


_SELECT = "SELECT session, sources, files FROM flow_labels"


def _labelled(row: Row) -> Labelled:
    return Labelled(row["session"], row["sources"], row["files"])


def labelled(store: Store, session: str) -> Labelled | None:
    rows = store.query(f"{_SELECT} WHERE session = ?", (session,))
    return _labelled(rows[0]) if rows else None


def labelled_in(tx: Transaction, session: str) -> Labelled | None:
    """The session's labels, read under the transaction's write lock (to raise or lower them)."""
    row = tx.execute(f"{_SELECT} WHERE session = ?", (session,)).fetchone()
    return _labelled(row) if row is not None else None


def write(tx: Transaction, row: Labelled, now: str) -> None:
    tx.execute(
        "INSERT INTO flow_labels (session, sources, files, updated) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (session) DO UPDATE SET sources = excluded.sources, files = excluded.files, "
        "updated = excluded.updated",
        (row.session, row.sources, row.files, now),
    )


def lower(tx: Transaction, session: str, sources: str, now: str) -> None:
    """The sources a person left (JSON); the files stay marked."""
    tx.execute("UPDATE flow_labels SET sources = ?, updated = ? WHERE session = ?", (sources, now, session))


def sessions(store: Store) -> list[Labelled]:
    """Every labelled session, the last changed first."""
    return [_labelled(row) for row in store.query(f"{_SELECT} ORDER BY updated DESC")]
