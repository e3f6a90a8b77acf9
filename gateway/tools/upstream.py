"""Upstream MCP servers: connected concurrently, their tools, resources and prompts exposed as
``prefix__name``, calls, reads and completions forwarded.

Resources keep the upstream's URI (clients and embedded resources refer to it): the pool routes a read
by the URIs and URI templates each upstream listed when it connected, and a URI that no upstream listed
(or that two list) is not read. A resource or template is *named* ``prefix__name`` like a tool, and that
name is what role files grant and what the ledger records; its URI is the read's argument.

Each upstream lives in its own supervisor task, which holds the connection open: the SDK's client connects
and lists over it, and calls, reads and prompts go over it as raw JSON-RPC (``gateway/tools/jsonrpc.py``),
their answers passed on as the upstream sent them (``gateway/tools/forwarded.py``). When the connection
closes (the server died), the supervisor reconnects with backoff and a call in flight answers a clear tool
error; it is never retried behind the caller's back, since it may have had side effects.

    pool = UpstreamPool(config.upstreams)
    async with anyio.create_task_group() as tg:
        await pool.start(tg)
        pool.specs()      # ToolSpecs for every upstream tool that is up
"""

from __future__ import annotations

import fnmatch
import hashlib
import re
from collections import Counter
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import replace
from typing import Any, Literal

import anyio
import mcp_types as mt
import structlog
from anyio.abc import TaskGroup
from mcp import Client, MCPError
from mcp.client.stdio import get_default_environment
from mcp.shared._httpx_utils import create_mcp_http_client

from gateway.config import UpstreamConfig
from gateway.errors import ResultTooLarge, ToolFailed, UpstreamMalformed, UpstreamUnavailable
from gateway.linear_regex import PatternRefused, linear
from gateway.sandbox import Confinement, Sandbox
from gateway.tools.forwarded import Forwarded
from gateway.tools.jsonrpc import ConnectionLost, HttpChannel, Malformed, RemoteError, StdioChannel, TooLarge
from gateway.types import JSONObject, ProgressFn, ToolInvocation, ToolSpec

log = structlog.get_logger("gateway.upstream")

SEPARATOR = "__"
MAX_NAME = 64
START_TIMEOUT_S = 60.0
BACKOFF_MAX_S = 30.0


def exposed_name(prefix: str | None, name: str) -> str:
    """``prefix__name``, sanitised to ^[A-Za-z0-9_-]{1,64}$; long names keep a hash suffix to stay unique.
    Without a prefix (an upstream with ``prefixed: false``) the name is only sanitised."""
    full = f"{prefix}{SEPARATOR}{name}" if prefix else name
    safe = re.sub(r"[^A-Za-z0-9_-]", "_", full)
    if len(safe) > MAX_NAME:
        safe = safe[: MAX_NAME - 9] + "_" + hashlib.sha256(full.encode()).hexdigest()[:8]
    return safe


Confine = Callable[[UpstreamConfig], Confinement | None]


class Upstream:
    """One upstream server and the supervisor that keeps it connected; a stdio server runs in the sandbox."""

    def __init__(
        self,
        prefix: str,
        config: UpstreamConfig,
        sandbox: Sandbox | None = None,
        confine: Confine | None = None,
        max_read_bytes: int = 1_048_576,
    ) -> None:
        self.prefix = prefix
        self.names_prefix = prefix if config.prefixed else None
        self.config = config
        self.sandbox = sandbox
        self.confinement = confine(config) if confine is not None else None
        self.client: Client | None = None  # the SDK's: connects, lists, completes
        self.channel: StdioChannel | HttpChannel | None = None  # the same connection, for calls, reads, prompts
        self.tools: list[mt.Tool] = []
        self.by_name: dict[str, ToolSpec] = {}  # kept while down, so calls get "down", not "unknown tool"
        self.catalog = Readables()  # its resources, templates and prompts, as listed when it connected
        self.completions = False  # whether it offers completion/complete
        self.max_read_bytes = max_read_bytes
        self.state: Literal["starting", "up", "down"] = "starting"
        self.error: str | None = None
        self.restarts = 0
        self.first_attempt = anyio.Event()
        self._lost = anyio.Event()

    async def supervise(self) -> None:
        # a previous run's channel, closed when that run stopped, set the old event: start from a fresh one
        self._lost = anyio.Event()
        try:
            await self._keep_connected()
        finally:  # cancelled with the gateway: nothing may use the closed session afterwards
            self.client, self.channel, self.state = None, None, "down"

    async def _keep_connected(self) -> None:
        backoff = 0.5
        while True:
            try:
                async with AsyncExitStack() as stack:
                    channel = await self._channel(stack)
                    # the SDK connects (either era) and lists; calls, reads and prompts go raw on the channel
                    client = await stack.enter_async_context(Client(channel.transport(), mode="auto"))
                    channel.adopt(client)
                    self.tools = await _list_all(client)
                    self.by_name = {spec.name: spec for spec in map(self._spec, self.tools)}
                    self.catalog = await self._list_readables(client)
                    self.completions = client.server_capabilities.completions is not None
                    self.client, self.channel, self.state, self.error = client, channel, "up", None
                    self.first_attempt.set()
                    log.info("upstream up", upstream=self.prefix, tools=len(self.tools), era=client.protocol_version)
                    backoff = 0.5
                    await self._lost.wait()
            except Exception as exc:  # any failure to connect or list is reported, then retried
                self.error = _describe(exc)
                log.warning("upstream failed", upstream=self.prefix, error=self.error)
            self.client, self.channel, self.state = None, None, "down"
            self._lost = anyio.Event()
            self.first_attempt.set()
            await anyio.sleep(backoff)
            backoff = min(backoff * 2, BACKOFF_MAX_S)
            self.restarts += 1

    async def _channel(self, stack: AsyncExitStack) -> StdioChannel | HttpChannel:
        if self.config.url is not None:
            # the SDK's transport and the raw calls share one pooled HTTP client; the stack owns it
            http = await stack.enter_async_context(create_mcp_http_client(headers=self.config.headers or None))
            return HttpChannel(self.config.url, http, self.max_read_bytes)
        assert self.config.command is not None
        argv = [self.config.command, *self.config.args]
        if self.confinement is not None and self.sandbox is not None:
            argv = self.sandbox.command(self.confinement, argv)  # SandboxUnavailable: the server stays down
        env = {**get_default_environment(), **self.config.env}
        return StdioChannel(argv, env, self.config.cwd, self.max_read_bytes, on_lost=lambda: self._lost.set())

    def connected(self) -> StdioChannel | HttpChannel:
        if self.channel is None:
            raise UpstreamUnavailable(
                f"upstream {self.prefix!r} is down: {self.error or 'not connected'}; the gateway keeps retrying",
                upstream=self.prefix,
            )
        return self.channel

    async def call(self, name: str, inv: ToolInvocation) -> Forwarded:
        """tools/call, its result passed on as the upstream sent it (checked, size-capped, not re-parsed)."""
        return await self._forward("tools/call", {"name": name, "arguments": inv.arguments}, inv.progress)

    async def read(self, uri: str) -> Forwarded:
        """resources/read, its contents refused whole when over ``limits.max_read_bytes``."""
        return await self._forward("resources/read", {"uri": uri}, _no_progress, what=f"resource {uri!r}")

    async def prompt(self, name: str, arguments: dict[str, str]) -> Forwarded:
        return await self._forward("prompts/get", {"name": name, "arguments": arguments}, _no_progress)

    async def _forward(self, method: str, params: JSONObject, progress: ProgressFn, what: str = "") -> Forwarded:
        """One request on the channel; its failures as the gateway's errors. A lost connection restarts the
        upstream and is never retried here: the call may have had side effects."""
        channel = self.connected()
        what = what or f"{method.split('/')[0][:-1]} {params['name']!r}"
        try:
            with anyio.fail_after(self.config.timeout_s):
                answer = await channel.request(method, params, progress)
            return Forwarded.checked(method, answer.result, answer.size)
        except ConnectionLost as exc:
            self._lost.set()
            raise UpstreamUnavailable(
                f"upstream {self.prefix!r} closed the connection during the call ({exc}); it is being restarted. "
                "The call may or may not have taken effect.",
                upstream=self.prefix,
            ) from None
        except RemoteError as exc:
            raise ToolFailed(f"upstream {self.prefix!r} error {exc.code}: {exc.message}") from None
        except TooLarge as exc:
            size = f"{exc.size} bytes" if exc.exact else f"more than {exc.size} bytes"
            raise ResultTooLarge(
                f"the answer to {what} from upstream {self.prefix!r} is {size}; limits.max_read_bytes is "
                f"{self.max_read_bytes}, so none of it is returned",
                size=exc.size,
            ) from None
        except Malformed as exc:
            raise UpstreamMalformed(
                f"upstream {self.prefix!r} sent a malformed answer to {what}: {exc}; none of it is passed on"
            ) from None
        except TimeoutError:
            raise ToolFailed(f"upstream {self.prefix!r} did not answer within {self.config.timeout_s:g} s") from None

    async def complete(
        self, ref: mt.PromptReference | mt.ResourceTemplateReference, argument: dict[str, str], context: dict[str, str]
    ) -> mt.CompleteResult:
        """completion/complete where the upstream offers it; otherwise (or down, or failing) no suggestions."""
        if not self.completions or self.client is None:
            return EMPTY_COMPLETION
        try:
            with anyio.fail_after(self.config.timeout_s):
                return _unstamped(await self.client.complete(ref, argument, context or None))
        except (MCPError, TimeoutError) as exc:
            log.info("upstream completion failed", upstream=self.prefix, error=_describe(exc))
            return EMPTY_COMPLETION

    async def _list_readables(self, client: Client) -> Readables:
        capabilities = client.server_capabilities
        readables = Readables()
        if capabilities.resources is not None:
            for resource in await _list_pages(client.session.list_resources, "resources"):
                readables.add_resource(self._resource_spec(resource.name, resource.uri), resource)
            for template in await _list_pages(client.session.list_resource_templates, "resource_templates"):
                readables.add_template(self._resource_spec(template.name, None, template.uri_template), template)
        if capabilities.prompts is not None:
            for prompt in await _list_pages(client.session.list_prompts, "prompts"):
                readables.add_prompt(self._prompt_spec(prompt), prompt)
        return readables

    def _resource_spec(self, name: str, uri: str | None, template: str | None = None) -> ToolSpec:
        """A resource (``uri``) or a template's resources as something the pipeline can judge: read-only by
        definition, its one argument the URI (the resource's own, or one the template matches), which names
        a path read when it is a ``file://`` URI (so paths.rego judges it as it judges fs_read)."""
        pattern = {"const": uri} if uri is not None else {"type": "string", "pattern": template_regex(template or "")}

        async def handler(inv: ToolInvocation) -> Forwarded:
            return await self.read(inv.arguments["uri"])

        return ToolSpec(
            name=exposed_name(self.names_prefix, name),
            provider=f"upstream:{self.prefix}",
            description=f"resource {uri or template} from upstream {self.prefix}",
            input_schema={
                "type": "object",
                "properties": {"uri": pattern},
                "required": ["uri"],
                "additionalProperties": False,
            },
            handler=handler,
            argument_roles={"uri": "resource"},
            read_only=True,
            upstream_name=uri or template,
        )

    def _prompt_spec(self, prompt: mt.Prompt) -> ToolSpec:
        arguments = prompt.arguments or []

        async def handler(inv: ToolInvocation) -> Forwarded:
            return await self.prompt(prompt.name, inv.arguments)

        return ToolSpec(
            name=exposed_name(self.names_prefix, prompt.name),
            provider=f"upstream:{self.prefix}",
            description=prompt.description or f"prompt {prompt.name} from upstream {self.prefix}",
            input_schema={
                "type": "object",
                "properties": {a.name: {"type": "string"} for a in arguments},
                "required": [a.name for a in arguments if a.required],
                "additionalProperties": False,
            },
            handler=handler,
            read_only=True,
            upstream_name=prompt.name,
        )

    def specs(self) -> list[ToolSpec]:
        return list(self.by_name.values())

    def _spec(self, tool: mt.Tool) -> ToolSpec:
        roles: dict[str, str] = {}
        for pattern, mapping in self.config.arguments.items():
            if fnmatch.fnmatchcase(tool.name, pattern):
                roles.update(mapping)
        commit_class = any(fnmatch.fnmatchcase(tool.name, p) for p in self.config.commit_class)
        read_only = any(fnmatch.fnmatchcase(tool.name, p) for p in self.config.read_only)

        async def handler(inv: ToolInvocation) -> Forwarded:
            return await self.call(tool.name, inv)

        return ToolSpec(
            name=exposed_name(self.names_prefix, tool.name),
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
        self,
        configs: dict[str, UpstreamConfig],
        sandbox: Sandbox | None = None,
        confine: Confine | None = None,
        max_read_bytes: int = 1_048_576,
    ) -> None:
        self.upstreams = {
            prefix: Upstream(prefix, config, sandbox, confine, max_read_bytes) for prefix, config in configs.items()
        }

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
        """The upstream whose prefix an exposed name carries (or, unprefixed, that lists it), up or not."""
        prefix = exposed.split(SEPARATOR, 1)[0]
        upstream = self.upstreams.get(prefix) if SEPARATOR in exposed else None
        if upstream is not None and upstream.config.prefixed:
            return upstream
        return next((u for u in self.upstreams.values() if not u.config.prefixed and exposed in u.by_name), None)

    def resources(self) -> list[tuple[ToolSpec, mt.Resource]]:
        """Every listed resource with the spec that names it; a URI two upstreams list is left out."""
        found = [item for u in self.upstreams.values() for item in u.catalog.resources.values()]
        counts = Counter(resource.uri for _, resource in found)
        return [(spec, resource) for spec, resource in found if counts[resource.uri] == 1]

    def templates(self) -> list[tuple[ToolSpec, mt.ResourceTemplate]]:
        return [item for u in self.upstreams.values() for item in u.catalog.templates]

    def prompts(self) -> list[tuple[ToolSpec, mt.Prompt]]:
        return [item for u in self.upstreams.values() for item in u.catalog.prompts.values()]

    def resource(self, uri: str) -> ToolSpec | None:
        """The resource or template a URI belongs to: one an upstream listed, else the one template that
        matches it. None for a URI no upstream claims, or that more than one does (never guessed)."""
        listed = [spec for spec, resource in self.resources() if resource.uri == uri]
        if listed:
            return listed[0]
        if _escapes(uri):
            return None
        matching = [spec for spec, _ in self.templates() if _template_matches(spec, uri)]
        return matching[0] if len(matching) == 1 else None

    def prompt(self, name: str) -> ToolSpec | None:
        return next((spec for spec, _ in self.prompts() if spec.name == name), None)

    def upstream_of(self, spec: ToolSpec) -> Upstream | None:
        return self.upstreams.get(spec.provider.removeprefix("upstream:"))

    def status(self) -> dict[str, dict[str, Any]]:
        return {
            p: {"state": u.state, "tools": len(u.tools), "error": u.error, "restarts": u.restarts}
            for p, u in self.upstreams.items()
        }


class Readables:
    """One upstream's resources, templates and prompts, each with the spec that names it."""

    def __init__(self) -> None:
        self.resources: dict[str, tuple[ToolSpec, mt.Resource]] = {}  # by URI
        self.templates: list[tuple[ToolSpec, mt.ResourceTemplate]] = []
        self.prompts: dict[str, tuple[ToolSpec, mt.Prompt]] = {}  # by exposed name
        self._names: set[str] = set()

    def add_resource(self, spec: ToolSpec, resource: mt.Resource) -> None:
        self.resources[resource.uri] = (self._unique(spec, resource.uri), resource)

    def add_template(self, spec: ToolSpec, template: mt.ResourceTemplate) -> None:
        self.templates.append((self._unique(spec, template.uri_template), template))

    def add_prompt(self, spec: ToolSpec, prompt: mt.Prompt) -> None:
        self.prompts[spec.name] = (spec, prompt)

    def _unique(self, spec: ToolSpec, uri: str) -> ToolSpec:
        # resource names are titles, not keys: two of one upstream may share one; the URI tells them apart
        if spec.name in self._names:
            spec = replace(spec, name=f"{spec.name[:55]}_{hashlib.sha256(uri.encode()).hexdigest()[:8]}")
        self._names.add(spec.name)
        return spec


def _escapes(uri: str) -> bool:
    """A URI that would climb out of where a template puts it: a '.' or '..' segment, an encoded dot,
    slash or backslash, or a backslash. Never matched against a template, so never read."""
    path = uri.split("://", 1)[-1]
    return any(seg in (".", "..") for seg in re.split(r"[/?#]", path)) or bool(re.search(r"%2e|%2f|%5c|\\", uri, re.I))


def _template_matches(spec: ToolSpec, uri: str) -> bool:
    """Whether a template's resource spec claims ``uri``: RE2, since the upstream wrote the template and the
    agent the URI (``{a}-{b}-{c}`` in ``re`` backtracks in the URI's length to the power of its variables)."""
    try:
        return linear(spec.input_schema["properties"]["uri"]["pattern"]).fullmatch(uri) is not None
    except PatternRefused:
        return False  # a template too large to compile claims nothing


def template_regex(template: str) -> str:
    """An RFC 6570 level-1 URI template as a regular expression: each ``{var}`` one path segment."""
    parts = re.split(r"\{[^}]*\}", template)
    return "[^/?#]+".join(re.escape(part) for part in parts)


EMPTY_COMPLETION = mt.CompleteResult(completion=mt.Completion(values=[], total=0, has_more=False))


def _unstamped(result: mt.CompleteResult) -> mt.CompleteResult:
    if result.meta and mt.SERVER_INFO_META_KEY in result.meta:
        # the upstream's identity stamp must not leak downstream as the gateway's
        result.meta = {k: v for k, v in result.meta.items() if k != mt.SERVER_INFO_META_KEY} or None
    return result


async def _list_pages(method: Callable[..., Awaitable[Any]], field: str) -> list[Any]:
    found: list[Any] = []
    cursor: str | None = None
    while True:
        page = await method(params=mt.PaginatedRequestParams(cursor=cursor))
        found.extend(getattr(page, field))
        cursor = page.next_cursor
        if not cursor:
            return found


async def _list_all(client: Client) -> list[mt.Tool]:
    tools: list[mt.Tool] = []
    cursor: str | None = None
    while True:
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            return tools


async def _no_progress(progress: float, total: float | None, message: str | None) -> None:
    return None


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_describe(e) for e in exc.exceptions)
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
