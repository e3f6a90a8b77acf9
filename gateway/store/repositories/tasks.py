"""The tasks table and its manifest versions: every SQL string of the task board, answering ``TaskRow``.

row = tasks.task(store, "T1")                     # None: no such task
with store.transaction() as tx:
    row = tasks.locked(tx, "T1")                  # read under the write lock, then
    tasks.update(tx, "T1", state="claimed", owner="w", history=[...])   # a move TASK_MOVES allows
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from typing import Any

from gateway.store.interface import Row, Store, Transaction
from gateway.store.repositories.stateful import StatefulRows
from gateway.tasks.models import TaskManifest
from gateway.tasks.states import TASK_MOVES
from gateway.types import JSONObject

__all__ = [
    "TaskRow",
    "every",
    "exists",
    "expired_claims",
    "held_by",
    "insert",
    "locked",
    "record_manifest",
    "states",
    "task",
    "tasks_in",
    "trace_id_of",
    "trace_ids",
    "trace_of",
    "unfinished_of",
    "update",
]


@dataclass(frozen=True, slots=True)
class TaskRow:
    """A task as stored, its JSON columns decoded (the manifest validated again: a manifest recorded before a
    field existed gets the field's default)."""

    id: str
    manifest: JSONObject
    state: str
    base_branch: str
    base_commit: str
    branch: str
    worktree: str | None
    owner: str | None
    claim_expires: str | None
    attempt: int
    failures: int
    trace_id: str
    submitted_by: str
    created: str
    updated: str
    report: JSONObject | None
    verification: JSONObject | None
    blocker: JSONObject | None
    note: str | None
    report_digest: str | None
    strategy: str
    shifts: int
    strategy_attempts: int
    workers: list[str]
    history: list[JSONObject]
    manifest_version: int
    red: JSONObject | None

    @classmethod
    def of(cls, row: Row) -> TaskRow:
        stored = dict(row)
        decoded: dict[str, Any] = {
            "manifest": TaskManifest.model_validate(json.loads(stored["manifest"])).model_dump(),
            "workers": json.loads(stored.get("workers") or "[]"),
            "history": json.loads(stored.get("history") or "[]"),
        }
        for key in ("report", "verification", "blocker", "red"):
            decoded[key] = json.loads(stored[key]) if stored.get(key) else stored.get(key)
        values: dict[str, Any] = {f.name: decoded.get(f.name, stored.get(f.name)) for f in fields(cls)}
        return cls(**values)

    def as_dict(self) -> JSONObject:
        """The task as the board's answers, the policy and the tools see it: its columns by name."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


_COLUMNS = frozenset(f.name for f in fields(TaskRow)) - {"id", "created", "updated"}
_ROWS = StatefulRows(
    "tasks",
    _COLUMNS,
    frozenset({"manifest", "report", "verification", "blocker", "red", "workers", "history"}),
    TASK_MOVES,
    lambda task_id: f"task {task_id!r}",
)


# --- reads ----------------------------------------------------------------------------------------


def task(store: Store, task_id: str) -> TaskRow | None:
    rows = store.query("SELECT * FROM tasks WHERE id = ?", (task_id,))
    return TaskRow.of(rows[0]) if rows else None


def every(store: Store) -> list[TaskRow]:
    """Every task, oldest first."""
    return [TaskRow.of(row) for row in store.query("SELECT * FROM tasks ORDER BY created, id")]


def held_by(store: Store, agent: str) -> TaskRow | None:
    """The task ``agent`` claimed last that is still claimed."""
    rows = store.query(
        "SELECT * FROM tasks WHERE owner = ? AND state = 'claimed' ORDER BY updated DESC LIMIT 1", (agent,)
    )
    return TaskRow.of(rows[0]) if rows else None


def unfinished_of(store: Store, agent: str) -> TaskRow | None:
    """The task ``agent`` worked last that is neither committed nor abandoned."""
    rows = store.query(
        "SELECT * FROM tasks WHERE owner = ? AND state NOT IN ('committed', 'abandoned') ORDER BY updated DESC LIMIT 1",
        (agent,),
    )
    return TaskRow.of(rows[0]) if rows else None


def expired_claims(store: Store, moment: str) -> list[str]:
    """The ids of claimed tasks whose claim expires at or before ``moment`` (ISO time)."""
    rows = store.query("SELECT id FROM tasks WHERE state = 'claimed' AND claim_expires <= ?", (moment,))
    return [str(row["id"]) for row in rows]


def trace_ids(store: Store, trace_id: str | None = None) -> dict[str, str]:
    """Task id -> its trace id: of every task, or of those in ``trace_id``."""
    if trace_id is None:
        rows = store.query("SELECT id, trace_id FROM tasks")
    else:
        rows = store.query("SELECT id, trace_id FROM tasks WHERE trace_id = ?", (trace_id,))
    return {str(row["id"]): str(row["trace_id"]) for row in rows}


def trace_id_of(store: Store, task_id: str) -> str | None:
    rows = store.query("SELECT trace_id FROM tasks WHERE id = ?", (task_id,))
    return str(rows[0]["trace_id"]) if rows else None


# --- in the caller's transaction ------------------------------------------------------------------


def locked(tx: Transaction, task_id: str) -> TaskRow | None:
    row = _ROWS.locked(tx, task_id)
    return TaskRow.of(row) if row is not None else None


update = _ROWS.set
"""update(tx, task_id, **columns): write columns (JSON ones given as values) and ``updated``; a state only as
TASK_MOVES allows."""


def tasks_in(tx: Transaction) -> list[TaskRow]:
    return [TaskRow.of(row) for row in tx.execute("SELECT * FROM tasks")]


def states(tx: Transaction) -> dict[str, str]:
    return {row["id"]: row["state"] for row in tx.execute("SELECT id, state FROM tasks")}


def exists(tx: Transaction, task_id: str) -> bool:
    return tx.execute("SELECT 1 FROM tasks WHERE id = ?", (task_id,)).fetchone() is not None


def trace_of(tx: Transaction, task_id: str) -> str | None:
    row = tx.execute("SELECT trace_id FROM tasks WHERE id = ?", (task_id,)).fetchone()
    return str(row["trace_id"]) if row else None


def insert(
    tx: Transaction,
    manifest: TaskManifest,
    base_branch: str,
    base_commit: str,
    trace_id: str,
    submitted_by: str,
    now: str,
) -> None:
    """A new open task on branch task/<id>."""
    tx.execute(
        "INSERT INTO tasks (id, manifest, state, base_branch, base_commit, branch, trace_id, submitted_by, "
        "created, updated) VALUES (?, ?, 'open', ?, ?, ?, ?, ?, ?, ?)",
        (
            manifest.task_id,
            manifest.model_dump_json(),
            base_branch,
            base_commit,
            f"task/{manifest.task_id}",
            trace_id,
            submitted_by,
            now,
            now,
        ),
    )


def record_manifest(
    tx: Transaction, task_id: str, version: int, manifest: str, by: str, time: str, why: str | None, once: bool
) -> None:
    """Keep one version of a task's manifest (JSON text); ``once``: unless that version is kept already."""
    tx.execute(
        "INSERT INTO task_manifests (task_id, version, manifest, by, time, why) VALUES (?, ?, ?, ?, ?, ?)"
        + (" ON CONFLICT DO NOTHING" if once else ""),
        (task_id, version, manifest, by, time, why),
    )
