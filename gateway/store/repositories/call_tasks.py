"""Calls run as 2026-07-28 tasks (``call_tasks``): their state, so a poll after a crash is answered."""

from __future__ import annotations

from dataclasses import dataclass

from gateway.store.interface import Store, Transaction
from gateway.store.repositories.rows import columns, typed

__all__ = ["CallTask", "call_task", "create", "settle", "working"]


@dataclass(frozen=True)
class CallTask:
    id: str
    agent: str
    tool: str
    call_id: str
    status: str
    status_message: str | None
    result: str | None  # JSON
    error: str | None  # JSON
    process: str
    created: str
    updated: str
    expires: str


_SELECT = f"SELECT {columns(CallTask)} FROM call_tasks"


def create(
    tx: Transaction, task_id: str, agent: str, tool: str, call_id: str, process: str, now: str, expires: str
) -> None:
    tx.execute(
        "INSERT INTO call_tasks (id, agent, tool, call_id, status, process, created, updated, expires) "
        "VALUES (?, ?, ?, ?, 'working', ?, ?, ?, ?)",
        (task_id, agent, tool, call_id, process, now, now, expires),
    )


def settle(
    tx: Transaction, task_id: str, status: str, result: str | None, error: str | None, message: str | None, now: str
) -> None:
    """The task's end (or a new message while it works); a task already ended is left as it ended."""
    tx.execute(
        "UPDATE call_tasks SET status = ?, result = ?, error = ?, status_message = ?, updated = ? "
        "WHERE id = ? AND status = 'working'",
        (status, result, error, message, now, task_id),
    )


def call_task(store: Store, task_id: str, agent: str | None = None, live_at: str | None = None) -> CallTask | None:
    """The task, if it is ``agent``'s (when given) and has not expired by ``live_at`` (when given)."""
    sql, params = f"{_SELECT} WHERE id = ?", [task_id]
    if agent is not None:
        sql, params = f"{sql} AND agent = ?", [*params, agent]
    if live_at is not None:
        sql, params = f"{sql} AND expires > ?", [*params, live_at]
    rows = store.query(sql, params)
    return typed(CallTask, rows[0]) if rows else None


def working(store: Store) -> list[CallTask]:
    return [typed(CallTask, row) for row in store.query(f"{_SELECT} WHERE status = 'working'")]
