"""Verifying a reported task: red on the attempt's base, then green on its branch; a check that cannot grade
the work blocks the task for the planner instead of failing the worker."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio

from gateway.origin import ProgressFn
from gateway.repo import Repo
from gateway.store.repositories import tasks as task_rows
from gateway.tasks.attempts import Attempts, annotated, closed
from gateway.tasks.drift import matches
from gateway.tasks.models import VerificationResult
from gateway.tasks.records import TaskRefused, bound_to
from gateway.tasks.views import TaskViews
from gateway.tasks.worktree_records import WorktreeRecords, ready
from gateway.tasks.worktrees import changed_files, head, is_clean
from gateway.types import JSONObject, Principal

__all__ = ["Verifying", "acceptance_files"]


class Verifying(Attempts, WorktreeRecords, TaskViews):
    async def verify(self, task_id: str, principal: Principal, progress: ProgressFn) -> VerificationResult:
        """Red, then green: the manifest's verification must fail on the attempt's base (unless the planner
        said why no red phase applies) and pass on the task branch. A check that passes without the work
        does not establish that the work is done: the task blocks for the planner to amend it."""
        bound_to(principal, task_id)
        task = self.get(task_id)
        if task["state"] not in ("reported", "verified"):
            raise TaskRefused(f"task {task_id!r} is {task['state']}; only a reported task can be verified")
        if not ready(task):  # deleted by hand after the report, or cut short: its work is on the task branch
            await anyio.to_thread.run_sync(self.repair, task)
            task = self.get(task_id)
        worktree = Path(task["worktree"])
        if not await anyio.to_thread.run_sync(lambda: is_clean(worktree)):
            raise TaskRefused(f"task {task_id!r} has changes after its report; they were not reported")
        commit = await anyio.to_thread.run_sync(lambda: head(worktree))
        manifest = task["manifest"]
        commands = manifest["verification"]
        context: dict[str, Any] = {
            "principal": principal,
            "tool": "verify_run",
            "arguments": {"task_id": task_id},
            "trace_id": task["trace_id"],
            "progress": progress,
            "task": self.policy_section(task),
        }
        if not changed_files(self.repo, task["base_commit"], commit):
            return self._not_established(task, principal, commit, "the task branch changes nothing")
        red = task["red"] if task["red"] and task["red"]["base"] == task["base_commit"] else None
        if red is None and not manifest["no_red_phase"]:
            base_runs = await self.verification.run(commands, task["base_commit"], label="red phase ", **context)
            unrun = [run.note for run in base_runs if run.exit_code is None]
            if unrun:  # not "passes on the base": it did not run there, so the red phase says nothing yet
                with self.db.transaction() as tx:
                    self._event(tx, task_id, "red_phase", outcome="error", base=task["base_commit"], not_run=unrun)
                why = (
                    f"red phase not established: the verification did not run on the base commit "
                    f"{task['base_commit'][:12]} ({'; '.join(unrun)})"
                )
                return self._not_established(task, principal, commit, why)
            red = {
                "base": task["base_commit"],
                "exit_codes": [run.exit_code for run in base_runs],
                "failed": any(run.exit_code not in (0, None) for run in base_runs),
                "output_digests": [run.output_digest for run in base_runs],
            }
            with self.db.transaction() as tx:
                task_rows.update(tx, task_id, red=red)
                self._event(tx, task_id, "red_phase", outcome="ok" if red["failed"] else "error", **red)
        if red is not None and not red["failed"]:
            why = (
                f"red phase missing: the verification already passes on the base commit {task['base_commit'][:12]} "
                "without the work, so it cannot tell whether the work is done; the planner amends the manifest "
                "(a check that fails first, or no_red_phase with the reason)"
            )
            return self._not_established(task, principal, commit, why)
        runs = await self.verification.run(commands, commit, **context)
        refused = [run.note for run in runs if run.refused]
        if refused:  # the work was not graded: not the worker's failure
            return self._not_established(task, principal, commit, f"verification not run: {'; '.join(refused)}")
        verification = VerificationResult(
            task_id=task_id,
            commit=commit,
            commands=commands,
            exit_codes=[run.exit_code for run in runs],
            passed=all(run.exit_code == 0 for run in runs),
            output_digests=[run.output_digest for run in runs],
            notes=[run.note for run in runs],
        )
        passed = verification.passed
        summary = {
            "by": principal.agent,
            "commit": commit,
            "passed": passed,
            "exit_codes": verification.exit_codes,
            "output_digests": verification.output_digests,
            "output": [run.note[-1000:] for run in runs if run.exit_code != 0],
            "red": "skipped: " + manifest["no_red_phase"] if red is None else red["exit_codes"],
        }
        with self.db.transaction() as tx:
            current = self._locked(tx, task_id)
            history = annotated(current["history"], verification=summary)
            current = {**current, "history": history}
            task_rows.update(tx, task_id, verification=verification.model_dump_json(), history=history)
            for run in runs:
                if run.timed_out:
                    self._event(tx, task_id, "verification_timeout", outcome="error", command=run.command)
            if passed:
                task_rows.update(tx, task_id, state="verified")
                self._event(tx, task_id, "verify", passed=True, commit=commit, by=principal.agent, red=summary["red"])
            else:
                self._event(tx, task_id, "verify", passed=False, commit=commit, by=principal.agent, outcome="error")
                self._after_failure(tx, current, "verification failed")
        return verification

    def _not_established(self, task: JSONObject, principal: Principal, commit: str, why: str) -> VerificationResult:
        """Not verified, and not the worker's failure: the check cannot grade this work. The task blocks."""
        with self.db.transaction() as tx:
            current = self._locked(tx, task["id"])
            history = closed(current["history"], "not established", why)
            current = {**current, "history": history}
            task_rows.update(tx, task["id"], state="blocked", history=history)
            self._event(tx, task["id"], "verify", passed=False, commit=commit, by=principal.agent, outcome="error")
            self._write_blocker(tx, current, why)
        return VerificationResult(
            task_id=task["id"],
            commit=commit,
            commands=task["manifest"]["verification"],
            exit_codes=[None for _ in task["manifest"]["verification"]],
            passed=False,
            output_digests=[],
            notes=[why],
        )


def acceptance_files(root: Path, patterns: list[str]) -> tuple[Path, ...]:
    """The files under ``root`` a task's acceptance globs name (tracked ones: what git knows of)."""
    if not patterns:
        return ()
    tracked = Repo(root).run("ls-files", "-z", check=False).split("\0")
    return tuple(root / p for p in tracked if p and any(matches(g, p) for g in patterns))
