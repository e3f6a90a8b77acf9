"""The task board: manifests, claims with a TTL, reports checked against the real diff, verification runs.

States: open -> claimed -> reported -> verified -> committed, with three exits: quarantined (the diff
left allowed_paths; never merged), blocked (max_attempts failed attempts; a blocker report instead of
another retry), and back to open after a failed attempt. Every transition is one transaction that also
appends its ledger event, so the state and its record never disagree.

    board = TaskBoard(db, ledger, scope, config, verification)   # scope: ask_scope on the judge's scope stack
    await board.submit(manifest, by="planner", trace_id=trace)
    claim = await board.claim("T1", principal)          # one owner at a time; a worktree on task/T1
    outcome = await board.report(record, principal)     # commits, diffs, quarantines on a scope violation
    result = await board.verify("T1", verifier, progress)
"""

from __future__ import annotations

import builtins
import functools
import json
import secrets
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import structlog

from gateway.config import GatewayConfig
from gateway.digests import digest
from gateway.effects.paths import Workspace
from gateway.effects.shell import describe_command
from gateway.errors import Denied, GatewayError, InvalidRequest
from gateway.judge.scope import ScopeQuestion, ScopeUnchecked
from gateway.ledger.chain import Ledger, utc_now
from gateway.ledger.leases import Leases, LeaseTimeout
from gateway.origin import ProgressFn
from gateway.repo import GitError, Repo
from gateway.store import Row, Store, Transaction, one_row
from gateway.tasks.drift import diff_shape, drift, frozen_problems, frozen_violations, matches
from gateway.tasks.models import Claim, ExecutionRecord, StrategyShift, TaskManifest, VerificationResult
from gateway.tasks.states import TASK_MOVES, check_move
from gateway.tasks.verification import Verification
from gateway.tasks.worktrees import (
    ATTEMPTS_REF,
    changed_files,
    clear_abandoned_locks,
    commit_all,
    discard_worktree,
    head,
    is_clean,
    make_worktree,
    save_attempt,
    worktree_lock,
)
from gateway.types import JSONObject, Outcome, Principal

log = structlog.get_logger("gateway.tasks")

# Paths a glob would have to cover to "match everything": if it covers all of these, it is refused.
EVERYTHING_PROBES = ["a", "zz/yy/xx.txt", ".hidden/f", "src/deep/er/main.py", "README", "x.y.z"]
REPORT_WAIT_S = 600.0  # how long a duplicate report waits for the one being taken


def report_lease(task_id: str) -> str:
    """The lease a task's report is taken under (gateway/ledger/leases.py): one at a time, in every process."""
    return f"report {task_id}"


class TaskRefused(Denied):
    code = "task_refused"


def _now() -> datetime:
    return datetime.now(UTC)


ScopeCheck = Callable[[ScopeQuestion], Awaitable[list[str]]]
"""Which files lie outside some globs, asked of the judge (gateway/judge/scope.py): recorded, ScopeUnchecked
when the policy cannot say."""


class TaskBoard:
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

    def show(self, task_id: str) -> JSONObject:
        """A task as the planner reads it (``task_show``): its manifest and version, state and note, claim,
        attempts (``history``), strategy, latest verification and red phase, and the blocker report; not
        where its worktree lives (a path into the gateway's state, no agent's business)."""
        return {key: value for key, value in self.get(task_id).items() if key != "worktree"}

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

    def unfinished_work_of(self, agent: str) -> JSONObject | None:
        """The task ``agent`` last worked that is neither committed nor abandoned (reported, verified, its claim
        lapsed): what the agent produces for it belongs to that work, not to everyone, until it merges."""
        rows = self.db.query(
            "SELECT * FROM tasks WHERE owner = ? AND state NOT IN ('committed', 'abandoned')"
            " ORDER BY updated DESC LIMIT 1",
            (agent,),
        )
        return _task(rows[0]) if rows else None

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

    def all(self) -> builtins.list[JSONObject]:
        return [_task(row) for row in self.db.query("SELECT * FROM tasks ORDER BY created, id")]

    def note(self, task_id: str, action: str, outcome: Outcome = "ok", **detail: Any) -> None:
        """A step in the task's trace that changes nothing (the merge ceremony's triage of it, a person's
        escalation the board refused)."""
        with self.db.transaction() as tx:
            self._event(tx, task_id, action, outcome, **detail)

    def workspace(self, task: JSONObject) -> Workspace | None:
        """The task's worktree; a claimed task whose worktree is not complete (a crash cut its claim or a repair
        short, a person removed it) gets it here, so a worker's calls never fall back to the main checkout."""
        if task["state"] == "claimed" and not _ready(task):
            self.repair(task)
            task = self.get(task["id"])
        if _usable(task["worktree"]):
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
            if task["state"] not in LIVE or _ready(task):
                return False
            keep = {} if _prepared(task) else (task["history"][-1].get("keep") or {})
            path = self.config.worktrees / task_id
            kept = None
            if _prepared(task):
                if task["worktree"] is not None:  # no longer complete: a crash while it is made leaves it unpublished
                    with self.db.transaction() as tx:
                        self._set(tx, task_id, worktree=None)
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
                if current["state"] not in LIVE or current["attempt"] != task["attempt"] or _ready(current):
                    return False  # the task moved on meanwhile (its claim expired and another began)
                history = _annotated(current["history"], prepared=True) if not _prepared(current) else None
                self._set(tx, task_id, worktree=str(path), **({"history": json.dumps(history)} if history else {}))
                if kept:
                    self._event(tx, task_id, "attempt_saved", attempt=task["attempt"] - 1, ref=keep["ref"], commit=kept)
                if repairing:
                    why = "its claim was cut short" if history else "it was missing or incomplete"
                    facts = {"worktree": str(path), "attempt": task["attempt"], "commit": made, "why": why}
                    self._event(tx, task_id, "worktree_repaired", **facts)
        return True

    @property
    def _locks(self) -> Path:
        return self.config.state / "locks"

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
        if task["state"] in LIVE and not _ready(task):
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
        await self._check_manifest(manifest, base_commit, by, trace_id)
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
            self._check_dependencies(tx, manifest)
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
            if not tx.execute("SELECT 1 FROM tasks WHERE id = ?", (dependency,)).fetchone():
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
            tx.execute(
                "INSERT INTO task_manifests (task_id, version, manifest, by, time, why) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                (task["id"], version, json.dumps(task["manifest"]), task["submitted_by"], task["created"], None),
            )
            tx.execute(
                "INSERT INTO task_manifests (task_id, version, manifest, by, time, why) VALUES (?, ?, ?, ?, ?, ?)",
                (task["id"], version + 1, manifest.model_dump_json(), by, utc_now(), why),
            )
            changed = sorted(k for k, v in manifest.model_dump().items() if task["manifest"].get(k) != v)
            self._set(tx, task["id"], manifest=manifest.model_dump_json(), manifest_version=version + 1, red=None)
            self._fresh(tx, task["id"], by, "amend", why=why, version=version + 1, changed=changed)
        return {"task_id": task["id"], "state": "open", "manifest_version": version + 1, "changed": changed}

    def abandon(self, task_id: str, by: str, why: str = "") -> JSONObject:
        """Give a task up for good; every task that depends on it (directly or not) is blocked, saying why."""
        why = why or "abandoned by a person"
        with self.db.transaction() as tx:
            task = self._locked(tx, task_id)
            if task["state"] in ("committed", "abandoned"):
                raise TaskRefused(f"task {task_id!r} is {task['state']}; it cannot be abandoned")
            self._set(tx, task_id, state="abandoned", claim_expires=None, note=f"ABANDONED: {why}"[:500])
            self._event(tx, task_id, "abandon", outcome="error", by=by, why=why)
            blocked = self._block_dependents(tx, task_id, f"its dependency {task_id} was abandoned: {why}")
        return {"task_id": task_id, "state": "abandoned", "dependents_blocked": blocked}

    def dependents(self, task_id: str) -> builtins.list[str]:
        """The tasks whose manifest names ``task_id`` in depends_on: they wait for it."""
        return [task["id"] for task in self.all() if task_id in task["manifest"]["depends_on"]]

    def _block_dependents(self, tx: Transaction, task_id: str, why: str) -> builtins.list[str]:
        blocked: list[str] = []
        queue = [task_id]
        while queue:
            current = queue.pop()
            for dependent in _dependents(tx, current):
                if dependent["state"] in ("committed", "abandoned") or dependent["id"] in blocked:
                    continue
                if dependent["state"] not in ("blocked", "quarantined"):
                    self._set(tx, dependent["id"], state="blocked", claim_expires=None)
                self._event(tx, dependent["id"], "dependency_failed", outcome="error", dependency=task_id, why=why)
                self._write_blocker(tx, dependent, why)
                blocked.append(dependent["id"])
                queue.append(dependent["id"])
        return blocked

    def _not_held(self, task: JSONObject, what: str) -> None:
        if task["state"] == "claimed" and not _expired(task):
            raise TaskRefused(
                f"task {task['id']!r} is held by {task['owner']} until {task['claim_expires']}; it cannot be "
                f"{what} under a live claim (the worker releases it, or the claim runs out)"
            )

    def _fresh(self, tx: Transaction, task_id: str, by: str, action: str, **detail: Any) -> None:
        self._set(
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

    # --- worker -----------------------------------------------------------------------------------

    async def claim(self, task_id: str, principal: Principal, shift: StrategyShift | None = None) -> JSONObject:
        """A new attempt, clean from the base branch's tip. ``shift`` declares a new approach (with its reason);
        once an approach has used its attempts, the next claim must declare one (or the worker reports the
        task blocked)."""
        bound_to(principal, task_id)
        expires = _now() + timedelta(seconds=self.config.tasks.claim_ttl_s)
        with self.db.transaction() as tx:
            task = self._locked(tx, task_id)
            manifest = task["manifest"]
            states = {r["id"]: r["state"] for r in tx.execute("SELECT id, state FROM tasks")}
            if task["state"] == "claimed" and not _expired(task):
                if task["owner"] == principal.agent:
                    raise TaskRefused(f"you already hold task {task_id!r}; use task_renew to extend the claim")
                raise TaskRefused(f"task {task_id!r} is claimed by {task['owner']} until {task['claim_expires']}")
            if task["state"] == "claimed":  # the last claim ran out without a report, and no sweep saw it yet
                self._expire(tx, task)
                task = self._locked(tx, task_id)
            if task["state"] != "open":
                raise TaskRefused(self._not_claimable(task))
            if manifest["deadline"] and datetime.fromisoformat(manifest["deadline"]) <= _now():
                raise TaskRefused(f"task {task_id!r} was due by {manifest['deadline']}; the planner amends it")
            waiting = [d for d in manifest["depends_on"] if states.get(d) != "committed"]
            if waiting:
                raise TaskRefused(f"task {task_id!r} waits for {', '.join(waiting)} to be committed first")
            strategy, shifts, used = task["strategy"], task["shifts"], task["strategy_attempts"]
            if shift is not None:
                if shifts >= manifest["max_strategy_shifts"]:
                    raise TaskRefused(
                        f"task {task_id!r} has used its {manifest['max_strategy_shifts']} strategy shifts; "
                        "report it blocked (task_report with status 'blocked') for a person to act on"
                    )
                strategy, shifts, used = shift.approach, shifts + 1, 0
            elif used >= manifest["max_attempts_per_strategy"]:
                raise TaskRefused(
                    f"strategy {strategy!r} of task {task_id!r} has used its {used} attempts: claim it with "
                    "strategy_shift {approach, reason} to try another approach, or report it blocked"
                )
            attempt = task["attempt"] + 1
            # every attempt starts from the base branch as it is now: with its dependencies' merged work,
            # and with what other tasks merged since the last attempt (a conflict is redone on top of it)
            base = self.repo.run("rev-parse", "--verify", f"refs/heads/{task['base_branch']}").strip()
            started = {"attempt": attempt, "strategy": strategy, "owner": principal.agent, "base": base}
            # the attempt is one recoverable step, recorded before anything moves: its base, where the last
            # attempt's work is kept (and whether its worktree holds it); whichever process makes the worktree
            # (this call, a replica's repair, a start) finishes it (_make_worktree)
            keep = {"ref": f"{ATTEMPTS_REF}{task_id}/{attempt - 1}", "worktree": bool(task["worktree"])}
            step = {"prepared": False, **({"keep": keep} if attempt > 1 else {})}
            history = [*task["history"], {**started, "claimed": utc_now(), **step}]
            self._set(
                tx,
                task_id,
                state="claimed",
                owner=principal.agent,
                claim_expires=expires.isoformat(timespec="seconds"),
                attempt=attempt,
                base_commit=base,
                worktree=None,  # set once it is ready; until then a worker's call repairs it, never falls back
                strategy=strategy,
                shifts=shifts,
                strategy_attempts=used + 1,
                workers=json.dumps(sorted({*task["workers"], principal.agent})),
                history=json.dumps(history),
            )
            if shift is not None:
                self._event(
                    tx, task_id, "strategy_shift", approach=shift.approach, reason=shift.reason, shifts=shifts,
                    principal=principal,
                )  # fmt: skip
            self._event(
                tx, task_id, "claim", owner=principal.agent, attempt=attempt, base=base, strategy=strategy,
                principal=principal,
            )  # fmt: skip
        path = self.config.worktrees / task_id
        await anyio.to_thread.run_sync(self._make_worktree, task_id, False)
        claim = Claim(
            task_id=task_id, owner=principal.agent, expires_at=expires.isoformat(timespec="seconds"), attempt=attempt
        )
        return {"claim": claim.model_dump(), "worktree": str(path), "branch": task["branch"], "strategy": strategy}

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
        """Commit the worktree and check the real diff. Single-flight per task, across gateway processes: a
        duplicate (a client's retry while the first is being taken, or after) makes no second commit; it
        waits for the report in flight and answers what that recorded."""
        recorded = self._replayed_report(self.get(record.task_id), record, principal)
        if recorded is not None:
            return recorded
        try:
            async with self.leases.hold(report_lease(record.task_id), wait_s=REPORT_WAIT_S):
                return await self._report(record, principal)
        except LeaseTimeout:
            raise TaskRefused(
                f"another report of task {record.task_id!r} is still being taken after {REPORT_WAIT_S:g} s; "
                "report again later"
            ) from None

    async def _report(self, record: ExecutionRecord, principal: Principal) -> JSONObject:
        task = self.get(record.task_id)  # read again under the lease: a duplicate finds what the first recorded
        recorded = self._replayed_report(task, record, principal)
        if recorded is not None:
            return recorded
        if record.status == "blocked":
            return self._blocker(task, record, principal)
        with self.db.transaction() as tx:
            self._held(tx, record.task_id, principal)
        message = report_message(record, task["attempt"])
        commit = await anyio.to_thread.run_sync(self._commit_work, task, message)
        files = await anyio.to_thread.run_sync(lambda: changed_files(self.repo, task["base_commit"], task["branch"]))
        manifest = task["manifest"]
        ask = functools.partial(ScopeQuestion, files=files, by=principal, task_id=task["id"], trace_id=task["trace_id"])
        try:
            outside = await self.scope(ask("allowed_paths", manifest["allowed_paths"]))
            violations = [{"path": p, "code": "SCOPE_VIOLATION"} for p in outside]
        except ScopeUnchecked as exc:  # fail closed: no file of the diff counts as inside
            outside, violations = files, unchecked(files, exc)
        if manifest["acceptance"]:  # the check that grades the work is not the worker's to change
            try:
                untouched = set(await self.scope(ask("acceptance", manifest["acceptance"])))
                violations += [{"path": p, "code": "ACCEPTANCE_EDITED"} for p in files if p not in untouched]
            except ScopeUnchecked as exc:  # fail closed: any file of the diff may be one that grades it
                violations += unchecked(files, exc)
        previous = self._previous_attempt(task)
        frozen, figures = await anyio.to_thread.run_sync(
            lambda: (
                frozen_violations(self.repo, task["base_commit"], commit, manifest["frozen"]),
                drift(self.repo, task["base_commit"], commit, previous, outside),
            )
        )
        violations += [_frozen_violation(v) for v in frozen]
        unreported = sorted(set(files) - set(record.files_changed))
        phantom = sorted(set(record.files_changed) - set(files))
        report = {
            "record": record.model_dump(),
            "commit": commit,
            "diff": files,
            "scope_violations": violations,
            "unreported": unreported,
            "phantom": phantom,
            "drift": figures,
        }
        with self.db.transaction() as tx:
            current = self._held(tx, record.task_id, principal)
            history = _annotated(current["history"], commit=commit, diff=_diff_summary(files), drift=figures)
            current = {**current, "history": history}
            self._set(
                tx,
                record.task_id,
                report=json.dumps(report),
                report_digest=digest(record.model_dump()),
                history=json.dumps(history),
            )
            if violations:
                state = "quarantined"
                history = _closed(history, "quarantined", "violations", violations=violations)
                note = ", ".join(sorted({v["code"] for v in violations}))
                self._set(tx, record.task_id, state=state, claim_expires=None, note=note, history=json.dumps(history))
                facts = {"commit": commit, "violations": violations, "drift": figures}
                self._event(tx, record.task_id, "quarantine", outcome="denied", **facts)
            elif record.status == "failed":
                state = self._after_failure(tx, current, "the worker reported failure")
            else:
                state = "reported"
                self._set(tx, record.task_id, state=state, claim_expires=None)
                self._event(
                    tx, record.task_id, "report", commit=commit, unreported=unreported, phantom=phantom, drift=figures
                )
        return {
            "task_id": record.task_id,
            "state": state,
            "scope_violations": violations,
            "unreported_changes": unreported,
            "reported_but_unchanged": phantom,
            "commit": commit,
            "drift": figures,
        }

    def _commit_work(self, task: JSONObject, message: str) -> str:
        """Commit the worktree's files to the task branch, under the worktree's lock. git's lock files that a
        process now gone left there (a gateway killed during an earlier report, here or on another replica)
        are removed first, and recorded."""
        if not _ready(task):
            self.repair(task)
        with worktree_lock(self._locks, task["id"]):
            task = self.get(task["id"])  # as it is now: no other process makes it again while the lock is held
            if not _ready(task):
                raise TaskRefused(f"task {task['id']!r} has no complete worktree to commit; claim it again")
            path = Path(task["worktree"])
            removed = clear_abandoned_locks(self.repo, path, [f"refs/heads/{task['branch']}"])
            if removed:
                self.note(task["id"], "locks_removed", removed=removed)
            return commit_all(path, message, self.verification.sandbox)

    def _previous_attempt(self, task: JSONObject) -> str | None:
        """The commit the previous attempt reached (its saved ref), to measure churn against."""
        ref = f"{ATTEMPTS_REF}{task['id']}/{task['attempt'] - 1}"
        return self.repo.run("rev-parse", "-q", "--verify", ref, check=False).strip() or None

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
            "scope_violations": scope_violations(report),
            "unreported_changes": report["unreported"],
            "reported_but_unchanged": report["phantom"],
            "commit": report["commit"],
            "drift": report.get("drift"),
            "replayed": True,
        }

    # --- verifier ---------------------------------------------------------------------------------

    async def verify(self, task_id: str, principal: Principal, progress: ProgressFn) -> VerificationResult:
        """Red, then green: the manifest's verification must fail on the attempt's base (unless the planner
        said why no red phase applies) and pass on the task branch. A check that passes without the work
        does not establish that the work is done: the task blocks for the planner to amend it."""
        bound_to(principal, task_id)
        task = self.get(task_id)
        if task["state"] not in ("reported", "verified"):
            raise TaskRefused(f"task {task_id!r} is {task['state']}; only a reported task can be verified")
        if not _ready(task):  # deleted by hand after the report, or cut short: its work is on the task branch
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
                self._set(tx, task_id, red=json.dumps(red))
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
            history = _annotated(current["history"], verification=summary)
            current = {**current, "history": history}
            self._set(tx, task_id, verification=verification.model_dump_json(), history=json.dumps(history))
            for run in runs:
                if run.timed_out:
                    self._event(tx, task_id, "verification_timeout", outcome="error", command=run.command)
            if passed:
                self._set(tx, task_id, state="verified")
                self._event(tx, task_id, "verify", passed=True, commit=commit, by=principal.agent, red=summary["red"])
            else:
                self._event(tx, task_id, "verify", passed=False, commit=commit, by=principal.agent, outcome="error")
                self._after_failure(tx, current, "verification failed")
        return verification

    def _not_established(self, task: JSONObject, principal: Principal, commit: str, why: str) -> VerificationResult:
        """Not verified, and not the worker's failure: the check cannot grade this work. The task blocks."""
        with self.db.transaction() as tx:
            current = self._locked(tx, task["id"])
            history = _closed(current["history"], "not established", why)
            current = {**current, "history": history}
            self._set(tx, task["id"], state="blocked", history=json.dumps(history))
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

    # --- helpers ----------------------------------------------------------------------------------

    def mark_committed(self, tx: Transaction, task_id: str, merge_commit: str) -> None:
        self._set(tx, task_id, state="committed", note=f"merged as {merge_commit}")
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
        self._set(tx, task_id, note=why)
        for dependent in _dependents(tx, task_id):
            self._event(
                tx, dependent["id"], "dependency_failed", outcome="error", dependency=task_id, state=state, why=why
            )

    def merge_deferred(self, tx: Transaction, task_id: str, why: str, **facts: Any) -> None:
        """A merge not published for a reason that is not the work's (the user's checkout in the way, a live
        git holding the branch): the task stays verified, its intent approved; people are told."""
        self._event(tx, task_id, "merge_deferred", outcome="error", why=why, **facts)

    def _blocker(self, task: JSONObject, record: ExecutionRecord, principal: Principal) -> JSONObject:
        """The worker stops with a report instead of looping: its attempt ends, the task blocks, and the
        gateway writes the blocker report, with the worker's hypothesis and recommendation in it."""
        if task["owner"] != principal.agent:
            raise TaskRefused(f"only {task['owner']}, who worked on {task['id']!r} last, can report it blocked")
        recorded = digest(record.model_dump())
        account = (record.blocker.model_dump() if record.blocker else {}) | {"by": principal.agent}
        answer = {"task_id": task["id"], "state": "blocked", "scope_violations": []}
        with self.db.transaction() as tx:
            current = self._locked(tx, task["id"])
            if (
                current["state"] == "blocked"
                and ((current["blocker"] or {}).get("worker") or {}).get("record_digest") == recorded
            ):
                return {**answer, "replayed": True}  # the same report again (a retried call): nothing new
            account["record_digest"] = recorded
            if current["state"] == "claimed" and not _expired(current):
                history = _closed(current["history"], "blocked", "the worker reported it blocked")
                current = {**current, "history": history}
                self._set(tx, task["id"], state="blocked", claim_expires=None, history=json.dumps(history))
                self._event(tx, task["id"], "block", why="the worker reported it blocked", by=principal.agent)
            elif current["state"] != "blocked":
                raise TaskRefused(f"task {task['id']!r} is {current['state']}, not blocked")
            why = (current["blocker"] or {}).get("why") or "the worker reported it blocked"
            self._write_blocker(tx, current, why, worker=account)
        return answer

    def _after_failure(self, tx: Transaction, task: JSONObject, why: str, **facts: Any) -> str:
        """An attempt ended without success: back to open, or blocked (with the gateway's blocker report)
        when the task is out of attempts."""
        failures = task["failures"] + 1
        task = {**task, "failures": failures, "history": _closed(task["history"], "failed", why, **facts)}
        manifest = task["manifest"]
        exhausted = failures >= manifest["max_attempts"] or (
            task["strategy_attempts"] >= manifest["max_attempts_per_strategy"]
            and task["shifts"] >= manifest["max_strategy_shifts"]
        )
        state = "blocked" if exhausted else "open"
        columns: dict[str, Any] = {"history": json.dumps(task["history"]), "failures": failures}
        self._set(tx, task["id"], state=state, claim_expires=None, **columns)
        self._event(tx, task["id"], "block" if exhausted else "attempt_failed", why=why, failures=failures)
        if exhausted:
            self._write_blocker(tx, task, f"out of attempts: {why}")
        return state

    def _write_blocker(self, tx: Transaction, task: JSONObject, why: str, worker: JSONObject | None = None) -> None:
        """The blocker report, written by the gateway from what it recorded: every attempt with its strategy,
        verification output, diff and violations, and the time spent. ``worker``: the worker's own account."""
        report = blocker_report(task, why, worker)
        self._set(tx, task["id"], blocker=json.dumps(report), note=f"BLOCKED: {why}"[:500])
        self._event(tx, task["id"], "blocker_report", outcome="error", by="gateway", why=why, blocker=report)

    def _expire(self, tx: Transaction, task: JSONObject) -> str:
        why = f"the claim of {task['owner']} expired at {task['claim_expires']} without a report"
        self._event(tx, task["id"], "claim_expired", outcome="error", owner=task["owner"], attempt=task["attempt"])
        return self._after_failure(tx, task, why)

    def sweep(self, now: datetime | None = None) -> builtins.list[str]:
        """Record every claim that has expired, when it expires (not at the next claim): the attempt fails,
        the task goes back to open or blocks. Answers the ids of the tasks it moved."""
        moment = (now or _now()).isoformat(timespec="seconds")
        rows = self.db.query("SELECT id FROM tasks WHERE state = 'claimed' AND claim_expires <= ?", (moment,))
        moved = []
        for row in rows:
            with self.db.transaction() as tx:
                task = self._locked(tx, row["id"])
                if task["state"] == "claimed" and task["claim_expires"] <= moment:
                    state = self._expire(tx, task)
                    moved.append(task["id"])
                    log.warning("a claim expired", task=task["id"], owner=task["owner"], now=state)
        return moved

    def _not_claimable(self, task: JSONObject) -> str:
        if task["state"] == "blocked":
            return (
                f"task {task['id']!r} is blocked ({task['note'] or 'out of attempts'}): no more retries. The "
                "gateway wrote its blocker report; its last worker may add a hypothesis and a recommended "
                "intervention (task_report with status 'blocked' and blocker {suspected_cause, human_action}). "
                "A person requeues or abandons it, or the planner amends its manifest."
            )
        if task["state"] == "quarantined":
            return f"task {task['id']!r} is quarantined after a scope violation; a human must review it"
        return f"task {task['id']!r} is {task['state']}; there is nothing to claim"

    def _held(self, tx: Transaction, task_id: str, principal: Principal) -> JSONObject:
        bound_to(principal, task_id)
        task = self._locked(tx, task_id)
        if task["state"] != "claimed" or task["owner"] != principal.agent:
            raise TaskRefused(f"you do not hold task {task_id!r} (it is {task['state']}); claim it first")
        if _expired(task):
            raise TaskRefused(f"your claim on task {task_id!r} expired at {task['claim_expires']}; claim it again")
        return task

    def _locked(self, tx: Transaction, task_id: str) -> JSONObject:
        row = tx.execute("SELECT * FROM tasks WHERE id = ?", (task_id,)).fetchone()
        if row is None:
            raise TaskRefused(f"no task {task_id!r}")
        return _task(row)

    def _set(self, tx: Transaction, task_id: str, **columns: Any) -> None:
        if "state" in columns:  # every state change is one the table allows
            row = one_row(tx.execute("SELECT state FROM tasks WHERE id = ?", (task_id,)))
            check_move(TASK_MOVES, f"task {task_id!r}", row["state"], str(columns["state"]))
        assignments = ", ".join(f"{name} = ?" for name in columns)
        tx.execute(
            f"UPDATE tasks SET {assignments}, updated = ? WHERE id = ?",
            (*columns.values(), utc_now(), task_id),
        )

    def _event(self, tx: Transaction, task_id: str, action: str, outcome: str = "ok", **detail: Any) -> None:
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

    def _ready(self, task: JSONObject, states: dict[str, str]) -> bool:
        claimable = task["state"] == "open" or (task["state"] == "claimed" and _expired(task))
        return claimable and all(states.get(d) == "committed" for d in task["manifest"]["depends_on"])


def unchecked(files: list[str], error: ScopeUnchecked) -> list[JSONObject]:
    """Every file of a diff whose scope could not be checked, as a violation (one without a path when the
    diff is empty): the report is quarantined for a person rather than taken as in scope."""
    return [{"path": p, "code": "SCOPE_UNCHECKED", "detail": error.message} for p in files or [""]]


def scope_violations(report: JSONObject) -> list[JSONObject]:
    """A stored report's violations, in the one shape answered and stored: {path, code, detail?}. Reports stored
    before that listed the paths outside the allowed paths (and, for a while, the dicts beside them)."""
    stored = report.get("violations") or report.get("scope_violations") or []
    return [v if isinstance(v, dict) else {"path": str(v), "code": "SCOPE_VIOLATION"} for v in stored]


def bound_to(principal: Principal, task_id: str) -> None:
    """Refuses a credential bound to another task than the one a call acts on (TaskRefused, saying which)."""
    if principal.task and principal.task != task_id:
        raise TaskRefused(f"this credential is bound to task {principal.task!r}, not {task_id!r}")


def _closed(history: list[JSONObject], outcome: str, why: str, **facts: Any) -> list[JSONObject]:
    """The attempt history with its last attempt ended: outcome, why, when, and what was learnt."""
    if not history:
        return history
    last = {**history[-1], **facts, "outcome": outcome, "why": why, "ended": utc_now()}
    return [*history[:-1], last]


def _annotated(history: list[JSONObject], **facts: Any) -> list[JSONObject]:
    """The attempt history with facts added to its last (still running) attempt."""
    return [*history[:-1], {**history[-1], **facts}] if history else history


def blocker_report(task: JSONObject, why: str, worker: JSONObject | None = None) -> JSONObject:
    """What a person needs to unblock a task, from the gateway's own record: each attempt's strategy, how it
    ended, its verification output (tails and digests), diff and violations; and the time spent."""
    attempts = []
    total = 0.0
    for h in task["history"]:
        spent = None
        if h.get("claimed") and h.get("ended"):
            spent = (datetime.fromisoformat(h["ended"]) - datetime.fromisoformat(h["claimed"])).total_seconds()
            total += spent
        attempts.append(
            {
                "attempt": h.get("attempt"),
                "strategy": h.get("strategy"),
                "owner": h.get("owner"),
                "outcome": h.get("outcome", "running"),
                "why": h.get("why"),
                "verification": h.get("verification"),
                "diff": h.get("diff"),
                "violations": h.get("violations", []),
                "drift": h.get("drift"),
                "time_spent_s": spent,
            }
        )
    report: JSONObject = {
        "task_id": task["id"],
        "written_by": "gateway",
        "time": utc_now(),
        "why": why,
        "strategies_tried": list(dict.fromkeys(str(h.get("strategy")) for h in task["history"])),
        "attempts": attempts,
        "failures": task["failures"],
        "time_spent_s": round(total, 3),
        "unblock_with": "gateway task requeue ID (a fresh budget), gateway task amend ID FILE (a new manifest "
        "version), or gateway task abandon ID",
    }
    if worker:
        report["worker"] = worker  # the worker's hypothesis and recommended intervention
    return report


def report_message(record: ExecutionRecord, attempt: int) -> str:
    """The message of the commit a report makes on the task branch."""
    message = f"{record.task_id}: {record.status} (attempt {attempt})\n\nGateway-Task: {record.task_id}\n"
    return message + f"Gateway-Record: {record.model_dump_json()}\n"


def _diff_summary(files: list[str]) -> JSONObject:
    return {"files": len(files), "paths": files[:50]}


def _frozen_violation(text: str) -> JSONObject:
    """'FROZEN_SIGNATURE src/a.py:f: ...' as a violation entry: its code, and what it names."""
    code, _, rest = text.partition(" ")
    return {"path": rest.split(":", 1)[0] if code == "FROZEN_SIGNATURE" else rest, "code": code, "detail": text}


def acceptance_files(root: Path, patterns: list[str]) -> tuple[Path, ...]:
    """The files under ``root`` a task's acceptance globs name (tracked ones: what git knows of)."""
    if not patterns:
        return ()
    tracked = Repo(root).run("ls-files", "-z", check=False).split("\0")
    return tuple(root / p for p in tracked if p and any(matches(g, p) for g in patterns))


def _dependents(tx: Transaction, task_id: str) -> list[JSONObject]:
    """The tasks whose manifest names ``task_id`` in depends_on."""
    tasks = (_task(row) for row in tx.execute("SELECT * FROM tasks"))
    return [task for task in tasks if task_id in task["manifest"]["depends_on"]]


LIVE = ("claimed", "reported", "verified")  # a task in these states has (or is owed) a complete worktree


def _usable(worktree: str | None) -> bool:
    """A worktree the row publishes (made complete) that is still there."""
    return worktree is not None and bool(worktree) and (Path(worktree) / ".git").exists()


def _prepared(task: JSONObject) -> bool:
    """Whether the task's current attempt had its worktree made (a claim records False until it has; rows from
    before the flag were made by their claim)."""
    return bool((task["history"] or [{}])[-1].get("prepared", True))


def _ready(task: JSONObject) -> bool:
    return _prepared(task) and _usable(task["worktree"])


def _expired(task: JSONObject) -> bool:
    expires = task.get("claim_expires")
    return expires is None or datetime.fromisoformat(expires) <= _now()


def _task(row: Row) -> JSONObject:
    task = dict(row)
    # validated again on the way out: a manifest recorded before a field existed gets the field's default
    task["manifest"] = TaskManifest.model_validate(json.loads(task["manifest"])).model_dump()
    for key in ("report", "verification", "blocker", "red"):
        if task.get(key):
            task[key] = json.loads(task[key])
    for key in ("workers", "history"):
        task[key] = json.loads(task.get(key) or "[]")
    return task
