"""The ledger: an append-only, hash-chained record of every decision and outcome.

Each event's hash covers its canonical JSON and the previous event's hash, so editing, inserting or
deleting any row breaks the chain from that row on; ``verify`` names the first bad one.

    ledger = Ledger(db)
    event = ledger.append({"kind": "call", "tool": "fs_read", "outcome": "ok", ...})
    report = ledger.verify()   # VerifyReport(ok=True, checked=..., first_bad=None, reason=None)
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from gateway.ledger.store import Database
from gateway.types import JSONObject

GENESIS = "0" * 64


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no whitespace: the same value always gives the same text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def digest(value: Any) -> str:
    return "sha256:" + hashlib.sha256(canonical_json(value).encode()).hexdigest()


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


class LedgerEvent(BaseModel):
    """One ledger row. ``kind`` says what it records: a tool call, an approval, a task or intent step."""

    model_config = ConfigDict(extra="forbid")

    seq: int
    time: str
    kind: str = "call"
    call_id: str | None = None
    trace_id: str | None = None
    span_id: str | None = None
    principal: JSONObject | None = None
    tool: str | None = None
    arguments_digest: str | None = None
    effects: JSONObject | None = None
    decision: JSONObject | None = None
    outcome: str
    detail: JSONObject = Field(default_factory=dict)
    intent_id: str | None = None
    prev_hash: str
    hash: str

    def body(self) -> JSONObject:
        return self.model_dump(exclude={"hash"})


def chain_hash(body: JSONObject) -> str:
    return hashlib.sha256(canonical_json(body).encode()).hexdigest()


@dataclass(frozen=True)
class VerifyReport:
    ok: bool
    checked: int
    first_bad: int | None = None
    reason: str | None = None


class Ledger:
    def __init__(self, db: Database) -> None:
        self.db = db

    def append(self, fields: JSONObject) -> LedgerEvent:
        """Append one event; the write is committed before this returns."""
        with self.db.transaction() as tx:
            return self.append_in(tx, fields)

    def append_in(self, tx: Any, fields: JSONObject) -> LedgerEvent:
        """Append inside a caller's transaction, so a state change and its event commit together."""
        last = tx.execute("SELECT seq, hash FROM ledger ORDER BY seq DESC LIMIT 1").fetchone()
        seq, prev = (last["seq"] + 1, last["hash"]) if last else (1, GENESIS)
        body = {"time": utc_now(), **fields, "seq": seq, "prev_hash": prev}
        unhashed = LedgerEvent.model_validate({**body, "hash": ""})
        body = unhashed.body()
        # the body is validated already: adding its hash needs no second validation
        event = unhashed.model_copy(update={"hash": chain_hash(body)})
        tx.execute(
            "INSERT INTO ledger (seq, body, prev_hash, hash) VALUES (?, ?, ?, ?)",
            (seq, canonical_json(body), prev, event.hash),
        )
        return event

    def verify(self) -> VerifyReport:
        """Recompute the whole chain; report the first row whose content or link does not match."""
        prev = GENESIS
        checked = 0
        expected_seq = 1
        for row in self.db.connection.execute("SELECT seq, body, prev_hash, hash FROM ledger ORDER BY seq"):
            checked += 1
            seq = row["seq"]
            if seq != expected_seq:
                return VerifyReport(False, checked, seq, f"sequence gap: expected {expected_seq}, found {seq}")
            try:
                body = json.loads(row["body"])
            except json.JSONDecodeError:
                return VerifyReport(False, checked, seq, "body is not valid JSON")
            if body.get("seq") != seq or body.get("prev_hash") != row["prev_hash"]:
                return VerifyReport(False, checked, seq, "row columns disagree with the hashed body")
            if row["prev_hash"] != prev:
                return VerifyReport(False, checked, seq, "prev_hash does not match the previous event's hash")
            if chain_hash(body) != row["hash"]:
                return VerifyReport(False, checked, seq, "hash does not match the event's content")
            prev = row["hash"]
            expected_seq += 1
        return VerifyReport(True, checked)

    def events(self, where: str = "1=1", params: tuple[Any, ...] = (), limit: int = 1000) -> list[LedgerEvent]:
        rows = self.db.query(
            f"SELECT body, hash FROM ledger WHERE {where} ORDER BY seq DESC LIMIT ?",
            (*params, limit),
        )
        return [LedgerEvent.model_validate({**json.loads(r["body"]), "hash": r["hash"]}) for r in rows]
