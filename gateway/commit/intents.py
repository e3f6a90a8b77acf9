"""Intents: irreversible side effects proposed, approved against a passed verification, executed once.

States: proposed -> approved -> executing -> committed | failed | compensated. The move to executing is
one transaction that only one caller can win (the write-ahead record of the side effect); a replay or a
concurrent duplicate gets the recorded outcome instead of a second run.

    intents = Intents(db, ledger)
    intent = intents.propose("T1", "merge", {}, by=principal, trace_id=t, attempt=1)  # same proposal: same id
    intents.approve(intent["id"], by=verifier, task=task)
    won = intents.begin(intent["id"], by=committer)                 # True for exactly one caller
    intents.finish(intent["id"], "committed", {"merge_commit": sha})
"""

from __future__ import annotations

import hashlib
from typing import Any, Literal

from gateway.digests import canonical_json
from gateway.errors import Denied, InvalidRequest
from gateway.ledger.chain import Ledger, utc_now
from gateway.store import Store, Transaction
from gateway.store.repositories import intents as intent_rows
from gateway.types import JSONObject, Principal

Action = Literal["merge", "tag", "push", "upstream"]
ACTIONS: tuple[str, ...] = ("merge", "tag", "push", "upstream")
SETTLED = ("committed", "failed", "compensated")


class IntentRefused(Denied):
    code = "intent_refused"


def intent_id(task_id: str, action: str, arguments: JSONObject, attempt: int) -> str:
    """sha256 of the canonical JSON of (task id, action, arguments, attempt): the same proposal for the same
    attempt has the same id; a new attempt (after a merge that failed) gets a new one."""
    return hashlib.sha256(canonical_json([task_id, action, arguments, attempt]).encode()).hexdigest()


class Intents:
    def __init__(self, db: Store, ledger: Ledger) -> None:
        self.db = db
        self.ledger = ledger

    def get(self, identifier: str) -> JSONObject:
        found = self.find(identifier)
        if found is None:
            raise IntentRefused(f"no intent {identifier!r}")
        return found

    def find(self, identifier: str) -> JSONObject | None:
        row = intent_rows.intent(self.db, identifier)
        return row.as_dict() if row is not None else None

    def for_task(self, task_id: str, action: str) -> list[JSONObject]:
        """A task's intents for one action, oldest first."""
        return [row.as_dict() for row in intent_rows.for_task(self.db, task_id, action)]

    def by_state(self, state: str) -> list[JSONObject]:
        return [row.as_dict() for row in intent_rows.by_state(self.db, state)]

    def propose(
        self, task_id: str, action: str, arguments: JSONObject, by: Principal, trace_id: str, attempt: int
    ) -> JSONObject:
        if action not in ACTIONS:
            raise InvalidRequest(f"argument 'action': {action!r} is not one of {', '.join(ACTIONS)}")
        identifier = intent_id(task_id, action, arguments, attempt)
        with self.db.transaction() as tx:
            existing = intent_rows.locked(tx, identifier)
            if existing is not None:
                return existing.as_dict()
            intent_rows.insert(tx, identifier, task_id, action, arguments, by.agent, trace_id, attempt, utc_now())
            self._event(tx, identifier, "propose", by, task_id=task_id, action=action, attempt=attempt)
            return self._locked(tx, identifier)

    def approve(self, identifier: str, by: Principal, task: JSONObject) -> JSONObject:
        verification = task.get("verification") or {}
        with self.db.transaction() as tx:
            intent = self._locked(tx, identifier)
            if intent["state"] != "proposed":
                if intent["state"] == "approved":
                    return intent
                raise IntentRefused(
                    f"intent {identifier[:12]} is {intent['state']}; only a proposed intent is approved"
                )
            if task["state"] == "quarantined":
                raise IntentRefused(f"task {task['id']!r} is quarantined after a scope violation; it is never merged")
            if not verification.get("passed"):
                raise IntentRefused(f"task {task['id']!r} has no passing verification; run verify_run first")
            if task["state"] not in ("verified", "committed"):
                raise IntentRefused(f"task {task['id']!r} is {task['state']}; its last verification is stale")
            if intent["attempt"] and intent["attempt"] != task["attempt"]:
                raise IntentRefused(
                    f"intent {identifier[:12]} was proposed for attempt {intent['attempt']} of {task['id']!r}, "
                    f"which is now on attempt {task['attempt']}: propose it again"
                )
            intent_rows.update(tx, identifier, state="approved", approved_by=by.agent)
            self._event(tx, identifier, "approve", by, verified_commit=verification.get("commit"))
            return self._locked(tx, identifier)

    def begin(self, identifier: str, by: Principal) -> bool:
        """approved -> executing, committed before the side effect runs. False: someone else has it, or it
        is settled (the caller answers the recorded outcome)."""
        with self.db.transaction() as tx:
            intent = self._locked(tx, identifier)
            if intent["state"] in ("executing", *SETTLED):
                return False
            if intent["state"] != "approved":
                raise IntentRefused(f"intent {identifier[:12]} is {intent['state']}; a verifier must approve it first")
            intent_rows.update(tx, identifier, state="executing", committed_by=by.agent)
            self._event(tx, identifier, "execute", by, action=intent["action"])
            return True

    def finish(
        self, identifier: str, state: str, outcome: JSONObject, after: Any = None, by: Principal | None = None
    ) -> JSONObject:
        """executing -> committed | failed, with ``after(tx)`` in the same transaction."""
        with self.db.transaction() as tx:
            intent = self._locked(tx, identifier)
            if intent["state"] != "executing":
                return intent
            intent_rows.update(tx, identifier, state=state, outcome=outcome)
            self._event(tx, identifier, state, by, outcome=outcome)
            if after is not None:
                after(tx)
            return self._locked(tx, identifier)

    def plan_catch_up(self, identifier: str, plan: JSONObject) -> None:
        """Record, on the executing intent, the catch-up of the user's checkout that its merge is about to
        take (gateway/commit/checkout.py), before the base branch moves: a crash inside it is finished from this."""
        with self.db.transaction() as tx:
            if self._locked(tx, identifier)["state"] == "executing":
                intent_rows.update(tx, identifier, outcome={"catch_up": plan})
                self._event(tx, identifier, "catch_up_planned", None, **plan)

    def requeue(
        self,
        identifier: str,
        why: str = "the effect had not happened when the gateway stopped",
        after: Any = None,
        **detail: Any,
    ) -> JSONObject:
        """executing -> approved: reconciliation shows the effect never happened, or it could not happen now
        for a reason that is not the work's (the base branch locked by a live git, the user's checkout in the
        way); a later commit retries. ``after(tx)`` runs in the same transaction."""
        with self.db.transaction() as tx:
            if self._locked(tx, identifier)["state"] == "executing":
                intent_rows.update(tx, identifier, state="approved", outcome={"deferred": why, **detail})
                self._event(tx, identifier, "requeue", None, why=why, **detail)
                if after is not None:
                    after(tx)
            return self._locked(tx, identifier)

    def _locked(self, tx: Transaction, identifier: str) -> JSONObject:
        """The intent as it is in this transaction, which holds the write lock (IntentRefused: no such intent)."""
        row = intent_rows.locked(tx, identifier)
        if row is None:
            raise IntentRefused(f"no intent {identifier!r}")
        return row.as_dict()

    def _event(self, tx: Transaction, identifier: str, step: str, by: Principal | None, **detail: Any) -> None:
        self.ledger.append_in(
            tx,
            {
                "kind": "intent",
                "trace_id": intent_rows.trace_of(tx, identifier),
                "principal": by.model_dump() if by else None,
                "tool": f"intent.{step}",
                "outcome": "error" if step == "failed" else "ok",
                "intent_id": identifier,
                "detail": {"step": step, **detail},
            },
        )
