"""One Claude Code session, one trace: the hook's tool_use_id -> session association (gateway/session_joins.py),
and the MCP call that names it, from the same principal only.

The store is tested with an injected clock; the join end to end on a real `gateway serve --http`, with the
hook posted as Claude Code posts it and the MCP calls made by a real MCP client (the real Claude Code run is
tests/test_claude_code.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import httpx2
import pytest
from conftest import http_client, http_gateway, ledger_rows, reconfigure, stdio_server, token
from mcp import Client

from gateway.config import GatewayConfig
from gateway.errors import ConfigError
from gateway.hook import judge_command_hook
from gateway.judge.situate import session_trace
from gateway.runtime import Gateway
from gateway.session_joins import TOOL_USE_META, SessionJoins
from gateway.types import Principal

ALICE = Principal(agent="alice", role="developer")
MALLORY = Principal(agent="mallory", role="developer")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def joins(gateway: Gateway) -> SessionJoins:
    return SessionJoins(gateway.db, clock=Clock())


READ = "mcp__gateway__fs_read"


@pytest.mark.both_stores
def test_the_hooks_principal_finds_its_session_and_no_one_else_does(joins: SessionJoins) -> None:
    joins.remember("toolu_1", ALICE, READ, "trace-a")
    assert joins.trace_for("toolu_1", ALICE, "fs_read") == "trace-a"
    assert joins.trace_for("toolu_1", MALLORY, "fs_read") is None
    assert joins.trace_for("toolu_1", ALICE.model_copy(update={"role": "planner"}), "fs_read") is None, "role"
    assert joins.trace_for("toolu_1", ALICE.model_copy(update={"task": "T1"}), "fs_read") is None, "another task"
    assert joins.trace_for("toolu_1", ALICE, "fs_write") is None, "not the tool the hook named"
    assert joins.trace_for("toolu_2", ALICE, "fs_read") is None
    assert joins.trace_for(["toolu_1"], ALICE, "fs_read") is None, "an id that is not a string"
    joins.remember("x" * 201, ALICE, READ, "trace-a")
    assert joins.trace_for("x" * 201, ALICE, "fs_read") is None, "not an id Claude Code sends"


@pytest.mark.both_stores
def test_any_server_name_joins_the_tool_it_names(joins: SessionJoins) -> None:
    """Claude Code names a tool mcp__<server>__<tool>, the server as its config calls it: any name joins, if the
    rest binds the call (the id, the principal, the tool as Claude Code spells it)."""
    joins.remember("toolu_1", ALICE, "mcp__policy-gw__fs_read", "trace-a")
    joins.remember("toolu_2", ALICE, "mcp__a__b__up__get_item", "trace-a")  # "__" in its server name; "." spelt "_"
    joins.remember("toolu_3", ALICE, "mcp____fs_read", "trace-a")  # no server: not Claude Code's
    joins.remember("toolu_4", ALICE, "fs_read", "trace-a")
    assert joins.trace_for("toolu_1", ALICE, "fs_read") == "trace-a"
    assert joins.trace_for("toolu_2", ALICE, "up__get.item") == "trace-a"
    assert joins.trace_for("toolu_3", ALICE, "fs_read") is None
    assert joins.trace_for("toolu_4", ALICE, "fs_read") is None


@pytest.mark.both_stores
@pytest.mark.parametrize(
    "second",
    [
        (MALLORY, READ, "trace-m"),
        (MALLORY, READ, "trace-a"),
        (ALICE, READ, "trace-other"),
        (ALICE, "mcp__x__y", "trace-a"),
    ],
    ids=["agent", "same", "session", "tool"],
)
def test_an_id_claimed_twice_differently_joins_nobody(joins: SessionJoins, second: tuple[Principal, str, str]) -> None:
    joins.remember("toolu_1", ALICE, READ, "trace-a")
    joins.remember("toolu_1", *second)
    assert joins.trace_for("toolu_1", ALICE, "fs_read") is None
    assert joins.trace_for("toolu_1", second[0], "fs_read") is None
    assert joins.trace_for("toolu_1", second[0], "y") is None
    joins.remember("toolu_1", ALICE, READ, "trace-a")
    assert joins.trace_for("toolu_1", ALICE, "fs_read") is None, "poisoned until it expires"
    joins.remember("toolu_2", ALICE, READ, "trace-a")
    joins.remember("toolu_2", ALICE, READ, "trace-a")
    assert joins.trace_for("toolu_2", ALICE, "fs_read") == "trace-a", "the same claim again is no conflict"


@pytest.mark.both_stores
def test_entries_expire_and_are_bounded_in_number(gateway: Gateway) -> None:
    clock = Clock()
    joins = SessionJoins(gateway.db, ttl_s=60, size=3, clock=clock)
    joins.remember("toolu_1", ALICE, READ, "trace-a")
    clock.now += 59
    assert joins.trace_for("toolu_1", ALICE, "fs_read") == "trace-a"
    clock.now += 1
    assert joins.trace_for("toolu_1", ALICE, "fs_read") is None, "expired"
    joins.remember("toolu_2", ALICE, READ, "trace-a")
    assert len(joins) == 1, "the expired entry is dropped"
    for n in range(3, 6):
        clock.now += 1
        joins.remember(f"toolu_{n}", ALICE, READ, "trace-a")
    assert len(joins) == 3
    assert joins.trace_for("toolu_2", ALICE, "fs_read") is None, "the oldest went first"
    assert joins.trace_for("toolu_5", ALICE, "fs_read") == "trace-a"


def hook_event(tool: str, session: str, tool_use_id: str, cwd: Path) -> str:
    return json.dumps(
        {
            "session_id": session,
            "hook_event_name": "PreToolUse",
            "tool_name": tool,
            "tool_input": {"path": "README.md"},
            "tool_use_id": tool_use_id,
            "cwd": str(cwd),
        }
    )


async def post_hook(url: str, bearer: str, tool: str, tool_use_id: str, cwd: Path) -> dict[str, str]:
    """A PreToolUse of Alice's Claude Code session as Claude Code posts it: the hook's answer."""

    def post() -> dict[str, str]:
        body = hook_event(tool, "cc-alice", tool_use_id, cwd)
        headers = {"Authorization": f"Bearer {bearer}", "Content-Type": "application/json"}
        with httpx2.Client(timeout=60, trust_env=False) as http:
            response = http.post(f"{url}/hooks/claude-code", content=body, headers=headers)
        assert response.status_code == 200, response.text
        return dict(response.json().get("hookSpecificOutput", {}))

    return await anyio.to_thread.run_sync(post)


def traced_calls(config: GatewayConfig) -> list[tuple[str, str, str]]:
    """(agent, tool_use_id, trace) of each MCP call's final ledger row."""
    rows = [r for r in ledger_rows(Gateway(config)) if r.outcome != "started"]
    return [(r.principal["agent"], r.detail.get("tool_use_id"), r.trace_id) for r in rows]


ALICE_SESSION = session_trace("claude-code:cc-alice")
READ_ME = {"path": "README.md"}


@pytest.mark.anyio
async def test_an_mcp_call_joins_its_own_agents_session_only(config: GatewayConfig) -> None:
    alice = token(config, "developer", agent="alice")
    mallory = token(config, "developer", agent="mallory")
    repo = config.workspace

    with http_gateway(config.source) as url:
        # Alice's Claude Code announces its MCP call: no decision (Claude Code's own permissions apply, the
        # MCP call is judged when it arrives), and nothing vouched for a server its client calls "gateway"
        announced = await post_hook(url, alice, "mcp__gateway__fs_read", "toolu_alice", repo)
        assert announced == {}, announced
        # another server's tool is not the gateway's to wave through: a person decides, as before
        other = await post_hook(url, alice, "mcp__other__fs_read", "toolu_other", repo)
        assert other["permissionDecision"] == "deny" and "hook_untranslatable" in other["permissionDecisionReason"]

        # Mallory names Alice's tool use: traced in Mallory's own MCP session, not in Alice's
        async with http_client(url, mallory) as client:
            forged = await client.call_tool("fs_read", READ_ME, meta={TOOL_USE_META: "toolu_alice"})
            assert not forged.is_error
        # Alice's own call with the same id joins her Claude Code session
        async with http_client(url, alice) as client:
            joined = await client.call_tool("fs_read", READ_ME, meta={TOOL_USE_META: "toolu_alice"})
            assert not joined.is_error

    gateway = Gateway(config)
    hooks = ledger_rows(gateway, kind="hook")
    assert [r.tool for r in hooks] == ["mcp__other__fs_read"], "the announcement is not a decision: not recorded"
    assert hooks[0].trace_id == ALICE_SESSION
    calls = [r for r in ledger_rows(gateway) if r.outcome != "started"]
    assert [(r.principal["agent"], r.detail["tool_use_id"]) for r in calls] == [
        ("mallory", "toolu_alice"),
        ("alice", "toolu_alice"),
    ]
    assert calls[0].trace_id != ALICE_SESSION
    assert calls[1].trace_id == ALICE_SESSION
    assert {r.trace_id for r in ledger_rows(gateway) if r.call_id == calls[1].call_id} == {ALICE_SESSION}, "started too"


@pytest.mark.anyio
async def test_a_join_outlives_the_gateway_process_that_heard_the_hook(config: GatewayConfig) -> None:
    """The hook reaches one gateway process, which stops; the MCP calls reach a new one (a restart, or another
    replica): the join is in the store, and serves the hook's principal only - Mallory, presenting Alice's
    tool_use_id with his own credential, stays in his own MCP session's trace."""
    alice = token(config, "developer", agent="alice")
    mallory = token(config, "developer", agent="mallory")
    with http_gateway(config.source) as url:
        assert await post_hook(url, alice, "mcp__gateway__fs_read", "toolu_alice", config.workspace) == {}
    with http_gateway(config.source) as url:  # nothing of the first process is left
        async with http_client(url, mallory) as client:
            assert not (await client.call_tool("fs_read", READ_ME, meta={TOOL_USE_META: "toolu_alice"})).is_error
        async with http_client(url, alice) as client:
            assert not (await client.call_tool("fs_read", READ_ME, meta={TOOL_USE_META: "toolu_alice"})).is_error
            # the hook named fs_read: the same id on another tool is not that tool use
            assert not (await client.call_tool("fs_list", {"path": "."}, meta={TOOL_USE_META: "toolu_alice"})).is_error
    mallorys, alices, other_tool = traced_calls(config)
    assert mallorys[:2] == ("mallory", "toolu_alice") and mallorys[2] != ALICE_SESSION
    assert alices == ("alice", "toolu_alice", ALICE_SESSION)
    assert other_tool[:2] == ("alice", "toolu_alice") and other_tool[2] != ALICE_SESSION


@pytest.mark.anyio
async def test_a_stdio_server_joins_under_the_name_claude_codes_config_gives_it(config: GatewayConfig) -> None:
    """gateway.yaml names the gateway as Claude Code's config does (claude_code.mcp_servers): its tools' PreToolUse
    is the announcement; the MCP call reaches a stdio gateway Claude Code started (another process, no HTTP) and
    joins. A tool of a server named "gateway" (no longer this gateway's name) or "policy-gw__x" is held."""
    config = reconfigure(config, claude_code={"mcp_servers": ["policy-gw"]})
    alice = token(config, "developer", agent="alice")
    with http_gateway(config.source) as url:
        assert await post_hook(url, alice, "mcp__policy-gw__fs_read", "toolu_1", config.workspace) == {}
        for squatter in ("mcp__gateway__fs_read", "mcp__policy-gw__x__fs_read"):
            held = await post_hook(url, alice, squatter, "toolu_2", config.workspace)
            assert held["permissionDecision"] == "deny" and "hook_untranslatable" in held["permissionDecisionReason"]
    async with Client(stdio_server(config, alice)) as client:
        assert not (await client.call_tool("fs_read", READ_ME, meta={TOOL_USE_META: "toolu_1"})).is_error
    assert traced_calls(config) == [("alice", "toolu_1", ALICE_SESSION)]


@pytest.mark.parametrize("name", ["gate__way", "", "gate way", "_gw", "x" * 65])
def test_a_server_name_that_could_hide_another_is_a_config_error(config: GatewayConfig, name: str) -> None:
    with pytest.raises(ConfigError, match="claude_code"):
        reconfigure(config, claude_code={"mcp_servers": [name]})


@pytest.mark.anyio
async def test_the_command_hook_without_a_credential_joins_nothing(config: GatewayConfig) -> None:
    """Its --agent is whatever the command line says: a claim, not an identity, so its word joins nothing."""
    gateway = Gateway(config, isolated=False)
    raw = hook_event("mcp__gateway__fs_read", "cc-1", "toolu_1", config.workspace)
    call = await judge_command_hook(gateway.stacks.hook, raw, None, "developer", "alice")
    assert call.outcome == "allowed" and len(gateway.joins) == 0
    bearer = token(config, "developer", agent="alice")
    await judge_command_hook(gateway.stacks.hook, raw, bearer, "developer", "ignored")
    assert gateway.joins.trace_for("toolu_1", ALICE, "fs_read") == session_trace("claude-code:cc-1")
