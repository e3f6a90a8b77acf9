"""The store: SQLite in WAL mode behind a small interface.

Everything that must survive a crash (ledger, tasks, claims, intents, approvals, revocations,
checkpoints) goes through ``Database.transaction()``. Writers take the write lock up front
(``BEGIN IMMEDIATE``), so read-check-write sequences such as claiming a task are atomic across threads
and processes. A PostgreSQL store would implement the same two methods with row locks.

    db = Database.open(Path(".gateway/gateway.db"))
    with db.transaction() as tx:
        tx.execute("INSERT INTO revocations (jti, time) VALUES (?, ?)", (jti, now))
    rows = db.query("SELECT jti FROM revocations")
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

# Each entry upgrades the schema by one version; never edit an entry that has shipped, append a new one.
MIGRATIONS: list[str] = [
    """
    CREATE TABLE ledger (
        seq INTEGER PRIMARY KEY,
        body TEXT NOT NULL,
        prev_hash TEXT NOT NULL,
        hash TEXT NOT NULL
    );
    CREATE INDEX ledger_trace ON ledger (json_extract(body, '$.trace_id'));
    CREATE TABLE revocations (jti TEXT PRIMARY KEY, time TEXT NOT NULL, reason TEXT);
    CREATE TABLE checkpoints (
        id TEXT PRIMARY KEY,
        time TEXT NOT NULL,
        kind TEXT NOT NULL,
        workspace TEXT NOT NULL,
        ref TEXT,
        call_id TEXT,
        detail TEXT NOT NULL
    );
    CREATE TABLE approvals (
        id TEXT PRIMARY KEY,
        call_key TEXT NOT NULL,
        state TEXT NOT NULL,
        created TEXT NOT NULL,
        expires TEXT NOT NULL,
        principal TEXT NOT NULL,
        tool TEXT NOT NULL,
        arguments_digest TEXT NOT NULL,
        request TEXT NOT NULL,
        settled_by TEXT,
        settled_at TEXT,
        used_by_call TEXT
    );
    CREATE INDEX approvals_key ON approvals (call_key, state);
    CREATE TABLE tasks (
        id TEXT PRIMARY KEY,
        manifest TEXT NOT NULL,
        state TEXT NOT NULL,
        base_branch TEXT NOT NULL,
        base_commit TEXT NOT NULL,
        branch TEXT NOT NULL,
        worktree TEXT,
        owner TEXT,
        claim_expires TEXT,
        attempt INTEGER NOT NULL DEFAULT 0,
        failures INTEGER NOT NULL DEFAULT 0,
        trace_id TEXT NOT NULL,
        submitted_by TEXT NOT NULL,
        created TEXT NOT NULL,
        updated TEXT NOT NULL,
        report TEXT,
        verification TEXT,
        blocker TEXT,
        note TEXT
    );
    CREATE TABLE intents (
        id TEXT PRIMARY KEY,
        task_id TEXT NOT NULL,
        action TEXT NOT NULL,
        arguments TEXT NOT NULL,
        state TEXT NOT NULL,
        proposed_by TEXT NOT NULL,
        approved_by TEXT,
        committed_by TEXT,
        outcome TEXT,
        trace_id TEXT,
        created TEXT NOT NULL,
        updated TEXT NOT NULL
    );
    """,
    # 2: each ledger row's HMAC (gateway/ledger/chain.py), with a key no agent can reach
    """
    ALTER TABLE ledger ADD COLUMN mac TEXT;
    """,
    # 3: leases (the merge queue's lock, across processes); an intent's attempt; a task's last report digest
    """
    CREATE TABLE leases (name TEXT PRIMARY KEY, holder TEXT NOT NULL, acquired TEXT NOT NULL, expires TEXT NOT NULL);
    ALTER TABLE intents ADD COLUMN attempt INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE tasks ADD COLUMN report_digest TEXT;
    """,
    # 4: convergence: attempts and strategies, who worked a task, the red phase, manifest versions, dead letters
    """
    ALTER TABLE tasks ADD COLUMN strategy TEXT NOT NULL DEFAULT 'initial';
    ALTER TABLE tasks ADD COLUMN shifts INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE tasks ADD COLUMN strategy_attempts INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE tasks ADD COLUMN workers TEXT NOT NULL DEFAULT '[]';
    ALTER TABLE tasks ADD COLUMN history TEXT NOT NULL DEFAULT '[]';
    ALTER TABLE tasks ADD COLUMN manifest_version INTEGER NOT NULL DEFAULT 1;
    ALTER TABLE tasks ADD COLUMN red TEXT;
    CREATE TABLE task_manifests (
        task_id TEXT NOT NULL,
        version INTEGER NOT NULL,
        manifest TEXT NOT NULL,
        by TEXT NOT NULL,
        time TEXT NOT NULL,
        why TEXT,
        PRIMARY KEY (task_id, version)
    );
    CREATE TABLE deadletters (
        id TEXT PRIMARY KEY,
        time TEXT NOT NULL,
        kind TEXT NOT NULL,
        tool TEXT NOT NULL,
        task_id TEXT,
        principal TEXT,
        trace_id TEXT,
        error TEXT NOT NULL,
        payload TEXT NOT NULL,
        state TEXT NOT NULL DEFAULT 'dead',
        replayed_at TEXT,
        replay_result TEXT
    );
    CREATE INDEX deadletters_state ON deadletters (state, time);
    """,
    # 5: where each reader of the ledger (the escalation notifier) has got to
    """
    CREATE TABLE cursors (name TEXT PRIMARY KEY, seq INTEGER NOT NULL, tries INTEGER NOT NULL DEFAULT 0)
    """,
]


class Transaction(Protocol):
    def execute(self, sql: str, params: Sequence[Any] = ...) -> Any: ...


class Store(Protocol):
    """What the rest of the gateway needs from a store."""

    def transaction(self) -> Any: ...
    def query(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]: ...


class Database:
    """A SQLite database file with the gateway's schema; one connection per thread."""

    def __init__(self, path: Path, synchronous: str = "NORMAL") -> None:
        self.path = path
        self.synchronous = synchronous
        self._local = threading.local()

    @classmethod
    def open(cls, path: Path, synchronous: str = "NORMAL") -> Database:
        path.parent.mkdir(parents=True, exist_ok=True)
        db = cls(path, synchronous)
        db._migrate()
        return db

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
    def transaction(self) -> Iterator[sqlite3.Connection]:
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

    def _migrate(self) -> None:
        with self.transaction() as tx:
            version = tx.execute("PRAGMA user_version").fetchone()[0]
            for number, script in enumerate(MIGRATIONS[version:], start=version + 1):
                for statement in filter(str.strip, script.split(";")):
                    tx.execute(statement)
                tx.execute(f"PRAGMA user_version={number}")
