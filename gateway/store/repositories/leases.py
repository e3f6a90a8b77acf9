"""Leases (``leases``): a named lock across processes, held by one holder until it expires."""

from __future__ import annotations

from dataclasses import dataclass

from gateway.store.interface import Store, Transaction

__all__ = ["Lease", "extend", "lease", "lease_in", "release", "take"]


@dataclass(frozen=True)
class Lease:
    holder: str
    expires: str  # ISO 8601, UTC


def lease(store: Store, name: str) -> Lease | None:
    rows = store.query("SELECT holder, expires FROM leases WHERE name = ?", (name,))
    return Lease(rows[0]["holder"], rows[0]["expires"]) if rows else None


def lease_in(tx: Transaction, name: str) -> Lease | None:
    row = tx.execute("SELECT holder, expires FROM leases WHERE name = ?", (name,)).fetchone()
    return Lease(row["holder"], row["expires"]) if row is not None else None


def take(tx: Transaction, name: str, holder: str, acquired: str, expires: str) -> None:
    tx.execute(
        "INSERT INTO leases (name, holder, acquired, expires) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, acquired = excluded.acquired, "
        "expires = excluded.expires",
        (name, holder, acquired, expires),
    )


def extend(tx: Transaction, name: str, holder: str, expires: str) -> None:
    tx.execute("UPDATE leases SET expires = ? WHERE name = ? AND holder = ?", (expires, name, holder))


def release(tx: Transaction, name: str, holder: str) -> None:
    tx.execute("DELETE FROM leases WHERE name = ? AND holder = ?", (name, holder))
