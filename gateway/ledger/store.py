"""The store behind a small interface: SQLite in WAL mode (the default), or PostgreSQL (``postgres.py``).

Everything that must survive a crash (ledger, tasks, claims, intents, approvals, revocations,
checkpoints) goes through ``transaction()``. Writers take the write lock up front (SQLite's
``BEGIN IMMEDIATE``, PostgreSQL's transaction-scoped advisory lock), so read-check-write sequences such as
claiming a task are atomic across threads, processes and replicas. Callers write portable SQL with ``?``
placeholders; rows are read by column name or index on both stores.

    store = open_store(config)          # gateway.yaml's ``store:``, else <state>/gateway.db
    with store.transaction() as tx:
        tx.execute("INSERT INTO revocations (jti, time) VALUES (?, ?) ON CONFLICT DO NOTHING", (jti, now))
    rows = store.query("SELECT jti FROM revocations")

Both stores carry a schema version (SQLite's ``user_version``, PostgreSQL's ``schema_version`` table) with
the same numbers: ``SCHEMA_VERSION`` is what this gateway knows. A store newer than that is refused with
both versions named; an older SQLite file is upgraded on open, an older PostgreSQL database is refused
until ``gateway db upgrade`` (docs/store.md says why).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from gateway.errors import StoreError

if TYPE_CHECKING:
    from gateway.config import GatewayConfig

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
    # 6: where an approved call runs: the channel it came by and its confinement (gateway/approvals.py); rows
    # asked before have neither and authorise nothing. The same call approved elsewhere is found by its tool
    # and arguments.
    """
    ALTER TABLE approvals ADD COLUMN channel TEXT;
    ALTER TABLE approvals ADD COLUMN confinement TEXT;
    CREATE INDEX approvals_call ON approvals (tool, arguments_digest, state);
    """,
    # 7: pins of upstream definitions (gateway/tools/pins.py), the changes waiting for a person, and which
    # lockfile entry each locked upstream was last imported from
    """
    CREATE TABLE upstream_pins (
        upstream TEXT NOT NULL,
        kind TEXT NOT NULL,
        name TEXT NOT NULL,
        exposed TEXT NOT NULL,
        digest TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        definition TEXT NOT NULL,
        source TEXT NOT NULL,
        pinned_by TEXT NOT NULL,
        pinned_at TEXT NOT NULL,
        PRIMARY KEY (upstream, kind, name)
    );
    CREATE TABLE upstream_changes (
        upstream TEXT NOT NULL,
        kind TEXT NOT NULL,
        name TEXT NOT NULL,
        digest TEXT NOT NULL,
        exposed TEXT NOT NULL,
        status TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        definition TEXT NOT NULL,
        renamed_from TEXT,
        first_seen TEXT NOT NULL,
        last_seen TEXT NOT NULL,
        PRIMARY KEY (upstream, kind, name, digest)
    );
    CREATE TABLE upstream_locks (upstream TEXT PRIMARY KEY, lock_digest TEXT NOT NULL, imported_at TEXT NOT NULL)
    """,
    # 8: signed attestations of merges (gateway/attest/): the DSSE envelope, recorded before the branch moves
    """
    CREATE TABLE attestations (
        commit_id TEXT PRIMARY KEY,
        tree TEXT NOT NULL,
        ref TEXT NOT NULL,
        intent_id TEXT NOT NULL,
        task_id TEXT NOT NULL,
        kid TEXT NOT NULL,
        envelope TEXT NOT NULL,
        state TEXT NOT NULL,
        created TEXT NOT NULL,
        updated TEXT NOT NULL
    );
    CREATE INDEX attestations_state ON attestations (state)
    """,
    # 9: versioned shared artifacts (gateway/artifacts/): canonical revisions, a task's puts until its merge
    # commits, and conflicts for a person or an arbitrating role
    """
    CREATE TABLE artifacts (
        key TEXT NOT NULL,
        revision INTEGER NOT NULL,
        digest TEXT NOT NULL,
        content TEXT NOT NULL,
        base INTEGER NOT NULL,
        provenance TEXT NOT NULL,
        created TEXT NOT NULL,
        PRIMARY KEY (key, revision)
    );
    CREATE TABLE artifact_puts (
        id TEXT PRIMARY KEY,
        task_id TEXT NOT NULL,
        key TEXT NOT NULL,
        base INTEGER NOT NULL,
        digest TEXT NOT NULL,
        content TEXT NOT NULL,
        provenance TEXT NOT NULL,
        state TEXT NOT NULL,
        revision INTEGER,
        created TEXT NOT NULL
    );
    CREATE INDEX artifact_puts_task ON artifact_puts (task_id, state);
    CREATE TABLE artifact_conflicts (
        id TEXT PRIMARY KEY,
        key TEXT NOT NULL,
        base INTEGER NOT NULL,
        current INTEGER NOT NULL,
        put_id TEXT NOT NULL,
        state TEXT NOT NULL,
        resolved_by TEXT,
        resolution INTEGER,
        created TEXT NOT NULL,
        updated TEXT
    )
    """,
    # 10: the review index (gateway/ledger/review_index.py): a row per call and per trace, written with each
    # ledger row, so the review pages read what they show. Rows from before are indexed by catch_up, from the
    # cursor made here (at 0), a batch per transaction.
    """
    CREATE TABLE calls (
        call_id TEXT PRIMARY KEY,
        seq INTEGER NOT NULL,
        final_seq INTEGER,
        time TEXT NOT NULL,
        kind TEXT NOT NULL,
        trace_id TEXT,
        agent TEXT,
        role TEXT,
        task TEXT,
        tool TEXT,
        outcome TEXT NOT NULL,
        action TEXT,
        tier INTEGER,
        approved INTEGER NOT NULL DEFAULT 0,
        unknown INTEGER NOT NULL DEFAULT 0,
        checkpoint INTEGER NOT NULL DEFAULT 0
    );
    CREATE UNIQUE INDEX calls_seq ON calls (seq);
    CREATE INDEX calls_time ON calls (time, seq);
    CREATE INDEX calls_trace ON calls (trace_id, seq, agent, role, tool);
    CREATE INDEX calls_agent ON calls (agent, seq);
    CREATE INDEX calls_role ON calls (role, seq);
    CREATE INDEX calls_task ON calls (task, seq);
    CREATE INDEX calls_tool ON calls (tool, seq);
    CREATE INDEX calls_outcome ON calls (outcome, seq);
    CREATE INDEX calls_action ON calls (action, seq);
    CREATE INDEX calls_approved ON calls (approved, seq);
    CREATE INDEX calls_tier ON calls (tier, seq);
    CREATE INDEX calls_kind ON calls (kind, seq);
    CREATE TABLE call_rules (rule TEXT NOT NULL, seq INTEGER NOT NULL, PRIMARY KEY (rule, seq));
    CREATE TABLE call_counts (
        day TEXT NOT NULL,
        kind TEXT NOT NULL,
        agent TEXT NOT NULL,
        role TEXT NOT NULL,
        tool TEXT NOT NULL,
        tier INTEGER NOT NULL,
        outcome TEXT NOT NULL,
        action TEXT NOT NULL,
        approved INTEGER NOT NULL,
        n INTEGER NOT NULL,
        PRIMARY KEY (day, kind, agent, role, tool, tier, outcome, action, approved)
    );
    CREATE INDEX call_rules_seq ON call_rules (seq);
    CREATE TABLE trace_summaries (
        trace_id TEXT PRIMARY KEY,
        first_seq INTEGER NOT NULL,
        last_seq INTEGER NOT NULL,
        first TEXT NOT NULL,
        last TEXT NOT NULL,
        calls INTEGER NOT NULL DEFAULT 0,
        refused INTEGER NOT NULL DEFAULT 0,
        asked INTEGER NOT NULL DEFAULT 0,
        errors INTEGER NOT NULL DEFAULT 0,
        dry_runs INTEGER NOT NULL DEFAULT 0,
        unknown INTEGER NOT NULL DEFAULT 0,
        checkpoints INTEGER NOT NULL DEFAULT 0,
        side_effects TEXT NOT NULL DEFAULT '[]'
    );
    CREATE INDEX trace_summaries_order ON trace_summaries ((refused = 0), (asked = 0), last_seq DESC);
    CREATE TABLE trace_steps (
        trace_id TEXT NOT NULL, seq INTEGER NOT NULL, approval_id TEXT, call_id TEXT, PRIMARY KEY (trace_id, seq)
    );
    CREATE INDEX trace_steps_approval ON trace_steps (approval_id);
    CREATE INDEX trace_steps_call ON trace_steps (call_id);
    CREATE INDEX tasks_trace ON tasks (trace_id);
    CREATE INDEX ledger_kind ON ledger (json_extract(body, '$.kind'), seq);
    INSERT INTO cursors (name, seq, tries) VALUES ('review-index', 0, 0) ON CONFLICT (name) DO UPDATE SET seq = 0
    """,
    # 11: information-flow labels of each session (gateway/labels.py): what raised them, and the files the
    # session downloaded or decoded; a clean session has no row
    """
    CREATE TABLE flow_labels (
        session TEXT PRIMARY KEY,
        sources TEXT NOT NULL,
        files TEXT NOT NULL,
        updated TEXT NOT NULL
    )
    """,
    # 12: budgets (gateway/budgets.py): each scope's counts in its window and its token bucket
    """
    CREATE TABLE budgets (
        scope TEXT PRIMARY KEY,
        window_start DOUBLE PRECISION NOT NULL,
        calls INTEGER NOT NULL DEFAULT 0,
        tier2 INTEGER NOT NULL DEFAULT 0,
        tier3 INTEGER NOT NULL DEFAULT 0,
        egress_bytes BIGINT NOT NULL DEFAULT 0,
        wall_ms BIGINT NOT NULL DEFAULT 0,
        tokens DOUBLE PRECISION,
        refilled DOUBLE PRECISION NOT NULL
    )
    """,
    # 13: calls run as 2026-07-28 tasks (gateway/call_tasks.py): their state, so a poll after a crash is answered
    """
    CREATE TABLE call_tasks (
        id TEXT PRIMARY KEY,
        agent TEXT NOT NULL,
        tool TEXT NOT NULL,
        call_id TEXT NOT NULL,
        status TEXT NOT NULL,
        status_message TEXT,
        result TEXT,
        error TEXT,
        process TEXT NOT NULL,
        created TEXT NOT NULL,
        updated TEXT NOT NULL,
        expires TEXT NOT NULL
    )
    """,
    # 14: the review at a million calls (gateway/ledger/review_index.py): counts per rule key, so the rule filter
    # is a sum over groups, and calls per block of ledger rows, so a page by number skips whole blocks. The index
    # is derived: emptied here and built again from the ledger by catch_up, with the new tables filled alike.
    """
    CREATE TABLE rule_counts (  -- the groups of call_counts, each under a rule key
        rule TEXT NOT NULL, day TEXT NOT NULL, kind TEXT NOT NULL, agent TEXT NOT NULL, role TEXT NOT NULL,
        tool TEXT NOT NULL, tier INTEGER NOT NULL, outcome TEXT NOT NULL, action TEXT NOT NULL,
        approved INTEGER NOT NULL, n INTEGER NOT NULL,
        PRIMARY KEY (rule, day, kind, agent, role, tool, tier, outcome, action, approved)
    );
    CREATE TABLE call_blocks (
        block INTEGER NOT NULL, dry INTEGER NOT NULL, n INTEGER NOT NULL, PRIMARY KEY (block, dry)
    );
    DELETE FROM calls;
    DELETE FROM call_rules;
    DELETE FROM call_counts;
    DELETE FROM trace_summaries;
    DELETE FROM trace_steps;
    UPDATE cursors SET seq = 0 WHERE name = 'review-index';
    """,
]


SCHEMA_VERSION = len(MIGRATIONS)


class Row(Protocol):
    """A result row: ``row["seq"]`` or ``row[0]``; ``dict(row)`` gives its columns."""

    def __getitem__(self, key: str | int) -> Any: ...
    def keys(self) -> list[str]: ...


class Transaction(Protocol):
    def execute(self, sql: str, params: Sequence[Any] = ...) -> Any: ...


class Store(Protocol):
    """What the rest of the gateway needs from a store (``Database`` and ``PostgresStore``)."""

    where: str  # the store named for people: a path, or a URL with its password masked

    def transaction(self) -> Any: ...
    def after_commit(self, callback: Callable[[], None]) -> None: ...
    def query(self, sql: str, params: Sequence[Any] = ()) -> Sequence[Row]: ...
    def schema_version(self) -> int: ...
    def upgrade(self) -> tuple[int, int]: ...
    def close(self) -> None: ...


def store_for(config: GatewayConfig) -> Store:
    """The configured store, not yet opened (no connection, no schema check): ``gateway db status``."""
    if config.store is not None:
        from gateway.ledger.postgres import PostgresStore  # psycopg is loaded only by who uses it

        return PostgresStore(config.store)
    config.store_path.parent.mkdir(parents=True, exist_ok=True)
    return Database(config.store_path)


def open_store(config: GatewayConfig) -> Store:
    """The configured store, ready: reachable and at this gateway's schema version (or a clear error)."""
    store = store_for(config)
    if isinstance(store, Database):
        store.upgrade()  # a local file follows the gateway that opens it
        return store
    check_version(store, store.schema_version())
    return store


def check_version(store: Store, version: int, upgrading: bool = False) -> None:
    """Refuse a store whose schema this gateway cannot use, naming both versions."""
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"the store {store.where} has schema version {version}, newer than this gateway knows "
            f"({SCHEMA_VERSION}): run a gateway as new as the one that upgraded it"
        )
    if version < SCHEMA_VERSION and not upgrading:
        raise StoreError(
            f"the store {store.where} has schema version {version}; this gateway needs {SCHEMA_VERSION}: "
            "run 'gateway db upgrade'"
        )


class Database:
    """A SQLite database file with the gateway's schema; one connection per thread."""

    def __init__(self, path: Path, synchronous: str = "NORMAL") -> None:
        self.path = path
        self.where = str(path)
        self.synchronous = synchronous
        self._local = threading.local()

    @classmethod
    def open(cls, path: Path, synchronous: str = "NORMAL") -> Database:
        path.parent.mkdir(parents=True, exist_ok=True)
        db = cls(path, synchronous)
        db.upgrade()
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

    def schema_version(self) -> int:
        return int(self.query("PRAGMA user_version")[0][0])

    def upgrade(self) -> tuple[int, int]:
        """Apply the migrations this file lacks, in one transaction; answers (from, to) versions."""
        with self.transaction() as tx:
            version = tx.execute("PRAGMA user_version").fetchone()[0]
            check_version(self, version, upgrading=True)
            for number, script in enumerate(MIGRATIONS[version:], start=version + 1):
                for statement in filter(str.strip, script.split(";")):
                    tx.execute(statement)
                tx.execute(f"PRAGMA user_version={number}")
        return version, SCHEMA_VERSION
