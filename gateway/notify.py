"""Escalation notices: blocked, quarantined, abandoned, timed-out and dead-lettered work, and upstream
definitions held back for a person, pushed to people.

The task board records what happened in the ledger, in the transaction that changes the task; the notifier
follows the ledger from its own cursor (a row in the store) and POSTs each escalation as JSON to the webhooks
gateway.yaml names. Reading after the commit keeps network I/O off the call path. A notice is sent at least
once: the cursor moves past it only when every webhook took it, or after ``max_tries`` passes (then the
failure is recorded in the ledger and the notifier goes on).

    notifier = Notifier(config.notify, ledger)
    notifier.start()              # on the gateway's start
    await notifier.deliver()      # one pass; Gateway.running() runs one every notify.interval_s

Every gateway process sharing the store (``serve --workers``, replicas) runs passes; a pass holds the
``notifier`` lease (gateway/ledger/leases.py) and one that finds it held skips, so two processes never
read the same cursor and send a notice twice.

A notice carries the facts a person acts on, never the payloads (a dead letter or a blocker report may hold
what an agent sent; they stay in the store, behind `gateway task show` and `gateway deadletters show`):

    {"event": "claim_expired", "task_id": "T1", "why": "...", "agent": "w1", "seq": 41,
     "time": "...", "trace_id": "...", "text": "gateway: task T1: claim expired: ..."}
"""

from __future__ import annotations

from contextlib import AsyncExitStack
from typing import TYPE_CHECKING

import structlog

from gateway.config import NotifyConfig
from gateway.ledger.chain import Ledger, LedgerEvent
from gateway.ledger.leases import Leases
from gateway.store.repositories import cursors
from gateway.types import JSONObject

if TYPE_CHECKING:
    import httpx2

log = structlog.get_logger("gateway.notify")

# task-board steps that need a person or the planner; "blocker_report" covers every way a task blocks
ESCALATIONS = frozenset(
    {
        "blocker_report",
        "quarantine",
        "abandon",
        "merge_failed",
        "merge_deferred",
        "dependency_failed",
        "claim_expired",
        "verification_timeout",
        "dead_letter",
        "upstream_quarantined",  # an upstream definition changed, appeared or was renamed: a person approves it
        "budget_exhausted",  # a role's, agent's or task's budget ran out: its calls are refused until it resets
    }
)
CURSOR = "notify"
LEASE = "notifier"
BATCH = 200
TIMEOUT_S = 10.0


def notice(event: LedgerEvent) -> JSONObject | None:
    """The escalation an event is, as a webhook receives it, or None when it is not one."""
    detail = event.detail
    if event.kind == "deadletter" and event.outcome == "invalid":
        kind, task_id = "dead_letter", detail.get("task_id")
        why = f"malformed {detail.get('kind')} kept as {detail.get('deadletter_id')}: {detail.get('error')}"
    elif event.kind == "task" and detail.get("action") in ESCALATIONS:
        kind, task_id = str(detail["action"]), detail.get("task_id")
        why = str(detail.get("why") or detail.get("error") or detail.get("reason") or "")
    elif event.kind in ("call", "hook") and (detail.get("error") or {}).get("code") == "budget_exhausted":
        kind, task_id = "budget_exhausted", (event.principal or {}).get("task")
        why = str(detail["error"].get("message", ""))
    elif event.kind == "upstream" and detail.get("action") == "quarantined":
        kind, task_id = "upstream_quarantined", None
        why = f"{event.tool} is {detail.get('status')}: held back until a person approves it (gateway upstreams diff)"
    else:
        return None
    agent = (event.principal or {}).get("agent") or detail.get("owner") or detail.get("by")
    why = why[:500]
    subject = f"task {task_id}" if task_id is not None or "upstream" not in detail else f"upstream {detail['upstream']}"
    if task_id is None and kind == "budget_exhausted":
        subject = f"agent {agent}"
    return {
        "event": kind,
        "task_id": task_id,
        "why": why,
        "agent": agent,
        "seq": event.seq,
        "time": event.time,
        "trace_id": event.trace_id,
        "text": f"gateway: {subject}: {kind.replace('_', ' ')}" + (f": {why}" if why else ""),
    }


class Notifier:
    def __init__(self, config: NotifyConfig, ledger: Ledger, leases: Leases | None = None) -> None:
        self.config = config
        self.ledger = ledger
        self.leases = leases or Leases(ledger.db)
        self.events = ESCALATIONS if config.events is None else frozenset(config.events)

    @property
    def enabled(self) -> bool:
        return bool(self.config.webhooks)

    def start(self) -> None:
        """Place the cursor at the ledger's head on the first start with webhooks configured (what happened
        before is history, not news); later starts resume where the last one stopped."""
        if self.enabled:
            self._cursor()

    async def deliver(self) -> list[JSONObject]:
        """One pass: every escalation after the cursor, in ledger order; answers the notices delivered.
        Stops at the first notice a webhook refuses, so order holds and nothing is skipped silently."""
        if not self.enabled:
            return []
        # every gateway process on the store runs passes; one at a time, so no notice goes out twice
        async with self.leases.attempt(LEASE) as held:
            return [] if held is None else await self._deliver()

    async def _deliver(self) -> list[JSONObject]:
        import httpx2  # here, not at import: `gateway check` and the hook load this module and never notify

        seq, tries = self._cursor()
        delivered: list[JSONObject] = []
        async with AsyncExitStack() as stack:
            client: httpx2.AsyncClient | None = None  # made for the first notice: most passes find none
            while True:  # batch after batch until the head: a busy ledger never leaves notices behind
                events = self.ledger.since(seq, BATCH)
                for event in events:
                    found = notice(event)
                    if found is not None and found["event"] in self.events:
                        if client is None:
                            client = await stack.enter_async_context(httpx2.AsyncClient(timeout=TIMEOUT_S))
                        failure = await self._post(client, found)
                        if failure is not None and tries + 1 < self.config.max_tries:
                            self._advance(seq, tries + 1)
                            log.warning("escalation notice not delivered; will retry", seq=event.seq, error=failure)
                            return delivered
                        if failure is not None:
                            self._give_up(found, failure, tries + 1)
                        else:
                            delivered.append(found)
                        self._advance(event.seq, 0)  # past it: sent, or given up and recorded
                    seq, tries = event.seq, 0
                if events:
                    self._advance(seq, 0)  # one write per batch for the rows that are not notices
                if len(events) < BATCH:
                    return delivered

    async def _post(self, client: httpx2.AsyncClient, body: JSONObject) -> str | None:
        for hook in self.config.webhooks:
            try:
                response = await client.post(hook.url, json=body, headers=hook.headers)
            except Exception as exc:  # connection refused, timeout, bad TLS: the webhook did not take it
                return f"{hook.url}: {type(exc).__name__}"  # never the headers: they hold the webhook's secret
            if response.status_code >= 300:
                return f"{hook.url}: HTTP {response.status_code}"
        return None

    def _give_up(self, found: JSONObject, failure: str, tries: int) -> None:
        log.error("escalation notice dropped after retries", seq=found["seq"], tries=tries, error=failure)
        self.ledger.append(
            {
                "kind": "notify",
                "trace_id": found["trace_id"],
                "outcome": "error",
                "detail": {"notice": {k: found[k] for k in ("event", "task_id", "seq")}, "error": failure},
            }
        )

    def _cursor(self) -> tuple[int, int]:
        found = cursors.position(self.ledger.db, CURSOR)
        if found is None:  # placed once: a process starting beside another never moves the cursor it placed
            with self.ledger.db.transaction() as tx:
                cursors.place(tx, CURSOR, self.ledger.head_seq())
            found = cursors.position(self.ledger.db, CURSOR)
            assert found is not None
        return found.seq, found.tries

    def _advance(self, seq: int, tries: int) -> None:
        with self.ledger.db.transaction() as tx:
            cursors.move(tx, CURSOR, seq, tries)
