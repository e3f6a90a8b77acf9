"""Versioned shared artifacts: canonical revisions (``artifacts``), a task's puts until its merge commits
(``artifact_puts``), and conflicts for a person or an arbitrating role (``artifact_conflicts``)."""

from __future__ import annotations

from dataclasses import astuple, dataclass

from gateway.store.interface import Store, Transaction, one_row
from gateway.store.repositories.rows import columns, typed

__all__ = [
    "Conflict",
    "ListedConflict",
    "Put",
    "Revision",
    "add_conflict",
    "add_revision",
    "conflict_in",
    "conflicts",
    "last_staged",
    "latest",
    "latest_in",
    "put",
    "resolve_conflict",
    "revision",
    "revisions",
    "set_put_state",
    "stage",
    "staged_in",
    "supersede_staged",
]


@dataclass(frozen=True)
class Revision:
    key: str
    revision: int
    digest: str
    content: str
    base: int
    provenance: str  # JSON
    created: str


@dataclass(frozen=True)
class Put:
    id: str
    task_id: str
    key: str
    base: int
    digest: str
    content: str
    provenance: str  # JSON
    state: str  # staged, canonical, conflict, superseded
    revision: int | None
    created: str


@dataclass(frozen=True)
class Conflict:
    id: str
    key: str
    base: int
    current: int
    put_id: str
    state: str  # open, resolved
    resolved_by: str | None
    resolution: int | None
    created: str
    updated: str | None


@dataclass(frozen=True)
class ListedConflict(Conflict):
    """A conflict with what its put (theirs) brought."""

    put_digest: str
    put_provenance: str  # JSON


_LATEST = "SELECT COALESCE(MAX(revision), 0) FROM artifacts WHERE key = ?"
_REVISIONS = f"SELECT {columns(Revision)} FROM artifacts"
_PUTS = f"SELECT {columns(Put)} FROM artifact_puts"


def latest(store: Store, key: str) -> int:
    """The key's newest revision (0: none yet)."""
    return int(store.query(_LATEST, (key,))[0][0])


def latest_in(tx: Transaction, key: str) -> int:
    return int(one_row(tx.execute(_LATEST, (key,)))[0])


def add_revision(tx: Transaction, row: Revision) -> None:
    tx.execute(f"INSERT INTO artifacts ({columns(Revision)}) VALUES (?, ?, ?, ?, ?, ?, ?)", astuple(row))


def revision(store: Store, key: str, number: int) -> Revision | None:
    rows = store.query(f"{_REVISIONS} WHERE key = ? AND revision = ?", (key, number))
    return typed(Revision, rows[0]) if rows else None


def revisions(store: Store, key: str) -> list[Revision]:
    """Newest first."""
    return [typed(Revision, r) for r in store.query(f"{_REVISIONS} WHERE key = ? ORDER BY revision DESC", (key,))]


def stage(tx: Transaction, row: Put) -> None:
    tx.execute(f"INSERT INTO artifact_puts ({columns(Put)}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", astuple(row))


def staged_in(tx: Transaction, task_id: str) -> list[Put]:
    """The task's staged puts, in the order they were made."""
    sql = f"{_PUTS} WHERE task_id = ? AND state = 'staged' ORDER BY created, id"
    return [typed(Put, row) for row in tx.execute(sql, (task_id,)).fetchall()]


def last_staged(store: Store, task_id: str, key: str) -> Put | None:
    sql = f"{_PUTS} WHERE task_id = ? AND key = ? AND state = 'staged' ORDER BY created DESC, id DESC LIMIT 1"
    rows = store.query(sql, (task_id, key))
    return typed(Put, rows[0]) if rows else None


def put(store: Store, put_id: str) -> Put | None:
    rows = store.query(f"{_PUTS} WHERE id = ?", (put_id,))
    return typed(Put, rows[0]) if rows else None


def set_put_state(tx: Transaction, put_id: str, state: str, revision: int | None = None) -> None:
    tx.execute("UPDATE artifact_puts SET state = ?, revision = ? WHERE id = ?", (state, revision, put_id))


def supersede_staged(tx: Transaction, task_id: str) -> None:
    """Whatever the task still has staged will never be promoted."""
    tx.execute("UPDATE artifact_puts SET state = 'superseded' WHERE task_id = ? AND state = 'staged'", (task_id,))


def add_conflict(tx: Transaction, row: Conflict) -> None:
    tx.execute(
        f"INSERT INTO artifact_conflicts ({columns(Conflict)}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", astuple(row)
    )


def conflict_in(tx: Transaction, conflict_id: str) -> Conflict | None:
    row = tx.execute(f"SELECT {columns(Conflict)} FROM artifact_conflicts WHERE id = ?", (conflict_id,)).fetchone()
    return typed(Conflict, row) if row is not None else None


def resolve_conflict(tx: Transaction, conflict_id: str, by: str | None, resolution: int, now: str) -> None:
    tx.execute(
        "UPDATE artifact_conflicts SET state = 'resolved', resolved_by = ?, resolution = ?, updated = ? WHERE id = ?",
        (by, resolution, now, conflict_id),
    )


def conflicts(store: Store, key: str | None = None, state: str | None = None) -> list[ListedConflict]:
    """Conflicts (of one key, in one state), oldest first."""
    where, params = "1=1", []
    if key:
        where, params = where + " AND c.key = ?", [key]
    if state:
        where, params = where + " AND c.state = ?", [*params, state]
    listed = ", ".join(f"c.{name}" for name in columns(Conflict).split(", "))
    rows = store.query(
        f"SELECT {listed}, p.digest AS put_digest, p.provenance AS put_provenance FROM artifact_conflicts c"
        f" JOIN artifact_puts p ON p.id = c.put_id WHERE {where} ORDER BY c.created",
        params,
    )
    return [typed(ListedConflict, row) for row in rows]
