"""The forward path: upstream calls as raw JSON-RPC, answers passed on as the upstream sent them. A real SDK
client drives the gateway; the upstream is tests/servers/raw_upstream.py (written without the SDK, so it can
misbehave), in both protocol eras, over stdio and over streamable HTTP."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import add_role, free_port, http_gateway, inproc_client, ledger_rows, reconfigure, text_of, token
from mcp import Client, MCPError

from gateway import __version__
from gateway.judge.execute import CHECKPOINT_META
from gateway.runtime import Gateway
from gateway.tools.jsonrpc import STDIO_LINE_FLOOR

pytestmark = pytest.mark.anyio

RAW = str(Path(__file__).parent / "servers" / "raw_upstream.py")
LIMIT = 4096
WAYS = [("stdio", "modern"), ("stdio", "legacy"), ("http", "modern"), ("http", "legacy")]


@contextmanager
def raw_upstream(transport: str, era: str, log: Path) -> Iterator[dict[str, Any]]:
    """The upstream's gateway.yaml entry; over HTTP its server runs (and is stopped) here."""
    argv = [sys.executable, RAW, "--era", era, "--log", str(log)]
    entry: dict[str, Any] = {"read_only": ["*"], "timeout_s": 30}
    if transport == "stdio":  # confined like every stdio upstream: it may write its log, nothing else here
        yield {**entry, "command": argv[0], "args": argv[1:], "sandbox": {"writable": [str(log.parent)]}}
        return
    port = free_port()
    server = subprocess.Popen([*argv, "--http", str(port)])
    try:
        yield {**entry, "url": f"http://127.0.0.1:{port}/mcp"}
    finally:
        server.kill()
        server.wait(10)


async def listening(entry: dict[str, Any]) -> None:
    if "url" not in entry:
        return
    port = int(entry["url"].split(":")[2].split("/")[0])
    with anyio.fail_after(30):
        while True:
            try:
                await (await anyio.connect_tcp("127.0.0.1", port)).aclose()
                return
            except OSError:
                await anyio.sleep(0.05)


@pytest.fixture(params=WAYS, ids=[f"{t}-{e}" for t, e in WAYS])
def way(request: pytest.FixtureRequest) -> tuple[str, str]:
    return request.param


@asynccontextmanager
async def through_gateway(
    config: Any, tmp_path: Path, way: tuple[str, str], mode: str = "auto", **upstream: Any
) -> AsyncIterator[tuple[Client, Gateway, Path]]:
    log = tmp_path / "upstream.jsonl"
    with raw_upstream(*way, log) as entry:
        await listening(entry)
        add_role(config, "operator", ["*"], max_tier=2)
        configured = reconfigure(config, upstreams={"raw": {**entry, **upstream}}, limits={"max_read_bytes": LIMIT})
        gateway = Gateway(configured)
        async with inproc_client(gateway, token(configured, "operator"), mode) as client:
            assert gateway.pool.upstreams["raw"].state == "up", gateway.pool.upstreams["raw"].error
            yield client, gateway, log


def received(log: Path, method: str | None) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    return [line for line in lines if line["message"].get("method") == method]


def last_row(gateway: Gateway, tool: str) -> Any:
    return [r for r in ledger_rows(gateway) if r.tool == tool and r.outcome != "started"][-1]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_answers_pass_through_in_both_eras(config: Any, tmp_path: Path, way: tuple[str, str], mode: str) -> None:
    seen: list[tuple[float, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, message))

    async with through_gateway(config, tmp_path, way, mode) as (client, gateway, log):
        echoed = await client.call_tool("raw__echo", {"text": "hi"})
        progressed = await client.call_tool("raw__progress", {}, progress_callback=on_progress)
    assert text_of(echoed) == "hi" and not echoed.is_error
    assert text_of(progressed) == "done" and progressed.structured_content == {"n": 2}
    assert seen == [(1, "step 1"), (2, "step 2")]
    # the upstream's identity stamp is not passed on; a 2026-07-28 client sees the gateway's own
    stamp = (echoed.meta or {}).get("io.modelcontextprotocol/serverInfo")
    assert stamp == ({"name": "mcp-policy-gateway", "version": __version__} if mode == "auto" else None)
    call = received(log, "tools/call")[0]
    transport, era = way
    if era == "modern":  # the 2026-07-28 envelope on every request, and its headers over HTTP
        assert call["message"]["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
        if transport == "http":
            assert call["headers"]["mcp-method"] == "tools/call" and call["headers"]["mcp-name"] == "echo"
    elif transport == "http":  # the session the upstream gave at initialize
        assert call["headers"]["mcp-session-id"] and call["headers"]["mcp-protocol-version"] == "2025-11-25"
    assert last_row(gateway, "raw__echo").outcome == "ok"


async def test_an_oversized_result_is_refused_whole_and_recorded(
    config: Any, tmp_path: Path, way: tuple[str, str]
) -> None:
    async with through_gateway(config, tmp_path, way) as (client, gateway, _):
        large = await client.call_tool("raw__big", {"size": 2 * LIMIT})
        small = await client.call_tool("raw__big", {"size": 10})  # the connection is still good
    assert large.is_error and large.structured_content["error"]["code"] == "result_too_large"
    assert str(LIMIT) in text_of(large) and "x" * 100 not in text_of(large)
    assert text_of(small) == "x" * 10
    assert last_row(gateway, "raw__big").outcome == "ok"
    refused = [r for r in ledger_rows(gateway) if r.tool == "raw__big" and r.outcome == "error"]
    assert refused[0].detail["error"]["code"] == "result_too_large"


@pytest.mark.parametrize(
    ("tool", "code", "says"),
    [
        ("raw__not_a_list", "upstream_malformed", "content is not a list"),
        ("raw__bad_block", "upstream_malformed", "content[0] is text content without a string 'text'"),
        ("raw__not_an_object", "upstream_malformed", "no result object"),
        ("raw__error", "tool_failed", "error -32603: went wrong upstream"),
    ],
)
async def test_malformed_answers_become_recorded_tool_errors(
    config: Any, tmp_path: Path, way: tuple[str, str], tool: str, code: str, says: str
) -> None:
    async with through_gateway(config, tmp_path, way) as (client, gateway, _):
        result = await client.call_tool(tool, {})
        after = await client.call_tool("raw__echo", {"text": "still here"})
    assert result.is_error and result.structured_content["error"]["code"] == code
    assert says in text_of(result)
    assert text_of(after) == "still here"
    row = last_row(gateway, tool)
    assert row.outcome == "error" and row.detail["error"]["code"] == code


@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_a_stdio_upstream_killed_mid_call_is_reported_and_restarted(
    config: Any, tmp_path: Path, era: str
) -> None:
    async with through_gateway(config, tmp_path, ("stdio", era)) as (client, gateway, log):
        died = await client.call_tool("raw__die", {})
        upstream = gateway.pool.upstreams["raw"]
        with anyio.fail_after(30):
            while upstream.state != "up" or upstream.restarts == 0:
                await anyio.sleep(0.05)
        again = await client.call_tool("raw__echo", {"text": "back"})
    assert died.is_error and died.structured_content["error"]["code"] == "upstream_unavailable"
    assert "may or may not have taken effect" in text_of(died)
    assert text_of(again) == "back"
    assert len(received(log, "tools/call")) == 2  # never retried behind the caller's back
    assert last_row(gateway, "raw__die").detail["error"]["code"] == "upstream_unavailable"


@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_an_http_upstream_killed_mid_call_is_reported_and_reconnected(
    config: Any, tmp_path: Path, era: str
) -> None:
    async with through_gateway(config, tmp_path, ("http", era)) as (client, gateway, log):
        died = await client.call_tool("raw__die", {})
        upstream = gateway.pool.upstreams["raw"]
        with anyio.fail_after(30):  # the reconnection fails: nothing listens any more
            while upstream.restarts == 0:
                await anyio.sleep(0.05)
        down = await client.call_tool("raw__echo", {"text": "anyone?"})
        url = upstream.config.url
        assert url is not None
        port = url.split(":")[2].split("/")[0]
        again = subprocess.Popen([sys.executable, RAW, "--era", era, "--log", str(log), "--http", port])
        try:
            with anyio.fail_after(60):  # the supervisor's backoff brings it back
                while upstream.state != "up":
                    await anyio.sleep(0.05)
            back = await client.call_tool("raw__echo", {"text": "back"})
        finally:
            again.kill()
            again.wait(10)
    assert died.is_error and died.structured_content["error"]["code"] == "upstream_unavailable"
    assert "may or may not have taken effect" in text_of(died)
    assert down.is_error and down.structured_content["error"]["code"] == "upstream_unavailable"
    assert text_of(back) == "back"
    assert len(received(log, "tools/call")) == 2


async def test_a_call_that_outlives_its_timeout_is_cancelled_upstream(
    config: Any, tmp_path: Path, way: tuple[str, str]
) -> None:
    async with through_gateway(config, tmp_path, way, timeout_s=0.5) as (client, gateway, log):
        assert gateway.pool.upstreams["raw"].config.timeout_s == 0.5
        hung = await client.call_tool("raw__hang", {})  # it never answers: the timeout always fires
        after = await client.call_tool("raw__echo", {"text": "next"})
    assert hung.is_error and "did not answer within 0.5 s" in text_of(hung)
    assert text_of(after) == "next"
    cancelled = received(log, "notifications/cancelled")
    if way == ("http", "modern"):  # the 2026-07-28 HTTP wire: closing the answer's stream is the signal
        assert cancelled == []
    else:
        assert [c["message"]["params"]["requestId"] for c in cancelled] == [
            received(log, "tools/call")[0]["message"]["id"]
        ]


async def test_a_tier_2_answer_says_which_checkpoint_was_taken(config: Any, tmp_path: Path) -> None:
    writes = {"read_only": [], "arguments": {"echo": {"text": "write"}}}  # as if echo wrote the file it names
    async with through_gateway(config, tmp_path, ("stdio", "modern"), **writes) as (client, gateway, _):
        result = await client.call_tool("raw__echo", {"text": "README.md"})
    row = last_row(gateway, "raw__echo")
    assert row.decision["tier"] == 2 and row.outcome == "ok"
    assert text_of(result).startswith("README.md\ncheckpoint ")
    assert (result.meta or {})[CHECKPOINT_META]["id"] == row.detail["safeguard"]["id"]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_caller_that_gives_up_cancels_the_call_upstream(config: Any, tmp_path: Path, mode: str) -> None:
    async with through_gateway(config, tmp_path, ("stdio", "legacy"), mode) as (client, _, log):
        with pytest.raises(MCPError, match=r"[Tt]imed out|timeout"):
            await client.call_tool("raw__hang", {}, read_timeout_seconds=0.5)
        with anyio.fail_after(30):  # the gateway tells the upstream it may stop
            while not received(log, "notifications/cancelled"):
                await anyio.sleep(0.05)
        after = await client.call_tool("raw__echo", {"text": "next"})
    assert text_of(after) == "next"
    assert received(log, "notifications/cancelled")[0]["message"]["params"]["requestId"].startswith("fwd-")


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_ping_the_upstream_sends_mid_call_is_answered(config: Any, tmp_path: Path, transport: str) -> None:
    async with through_gateway(config, tmp_path, (transport, "legacy")) as (client, _, log):
        result = await client.call_tool("raw__pings", {})
        with anyio.fail_after(30):
            while not (replies := [r for r in received(log, None) if r["message"].get("id") == "up-ping"]):
                await anyio.sleep(0.05)
    assert text_of(result) == "pinged"
    assert replies[0]["message"]["result"] == {}


async def test_mcp_param_headers_are_checked_against_the_schema_the_role_sees(config: Any, tmp_path: Path) -> None:
    """On 2026-07-28 HTTP the gateway checks a call's Mcp-Param-* headers against the tool's schema, found in
    the catalog for the caller's role (not by listing every tool); a tool the role does not see is not
    checked, so the answer is the pipeline's "unknown tool", as for a tool that does not exist."""
    import httpx2

    add_role(config, "operator", ["*"], max_tier=2)
    with raw_upstream("stdio", "modern", tmp_path / "upstream.jsonl") as entry:
        configured = reconfigure(config, upstreams={"raw": entry})
        with http_gateway(configured.source) as url:

            async def call(role: str, region: str, header: str) -> httpx2.Response:
                meta = {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
                    "io.modelcontextprotocol/clientCapabilities": {},
                }
                params = {"name": "raw__headed", "arguments": {"region": region}, "_meta": meta}
                headers = {
                    "authorization": f"Bearer {token(configured, role)}",
                    "accept": "application/json, text/event-stream",
                    "mcp-protocol-version": "2026-07-28",
                    "mcp-method": "tools/call",
                    "mcp-name": "raw__headed",
                    "mcp-param-region": header,
                }
                body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
                async with httpx2.AsyncClient() as http:
                    return await http.post(f"{url}/mcp", json=body, headers=headers)

            matching = await call("operator", "eu", "eu")
            mismatched = await call("operator", "eu", "us")
            unseen = await call("planner", "eu", "us")
    assert matching.status_code == 200 and matching.json()["result"]["content"][0]["text"] == "region eu"
    assert mismatched.status_code == 400 and "Mcp-Param-Region" in mismatched.text
    assert unseen.status_code == 200
    assert unseen.json()["result"]["structuredContent"]["error"]["code"] == "unknown_tool"


async def test_a_stdio_line_past_the_hard_limit_ends_the_connection(config: Any, tmp_path: Path) -> None:
    """Memory stays bounded: a line longer than the channel ever reads (8 MiB here) is not read to its end;
    the upstream is restarted and the call answers that the connection was lost."""
    async with through_gateway(config, tmp_path, ("stdio", "legacy")) as (client, gateway, _):
        upstream = gateway.pool.upstreams["raw"]
        assert upstream.channel is not None and upstream.channel.line_limit == STDIO_LINE_FLOOR
        flood = await client.call_tool("raw__big", {"size": STDIO_LINE_FLOOR + 1})
        with anyio.fail_after(30):
            while upstream.state != "up" or upstream.restarts == 0:
                await anyio.sleep(0.05)
        after = await client.call_tool("raw__echo", {"text": "fresh"})
    assert flood.is_error and flood.structured_content["error"]["code"] == "upstream_unavailable"
    assert f"a line of more than {STDIO_LINE_FLOOR} bytes" in text_of(flood)
    assert text_of(after) == "fresh"
