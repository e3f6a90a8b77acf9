"""A call cancelled part-way still ends in the ledger: its final row has outcome "cancelled" and names the stage
it was cancelled in, whether its client gave up (a request timeout: notifications/cancelled), went away (the
stdio client closed the gateway's stdin), or the gateway stopped while it ran (SIGTERM). The call here is an
upstream tool that never answers (tests/servers/raw_upstream.py's "hang"), past its write-ahead row."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import BIN, add_role, http_client, inproc_client, reconfigure, stdio_server, token
from mcp import Client, MCPError

from gateway.config import GatewayConfig
from gateway.process import free_port, start_server
from gateway.runtime import Gateway

pytestmark = pytest.mark.anyio

RAW = str(Path(__file__).parent / "servers" / "raw_upstream.py")


def hanging_upstream(config: GatewayConfig, tmp_path: Path) -> GatewayConfig:
    """An upstream whose "hang" tool never answers; not read-only, so its call has a write-ahead row."""
    add_role(config, "operator", ["*"], max_tier=2)
    entry = {
        "command": sys.executable,
        "args": [RAW, "--era", "legacy", "--log", str(tmp_path / "upstream.jsonl")],
        "sandbox": {"writable": [str(tmp_path)]},
        "arguments": {"hang": {"x": "data"}},  # described (no effects): tier 1, not read-only
        "timeout_s": 120,
    }
    return reconfigure(config, upstreams={"raw": entry}, limits={"shutdown_grace_s": 1})


def rows_of(config: GatewayConfig, tool: str) -> list[Any]:
    ledger = Gateway(config).ledger
    return [r for r in reversed(ledger.events("json_extract(body, '$.kind') = ?", ("call",))) if r.tool == tool]


async def wait_for(condition: Callable[[], bool], timeout: float = 60) -> None:
    with anyio.fail_after(timeout):
        while not condition():
            await anyio.sleep(0.05)


def ended_cancelled(config: GatewayConfig) -> Any:
    """The hanging call's rows: its write-ahead row, then its final row, cancelled in Execute."""
    rows = rows_of(config, "raw__hang")
    assert [r.outcome for r in rows] == ["started", "cancelled"], [(r.outcome, r.detail) for r in rows]
    started, final = rows
    assert final.call_id == started.call_id and final.decision == started.decision
    assert final.detail["error"]["code"] == "cancelled" and final.detail["error"]["cancelled_in"] == "Execute"
    return final


async def test_a_call_whose_client_times_out_ends_cancelled(config: GatewayConfig, tmp_path: Path) -> None:
    configured = hanging_upstream(config, tmp_path)
    gateway = Gateway(configured)
    async with inproc_client(gateway, token(configured, "operator")) as client:
        with pytest.raises(MCPError, match=r"[Tt]imed out|timeout"):
            await client.call_tool("raw__hang", {"x": "1"}, read_timeout_seconds=0.5)
        await wait_for(lambda: len(rows_of(configured, "raw__hang")) == 2)
        after = await client.call_tool("raw__echo", {"text": "next"})  # the gateway serves on
    ended_cancelled(configured)
    assert not after.is_error


async def test_a_call_whose_client_goes_away_ends_cancelled(config: GatewayConfig, tmp_path: Path) -> None:
    configured = hanging_upstream(config, tmp_path)
    async with anyio.create_task_group() as tg:

        async def hang() -> None:
            async with Client(stdio_server(configured, token(configured, "operator"))) as client:
                await client.call_tool("raw__hang", {"x": "1"})

        tg.start_soon(hang)
        await wait_for(lambda: len(rows_of(configured, "raw__hang")) == 1)
        tg.cancel_scope.cancel()  # the client goes: the gateway's stdin closes
    await wait_for(lambda: len(rows_of(configured, "raw__hang")) == 2)
    ended_cancelled(configured)


async def test_a_call_in_flight_when_the_gateway_stops_ends_cancelled(config: GatewayConfig, tmp_path: Path) -> None:
    configured = hanging_upstream(config, tmp_path)
    assert configured.source is not None
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    argv = [sys.executable, "-m", "gateway", "--config", str(configured.source), "serve", "--http", f"127.0.0.1:{port}"]
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}")
    server = start_server(argv, f"{url}/healthz", "the gateway", log=tmp_path / "gateway.log", env=env)
    try:
        async with anyio.create_task_group() as tg:

            async def hang() -> None:
                with contextlib.suppress(Exception):  # the gateway going away answers an error, or nothing
                    async with http_client(url, token(configured, "operator")) as client:
                        await client.call_tool("raw__hang", {"x": "1"})

            tg.start_soon(hang)
            await wait_for(lambda: len(rows_of(configured, "raw__hang")) == 1)
            server.send_signal(signal.SIGTERM)
            await anyio.to_thread.run_sync(lambda: server.wait(60))
            tg.cancel_scope.cancel()
    finally:
        if server.poll() is None:
            server.kill()
            server.wait(10)
    assert server.returncode in (0, -signal.SIGTERM), (tmp_path / "gateway.log").read_text()[-2000:]
    ended_cancelled(configured)
