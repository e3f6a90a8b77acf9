"""Budgets (``budgets``): each scope's counts in its current window, and its token bucket."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gateway.store.interface import Store, Transaction
from gateway.store.repositories.rows import columns, typed

__all__ = ["COUNTED", "Charged", "add_measured", "charged", "charged_in", "write"]


@dataclass(frozen=True)
class Charged:
    scope: str  # role:worker, agent:w1, task:T1
    window_start: float  # epoch seconds
    calls: int
    tier2: int
    tier3: int
    egress_bytes: int
    wall_ms: int
    tokens: float | None  # None: no rate limit has filled the bucket yet
    refilled: float  # epoch seconds


_SELECT = f"SELECT {columns(Charged)} FROM budgets"
COUNTED = columns(Charged).split(", ")[1:]  # a charged row's values, in order (``charged_in``, ``write``)
_SELECT_COUNTED = f"SELECT {', '.join(COUNTED)} FROM budgets WHERE scope = ?"
_UPSERT = (
    f"INSERT INTO budgets ({columns(Charged)}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (scope) DO UPDATE SET "
    + ", ".join(f"{name} = excluded.{name}" for name in columns(Charged).split(", ")[1:])
)


def charged_in(tx: Transaction, scope: str) -> list[Any] | None:
    """The scope's values (``COUNTED``, in order), read under the transaction's write lock (to charge it): a
    plain list, not a ``Charged``, as it is read and written on every call."""
    row = tx.execute(_SELECT_COUNTED, (scope,)).fetchone()
    return list(row) if row is not None else None


def write(tx: Transaction, scope: str, values: Sequence[Any]) -> None:
    """The scope's values (``COUNTED``, in order), inserted or replaced."""
    tx.execute(_UPSERT, (scope, *values))


def add_measured(tx: Transaction, scope: str, egress_bytes: int, wall_ms: int) -> None:
    """What a call used while it ran, added to the scope's window as it is now."""
    tx.execute(
        "UPDATE budgets SET egress_bytes = egress_bytes + ?, wall_ms = wall_ms + ? WHERE scope = ?",
        (egress_bytes, wall_ms, scope),
    )


def charged(store: Store) -> list[Charged]:
    """Every scope's row, by scope."""
    return [typed(Charged, row) for row in store.query(f"{_SELECT} ORDER BY scope")]
