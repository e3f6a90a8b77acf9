"""What the rest of the gateway needs from a store: the SQLite ``SqliteStore`` (``sqlite.py``) and the
PostgreSQL ``PostgresStore`` (``postgres.py``) both are one.

Everything that must survive a crash goes through ``transaction()``. Writers take the write lock up front
(SQLite's ``BEGIN IMMEDIATE``, PostgreSQL's transaction-scoped advisory lock), so a read-check-write sequence
inside one transaction is atomic across threads, processes and replicas. SQL is written once, portable, with
``?`` placeholders, and only in ``gateway/store/`` (its repositories); rows are read by column name or index
on both stores.

    with store.transaction() as tx:
        tx.execute("INSERT INTO revocations (jti, time) VALUES (?, ?) ON CONFLICT DO NOTHING", (jti, now))
    rows = store.query("SELECT jti FROM revocations")
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

__all__ = ["Cursor", "Row", "Store", "Transaction", "one_row"]


class Row(Protocol):
    """A result row: ``row["seq"]`` or ``row[0]``; ``dict(zip(row.keys(), row))`` gives its columns."""

    def __getitem__(self, key: str | int, /) -> Any: ...
    def __iter__(self) -> Iterator[Any]: ...
    def keys(self) -> list[str]: ...


class Cursor(Protocol):
    """What a statement run in a transaction answers: its rows, and how many rows it changed."""

    @property
    def rowcount(self) -> int: ...
    def fetchone(self) -> Row | None: ...
    def fetchall(self) -> Sequence[Row]: ...
    def __iter__(self) -> Iterator[Row]: ...


class Transaction(Protocol):
    """The ``tx`` of ``with store.transaction() as tx``: it holds the write lock until it commits."""

    def execute(self, sql: str, params: Sequence[Any] = (), /) -> Cursor: ...


class Store(Protocol):
    where: str  # the store named for people: a path, or a URL with its password masked

    def transaction(self) -> AbstractContextManager[Transaction]: ...
    def after_commit(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` once the current transaction has committed (never if it rolls back)."""
        ...

    def query(self, sql: str, params: Sequence[Any] = ()) -> Sequence[Row]: ...
    def schema_version(self) -> int: ...
    def upgrade(self) -> tuple[int, int]:
        """Apply the migrations the store lacks, in one transaction; answers (from, to) versions."""
        ...

    def close(self) -> None: ...


def one_row(cursor: Cursor) -> Row:
    """The row a statement cannot fail to answer: an aggregate, or a row this transaction holds or wrote."""
    row = cursor.fetchone()
    if row is None:
        raise LookupError("the store answered no row where one must be")
    return row
