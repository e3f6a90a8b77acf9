"""Inside the container (examples/container/prove.sh): one shell_run through the gateway's MCP endpoint, run in
its bubblewrap sandbox; prints one line: the exit code, and what the command saw of its confinement."""

import json
import os

import anyio
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

# tier 1 for the developer role: writes in the workspace. In the sandbox it has a PID namespace of its own
# (its shell is a low pid, not the container's) and no network interface but loopback.
COMMAND = "echo confined > proof.txt && echo pid=$$ && ls /sys/class/net"


async def main() -> None:
    headers = {"Authorization": f"Bearer {os.environ['T']}"}
    async with (
        create_mcp_http_client(headers=headers) as http,
        Client(streamable_http_client("http://127.0.0.1:8787/mcp", http_client=http)) as client,
    ):
        result = await client.call_tool("shell_run", {"command": COMMAND})
    content = result.structured_content or {}
    seen = " ".join(str(content.get("stdout", "")).split())
    said = {"exit_code": content.get("exit_code"), "saw": seen, "error": result.is_error}
    if content.get("status"):  # not run: approval pending, or denied
        said["status"] = content["status"]
    print(json.dumps(said))


anyio.run(main)
