"""A small real MCP server for the upstream tests: echo, progress, tool errors, and a tool that kills it.

python echo_server.py            # stdio
python echo_server.py --http 8123   # streamable HTTP at http://127.0.0.1:8123/mcp
"""

from __future__ import annotations

import os
import sys
import uuid

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("echo-upstream", version="1.0.0")
INCARNATION = uuid.uuid4().hex  # a sandboxed server has its own PID namespace: its pid alone repeats


@server.tool()
def echo(text: str) -> str:
    """Answer the text back."""
    return text


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def fail(reason: str = "boom") -> str:
    """Always answer a tool error."""
    raise ToolError(f"failed on purpose: {reason}")


@server.tool()
async def slow(steps: int, ctx: Context) -> str:
    """Report progress once per step."""
    for step in range(steps):
        await ctx.report_progress(step + 1, steps, f"step {step + 1}")
    return f"done {steps}"


@server.tool()
def peek(path: str) -> str:
    """Read a file, or say why it could not (what a confined server can see)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read(4096)
    except OSError as exc:
        return f"cannot read: {exc.strerror}"


@server.tool()
def die() -> str:
    """Exit the server process at once, mid-call."""
    os._exit(3)


@server.tool()
def pid() -> str:
    """The server's process id and incarnation (tells a restarted server from the first one)."""
    return f"{os.getpid()}-{INCARNATION}"


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        import uvicorn

        uvicorn.run(server.streamable_http_app(), host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
    else:
        server.run("stdio")
