"""The intents table: every SQL string of gateway/commit/intents.py, answering ``IntentRow``.

row = intents.intent(store, identifier)                 # None: no such intent
with store.transaction() as tx:
    row = intents.locked(tx, identifier)                # read under the write lock, then
    intents.update(tx, identifier, state="executing")   # a move INTENT_MOVES allows
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields

from gateway.digests import canonical_json
from gateway.store.interface import Row, Store, Transaction
from gateway.store.repositories.stateful import StatefulRows
from gateway.tasks.states import INTENT_MOVES
from gateway.types import JSONObject

__all__ = ["IntentRow", "by_state", "every", "for_task", "insert", "intent", "locked", "trace_of", "update"]


@dataclass(frozen=True, slots=True)
class IntentRow:
    """An intent as stored, its arguments and outcome decoded."""

    id: str
    task_id: str
    action: str
    arguments: JSONObject
    state: str
    proposed_by: str
    approved_by: str | None
    committed_by: str | None
    outcome: JSONObject | None
    trace_id: str | None
    created: str
    updated: str
    attempt: int

    @classmethod
    def of(cls, row: Row) -> IntentRow:
        stored = dict(row)
        stored["arguments"] = json.loads(stored["arguments"])
        stored["outcome"] = json.loads(stored["outcome"]) if stored["outcome"] else None
        return cls(**{f.name: stored[f.name] for f in fields(cls)})

    def as_dict(self) -> JSONObject:
        """The intent as the commit tools and the ceremony see it: its columns by name."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


_ROWS = StatefulRows(
    "intents",
    frozenset({"state", "approved_by", "committed_by", "outcome"}),
    frozenset({"outcome"}),
    INTENT_MOVES,
    lambda identifier: f"intent {identifier[:12]}",
)


def intent(store: Store, identifier: str) -> IntentRow | None:
    rows = store.query("SELECT * FROM intents WHERE id = ?", (identifier,))
    return IntentRow.of(rows[0]) if rows else None


def for_task(store: Store, task_id: str, action: str) -> list[IntentRow]:
    """A task's intents for one action, oldest first."""
    rows = store.query("SELECT * FROM intents WHERE task_id = ? AND action = ? ORDER BY created", (task_id, action))
    return [IntentRow.of(row) for row in rows]


def by_state(store: Store, state: str) -> list[IntentRow]:
    return [
        IntentRow.of(row) for row in store.query("SELECT * FROM intents WHERE state = ? ORDER BY created", (state,))
    ]


def every(store: Store) -> list[IntentRow]:
    return [IntentRow.of(row) for row in store.query("SELECT * FROM intents")]


def locked(tx: Transaction, identifier: str) -> IntentRow | None:
    row = _ROWS.locked(tx, identifier)
    return IntentRow.of(row) if row is not None else None


update = _ROWS.set
"""update(tx, identifier, **columns): write columns (``outcome`` given as a value) and ``updated``; a state only
as INTENT_MOVES allows."""


def trace_of(tx: Transaction, identifier: str) -> str | None:
    row = tx.execute("SELECT trace_id FROM intents WHERE id = ?", (identifier,)).fetchone()
    return row["trace_id"] if row else None


def insert(
    tx: Transaction,
    identifier: str,
    task_id: str,
    action: str,
    arguments: JSONObject,
    proposed_by: str,
    trace_id: str,
    attempt: int,
    now: str,
) -> None:
    """A new proposed intent; its arguments stored as canonical JSON."""
    tx.execute(
        "INSERT INTO intents (id, task_id, action, arguments, state, proposed_by, trace_id, attempt, created, "
        "updated) VALUES (?, ?, ?, ?, 'proposed', ?, ?, ?, ?, ?)",
        (identifier, task_id, action, canonical_json(arguments), proposed_by, trace_id, attempt, now, now),
    )
