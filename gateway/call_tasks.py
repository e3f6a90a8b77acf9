"""Calls run as tasks (the MCP 2026-07-28 tasks extension, SEP-2663): a long call (``verify_run``,
``intent_commit``) answers at once with a task its client polls, so a client's tool timeout (often ~60 s)
no longer leaves the call without an answer.

A task's state is a row of the store (``call_tasks``), written in a transaction before the call starts and
again when it ends, so any process of the gateway answers ``tasks/get`` and a crash never leaves a task
"working" forever: on start, a task whose process is gone is failed, naming the call in the ledger (the
call's own recovery, e.g. an intent the merge executor finishes or undoes, is the ledger's and the
executor's; the task says where to look). Only the agent that started a task can read or cancel it.

    tasks = CallTasks(db)
    task = tasks.create(agent="w1", tool="verify_run", call_id=call.call_id, ttl_s=3600)
    tasks.settle(task["taskId"], "completed", result={...})
    tasks.get(task_id, agent="w1")      # the task as tasks/get answers it, or None
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Literal

from gateway.locks import this_process
from gateway.store import Store
from gateway.store.repositories import call_tasks
from gateway.store.repositories.call_tasks import CallTask
from gateway.types import JSONObject

__all__ = ["EXTENSION", "POLL_INTERVAL_MS", "TASK_TOOLS", "CallTasks", "TaskStatus"]

EXTENSION = "io.modelcontextprotocol/tasks"  # the extension's identifier, in both sides' capabilities
TASK_TOOLS = frozenset({"verify_run", "intent_commit"})  # the gateway's calls long enough to run as tasks
POLL_INTERVAL_MS = 1000
TaskStatus = Literal["working", "input_required", "completed", "failed", "cancelled"]


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class CallTasks:
    """The store's ``call_tasks`` rows: create, settle, read, and what a crash left."""

    def __init__(self, db: Store, ttl_s: int = 3600) -> None:
        self.db = db
        self.ttl_s = ttl_s

    def create(self, agent: str, tool: str, call_id: str) -> JSONObject:
        task_id = "task-" + secrets.token_hex(12)
        now = datetime.now(UTC)
        created = now.isoformat(timespec="milliseconds")
        expires = (now + timedelta(seconds=self.ttl_s)).isoformat(timespec="milliseconds")
        with self.db.transaction() as tx:
            call_tasks.create(tx, task_id, agent, tool, call_id, this_process(), created, expires)
        task = self.get(task_id, agent)
        assert task is not None
        return task

    def settle(
        self,
        task_id: str,
        status: TaskStatus,
        result: JSONObject | None = None,
        error: JSONObject | None = None,
        message: str | None = None,
    ) -> None:
        """The task's end (or a new message while it works); a task already ended is left as it ended."""
        with self.db.transaction() as tx:
            call_tasks.settle(
                tx,
                task_id,
                status,
                json.dumps(result) if result is not None else None,
                json.dumps(error) if error is not None else None,
                message,
                _now(),
            )

    def get(self, task_id: str, agent: str) -> JSONObject | None:
        """The task as ``tasks/get`` answers it: None for one that does not exist, expired, or is another
        agent's (the same answer, so nothing can be probed)."""
        task = call_tasks.call_task(self.db, task_id, agent, live_at=_now())
        return _wire(task) if task is not None else None

    def call_of(self, task_id: str) -> str | None:
        task = call_tasks.call_task(self.db, task_id)
        return task.call_id if task is not None else None

    def recover(self, alive: Callable[[str], bool]) -> list[str]:
        """Tasks still working whose process is gone: failed, naming their call. Answers their ids."""
        failed = []
        for task in call_tasks.working(self.db):
            if alive(task.process):
                continue
            error = {
                "code": -32603,
                "message": f"the gateway stopped during the call (call {task.call_id} in the ledger); it may or "
                "may not have taken effect: check its trace before running it again",
            }
            self.settle(task.id, "failed", error=error)
            failed.append(task.id)
        return failed


def _wire(row: CallTask) -> JSONObject:
    created = datetime.fromisoformat(row.created)
    ttl_ms = int((datetime.fromisoformat(row.expires) - created).total_seconds() * 1000)
    task: JSONObject = {
        "taskId": row.id,
        "status": row.status,
        "createdAt": row.created,
        "lastUpdatedAt": row.updated,
        "ttlMs": ttl_ms,
        "pollIntervalMs": POLL_INTERVAL_MS,
    }
    if row.status_message:
        task["statusMessage"] = row.status_message
    if row.status == "completed" and row.result:
        task["result"] = json.loads(row.result)
    if row.status == "failed" and row.error:
        task["error"] = json.loads(row.error)
    return task
