"""Upstream MCP servers: connected concurrently, their tools exposed as ``prefix__name``, calls forwarded.

Each upstream lives in its own supervisor task, which holds the client session open. When a call finds
the connection closed (the server died), the supervisor reconnects with backoff and the call answers a
clear tool error; it is never retried behind the caller's back, since it may have had side effects.

    pool = UpstreamPool(config.upstreams)
    async with anyio.create_task_group() as tg:
        await pool.start(tg)
        pool.specs()      # ToolSpecs for every upstream tool that is up
"""

from __future__ import annotations

import fnmatch
import hashlib
import re
from collections.abc import Callable
from contextlib import AsyncExitStack
from typing import Any, Literal

import anyio
import mcp_types as mt
import structlog
from anyio.abc import TaskGroup
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.stdio import get_default_environment
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from gateway.config import UpstreamConfig
from gateway.errors import ToolFailed, UpstreamUnavailable
from gateway.sandbox import Confinement, Sandbox
from gateway.types import ToolInvocation, ToolSpec

log = structlog.get_logger("gateway.upstream")

SEPARATOR = "__"
MAX_NAME = 64
START_TIMEOUT_S = 60.0
BACKOFF_MAX_S = 30.0


def exposed_name(prefix: str, name: str) -> str:
    """``prefix__name``, sanitised to ^[A-Za-z0-9_-]{1,64}$; long names keep a hash suffix to stay unique."""
    full = f"{prefix}{SEPARATOR}{name}"
    safe = re.sub(r"[^A-Za-z0-9_-]", "_", full)
    if len(safe) > MAX_NAME:
        safe = safe[: MAX_NAME - 9] + "_" + hashlib.sha256(full.encode()).hexdigest()[:8]
    return safe


Confine = Callable[[UpstreamConfig], Confinement | None]


class Upstream:
    """One upstream server and the supervisor that keeps it connected; a stdio server runs in the sandbox."""

    def __init__(
        self, prefix: str, config: UpstreamConfig, sandbox: Sandbox | None = None, confine: Confine | None = None
    ) -> None:
        self.prefix = prefix
        self.config = config
        self.sandbox = sandbox
        self.confinement = confine(config) if confine is not None else None
        self.client: Client | None = None
        self.tools: list[mt.Tool] = []
        self.by_name: dict[str, ToolSpec] = {}  # kept while down, so calls get "down", not "unknown tool"
        self.state: Literal["starting", "up", "down"] = "starting"
        self.error: str | None = None
        self.restarts = 0
        self.first_attempt = anyio.Event()
        self._lost = anyio.Event()

    async def supervise(self) -> None:
        try:
            await self._keep_connected()
        finally:  # cancelled with the gateway: nothing may use the closed session afterwards
            self.client, self.state = None, "down"

    async def _keep_connected(self) -> None:
        backoff = 0.5
        while True:
            try:
                async with AsyncExitStack() as stack:
                    client = await stack.enter_async_context(Client(await self._target(stack), mode="auto"))
                    self.tools = await _list_all(client)
                    self.by_name = {spec.name: spec for spec in map(self._spec, self.tools)}
                    self.client, self.state, self.error = client, "up", None
                    self.first_attempt.set()
                    log.info("upstream up", upstream=self.prefix, tools=len(self.tools))
                    backoff = 0.5
                    await self._lost.wait()
            except Exception as exc:  # any failure to connect or list is reported, then retried
                self.error = _describe(exc)
                log.warning("upstream failed", upstream=self.prefix, error=self.error)
            self.client, self.state = None, "down"
            self._lost = anyio.Event()
            self.first_attempt.set()
            await anyio.sleep(backoff)
            backoff = min(backoff * 2, BACKOFF_MAX_S)
            self.restarts += 1

    async def _target(self, stack: AsyncExitStack) -> Any:
        if self.config.url is not None:
            # streamable_http_client does not close a client it was given: the stack owns it
            http = await stack.enter_async_context(create_mcp_http_client(headers=self.config.headers or None))
            return streamable_http_client(self.config.url, http_client=http)
        assert self.config.command is not None
        argv = [self.config.command, *self.config.args]
        if self.confinement is not None and self.sandbox is not None:
            argv = self.sandbox.command(self.confinement, argv)  # SandboxUnavailable: the server stays down
        return StdioServerParameters(
            command=argv[0],
            args=argv[1:],
            env={**get_default_environment(), **self.config.env},
            cwd=self.config.cwd,
        )

    async def call(self, name: str, inv: ToolInvocation) -> mt.CallToolResult:
        client = self.client
        if client is None:
            raise UpstreamUnavailable(
                f"upstream {self.prefix!r} is down: {self.error or 'not connected'}; the gateway keeps retrying",
                upstream=self.prefix,
            )
        try:
            result = await client.session.call_tool(
                name,
                inv.arguments,
                read_timeout_seconds=self.config.timeout_s,
                progress_callback=inv.progress,
            )
        except MCPError as exc:
            if exc.error.code == mt.CONNECTION_CLOSED:
                self._lost.set()
                raise UpstreamUnavailable(
                    f"upstream {self.prefix!r} closed the connection during the call; it is being restarted. "
                    "The call may or may not have taken effect.",
                    upstream=self.prefix,
                ) from None
            raise ToolFailed(f"upstream {self.prefix!r} error {exc.error.code}: {exc.error.message}") from None
        if result.meta and mt.SERVER_INFO_META_KEY in result.meta:
            # the upstream's identity stamp must not leak downstream as the gateway's
            result.meta = {k: v for k, v in result.meta.items() if k != mt.SERVER_INFO_META_KEY} or None
        return result

    def specs(self) -> list[ToolSpec]:
        return list(self.by_name.values())

    def _spec(self, tool: mt.Tool) -> ToolSpec:
        roles: dict[str, str] = {}
        for pattern, mapping in self.config.arguments.items():
            if fnmatch.fnmatchcase(tool.name, pattern):
                roles.update(mapping)
        commit_class = any(fnmatch.fnmatchcase(tool.name, p) for p in self.config.commit_class)
        read_only = any(fnmatch.fnmatchcase(tool.name, p) for p in self.config.read_only)

        async def handler(inv: ToolInvocation) -> mt.CallToolResult:
            return await self.call(tool.name, inv)

        return ToolSpec(
            name=exposed_name(self.prefix, tool.name),
            provider=f"upstream:{self.prefix}",
            description=tool.description or f"{tool.name} (from upstream {self.prefix}; it gave no description)",
            input_schema=dict(tool.input_schema),
            handler=handler,
            annotations=tool.annotations.model_dump(by_alias=True, exclude_none=True) if tool.annotations else None,
            argument_roles=roles,
            commit_class=commit_class,
            read_only=read_only and not commit_class,
            upstream_name=tool.name,
        )


class UpstreamPool:
    def __init__(
        self, configs: dict[str, UpstreamConfig], sandbox: Sandbox | None = None, confine: Confine | None = None
    ) -> None:
        self.upstreams = {prefix: Upstream(prefix, config, sandbox, confine) for prefix, config in configs.items()}

    async def start(self, tg: TaskGroup, timeout: float = START_TIMEOUT_S) -> None:
        """Start every upstream at once; return when each has connected or failed once (or on timeout)."""
        for upstream in self.upstreams.values():
            upstream.first_attempt = anyio.Event()
            upstream.state = "starting"
            tg.start_soon(upstream.supervise, name=f"upstream:{upstream.prefix}")
        with anyio.move_on_after(timeout):
            for upstream in self.upstreams.values():
                await upstream.first_attempt.wait()

    def specs(self) -> list[ToolSpec]:
        return [spec for upstream in self.upstreams.values() for spec in upstream.specs()]

    def owner(self, exposed: str) -> Upstream | None:
        """The upstream whose prefix an exposed name carries, up or not."""
        prefix = exposed.split(SEPARATOR, 1)[0]
        return self.upstreams.get(prefix) if SEPARATOR in exposed else None

    def status(self) -> dict[str, dict[str, Any]]:
        return {
            p: {"state": u.state, "tools": len(u.tools), "error": u.error, "restarts": u.restarts}
            for p, u in self.upstreams.items()
        }


async def _list_all(client: Client) -> list[mt.Tool]:
    tools: list[mt.Tool] = []
    cursor: str | None = None
    while True:
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            return tools


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_describe(e) for e in exc.exceptions)
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
