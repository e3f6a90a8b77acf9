"""Decisions off the event loop, with a deadline: a decision that runs long is a deny, and nobody else waits.

The slow decision is a real one: a policy module whose rule does millions of steps for one input."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import add_role, inproc_client, ledger_rows, reconfigure, text_of, token

from gateway.runtime import Gateway

pytestmark = pytest.mark.anyio

SLOW_RULE = """package gateway.concerns.tiers

import rego.v1

# Millions of steps, for one input only: what a superlinear rule does to a large input.
findings contains {"tier": 1, "rule": "tiers.slow", "reason": "slow"} if {
\tinput.arguments.path == "slow.txt"
\tcount([x | some a in numbers.range(1, 4000); some b in numbers.range(1, 4000); x := a + b]) > 0
}
"""


@pytest.fixture
def slow_policy(config: Any) -> tuple[Gateway, str]:
    config = reconfigure(config, policy={"engine": "embedded", "deadline_s": 0.5})  # the production deadline
    (config.policy_dir / "tiers" / "slow.rego").write_text(SLOW_RULE)
    add_role(config, "reader", ["fs_read", "shell_run"], max_tier=2)
    return Gateway(config), token(config, "reader", agent="r1")


async def test_a_slow_decision_is_denied_while_the_others_go_on(slow_policy: tuple[Gateway, str]) -> None:
    gateway, bearer = slow_policy
    (gateway.config.workspace / "slow.txt").write_text("x\n")
    finished: list[str] = []
    results: dict[str, Any] = {}

    async with inproc_client(gateway, bearer) as client:

        async def call(name: str, path: str) -> None:
            results[name] = await client.call_tool("fs_read", {"path": path})
            finished.append(name)

        async with anyio.create_task_group() as tg:
            tg.start_soon(call, "slow", "slow.txt")
            await anyio.sleep(0)  # the slow one is asked first
            for i in range(5):
                tg.start_soon(call, f"fast{i}", "README.md")

    slow = results["slow"]
    assert slow.is_error and slow.structured_content["decision"]["rules"] == ["gateway.decision_deadline"]
    assert "did not decide within 0.5 s" in text_of(slow)
    assert finished[-1] == "slow", f"the other calls finished while the slow one was decided: {finished}"
    assert all(not results[f"fast{i}"].is_error for i in range(5))
    row = next(r for r in ledger_rows(gateway) if r.tool == "fs_read" and r.outcome == "denied")
    assert row.decision["rules"] == ["gateway.decision_deadline"]
    # the worker that ran past the deadline was replaced: the next decisions are made as usual
    async with inproc_client(gateway, bearer) as client:
        again = await client.call_tool("fs_read", {"path": "README.md"})
    assert not again.is_error and "# demo repo" in text_of(again)


async def test_describing_a_command_is_bounded_too(config: Any, repo: Path) -> None:
    config = reconfigure(config, policy={"deadline_s": 0.001})  # no description of a 10 KB command is this fast
    add_role(config, "dev", ["shell_run"], max_tier=2)
    gateway = Gateway(config)
    command = "; ".join(f"echo {i} >> out{i % 50}.txt" for i in range(600))
    async with inproc_client(gateway, token(config, "dev")) as client:
        result = await client.call_tool("shell_run", {"command": command})
    assert result.is_error and result.structured_content["error"]["code"] == "decision_deadline"
    assert not (repo / "out0.txt").exists()
    assert ledger_rows(gateway)[-1].detail["error"]["code"] == "decision_deadline"
