"""A bare MCP proxy on the SDK in this venv: one upstream, its tools listed once and every call forwarded.

No policy, no identity, no ledger: the floor a proxy built on the SDK costs, for bench_gateway.py to put the
gateway beside. It pays what the gateway's forward path pays through the SDK (a server session downstream, a
client session upstream, the pydantic models on both), and nothing else.

    python bench/sdk_proxy.py --stdio -- python tests/servers/echo_server.py             # stdio in, stdio upstream
    python bench/sdk_proxy.py --http 127.0.0.1:8300 --upstream http://127.0.0.1:8123/mcp   # streamable HTTP at /mcp
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.server import Server, ServerRequestContext


def upstream_target(args: argparse.Namespace) -> Any:
    """What the upstream Client connects to: a streamable HTTP URL, or a command run over stdio."""
    if args.upstream:
        return args.upstream
    return StdioServerParameters(command=args.command[0], args=args.command[1:])


def build_server(target: Any) -> Server[Any]:
    @asynccontextmanager
    async def lifespan(server: Server[Any]) -> AsyncIterator[dict[str, Any]]:
        # once per stdio connection, once per HTTP session manager: all HTTP sessions share the upstream
        async with Client(target) as upstream:
            tools = (await upstream.list_tools()).tools
            yield {"upstream": upstream, "tools": tools}

    async def list_tools(ctx: ServerRequestContext, params: types.PaginatedRequestParams | None) -> Any:
        return types.ListToolsResult(tools=ctx.lifespan_context["tools"])

    async def call_tool(ctx: ServerRequestContext, params: types.CallToolRequestParams) -> Any:
        upstream: Client = ctx.lifespan_context["upstream"]
        return await upstream.session.call_tool(params.name, params.arguments or {})

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Server("sdk-proxy", version="0.0.1", lifespan=lifespan, on_list_tools=list_tools, on_call_tool=call_tool)


async def serve_stdio(server: Server[Any]) -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--stdio", action="store_true", help="serve one client on stdin/stdout")
    mode.add_argument("--http", metavar="HOST:PORT", help="serve streamable HTTP at http://HOST:PORT/mcp")
    parser.add_argument("--upstream", metavar="URL", help="the upstream's streamable HTTP URL")
    parser.add_argument("command", nargs="*", help="the upstream command (after --), when no --upstream")
    args = parser.parse_args(argv)
    if bool(args.upstream) == bool(args.command):
        parser.error("name the upstream: --upstream URL or -- COMMAND ARGS")
    server = build_server(upstream_target(args))
    if args.stdio:
        anyio.run(serve_stdio, server)
        return 0
    import uvicorn

    host, _, port = args.http.rpartition(":")
    app = server.streamable_http_app(streamable_http_path="/mcp", host=host)
    uvicorn.run(app, host=host, port=int(port), log_level="warning")
    return 0


if __name__ == "__main__":
    sys.exit(main())
