"""The store: one interface (``interface.py``), on SQLite (``sqlite.py``, the default) or PostgreSQL
(``postgres.py``), with the schema as versioned files (``migrations/``) and every SQL string of the gateway in
its repositories (``repositories/``).

    store = open_store(config)          # gateway.yaml's ``store:``, else <state>/gateway.db

Both stores carry a schema version with the same numbers: ``SCHEMA_VERSION`` is what this gateway knows. A
store newer than that is refused with both versions named; an older SQLite file is upgraded on open, an older
PostgreSQL database is refused until ``gateway db upgrade`` (docs/store.md says why).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway.store.interface import Cursor, Row, Store, Transaction, one_row
from gateway.store.migrations import SCHEMA_VERSION, check_version
from gateway.store.sqlite import SqliteStore

if TYPE_CHECKING:
    from gateway.config import GatewayConfig

__all__ = [
    "SCHEMA_VERSION",
    "Cursor",
    "Row",
    "SqliteStore",
    "Store",
    "Transaction",
    "one_row",
    "open_store",
    "store_for",
]


def store_for(config: GatewayConfig) -> Store:
    """The configured store, not yet opened (no connection, no schema check): ``gateway db status``."""
    if config.store is not None:
        from gateway.store.postgres import PostgresStore  # psycopg is loaded only by who uses it

        return PostgresStore(config.store)
    config.store_path.parent.mkdir(parents=True, exist_ok=True)
    return SqliteStore(config.store_path)


def open_store(config: GatewayConfig) -> Store:
    """The configured store, ready: reachable and at this gateway's schema version (or a clear error)."""
    store = store_for(config)
    if isinstance(store, SqliteStore):
        store.upgrade()  # a local file follows the gateway that opens it
        return store
    check_version(store.where, store.schema_version())
    return store
