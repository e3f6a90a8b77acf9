"""The agent's own controls against every writer, on a live gateway.

A red team wrote `.claude/settings.local.json` with `{"disableAllHooks": true}` through `fs_write` at tier 1;
its next Claude Code session ran a tier-3 command with no ledger row. Here every class of protected path
(policies/lib/controls.rego: agent settings and hooks, MCP servers, instructions, editor and CI configuration, git
hooks, core.hooksPath's directory) is written by every writer the gateway judges: the fs tools and shell_run
from a real MCP client that approves its own elicitations, and Claude Code's Write, Edit, MultiEdit,
NotebookEdit and Bash through the HTTP hook and the command hook. Each is held for a person, recorded with the
rule and the path, and nothing lands. Ordinary writes beside them stay tier 1 or 2.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as mt
import pytest
from conftest import http_client, http_gateway, ledger_rows, make_repo, text_of, token, workspace_for_tests
from test_hook import event, run_hook

from gateway.config import GatewayConfig
from gateway.effects.git_hooks import hooks_path
from gateway.runtime import Gateway

pytestmark = pytest.mark.anyio

# What the workspace holds before the agent starts: the controls a developer committed.
EXISTING = {
    ".claude/settings.json": '{"hooks": {"PreToolUse": [{"matcher": "*", "hooks": []}]}}\n',
    ".mcp.json": '{"mcpServers": {}}\n',
    "CLAUDE.md": "# How to work here\n",
    ".vscode/settings.json": "{}\n",
    ".github/workflows/ci.yml": "on: push\n",
}

# One path per class of control, with the rule that names it.
CONTROLS = {
    ".claude/settings.local.json": "paths.agent_controls",
    ".claude/settings.json": "paths.agent_controls",
    ".claude/hooks/guard.sh": "paths.agent_controls",
    ".claude/agents/helper.md": "paths.agent_controls",
    ".claude/commands/ship.md": "paths.agent_controls",
    ".mcp.json": "paths.agent_controls",
    ".cursor/mcp.json": "paths.agent_controls",
    ".codex/config.toml": "paths.agent_controls",
    "CLAUDE.md": "paths.agent_instructions",
    "AGENTS.md": "paths.agent_instructions",
    ".vscode/tasks.json": "paths.editor_config",
    ".devcontainer/devcontainer.json": "paths.editor_config",
    ".github/workflows/ci.yml": "paths.ci_config",
    ".husky/pre-commit": "paths.git_hooks",
    ".git/hooks/pre-commit": "paths.git_internals",
    "scripts/hooks/pre-push": "paths.git_hooks",  # core.hooksPath points there
}


async def approve_everything(context: Any, params: mt.ElicitRequestParams) -> mt.ElicitResult:
    return mt.ElicitResult(action="accept", content={"approve": True})


class Live:
    def __init__(self, config: GatewayConfig, url: str) -> None:
        self.config = config
        self.url = url
        self.repo = config.workspace
        self.bearer = token(config, "developer", agent="dev-1")
        self.http = httpx2.Client(timeout=60, trust_env=False)
        self.before = self.snapshot()

    def snapshot(self) -> dict[str, str | None]:
        return {rel: self.read(rel) for rel in CONTROLS}

    def read(self, rel: str) -> str | None:
        path = self.repo / rel
        return path.read_text() if path.is_file() else None

    def hook(self, tool: str, tool_input: dict[str, Any]) -> dict[str, Any]:
        response = self.http.post(
            f"{self.url}/hooks/claude-code",
            content=event(tool, tool_input, self.repo),
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {self.bearer}"},
        )
        assert response.status_code == 200, response.text
        return dict(response.json()["hookSpecificOutput"])

    def last(self, kind: str) -> Any:
        return ledger_rows(Gateway(self.config), kind=kind)[-1]

    def assert_untouched(self) -> None:
        assert self.snapshot() == self.before, "a protected path changed"
        assert not (self.repo / ".claude.off").exists() and not (self.repo / "c").exists()


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    repo = make_repo(tmp_path_factory.mktemp("controls") / "repo")
    for rel, text in EXISTING.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    subprocess.run(["git", "-C", str(repo), "config", "core.hooksPath", "scripts/hooks"], check=True)
    config = workspace_for_tests(repo)
    with http_gateway(config.source) as url:
        live = Live(config, url)
        yield live
        live.http.close()


def held(result: Any) -> bool:
    return (result.structured_content or {}).get("status") == "approval_pending"


def assert_recorded(row: Any, rule: str, path: str) -> None:
    """The ledger says why: the rule, and the path named in the reason."""
    assert row.decision["tier"] == 3 and rule in row.decision["rules"], row.decision
    assert any(path in reason for reason in row.decision["reasons"]), row.decision


async def test_the_red_team_write_is_held_and_recorded(live: Live) -> None:
    async with http_client(live.url, live.bearer, elicitation_callback=approve_everything) as client:
        result = await client.call_tool(
            "fs_write", {"path": ".claude/settings.local.json", "content": '{"disableAllHooks": true}'}
        )
    assert held(result), text_of(result)
    assert "configures the agent's own controls" in text_of(result)
    assert_recorded(live.last("call"), "paths.agent_controls", ".claude/settings.local.json")
    live.assert_untouched()


async def test_every_control_by_every_fs_tool_is_held(live: Live) -> None:
    async with http_client(live.url, live.bearer, elicitation_callback=approve_everything) as client:
        for rel, rule in CONTROLS.items():
            calls: list[tuple[str, dict[str, Any]]] = [("fs_write", {"path": rel, "content": "x"})]
            if live.before[rel] is not None:
                old = live.before[rel][:2]
                calls += [
                    ("fs_edit", {"path": rel, "old_string": old, "new_string": "zz"}),
                    ("fs_delete", {"path": rel}),
                ]
            for tool, arguments in calls:
                result = await client.call_tool(tool, arguments)
                # .git is the gateway's to keep: refused outright, or held like the rest
                assert held(result) or (rel.startswith(".git/") and result.is_error), (tool, rel, text_of(result))
                if held(result):
                    assert_recorded(live.last("call"), rule, rel)
    live.assert_untouched()


def shell_writes(rel: str) -> list[str]:
    """Every way a command writes ``rel``: redirections, tee, cp, mv, sed -i, truncate, a link, a cd."""
    parent = str(Path(rel).parent)
    name = Path(rel).name
    return [
        f"mkdir -p {parent} && echo x > {rel}",
        f"echo x >> {rel}",
        f"echo x | tee {rel}",
        f"cp src/app.py {rel}",
        f"sed -i s/a/b/ {rel}",
        f"truncate -s 0 {rel}",
        f"rm -f {rel}",
        f"echo x > src/../{rel}",
        f"echo x > {rel.upper()}",
        f"cd {parent} && echo x > {name}",
        f"python3 -c \"open('{rel}', 'w').write('x')\"",
    ]


# Every writer on a few classes, and every class by two writers: the product would be the same rules again.
FULLY = (".claude/settings.local.json", ".mcp.json", "CLAUDE.md")
SHELL_CASES = [(rel, command) for rel in CONTROLS for command in shell_writes(rel)[: None if rel in FULLY else 2]]


async def test_every_control_by_every_shell_writer_is_held(live: Live) -> None:
    whole_directories = ["mv .claude .claude.off", "cp -r src/. .claude", "rm -rf ./", "ln -s .claude c"]
    async with http_client(live.url, live.bearer, elicitation_callback=approve_everything) as client:
        for rel, command in SHELL_CASES:
            result = await client.call_tool("shell_run", {"command": command})
            assert held(result), (command, text_of(result))
            row = live.last("call")
            assert row.decision["tier"] == 3, (command, row.decision)
            if not command.startswith("python3"):
                assert CONTROLS[rel] in row.decision["rules"], (command, row.decision)
        for command in whole_directories:
            result = await client.call_tool("shell_run", {"command": command})
            assert held(result), (command, text_of(result))
            assert "paths.agent_controls" in live.last("call").decision["rules"], command
    live.assert_untouched()


def hook_inputs(repo: Path, rel: str) -> list[tuple[str, dict[str, Any]]]:
    path = str(repo / rel)
    return [
        ("Write", {"file_path": path, "content": '{"disableAllHooks": true}'}),
        ("Bash", {"command": f"echo '{{}}' > {rel}"}),
        ("Edit", {"file_path": path, "old_string": "a", "new_string": "b"}),
        ("MultiEdit", {"file_path": path, "edits": [{"old_string": "a", "new_string": "b"}]}),
        ("NotebookEdit", {"notebook_path": path, "new_source": "x"}),
    ]


async def test_claude_codes_built_in_tools_are_held_through_the_hook(live: Live) -> None:
    for rel, rule in CONTROLS.items():
        for tool, tool_input in hook_inputs(live.repo, rel)[: None if rel in FULLY else 2]:
            answer = live.hook(tool, tool_input)
            assert answer["permissionDecision"] == "deny", (tool, rel, answer)
            assert "tier 3" in answer["permissionDecisionReason"] and "gateway approvals approve" in str(answer)
            row = live.last("hook")
            assert row.detail["claude_tool"] == tool and row.detail["approval"]["answer"] == "pending"
            assert_recorded(row, rule, rel)
    live.assert_untouched()


def test_the_command_hook_holds_them_too(live: Live) -> None:
    path = str(live.repo / ".claude" / "settings.local.json")
    stdin = event("Write", {"file_path": path, "content": '{"disableAllHooks": true}'}, live.repo)
    done = run_hook(live.config, stdin)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)["hookSpecificOutput"]
    assert answer["permissionDecision"] == "deny" and "agent's own controls" in answer["permissionDecisionReason"]
    live.assert_untouched()


async def test_ordinary_writes_beside_them_are_not_held(live: Live) -> None:
    async with http_client(live.url, live.bearer, elicitation_callback=approve_everything) as client:
        wrote = await client.call_tool("fs_write", {"path": "src/notes.md", "content": "claude.md and .claude"})
        assert not wrote.is_error and not held(wrote), text_of(wrote)
        assert live.last("call").decision["tier"] == 1
        ran = await client.call_tool("shell_run", {"command": "echo x > .github/ISSUE_TEMPLATE.md && ls .claude"})
        assert not ran.is_error and not held(ran), text_of(ran)
        assert live.last("call").decision["tier"] == 1
        edited = await client.call_tool("shell_run", {"command": "sed -i s/answer/reply/ src/app.py"})
        assert not held(edited) and live.last("call").decision["tier"] == 2
    answer = live.hook("Write", {"file_path": str(live.repo / "src" / "new.py"), "content": "x = 1\n"})
    assert answer["permissionDecision"] == "allow", answer
    live.assert_untouched()


def test_the_hooks_path_is_read_from_the_repository(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    assert hooks_path(repo) is None
    for value, seen in [("scripts/hooks", "scripts/hooks"), ("./tools/../githooks", "githooks"), ("/etc/hooks", None)]:
        subprocess.run(["git", "-C", str(repo), "config", "core.hooksPath", value], check=True)
        assert hooks_path(repo) == seen, value
