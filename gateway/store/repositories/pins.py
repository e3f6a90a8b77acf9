"""Pins of upstream definitions (``upstream_pins``), the changes waiting for a person (``upstream_changes``),
and which lockfile entry each locked upstream was last imported from (``upstream_locks``)."""

from __future__ import annotations

from dataclasses import astuple, dataclass

from gateway.store.interface import Store, Transaction
from gateway.store.repositories.rows import columns, typed

__all__ = [
    "Change",
    "ListedChange",
    "Pin",
    "PinIndex",
    "add_change",
    "change_known",
    "changes",
    "drop_change",
    "has_pins",
    "index",
    "index_for",
    "lock_digest",
    "matching_changes",
    "pending",
    "pin",
    "pinned_digest",
    "pins",
    "see_change",
    "set_lock_digest",
    "unpin",
    "unpin_upstream",
]

PinIndex = dict[tuple[str, str], tuple[str, str]]  # (kind, name) -> (digest, fingerprint)


@dataclass(frozen=True)
class Pin:
    upstream: str
    kind: str
    name: str
    exposed: str
    digest: str
    fingerprint: str
    definition: str  # JSON
    source: str  # first-use, approved, lockfile
    pinned_by: str
    pinned_at: str


@dataclass(frozen=True)
class Change:
    upstream: str
    kind: str
    name: str
    digest: str
    exposed: str
    status: str  # changed, renamed, new
    fingerprint: str
    definition: str  # JSON
    renamed_from: str | None
    first_seen: str
    last_seen: str


@dataclass(frozen=True)
class ListedChange(Change):
    """A pending change with the pin it would replace (None: nothing of that name is pinned)."""

    pinned_digest: str | None
    pinned_definition: str | None  # JSON


_INDEX = "SELECT kind, name, digest, fingerprint FROM upstream_pins WHERE upstream = ?"
_ONE_CHANGE = "upstream = ? AND kind = ? AND name = ? AND digest = ?"


def index(store: Store, upstream: str) -> PinIndex:
    return {(r["kind"], r["name"]): (r["digest"], r["fingerprint"]) for r in store.query(_INDEX, (upstream,))}


def index_for(store: Store, upstream: str, kind: str, name: str) -> PinIndex:
    """The pins of one definition and of the upstream's own (``server``) only."""
    rows = store.query(f"{_INDEX} AND ((kind = ? AND name = ?) OR kind = 'server')", (upstream, kind, name))
    return {(r["kind"], r["name"]): (r["digest"], r["fingerprint"]) for r in rows}


def pins(store: Store, upstream: str | None = None) -> list[Pin]:
    where, params = ("WHERE upstream = ?", (upstream,)) if upstream else ("", ())
    rows = store.query(f"SELECT {columns(Pin)} FROM upstream_pins {where} ORDER BY upstream, kind, name", params)
    return [typed(Pin, row) for row in rows]


def changes(store: Store, upstream: str | None = None) -> list[ListedChange]:
    """Pending changes, newest first."""
    where, params = ("WHERE c.upstream = ?", (upstream,)) if upstream else ("", ())
    listed = ", ".join(f"c.{name}" for name in columns(Change).split(", "))
    rows = store.query(
        f"SELECT {listed}, p.digest AS pinned_digest, p.definition AS pinned_definition FROM upstream_changes c "
        "LEFT JOIN upstream_pins p ON p.upstream = c.upstream AND p.kind = c.kind AND p.name = c.name "
        f"{where} ORDER BY c.last_seen DESC",
        params,
    )
    return [typed(ListedChange, row) for row in rows]


def has_pins(tx: Transaction, upstream: str) -> bool:
    return tx.execute("SELECT 1 FROM upstream_pins WHERE upstream = ? LIMIT 1", (upstream,)).fetchone() is not None


def pinned_digest(tx: Transaction, upstream: str, kind: str, name: str) -> str | None:
    sql = "SELECT digest FROM upstream_pins WHERE upstream = ? AND kind = ? AND name = ?"
    row = tx.execute(sql, (upstream, kind, name)).fetchone()
    return str(row["digest"]) if row is not None else None


def pin(tx: Transaction, row: Pin) -> None:
    """Pinned, unless that definition is pinned already."""
    tx.execute(
        f"INSERT INTO upstream_pins ({columns(Pin)}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
        astuple(row),
    )


def unpin(tx: Transaction, upstream: str, kind: str, name: str) -> None:
    tx.execute("DELETE FROM upstream_pins WHERE upstream = ? AND kind = ? AND name = ?", (upstream, kind, name))


def unpin_upstream(tx: Transaction, upstream: str) -> None:
    tx.execute("DELETE FROM upstream_pins WHERE upstream = ?", (upstream,))


def pending(tx: Transaction, upstream: str) -> list[tuple[str, str, str]]:
    """(kind, name, digest) of the upstream's pending changes."""
    rows = tx.execute("SELECT kind, name, digest FROM upstream_changes WHERE upstream = ?", (upstream,)).fetchall()
    return [(row["kind"], row["name"], row["digest"]) for row in rows]


def change_known(tx: Transaction, upstream: str, kind: str, name: str, digest: str) -> bool:
    sql = f"SELECT 1 FROM upstream_changes WHERE {_ONE_CHANGE}"
    return tx.execute(sql, (upstream, kind, name, digest)).fetchone() is not None


def see_change(tx: Transaction, upstream: str, kind: str, name: str, digest: str, now: str) -> None:
    """A pending change listed again."""
    tx.execute(f"UPDATE upstream_changes SET last_seen = ? WHERE {_ONE_CHANGE}", (now, upstream, kind, name, digest))


def add_change(tx: Transaction, row: Change) -> None:
    tx.execute(f"INSERT INTO upstream_changes ({columns(Change)}) VALUES ({', '.join('?' * 11)})", astuple(row))


def drop_change(tx: Transaction, upstream: str, kind: str, name: str, digest: str) -> None:
    tx.execute(f"DELETE FROM upstream_changes WHERE {_ONE_CHANGE}", (upstream, kind, name, digest))


def matching_changes(
    tx: Transaction, upstream: str | None = None, name: str | None = None, digest: str | None = None
) -> list[Change]:
    """Pending changes (of an upstream, of a name exposed or upstream's own, of a digest), newest first."""
    clauses: list[str] = []
    params: list[str] = []
    if upstream:
        clauses.append("upstream = ?")
        params.append(upstream)
    if name:
        clauses.append("(exposed = ? OR name = ?)")
        params += [name, name]
    if digest:
        clauses.append("digest = ?")
        params.append(digest)
    where = " AND ".join(clauses) or "1=1"
    sql = f"SELECT {columns(Change)} FROM upstream_changes WHERE {where} ORDER BY last_seen DESC"
    return [typed(Change, row) for row in tx.execute(sql, params).fetchall()]


def lock_digest(tx: Transaction, upstream: str) -> str | None:
    """The digest of the lockfile entry the upstream's pins were last imported from (None: never locked)."""
    row = tx.execute("SELECT lock_digest FROM upstream_locks WHERE upstream = ?", (upstream,)).fetchone()
    return str(row["lock_digest"]) if row is not None else None


def set_lock_digest(tx: Transaction, upstream: str, digest: str, now: str) -> None:
    tx.execute("DELETE FROM upstream_locks WHERE upstream = ?", (upstream,))
    tx.execute(
        "INSERT INTO upstream_locks (upstream, lock_digest, imported_at) VALUES (?, ?, ?)", (upstream, digest, now)
    )
