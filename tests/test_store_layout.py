"""The store as one package: no SQL outside gateway/store/, the schema's versions as files shipped with the
package, and a SQLite file left at any older version upgraded on open to the schema a new one gets."""

from __future__ import annotations

import ast
import re
import sqlite3
import tomllib
from pathlib import Path

import pytest

from gateway.store import SCHEMA_VERSION, SqliteStore
from gateway.store.migrations import MIGRATIONS, statements

ROOT = Path(__file__).resolve().parent.parent
GATEWAY = ROOT / "gateway"

# Modules allowed SQL outside gateway/store/ while it moves into repositories (none left).
ALLOWED: set[str] = set()

SQL = re.compile(
    r"\bSELECT\b[\s\S]*\bFROM\b|\bINSERT\s+INTO\b|\bUPDATE\s+\w+\s+SET\b|\bDELETE\s+FROM\b"
    r"|\b(CREATE|ALTER|DROP)\s+(UNIQUE\s+)?(TABLE|INDEX)\b|\bPRAGMA\b|\bON\s+CONFLICT\b"
)
RUNS_SQL = {"execute", "executemany", "executescript"}


def _text(node: ast.expr) -> str | None:
    """The literal text of a string, an f-string (its literal parts) or a concatenation of them."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(str(v.value) for v in node.values if isinstance(v, ast.Constant))
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _text(node.left), _text(node.right)
        return (left or "") + (right or "") if left is not None or right is not None else None
    return None


def sql_in(source: str) -> list[tuple[int, str]]:
    """(line, what) for each SQL string and each statement run on a connection or transaction."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant | ast.JoinedStr):
            text = _text(node)
            if text is not None and SQL.search(text):
                found.append((node.lineno, text.strip().splitlines()[0][:80]))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in RUNS_SQL:
            first = node.args[0] if node.args else None
            if first is not None and _text(first) is not None:
                found.append((node.lineno, f".{node.func.attr}() of a string"))
    return found


def test_the_scan_finds_sql_in_its_forms() -> None:
    source = """
tx.execute("SELECT 1 FROM t")
db.query(f"SELECT {cols} FROM t WHERE a = ?", (1,))
conn.executescript("BEGIN")
sql = "UPDATE tasks SET owner = ?"
d.execute(call, "pager", "git --paginate runs a pager")
engine.query("gateway.decision", {})
"""
    lines = sorted({line for line, _ in sql_in(source)})
    assert lines == [2, 3, 4, 5]


def test_no_sql_outside_the_store_package() -> None:
    offenders = []
    for path in sorted(GATEWAY.rglob("*.py")):
        name = path.relative_to(ROOT).as_posix()
        if name.startswith("gateway/store/") or name in ALLOWED:
            continue
        offenders += [f"{name}:{line}: {what}" for line, what in sql_in(path.read_text(encoding="utf-8"))]
    assert not offenders, "SQL belongs in a repository under gateway/store/repositories/:\n" + "\n".join(offenders)


def test_the_allowlist_holds_only_modules_with_sql() -> None:
    stale = [name for name in sorted(ALLOWED) if not sql_in((ROOT / name).read_text(encoding="utf-8"))]
    assert not stale, f"no SQL left in {stale}: take them off ALLOWED"


def test_migrations_are_numbered_files_shipped_with_the_package() -> None:
    folder = GATEWAY / "store" / "migrations"
    files = sorted(p.name for p in folder.glob("*.sql") if not p.name.endswith(".postgresql.sql"))
    assert [m.version for m in MIGRATIONS] == list(range(1, SCHEMA_VERSION + 1))
    assert files == [f"{m.version:04d}_{m.name}.sql" for m in MIGRATIONS]
    assert all(not line.lstrip().startswith("--") for m in MIGRATIONS for line in m.script.splitlines())
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert "store/migrations/*.sql" in package_data["gateway"]


def _schema(path: Path) -> set[tuple[str, str]]:
    with sqlite3.connect(path) as conn:
        tables = conn.execute("SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'").fetchall()
        columns = {
            (table, f"{column[1]} {column[2]} {column[3]} {column[4]}")
            for kind, table in tables
            if kind == "table"
            for column in conn.execute(f"PRAGMA table_info({table})")
        }
    return set(tables) | columns


@pytest.mark.parametrize("version", range(SCHEMA_VERSION))
def test_a_file_left_at_an_older_version_upgrades_on_open(tmp_path: Path, version: int) -> None:
    """What a gateway of that version left (its migrations applied, no later ones) opens as the schema today."""
    old = tmp_path / "old.db"
    with sqlite3.connect(old, isolation_level=None) as conn:
        for migration in MIGRATIONS[:version]:
            for statement in statements(migration.script):
                conn.execute(statement)
        conn.execute(f"PRAGMA user_version={version}")
    store = SqliteStore.open(old)
    assert store.schema_version() == SCHEMA_VERSION
    store.close()
    fresh = SqliteStore.open(tmp_path / "fresh.db")
    fresh.close()
    assert _schema(old) == _schema(tmp_path / "fresh.db")
