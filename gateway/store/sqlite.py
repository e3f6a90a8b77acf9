"""The store in a SQLite file in WAL mode (the default: ``<state>/gateway.db``); one connection per thread.

An older file is upgraded when it is opened (the file follows the gateway that opens it); a newer one is
refused, naming both versions.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

from gateway.errors import StoreUnavailable
from gateway.store.interface import Transaction
from gateway.store.migrations import MIGRATIONS, SCHEMA_VERSION, check_version, statements

__all__ = ["SqliteStore"]


class SqliteStore:
    """A SQLite database file with the gateway's schema."""

    def __init__(self, path: Path, synchronous: str = "NORMAL") -> None:
        self.path = path
        self.where = str(path)
        self.synchronous = synchronous
        self._local = threading.local()

    @classmethod
    def open(cls, path: Path, synchronous: str = "NORMAL") -> SqliteStore:
        path.parent.mkdir(parents=True, exist_ok=True)
        store = cls(path, synchronous)
        store.upgrade()
        return store

    @property
    def connection(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, isolation_level=None, timeout=30.0)
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(f"PRAGMA synchronous={self.synchronous}")
            conn.execute("PRAGMA foreign_keys=ON")
            self._local.conn = conn
        return conn

    @contextmanager
    def transaction(self) -> Iterator[Transaction]:
        # the connection is the transaction: its execute answers a cursor, and no wrapper sits on the hot path
        conn = self.connection
        conn.execute("BEGIN IMMEDIATE")
        self._local.after = []
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            self._local.after = []
            raise
        conn.execute("COMMIT")
        after, self._local.after = self._local.after, []
        for callback in after:
            callback()

    def after_commit(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` once the current transaction has committed (never if it rolls back)."""
        self._local.after.append(callback)

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        return self.connection.execute(sql, params).fetchall()

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def schema_version(self) -> int:
        return int(self.query("PRAGMA user_version")[0][0])

    def version_on_disk(self) -> int:
        """The schema version in the file as it is on disk now (read-only, never created): the connection
        kept open would still read a file since removed."""
        try:
            conn = sqlite3.connect(f"file:{quote(str(self.path))}?mode=ro", uri=True, timeout=5.0)
        except sqlite3.Error as exc:
            raise StoreUnavailable(f"cannot open the store {self.where}: {exc}") from None
        try:
            return int(conn.execute("PRAGMA user_version").fetchone()[0])
        except sqlite3.Error as exc:
            raise StoreUnavailable(f"cannot read the store {self.where}: {exc}") from None
        finally:
            conn.close()

    def upgrade(self) -> tuple[int, int]:
        """Apply the migrations this file lacks, in one transaction; answers (from, to) versions."""
        with self.transaction() as tx:
            row = tx.execute("PRAGMA user_version").fetchone()
            version = int(row[0]) if row else 0
            check_version(self.where, version, upgrading=True)
            for migration in MIGRATIONS[version:]:
                for statement in statements(migration.script):
                    tx.execute(statement)
                tx.execute(f"PRAGMA user_version={migration.version}")
        return version, SCHEMA_VERSION
