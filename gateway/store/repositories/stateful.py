"""Rows whose ``state`` moves only as a table of moves allows: read under the write lock, then set.

The task board and the intents both keep such rows (an id, a state, an ``updated`` time). Every state change
goes through ``set``, which checks the move against the table (gateway/tasks/states.py) in the same
transaction, so no writer can move a row where the table does not go.

    TASK_ROWS = StatefulRows("tasks", TASK_COLUMNS, TASK_MOVES, lambda id: f"task {id!r}")
    row = TASK_ROWS.locked(tx, "T1")                      # None: no such row
    TASK_ROWS.set(tx, "T1", state="claimed", owner="w")   # IllegalTransition when the table forbids it
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from gateway.ledger.chain import utc_now
from gateway.store.interface import Row, Transaction, one_row
from gateway.tasks.states import check_move

__all__ = ["StatefulRows"]


@dataclass(frozen=True, slots=True)
class StatefulRows:
    """One table of such rows. ``columns``: the ones ``set`` may write; ``json_columns``: those stored as JSON
    text (a value given as anything but text is encoded); ``named``: the row as an error names it."""

    table: str
    columns: frozenset[str]
    json_columns: frozenset[str]
    moves: dict[StrEnum, frozenset[StrEnum]]
    named: Callable[[str], str]

    def locked(self, tx: Transaction, identifier: str) -> Row | None:
        """The row as it is in this transaction (which holds the write lock: nobody moves it meanwhile)."""
        row: Row | None = tx.execute(f"SELECT * FROM {self.table} WHERE id = ?", (identifier,)).fetchone()
        return row

    def set(self, tx: Transaction, identifier: str, **columns: Any) -> None:
        """Write ``columns`` and the row's ``updated`` time; a new state must be a move the table allows."""
        unknown = set(columns) - self.columns
        if unknown:
            raise ValueError(f"{self.table} has no writable column {sorted(unknown)}")
        if "state" in columns:
            row = one_row(tx.execute(f"SELECT state FROM {self.table} WHERE id = ?", (identifier,)))
            check_move(self.moves, self.named(identifier), row["state"], str(columns["state"]))
        values = [self._stored(name, value) for name, value in columns.items()]
        assignments = ", ".join(f"{name} = ?" for name in columns)
        tx.execute(f"UPDATE {self.table} SET {assignments}, updated = ? WHERE id = ?", (*values, utc_now(), identifier))

    def _stored(self, name: str, value: Any) -> Any:
        if name in self.json_columns and value is not None and not isinstance(value, str):
            return json.dumps(value, default=str)
        return value
