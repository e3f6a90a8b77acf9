"""The real Claude Code (npm @anthropic-ai/claude-code, `claude -p`) through the gateway at once as its HTTP
PreToolUse hook and as its MCP server, driven by a scripted model (tests/servers/scripted_anthropic.py).

The settings are examples/claude-code/settings.json and .mcp.json as a user copies them, with
the gateway's URL filled in; Claude Code runs in a temporary HOME with a dummy API key.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import NPM_MODULES, http_gateway, ledger_rows, stdio_server, token
from servers.scripted_anthropic import ScriptedModel, text, tool_use
from test_workers import gateway_cli

from gateway.config import GatewayConfig
from gateway.judge.situate import session_trace
from gateway.runtime import Gateway

CLAUDE = NPM_MODULES / ".bin" / "claude"
EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "claude-code"
pytestmark = pytest.mark.skipif(not CLAUDE.exists(), reason="run `make test` to install Claude Code from npm")

ALLOWED = "echo allowed-by-the-gateway > allowed.txt"
HELD = "cat /etc/hostname > stolen.txt"  # reads outside the workspace: tier 3, held for a person
SCRIPT = [
    [tool_use("Bash", {"command": ALLOWED, "description": "write a file"})],
    [tool_use("Bash", {"command": HELD, "description": "copy a file from outside"})],
    [tool_use("mcp__gateway__fs_write", {"path": "mcp.txt", "content": "written over MCP\n"})],
    [text("All three calls were made.")],
]


def settings_for(url: str, home: Path) -> tuple[Path, Path]:
    """The example settings (HTTP hook) and MCP config, pointed at the gateway under test."""
    settings = (EXAMPLES / "settings.json").read_text().replace("http://127.0.0.1:8787", url)
    mcp = (EXAMPLES / ".mcp.json").read_text().replace("http://127.0.0.1:8787", url)
    (home / "settings.json").write_text(settings)
    (home / "mcp.json").write_text(mcp)
    return home / "settings.json", home / "mcp.json"


def claude(
    repo: Path, home: Path, model: str, gateway_url: str, bearer: str, written: tuple[Path, Path] | None = None
) -> subprocess.CompletedProcess[str]:
    settings, mcp = written or settings_for(gateway_url, home)
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "ANTHROPIC_BASE_URL": model,
        "ANTHROPIC_API_KEY": "sk-ant-scripted-model-dummy",
        "GATEWAY_TOKEN": bearer,
        "ENABLE_TOOL_SEARCH": "false",  # offer the gateway's tools directly
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
    }
    argv = [str(CLAUDE), "-p", "Run the scripted calls.", "--output-format", "json"]
    argv += ["--settings", str(settings), "--mcp-config", str(mcp), "--strict-mcp-config"]
    argv += ["--allowedTools", "Bash,mcp__gateway"]  # -p refuses tools nobody allowed; the hook still judges
    return subprocess.run(
        argv, cwd=repo, env=env, capture_output=True, text=True, timeout=240, stdin=subprocess.DEVNULL
    )


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    (tmp_path / "home" / ".claude").mkdir(parents=True)
    yield tmp_path / "home"


def result_text(block: dict[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, list):
        return "\n".join(str(c.get("text", "")) for c in content if isinstance(c, dict))
    return str(content)


def test_claude_code_through_the_http_hook_and_mcp(config: GatewayConfig, repo: Path, home: Path) -> None:
    bearer = token(config, "developer", agent="claude-code-1")
    with ScriptedModel(SCRIPT).serve() as model, http_gateway(config.source) as url:
        done = claude(repo, home, model.url, url, bearer)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "All three calls were made." in done.stdout

    # what ran, and what did not
    assert (repo / "allowed.txt").read_text() == "allowed-by-the-gateway\n"
    assert not (repo / "stolen.txt").exists()
    assert (repo / "mcp.txt").read_text() == "written over MCP\n"

    # what the model was told: the gateway's reason and the approval that would let the call run
    held = result_text(model.tool_results["toolu_script_1_0"])
    assert "paths.outside_workspace" in held and "gateway approvals approve ap-" in held, held
    assert "error" not in result_text(model.tool_results["toolu_script_2_0"]).lower()

    # what the gateway recorded: both Bash calls (hook), the MCP call, each with agent, role and tool
    gateway = Gateway(config)
    hooks = [r for r in ledger_rows(gateway, kind="hook") if r.detail.get("claude_tool") == "Bash"]
    assert [(r.outcome, r.tool) for r in hooks] == [("allowed", "shell_run"), ("asked", "shell_run")]
    calls = [r for r in ledger_rows(gateway, kind="call") if r.outcome != "started"]
    assert [(r.tool, r.outcome) for r in calls] == [("fs_write", "ok")]
    for row in [*hooks, *calls]:
        assert row.principal["agent"] == "claude-code-1" and row.principal["role"] == "developer"
    results = ledger_rows(gateway, kind="hook_result")
    assert [r.detail["tool_use_id"] for r in results] == ["toolu_script_0_0"], "only the allowed Bash ran"

    # one session, one trace: the hook announced the MCP call (its PreToolUse on mcp__gateway__*, allowed and
    # not recorded: the MCP call is judged and recorded once), and the call came with the same tool_use_id
    assert calls[0].detail["tool_use_id"] == "toolu_script_2_0"
    listed = json.loads(gateway_cli(config, "trace", "list", "--json").stdout)["traces"]
    assert len(listed) == 1, listed
    shown = json.loads(gateway_cli(config, "trace", "show", listed[0]["trace_id"], "--json").stdout)
    entries = [(e["kind"], e["tool"], e["outcome"]) for e in shown["entries"] if e["type"] == "call"]
    assert entries == [("hook", "shell_run", "allowed"), ("hook", "shell_run", "asked"), ("call", "fs_write", "ok")]


def test_a_bad_token_blocks_every_built_in_call(config: GatewayConfig, repo: Path, home: Path) -> None:
    """onFailure: block: the hook's 401 is a block, not a pass."""
    script = [[tool_use("Bash", {"command": ALLOWED})], [text("finished")]]
    with ScriptedModel(script).serve() as model, http_gateway(config.source) as url:
        done = claude(repo, home, model.url, url, "e30.e30.forged")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert not (repo / "allowed.txt").exists()
    refused = result_text(model.tool_results["toolu_script_0_0"])
    assert "HTTP 401" in refused and "onFailure" in refused, refused
    auth = ledger_rows(Gateway(config), kind="auth")
    assert auth and auth[-1].outcome == "denied"


def test_claude_code_with_the_gateway_over_stdio_is_one_session_too(
    config: GatewayConfig, repo: Path, home: Path
) -> None:
    """The gateway as a stdio MCP server Claude Code starts itself (a process of its own, beside the HTTP gateway
    its hook asks): Claude Code puts the tool use's id in the tools/call's _meta over stdio as over HTTP, and the
    join is in the store both processes share, so the session is still one trace."""
    bearer = token(config, "developer", agent="claude-code-1")
    script = [[tool_use("mcp__gateway__fs_write", {"path": "mcp.txt", "content": "over stdio\n"})], [text("done")]]
    with ScriptedModel(script).serve() as model, http_gateway(config.source) as url:
        settings, mcp = settings_for(url, home)
        server = stdio_server(config, bearer)
        stdio = {"type": "stdio", "command": server.command, "args": server.args, "env": {"GATEWAY_TOKEN": bearer}}
        mcp.write_text(json.dumps({"mcpServers": {"gateway": stdio}}))
        done = claude(repo, home, model.url, url, bearer, written=(settings, mcp))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert (repo / "mcp.txt").read_text() == "over stdio\n"
    gateway = Gateway(config)
    [call] = [r for r in ledger_rows(gateway, kind="call") if r.outcome != "started"]
    assert call.detail["tool_use_id"] == "toolu_script_0_0", call.detail  # sent over stdio: its only MCP server
    assert call.trace_id == session_trace(f"claude-code:{json.loads(done.stdout)['session_id']}")
