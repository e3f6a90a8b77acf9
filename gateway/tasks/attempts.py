"""How an attempt ends without success: back to open, or blocked with the gateway's blocker report.

A task's attempts are its ``history``: one entry per claim (strategy, owner, base, and once it ends: outcome,
why, when, and what was learnt: commit, diff, drift, verification, violations).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from gateway.ledger.chain import utc_now
from gateway.store import Transaction
from gateway.store.repositories import tasks as task_rows
from gateway.tasks.records import TaskRecords
from gateway.types import JSONObject

__all__ = ["Attempts", "annotated", "blocker_report", "closed"]


class Attempts(TaskRecords):
    def _after_failure(self, tx: Transaction, task: JSONObject, why: str, **facts: Any) -> str:
        """An attempt ended without success: back to open, or blocked (with the gateway's blocker report)
        when the task is out of attempts."""
        failures = task["failures"] + 1
        task = {**task, "failures": failures, "history": closed(task["history"], "failed", why, **facts)}
        manifest = task["manifest"]
        exhausted = failures >= manifest["max_attempts"] or (
            task["strategy_attempts"] >= manifest["max_attempts_per_strategy"]
            and task["shifts"] >= manifest["max_strategy_shifts"]
        )
        state = "blocked" if exhausted else "open"
        columns: dict[str, Any] = {"history": task["history"], "failures": failures}
        task_rows.update(tx, task["id"], state=state, claim_expires=None, **columns)
        self._event(tx, task["id"], "block" if exhausted else "attempt_failed", why=why, failures=failures)
        if exhausted:
            self._write_blocker(tx, task, f"out of attempts: {why}")
        return state

    def _write_blocker(self, tx: Transaction, task: JSONObject, why: str, worker: JSONObject | None = None) -> None:
        """The blocker report, written by the gateway from what it recorded: every attempt with its strategy,
        verification output, diff and violations, and the time spent. ``worker``: the worker's own account."""
        report = blocker_report(task, why, worker)
        task_rows.update(tx, task["id"], blocker=report, note=f"BLOCKED: {why}"[:500])
        self._event(tx, task["id"], "blocker_report", outcome="error", by="gateway", why=why, blocker=report)


def closed(history: list[JSONObject], outcome: str, why: str, **facts: Any) -> list[JSONObject]:
    """The attempt history with its last attempt ended: outcome, why, when, and what was learnt."""
    if not history:
        return history
    last = {**history[-1], **facts, "outcome": outcome, "why": why, "ended": utc_now()}
    return [*history[:-1], last]


def annotated(history: list[JSONObject], **facts: Any) -> list[JSONObject]:
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
