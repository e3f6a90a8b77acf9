"""The deadletters table: every SQL string of gateway/tasks/deadletters.py, answering ``DeadLetterRow``.

letter = dead_letters.letter(store, "DL-...", with_payload=True)    # None: no such dead letter
with store.transaction() as tx:
    dead_letters.insert(tx, identifier, now, "record", "task_report", None, principal, trace, error, payload)
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from typing import Any

from gateway.store.interface import Row, Store, Transaction
from gateway.types import JSONObject

__all__ = ["DeadLetterRow", "insert", "letter", "listed", "locked", "mark_replayed"]


@dataclass(frozen=True, slots=True)
class DeadLetterRow:
    """A dead letter as stored, its JSON decoded; ``payload`` None when it was not asked for (a listing)."""

    id: str
    time: str
    kind: str
    tool: str
    task_id: str | None
    principal: JSONObject | None
    trace_id: str | None
    error: str
    state: str
    replayed_at: str | None
    replay_result: JSONObject | None
    payload: JSONObject | None

    @classmethod
    def of(cls, row: Row, with_payload: bool) -> DeadLetterRow:
        stored = dict(row)
        stored["principal"] = json.loads(stored["principal"]) if stored["principal"] else None
        stored["replay_result"] = json.loads(stored["replay_result"]) if stored["replay_result"] else None
        stored["payload"] = json.loads(stored["payload"]) if with_payload else None
        return cls(**{f.name: stored[f.name] for f in fields(cls)})

    def as_dict(self) -> JSONObject:
        """Its columns by name (the payload only when it was read)."""
        shown = {f.name: getattr(self, f.name) for f in fields(self)}
        if self.payload is None:
            del shown["payload"]
        return shown


def listed(store: Store, state: str | None) -> list[DeadLetterRow]:
    """Dead letters in ``state`` (all when None), newest first, at most 1000; without their payloads."""
    where, params = ("WHERE state = ?", (state,)) if state else ("", ())
    rows = store.query(f"SELECT * FROM deadletters {where} ORDER BY time DESC LIMIT 1000", params)
    return [DeadLetterRow.of(row, with_payload=False) for row in rows]


def letter(store: Store, identifier: str) -> DeadLetterRow | None:
    rows = store.query("SELECT * FROM deadletters WHERE id = ?", (identifier,))
    return DeadLetterRow.of(rows[0], with_payload=True) if rows else None


def locked(tx: Transaction, identifier: str) -> DeadLetterRow | None:
    row = tx.execute("SELECT * FROM deadletters WHERE id = ?", (identifier,)).fetchone()
    return DeadLetterRow.of(row, with_payload=True) if row is not None else None


def insert(
    tx: Transaction,
    identifier: str,
    time: str,
    kind: str,
    tool: str,
    task_id: str | None,
    principal: str,
    trace_id: str | None,
    error: str,
    payload: JSONObject,
) -> None:
    """Keep a refused handoff: ``principal`` as its JSON, ``payload`` whole (as ASCII JSON: a lone surrogate an
    agent sent is kept escaped, not refused)."""
    tx.execute(
        "INSERT INTO deadletters (id, time, kind, tool, task_id, principal, trace_id, error, payload) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (identifier, time, kind, tool, task_id, principal, trace_id, error, json.dumps(payload)),
    )


def mark_replayed(tx: Transaction, identifier: str, at: str, result: Any) -> None:
    tx.execute(
        "UPDATE deadletters SET state = 'replayed', replayed_at = ?, replay_result = ? WHERE id = ?",
        (at, json.dumps(result, default=str), identifier),
    )
