"""Signed attestations of merges (``attestations``): the DSSE envelope, recorded before the branch moves."""

from __future__ import annotations

from dataclasses import astuple, dataclass

from gateway.store.interface import Store, Transaction
from gateway.store.repositories.rows import columns, typed

__all__ = ["Attestation", "attestation", "attestation_in", "pending", "record", "set_state"]


@dataclass(frozen=True)
class Attestation:
    commit_id: str
    tree: str
    ref: str
    intent_id: str
    task_id: str
    kid: str
    envelope: str  # the DSSE envelope, canonical JSON
    state: str  # pending, published, withdrawn
    created: str
    updated: str


_SELECT = f"SELECT {columns(Attestation)} FROM attestations"


def record(tx: Transaction, row: Attestation) -> None:
    """The attestation, pending. A merge deferred and made again is the same commit when nothing moved: its
    earlier (withdrawn or pending) attestation is replaced; a published one is kept, that merge is out."""
    tx.execute(
        f"INSERT INTO attestations ({columns(Attestation)}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT (commit_id) DO UPDATE SET tree = excluded.tree, ref = excluded.ref,"
        " intent_id = excluded.intent_id, task_id = excluded.task_id, kid = excluded.kid,"
        " envelope = excluded.envelope, state = excluded.state, updated = excluded.updated"
        " WHERE attestations.state <> 'published'",
        astuple(row),
    )


def attestation(store: Store, commit: str) -> Attestation | None:
    rows = store.query(f"{_SELECT} WHERE commit_id = ?", (commit,))
    return typed(Attestation, rows[0]) if rows else None


def attestation_in(tx: Transaction, commit: str) -> Attestation | None:
    row = tx.execute(f"{_SELECT} WHERE commit_id = ?", (commit,)).fetchone()
    return typed(Attestation, row) if row is not None else None


def pending(store: Store) -> list[Attestation]:
    return [typed(Attestation, row) for row in store.query(f"{_SELECT} WHERE state = 'pending'")]


def set_state(tx: Transaction, commit: str, state: str, now: str) -> None:
    tx.execute("UPDATE attestations SET state = ?, updated = ? WHERE commit_id = ?", (state, now, commit))
