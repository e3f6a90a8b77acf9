"""The merge ceremony: triage every task, merge the verified ones in dependency order through the merge
queue, leave out one that does not merge now and carry on (its dependents wait), and write the report down.

Triage: SUCCESS (verified, with an approved merge intent for its current attempt: queued for merge),
AWAITING_APPROVAL (verified, no approved intent yet), FAILED (blocked, or back to open after failed
attempts), CRASHED (its claim expired without a report: recorded as a failed attempt), SCOPE_VIOLATION
(quarantined: never merged), RUNNING (a live claim), PENDING (not started or not yet verified). Before
each merge the ceremony asks the policy about it exactly as about an ``intent_commit`` of that intent by the
same principal (with the task's policy section: who worked it, who proposed and approved the intent), so the
separation-of-duty rule holds here too: a merge the policy refuses (or would ask a person about) is left out
as REFUSED with the reason and rules, recorded in the task's trace; its dependents wait. Each merge is an
ordinary intent commit (exactly once, verified on the merge commit with the manifest's and the workspace's
integration checks, published only when they pass), so nothing merged is ever reverted: a task whose merge
fails is simply not published (LEFT_OUT: back for a new attempt, or blocked when out of attempts), one whose
merge is deferred (DEFERRED: the user's checkout in the way, the base branch held by a live git) keeps its
approved intent for the next ceremony, and every task that depends on either waits for it, as it does after
an ``intent_commit``: only an abandoned dependency blocks its dependents (``gateway task abandon``).

    report = await Ceremony(board, intents, committer, ledger, judge=gateway.judge_call).run(principal, progress)
"""

from __future__ import annotations

import secrets
from typing import Any

from gateway.commit.executor import Committer
from gateway.commit.intents import Intents
from gateway.ledger.chain import Ledger, utc_now
from gateway.pipeline import Call, Judge
from gateway.tasks.board import TaskBoard
from gateway.types import JSONObject, Origin, Principal, ProgressFn

DONE = ("committed", "abandoned")


class Ceremony:
    def __init__(self, board: TaskBoard, intents: Intents, committer: Committer, ledger: Ledger, judge: Judge) -> None:
        self.board = board
        self.intents = intents
        self.committer = committer
        self.ledger = ledger
        self.judge = judge

    async def run(self, principal: Principal, progress: ProgressFn) -> JSONObject:
        crashed = set(self.board.sweep())  # claims that ran out are failed attempts before anything else
        tasks = {t["id"]: t for t in self.board.all()}
        triage = {task_id: self._triage(task, task_id in crashed) for task_id, task in tasks.items()}
        merged: list[str] = []
        left_out: list[JSONObject] = []
        for task_id in _dependency_order([t for t in tasks if triage[t]["status"] == "SUCCESS"], tasks):
            task = self.board.get(task_id)
            waiting = [d for d in task["manifest"]["depends_on"] if self.board.get(d)["state"] != "committed"]
            if waiting:
                triage[task_id] = {"status": "SKIPPED", "why": f"waits for {', '.join(waiting)}"}
                continue
            refusal = await self._refusal(triage[task_id]["intent_id"], principal)
            if refusal is not None:
                triage[task_id] = {"status": "REFUSED", **refusal}
                left_out.append({"task_id": task_id, **refusal, "dependents_waiting": self.board.dependents(task_id)})
                continue
            await progress(len(merged), None, f"merging {task_id}")
            result = await self.committer.commit(triage[task_id]["intent_id"], principal, progress)
            if result["state"] == "committed":
                merged.append(task_id)
                triage[task_id]["merge_commit"] = result["outcome"]["merge_commit"]
                continue
            # not merged now: deferred (its intent stays approved) or failed (the task is back for a new attempt,
            # or blocked for a person to requeue). Its dependents wait, as after an intent_commit: only an
            # abandoned dependency blocks them.
            status = "DEFERRED" if result["state"] == "approved" else "LEFT_OUT"
            facts = {"why": _why(result), "state": self.board.get(task_id)["state"]}
            triage[task_id] = {"status": status, **facts}
            left_out.append({"task_id": task_id, **facts, "dependents_waiting": self.board.dependents(task_id)})
        report: JSONObject = {
            "ceremony_id": secrets.token_hex(8),
            "time": utc_now(),
            "by": principal.agent,
            "merged": merged,
            "left_out": left_out,
            "tasks": triage,
        }
        self.ledger.append(
            {
                "kind": "ceremony",
                "trace_id": secrets.token_hex(16),
                "principal": principal.model_dump(),
                "tool": "merge_ceremony",
                "outcome": "ok" if not left_out else "error",
                "detail": report,
            }
        )
        for task_id, outcome in triage.items():
            self.board.note(task_id, "ceremony", ceremony_id=report["ceremony_id"], **outcome)
        return report

    async def _refusal(self, intent_id: str, principal: Principal) -> JSONObject | None:
        """Why the policy does not let ``principal`` commit the intent now, judged (and recorded, in the
        task's trace) as that ``intent_commit`` call; None when it allows it."""
        call = Call(
            tool="intent_commit",
            arguments={"intent_id": intent_id},
            origin=Origin(transport="inprocess", protocol_version="ceremony"),
            kind="ceremony_check",
            principal=principal,
        )
        judged = await self.judge(call)
        decision = judged.decision
        if judged.error is None and decision is not None and decision.action == "allow":
            return None
        if judged.error is not None:
            why = judged.error.message
        else:  # tier 3: a person decides, one intent_commit at a time, not a batch
            why = "the policy asks a person about this merge: commit it with intent_commit"
        return {"why": why, "rules": list(decision.rules) if decision is not None else []}

    def _triage(self, task: JSONObject, crashed: bool) -> JSONObject:
        state = task["state"]
        if crashed:
            return {"status": "CRASHED", "why": task["note"] or "its claim expired without a report", "state": state}
        if state == "verified":
            attempt = task["attempt"]
            approved = [
                i
                for i in self.intents.for_task(task["id"], "merge")
                if i["state"] == "approved" and i["attempt"] in (0, attempt)
            ]
            if approved:
                return {"status": "SUCCESS", "intent_id": approved[-1]["id"]}
            return {"status": "AWAITING_APPROVAL", "why": "no approved merge intent for its current attempt"}
        if state == "quarantined":
            return {"status": "SCOPE_VIOLATION", "why": task["note"], "state": state}
        if state == "blocked" or (state == "open" and task["failures"]):
            return {"status": "FAILED", "why": task["note"], "state": state}
        if state == "claimed":
            return {"status": "RUNNING", "owner": task["owner"], "until": task["claim_expires"]}
        return {"status": "DONE" if state in DONE else "PENDING", "state": state}


def _dependency_order(ids: list[str], tasks: dict[str, JSONObject]) -> list[str]:
    """``ids`` with every task after the ones it depends on (depth first; the ids' own order otherwise)."""
    ordered: list[str] = []
    seen: set[str] = set()

    def visit(task_id: str) -> None:
        if task_id in seen:
            return
        seen.add(task_id)
        for dependency in tasks[task_id]["manifest"]["depends_on"]:
            if dependency in ids:
                visit(dependency)
        ordered.append(task_id)

    for task_id in sorted(ids):
        visit(task_id)
    return ordered


def _why(result: dict[str, Any]) -> str:
    outcome = result.get("outcome") or {}
    if outcome.get("conflicts"):
        return f"conflicts in {', '.join(outcome['conflicts'])}"
    if outcome.get("failed_command"):
        return f"{outcome['failed_command']} failed on the merge commit (exit {outcome.get('exit_code')})"
    return str(outcome.get("error") or outcome.get("deferred") or result["state"])
