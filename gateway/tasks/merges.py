"""What the merge ceremony (gateway/commit/) records on a task, in its own transaction: merged, failed (a new
attempt, or blocked; its dependents told), or deferred."""

from __future__ import annotations

from typing import Any

from gateway.store import Transaction
from gateway.store.repositories import tasks as task_rows
from gateway.tasks.attempts import Attempts
from gateway.tasks.records import dependents_in
from gateway.types import JSONObject

__all__ = ["MergeOutcomes"]


class MergeOutcomes(Attempts):
    def mark_committed(self, tx: Transaction, task_id: str, merge_commit: str) -> None:
        task_rows.update(tx, task_id, state="committed", note=f"merged as {merge_commit}")
        self._event(tx, task_id, "committed", merge_commit=merge_commit)

    def merge_failed(self, tx: Transaction, task_id: str, why: str, outcome: JSONObject) -> None:
        """A merge that was not published: the task goes back for a new attempt (or blocks when it has none
        left), and every task that depends on it hears why."""
        task = self._locked(tx, task_id)
        if task["state"] != "verified":
            return
        conflicts = outcome.get("conflicts") or []
        self._event(tx, task_id, "merge_failed", outcome="error", why=why, conflicts=conflicts, published=False)
        state = self._after_failure(tx, task, why)
        task_rows.update(tx, task_id, note=why)
        for dependent in dependents_in(tx, task_id):
            self._event(
                tx, dependent["id"], "dependency_failed", outcome="error", dependency=task_id, state=state, why=why
            )

    def merge_deferred(self, tx: Transaction, task_id: str, why: str, **facts: Any) -> None:
        """A merge not published for a reason that is not the work's (the user's checkout in the way, a live
        git holding the branch): the task stays verified, its intent approved; people are told."""
        self._event(tx, task_id, "merge_deferred", outcome="error", why=why, **facts)
