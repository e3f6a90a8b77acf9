"""Upstream federation with real servers: mcp-server-git (PyPI), server-filesystem (npm), and a small
Python server that can be killed mid-call to show the restart."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import (
    BIN,
    NPM_MODULES,
    add_role,
    free_port,
    http_client,
    http_gateway,
    inproc_client,
    ledger_rows,
    reconfigure,
    text_of,
    token,
)

from gateway.runtime import Gateway
from gateway.tools.upstream import exposed_name

pytestmark = pytest.mark.anyio

ECHO = str(Path(__file__).parent / "servers" / "echo_server.py")
FS_SERVER = NPM_MODULES / "@modelcontextprotocol" / "server-filesystem" / "dist" / "index.js"


def upstreams(repo: Path) -> dict[str, Any]:
    return {
        "echo": {"command": sys.executable, "args": [ECHO], "read_only": ["echo", "add", "slow", "pid", "fail", "die"]},
        "git": {
            "command": str(BIN / "mcp-server-git"),
            "args": ["--repository", str(repo)],
            "arguments": {"*": {"repo_path": "read"}},
            "read_only": ["git_status", "git_log", "git_diff*", "git_show", "git_branch"],
        },
        "fs": {
            "command": shutil.which("node") or "node",
            "args": [str(FS_SERVER), str(repo)],
            "sandbox": {"visible": [str(NPM_MODULES)]},  # the server's dependencies, wherever npm put them
            "arguments": {
                "read_*": {"path": "read", "paths": "read"},
                "list_*": {"path": "read"},
                "write_file": {"path": "write", "content": "data"},  # an argument with no role is opaque
                "edit_file": {"path": "write", "edits": "data", "dryRun": "data"},
            },
        },
    }


@pytest.fixture
def federated(config: Any, repo: Path) -> tuple[Gateway, str]:
    add_role(config, "operator", ["*"], max_tier=2)
    config = reconfigure(config, upstreams=upstreams(repo))
    return Gateway(config), token(config, "operator", agent="op")


def test_exposed_names_are_sanitised() -> None:
    assert exposed_name("fs", "read_file") == "fs__read_file"
    assert exposed_name("x", "a.b/c d") == "x__a_b_c_d"
    long = exposed_name("prefix", "t" * 100)
    assert len(long) == 64 and long != exposed_name("prefix", "t" * 99 + "u")


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_real_upstreams_behind_the_gateway(federated: tuple[Gateway, str], repo: Path, mode: str) -> None:
    gateway, bearer = federated
    async with inproc_client(gateway, bearer, mode) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert {"echo__echo", "git__git_status", "git__git_log", "fs__read_text_file", "fs__write_file"} <= names
        assert all(len(n) <= 64 for n in names)

        assert text_of(await client.call_tool("echo__add", {"a": 20, "b": 22})) == "42"
        log = await client.call_tool("git__git_log", {"repo_path": str(repo), "max_count": 1})
        assert not log.is_error and "initial" in text_of(log)
        read = await client.call_tool("fs__read_text_file", {"path": str(repo / "README.md")})
        assert "# demo repo" in text_of(read)

        failed = await client.call_tool("echo__fail", {"reason": "x"})
        assert failed.is_error and "failed on purpose" in text_of(failed)

        seen: list[float] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            seen.append(progress)

        slow = await client.call_tool("echo__slow", {"steps": 3}, progress_callback=on_progress)
        assert text_of(slow) == "done 3" and seen == [1, 2, 3]

        invalid = await client.call_tool("echo__add", {"a": "twenty", "b": 22})
        assert invalid.is_error and "'a'" in text_of(invalid)


async def test_upstream_tools_are_classified_by_declared_roles(federated: tuple[Gateway, str], repo: Path) -> None:
    gateway, bearer = federated
    async with inproc_client(gateway, bearer) as client:
        outside = await client.call_tool("fs__read_text_file", {"path": "/etc/hostname"})
        write = await client.call_tool("fs__write_file", {"path": str(repo / "new.txt"), "content": "hi"})
    assert outside.structured_content["status"] == "approval_pending"
    assert "/etc/hostname" in text_of(outside)
    assert not write.is_error and (repo / "new.txt").read_text() == "hi"
    rows = [r for r in ledger_rows(gateway) if r.tool == "fs__write_file"]
    assert rows[-1].effects["creates"] == ["new.txt"] and rows[-1].decision["tier"] == 2


async def test_dead_upstream_is_reported_then_restarted(federated: tuple[Gateway, str]) -> None:
    gateway, bearer = federated
    async with inproc_client(gateway, bearer) as client:
        first_pid = text_of(await client.call_tool("echo__pid", {}))
        died = await client.call_tool("echo__die", {})
        assert died.is_error and died.structured_content["error"]["code"] == "upstream_unavailable"
        assert "restarted" in text_of(died)
        with anyio.fail_after(20):
            while gateway.pool.upstreams["echo"].state != "up" or gateway.pool.upstreams["echo"].restarts == 0:
                await anyio.sleep(0.1)
        second_pid = await client.call_tool("echo__pid", {})
        assert not second_pid.is_error and text_of(second_pid) != first_pid


async def test_a_gateway_run_again_keeps_its_upstream_up(config: Any) -> None:
    """Stopping a run closes each upstream's connection; the next run of the same Gateway (the CLI and the
    tests run one several times) must not take that closing for a loss of the new connection."""
    add_role(config, "operator", ["*"], max_tier=2)
    config = reconfigure(config, upstreams={"echo": {"command": sys.executable, "args": [ECHO], "read_only": ["pid"]}})
    gateway, bearer = Gateway(config), token(config, "operator", agent="op")
    pids = []
    for _ in range(2):
        async with inproc_client(gateway, bearer) as client:
            answer = await client.call_tool("echo__pid", {})
            assert not answer.is_error, text_of(answer)
            pids.append(text_of(answer))
    assert gateway.pool.upstreams["echo"].restarts == 0, "the second run connected once, with no loss"


async def test_upstream_that_is_down_is_reported(config: Any) -> None:
    add_role(config, "operator", ["*"], max_tier=2)
    config = reconfigure(
        config,
        upstreams={
            "gone": {"command": "/nonexistent/mcp-server"},
            "off": {"url": f"http://127.0.0.1:{free_port()}/mcp"},
        },
    )
    gateway = Gateway(config)
    async with inproc_client(gateway, token(config, "operator")) as client:
        result = await client.call_tool("gone__anything", {})
        names = {t.name for t in (await client.list_tools()).tools}
    assert result.is_error and result.structured_content["error"]["code"] == "upstream_unavailable"
    assert "'gone' is down" in text_of(result)
    assert "fs_read" in names  # the gateway itself keeps serving
    assert gateway.pool.status()["off"]["state"] == "down"


async def test_http_upstream_and_http_gateway(config: Any, repo: Path) -> None:
    import subprocess

    port = free_port()
    upstream = subprocess.Popen([sys.executable, ECHO, "--http", str(port)])
    try:
        add_role(config, "operator", ["*"], max_tier=2)
        config = reconfigure(config, upstreams={"remote": {"url": f"http://127.0.0.1:{port}/mcp", "read_only": ["*"]}})
        bearer = token(config, "operator")
        with anyio.fail_after(30):
            while True:  # wait for the upstream to listen
                try:
                    await anyio.connect_tcp("127.0.0.1", port)
                    break
                except OSError:
                    await anyio.sleep(0.1)
        with http_gateway(config.source) as url:
            async with http_client(url, bearer) as client:
                assert text_of(await client.call_tool("remote__echo", {"text": "over http twice"})) == "over http twice"
    finally:
        upstream.terminate()
        upstream.wait(10)
