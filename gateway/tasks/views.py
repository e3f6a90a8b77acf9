"""The board read for others: the task list, a task as the planner, a worker or the policy sees it."""

from __future__ import annotations

import builtins

from gateway.repo import GitError
from gateway.store.repositories import tasks as task_rows
from gateway.tasks.drift import diff_shape
from gateway.tasks.records import TaskRecords, expired
from gateway.types import JSONObject, Principal

__all__ = ["TaskViews"]


class TaskViews(TaskRecords):
    def list(self) -> list[JSONObject]:
        tasks = self.all()
        states = {t["id"]: t["state"] for t in tasks}
        return [
            {
                "task_id": t["id"],
                "state": t["state"],
                "owner": t["owner"] if t["state"] == "claimed" else None,
                "ready": self._ready_to_claim(t, states),
                "attempt": t["attempt"],
                "failures": t["failures"],
                "max_attempts": t["manifest"]["max_attempts"],
                "depends_on": t["manifest"]["depends_on"],
                # what it waits for, and in what state (a dependency that failed or blocked says so here)
                "waiting_for": {
                    d: states.get(d, "missing") for d in t["manifest"]["depends_on"] if states.get(d) != "committed"
                },
                "objective": t["manifest"]["objective"],
                "note": t["note"],
            }
            for t in tasks
        ]

    def show(self, task_id: str) -> JSONObject:
        """A task as the planner reads it (``task_show``): its manifest and version, state and note, claim,
        attempts (``history``), strategy, latest verification and red phase, and the blocker report; not
        where its worktree lives (a path into the gateway's state, no agent's business)."""
        return {key: value for key, value in self.get(task_id).items() if key != "worktree"}

    def task_for(self, principal: Principal) -> JSONObject | None:
        """The task a worker is working on: the one its token names, else the one it last claimed."""
        row = task_rows.task(self.db, principal.task) if principal.task else task_rows.held_by(self.db, principal.agent)
        return row.as_dict() if row is not None else None

    def unfinished_work_of(self, agent: str) -> JSONObject | None:
        """The task ``agent`` last worked that is neither committed nor abandoned (reported, verified, its claim
        lapsed): what the agent produces for it belongs to that work, not to everyone, until it merges."""
        row = task_rows.unfinished_of(self.db, agent)
        return row.as_dict() if row is not None else None

    def policy_section(self, task: JSONObject) -> JSONObject:
        """The task as the policy input document shows it (input.task)."""
        manifest = task["manifest"]
        claim = None
        if task["state"] == "claimed":
            claim = {"owner": task["owner"], "expires_at": task["claim_expires"], "attempt": task["attempt"]}
        verification = task.get("verification") or None
        last = next((h for h in reversed(task["history"]) if h.get("verification")), None)
        return {
            "id": task["id"],
            "state": task["state"],
            "allowed_paths": manifest["allowed_paths"],
            "acceptance": manifest["acceptance"],
            "constraints": manifest["constraints"],
            "verification": manifest["verification"],
            "budget": manifest.get("budget"),  # tighter limits for this task than gateway.yaml's (gateway/budgets.py)
            "claim": claim,
            # the coordination facts separation of duty is written against
            "submitted_by": task["submitted_by"],
            "workers": task["workers"],
            "attempt": task["attempt"],
            "strategy": {"name": task["strategy"], "attempts": task["strategy_attempts"], "shifts": task["shifts"]},
            "last_verification": {
                "passed": verification["passed"],
                "commit": verification["commit"],
                "by": (last or {}).get("verification", {}).get("by"),
            }
            if verification
            else None,
        }

    def merge_shape(self, task_id: str) -> JSONObject | None:
        """What merging the task's verified commit (else its branch) into its base branch would add, change
        and delete (gateway/tasks/drift.py diff_shape): the commit policy's ``input.intent.diff``. None when
        it cannot be measured (no such task or branch: then there is nothing to merge either)."""
        task = self.find(task_id)
        if task is None:
            return None
        head = (task.get("verification") or {}).get("commit") or task["branch"]
        try:
            return diff_shape(self.repo, f"refs/heads/{task['base_branch']}", head)
        except GitError:
            return None

    def dependents(self, task_id: str) -> builtins.list[str]:
        """The tasks whose manifest names ``task_id`` in depends_on: they wait for it."""
        return [task["id"] for task in self.all() if task_id in task["manifest"]["depends_on"]]

    def _ready_to_claim(self, task: JSONObject, states: dict[str, str]) -> bool:
        claimable = task["state"] == "open" or (task["state"] == "claimed" and expired(task))
        return claimable and all(states.get(d) == "committed" for d in task["manifest"]["depends_on"])
