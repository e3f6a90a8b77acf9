"""Dead letters: a handoff the gateway refused as malformed, kept whole so nothing an agent sent is lost.

A handoff passes work from one agent to the next: a task manifest (``task_submit``), an execution record
(``task_report``), a verification run (``verify_run``) or an intent proposal (``intent_propose``). When one
is refused as malformed (outcome ``invalid``: its arguments fail the tool's schema, the artifact inside
fails its model, or the board or the intents refuse its content), the pipeline's finish keeps the call's
whole arguments here, with the task, the agent, the error, the time and the trace; the refusal the agent
reads then names the dead letter. A person reads it (``gateway deadletters list | show``, /ui/deadletters),
fixes it if need be and replays it (``gateway deadletters replay ID [--payload FILE]``): the same tool call
again, through the whole pipeline (policy, claims, ledger), as the agent that sent it.

The store keeps the payload whole: it lives in the state dir, out of every agent's reach. The ledger row
that records a dead letter keeps only the payload's digest, since a payload may hold secrets.

    deadletters = DeadLetters(db, ledger)
    dl = deadletters.keep("record", "task_report", arguments, "field 'status': ...", principal, "T1", trace_id)
    deadletters.list(state="dead")                        # newest first, without payloads
    deadletters.get(dl)["payload"]                        # the arguments exactly as sent
    call = await replay(gateway, dl, payload=fixed)       # marks it replayed when the call went through

The tools/call stack keeps them: its finish stage KeepDeadLetters (gateway/judge/keep_deadletters.py).
"""

from __future__ import annotations

import secrets
from typing import Literal, Protocol

from gateway.digests import digest
from gateway.errors import GatewayError
from gateway.identity.revocations import Revocations
from gateway.identity.roles import RoleSet
from gateway.judge.authenticate import AsRecorded
from gateway.judge.call import Call, Stage
from gateway.judge.pipeline import Pipeline
from gateway.ledger.chain import Ledger, utc_now
from gateway.ledger.leases import Leases, new_holder
from gateway.origin import Origin
from gateway.store import Store
from gateway.store.repositories import dead_letters
from gateway.types import JSONObject, Principal
from gateway.unicode import escaped

Kind = Literal["manifest", "record", "verification", "intent"]
State = Literal["dead", "replayed"]

# the handoff tools, and what each one hands off
HANDOFF_TOOLS: dict[str, Kind] = {
    "task_submit": "manifest",
    "task_report": "record",
    "verify_run": "verification",
    "intent_propose": "intent",
}


class DeadLetterRefused(GatewayError):
    """No such dead letter, or one that cannot be replayed (already replayed)."""

    code = "deadletter_refused"
    outcome = "invalid"


class DeadLetters:
    """The dead-letter store; every change commits with its ledger row."""

    def __init__(self, db: Store, ledger: Ledger) -> None:
        self.db = db
        self.ledger = ledger

    def keep(
        self,
        kind: Kind,
        tool: str,
        payload: JSONObject,
        error: str,
        principal: Principal,
        task_id: str | None,
        trace_id: str | None,
        *,
        call_id: str | None = None,
        replay_of: str | None = None,
    ) -> str:
        """Keep a refused handoff whole; answers its id. ``call_id``: the refused call (its trace nests the
        dead letter under it); ``replay_of``: the dead letter whose replay was refused again."""
        deadletter_id = "DL-" + secrets.token_hex(6)
        error = escaped(error)
        task_id = escaped(task_id) if task_id is not None else None
        detail: JSONObject = {
            "action": "kept",
            "deadletter_id": deadletter_id,
            "kind": kind,
            "task_id": task_id,
            "error": error,
            "call_id": call_id,
        }
        if replay_of is not None:
            detail["replay_of"] = replay_of
        with self.db.transaction() as tx:
            principal_json = principal.model_dump_json()
            dead_letters.insert(
                tx, deadletter_id, utc_now(), kind, tool, task_id, principal_json, trace_id, error, payload
            )
            self.ledger.append_in(
                tx,
                {
                    "kind": "deadletter",
                    "trace_id": trace_id,
                    "principal": principal.model_dump(),
                    "tool": tool,
                    "arguments_digest": digest(payload),  # never the payload: it may hold secrets
                    "outcome": "invalid",
                    "detail": detail,
                },
            )
        return deadletter_id

    def list(self, state: State | None = None) -> list[JSONObject]:
        """Dead letters in ``state`` (all when None), newest first; without their payloads."""
        return [row.as_dict() for row in dead_letters.listed(self.db, state)]

    def get(self, deadletter_id: str) -> JSONObject:
        letter = dead_letters.letter(self.db, deadletter_id)
        if letter is None:
            raise DeadLetterRefused(f"no dead letter {deadletter_id[:40]!r}: `gateway deadletters list --all`")
        return letter.as_dict()

    def mark_replayed(self, deadletter_id: str, result: JSONObject, by: str) -> JSONObject:
        """A replay went through: the dead letter is settled with ``result`` ({call_id, trace_id, outcome,
        result}), once. The ledger row joins the replaying call's trace."""
        with self.db.transaction() as tx:
            row = dead_letters.locked(tx, deadletter_id)
            if row is None:
                raise DeadLetterRefused(f"no dead letter {deadletter_id[:40]!r}")
            if row.state != "dead":
                raise DeadLetterRefused(f"dead letter {deadletter_id} was already replayed at {row.replayed_at}")
            dead_letters.mark_replayed(tx, deadletter_id, utc_now(), result)
            self.ledger.append_in(
                tx,
                {
                    "kind": "deadletter",
                    "trace_id": result.get("trace_id") or row.trace_id,
                    "principal": row.principal,
                    "tool": row.tool,
                    "outcome": "ok",
                    "detail": {
                        "action": "replayed",
                        "deadletter_id": deadletter_id,
                        "kind": row.kind,
                        "task_id": row.task_id,
                        "call_id": result.get("call_id"),
                        "by": by,
                        "replay_outcome": result.get("outcome"),
                    },
                },
            )
            settled = dead_letters.locked(tx, deadletter_id)
            assert settled is not None  # written just above, in this transaction
            return settled.as_dict()


# --- replaying ------------------------------------------------------------------------------------


class ReplayStack(Protocol):
    def replay(self, authenticate: Stage) -> Pipeline:
        """The tools/call stack with ``authenticate`` in place of its own (gateway/judge/stacks.py)."""
        ...


class Replaying(Protocol):
    """What a replay needs of the gateway (gateway/runtime.py)."""

    @property
    def db(self) -> Store: ...
    @property
    def deadletters(self) -> DeadLetters: ...
    @property
    def roles(self) -> RoleSet: ...
    @property
    def revocations(self) -> Revocations: ...
    @property
    def stacks(self) -> ReplayStack: ...


async def replay(gateway: Replaying, deadletter_id: str, payload: JSONObject | None = None, by: str = "cli") -> Call:
    """The dead letter's tool call again, with ``payload`` (default: the stored one), through the gateway's own
    stages as the recorded principal. A call that went through (it ran and answered) marks the dead letter
    replayed; a refusal leaves it dead, and a payload still malformed is kept as a new dead letter."""
    leases, holder, lease = Leases(gateway.db), new_holder(), f"replay of {deadletter_id}"
    # one replay at a time, across processes: two `gateway deadletters replay` of one letter must not both run it
    if not leases.try_acquire(lease, holder):
        raise DeadLetterRefused(f"dead letter {deadletter_id} is being replayed right now ({leases.holder_of(lease)})")
    try:
        return await _replay(gateway, deadletter_id, payload, by)
    finally:
        leases.release(lease, holder)


async def _replay(gateway: Replaying, deadletter_id: str, payload: JSONObject | None, by: str) -> Call:
    deadletters = gateway.deadletters
    letter = deadletters.get(deadletter_id)
    if letter["state"] != "dead":
        raise DeadLetterRefused(f"dead letter {deadletter_id} was already replayed at {letter['replayed_at']}")
    principal = Principal.model_validate(letter["principal"])
    stack = gateway.stacks.replay(AsRecorded(principal, gateway.roles, gateway.revocations))
    call = Call(
        tool=letter["tool"],
        arguments=letter["payload"] if payload is None else payload,
        origin=Origin(transport="inprocess", protocol_version="replay"),
        detail={"replay_of": deadletter_id, "replayed_by": by},
    )
    if letter["trace_id"]:
        call.trace_id = letter["trace_id"]  # a task's call moves to the task's trace anyway
    call = await stack.run(call)
    import mcp_types as mt  # loaded with the tools the replay ran

    from gateway.tools.forwarded import Forwarded

    replayed = call.result
    if call.error is None and call.outcome in ("ok", "error") and isinstance(replayed, mt.CallToolResult | Forwarded):
        if isinstance(replayed, Forwarded):  # an upstream tool's answer, passed on as it sent it
            result = replayed.body.get("structuredContent") or {"text": [replayed.text]}
        else:
            result = replayed.structured_content or {"text": [getattr(c, "text", "") for c in replayed.content]}
        deadletters.mark_replayed(
            deadletter_id,
            {"call_id": call.call_id, "trace_id": call.trace_id, "outcome": call.outcome, "result": result},
            by,
        )
    return call
