"""What every part of the task board shares: a task's row read and written, its ledger events, refusals.

Every transition is one transaction that also appends its ledger event (``_event``), so a task's state and its
record never disagree. The rows themselves are read and written by gateway/store/repositories/tasks.py.
"""

from __future__ import annotations

import builtins
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gateway.config import GatewayConfig
from gateway.errors import Denied
from gateway.judge.scope import ScopeQuestion
from gateway.ledger.chain import Ledger
from gateway.ledger.leases import Leases
from gateway.repo import Repo
from gateway.store import Store, Transaction
from gateway.store.repositories import tasks as task_rows
from gateway.tasks.verification import Verification
from gateway.types import JSONObject, Outcome, Principal

__all__ = ["ScopeCheck", "TaskRecords", "TaskRefused", "bound_to", "current_time", "dependents_in", "expired"]


class TaskRefused(Denied):
    code = "task_refused"


ScopeCheck = Callable[[ScopeQuestion], Awaitable[list[str]]]
"""Which files lie outside some globs, asked of the judge (gateway/judge/scope.py): recorded, ScopeUnchecked
when the policy cannot say."""


class TaskRecords:
    """The board's state and what all its parts use: tasks read by id, locked and recorded."""

    def __init__(
        self, db: Store, ledger: Ledger, scope: ScopeCheck, config: GatewayConfig, verification: Verification
    ) -> None:
        self.db = db
        self.ledger = ledger
        self.scope = scope
        self.config = config
        self.verification = verification
        self.repo = Repo(config.workspace)
        self.leases = Leases(db)

    def get(self, task_id: str) -> JSONObject:
        found = self.find(task_id)
        if found is None:
            raise TaskRefused(f"no task {task_id!r}")
        return found

    def find(self, task_id: str) -> JSONObject | None:
        row = task_rows.task(self.db, task_id)
        return row.as_dict() if row is not None else None

    def all(self) -> builtins.list[JSONObject]:
        return [row.as_dict() for row in task_rows.every(self.db)]

    def note(self, task_id: str, action: str, outcome: Outcome = "ok", **detail: Any) -> None:
        """A step in the task's trace that changes nothing (the merge ceremony's triage of it, a person's
        escalation the board refused)."""
        with self.db.transaction() as tx:
            self._event(tx, task_id, action, outcome, **detail)

    @property
    def _locks(self) -> Path:
        return self.config.state / "locks"

    def _locked(self, tx: Transaction, task_id: str) -> JSONObject:
        """The task as it is in this transaction, which holds the write lock (TaskRefused: no such task)."""
        row = task_rows.locked(tx, task_id)
        if row is None:
            raise TaskRefused(f"no task {task_id!r}")
        return row.as_dict()

    def _event(self, tx: Transaction, task_id: str, action: str, outcome: str = "ok", **detail: Any) -> None:
        principal = detail.pop("principal", None)
        trace = task_rows.trace_of(tx, task_id)
        self.ledger.append_in(
            tx,
            {
                "kind": "task",
                "trace_id": trace or detail.get("trace_id"),
                "principal": principal.model_dump() if principal else None,
                "tool": f"task.{action}",
                "outcome": outcome,
                "detail": {"task_id": task_id, "action": action, **detail},
            },
        )


def current_time() -> datetime:
    return datetime.now(UTC)


def expired(task: JSONObject) -> bool:
    expires = task.get("claim_expires")
    return expires is None or datetime.fromisoformat(expires) <= current_time()


def bound_to(principal: Principal, task_id: str) -> None:
    """Refuses a credential bound to another task than the one a call acts on (TaskRefused, saying which)."""
    if principal.task and principal.task != task_id:
        raise TaskRefused(f"this credential is bound to task {principal.task!r}, not {task_id!r}")


def dependents_in(tx: Transaction, task_id: str) -> builtins.list[JSONObject]:
    """The tasks whose manifest names ``task_id`` in depends_on."""
    return [row.as_dict() for row in task_rows.tasks_in(tx) if task_id in row.manifest["depends_on"]]
