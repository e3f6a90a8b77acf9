"""The store on PostgreSQL (psycopg 3): the same interface and semantics as the SQLite ``SqliteStore``.

Selected by ``store: postgresql://gateway:${PGPASSWORD}@db:5432/gateway`` in gateway.yaml. Several gateway
processes and replicas share one database.

Writers are serialised the way SQLite's ``BEGIN IMMEDIATE`` serialises them: every ``transaction()`` takes
one transaction-scoped advisory lock (``pg_advisory_xact_lock``) as its first statement, and holds it until
COMMIT or ROLLBACK. We chose that over row locks because every read-check-write sequence of the gateway
(claiming a task, settling an approval, moving an intent, appending to the ledger: read the last seq and
hash, write the next) is then atomic across replicas with no per-caller locking to get right, and the
ledger stays one ordered chain. Writes are short, so one writer at a time costs little; reads (``query``)
take no lock and see committed data. Unique keys still back what must be unique (task ids, intent ids,
revoked jtis, the ledger's seq).

Callers' SQL is translated once per statement text (cached): ``?`` placeholders become psycopg's ``%s``,
and ``json_extract(col, '$.key')`` becomes ``(col::jsonb ->> 'key')`` (text values; the ledger's trace
index uses the same expression). That is the only dialect difference left: the rest of the gateway writes
SQL both databases accept.

Failure: an unreachable database is a ``StoreUnavailable`` naming the URL with its password masked; a
connection lost mid-transaction rolls back (or leaves an unknown COMMIT unacknowledged) and raises
``StoreUnavailable``, so a call whose ledger row cannot be written never runs its side effect. The next use
reconnects.

    store = PostgresStore("postgresql://gateway:secret@127.0.0.1:5432/gateway")
    store.upgrade()                       # (0, 5): what ``gateway db upgrade`` does
    with store.transaction() as tx:
        tx.execute("UPDATE tasks SET owner = ? WHERE id = ?", ("w1", "T1"))
    store.query("SELECT id, owner FROM tasks")[0]["owner"]
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import lru_cache
from typing import Any, TypeVar

import psycopg
import structlog
from psycopg import pq
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from gateway.errors import StoreUnavailable
from gateway.store.interface import Transaction
from gateway.store.migrations import MIGRATIONS as FILES
from gateway.store.migrations import SCHEMA_VERSION, check_version, statements

__all__ = ["PostgresStore", "mask_url", "translate"]

log = structlog.get_logger("gateway.store")
T = TypeVar("T")
LOST = (psycopg.OperationalError, psycopg.InterfaceError)  # the connection or the server is gone

# One key for the gateway's write lock; advisory locks are scoped to the database, so gateways sharing a
# PostgreSQL server but not a database do not wait on each other.
WRITE_LOCK = int.from_bytes(hashlib.sha256(b"mcp-policy-gateway:write").digest()[:8], "big", signed=True)

# Connection settings unless the URL sets them: fail fast when the server is unreachable, notice a dead
# peer within seconds, never wait on the write lock forever.
DEFAULTS = {
    "connect_timeout": "5",
    "keepalives": "1",
    "keepalives_idle": "5",
    "keepalives_interval": "2",
    "keepalives_count": "3",
    "application_name": "mcp-policy-gateway",
    "options": "-c lock_timeout=30s",
}

# The schema at each version, as PostgreSQL migrations: (version, script) in order, numbered like the files in
# migrations/ so both stores report the same version for the same schema, and written from them: ``execute``
# translates SQLite's json_extract, and sequence numbers (``seq``) become 64-bit. Version 5 is the baseline: the
# whole schema SQLite reaches through files 1-5, in one step (shipped files never change, so neither does it).
# Each later version is its file through ``postgresql``, or its own ``.postgresql.sql`` file where the dialects
# part.
BASELINE = 5


def postgresql(script: str) -> str:
    """A SQLite migration as PostgreSQL takes it (the rest of the dialect is ``translate``'s)."""
    return re.sub(r"\b(\w*seq) INTEGER\b", r"\1 BIGINT", script)


MIGRATIONS: list[tuple[int, str]] = [
    (BASELINE, postgresql(";\n".join(m.script.rstrip(";") for m in FILES[:BASELINE]))),
    *((m.version, m.postgresql or postgresql(m.script)) for m in FILES[BASELINE:]),
]

_URL_PASSWORD = re.compile(r"(://[^/@:]*:)[^/]*@")  # to the last @: an unencoded @ in a password
_PARAM_PASSWORD = re.compile(r"((?:^|[?&\s])password=)[^&\s]*")
_JSON_EXTRACT = re.compile(r"json_extract\(\s*(\w+)\s*,\s*'\$\.(\w+)'\s*\)")
_LITERAL = re.compile(r"('(?:[^']|'')*')")


def mask_url(url: str) -> str:
    """The URL with its password (in the authority or a ``password=`` parameter) replaced by ***."""
    return _PARAM_PASSWORD.sub(r"\1***", _URL_PASSWORD.sub(r"\1***@", url))


@lru_cache(maxsize=1024)
def translate(sql: str) -> str:
    """SQL as the gateway writes it (``?`` placeholders, SQLite's json_extract) as psycopg runs it."""
    sql = _JSON_EXTRACT.sub(r"(\1::jsonb ->> '\2')", sql)
    parts = _LITERAL.split(sql)  # odd parts are quoted literals: a '?' or '%' there is text
    return "".join(
        part.replace("%", "%%") if i % 2 else part.replace("%", "%%").replace("?", "%s") for i, part in enumerate(parts)
    )


class Row(tuple[Any, ...]):
    """A row read by column name or by index, like ``sqlite3.Row``."""

    names: dict[str, int]

    def __new__(cls, values: Sequence[Any], names: dict[str, int]) -> Row:
        row = super().__new__(cls, values)
        row.names = names
        return row

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            return tuple.__getitem__(self, self.names[key])
        return tuple.__getitem__(self, key)

    def keys(self) -> list[str]:
        return list(self.names)


def _rows(cursor: Any) -> Callable[[Sequence[Any]], Row]:
    names = {column.name: i for i, column in enumerate(cursor.description or ())}
    return lambda values: Row(values, names)


class PostgresTransaction:
    """The ``tx`` of ``with store.transaction() as tx``: ``execute`` answers a cursor (fetchone, iteration,
    rowcount)."""

    def __init__(self, connection: psycopg.Connection[Any]) -> None:
        self.connection = connection

    def execute(self, sql: str, params: Sequence[Any] = ()) -> psycopg.Cursor[Any]:
        return self.connection.execute(translate(sql), tuple(params))


class PostgresStore:
    """A PostgreSQL database with the gateway's schema; one connection per thread, reconnected after a loss."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.where = mask_url(url)
        self._local = threading.local()

    @property
    def connection(self) -> psycopg.Connection[Any]:
        conn = getattr(self._local, "conn", None)
        if conn is None or conn.closed or conn.broken:
            conn = self._connect()
            self._local.conn = conn
        return conn

    @contextmanager
    def transaction(self) -> Iterator[Transaction]:
        self._local.after = []
        conn = self._retrying(self._begin)
        try:
            yield PostgresTransaction(conn)
            conn.execute("COMMIT")
        except BaseException as exc:
            self._local.after = []
            if not isinstance(exc, LOST):
                self._rollback(conn)
                raise
            # lost mid-transaction (or at COMMIT, whose outcome is then unknown): nothing is acknowledged
            self._drop(conn)
            raise self._lost(exc) from None
        after, self._local.after = self._local.after, []
        for callback in after:
            callback()

    def after_commit(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` once the current transaction has committed (never if it rolls back)."""
        self._local.after.append(callback)

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        return self._retrying(lambda conn: conn.execute(translate(sql), tuple(params)).fetchall())

    def schema_version(self) -> int:
        rows = self.query("SELECT version FROM schema_version") if self._has_versions() else []
        return int(rows[0][0]) if rows else 0

    def upgrade(self) -> tuple[int, int]:
        """Apply the pending migrations in one transaction (under the write lock: replicas starting together
        upgrade once); answers (from, to) versions."""
        with self.transaction() as tx:
            tx.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
            row = tx.execute("SELECT version FROM schema_version").fetchone()
            version = int(row[0]) if row else 0
            check_version(self.where, version, upgrading=True)
            for number, script in MIGRATIONS:
                if number > version:
                    for statement in statements(script):
                        tx.execute(statement)
            tx.execute("DELETE FROM schema_version")
            tx.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION,))
        return version, SCHEMA_VERSION

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def _begin(self, conn: psycopg.Connection[Any]) -> psycopg.Connection[Any]:
        conn.execute("BEGIN")
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))
        return conn

    def _retrying(self, work: Callable[[psycopg.Connection[Any]], T]) -> T:
        """``work(connection)``, once more on a new connection if the kept one was found dead (the server
        restarted since its last use): safe, since a failed read or BEGIN did nothing. Never inside a
        transaction: what it did so far is gone with the connection."""
        for attempt in (1, 2):
            reused = getattr(self._local, "conn", None) is not None
            conn = self.connection
            idle = conn.info.transaction_status == pq.TransactionStatus.IDLE
            try:
                return work(conn)
            except LOST as exc:
                self._drop(conn)
                if attempt == 2 or not reused or not idle:
                    raise self._lost(exc) from None
        raise AssertionError("unreachable")

    def _has_versions(self) -> bool:
        return bool(self.query("SELECT to_regclass('schema_version')")[0][0])

    def _connect(self) -> psycopg.Connection[Any]:
        # no local here holds the password: a traceback that shows locals cannot show it
        try:
            return psycopg.connect(self._conninfo(), autocommit=True, row_factory=_rows)
        except psycopg.ProgrammingError:
            raise StoreUnavailable(f"the store URL {self.where} is not a valid PostgreSQL URL") from None
        except psycopg.Error as exc:
            raise StoreUnavailable(f"cannot reach the store {self.where}: {self._reason(exc)}") from None

    def _conninfo(self) -> str:
        """The URL with the connection defaults it does not set itself."""
        given = conninfo_to_dict(self.url)
        return make_conninfo(self.url, **{k: v for k, v in DEFAULTS.items() if k not in given})

    def _lost(self, exc: BaseException) -> StoreUnavailable:
        # the log names the store and the cause; the caller (perhaps an agent) learns only that it failed
        log.error("the store stopped answering", store=self.where, error=self._reason(exc))
        return StoreUnavailable("the gateway's store is unavailable; nothing was done")

    def _reason(self, exc: BaseException) -> str:
        """libpq's message, on one line, without the password should a message ever quote it."""
        text = " ".join(str(exc).split()) or type(exc).__name__
        password = conninfo_to_dict(self.url).get("password")
        return mask_url(text.replace(str(password), "***") if password else text)

    def _rollback(self, conn: psycopg.Connection[Any]) -> None:
        try:
            conn.execute("ROLLBACK")
        except psycopg.Error:
            self._drop(conn)

    def _drop(self, conn: psycopg.Connection[Any]) -> None:
        try:
            conn.close()
        finally:
            self._local.conn = None
