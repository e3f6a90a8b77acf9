"""Budgets (``budgets``): each scope's counts in its current window, and its token bucket."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gateway.store.interface import Store, Transaction
from gateway.store.repositories.rows import columns, typed

__all__ = ["COUNTED", "Charged", "add_measured", "charge_one", "charged", "charged_in", "write"]


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


def charge_one(
    store: Store,
    scope: str,
    now: float,
    window_s: int,
    amounts: Sequence[int],
    limits: Sequence[tuple[int, float, bool]],
    rate: tuple[int, float] | None,
) -> list[Any] | None:
    """Charge one scope in one statement, committed on its own: the row is brought to its window and its bucket
    refilled to ``now``, and charged ``amounts`` (one per count, in ``COUNTED`` order after window_start) only
    if every limit still holds; answers the row after it (``COUNTED`` values), or None when a limit would not
    hold (nothing was written: the caller finds out which in a transaction of its own).

    ``limits`` is (where the count is among the amounts, its limit, whether it is measured after a call) for
    each count the budget limits; ``rate`` is its bucket's (burst, per second). A scope's first charge makes its
    row: the caller checks the amounts fit a fresh window first."""
    charged = tuple(i for i, amount in enumerate(amounts) if amount)
    fresh_tokens = rate[0] - 1 if rate is not None else None
    rows = store.write_one(
        _charge_sql(window_s, charged, tuple(limits), rate), (scope, now, *amounts, fresh_tokens, now)
    )
    return list(rows[0]) if rows else None


@functools.lru_cache(maxsize=256)  # one statement per budget and charged counts: a handful in a gateway
def _charge_sql(
    window_s: int, charged: tuple[int, ...], limits: tuple[tuple[int, float, bool], ...], rate: tuple[int, float] | None
) -> str:
    # The budget's numbers are validated numbers (gateway/budgets.py), written into the statement as literals;
    # the call's values come in its one row of VALUES (excluded.*), so no parameter is repeated.
    counts = COUNTED[1:6]
    new_window = f"excluded.window_start >= budgets.window_start + {int(window_s)}"

    def before(count: str) -> str:  # the count so far in the window the call is in
        return f"(CASE WHEN {new_window} THEN 0 ELSE budgets.{count} END)"

    sets = [f"window_start = CASE WHEN {new_window} THEN excluded.window_start ELSE budgets.window_start END"]
    sets += [f"{count} = {before(count)} + excluded.{count}" for count in counts]
    holds: list[str] = []
    for at, limit, measured in limits:
        if at in charged:
            holds.append(f"{before(counts[at])} + excluded.{counts[at]} <= {float(limit)!r}")
        if measured:
            holds.append(f"{before(counts[at])} < {float(limit)!r}")
    if rate is not None:
        burst, per_s = int(rate[0]), float(rate[1])
        since = "(CASE WHEN excluded.refilled > budgets.refilled THEN excluded.refilled - budgets.refilled ELSE 0 END)"
        grown = f"(COALESCE(budgets.tokens + {since} * {per_s!r}, {burst}))"
        tokens = f"(CASE WHEN {grown} > {burst} THEN {burst} ELSE {grown} END)"
        sets += [f"tokens = {tokens} - 1", "refilled = excluded.refilled"]
        holds.append(f"{tokens} >= 1")
    return (
        f"INSERT INTO budgets ({columns(Charged)}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (scope) DO UPDATE "
        f"SET {', '.join(sets)} WHERE {' AND '.join(holds) or '1 = 1'} RETURNING {', '.join(COUNTED)}"
    )


def add_measured(tx: Transaction, scope: str, egress_bytes: int, wall_ms: int) -> None:
    """What a call used while it ran, added to the scope's window as it is now."""
    tx.execute(
        "UPDATE budgets SET egress_bytes = egress_bytes + ?, wall_ms = wall_ms + ? WHERE scope = ?",
        (egress_bytes, wall_ms, scope),
    )


def charged(store: Store) -> list[Charged]:
    """Every scope's row, by scope."""
    return [typed(Charged, row) for row in store.query(f"{_SELECT} ORDER BY scope")]
