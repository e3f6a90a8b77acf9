"""The state tables: every move a task, intent or approval may make is in a table, every other one raises,
and the stores check the table in the transaction that writes the state."""

from __future__ import annotations

import itertools
from enum import StrEnum
from typing import Any

import pytest
from conftest import token

from gateway.approvals import CallSite
from gateway.errors import ConfigError
from gateway.tasks.states import (
    APPROVAL_MOVES,
    INTENT_MOVES,
    TASK_MOVES,
    IllegalTransition,
    check_move,
)

pytestmark = pytest.mark.both_stores

TABLES = {"task": TASK_MOVES, "intent": INTENT_MOVES, "approval": APPROVAL_MOVES}


@pytest.mark.parametrize("name", TABLES)
def test_every_move_outside_the_table_raises(name: str) -> None:
    moves: dict[StrEnum, frozenset[StrEnum]] = TABLES[name]
    for old, new in itertools.product(moves, repeat=2):
        if new in moves[old]:
            check_move(moves, name, old, new)
        else:
            with pytest.raises(IllegalTransition, match=f"is {old}: it cannot become {new}"):
                check_move(moves, name, old, new)
    with pytest.raises(IllegalTransition):
        check_move(moves, name, "no-such-state", next(iter(moves)))


def test_terminal_states_have_no_way_out() -> None:
    assert not TASK_MOVES["committed"] and not TASK_MOVES["abandoned"]
    assert not INTENT_MOVES["committed"] and not INTENT_MOVES["failed"]
    assert not APPROVAL_MOVES["used"] and not APPROVAL_MOVES["denied-used"] and not APPROVAL_MOVES["expired"]


@pytest.mark.anyio
async def test_the_store_checks_the_table_when_it_writes_a_state(gateway: Any) -> None:
    from gateway.store.repositories import tasks as task_rows
    from gateway.tasks.models import TaskManifest

    manifest = TaskManifest(task_id="T1", objective="x", allowed_paths=["src/**"], verification=["true"])
    await gateway.board.submit(manifest, by="planner", trace_id=None)
    with gateway.db.transaction() as tx:
        tx.execute("UPDATE tasks SET state = 'committed' WHERE id = 'T1'")  # as a merge leaves it
    refused = pytest.raises(IllegalTransition, match="task 'T1' is committed: it cannot become open")
    with refused, gateway.db.transaction() as tx:
        task_rows.update(tx, "T1", state="open")  # the one writer of task states
    assert gateway.board.get("T1")["state"] == "committed"  # rolled back with the transaction


def test_an_approval_is_settled_once_and_used_once(gateway: Any, config: Any) -> None:
    principal = gateway.tokens.verify(token(config, "developer", agent="d"))
    site = CallSite("mcp:tools/call", {"runs": "gateway", "confined": False})
    pending = gateway.approvals.request("key-1", principal, "shell_run", {"command": "rm -rf build"}, {}, site)
    gateway.approvals.settle(pending["id"], approve=True, by="alice")
    with pytest.raises(ConfigError, match="already approved"):
        gateway.approvals.settle(pending["id"], approve=False, by="mallory")
    assert gateway.approvals.consume("key-1", "call-1", CallSite("hook:http", site.confinement)) is None
    assert gateway.approvals.consume("key-1", "call-1", site) == ("approved", pending["id"])
    assert gateway.approvals.consume("key-1", "call-2", site) is None  # used: never again
    assert gateway.approvals.get(pending["id"])["state"] == "used"
