"""The gateway as a real subprocess: stdio and streamable HTTP, both protocol eras, SDK clients."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest
from conftest import add_role, http_client, http_gateway, stdio_server, text_of, token
from mcp import Client

pytestmark = pytest.mark.anyio

MODES = ["auto", "legacy"]
EXPECTED_ERA = {"auto": "2026-07-28", "legacy": "2025-11-25"}


@pytest.fixture
def maintainer(config: Any) -> str:
    add_role(config, "maintainer", ["fs_*", "shell_run", "git_*"], max_tier=2)
    return token(config, "maintainer", agent="m1")


async def exercise(client: Client, mode: str) -> None:
    assert client.protocol_version == EXPECTED_ERA[mode]
    names = {t.name for t in (await client.list_tools()).tools}
    assert {"fs_read", "shell_run", "git_log"} <= names
    assert text_of(await client.call_tool("fs_read", {"path": "README.md"})) == "# demo repo\n"
    seen: list[Any] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    result = await client.call_tool("shell_run", {"command": "sleep 1.5; echo ok"}, progress_callback=on_progress)
    assert result.structured_content["stdout"] == "ok\n"
    assert seen, "progress notifications were not forwarded"
    refused = await client.call_tool("fs_read", {"path": "../../etc/shadow"})
    assert refused.is_error and refused.structured_content["error"]["code"] == "path_outside_workspace"


@pytest.mark.parametrize("mode", MODES)
async def test_stdio(config: Any, maintainer: str, mode: str) -> None:
    async with Client(stdio_server(config, maintainer), mode=mode) as client:
        await exercise(client, mode)
        if mode == "legacy":
            await client.set_logging_level("debug")  # answered, not -32601


@pytest.mark.parametrize("mode", MODES)
async def test_http(config: Any, maintainer: str, mode: str) -> None:
    with http_gateway(config.source) as url:
        async with http_client(url, maintainer, mode=mode) as client:
            await exercise(client, mode)
            if mode == "legacy":
                await client.set_logging_level("info")


async def test_stdio_refuses_to_start_without_a_valid_token(config: Any) -> None:
    import subprocess

    for bad in [None, "not-a-token"]:
        params = stdio_server(config, bad)
        proc = subprocess.run(
            [params.command, *params.args], env=params.env, capture_output=True, text=True, timeout=30, input=""
        )
        assert proc.returncode != 0
        assert "gateway:" in proc.stderr and ("no credential" in proc.stderr or "malformed" in proc.stderr)


def test_http_401_says_why(config: Any, maintainer: str) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    with http_gateway(config.source) as url:
        missing = httpx2.post(f"{url}/mcp", json=body, headers=headers)
        bad = httpx2.post(f"{url}/mcp", json=body, headers={**headers, "Authorization": "Bearer abc.def.ghi"})
        basic = httpx2.post(f"{url}/mcp", json=body, headers={**headers, "Authorization": "Basic dTpw"})
    assert missing.status_code == 401 and "no credential" in missing.headers["www-authenticate"]
    assert bad.status_code == 401 and 'error="invalid_token"' in bad.headers["www-authenticate"]
    assert "malformed" in bad.json()["error_description"]
    assert basic.status_code == 401 and "Bearer" in basic.json()["error_description"]
