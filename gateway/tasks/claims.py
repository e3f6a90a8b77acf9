"""Claims: one owner at a time, with a TTL; a claim starts an attempt, renewing extends it, releasing or
letting it expire ends it as failed."""

from __future__ import annotations

import builtins
from datetime import datetime, timedelta

import anyio
import structlog

from gateway.ledger.chain import utc_now
from gateway.store import Transaction
from gateway.store.repositories import tasks as task_rows
from gateway.tasks.attempts import Attempts
from gateway.tasks.models import Claim, StrategyShift
from gateway.tasks.records import TaskRefused, bound_to, current_time, expired
from gateway.tasks.worktree_records import WorktreeRecords
from gateway.tasks.worktrees import ATTEMPTS_REF
from gateway.types import JSONObject, Principal

__all__ = ["Claims"]

log = structlog.get_logger("gateway.tasks")


class Claims(Attempts, WorktreeRecords):
    async def claim(self, task_id: str, principal: Principal, shift: StrategyShift | None = None) -> JSONObject:
        """A new attempt, clean from the base branch's tip. ``shift`` declares a new approach (with its reason);
        once an approach has used its attempts, the next claim must declare one (or the worker reports the
        task blocked)."""
        bound_to(principal, task_id)
        expires = current_time() + timedelta(seconds=self.config.tasks.claim_ttl_s)
        with self.db.transaction() as tx:
            task = self._locked(tx, task_id)
            manifest = task["manifest"]
            states = task_rows.states(tx)
            if task["state"] == "claimed" and not expired(task):
                if task["owner"] == principal.agent:
                    raise TaskRefused(f"you already hold task {task_id!r}; use task_renew to extend the claim")
                raise TaskRefused(f"task {task_id!r} is claimed by {task['owner']} until {task['claim_expires']}")
            if task["state"] == "claimed":  # the last claim ran out without a report, and no sweep saw it yet
                self._expire(tx, task)
                task = self._locked(tx, task_id)
            if task["state"] != "open":
                raise TaskRefused(self._not_claimable(task))
            if manifest["deadline"] and datetime.fromisoformat(manifest["deadline"]) <= current_time():
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
            task_rows.update(
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
                workers=sorted({*task["workers"], principal.agent}),
                history=history,
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
        expires = current_time() + timedelta(seconds=self.config.tasks.claim_ttl_s)
        with self.db.transaction() as tx:
            task = self._held(tx, task_id, principal)
            task_rows.update(tx, task_id, claim_expires=expires.isoformat(timespec="seconds"))
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

    def _expire(self, tx: Transaction, task: JSONObject) -> str:
        why = f"the claim of {task['owner']} expired at {task['claim_expires']} without a report"
        self._event(tx, task["id"], "claim_expired", outcome="error", owner=task["owner"], attempt=task["attempt"])
        return self._after_failure(tx, task, why)

    def sweep(self, now: datetime | None = None) -> builtins.list[str]:
        """Record every claim that has expired, when it expires (not at the next claim): the attempt fails,
        the task goes back to open or blocks. Answers the ids of the tasks it moved."""
        moment = (now or current_time()).isoformat(timespec="seconds")
        moved = []
        for task_id in task_rows.expired_claims(self.db, moment):
            with self.db.transaction() as tx:
                task = self._locked(tx, task_id)
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
        if expired(task):
            raise TaskRefused(f"your claim on task {task_id!r} expired at {task['claim_expires']}; claim it again")
        return task
