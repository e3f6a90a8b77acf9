"""The schema's versions as files: ``NNNN_what.sql`` upgrades the schema from version NNNN-1 to NNNN.

Both stores run the same files and report the same version numbers (SQLite's ``user_version``, PostgreSQL's
``schema_version`` table). A file is written in the SQL both accept, as SQLite spells it; ``postgres.py``
translates the rest (64-bit sequence numbers, ``json_extract``). Where the dialects truly part, a
``NNNN_what.postgresql.sql`` next to it is what PostgreSQL runs instead. Never edit a file that has shipped:
add the next number. ``--`` lines are comments (a file says why its version exists).

    [m.version for m in MIGRATIONS][:3]     # [1, 2, 3]
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib.resources import files

from gateway.errors import StoreError

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "Migration", "check_version", "statements"]

_NAME = re.compile(r"(\d{4})_(\w+)\.sql")
_POSTGRESQL = ".postgresql.sql"


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    script: str  # the statements, comments removed, as SQLite (and, translated, PostgreSQL) runs them
    postgresql: str | None  # PostgreSQL's own script, where the dialects part


def statements(script: str) -> list[str]:
    """A script's statements, in order (no statement of the schema holds a ``;`` in a literal)."""
    return [statement.strip() for statement in script.split(";") if statement.strip()]


def _script(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("--")).strip()


def _load() -> list[Migration]:
    folder = files(__name__)
    found: list[Migration] = []
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        match = _NAME.fullmatch(entry.name)
        if match is None:
            continue
        version, name = int(match[1]), match[2]
        if version != len(found) + 1:
            raise StoreError(f"schema migration {entry.name} is out of sequence: expected number {len(found) + 1}")
        own = folder / entry.name.replace(".sql", _POSTGRESQL)
        postgresql = _script(own.read_text(encoding="utf-8")) if own.is_file() else None
        found.append(Migration(version, name, _script(entry.read_text(encoding="utf-8")), postgresql))
    return found


MIGRATIONS: list[Migration] = _load()
SCHEMA_VERSION = len(MIGRATIONS)


def check_version(where: str, version: int, upgrading: bool = False) -> None:
    """Refuse a store (named ``where``) whose schema this gateway cannot use, naming both versions."""
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"the store {where} has schema version {version}, newer than this gateway knows "
            f"({SCHEMA_VERSION}): run a gateway as new as the one that upgraded it"
        )
    if version < SCHEMA_VERSION and not upgrading:
        raise StoreError(
            f"the store {where} has schema version {version}; this gateway needs {SCHEMA_VERSION}: "
            "run 'gateway db upgrade'"
        )
