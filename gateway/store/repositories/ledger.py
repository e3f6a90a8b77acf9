"""The ledger's rows (``ledger``): the hash chain's links, each row's HMAC, and the events' JSON bodies."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gateway.store.interface import Store, Transaction
from gateway.store.repositories.rows import columns, typed

__all__ = [
    "Link",
    "Stored",
    "append",
    "calls_in_trace",
    "head",
    "head_in",
    "head_seq",
    "legacy_through",
    "matching",
    "of_kind",
    "open_calls",
    "page",
    "since",
]


@dataclass(frozen=True)
class Link:
    seq: int
    hash: str


@dataclass(frozen=True)
class Stored:
    """A row as written: the event's canonical JSON and its place in the chain."""

    seq: int
    body: str
    prev_hash: str
    hash: str
    mac: str | None  # None for rows written before the ledger was authenticated


_LAST = "SELECT seq, hash FROM ledger ORDER BY seq DESC LIMIT 1"
_SELECT = f"SELECT {columns(Stored)} FROM ledger"


def head_in(tx: Transaction) -> Link | None:
    """The newest row, read under the transaction's write lock (the next row links to it)."""
    row = tx.execute(_LAST).fetchone()
    return Link(row["seq"], row["hash"]) if row is not None else None


def head(store: Store) -> Link | None:
    rows = store.query(_LAST)
    return Link(rows[0]["seq"], rows[0]["hash"]) if rows else None


def head_seq(store: Store) -> int:
    return int(store.query("SELECT COALESCE(MAX(seq), 0) FROM ledger")[0][0])


def append(tx: Transaction, row: Stored) -> None:
    tx.execute(
        "INSERT INTO ledger (seq, body, prev_hash, hash, mac) VALUES (?, ?, ?, ?, ?)",
        (row.seq, row.body, row.prev_hash, row.hash, row.mac),
    )


def legacy_through(store: Store) -> int:
    """The newest row without an HMAC (0 when there is none)."""
    return int(store.query("SELECT max(seq) AS s FROM ledger WHERE mac IS NULL")[0]["s"] or 0)


def page(store: Store, after: int, limit: int) -> list[Stored]:
    """Rows after ``after``, oldest first."""
    rows = store.query(f"{_SELECT} WHERE seq > ? ORDER BY seq LIMIT ?", (after, limit))
    return [typed(Stored, row) for row in rows]


since = page  # how a reader follows the ledger from its cursor


def open_calls(store: Store) -> list[str]:
    """The bodies of "started" rows no later row of the same call ended."""
    rows = store.query(
        "SELECT body FROM ledger WHERE json_extract(body, '$.outcome') = 'started' AND "
        "json_extract(body, '$.call_id') NOT IN (SELECT json_extract(body, '$.call_id') FROM ledger "
        "WHERE json_extract(body, '$.outcome') != 'started' AND json_extract(body, '$.call_id') IS NOT NULL)"
    )
    return [row["body"] for row in rows]


def matching(store: Store, where: str, params: tuple[Any, ...], limit: int) -> list[Stored]:
    """Rows meeting ``where`` (a condition over the ledger's columns, with ``?`` for ``params``), newest first."""
    rows = store.query(f"{_SELECT} WHERE {where} ORDER BY seq DESC LIMIT ?", (*params, limit))
    return [typed(Stored, row) for row in rows]


def of_kind(
    store: Store, kind: str, trace_id: str | None = None, containing: str | None = None, limit: int = 1000
) -> list[Stored]:
    """Events of one kind, newest first: in one trace, and/or whose JSON contains a text."""
    where, params = "json_extract(body, '$.kind') = ?", [kind]
    if trace_id is not None:
        where, params = f"{where} AND json_extract(body, '$.trace_id') = ?", [*params, trace_id]
    if containing is not None:
        where, params = f"{where} AND body LIKE ?", [*params, f"%{containing}%"]
    return matching(store, where, tuple(params), limit)


def calls_in_trace(tx: Transaction, trace_id: str) -> list[str]:
    """The bodies of a trace's call rows, oldest first, read inside the caller's transaction."""
    rows = tx.execute(
        "SELECT body FROM ledger WHERE json_extract(body, '$.trace_id') = ? AND json_extract(body, '$.kind') = 'call'"
        " ORDER BY seq",
        (trace_id,),
    ).fetchall()
    return [row["body"] for row in rows]
