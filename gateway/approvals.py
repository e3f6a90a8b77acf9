"""Tier-3 approvals: a human says yes or no to one exact call, once.

An approval is bound to the call's key (agent, role, task, tool, the digest of its arguments, and where it
runs: the channel it came by and the confinement it runs in, a ``CallSite``) and is consumed by the first
call with that key that finds it settled. An approval a person gave to a sandboxed MCP ``shell_run`` never
lets the same command through the Claude Code hook, where Claude Code runs it unconfined, nor through a
gateway whose sandbox has since changed: such a call is held again, and the approval it could not use is
named in its ledger row. Three ways to ask, chosen per call:

- push (2025-11-25 clients that declare elicitation): ``elicitation/create`` while the call waits,
  with progress notifications so the client does not give up;
- input_required (2026-07-28 clients): an ``InputRequiredResult``; the client retries with the answer
  and a sealed ``request_state`` that must match the same call;
- pending (no elicitation, a headless client, a cancelled elicitation, or a role that says so): the
  call answers "approval pending" with an id; ``gateway approvals approve ID`` (or the review page)
  settles it, and the agent's retry of the same call proceeds.

A cancelled elicitation is not a denial: it falls back to pending. Only "decline" (or approve=false) denies.

    site = CallSite("mcp:tools/call", {"runs": "sandbox", "mode": "bubblewrap", ...})
    key = call_key(principal, "shell_run", arguments, site)
    approvals = Approvals(db, ledger, ttl_s=3600)
    pending = approvals.request(key, principal, "shell_run", arguments, about, site)  # {"id": "ap-...", ...}
    approvals.settle(pending["id"], approve=True, by="alice")
    approvals.consume(key, call_id)                       # ("approved", id) once, then None
    approvals.elsewhere(principal, "shell_run", arguments, key)  # approved for another site: not used here

Approvals asked before they named their site (a store upgraded to schema 6) have no channel: they authorise
no call, and approving one is refused with the reason.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from gateway.digests import digest
from gateway.errors import ConfigError
from gateway.ledger.chain import Ledger, utc_now
from gateway.store import Store, Transaction
from gateway.store.repositories import approvals
from gateway.store.repositories.approvals import Approval
from gateway.tasks.states import APPROVAL_MOVES, check_move
from gateway.types import JSONObject, Principal

APPROVAL_SCHEMA: JSONObject = {
    "type": "object",
    "properties": {
        "approve": {"type": "boolean", "title": "Run this call?", "description": "true runs it once; false denies it"},
    },
    "required": ["approve"],
}

Settled = Literal["approved", "denied"]
MAX_COMMENT = 2000  # characters of a reviewer's comment on an approval


CHANNELS = {
    "mcp:tools/call": "MCP tools/call",
    "mcp:resources/read": "MCP resources/read",
    "mcp:prompts/get": "MCP prompts/get",
    "hook:http": "Claude Code hook over HTTP",
    "hook:command": "Claude Code command hook",
}
UNBOUND = (
    "asked before approvals named the channel and confinement they are for: it authorises no call "
    "(the agent's retry asks again, bound to where it runs)"
)


@dataclass(frozen=True)
class CallSite:
    """Where a call runs: the channel it came by (``mcp:tools/call``, ``hook:http``, ``hook:command``, ...) and
    the confinement it runs in (``{"runs": "sandbox", "mode": "bubblewrap", "writable": [...], "network": [...],
    ...}``, ``{"runs": "claude-code"}``: Claude Code runs it itself, unconfined; ``{"runs": "gateway"}``: a tool
    that runs no command). An approval binds to all of it."""

    channel: str
    confinement: JSONObject

    def summary(self) -> str:
        return f"{CHANNELS.get(self.channel, self.channel)}; {confinement_summary(self.confinement)}"


def confinement_summary(confinement: JSONObject) -> str:
    """A confinement as a reviewer reads it: where the call runs, what it may write and reach."""
    runs = confinement.get("runs")
    if runs == "claude-code":
        return "Claude Code runs it itself, UNCONFINED (no sandbox of the gateway's)"
    if runs == "gateway":
        return "runs in the gateway (no command)"
    if runs == "upstream":
        return "runs in an upstream server the gateway does not confine"
    if confinement.get("mode") == "off":
        return "UNCONFINED (sandbox off)"
    writable = ", ".join(confinement.get("writable") or []) or "nothing"
    network = ", ".join(confinement.get("network") or []) or "none"
    where = "sandboxed upstream server" if runs == "upstream-sandbox" else "sandboxed"
    return f"{where} ({confinement.get('mode')}): writes {writable}; network: {network}"


def call_key(
    principal: Principal, tool: str, arguments: JSONObject, site: CallSite, definition: str | None = None
) -> str:
    """What an approval binds to: who, which tool, exactly which arguments, where the call runs, and for an
    upstream tool the digest of its pinned definition (``definition``)."""
    bound = {
        "agent": principal.agent,
        "role": principal.role,
        "task": principal.task,
        "tool": tool,
        "arguments": digest(arguments),
        "channel": site.channel,
        "confinement": digest(site.confinement),
    }
    return digest({**bound, "definition": definition} if definition is not None else bound)


class RequestStateSeal:
    """Seals the ``request_state`` of an InputRequiredResult to one call key, with an HMAC."""

    def __init__(self, secret: bytes) -> None:
        self.secret = secret

    def seal(self, key: str) -> str:
        nonce = secrets.token_hex(8)
        return f"{nonce}.{self._mac(key, nonce)}"

    def opens(self, key: str, state: str | None) -> bool:
        if not state or "." not in state:
            return False
        nonce, mac = state.split(".", 1)
        return hmac.compare_digest(mac, self._mac(key, nonce))

    def _mac(self, key: str, nonce: str) -> str:
        return hmac.new(self.secret, f"{key}|{nonce}".encode(), hashlib.sha256).hexdigest()


class Approvals:
    def __init__(self, db: Store, ledger: Ledger, ttl_s: int = 3600) -> None:
        self.db = db
        self.ledger = ledger
        self.ttl_s = ttl_s

    def request(
        self, key: str, principal: Principal, tool: str, arguments: JSONObject, about: JSONObject, site: CallSite
    ) -> JSONObject:
        """A pending approval for this call key; an existing unexpired one is reused, not duplicated."""
        now = datetime.now(UTC)
        with self.db.transaction() as tx:
            found = approvals.pending_for(tx, key, site.channel, now.isoformat())
            if found is not None:
                return _row(found)
            approval_id = "ap-" + secrets.token_hex(6)
            row = Approval(
                id=approval_id,
                call_key=key,
                state="pending",
                created=utc_now(),
                expires=(now + timedelta(seconds=self.ttl_s)).isoformat(timespec="microseconds"),
                principal=principal.model_dump_json(),
                tool=tool,
                arguments_digest=digest(arguments),
                request=json.dumps({"arguments": arguments, **about}, default=str),
                settled_by=None,
                settled_at=None,
                used_by_call=None,
                channel=site.channel,
                confinement=json.dumps(site.confinement),
            )
            approvals.insert(tx, row)
            detail = {"action": "request", "approval_id": approval_id, "call_id": about.get("call_id")}
            self.ledger.append_in(
                tx,
                {
                    "kind": "approval",
                    "principal": principal.model_dump(),
                    "tool": tool,
                    "arguments_digest": digest(arguments),
                    "outcome": "asked",
                    "detail": {**detail, "channel": site.channel, "where": site.summary()},
                },
            )
            return _row(row)

    def settle(self, approval_id: str, approve: bool, by: str, comment: str = "") -> JSONObject:
        """A human's answer to a pending approval; refused for one already settled, used or expired. A comment
        (why, at most MAX_COMMENT characters) is kept in the settlement's ledger row and shown in the trace."""
        if len(comment) > MAX_COMMENT:
            raise ConfigError(f"the comment is {len(comment)} characters long; at most {MAX_COMMENT}")
        with self.db.transaction() as tx:
            row = approvals.approval_in(tx, approval_id)
            if row is None:
                raise ConfigError(f"no approval {approval_id!r}")
            if row.state != "pending":
                raise ConfigError(f"approval {approval_id} is already {row.state}")
            if row.expires <= datetime.now(UTC).isoformat():
                check_move(APPROVAL_MOVES, f"approval {approval_id}", row.state, "expired")
                approvals.expire(tx, approval_id)
                raise ConfigError(f"approval {approval_id} has expired; the agent must call again")
            if approve and row.channel is None:
                raise ConfigError(f"approval {approval_id} cannot be approved: {UNBOUND}; deny it or let it expire")
            state = "approved" if approve else "denied"
            check_move(APPROVAL_MOVES, f"approval {approval_id}", row.state, state)
            settled = replace(row, state=state, settled_by=by, settled_at=utc_now())
            approvals.settle(tx, approval_id, state, by, str(settled.settled_at))
            self._record(tx, row, state, by, comment.strip())
            return _row(settled)

    def consume(self, key: str, call_id: str, site: CallSite) -> tuple[Settled, str] | None:
        """Take the settled answer for this call key (asked on the same channel), once: (answer, approval id),
        or None."""
        with self.db.transaction() as tx:
            row = approvals.settled_for(tx, key, site.channel)
            if row is None:
                return None
            used = "used" if row.state == "approved" else "denied-used"
            check_move(APPROVAL_MOVES, f"approval {row.id}", row.state, used)
            approvals.use(tx, row.id, used, call_id)
            return ("approved" if row.state == "approved" else "denied"), row.id

    def record_answer(
        self,
        key: str,
        principal: Principal,
        tool: str,
        arguments: JSONObject,
        site: CallSite,
        answer: tuple[bool, str],
        call_id: str,
    ) -> str:
        """An answer (approve, by whom) given in-band (elicitation): stored already used by the call that asked."""
        approve, by = answer
        approval_id = "ap-" + secrets.token_hex(6)
        state = "used" if approve else "denied-used"
        now = utc_now()
        row = Approval(
            id=approval_id,
            call_key=key,
            state=state,
            created=now,
            expires=now,
            principal=principal.model_dump_json(),
            tool=tool,
            arguments_digest=digest(arguments),
            request="{}",
            settled_by=by,
            settled_at=now,
            used_by_call=call_id,
            channel=site.channel,
            confinement=json.dumps(site.confinement),
        )
        with self.db.transaction() as tx:
            approvals.insert(tx, row)
            self._record(tx, row, "approved" if approve else "denied", by)
        return approval_id

    def elsewhere(self, principal: Principal, tool: str, arguments: JSONObject, key: str) -> list[JSONObject]:
        """Approvals a person gave to this same call (agent, role, task, tool, arguments) where it runs elsewhere:
        another channel or confinement, or none recorded. They are not used; the caller records why."""
        rows = approvals.approved_elsewhere(self.db, tool, digest(arguments), key)
        mine = {"agent": principal.agent, "role": principal.role, "task": principal.task}
        found = []
        for row in map(_row, rows):
            if {k: row["principal"].get(k) for k in mine} == mine:
                found.append({"id": row["id"], "channel": row["channel"], "where": row["where"]})
        return found

    def list(self, state: str | None = None) -> list[JSONObject]:
        return [_row(r) for r in approvals.listed(self.db, state)]

    def get(self, approval_id: str) -> JSONObject:
        row = approvals.approval(self.db, approval_id)
        if row is None:
            raise ConfigError(f"no approval {approval_id!r}")
        return _row(row)

    def _record(self, tx: Transaction, row: Approval, state: str, by: str, comment: str = "") -> None:
        detail: JSONObject = {"action": state, "approval_id": row.id, "by": by, "channel": row.channel}
        if comment:
            detail["comment"] = comment
        self.ledger.append_in(
            tx,
            {
                "kind": "approval",
                "principal": json.loads(row.principal),
                "tool": row.tool,
                "arguments_digest": row.arguments_digest,
                "outcome": "ok",
                "detail": detail,
            },
        )


def _row(row: Approval) -> JSONObject:
    """An approval as callers see it: its JSON columns read, and ``where`` (its site, in words) added."""
    data: dict[str, Any] = asdict(row)
    data["principal"] = json.loads(data["principal"])
    data["request"] = json.loads(data["request"])
    if data.get("channel") is None:
        data["confinement"], data["where"] = None, f"not recorded: {UNBOUND}"
    else:
        data["confinement"] = json.loads(data["confinement"])
        data["where"] = CallSite(data["channel"], data["confinement"]).summary()
    return data
