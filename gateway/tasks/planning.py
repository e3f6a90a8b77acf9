"""The planner's and people's side of the board: submitting a task, amending its manifest, requeueing and
abandoning it (its dependents blocked, saying why)."""

from __future__ import annotations

import builtins
import json
import secrets
from typing import Any

import anyio

from gateway.effects.paths import Workspace
from gateway.effects.shell import describe_command
from gateway.errors import InvalidRequest
from gateway.judge.scope import ScopeQuestion
from gateway.ledger.chain import utc_now
from gateway.store import Transaction
from gateway.store.repositories import tasks as task_rows
from gateway.tasks.attempts import Attempts
from gateway.tasks.drift import frozen_problems
from gateway.tasks.models import TaskManifest
from gateway.tasks.records import TaskRefused, dependents_in, expired
from gateway.types import JSONObject

__all__ = ["EVERYTHING_PROBES", "Planning"]

# Paths a glob would have to cover to "match everything": if it covers all of these, it is refused.
EVERYTHING_PROBES = ["a", "zz/yy/xx.txt", ".hidden/f", "src/deep/er/main.py", "README", "x.y.z"]


class Planning(Attempts):
    async def submit(self, manifest: TaskManifest, by: str, trace_id: str | None) -> JSONObject:
        """Open a task. It gets a trace of its own, carried from this manifest to its merge commit;
        ``trace_id`` (the submitter's session trace) is kept in the submit event as the link back."""
        if not self.repo.is_repo():
            raise InvalidRequest("the workspace is not a git repository; tasks need one for their worktrees")
        base_branch = self.repo.run("symbolic-ref", "--short", "-q", "HEAD", check=False).strip()
        base_commit = self.repo.run("rev-parse", "--verify", "-q", "HEAD", check=False).strip()
        if not base_branch or not base_commit:
            raise InvalidRequest("the workspace has no checked-out branch with a commit to base tasks on")
        await self._check_manifest(manifest, base_commit, by, trace_id)
        with self.db.transaction() as tx:
            existing = task_rows.locked(tx, manifest.task_id)
            if existing is not None:
                recorded = existing.as_dict()
                if recorded["manifest"] != manifest.model_dump():
                    raise InvalidRequest(
                        f"manifest field 'task_id': task {manifest.task_id!r} already exists with another manifest"
                    )
                # the same manifest again (a retried call): the recorded result, nothing new
                return {
                    "task_id": manifest.task_id,
                    "state": recorded["state"],
                    "base_branch": recorded["base_branch"],
                    "trace_id": recorded["trace_id"],
                    "replayed": True,
                }
            self._check_dependencies(tx, manifest)
            task_trace = secrets.token_hex(16)
            task_rows.insert(tx, manifest, base_branch, base_commit, task_trace, by, utc_now())
            self._event(
                tx,
                manifest.task_id,
                "submit",
                by=by,
                submitted_in=trace_id,
                base=base_commit,
                manifest=manifest.model_dump(),
            )
        return {"task_id": manifest.task_id, "state": "open", "base_branch": base_branch, "trace_id": task_trace}

    async def _check_manifest(self, manifest: TaskManifest, base_commit: str, by: str, trace_id: str | None) -> None:
        """What strict parsing cannot check: a scope that matches everything, verification commands the
        analyser cannot read, frozen interfaces that do not exist. A scope the policy cannot check is refused
        (ScopeUnchecked): never taken as narrow."""
        question = ScopeQuestion("manifest", manifest.allowed_paths, EVERYTHING_PROBES, by, manifest.task_id, trace_id)
        if not await self.scope(question):
            raise InvalidRequest(f"manifest field 'allowed_paths': {manifest.allowed_paths} match every path")
        workspace = Workspace(self.config.workspace, self.config.protected_paths())
        for command in manifest.verification:
            opaque = describe_command(command, workspace, workspace.root).opaque
            if opaque:
                raise InvalidRequest(f"manifest field 'verification': {command!r} cannot be analysed: {opaque[0]}")
        problems = await anyio.to_thread.run_sync(lambda: frozen_problems(self.repo, base_commit, manifest.frozen))
        if problems:
            raise InvalidRequest(f"manifest field 'frozen': {'; '.join(problems)}")

    def _check_dependencies(self, tx: Transaction, manifest: TaskManifest) -> None:
        for dependency in manifest.depends_on:
            if dependency == manifest.task_id:
                raise InvalidRequest("manifest field 'depends_on': a task cannot depend on itself")
            if not task_rows.exists(tx, dependency):
                raise InvalidRequest(f"manifest field 'depends_on': no task {dependency!r}")

    # --- people and the planner: escalation --------------------------------------------------------

    def requeue(self, task_id: str, by: str, why: str = "") -> JSONObject:
        """A blocked, quarantined or failed task back to open with a fresh budget of attempts (its history
        and earlier attempts kept). Not while a live claim holds it."""
        with self.db.transaction() as tx:
            task = self._locked(tx, task_id)
            self._not_held(task, "requeued")
            if task["state"] in ("committed", "abandoned", "reported", "verified"):
                raise TaskRefused(f"task {task_id!r} is {task['state']}; only a blocked, quarantined or open task "
                                  "can be requeued")  # fmt: skip
            self._fresh(tx, task_id, by, "requeue", why=why or "requeued by a person", was=task["state"])
        return {"task_id": task_id, "state": "open"}

    async def amend(self, manifest: TaskManifest, by: str, why: str = "") -> JSONObject:
        """A new version of a task's manifest (earlier versions and attempts kept): the task goes back to
        open with a fresh budget. Not for a committed or abandoned task, nor under a live claim."""
        task = self.get(manifest.task_id)
        await self._check_manifest(manifest, task["base_commit"], by, task["trace_id"])
        with self.db.transaction() as tx:
            task = self._locked(tx, manifest.task_id)
            self._not_held(task, "amended")
            if task["state"] in ("committed", "abandoned"):
                raise TaskRefused(f"task {task['id']!r} is {task['state']}; it cannot be amended")
            self._check_dependencies(tx, manifest)
            version = task["manifest_version"]
            first = json.dumps(task["manifest"])  # the submitted version, kept once a second one comes
            task_rows.record_manifest(
                tx, task["id"], version, first, task["submitted_by"], task["created"], None, once=True
            )
            task_rows.record_manifest(
                tx, task["id"], version + 1, manifest.model_dump_json(), by, utc_now(), why, once=False
            )
            changed = sorted(k for k, v in manifest.model_dump().items() if task["manifest"].get(k) != v)
            task_rows.update(
                tx, task["id"], manifest=manifest.model_dump_json(), manifest_version=version + 1, red=None
            )
            self._fresh(tx, task["id"], by, "amend", why=why, version=version + 1, changed=changed)
        return {"task_id": task["id"], "state": "open", "manifest_version": version + 1, "changed": changed}

    def abandon(self, task_id: str, by: str, why: str = "") -> JSONObject:
        """Give a task up for good; every task that depends on it (directly or not) is blocked, saying why."""
        why = why or "abandoned by a person"
        with self.db.transaction() as tx:
            task = self._locked(tx, task_id)
            if task["state"] in ("committed", "abandoned"):
                raise TaskRefused(f"task {task_id!r} is {task['state']}; it cannot be abandoned")
            task_rows.update(tx, task_id, state="abandoned", claim_expires=None, note=f"ABANDONED: {why}"[:500])
            self._event(tx, task_id, "abandon", outcome="error", by=by, why=why)
            blocked = self._block_dependents(tx, task_id, f"its dependency {task_id} was abandoned: {why}")
        return {"task_id": task_id, "state": "abandoned", "dependents_blocked": blocked}

    def _block_dependents(self, tx: Transaction, task_id: str, why: str) -> builtins.list[str]:
        blocked: list[str] = []
        queue = [task_id]
        while queue:
            current = queue.pop()
            for dependent in dependents_in(tx, current):
                if dependent["state"] in ("committed", "abandoned") or dependent["id"] in blocked:
                    continue
                if dependent["state"] not in ("blocked", "quarantined"):
                    task_rows.update(tx, dependent["id"], state="blocked", claim_expires=None)
                self._event(tx, dependent["id"], "dependency_failed", outcome="error", dependency=task_id, why=why)
                self._write_blocker(tx, dependent, why)
                blocked.append(dependent["id"])
                queue.append(dependent["id"])
        return blocked

    def _not_held(self, task: JSONObject, what: str) -> None:
        if task["state"] == "claimed" and not expired(task):
            raise TaskRefused(
                f"task {task['id']!r} is held by {task['owner']} until {task['claim_expires']}; it cannot be "
                f"{what} under a live claim (the worker releases it, or the claim runs out)"
            )

    def _fresh(self, tx: Transaction, task_id: str, by: str, action: str, **detail: Any) -> None:
        task_rows.update(
            tx,
            task_id,
            state="open",
            failures=0,
            strategy_attempts=0,
            shifts=0,
            claim_expires=None,
            blocker=None,
            verification=None,
            note=f"{action} by {by}",
        )
        self._event(tx, task_id, action, by=by, **detail)
