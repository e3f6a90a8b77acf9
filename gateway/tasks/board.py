"""The task board: manifests, claims with a TTL, reports checked against the real diff, verification runs.

States: open -> claimed -> reported -> verified -> committed, with three exits: quarantined (the diff
left allowed_paths; never merged), blocked (max_attempts failed attempts; a blocker report instead of
another retry), and back to open after a failed attempt. Every transition is one transaction that also
appends its ledger event, so the state and its record never disagree.

    board = TaskBoard(db, ledger, engine, config)
    await board.submit(manifest, by=principal)
    claim = await board.claim("T1", principal)          # one owner at a time; a worktree on task/T1
    outcome = await board.report(record, principal)     # commits, diffs, quarantines on a scope violation
    result = await board.verify("T1", verifier, progress)
"""

from __future__ import annotations

import json
import secrets
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio

from gateway.config import GatewayConfig
from gateway.effects.paths import Workspace
from gateway.effects.shell import describe_command
from gateway.errors import Denied, InvalidRequest
from gateway.ledger.chain import Ledger, digest, utc_now
from gateway.ledger.store import Database
from gateway.policy.engine import PolicyEngine
from gateway.repo import Repo
from gateway.tasks.models import Claim, ExecutionRecord, TaskManifest, VerificationResult
from gateway.tasks.verification import Verification
from gateway.tasks.worktrees import (
    ATTEMPTS_REF,
    changed_files,
    commit_all,
    git_dir,
    head,
    is_clean,
    prepare_worktree,
    remove_stale_locks,
)
from gateway.types import JSONObject, Principal, ProgressFn

SCOPE_RULE = "gateway.scope.violations"
# Paths a glob would have to cover to "match everything": if it covers all of these, it is refused.
EVERYTHING_PROBES = ["a", "zz/yy/xx.txt", ".hidden/f", "src/deep/er/main.py", "README", "x.y.z"]


class TaskRefused(Denied):
    code = "task_refused"


def _now() -> datetime:
    return datetime.now(UTC)


class TaskBoard:
    def __init__(
        self, db: Database, ledger: Ledger, engine: PolicyEngine, config: GatewayConfig, verification: Verification
    ) -> None:
        self.db = db
        self.ledger = ledger
        self.engine = engine
        self.config = config
        self.verification = verification
        self.repo = Repo(config.workspace)

    # --- reading ----------------------------------------------------------------------------------

    def get(self, task_id: str) -> JSONObject:
        rows = self.db.query("SELECT * FROM tasks WHERE id = ?", (task_id,))
        if not rows:
            raise TaskRefused(f"no task {task_id!r}")
        return _task(rows[0])

    def find(self, task_id: str) -> JSONObject | None:
        rows = self.db.query("SELECT * FROM tasks WHERE id = ?", (task_id,))
        return _task(rows[0]) if rows else None

    def list(self) -> list[JSONObject]:
        tasks = [_task(r) for r in self.db.query("SELECT * FROM tasks ORDER BY created")]
        states = {t["id"]: t["state"] for t in tasks}
        return [
            {
                "task_id": t["id"],
                "state": t["state"],
                "owner": t["owner"] if t["state"] == "claimed" else None,
                "ready": self._ready(t, states),
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

    def task_for(self, principal: Principal) -> JSONObject | None:
        """The task a worker is working on: the one its token names, else the one it last claimed."""
        if principal.task:
            rows = self.db.query("SELECT * FROM tasks WHERE id = ?", (principal.task,))
        else:
            rows = self.db.query(
                "SELECT * FROM tasks WHERE owner = ? AND state = 'claimed' ORDER BY updated DESC LIMIT 1",
                (principal.agent,),
            )
        return _task(rows[0]) if rows else None

    def policy_section(self, task: JSONObject) -> JSONObject:
        """The task as the policy input document shows it (input.task)."""
        manifest = task["manifest"]
        claim = None
        if task["state"] == "claimed":
            claim = {"owner": task["owner"], "expires_at": task["claim_expires"], "attempt": task["attempt"]}
        return {
            "id": task["id"],
            "state": task["state"],
            "allowed_paths": manifest["allowed_paths"],
            "constraints": manifest["constraints"],
            "verification": manifest["verification"],
            "claim": claim,
        }

    def workspace(self, task: JSONObject) -> Workspace | None:
        """The task's worktree; a claimed task whose worktree a crash (or a person) removed gets it back here,
        so a worker's calls never fall back to the main checkout."""
        if task["state"] == "claimed" and not _usable(task["worktree"]):
            self.repair(task)
            task = self.get(task["id"])
        if _usable(task["worktree"]):
            return Workspace(Path(task["worktree"]), self.config.protected_paths())
        return None

    def repair(self, task: JSONObject) -> None:
        """A claimed task without a usable worktree (a crash between the claim and its worktree): make it, at
        the attempt's base, and record the repair."""
        path = self.config.worktrees / task["id"]
        prepare_worktree(self.repo, path, task["branch"], task["base_commit"], keep_work=True)
        with self.db.transaction() as tx:
            self._set(tx, task["id"], worktree=str(path))
            self._event(tx, task["id"], "worktree_repaired", worktree=str(path), attempt=task["attempt"])

    def repair_all(self) -> list[str]:
        """On start: stale git locks in task worktrees go (a crash's, never a live git's), and every claimed
        task gets a usable worktree back. What was done is recorded; a worker's files are never touched."""
        cleaned = []
        for tree in sorted(self.config.worktrees.glob("*/")):
            private = git_dir(tree)
            if private is not None:
                cleaned += [f"removed a stale {name} in {tree.name}" for name in remove_stale_locks(private, "*.lock")]
        for row in self.db.query("SELECT * FROM tasks WHERE state = 'claimed'"):
            task = _task(row)
            if not _usable(task["worktree"]):
                self.repair(task)
                cleaned.append(f"made the missing worktree of claimed task {task['id']} again")
        if cleaned:
            self.ledger.append({"kind": "recovery", "outcome": "ok", "detail": {"what": "tasks", "cleaned": cleaned}})
        return cleaned

    # --- planner ----------------------------------------------------------------------------------

    async def submit(self, manifest: TaskManifest, by: str, trace_id: str | None) -> JSONObject:
        """Open a task. It gets a trace of its own, carried from this manifest to its merge commit;
        ``trace_id`` (the submitter's session trace) is kept in the submit event as the link back."""
        if not self.repo.is_repo():
            raise InvalidRequest("the workspace is not a git repository; tasks need one for their worktrees")
        base_branch = self.repo.run("symbolic-ref", "--short", "-q", "HEAD", check=False).strip()
        base_commit = self.repo.run("rev-parse", "--verify", "-q", "HEAD", check=False).strip()
        if not base_branch or not base_commit:
            raise InvalidRequest("the workspace has no checked-out branch with a commit to base tasks on")
        matched = await self._violations(manifest.allowed_paths, EVERYTHING_PROBES)
        if not matched:
            raise InvalidRequest(f"manifest field 'allowed_paths': {manifest.allowed_paths} match every path")
        workspace = Workspace(self.config.workspace, self.config.protected_paths())
        for command in manifest.verification:
            opaque = describe_command(command, workspace, workspace.root).opaque
            if opaque:
                raise InvalidRequest(f"manifest field 'verification': {command!r} cannot be analysed: {opaque[0]}")
        with self.db.transaction() as tx:
            existing = tx.execute("SELECT * FROM tasks WHERE id = ?", (manifest.task_id,)).fetchone()
            if existing is not None:
                recorded = _task(existing)
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
            for dependency in manifest.depends_on:
                if not tx.execute("SELECT 1 FROM tasks WHERE id = ?", (dependency,)).fetchone():
                    raise InvalidRequest(f"manifest field 'depends_on': no task {dependency!r}")
            now = utc_now()
            task_trace = secrets.token_hex(16)
            tx.execute(
                "INSERT INTO tasks (id, manifest, state, base_branch, base_commit, branch, trace_id, submitted_by, "
                "created, updated) VALUES (?, ?, 'open', ?, ?, ?, ?, ?, ?, ?)",
                (
                    manifest.task_id,
                    manifest.model_dump_json(),
                    base_branch,
                    base_commit,
                    f"task/{manifest.task_id}",
                    task_trace,
                    by,
                    now,
                    now,
                ),
            )
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

    # --- worker -----------------------------------------------------------------------------------

    async def claim(self, task_id: str, principal: Principal) -> JSONObject:
        self._bound(principal, task_id)
        expires = _now() + timedelta(seconds=self.config.tasks.claim_ttl_s)
        with self.db.transaction() as tx:
            task = self._locked(tx, task_id)
            states = {r["id"]: r["state"] for r in tx.execute("SELECT id, state FROM tasks")}
            if task["state"] == "claimed" and not _expired(task):
                if task["owner"] == principal.agent:
                    raise TaskRefused(f"you already hold task {task_id!r}; use task_renew to extend the claim")
                raise TaskRefused(f"task {task_id!r} is claimed by {task['owner']} until {task['claim_expires']}")
            failures = task["failures"]
            if task["state"] == "claimed":  # the last claim ran out without a report: a failed attempt
                failures += 1
                self._event(tx, task_id, "claim_expired", owner=task["owner"], attempt=task["attempt"])
            if task["state"] not in ("open", "claimed"):
                raise TaskRefused(self._not_claimable(task))
            if failures >= task["manifest"]["max_attempts"]:
                self._set(tx, task_id, state="blocked", failures=failures, claim_expires=None)
                self._event(tx, task_id, "block", failures=failures)
                raise TaskRefused(self._not_claimable({**task, "state": "blocked", "failures": failures}))
            waiting = [d for d in task["manifest"]["depends_on"] if states.get(d) != "committed"]
            if waiting:
                raise TaskRefused(f"task {task_id!r} waits for {', '.join(waiting)} to be committed first")
            attempt = task["attempt"] + 1
            # every attempt starts from the base branch as it is now: with its dependencies' merged work,
            # and with what other tasks merged since the last attempt (a conflict is redone on top of it)
            base = self.repo.run("rev-parse", "--verify", f"refs/heads/{task['base_branch']}").strip()
            self._set(
                tx,
                task_id,
                state="claimed",
                owner=principal.agent,
                claim_expires=expires.isoformat(timespec="seconds"),
                attempt=attempt,
                failures=failures,
                base_commit=base,
                worktree=None,  # set once it is ready; until then a worker's call repairs it, never falls back
            )
            self._event(tx, task_id, "claim", owner=principal.agent, attempt=attempt, base=base, principal=principal)
        path = self.config.worktrees / task_id
        saved = f"{ATTEMPTS_REF}{task_id}/{attempt - 1}" if attempt > 1 else None
        await anyio.to_thread.run_sync(lambda: prepare_worktree(self.repo, path, task["branch"], base, save_as=saved))
        with self.db.transaction() as tx:
            self._set(tx, task_id, worktree=str(path))
            if saved and self.repo.run("rev-parse", "-q", "--verify", saved, check=False).strip():
                self._event(tx, task_id, "attempt_saved", attempt=attempt - 1, ref=saved)
        claim = Claim(
            task_id=task_id, owner=principal.agent, expires_at=expires.isoformat(timespec="seconds"), attempt=attempt
        )
        return {"claim": claim.model_dump(), "worktree": str(path), "branch": task["branch"]}

    def renew(self, task_id: str, principal: Principal) -> JSONObject:
        expires = _now() + timedelta(seconds=self.config.tasks.claim_ttl_s)
        with self.db.transaction() as tx:
            task = self._held(tx, task_id, principal)
            self._set(tx, task_id, claim_expires=expires.isoformat(timespec="seconds"))
            self._event(tx, task_id, "renew", owner=principal.agent)
        claim = Claim(
            task_id=task_id,
            owner=principal.agent,
            expires_at=expires.isoformat(timespec="seconds"),
            attempt=task["attempt"],
        )
        return {"claim": claim.model_dump()}

    def release(self, task_id: str, principal: Principal) -> JSONObject:
        """Give the task back; the attempt counts as failed (a released task was not done)."""
        with self.db.transaction() as tx:
            task = self._held(tx, task_id, principal)
            state = self._after_failure(tx, task, "released by its worker")
        return {"task_id": task_id, "state": state}

    async def report(self, record: ExecutionRecord, principal: Principal) -> JSONObject:
        task = self.get(record.task_id)
        recorded = self._replayed_report(task, record, principal)
        if recorded is not None:
            return recorded
        if record.status == "blocked":
            return self._blocker(task, record, principal)
        with self.db.transaction() as tx:
            self._held(tx, record.task_id, principal)
        worktree = Path(task["worktree"])
        message = f"{record.task_id}: {record.status} (attempt {task['attempt']})\n\nGateway-Task: {record.task_id}\n"
        message += f"Gateway-Record: {record.model_dump_json()}\n"
        commit = await anyio.to_thread.run_sync(lambda: commit_all(worktree, message))
        files = await anyio.to_thread.run_sync(lambda: changed_files(self.repo, task["base_commit"], task["branch"]))
        violations = await self._violations(task["manifest"]["allowed_paths"], files)
        unreported = sorted(set(files) - set(record.files_changed))
        phantom = sorted(set(record.files_changed) - set(files))
        report = {
            "record": record.model_dump(),
            "commit": commit,
            "diff": files,
            "scope_violations": violations,
            "unreported": unreported,
            "phantom": phantom,
        }
        with self.db.transaction() as tx:
            current = self._held(tx, record.task_id, principal)
            self._set(tx, record.task_id, report=json.dumps(report), report_digest=digest(record.model_dump()))
            if violations:
                state = "quarantined"
                self._set(tx, record.task_id, state=state, claim_expires=None, note="SCOPE_VIOLATION")
                self._event(tx, record.task_id, "quarantine", outcome="denied", commit=commit, violations=violations)
            elif record.status == "failed":
                state = self._after_failure(tx, current, "the worker reported failure")
            else:
                state = "reported"
                self._set(tx, record.task_id, state=state, claim_expires=None)
                self._event(tx, record.task_id, "report", commit=commit, unreported=unreported, phantom=phantom)
        return {
            "task_id": record.task_id,
            "state": state,
            "scope_violations": [{"path": p, "code": "SCOPE_VIOLATION"} for p in violations],
            "unreported_changes": unreported,
            "reported_but_unchanged": phantom,
            "commit": commit,
        }

    def _replayed_report(self, task: JSONObject, record: ExecutionRecord, principal: Principal) -> JSONObject | None:
        """The same report again from its worker (a retried call) once it was taken: what was answered then."""
        report = task.get("report")
        if task["state"] == "claimed" or not report or task["owner"] != principal.agent:
            return None
        if task["report_digest"] != digest(record.model_dump()):
            return None
        return {
            "task_id": task["id"],
            "state": task["state"],
            "scope_violations": [{"path": p, "code": "SCOPE_VIOLATION"} for p in report["scope_violations"]],
            "unreported_changes": report["unreported"],
            "reported_but_unchanged": report["phantom"],
            "commit": report["commit"],
            "replayed": True,
        }

    # --- verifier ---------------------------------------------------------------------------------

    async def verify(self, task_id: str, principal: Principal, progress: ProgressFn) -> VerificationResult:
        task = self.get(task_id)
        if task["state"] not in ("reported", "verified"):
            raise TaskRefused(f"task {task_id!r} is {task['state']}; only a reported task can be verified")
        worktree = Path(task["worktree"])
        if not await anyio.to_thread.run_sync(lambda: is_clean(worktree)):
            raise TaskRefused(f"task {task_id!r} has changes after its report; they were not reported")
        commit = await anyio.to_thread.run_sync(lambda: head(worktree))
        commands = task["manifest"]["verification"]
        runs = await self.verification.run(
            commands,
            commit,
            principal=principal,
            tool="verify_run",
            arguments={"task_id": task_id},
            trace_id=task["trace_id"],
            progress=progress,
            task=self.policy_section(task),
        )
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
        with self.db.transaction() as tx:
            current = self._locked(tx, task_id)
            self._set(tx, task_id, verification=verification.model_dump_json())
            if passed:
                self._set(tx, task_id, state="verified")
                self._event(tx, task_id, "verify", passed=True, commit=commit, by=principal.agent)
            else:
                self._event(tx, task_id, "verify", passed=False, commit=commit, by=principal.agent, outcome="error")
                self._after_failure(tx, current, "verification failed")
        return verification

    # --- helpers ----------------------------------------------------------------------------------

    def mark_committed(self, tx: sqlite3.Connection, task_id: str, merge_commit: str) -> None:
        self._set(tx, task_id, state="committed", note=f"merged as {merge_commit}")
        self._event(tx, task_id, "committed", merge_commit=merge_commit)

    def merge_failed(self, tx: sqlite3.Connection, task_id: str, why: str, outcome: JSONObject) -> None:
        """A merge that was not published: the task goes back for a new attempt (or blocks when it has none
        left), and every task that depends on it hears why."""
        task = self._locked(tx, task_id)
        if task["state"] != "verified":
            return
        conflicts = outcome.get("conflicts") or []
        self._event(tx, task_id, "merge_failed", outcome="error", why=why, conflicts=conflicts, published=False)
        state = self._after_failure(tx, task, why)
        self._set(tx, task_id, note=why)
        for row in tx.execute("SELECT id, manifest FROM tasks"):
            if task_id in json.loads(row["manifest"]).get("depends_on", []):
                self._event(
                    tx, row["id"], "dependency_failed", outcome="error", dependency=task_id, state=state, why=why
                )

    def _blocker(self, task: JSONObject, record: ExecutionRecord, principal: Principal) -> JSONObject:
        if record.blocker is None:
            raise InvalidRequest("record field 'blocker': a blocked report must carry a blocker report")
        if task["owner"] != principal.agent:
            raise TaskRefused(f"only {task['owner']}, who worked on {task['id']!r} last, can report it blocked")
        with self.db.transaction() as tx:
            current = self._locked(tx, task["id"])
            if current["state"] == "claimed" and not _expired(current):
                current = {**current, "failures": current["manifest"]["max_attempts"] - 1}
                self._after_failure(tx, current, "the worker reported it blocked")
            elif current["state"] != "blocked":
                raise TaskRefused(f"task {task['id']!r} is {current['state']}, not blocked")
            self._set(tx, task["id"], state="blocked", blocker=record.blocker.model_dump_json())
            self._event(tx, task["id"], "blocker_report", by=principal.agent, blocker=record.blocker.model_dump())
        return {"task_id": task["id"], "state": "blocked", "scope_violations": []}

    def _after_failure(self, tx: sqlite3.Connection, task: JSONObject, why: str) -> str:
        failures = task["failures"] + 1
        blocked = failures >= task["manifest"]["max_attempts"]
        state = "blocked" if blocked else "open"
        self._set(tx, task["id"], state=state, failures=failures, claim_expires=None)
        self._event(tx, task["id"], "block" if blocked else "attempt_failed", why=why, failures=failures)
        return state

    def _not_claimable(self, task: JSONObject) -> str:
        if task["state"] == "blocked":
            return (
                f"task {task['id']!r} is blocked after {task['failures']} failed attempts: no more retries. "
                "Its last worker sends task_report with status 'blocked' and a blocker report "
                "(strategies_tried, errors, suspected_cause, human_action) for a human to act on."
            )
        if task["state"] == "quarantined":
            return f"task {task['id']!r} is quarantined after a scope violation; a human must review it"
        return f"task {task['id']!r} is {task['state']}; there is nothing to claim"

    def _bound(self, principal: Principal, task_id: str) -> None:
        if principal.task and principal.task != task_id:
            raise TaskRefused(f"this credential is bound to task {principal.task!r}, not {task_id!r}")

    def _held(self, tx: sqlite3.Connection, task_id: str, principal: Principal) -> JSONObject:
        self._bound(principal, task_id)
        task = self._locked(tx, task_id)
        if task["state"] != "claimed" or task["owner"] != principal.agent:
            raise TaskRefused(f"you do not hold task {task_id!r} (it is {task['state']}); claim it first")
        if _expired(task):
            raise TaskRefused(f"your claim on task {task_id!r} expired at {task['claim_expires']}; claim it again")
        return task

    def _locked(self, tx: sqlite3.Connection, task_id: str) -> JSONObject:
        row = tx.execute("SELECT * FROM tasks WHERE id = ?", (task_id,)).fetchone()
        if row is None:
            raise TaskRefused(f"no task {task_id!r}")
        return _task(row)

    def _set(self, tx: sqlite3.Connection, task_id: str, **columns: Any) -> None:
        assignments = ", ".join(f"{name} = ?" for name in columns)
        tx.execute(
            f"UPDATE tasks SET {assignments}, updated = ? WHERE id = ?",
            (*columns.values(), utc_now(), task_id),
        )

    def _event(self, tx: sqlite3.Connection, task_id: str, action: str, outcome: str = "ok", **detail: Any) -> None:
        principal = detail.pop("principal", None)
        trace = tx.execute("SELECT trace_id FROM tasks WHERE id = ?", (task_id,)).fetchone()
        self.ledger.append_in(
            tx,
            {
                "kind": "task",
                "trace_id": trace["trace_id"] if trace else detail.get("trace_id"),
                "principal": principal.model_dump() if principal else None,
                "tool": f"task.{action}",
                "outcome": outcome,
                "detail": {"task_id": task_id, "action": action, **detail},
            },
        )

    async def _violations(self, allowed: list[str], files: list[str]) -> list[str]:
        try:
            found = await self.engine.query(SCOPE_RULE, {"allowed_paths": allowed, "files": files})
        except Exception as exc:  # fail closed: an unanswerable scope check is a violation
            return [f"(scope check failed: {str(exc)[:200]})", *files]
        if not isinstance(found, list):
            return [f"(scope check gave no answer: {SCOPE_RULE} is undefined)", *files]
        return [str(f) for f in found]

    def _ready(self, task: JSONObject, states: dict[str, str]) -> bool:
        claimable = task["state"] == "open" or (task["state"] == "claimed" and _expired(task))
        return claimable and all(states.get(d) == "committed" for d in task["manifest"]["depends_on"])


def _usable(worktree: str | None) -> bool:
    return bool(worktree) and (Path(worktree) / ".git").exists()


def _expired(task: JSONObject) -> bool:
    expires = task.get("claim_expires")
    return expires is None or datetime.fromisoformat(expires) <= _now()


def _task(row: sqlite3.Row) -> JSONObject:
    task = dict(row)
    # validated again on the way out: a manifest recorded before a field existed gets the field's default
    task["manifest"] = TaskManifest.model_validate(json.loads(task["manifest"])).model_dump()
    for key in ("report", "verification", "blocker", "red"):
        if task.get(key):
            task[key] = json.loads(task[key])
    for key in ("workers", "history"):
        task[key] = json.loads(task.get(key) or "[]")
    return task
