"""Each task's worktree as its row publishes it: made complete (or finished after a crash), repaired, recovered.

The git side is gateway/tasks/worktrees.py; this is the record of it. A worktree is published on the task's row
only once complete, under the worktree's lock, so a claim, a replica repairing it and a start-up recovery never
make it at once, and a half-made one is discarded, never repaired into use.
"""

from __future__ import annotations

import builtins
from pathlib import Path

from gateway.effects.paths import Workspace
from gateway.errors import GatewayError
from gateway.store.repositories import tasks as task_rows
from gateway.tasks.attempts import annotated
from gateway.tasks.records import TaskRecords, TaskRefused
from gateway.tasks.worktrees import (
    ATTEMPTS_REF,
    clear_abandoned_locks,
    commit_all,
    discard_worktree,
    make_worktree,
    save_attempt,
    worktree_lock,
)
from gateway.types import JSONObject

__all__ = ["LIVE", "WorktreeRecords", "prepared", "ready", "usable"]

LIVE = ("claimed", "reported", "verified")  # a task in these states has (or is owed) a complete worktree


class WorktreeRecords(TaskRecords):
    def workspace(self, task: JSONObject) -> Workspace | None:
        """The task's worktree; a claimed task whose worktree is not complete (a crash cut its claim or a repair
        short, a person removed it) gets it here, so a worker's calls never fall back to the main checkout."""
        if task["state"] == "claimed" and not ready(task):
            self.repair(task)
            task = self.get(task["id"])
        if usable(task["worktree"]):
            return Workspace(Path(task["worktree"]), self.config.protected_paths())
        return None

    def repair(self, task: JSONObject) -> bool:
        """Give a claimed, reported or verified task the complete worktree it lacks, and record it
        (``worktree_repaired``). False when there was nothing to do (any longer)."""
        return self._make_worktree(task["id"], repairing=True)

    def _make_worktree(self, task_id: str, repairing: bool) -> bool:
        """The task's worktree, made complete and then published on its row, under the worktree's lock (so a
        claim, a replica repairing it and a start-up recovery never make it at once). A claim whose attempt
        was never made ready (the claim's own call, or a crash after its transaction) is finished: the last
        attempt's work is saved under its ref first, then a clean worktree is made from the attempt's base,
        the branch reset there. Any other live task without a complete worktree (removed by a person, or
        cut short by a crash while made again) gets it again from its branch, with the work committed there.
        What was half-made is discarded, never repaired into use."""
        with worktree_lock(self._locks, task_id):
            task = self.get(task_id)  # the claim (or another process) may have made it while we waited
            if task["state"] not in LIVE or ready(task):
                return False
            keep = {} if prepared(task) else (task["history"][-1].get("keep") or {})
            path = self.config.worktrees / task_id
            kept = None
            if prepared(task):
                if task["worktree"] is not None:  # no longer complete: a crash while it is made leaves it unpublished
                    with self.db.transaction() as tx:
                        task_rows.update(tx, task_id, worktree=None)
                tip = self.repo.run("rev-parse", "-q", "--verify", f"refs/heads/{task['branch']}", check=False)
                start, reset = (task["branch"], False) if tip.strip() else (task["base_commit"], True)
            else:
                if keep:
                    left_in = path if keep.get("worktree") else None
                    kept = save_attempt(self.repo, keep["ref"], task["branch"], left_in, self.verification.sandbox)
                start, reset = task["base_commit"], True
            made = make_worktree(self.repo, path, start, self._locks, branch=task["branch"], reset_branch=reset)
            with self.db.transaction() as tx:
                current = self._locked(tx, task_id)
                if current["state"] not in LIVE or current["attempt"] != task["attempt"] or ready(current):
                    return False  # the task moved on meanwhile (its claim expired and another began)
                history = annotated(current["history"], prepared=True) if not prepared(current) else None
                task_rows.update(tx, task_id, worktree=str(path), **({"history": history} if history else {}))
                if kept:
                    self._event(tx, task_id, "attempt_saved", attempt=task["attempt"] - 1, ref=keep["ref"], commit=kept)
                if repairing:
                    why = "its claim was cut short" if history else "it was missing or incomplete"
                    facts = {"worktree": str(path), "attempt": task["attempt"], "commit": made, "why": why}
                    self._event(tx, task_id, "worktree_repaired", **facts)
        return True

    def recover_worktrees(self) -> builtins.list[str]:
        """On start: each task's worktree as its row says. A live task (claimed, reported, verified) without a
        complete worktree gets it (a claim cut short is finished); a worktree no row publishes (half-made by
        a crash) is discarded; git's lock files a dead process left in a published one are removed. A worker's
        files are never touched. What was done is recorded."""
        cleaned: builtins.list[str] = []
        for task in self.all():
            try:
                cleaned += self._recover_worktree(task)
            except (GatewayError, OSError) as exc:  # one task's trouble never stops a start; its next call retries
                cleaned.append(f"could not recover the worktree of {task['id']}: {str(exc)[:300]}")
        if cleaned:
            self.ledger.append({"kind": "recovery", "outcome": "ok", "detail": {"what": "tasks", "cleaned": cleaned}})
        return cleaned

    def _recover_worktree(self, task: JSONObject) -> builtins.list[str]:
        path = self.config.worktrees / task["id"]
        if task["state"] in LIVE and not ready(task):
            made = self.repair(task)
            return [f"made the worktree of {task['id']} (attempt {task['attempt']}) complete again"] if made else []
        if not (path.exists() or task["worktree"]):
            return []
        with worktree_lock(self._locks, task["id"]):
            task = self.get(task["id"])
            if task["worktree"] is None:
                if task["state"] in LIVE or not discard_worktree(self.repo, path, self._locks):
                    return []
                return [f"discarded the worktree of {task['id']} a crash left half-made"]
            if task["state"] in ("committed", "abandoned"):
                return []  # no git of the gateway's runs there any more
            refs = [f"refs/heads/{task['branch']}", f"{ATTEMPTS_REF}{task['id']}/{task['attempt'] - 1}"]
            removed = clear_abandoned_locks(self.repo, path, refs)
            return [f"removed {name}, left by a process now gone, in {task['id']}" for name in removed]

    def commit_work(self, task: JSONObject, message: str) -> str:
        """Commit the worktree's files to the task branch, under the worktree's lock. git's lock files that a
        process now gone left there (a gateway killed during an earlier report, here or on another replica)
        are removed first, and recorded."""
        if not ready(task):
            self.repair(task)
        with worktree_lock(self._locks, task["id"]):
            task = self.get(task["id"])  # as it is now: no other process makes it again while the lock is held
            if not ready(task):
                raise TaskRefused(f"task {task['id']!r} has no complete worktree to commit; claim it again")
            path = Path(task["worktree"])
            removed = clear_abandoned_locks(self.repo, path, [f"refs/heads/{task['branch']}"])
            if removed:
                self.note(task["id"], "locks_removed", removed=removed)
            return commit_all(path, message, self.verification.sandbox)


def usable(worktree: str | None) -> bool:
    """A worktree the row publishes (made complete) that is still there."""
    return worktree is not None and bool(worktree) and (Path(worktree) / ".git").exists()


def prepared(task: JSONObject) -> bool:
    """Whether the task's current attempt had its worktree made (a claim records False until it has; rows from
    before the flag were made by their claim)."""
    return bool((task["history"] or [{}])[-1].get("prepared", True))


def ready(task: JSONObject) -> bool:
    return prepared(task) and usable(task["worktree"])
