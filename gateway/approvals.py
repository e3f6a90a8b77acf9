"""Tier-3 approvals: a human says yes or no to one exact call, once.

An approval is bound to the call's key (agent, role, task, tool and the digest of its arguments) and
is consumed by the first call with that key that finds it settled. Three ways to ask, chosen per call:

- push (2025-11-25 clients that declare elicitation): ``elicitation/create`` while the call waits,
  with progress notifications so the client does not give up;
- input_required (2026-07-28 clients): an ``InputRequiredResult``; the client retries with the answer
  and a sealed ``request_state`` that must match the same call;
- pending (no elicitation, a headless client, a cancelled elicitation, or a role that says so): the
  call answers "approval pending" with an id; ``gateway approvals approve ID`` (or the review page)
  settles it, and the agent's retry of the same call proceeds.

A cancelled elicitation is not a denial: it falls back to pending. Only "decline" (or approve=false) denies.

    approvals = Approvals(db, ledger, ttl_s=3600)
    pending = approvals.request(key, call_fields)        # {"id": "ap-...", "state": "pending", ...}
    approvals.settle(pending["id"], approve=True, by="alice")
    approvals.consume(key, call_id)                       # "approved" once, then None
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from datetime import UTC, datetime, timedelta
from typing import Literal

from gateway.errors import ConfigError
from gateway.ledger.chain import Ledger, digest, utc_now
from gateway.ledger.store import Row, Store, Transaction
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


def call_key(principal: Principal, tool: str, arguments: JSONObject, definition: str | None = None) -> str:
    """What an approval binds to: who, which tool, exactly which arguments, and for an upstream tool the
    digest of its pinned definition (``definition``)."""
    bound = {
        "agent": principal.agent,
        "role": principal.role,
        "task": principal.task,
        "tool": tool,
        "arguments": digest(arguments),
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
        self, key: str, principal: Principal, tool: str, arguments: JSONObject, about: JSONObject
    ) -> JSONObject:
        """A pending approval for this call key; an existing unexpired one is reused, not duplicated."""
        now = datetime.now(UTC)
        with self.db.transaction() as tx:
            row = tx.execute(
                "SELECT * FROM approvals WHERE call_key = ? AND state = 'pending' AND expires > ?",
                (key, now.isoformat()),
            ).fetchone()
            if row is not None:
                return _row(row)
            approval_id = "ap-" + secrets.token_hex(6)
            expires = (now + timedelta(seconds=self.ttl_s)).isoformat(timespec="microseconds")
            tx.execute(
                "INSERT INTO approvals (id, call_key, state, created, expires, principal, tool, arguments_digest, "
                "request) VALUES (?, ?, 'pending', ?, ?, ?, ?, ?, ?)",
                (
                    approval_id,
                    key,
                    utc_now(),
                    expires,
                    principal.model_dump_json(),
                    tool,
                    digest(arguments),
                    json.dumps({"arguments": arguments, **about}, default=str),
                ),
            )
            self.ledger.append_in(
                tx,
                {
                    "kind": "approval",
                    "principal": principal.model_dump(),
                    "tool": tool,
                    "arguments_digest": digest(arguments),
                    "outcome": "asked",
                    "detail": {"action": "request", "approval_id": approval_id, "call_id": about.get("call_id")},
                },
            )
            return _row(tx.execute("SELECT * FROM approvals WHERE id = ?", (approval_id,)).fetchone())

    def settle(self, approval_id: str, approve: bool, by: str, comment: str = "") -> JSONObject:
        """A human's answer to a pending approval; refused for one already settled, used or expired. A comment
        (why, at most MAX_COMMENT characters) is kept in the settlement's ledger row and shown in the trace."""
        if len(comment) > MAX_COMMENT:
            raise ConfigError(f"the comment is {len(comment)} characters long; at most {MAX_COMMENT}")
        with self.db.transaction() as tx:
            row = tx.execute("SELECT * FROM approvals WHERE id = ?", (approval_id,)).fetchone()
            if row is None:
                raise ConfigError(f"no approval {approval_id!r}")
            if row["state"] != "pending":
                raise ConfigError(f"approval {approval_id} is already {row['state']}")
            if row["expires"] <= datetime.now(UTC).isoformat():
                check_move(APPROVAL_MOVES, f"approval {approval_id}", row["state"], "expired")
                tx.execute("UPDATE approvals SET state = 'expired' WHERE id = ?", (approval_id,))
                raise ConfigError(f"approval {approval_id} has expired; the agent must call again")
            state = "approved" if approve else "denied"
            check_move(APPROVAL_MOVES, f"approval {approval_id}", row["state"], state)
            tx.execute(
                "UPDATE approvals SET state = ?, settled_by = ?, settled_at = ? WHERE id = ?",
                (state, by, utc_now(), approval_id),
            )
            self._record(tx, row, state, by, comment.strip())
            return _row(tx.execute("SELECT * FROM approvals WHERE id = ?", (approval_id,)).fetchone())

    def consume(self, key: str, call_id: str) -> tuple[Settled, str] | None:
        """Take the settled answer for this call key, once: (answer, approval id), or None."""
        with self.db.transaction() as tx:
            row = tx.execute(
                "SELECT * FROM approvals WHERE call_key = ? AND state IN ('approved', 'denied') ORDER BY settled_at "
                "LIMIT 1",
                (key,),
            ).fetchone()
            if row is None:
                return None
            used = "used" if row["state"] == "approved" else "denied-used"
            check_move(APPROVAL_MOVES, f"approval {row['id']}", row["state"], used)
            tx.execute("UPDATE approvals SET state = ?, used_by_call = ? WHERE id = ?", (used, call_id, row["id"]))
            return row["state"], row["id"]

    def record_answer(
        self, key: str, principal: Principal, tool: str, arguments: JSONObject, approve: bool, by: str, call_id: str
    ) -> str:
        """An answer given in-band (elicitation): stored already used by the call that asked."""
        approval_id = "ap-" + secrets.token_hex(6)
        state = "used" if approve else "denied-used"
        now = utc_now()
        with self.db.transaction() as tx:
            tx.execute(
                "INSERT INTO approvals (id, call_key, state, created, expires, principal, tool, arguments_digest, "
                "request, settled_by, settled_at, used_by_call) VALUES (?, ?, ?, ?, ?, ?, ?, ?, '{}', ?, ?, ?)",
                (
                    approval_id,
                    key,
                    state,
                    now,
                    now,
                    principal.model_dump_json(),
                    tool,
                    digest(arguments),
                    by,
                    now,
                    call_id,
                ),
            )
            row = tx.execute("SELECT * FROM approvals WHERE id = ?", (approval_id,)).fetchone()
            self._record(tx, row, "approved" if approve else "denied", by)
        return approval_id

    def list(self, state: str | None = None) -> list[JSONObject]:
        if state:
            rows = self.db.query("SELECT * FROM approvals WHERE state = ? ORDER BY created DESC", (state,))
        else:
            rows = self.db.query("SELECT * FROM approvals ORDER BY created DESC LIMIT 500")
        return [_row(r) for r in rows]

    def get(self, approval_id: str) -> JSONObject:
        rows = self.db.query("SELECT * FROM approvals WHERE id = ?", (approval_id,))
        if not rows:
            raise ConfigError(f"no approval {approval_id!r}")
        return _row(rows[0])

    def _record(self, tx: Transaction, row: Row, state: str, by: str, comment: str = "") -> None:
        detail: JSONObject = {"action": state, "approval_id": row["id"], "by": by}
        if comment:
            detail["comment"] = comment
        self.ledger.append_in(
            tx,
            {
                "kind": "approval",
                "principal": json.loads(row["principal"]),
                "tool": row["tool"],
                "arguments_digest": row["arguments_digest"],
                "outcome": "ok",
                "detail": detail,
            },
        )


def _row(row: Row) -> JSONObject:
    data = dict(row)
    data["principal"] = json.loads(data["principal"])
    data["request"] = json.loads(data["request"])
    return data
