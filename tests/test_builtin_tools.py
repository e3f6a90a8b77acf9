"""Built-in workspace tools through the whole pipeline, with a real SDK client in both protocol eras."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import add_role, inproc_client, ledger_rows, text_of, token

pytestmark = pytest.mark.anyio


def running(argv: list[str]) -> list[int]:
    """Host pids of processes running exactly ``argv`` (not zombies waiting for a reaper). The sandbox has
    its own PID namespace, so a pid a command prints is not the host's."""
    wanted = "\0".join(argv) + "\0"
    found = []
    for entry in Path("/proc").iterdir():
        try:
            matches = entry.name.isdigit() and (entry / "cmdline").read_text() == wanted
            if matches and (entry / "stat").read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X"):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


MODES = ["auto", "legacy"]  # 2026-07-28 and 2025-11-25


@pytest.fixture
def maintainer(config: Any) -> str:
    """A role that may use every built-in tool without a task claim (list it before `gateway`)."""
    add_role(config, "maintainer", ["fs_*", "shell_run", "git_*"], max_tier=2)
    return token(config, "maintainer", agent="m1")


@pytest.mark.parametrize("mode", MODES)
async def test_read_write_edit_delete(maintainer: str, gateway: Any, repo: Path, mode: str) -> None:
    async with inproc_client(gateway, maintainer, mode) as client:
        result = await client.call_tool("fs_write", {"path": "notes/todo.md", "content": "one\ntwo\nthree\n"})
        assert not result.is_error, text_of(result)
        assert (repo / "notes" / "todo.md").read_text() == "one\ntwo\nthree\n"

        result = await client.call_tool("fs_read", {"path": "notes/todo.md", "offset": 1, "limit": 1})
        assert text_of(result) == "two\n"

        result = await client.call_tool("fs_edit", {"path": "notes/todo.md", "old_string": "two", "new_string": "2"})
        assert not result.is_error
        assert (repo / "notes" / "todo.md").read_text() == "one\n2\nthree\n"

        result = await client.call_tool("fs_delete", {"path": "notes/todo.md"})
        assert not result.is_error and not (repo / "notes" / "todo.md").exists()


async def test_edit_refuses_ambiguous_and_missing_matches(maintainer: str, gateway: Any, repo: Path) -> None:
    (repo / "dup.txt").write_text("x = 1\nx = 1\n")
    async with inproc_client(gateway, maintainer) as client:
        result = await client.call_tool("fs_edit", {"path": "dup.txt", "old_string": "x = 1", "new_string": "x = 2"})
        assert result.is_error and "occurs 2 times" in text_of(result)
        result = await client.call_tool("fs_edit", {"path": "dup.txt", "old_string": "y", "new_string": "z"})
        assert result.is_error and "not found" in text_of(result)
    assert (repo / "dup.txt").read_text() == "x = 1\nx = 1\n"


async def test_list_and_search(maintainer: str, gateway: Any, repo: Path) -> None:
    async with inproc_client(gateway, maintainer) as client:
        listing = text_of(await client.call_tool("fs_list", {"path": ".", "recursive": True}))
        assert "src/app.py" in listing and "README.md" in listing
        assert ".gateway" not in listing and ".git" not in listing
        hits = text_of(await client.call_tool("fs_search", {"pattern": r"return \d+", "glob": "*.py"}))
        assert hits.startswith("src/app.py:2:")
        bad = await client.call_tool("fs_search", {"pattern": "(unclosed"})
        assert bad.is_error and "'pattern'" in text_of(bad)


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("fs_read", {"path": "../outside.txt"}),
        ("fs_read", {"path": "/etc/passwd"}),
        ("fs_write", {"path": "../escape.txt", "content": "x"}),
        ("fs_write", {"path": "{state}/roles/evil.yaml", "content": "x"}),
        ("fs_write", {"path": "gateway.yaml", "content": "x"}),
        ("fs_delete", {"path": "{state}/gateway.db"}),
        ("fs_read", {"path": "{state}/keys/active"}),
        ("shell_run", {"command": "ls", "cwd": ".."}),
    ],
)
async def test_paths_that_escape_are_refused_and_recorded(
    maintainer: str, gateway: Any, repo: Path, tool: str, arguments: dict[str, Any]
) -> None:
    before = (repo / "gateway.yaml").read_text()
    state = gateway.config.state
    arguments = {k: v.replace("{state}", str(state)) if isinstance(v, str) else v for k, v in arguments.items()}
    async with inproc_client(gateway, maintainer) as client:
        result = await client.call_tool(tool, arguments)
    assert result.is_error
    assert result.structured_content["error"]["code"] == "path_outside_workspace"
    assert not (repo.parent / "escape.txt").exists()
    assert (repo / "gateway.yaml").read_text() == before
    assert not (state / "roles" / "evil.yaml").exists() and (state / "gateway.db").exists()
    last = ledger_rows(gateway)[-1]
    assert last.tool == tool and last.outcome == "invalid"


async def test_symlink_escape_is_refused(maintainer: str, gateway: Any, repo: Path, tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("top secret")
    os.symlink(tmp_path / "secret.txt", repo / "innocent.txt")
    async with inproc_client(gateway, maintainer) as client:
        result = await client.call_tool("fs_read", {"path": "innocent.txt"})
    assert result.is_error and "top secret" not in text_of(result)


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({}, "path"),
        ({"path": 7}, "path"),
        ({"path": "a", "limit": 0}, "limit"),
        ({"path": "a", "colour": "red"}, "colour"),
    ],
)
async def test_schema_errors_name_the_field(maintainer: str, gateway: Any, arguments: Any, field: str) -> None:
    async with inproc_client(gateway, maintainer) as client:
        result = await client.call_tool("fs_read", arguments)
    assert result.is_error
    assert result.structured_content["error"]["code"] == "invalid_arguments"
    assert f"'{field}'" in text_of(result)
    assert ledger_rows(gateway)[-1].outcome == "invalid"


async def test_oversized_arguments_are_refused(maintainer: str, gateway: Any, repo: Path) -> None:
    async with inproc_client(gateway, maintainer) as client:
        result = await client.call_tool("fs_write", {"path": "big.txt", "content": "x" * 1_100_000})
    assert result.is_error and result.structured_content["error"]["code"] == "arguments_too_large"
    assert not (repo / "big.txt").exists()


async def test_unknown_tool_is_refused_and_recorded(maintainer: str, gateway: Any) -> None:
    async with inproc_client(gateway, maintainer) as client:
        result = await client.call_tool("fs_raed", {"path": "README.md"})
    assert result.is_error and result.structured_content["error"]["code"] == "unknown_tool"
    assert ledger_rows(gateway)[-1].tool == "fs_raed"


async def test_every_tool_has_a_description(maintainer: str, gateway: Any) -> None:
    async with inproc_client(gateway, maintainer) as client:
        tools = (await client.list_tools()).tools
    assert {t.name for t in tools} >= {"fs_read", "fs_write", "fs_edit", "fs_delete", "shell_run", "git_diff"}
    assert all(t.description and len(t.description) > 20 for t in tools)


async def test_shell_run_exit_code_output_and_env(maintainer: str, gateway: Any, repo: Path) -> None:
    async with inproc_client(gateway, maintainer) as client:
        result = await client.call_tool("shell_run", {"command": "pwd; echo oops >&2; exit 3", "cwd": "src"})
        facts = result.structured_content
        assert facts["exit_code"] == 3 and facts["stdout"].strip() == str(repo / "src")
        assert facts["stderr"].strip() == "oops"
        env = (await client.call_tool("shell_run", {"command": "env"})).structured_content["stdout"]
    assert "GATEWAY_TOKEN" not in env and maintainer not in env


async def test_shell_run_caps_output(maintainer: str, gateway: Any) -> None:
    async with inproc_client(gateway, maintainer) as client:
        result = await client.call_tool(
            "shell_run", {"command": "head -c 5000 /dev/zero | tr '\\0' a", "max_output_bytes": 100}
        )
    assert result.structured_content["stdout"].startswith("a" * 100)
    assert "truncated: 4900 more bytes" in result.structured_content["stdout"]


async def test_shell_run_timeout_kills_the_whole_group(maintainer: str, gateway: Any, repo: Path) -> None:
    started = time.monotonic()
    async with inproc_client(gateway, maintainer) as client:
        result = await client.call_tool(
            "shell_run", {"command": "sleep 31.25 & echo started > child.txt; wait", "timeout_s": 1.5}
        )
    assert time.monotonic() - started < 10
    assert result.is_error and result.structured_content["timed_out"]
    assert (repo / "child.txt").read_text() == "started\n"
    deadline = time.monotonic() + 10  # killing the sandbox's PID 1 kills its namespace; wait for the kernel
    while running(["sleep", "31.25"]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert running(["sleep", "31.25"]) == []
    assert ledger_rows(gateway)[-1].outcome == "error"


async def test_shell_run_reports_progress(maintainer: str, gateway: Any) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with inproc_client(gateway, maintainer, mode="legacy") as client:
        result = await client.call_tool("shell_run", {"command": "sleep 2.5; echo done"}, progress_callback=on_progress)
    assert result.structured_content["stdout"].strip() == "done"
    assert len(seen) >= 2 and all("running" in (m or "") for _, _, m in seen)


async def test_git_tools(maintainer: str, gateway: Any, repo: Path) -> None:
    (repo / "src" / "app.py").write_text("def answer():\n    return 42\n")
    async with inproc_client(gateway, maintainer) as client:
        status = text_of(await client.call_tool("git_status", {}))
        diff = text_of(await client.call_tool("git_diff", {"paths": ["src"]}))
        log = text_of(await client.call_tool("git_log", {"max_count": 1}))
        option = await client.call_tool("git_diff", {"ref": "--output=/tmp/x"})
    assert "M src/app.py" in status and ".gateway" not in status
    assert "+    return 42" in diff
    assert "initial" in log
    assert option.is_error and "'ref'" in text_of(option)


async def test_every_call_is_recorded_and_the_chain_verifies(maintainer: str, gateway: Any) -> None:
    async with inproc_client(gateway, maintainer) as client:
        await client.call_tool("fs_read", {"path": "README.md"})
        await client.call_tool("fs_read", {"path": "../nope"})
        await client.call_tool("no_such_tool", {})
        await client.call_tool("fs_write", {"path": "notes.txt", "content": "x"})
    rows = ledger_rows(gateway)
    # a tier-1 read has nothing to explain after a crash: one row; a write is recorded before it runs
    assert [(r.tool, r.outcome) for r in rows] == [
        ("fs_read", "ok"),
        ("fs_read", "invalid"),
        ("no_such_tool", "invalid"),
        ("fs_write", "started"),
        ("fs_write", "ok"),
    ]
    assert rows[3].call_id == rows[4].call_id
    assert rows[0].decision["action"] == "allow" and rows[0].effects["reads"] == ["README.md"]
    assert all(r.principal["agent"] == "m1" for r in rows)
    assert json.loads(json.dumps(rows[1].detail))["duration_ms"] >= 0
    assert gateway.ledger.verify().ok
