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

    finish = KeepDeadLetters(deadletters, gateway.situate, Record(ledger))   # the pipeline's finish
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

import structlog

from gateway.errors import ArgumentsTooLarge, GatewayError, InvalidRequest, Unauthenticated
from gateway.identity.revocations import Revocations
from gateway.identity.roles import RoleSet
from gateway.ledger.chain import Ledger, digest, utc_now
from gateway.ledger.leases import Leases, new_holder
from gateway.ledger.store import Store
from gateway.pipeline import Authenticate, Call, Pipeline, Stage
from gateway.types import JSONObject, Origin, Principal
from gateway.unicode import escaped

if TYPE_CHECKING:
    from gateway.runtime import Gateway

log = structlog.get_logger("gateway.deadletters")

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
            tx.execute(
                "INSERT INTO deadletters (id, time, kind, tool, task_id, principal, trace_id, error, payload) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    deadletter_id,
                    utc_now(),
                    kind,
                    tool,
                    task_id,
                    principal.model_dump_json(),
                    trace_id,
                    error,
                    json.dumps(payload),  # ASCII: a lone surrogate an agent sent is kept escaped, not refused
                ),
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
        where, params = ("WHERE state = ?", (state,)) if state else ("", ())
        rows = self.db.query(f"SELECT * FROM deadletters {where} ORDER BY time DESC LIMIT 1000", params)
        return [_row(r, with_payload=False) for r in rows]

    def get(self, deadletter_id: str) -> JSONObject:
        rows = self.db.query("SELECT * FROM deadletters WHERE id = ?", (deadletter_id,))
        if not rows:
            raise DeadLetterRefused(f"no dead letter {deadletter_id[:40]!r}: `gateway deadletters list --all`")
        return _row(rows[0], with_payload=True)

    def mark_replayed(self, deadletter_id: str, result: JSONObject, by: str) -> JSONObject:
        """A replay went through: the dead letter is settled with ``result`` ({call_id, trace_id, outcome,
        result}), once. The ledger row joins the replaying call's trace."""
        with self.db.transaction() as tx:
            row = tx.execute("SELECT * FROM deadletters WHERE id = ?", (deadletter_id,)).fetchone()
            if row is None:
                raise DeadLetterRefused(f"no dead letter {deadletter_id[:40]!r}")
            if row["state"] != "dead":
                raise DeadLetterRefused(f"dead letter {deadletter_id} was already replayed at {row['replayed_at']}")
            tx.execute(
                "UPDATE deadletters SET state = 'replayed', replayed_at = ?, replay_result = ? WHERE id = ?",
                (utc_now(), json.dumps(result, default=str), deadletter_id),
            )
            self.ledger.append_in(
                tx,
                {
                    "kind": "deadletter",
                    "trace_id": result.get("trace_id") or row["trace_id"],
                    "principal": json.loads(row["principal"]) if row["principal"] else None,
                    "tool": row["tool"],
                    "outcome": "ok",
                    "detail": {
                        "action": "replayed",
                        "deadletter_id": deadletter_id,
                        "kind": row["kind"],
                        "task_id": row["task_id"],
                        "call_id": result.get("call_id"),
                        "by": by,
                        "replay_outcome": result.get("outcome"),
                    },
                },
            )
            return _row(tx.execute("SELECT * FROM deadletters WHERE id = ?", (deadletter_id,)).fetchone(), True)


def _row(row: Any, with_payload: bool) -> JSONObject:
    data = dict(row)
    data["principal"] = json.loads(data["principal"]) if data["principal"] else None
    data["replay_result"] = json.loads(data["replay_result"]) if data["replay_result"] else None
    payload = data.pop("payload")
    if with_payload:
        data["payload"] = json.loads(payload)
    return data


# --- keeping: the pipeline's finish ---------------------------------------------------------------


def handoff_kind(call: Call) -> Kind | None:
    """What a tools/call refused as malformed handed off, or None when it is not a dead letter: another tool,
    a refusal for who sent it rather than what (denied), an unknown tool, or arguments over the size limit
    (kept nowhere: the limit is what keeps the store bounded)."""
    kind = HANDOFF_TOOLS.get(call.tool)
    error = call.error
    if kind is None or call.kind != "call" or call.principal is None or call.spec is None:
        return None
    if not isinstance(error, InvalidRequest) or isinstance(error, ArgumentsTooLarge):
        return None
    return kind


def named_task(call: Call) -> str | None:
    """The task a handoff is about: the caller's task, else the one its arguments name."""
    if call.task is not None:
        return str(call.task["id"])
    arguments = call.arguments
    for value in (arguments.get("task_id"), *(arguments.get(k) for k in ("record", "manifest"))):
        if isinstance(value, dict):
            value = value.get("task_id")
        if isinstance(value, str) and value:
            return value[:200]
    return None


class KeepDeadLetters:
    """The finish of the tools/call pipeline: a handoff refused as malformed is kept whole, its refusal names
    the dead letter, and then ``record`` records the call as it records every call.

    A call refused by Validate was not situated yet; it is situated here, so the dead letter and the refused
    call join the task's trace (a worker's record belongs with its task, not with a fresh trace)."""

    def __init__(self, deadletters: DeadLetters, situate: Callable[[Call], None], record: Stage) -> None:
        self.deadletters = deadletters
        self.situate = situate
        self.record = record

    async def __call__(self, call: Call) -> None:
        kind = handoff_kind(call)
        if kind is not None:
            try:
                self._keep(call, kind)
            except Exception:
                # the refusal stands and is recorded either way; only the copy is missing
                log.exception("could not keep a dead letter", tool=call.tool, call_id=call.call_id)
        await self.record(call)

    def _keep(self, call: Call, kind: Kind) -> None:
        assert call.principal is not None and call.error is not None
        if call.workspace is None:
            self.situate(call)
        error = call.error
        replay_of = call.detail.get("replay_of")
        deadletter_id = self.deadletters.keep(
            kind,
            call.tool,
            call.arguments,
            error.message,
            call.principal,
            named_task(call),
            call.trace_id,
            call_id=call.call_id,
            replay_of=replay_of if isinstance(replay_of, str) else None,
        )
        # the agent reads this; a person replays it
        error.message = (
            f"{error.message} (kept as dead letter {deadletter_id}; fix it and "
            f"`gateway deadletters replay {deadletter_id}`, or send the corrected call again)"
        )
        error.args = (error.message,)
        error.details["deadletter_id"] = deadletter_id


# --- replaying ------------------------------------------------------------------------------------


class AsRecorded:
    """Stands in for Authenticate on a replay: the call runs as the principal the dead letter recorded (a
    person with the state dir replays it; the agent's credential may have expired since), unless that
    credential has been revoked or its role is gone."""

    def __init__(self, principal: Principal, roles: RoleSet, revocations: Revocations) -> None:
        self.principal = principal
        self.roles = roles
        self.revocations = revocations

    async def __call__(self, call: Call) -> None:
        if self.principal.jti is not None and self.revocations.is_revoked(self.principal.jti):
            raise Unauthenticated("the credential that sent this dead letter has been revoked; it is not replayed")
        if self.principal.role not in self.roles:
            raise Unauthenticated(f"role {self.principal.role!r} has no role file any more; it is not replayed")
        call.principal = self.principal


async def replay(gateway: Gateway, deadletter_id: str, payload: JSONObject | None = None, by: str = "cli") -> Call:
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


async def _replay(gateway: Gateway, deadletter_id: str, payload: JSONObject | None, by: str) -> Call:
    deadletters = gateway.deadletters
    letter = deadletters.get(deadletter_id)
    if letter["state"] != "dead":
        raise DeadLetterRefused(f"dead letter {deadletter_id} was already replayed at {letter['replayed_at']}")
    principal = Principal.model_validate(letter["principal"])
    stages = [s for s in gateway.pipeline.stages if not isinstance(s, Authenticate)]
    pipeline = Pipeline([AsRecorded(principal, gateway.roles, gateway.revocations), *stages], gateway.pipeline.finish)
    call = Call(
        tool=letter["tool"],
        arguments=letter["payload"] if payload is None else payload,
        origin=Origin(transport="inprocess", protocol_version="replay"),
        detail={"replay_of": deadletter_id, "replayed_by": by},
    )
    if letter["trace_id"]:
        call.trace_id = letter["trace_id"]  # a task's call moves to the task's trace anyway
    call = await pipeline.run(call)
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
