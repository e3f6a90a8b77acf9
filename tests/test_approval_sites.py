"""Approvals bound to where the call runs: an approval a person gave on one channel or in one confinement
never lets the same call through another. One live `gateway serve --http` for the channels: a real MCP client
over streamable HTTP, Claude Code's HTTP hook (httpx, as Claude Code posts it) and the command hook (the
installed command, as Claude Code runs it), all as the same developer token. Each refused spend is held again
as a new pending approval, and the approval it could not use is named, with the reason, in its ledger row.
Confinement changes (the sandbox turned off, its limits changed) and approvals from a store older than the
binding use in-process gateways on one state dir."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import (
    http_client,
    inproc_client,
    ledger_rows,
    reconfigure,
    token,
)
from test_cli import on_a_terminal
from test_hook import event
from test_hook_http import Served, serve

from gateway.config import GatewayConfig
from gateway.digests import digest
from gateway.process import gateway_cli
from gateway.runtime import Gateway
from gateway.types import Principal

pytestmark = pytest.mark.anyio


class Live(Served):
    """The module's gateway and one developer's token for it, by the three ways that token reaches it."""

    async def mcp(self, command: str) -> dict[str, Any]:
        async with http_client(self.base, self.bearer) as client:
            result = await client.call_tool("shell_run", {"command": command})
        return dict(result.structured_content or {})

    def hook(self, command: str) -> dict[str, Any]:
        return self.decide("Bash", {"command": command})

    def command_hook(self, command: str) -> dict[str, Any]:
        argv = [sys.executable, "-m", "gateway", "--config", str(self.config.source), "hook", "claude-code"]
        stdin = event("Bash", {"command": command}, self.config.workspace)
        env = {**os.environ, "GATEWAY_TOKEN": self.bearer}
        done = subprocess.run([*argv, "--role", "developer"], input=stdin, capture_output=True, text=True, env=env)
        assert done.returncode == 0, done.stderr
        return dict(json.loads(done.stdout)["hookSpecificOutput"])

    def approve(self, approval_id: str) -> None:
        done = gateway_cli(self.config, "approvals", "approve", approval_id)
        assert done.returncode == 0, done.stderr

    def last(self, kind: str) -> Any:
        return self.rows(kind)[-1]

    def approval(self, approval_id: str) -> dict[str, Any]:
        shown = gateway_cli(self.config, "approvals", "show", approval_id, "--json")
        assert shown.returncode == 0, shown.stderr
        return dict(json.loads(shown.stdout))


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    yield from serve(Live, tmp_path_factory.mktemp("sites"))


def held_id(answer: dict[str, Any]) -> str:
    """The pending approval a hook's deny names."""
    assert answer["permissionDecision"] == "deny", answer
    reason = answer["permissionDecisionReason"]
    return reason.split("approval (", 1)[1].split(",", 1)[0]


def not_used(row: Any, approval_id: str) -> str:
    """Why ``row``'s call did not use ``approval_id`` (its ledger row names it), and that it was held again."""
    assert row.outcome == "asked", row
    [unused] = [u for u in row.detail["approvals_not_used"] if u["id"] == approval_id]
    assert row.detail["approval"]["answer"] == "pending" and row.detail["approval"]["id"] != approval_id
    return str(unused["why"])


async def test_an_mcp_approval_does_not_let_the_hook_run_the_call_unconfined(live: Live) -> None:
    command = 'eval "$PAYLOAD"; echo mcp-to-hook'
    asked = await live.mcp(command)
    assert asked["status"] == "approval_pending", asked
    mcp_id = asked["approval_id"]
    assert live.approval(mcp_id)["channel"] == "mcp:tools/call"
    live.approve(mcp_id)

    answer = live.hook(command)
    hook_id = held_id(answer)
    assert hook_id != mcp_id and f"Approval {mcp_id} does not apply here" in answer["permissionDecisionReason"]
    why = not_used(live.last("hook"), mcp_id)
    assert "MCP tools/call; sandboxed (bubblewrap)" in why and "Claude Code runs it itself, UNCONFINED" in why
    held = live.approval(hook_id)
    assert held["channel"] == "hook:http" and held["confinement"] == {"runs": "claude-code", "confined": False}
    assert held["request"]["approvals_not_used"][0]["id"] == mcp_id, "the reviewer sees what was not used"
    assert live.approval(mcp_id)["state"] == "approved", "still there for the channel it was given to"

    ran = await live.mcp(command)
    assert ran.get("exit_code") == 0 and "mcp-to-hook" in ran["stdout"], ran
    assert live.approval(mcp_id)["state"] == "used"


async def test_a_hook_approval_does_not_let_an_mcp_call_run(live: Live) -> None:
    command = 'eval "$PAYLOAD"; echo hook-to-mcp'
    hook_id = held_id(live.hook(command))
    live.approve(hook_id)

    asked = await live.mcp(command)
    assert asked["status"] == "approval_pending" and asked["approval_id"] != hook_id, asked
    assert [u["id"] for u in asked["approvals_not_used"]] == [hook_id], "the agent is told why"
    why = not_used(live.last("call"), hook_id)
    assert "Claude Code hook over HTTP" in why and "MCP tools/call; sandboxed" in why

    assert live.hook(command)["permissionDecision"] == "allow", "the hook's own approval, on its own channel"
    assert live.approval(hook_id)["state"] == "used"


async def test_an_http_hook_approval_is_not_the_command_hooks(live: Live) -> None:
    command = 'eval "$PAYLOAD"; echo http-to-command'
    http_id = held_id(live.hook(command))
    live.approve(http_id)

    command_id = held_id(live.command_hook(command))
    assert command_id != http_id
    assert "Claude Code hook over HTTP" in not_used(live.last("hook"), http_id)
    assert live.approval(command_id)["channel"] == "hook:command"

    live.approve(command_id)
    assert live.command_hook(command)["permissionDecision"] == "allow"
    assert live.hook(command)["permissionDecision"] == "allow", "each channel spends its own approval once"
    assert live.hook(command)["permissionDecision"] == "deny"


def test_list_and_show_name_the_channel_and_where_it_runs(live: Live) -> None:
    held_id(live.hook('eval "$PAYLOAD"; echo listed'))
    listed = on_a_terminal(live.config, "approvals", "list")
    assert "CHANNEL" in listed and "hook:http" in listed
    newest = json.loads(gateway_cli(live.config, "approvals", "list", "--json").stdout)[0]
    assert newest["channel"] == "hook:http" and newest["where"].startswith("Claude Code hook over HTTP")
    shown = on_a_terminal(live.config, "approvals", "show", newest["id"])
    assert "hook:http" in shown and "Claude Code runs it itself, UNCONFINED" in shown


def test_list_shows_the_command_and_reason_and_settles_in_bulk_after_confirmation(live: Live) -> None:
    """`gateway approvals list` shows what would run and why (not only a digest); approve/deny take several ids,
    or --agent/--tool, and settle several only once confirmed (--yes when no terminal asks)."""
    first = held_id(live.hook('eval "$PAYLOAD"; echo bulk-one'))
    second = held_id(live.hook('eval "$PAYLOAD"; echo bulk-two'))
    listed = on_a_terminal(live.config, "approvals", "list")
    assert "COMMAND" in listed and "REASON" in listed and "echo bulk-one" in listed and "echo bulk-two" in listed
    row = next(line for line in listed.splitlines() if first in line)
    assert "tiers." in row or "shell." in row or ":" in row.split("echo bulk-one", 1)[1], row
    unasked = gateway_cli(live.config, "approvals", "deny", first, second)
    assert unasked.returncode != 0 and "nothing settled" in unasked.stderr
    assert {live.approval(first)["state"], live.approval(second)["state"]} == {"pending"}
    done = gateway_cli(live.config, "approvals", "deny", first, second, "--yes", "--comment", "bulk", "--json")
    assert done.returncode == 0, done.stderr
    assert sorted(a["id"] for a in json.loads(done.stdout)["settled"]) == sorted([first, second])
    assert {live.approval(first)["state"], live.approval(second)["state"]} == {"denied"}
    again = gateway_cli(live.config, "approvals", "deny", first, second, "--yes", "--json")
    assert [r["id"] for r in json.loads(again.stdout)["refused"]] == [first, second], "already settled: said so"


@pytest.mark.parametrize("change", [{"mode": "off"}, {"cpu_s": 5}], ids=["sandbox-off", "limits"])
async def test_an_approval_given_in_one_confinement_is_not_spent_in_another(
    config: GatewayConfig, change: dict[str, Any]
) -> None:
    """A person approved a command for the sandbox gateway.yaml had then; the operator changed the sandbox since
    (turned it off, changed its limits): the retry is held again, naming the approval and both confinements."""
    bearer = token(config, "developer", agent="d1")
    command = 'eval "$PAYLOAD"; echo confined'
    async with inproc_client(Gateway(config), bearer) as client:
        asked = (await client.call_tool("shell_run", {"command": command})).structured_content
    Gateway(config).approvals.settle(asked["approval_id"], approve=True, by="a person")

    changed = reconfigure(config, sandbox=change)
    gateway = Gateway(changed)
    async with inproc_client(gateway, bearer) as client:
        again = (await client.call_tool("shell_run", {"command": command})).structured_content
    assert again["status"] == "approval_pending" and again["approval_id"] != asked["approval_id"], again
    [unused] = again["approvals_not_used"]
    assert unused["id"] == asked["approval_id"] and "sandboxed (bubblewrap)" in unused["why"]
    assert ("UNCONFINED (sandbox off)" in unused["why"]) == (change == {"mode": "off"})
    assert ledger_rows(gateway)[-1].detail["approvals_not_used"] == again["approvals_not_used"]
    assert gateway.approvals.get(asked["approval_id"])["state"] == "approved", "not spent"


def downgrade_to_schema_5(config: GatewayConfig) -> None:
    """The approvals table as a gateway before schema 6 left it: no channel, no confinement (and none of the
    later schemas' tables)."""
    with sqlite3.connect(config.store_path) as db:
        for table in ("flow_labels", "budgets", "call_tasks", "rule_counts", "call_blocks", "session_joins"):  # 11-15
            db.execute(f"DROP TABLE {table}")
        for table in ("calls", "call_rules", "call_counts", "trace_summaries", "trace_steps"):  # schema 10
            db.execute(f"DROP TABLE {table}")
        db.execute("DROP INDEX ledger_kind")
        db.execute("DROP INDEX tasks_trace")
        for table in ("artifacts", "artifact_puts", "artifact_conflicts", "attestations"):  # schemas 9 and 8
            db.execute(f"DROP TABLE {table}")
        for table in ("upstream_pins", "upstream_changes", "upstream_locks"):  # schema 7
            db.execute(f"DROP TABLE {table}")
        db.execute("DROP INDEX approvals_call")
        db.execute("ALTER TABLE approvals DROP COLUMN channel")
        db.execute("ALTER TABLE approvals DROP COLUMN confinement")
        db.execute("PRAGMA user_version=5")


def old_approval(config: GatewayConfig, approval_id: str, state: str, arguments: dict[str, Any]) -> None:
    principal = Principal(agent="d1", role="developer")
    old_key = digest(
        {"agent": "d1", "role": "developer", "task": None, "tool": "shell_run", "arguments": digest(arguments)}
    )
    with sqlite3.connect(config.store_path) as db:
        db.execute(
            "INSERT INTO approvals (id, call_key, state, created, expires, principal, tool, arguments_digest, request, "
            "settled_by) VALUES (?, ?, ?, '2026-01-01T00:00:00', '2999-01-01T00:00:00', ?, 'shell_run', ?, ?, ?)",
            (
                approval_id,
                old_key,
                state,
                principal.model_dump_json(),
                digest(arguments),
                json.dumps({"arguments": arguments}),
                "alice" if state == "approved" else None,
            ),
        )


async def test_approvals_from_before_the_binding_authorise_nothing(config: GatewayConfig) -> None:
    """A store upgraded from schema 5: its approvals name no channel. An approved one is not spent by any call
    (the retry is held, naming it); a pending one cannot be approved, with the reason; list and show say so."""
    Gateway(config)  # a state dir at the current schema, then taken back to 5 as an older gateway left it
    downgrade_to_schema_5(config)
    arguments = {"command": 'eval "$PAYLOAD"; echo old'}
    old_approval(config, "ap-oldapproved", "approved", arguments)
    old_approval(config, "ap-oldpending", "pending", {"command": "sudo true"})

    gateway = Gateway(config)  # upgrades the file on open
    async with inproc_client(gateway, token(config, "developer", agent="d1")) as client:
        asked = (await client.call_tool("shell_run", arguments)).structured_content
    assert asked["status"] == "approval_pending", asked
    [unused] = asked["approvals_not_used"]
    assert unused["id"] == "ap-oldapproved" and "authorises no call" in unused["why"]
    assert gateway.approvals.get("ap-oldapproved")["state"] == "approved", "not spent"

    refused = gateway_cli(config, "approvals", "approve", "ap-oldpending")
    assert refused.returncode != 0 and "authorises no call" in refused.stderr, refused.stderr
    assert gateway.approvals.get("ap-oldpending")["state"] == "pending"
    assert gateway_cli(config, "approvals", "deny", "ap-oldpending").returncode == 0, "a denial is harmless"
    assert "none: authorises nothing" in on_a_terminal(config, "approvals", "list", "--all")
    assert "authorises no call" in on_a_terminal(config, "approvals", "show", "ap-oldapproved")


def test_every_channel_that_consumes_an_approval_has_its_own_key() -> None:
    """The key differs by channel and by any part of the confinement, and nothing else changes it."""
    from gateway.approvals import CallSite, call_key

    who = Principal(agent="a", role="developer")
    sandbox = {"runs": "sandbox", "mode": "bubblewrap", "writable": ["/w"], "network": []}
    sites = [
        CallSite("mcp:tools/call", sandbox),
        CallSite("mcp:tools/call", {**sandbox, "network": ["pypi.org"]}),
        CallSite("mcp:tools/call", {**sandbox, "writable": ["/w", "/x"]}),
        CallSite("mcp:tools/call", {**sandbox, "mode": "off"}),
        CallSite("hook:http", {"runs": "claude-code", "confined": False}),
        CallSite("hook:command", {"runs": "claude-code", "confined": False}),
        CallSite("mcp:resources/read", {"runs": "gateway", "confined": False}),
    ]
    keys = {call_key(who, "shell_run", {"command": "x"}, site) for site in sites}
    assert len(keys) == len(sites)
    assert call_key(who, "shell_run", {"command": "x"}, sites[0]) == call_key(
        who, "shell_run", {"command": "x"}, CallSite("mcp:tools/call", dict(sandbox))
    )
