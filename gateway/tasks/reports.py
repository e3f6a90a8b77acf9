"""Reports: the worker's execution record, its work committed and checked against the real diff (scope,
acceptance files, frozen interfaces, drift); quarantined on a violation; a blocked report instead of a retry."""

from __future__ import annotations

import functools

import anyio

from gateway.digests import digest
from gateway.judge.scope import ScopeQuestion, ScopeUnchecked
from gateway.ledger.leases import LeaseTimeout
from gateway.store.repositories import tasks as task_rows
from gateway.tasks.attempts import annotated, closed
from gateway.tasks.claims import Claims
from gateway.tasks.drift import drift, frozen_violations
from gateway.tasks.models import ExecutionRecord
from gateway.tasks.records import TaskRefused, expired
from gateway.tasks.worktrees import ATTEMPTS_REF, changed_files
from gateway.types import JSONObject, Principal

__all__ = ["REPORT_WAIT_S", "Reports", "report_lease", "report_message", "scope_violations", "unchecked"]

REPORT_WAIT_S = 600.0  # how long a duplicate report waits for the one being taken


def report_lease(task_id: str) -> str:
    """The lease a task's report is taken under (gateway/ledger/leases.py): one at a time, in every process."""
    return f"report {task_id}"


class Reports(Claims):
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
        commit = await anyio.to_thread.run_sync(self.commit_work, task, message)
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
            history = annotated(current["history"], commit=commit, diff=_diff_summary(files), drift=figures)
            current = {**current, "history": history}
            task_rows.update(
                tx,
                record.task_id,
                report=report,
                report_digest=digest(record.model_dump()),
                history=history,
            )
            if violations:
                state = "quarantined"
                history = closed(history, "quarantined", "violations", violations=violations)
                note = ", ".join(sorted({v["code"] for v in violations}))
                task_rows.update(tx, record.task_id, state=state, claim_expires=None, note=note, history=history)
                facts = {"commit": commit, "violations": violations, "drift": figures}
                self._event(tx, record.task_id, "quarantine", outcome="denied", **facts)
            elif record.status == "failed":
                state = self._after_failure(tx, current, "the worker reported failure")
            else:
                state = "reported"
                task_rows.update(tx, record.task_id, state=state, claim_expires=None)
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
            if current["state"] == "claimed" and not expired(current):
                history = closed(current["history"], "blocked", "the worker reported it blocked")
                current = {**current, "history": history}
                task_rows.update(tx, task["id"], state="blocked", claim_expires=None, history=history)
                self._event(tx, task["id"], "block", why="the worker reported it blocked", by=principal.agent)
            elif current["state"] != "blocked":
                raise TaskRefused(f"task {task['id']!r} is {current['state']}, not blocked")
            why = (current["blocker"] or {}).get("why") or "the worker reported it blocked"
            self._write_blocker(tx, current, why, worker=account)
        return answer


def unchecked(files: list[str], error: ScopeUnchecked) -> list[JSONObject]:
    """Every file of a diff whose scope could not be checked, as a violation (one without a path when the
    diff is empty): the report is quarantined for a person rather than taken as in scope."""
    return [{"path": p, "code": "SCOPE_UNCHECKED", "detail": error.message} for p in files or [""]]


def scope_violations(report: JSONObject) -> list[JSONObject]:
    """A stored report's violations, in the one shape answered and stored: {path, code, detail?}. Reports stored
    before that listed the paths outside the allowed paths (and, for a while, the dicts beside them)."""
    stored = report.get("violations") or report.get("scope_violations") or []
    return [v if isinstance(v, dict) else {"path": str(v), "code": "SCOPE_VIOLATION"} for v in stored]


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
