"""Inside the container (examples/container/prove.sh): one shell_run through the gateway's MCP endpoint, run in
its bubblewrap sandbox; prints one line: the exit code, and what the command saw of its confinement."""

import json
import os

import anyio
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

# tier 1 for the developer role (`gateway check --role developer --tool shell_run`: allow, tier 1, tiers.create and
# tiers.read_only_command): it creates a file in the workspace and reads nothing outside it (listing
# /sys/class/net would: paths.outside_workspace, ask). In the sandbox its shell is a low pid of a PID namespace
# of its own (bubblewrap's), not the container's, and its uid is the container user's.
COMMAND = "echo confined > proof.txt && echo pid=$$ && id -u"


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
