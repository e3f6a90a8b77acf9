"""MCP wiring: the low-level SDK Server over stdio and streamable HTTP, in both protocol eras.

The handlers only translate between MCP and the pipeline: tools/list shows the caller's role its
tools, tools/call builds an ``Origin`` and a ``Call`` and runs the pipeline. Upstreams' resources,
templates and prompts are listed the same way (by the names the role's globs grant), and resources/read
and prompts/get run the same pipeline, judged as reads of their upstream; completion/complete is
forwarded to the upstream that owns the prompt or template. Over HTTP every request
carries a Bearer token, checked by the auth middleware before MCP sees it (401 with the reason);
over stdio the connection's token comes from GATEWAY_TOKEN and is checked at start and on each call.

    server = build_server(gateway, token=os.environ["GATEWAY_TOKEN"])    # stdio / in-process
    app = http_app(gateway, host="127.0.0.1")                              # Starlette, for uvicorn
    uvicorn.run("gateway.server:worker_app", factory=True, workers=2)      # serve --workers 2
"""

from __future__ import annotations

import functools
import json
import os
import secrets
import socket
import sys
import warnings
from collections.abc import AsyncIterator, Iterable, MutableMapping
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import Any
from weakref import WeakKeyDictionary

import anyio
import mcp_types as mt
import structlog
import uvicorn
from mcp.server import NotificationOptions, Server, ServerRequestContext
from mcp.server.auth.middleware.auth_context import AuthContextMiddleware, get_access_token
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken, TokenVerifier
from mcp.server.context import CallNext
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.subscriptions import ListenHandler
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata, SessionMessage
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.authentication import AuthCredentials, AuthenticationBackend
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.requests import HTTPConnection, Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send
from uvicorn.config import STARTUP_FAILURE

from gateway import __version__
from gateway.call_tasks import EXTENSION, TASK_TOOLS
from gateway.errors import (
    Denied,
    GatewayError,
    InvalidRequest,
    InvalidUnicode,
    MalformedRequest,
    ToolFailed,
    Unauthenticated,
    UnknownTool,
    UpstreamMalformed,
)
from gateway.event_store import RETRY_MS, RecentEvents
from gateway.hooks_http import ClaudeCodeHook
from gateway.identity.resource import ProtectedResource
from gateway.identity.tokens import Tokens
from gateway.judge.call import Call
from gateway.local_http import local_routes
from gateway.metrics import metrics_routes
from gateway.origin import Elicitation, Origin
from gateway.readiness import Readiness
from gateway.runtime import Gateway
from gateway.tools.forwarded import FIELDS, STAND_INS, Forwarded
from gateway.tools.spec import CallResult, ToolSpec
from gateway.tools.upstream import EMPTY_COMPLETION
from gateway.types import JSONObject, Principal
from gateway.unicode import escaped, escaped_value, not_unicode, unparsable_request
from gateway.web import ui_routes

log = structlog.get_logger("gateway.server")

SERVER_NAME = "mcp-policy-gateway"
INSTRUCTIONS = (
    "Every tool call passes a policy gateway. A refused call answers a tool error whose text and "
    "structuredContent say why and what to do next; a tier-3 call may wait for a human's approval."
)
LOOPBACK = ("127.0.0.1", "localhost", "::1")
SEEN = "gateway.server_saw_it"  # set in an HTTP request's ASGI scope once the MCP server has it
WORKER_ENV = "GATEWAY_SERVE_WORKER"  # set by `gateway serve --workers N` for its worker processes


def build_server(gateway: Gateway, token: str | None = None) -> Server[Any]:
    """The MCP server. ``token`` is the connection's credential on stdio and in-process connections."""

    connection = secrets.token_hex(16)  # stdio and in-process: one connection, one session
    # the level each handshake-era connection asked for with logging/setLevel (upstream logs relayed at it)
    log_levels: MutableMapping[Any, str] = WeakKeyDictionary()

    def credential(ctx: ServerRequestContext[Any]) -> str | None:
        if ctx.request is not None:  # HTTP: the bearer token the middleware already verified
            access = get_access_token()
            return access.token if access is not None else None
        return token

    def lister(ctx: ServerRequestContext[Any]) -> Principal:
        try:
            return gateway.tokens.verify(credential(ctx))
        except Unauthenticated as exc:
            gateway.ledger.append({"kind": "list", "outcome": "denied", "detail": {"error": exc.as_dict()}})
            raise MCPError(code=mt.INVALID_REQUEST, message=f"unauthenticated: {exc.message}") from None

    def granted(principal: Principal, spec: ToolSpec) -> bool:
        return gateway.roles.grants(principal, spec.name)

    async def list_tools(
        ctx: ServerRequestContext[Any], params: mt.PaginatedRequestParams | None
    ) -> mt.ListToolsResult:
        principal = lister(ctx)
        return mt.ListToolsResult(tools=[spec.as_mcp_tool() for spec in gateway.visible_tools(principal)])

    async def call_tool(ctx: ServerRequestContext[Any], params: mt.CallToolRequestParams) -> Any:
        origin = origin_for(ctx, params, credential(ctx), connection, log_levels)
        call = client_call(tool=params.name, arguments=dict(params.arguments or {}), origin=origin)
        if params.name in TASK_TOOLS and runs_as_task(ctx):
            return passed_on(await tasks.start(call))
        return passed_on(await gateway.stacks.call(call))

    tasks = TaskRunner(gateway)

    def runs_as_task(ctx: ServerRequestContext[Any]) -> bool:
        """A 2026-07-28 client that declared the tasks extension, while the gateway runs its task group."""
        capabilities = ctx.session.client_capabilities
        declared = capabilities is not None and EXTENSION in (capabilities.extensions or {})
        return declared and ctx.protocol_version in MODERN_PROTOCOL_VERSIONS and gateway.task_runner is not None

    async def get_task(ctx: ServerRequestContext[Any], params: mt.GetTaskRequestParams) -> JSONObject:
        task = gateway.call_tasks.get(params.task_id, lister(ctx).agent)
        if task is None:
            raise MCPError(mt.INVALID_PARAMS, f"no task {params.task_id!r} is yours")
        return {"resultType": "complete", **task}

    async def cancel_task(ctx: ServerRequestContext[Any], params: mt.CancelTaskRequestParams) -> JSONObject:
        if gateway.call_tasks.get(params.task_id, lister(ctx).agent) is None:
            raise MCPError(mt.INVALID_PARAMS, f"no task {params.task_id!r} is yours")
        if not tasks.cancel(params.task_id):
            raise MCPError(mt.INVALID_PARAMS, f"task {params.task_id!r} has ended or runs in another gateway process")
        return {"resultType": "complete"}

    def input_schema(name: str) -> dict[str, Any] | None:
        """What the 2026-07-28 HTTP transport checks a call's Mcp-Param-* headers against: the schema of the
        tool if the caller's role sees it, else None (the pipeline answers as for an unknown tool). Without
        it the SDK would run the whole tools/list handler on every call to find one schema."""
        access = get_access_token()
        try:
            principal = gateway.tokens.verify(access.token if access is not None else None)
        except Unauthenticated:
            return None
        spec = gateway.catalog.get(name)
        return spec.input_schema if spec is not None and granted(principal, spec) else None

    # resources and prompts: listed under the names role files grant; each keeps its upstream name as title

    def listed(ctx: ServerRequestContext[Any], found: Iterable[tuple[ToolSpec, Any]]) -> list[Any]:
        principal = lister(ctx)
        return [
            item.model_copy(update={"name": spec.name, "title": item.title or item.name})
            for spec, item in found
            if granted(principal, spec)
        ]

    async def list_resources(
        ctx: ServerRequestContext[Any], params: mt.PaginatedRequestParams | None
    ) -> mt.ListResourcesResult:
        return mt.ListResourcesResult(resources=listed(ctx, gateway.pool.resources(served=True)))

    async def list_templates(
        ctx: ServerRequestContext[Any], params: mt.PaginatedRequestParams | None
    ) -> mt.ListResourceTemplatesResult:
        return mt.ListResourceTemplatesResult(resource_templates=listed(ctx, gateway.pool.templates(served=True)))

    async def list_prompts(
        ctx: ServerRequestContext[Any], params: mt.PaginatedRequestParams | None
    ) -> mt.ListPromptsResult:
        return mt.ListPromptsResult(prompts=listed(ctx, gateway.pool.prompts(served=True)))

    async def read_resource(ctx: ServerRequestContext[Any], params: mt.ReadResourceRequestParams) -> Any:
        origin = origin_for(ctx, params, credential(ctx), connection, log_levels)
        call = client_call(tool=params.uri, arguments={"uri": params.uri}, origin=origin, method="resources/read")
        return passed_on(answered(await gateway.stacks.read.run(call), mt.ReadResourceResult))

    async def get_prompt(ctx: ServerRequestContext[Any], params: mt.GetPromptRequestParams) -> Any:
        origin = origin_for(ctx, params, credential(ctx), connection, log_levels)
        call = client_call(
            tool=params.name, arguments=dict(params.arguments or {}), origin=origin, method="prompts/get"
        )
        return passed_on(answered(await gateway.stacks.read.run(call), mt.GetPromptResult))

    async def complete(ctx: ServerRequestContext[Any], params: mt.CompleteRequestParams) -> mt.CompleteResult:
        """Suggestions from the upstream that owns the prompt or template, if the role may read it and the
        upstream offers completions; otherwise none (a completion runs nothing, so it is not recorded)."""
        principal = lister(ctx)
        ref = params.ref
        if isinstance(ref, mt.PromptReference):
            spec = next((s for s, _ in gateway.pool.prompts(served=True) if s.name == ref.name), None)
        else:
            spec = next((s for s, t in gateway.pool.templates(served=True) if t.uri_template == ref.uri), None)
        upstream = gateway.pool.upstream_of(spec) if spec is not None else None
        if spec is None or upstream is None or not granted(principal, spec):
            return EMPTY_COMPLETION
        assert spec.upstream_name is not None
        named = {"name": spec.upstream_name} if isinstance(ref, mt.PromptReference) else {}
        upstream_ref = ref.model_copy(update=named)
        context = params.context.arguments if params.context and params.context.arguments else {}
        argument = {"name": params.argument.name, "value": params.argument.value}
        return await upstream.complete(upstream_ref, argument, context)

    async def subscribe(ctx: ServerRequestContext[Any], params: mt.SubscribeRequestParams) -> mt.EmptyResult:
        """Accepted for a resource the role may read: the upstream is told (when it offers subscriptions) and
        its updates of that URI reach this connection (gateway/notices.py)."""
        principal = lister(ctx)
        spec = gateway.pool.resource(params.uri)
        upstream = gateway.pool.upstream_of(spec) if spec is not None else None
        if spec is None or upstream is None or not granted(principal, spec):
            raise MCPError(RESOURCE_NOT_FOUND, f"no resource {params.uri!r} is available to role {principal.role!r}")
        gateway.pool.notices.subscribe(connection_of(ctx.session), params.uri)
        await upstream.subscribe(params.uri, subscribed=True)
        return mt.EmptyResult()

    async def unsubscribe(ctx: ServerRequestContext[Any], params: mt.UnsubscribeRequestParams) -> mt.EmptyResult:
        lister(ctx)
        gateway.pool.notices.unsubscribe(connection_of(ctx.session), params.uri)
        return mt.EmptyResult()

    async def note_connection(ctx: ServerRequestContext[Any], call_next: CallNext) -> Any:
        """A handshake-era connection that made a request is told when the lists it may read change."""
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            gateway.pool.notices.seen(connection_of(ctx.session))
        return await call_next(ctx)

    async def set_logging_level(ctx: ServerRequestContext[Any], params: mt.SetLevelRequestParams) -> mt.EmptyResult:
        """Handshake era: upstream log messages reach this connection at ``params.level`` and above (the
        gateway's own log is structlog's, never sent to clients)."""
        log_levels[connection_of(ctx.session)] = params.level
        return mt.EmptyResult()

    async def record_malformed(ctx: ServerRequestContext[Any], call_next: CallNext) -> Any:
        """A tools/call the SDK refuses before the pipeline sees it (no name, arguments that are not an
        object) is answered -32602 as JSON-RPC says, with what is wrong, and recorded like every other
        refusal (where and what, never the values: they may hold secrets)."""
        if ctx.request is not None:  # HTTP: the server saw this request (ScreenRequests records no refusal of it)
            ctx.request.scope[SEEN] = True
        if ctx.method != "tools/call":
            return await call_next(ctx)
        try:
            return await call_next(ctx)
        except ValidationError as exc:
            wrong = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:5])
            params = ctx.params if isinstance(ctx.params, dict) else {}
            record_refused(gateway, credential(ctx), ctx.method, params, MalformedRequest(wrong[:500]))
            raise MCPError(mt.INVALID_PARAMS, f"malformed tools/call: {wrong[:500]}") from None

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # on_set_logging_level is deprecated as of 2026-07-28 (SEP-2577)
        server = Server(
            SERVER_NAME,
            version=__version__,
            instructions=INSTRUCTIONS,
            on_list_tools=list_tools,
            on_call_tool=call_tool,
            get_tool_input_schema=input_schema,
            on_list_resources=list_resources,
            on_list_resource_templates=list_templates,
            on_read_resource=read_resource,
            on_subscribe_resource=subscribe,
            on_unsubscribe_resource=unsubscribe,
            on_list_prompts=list_prompts,
            on_get_prompt=get_prompt,
            on_completion=complete,
            on_set_logging_level=set_logging_level,
            on_subscriptions_listen=ListenHandler(gateway.pool.notices.bus),  # 2026-07-28 change notices
        )
    # handshake era: the gateway says it sends list_changed (the SDK's default says it does not)
    changes = NotificationOptions(prompts_changed=True, resources_changed=True, tools_changed=True)
    server.create_initialization_options = functools.partial(server.create_initialization_options, changes)  # type: ignore[method-assign]
    server.extensions = {**(server.extensions or {}), EXTENSION: {}}  # 2026-07-28 tasks (gateway/call_tasks.py)
    server.add_request_handler("tasks/get", mt.GetTaskRequestParams, get_task)
    server.add_request_handler("tasks/cancel", mt.CancelTaskRequestParams, cancel_task)
    server.middleware.append(note_connection)
    server.middleware.append(record_malformed)
    server.middleware.append(pass_through)
    return server


# --- requests the SDK cannot parse: text that is not valid Unicode ---------------------------------


def record_refused(gateway: Gateway, token: str | None, method: str, params: Any, error: GatewayError) -> str:
    """One ledger row (kind "call") for a request refused before the pipeline saw it: who, what it named, the
    method when it is not tools/call, and why; never the argument values. Answers its call id."""
    try:
        principal: JSONObject | None = gateway.tokens.verify(token).model_dump()
    except Unauthenticated:
        principal = None
    params = params if isinstance(params, dict) else {}
    name = params.get("uri" if method == "resources/read" else "name")
    detail: JSONObject = {"error": error.as_dict()}
    if method != "tools/call":
        detail["method"] = method
    call_id = secrets.token_hex(16)
    tool = name[:200] if isinstance(name, str) else None
    fields = {"kind": "call", "call_id": call_id, "principal": principal, "tool": tool, "outcome": error.outcome}
    gateway.ledger.append({**fields, "detail": detail})
    return call_id


def refuse_unparsable(gateway: Gateway, request: JSONObject, token: str | None) -> JSONObject:
    """The JSON-RPC error answering a request whose text is not valid Unicode (gateway/unicode.py), which
    the SDK's strict parser refuses unrecorded over HTTP and drops unanswered over stdio; recorded here."""
    problem = not_unicode("request field", request) or "the request is not valid Unicode"
    error = InvalidUnicode(problem)
    method = escaped(str(request["method"]))
    call_id = record_refused(gateway, token, method, request.get("params"), error)
    data = {"error": error.as_dict(), "call_id": call_id}
    answer = {"code": mt.INVALID_PARAMS, "message": f"{error.code}: {error.message}", "data": data}
    return {"jsonrpc": "2.0", "id": escaped_value(request["id"]), "error": answer}


class ScreenRequests:
    """ASGI, in front of the MCP transport: every POSTed JSON-RPC request gets a ledger row, also one the
    gateway's server never sees. One whose text is not valid Unicode is answered here (HTTP 400, JSON-RPC
    -32602 naming where), in both protocol eras; one the transport refuses (HTTP 4xx before the server saw it:
    an Mcp-Name or Mcp-Param header that does not match the body, JSON its strict parser refuses) is recorded
    with the transport's reason. Every other request reaches the transport with its body as sent."""

    def __init__(self, app: Any, gateway: Gateway) -> None:
        self.app = app
        self.gateway = gateway

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        chunks, more = [], True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        user = scope.get("user")
        token = user.access_token.token if isinstance(user, AuthenticatedUser) else None
        request = unparsable_request(body)
        if request is not None:
            # ASCII JSON: an id that holds a lone surrogate is echoed as its escape
            answer = json.dumps(refuse_unparsable(self.gateway, request, token)).encode()
            headers = [(b"content-type", b"application/json"), (b"content-length", str(len(answer)).encode())]
            await send({"type": "http.response.start", "status": 400, "headers": headers})
            await send({"type": "http.response.body", "body": answer})
            return
        replayed, status, refusal = False, 0, bytearray()

        async def replay() -> Any:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        async def watch(message: Any) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            elif status >= 400 and len(refusal) < 4096:
                refusal.extend(message.get("body", b""))
            await send(message)

        await self.app(scope, replay, watch)
        if status >= 400 and not scope.get(SEEN):
            self._record_refusal(body, status, bytes(refusal), token)

    def _record_refusal(self, body: bytes, status: int, answer: bytes, token: str | None) -> None:
        """A JSON-RPC request the transport refused before the server saw it: recorded with its reason."""
        try:
            request = json.loads(body.decode("utf-8", "surrogateescape"))
        except ValueError:
            return  # not JSON, so not a request at all (docs/merge-queue.md): nothing to record
        if not isinstance(request, dict) or not isinstance(request.get("method"), str) or "id" not in request:
            return
        try:
            reason = str(json.loads(answer)["error"]["message"])
        except (ValueError, KeyError, TypeError):
            reason = answer.decode("utf-8", "replace")
        error = MalformedRequest(escaped(f"refused by the transport (HTTP {status}): {reason}"[:500]))
        record_refused(self.gateway, token, escaped(request["method"]), escaped_value(request.get("params")), error)


class ScreenedReads:
    """The stdio transport's read stream, screened: a line the SDK could not parse because its text is not
    valid Unicode (it hands the server the parse error, which drops the request unanswered) is answered
    -32602 on ``write`` and recorded, as over HTTP; everything else passes as it came."""

    def __init__(self, inner: Any, write: Any, gateway: Gateway, token: str | None) -> None:
        self.inner = inner
        self.write = write
        self.gateway = gateway
        self.token = token

    @property
    def last_context(self) -> Any:  # the sender's context, which the SDK restores per message
        return getattr(self.inner, "last_context", None)

    async def receive(self) -> Any:
        while True:
            item = await self.inner.receive()
            request = _unparsed_line(item)
            if request is None:
                return item
            answer = refuse_unparsable(self.gateway, request, self.token)
            await self.write.send(SessionMessage(mt.JSONRPCError.model_validate(answer)))

    async def aclose(self) -> None:
        await self.inner.aclose()

    def __aiter__(self) -> ScreenedReads:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None

    async def __aenter__(self) -> ScreenedReads:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _unparsed_line(item: Any) -> JSONObject | None:
    """The request in a line the stdio transport could not parse (it passes on pydantic's json_invalid error,
    whose input is the line), when its text is not valid Unicode."""
    if not isinstance(item, ValidationError):
        return None
    errors = item.errors()
    line = errors[0].get("input") if errors and errors[0]["type"] == "json_invalid" else None
    return unparsable_request(line) if isinstance(line, str) else None


# --- results passed on as the upstream sent them ----------------------------------------------------

_forwarded: ContextVar[list[Forwarded | TaskCreated]] = ContextVar("forwarded")


@dataclass(frozen=True)
class TaskCreated:
    """A tools/call answered with the task it runs as (2026-07-28 tasks extension): ``resultType`` "task"."""

    task: JSONObject

    def stand_in(self) -> JSONObject:
        return dict(STAND_INS["tools/call"])

    def wire(self, protocol_version: str | None, stamp: Any = None) -> JSONObject:
        meta = {mt.SERVER_INFO_META_KEY: stamp} if stamp is not None else None
        return {"resultType": "task", **self.task, **({"_meta": meta} if meta else {})}


class TaskRunner:
    """Runs a call as a task in the gateway's task group: its state in the store before it starts and when
    it ends (gateway/call_tasks.py), its progress as the task's status message; cancellable in this process."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self.scopes: dict[str, anyio.CancelScope] = {}

    async def start(self, call: Call) -> TaskCreated | Any:
        gateway = self.gateway
        try:
            principal = gateway.tokens.verify(call.origin.token)
        except Unauthenticated:
            return await gateway.stacks.call(call)  # refused and recorded as any call is
        task = gateway.call_tasks.create(principal.agent, call.tool, call.call_id)
        task_id = task["taskId"]
        call.detail["task_id"] = task_id

        async def progress(value: float, total: float | None, message: str | None) -> None:
            gateway.call_tasks.settle(task_id, "working", message=(message or f"{value:g}/{total or '?'}")[:200])

        # the request that started it is answered now: no pushed question, no log, progress to the task
        call.origin = replace(call.origin, progress=progress, elicitation="none", elicit=None, ask=None, log=None)
        scope = self.scopes[task_id] = anyio.CancelScope()
        assert gateway.task_runner is not None
        gateway.task_runner.start_soon(self._run, call, task_id, scope, name=f"task:{task_id}")
        return TaskCreated(task)

    async def _run(self, call: Call, task_id: str, scope: anyio.CancelScope) -> None:
        tasks = self.gateway.call_tasks
        try:
            with scope:
                result = await self.gateway.stacks.call(call)
                if isinstance(result, Forwarded):
                    body = result.wire(MODERN_PROTOCOL_VERSIONS[0])
                else:
                    body = {
                        "resultType": "complete",
                        **result.model_dump(by_alias=True, mode="json", exclude_none=True),
                    }
                tasks.settle(task_id, "completed", result=body)
            if scope.cancelled_caught:
                tasks.settle(task_id, "cancelled", message="cancelled by its client")
        except Exception as exc:  # a bug: the task fails, saying where to look
            log.exception("task failed", task_id=task_id)
            error = {"code": mt.INTERNAL_ERROR, "message": f"internal gateway error (call {call.call_id}): {exc}"[:500]}
            tasks.settle(task_id, "failed", error=error)
        finally:
            self.scopes.pop(task_id, None)

    def cancel(self, task_id: str) -> bool:
        scope = self.scopes.get(task_id)
        if scope is None:
            return False
        scope.cancel()
        return True


def passed_on(result: Any) -> Any:
    """What a handler answers the SDK: its result, or for an upstream's answer (``Forwarded``) or a task the
    call runs as (``TaskCreated``) the smallest valid result of its method, which the SDK checks in its place
    (``pass_through`` then swaps them)."""
    if not isinstance(result, Forwarded | TaskCreated):
        return result
    _forwarded.get().append(result)
    return result.stand_in()


async def pass_through(ctx: ServerRequestContext[Any], call_next: CallNext) -> Any:
    """An upstream's answer goes to the client as the JSON the upstream sent (checked and size-capped by
    the upstream's channel): the SDK validates and re-serialises the handler's stand-in, not the answer.
    Everything the SDK does before the handler (the initialize gate, the params' validation) still runs."""
    if ctx.method not in FORWARDED_METHODS:
        return await call_next(ctx)
    token = _forwarded.set([])
    try:
        shaped = await call_next(ctx)
        forwarded = _forwarded.get()
    finally:
        _forwarded.reset(token)
    if not forwarded:
        return shaped
    meta = shaped.get("_meta") if isinstance(shaped, dict) else None
    stamp = meta.get(mt.SERVER_INFO_META_KEY) if isinstance(meta, dict) else None  # the gateway's own
    return forwarded[0].wire(ctx.protocol_version, stamp)


RESOURCE_NOT_FOUND = -32002  # the MCP specification's code for resources/read of an unknown URI
FORWARDED_METHODS = frozenset(FIELDS)  # the methods whose answers an upstream's channel passes on as sent


def answered(call: Call, expected: type[CallResult]) -> Any:
    """A resources/read or prompts/get answer: its result, or a JSON-RPC error saying why not (a refusal,
    a pending approval, an upstream failure), with the gateway's error as data."""
    result = call.result
    if call.error is None and isinstance(result, expected | mt.InputRequiredResult | Forwarded):
        return result
    error: GatewayError = call.error or Denied("this read waits for a human's approval")
    if isinstance(result, mt.CallToolResult) and result.structured_content:  # "approval pending": say how
        text = "\n".join(b.text for b in result.content if isinstance(b, mt.TextContent))
        raise MCPError(mt.INVALID_REQUEST, text, data={**result.structured_content, "call_id": call.call_id})
    unknown = error.code == UnknownTool.code  # not granted answers exactly as not there: nothing to probe
    if unknown and call.method == "resources/read":
        code = RESOURCE_NOT_FOUND
    elif unknown or isinstance(error, InvalidRequest):
        code = mt.INVALID_PARAMS
    elif isinstance(error, Denied):
        code = mt.INVALID_REQUEST
    else:
        code = mt.INTERNAL_ERROR
    raise MCPError(code, f"{error.code}: {error.message}", data={"error": error.as_dict(), "call_id": call.call_id})


def client_call(origin: Origin, **fields: Any) -> Call:
    """A call from an MCP client; its ledger row names the client as it names itself (clientInfo.name, which
    ``approvals.pending_clients`` matches: Hermes, like every client of the MCP Python SDK that does not set
    one, says "mcp")."""
    call = Call(origin=origin, **fields)
    if origin.client_name:
        call.detail["client"] = origin.client_name[:200]
    return call


def connection_of(session: Any) -> Any:
    """The connection a request's session belongs to (mcp 2.3.* makes a session per request, over one
    ``_connection`` per client connection): what a logging level is kept for."""
    return getattr(session, "_connection", session)


RELAYED: dict[str, tuple[Any, Any]] = {
    "elicitation/create": (mt.ElicitRequest, mt.ElicitResult),
    "sampling/createMessage": (mt.CreateMessageRequest, mt.CreateMessageResult),
}
LOG_LEVEL_META = "io.modelcontextprotocol/logLevel"


def origin_for(
    ctx: ServerRequestContext[Any],
    params: mt.CallToolRequestParams | mt.ReadResourceRequestParams | mt.GetPromptRequestParams,
    token: str | None,
    connection: str,
    log_levels: MutableMapping[Any, str] | None = None,
) -> Origin:
    log_levels = log_levels if log_levels is not None else {}
    session = ctx.session
    modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
    capabilities = session.client_capabilities
    declared = capabilities is not None and capabilities.elicitation is not None
    elicitation: Elicitation
    if not declared:
        elicitation = "none"
    elif modern:
        elicitation = "input_required"
    else:
        elicitation = "push" if session.can_send_request else "none"

    async def progress(value: float, total: float | None, message: str | None) -> None:
        await session.report_progress(value, total, message)

    async def elicit(message: str, schema: JSONObject) -> mt.ElicitResult:
        return await session.elicit_form(message, schema, related_request_id=ctx.request_id)

    async def ask(method: str, asked: JSONObject) -> JSONObject:
        """An upstream's request (judged already), pushed to the client on this call's stream."""
        model, result = RELAYED[method]
        try:
            request = model.model_validate({"method": method, "params": asked})
        except ValidationError as exc:
            raise UpstreamMalformed(f"the upstream's {method} request is malformed: {exc.errors()[0]['msg']}") from None
        try:
            answer = await session.send_request(request, result, metadata=ServerMessageMetadata(ctx.request_id))
        except MCPError as exc:
            raise ToolFailed(f"the client answered {method} with error {exc.error.code}: {exc.error.message}") from None
        return answer.model_dump(by_alias=True, mode="json", exclude_none=True)

    async def log(message: JSONObject) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # send_log_message is deprecated as of 2026-07-28 (SEP-2577)
            await session.send_log_message(
                message["level"], message["data"], message.get("logger"), related_request_id=ctx.request_id
            )

    if modern:  # 2026-07-28: logs are opt-in per request, at the level its _meta names
        log_level = (ctx.meta or {}).get(LOG_LEVEL_META) if isinstance(ctx.meta, dict) else None
    else:
        log_level = log_levels.get(connection_of(session), "debug")

    client = session.client_params.client_info.name if session.client_params else None
    request: Request | None = ctx.request
    return Origin(
        transport="http" if request is not None else "stdio",
        protocol_version=ctx.protocol_version,
        token=token,
        client_name=client,
        # HTTP: the MCP session, or the credential for sessionless 2026-07-28 requests
        session_id=(request.headers.get("mcp-session-id") or token) if request is not None else connection,
        progress=progress,
        elicitation=elicitation,
        elicit=elicit if elicitation == "push" else None,
        input_responses={k: v.model_dump(by_alias=True) for k, v in (params.input_responses or {}).items()} or None,
        request_state=params.request_state,
        meta=dict(params.meta) if params.meta else None,
        ask=ask if not modern and session.can_send_request else None,  # 2026-07-28 has no push
        sampling=capabilities is not None and capabilities.sampling is not None and not modern,
        log=log,
        log_level=log_level if isinstance(log_level, str) else None,
    )


# --- HTTP -----------------------------------------------------------------------------------------


class GatewayTokenVerifier(TokenVerifier):
    """The SDK's TokenVerifier over the gateway's tokens; ``check`` also says why a token is refused."""

    def __init__(self, tokens: Tokens) -> None:
        self.tokens = tokens

    def check(self, token: str) -> AccessToken:
        principal = self.tokens.verify(token)
        return access_token(token, principal, self.tokens.issuer)

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            return self.check(token)
        except Unauthenticated:
            return None


def access_token(token: str, principal: Principal, issuer: str) -> AccessToken:
    # client_id + iss + sub identify the session owner; sub is the jti, so a session is bound to the
    # credential that opened it, not merely to the agent's name
    return AccessToken(
        token=token,
        client_id=principal.agent,
        scopes=[principal.role],
        expires_at=principal.exp,
        subject=principal.jti,
        claims={"iss": issuer, "role": principal.role},
    )


class CredentialBackend(AuthenticationBackend):
    """Bearer authentication that keeps the refusal's reason for the 401 answer."""

    def __init__(self, verifier: GatewayTokenVerifier) -> None:
        self.verifier = verifier

    async def authenticate(self, conn: HTTPConnection) -> tuple[AuthCredentials, AuthenticatedUser] | None:
        header = conn.headers.get("authorization")
        if not header:
            conn.scope["gateway.auth_error"] = "no credential: send 'Authorization: Bearer <token>'"
            return None
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            conn.scope["gateway.auth_error"] = "the Authorization header must be 'Bearer <token>'"
            return None
        token = token.strip()
        await self.verifier.tokens.fetch_keys_for(token)
        try:
            access = self.verifier.check(token)
        except Unauthenticated as exc:
            conn.scope["gateway.auth_error"] = exc.message
            return None
        return AuthCredentials(access.scopes), AuthenticatedUser(access)


class RequireCredential:
    """ASGI wrapper: requests without a verified credential get 401 with the reason (in the body and in
    WWW-Authenticate, which also points to the RFC 9728 metadata), and are recorded."""

    def __init__(self, app: Any, gateway: Gateway, resource: ProtectedResource) -> None:
        self.app = app
        self.gateway = gateway
        self.resource = resource

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if isinstance(scope.get("user"), AuthenticatedUser):
            await self.app(scope, receive, send)
            return
        reason = scope.get("gateway.auth_error", "authentication required")
        self.gateway.ledger.append(
            {
                "kind": "auth",
                "outcome": "denied",
                "detail": {"where": scope.get("path"), "error": {"code": "unauthenticated", "message": reason}},
            }
        )
        conn = HTTPConnection(scope)
        missing = "authorization" not in conn.headers
        # RFC 6750 §3.1: a request that sent no credential gets no error code, only the challenge
        body = json.dumps(
            {"error_description": reason} if missing else {"error": "invalid_token", "error_description": reason}
        ).encode()
        challenge = self.resource.challenge(conn, reason, missing=missing)
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"www-authenticate", challenge.encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


def http_app(
    gateway: Gateway, host: str = "127.0.0.1", allowed_hosts: list[str] | None = None, stateless: bool = False
) -> Starlette:
    """``stateless``: handshake-era (2025-11-25) requests keep no session in this process, so any process
    behind one address can answer any of them (``serve --workers``); the cost is that the gateway cannot push
    an elicitation to such a client (it gets the "approval pending" path). 2026-07-28 requests are sessionless
    either way."""
    server = build_server(gateway)
    allowed_hosts = allowed_hosts or gateway.config.allowed_hosts
    if allowed_hosts:
        security = TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=allowed_hosts)
    elif host in LOOPBACK:
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
            allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
        )
    else:  # bound to a public interface (e.g. in a container): bearer auth is the gate
        security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    # a handshake-era client whose SSE stream dropped resumes it (Last-Event-ID); stateless workers keep none
    events = None if stateless else RecentEvents()
    manager = StreamableHTTPSessionManager(
        app=server,
        security_settings=security,
        stateless=stateless,
        event_store=events,
        retry_interval=RETRY_MS if events is not None else None,
    )
    screened = ScreenRequests(StreamableHTTPASGIApp(manager), gateway)  # every request recorded
    verifier = GatewayTokenVerifier(gateway.tokens)
    resource = ProtectedResource(gateway.config.identity, security, SERVER_NAME)

    async def health(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok", "upstreams": gateway.pool.status()})

    readiness = Readiness(gateway)

    async def ready(request: Request) -> JSONResponse:
        """Whether this gateway can do its job now: the policy, the store, the sandbox (gateway/readiness.py)."""
        is_ready, body = await readiness.report()
        return JSONResponse(body, status_code=200 if is_ready else 503)

    async def attestation_keys(request: Request) -> JSONResponse:
        """The keys that verify the gateway's attestations (every one it signed with): no credential needed."""
        keys = await anyio.to_thread.run_sync(gateway.attestations.jwks)
        return JSONResponse(keys, headers={"Cache-Control": "max-age=60"})

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with gateway.running(), manager.run():
            yield

    return Starlette(
        routes=[
            Route("/mcp", endpoint=RequireCredential(screened, gateway, resource)),
            Route("/healthz", endpoint=health),  # liveness: the process answers
            Route("/readyz", endpoint=ready),  # readiness: its dependencies work
            Route("/.well-known/jwks.json", endpoint=attestation_keys),
            *resource.routes(),  # RFC 9728 metadata (both forms) and /auth: no credential needed
            Route(
                "/hooks/claude-code", RequireCredential(ClaudeCodeHook(gateway), gateway, resource), methods=["POST"]
            ),
            *ui_routes(gateway),  # the review pages (gateway/web): approvers only
            *local_routes(gateway),  # `gateway check` and the command hook, asked by a command on this machine
            # Prometheus, when gateway.yaml enables it
            *metrics_routes(gateway.config.metrics, gateway.telemetry.metrics, gateway.db),
        ],
        middleware=[
            Middleware(AuthenticationMiddleware, backend=CredentialBackend(verifier)),
            Middleware(AuthContextMiddleware),
        ],
        lifespan=lifespan,
    )


class AnnouncedServer(uvicorn.Server):
    """uvicorn's server that says "gateway: serving URL" once it accepts connections, after its start-up
    (the gateway's lifespan) ran, never before."""

    def __init__(self, config: uvicorn.Config, url: str) -> None:
        super().__init__(config)
        self.url = url

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started:
            print(f"gateway: serving {self.url}", file=sys.stderr, flush=True)


def worker_app() -> Starlette:
    """The app of one worker process of ``gateway serve --workers N`` (uvicorn's factory, in a fresh
    process): its own Gateway on the config the supervisor names in ``GATEWAY_SERVE_WORKER``. A worker that
    cannot start exits with uvicorn's startup-failure code, so the supervisor stops instead of respawning it."""
    from gateway.config import GatewayConfig
    from gateway.errors import GatewayError
    from gateway.telemetry import configure_logging

    setup = json.loads(os.environ[WORKER_ENV])
    configure_logging(setup["log_level"])
    try:
        # a client's next request may reach another worker: no handshake-era session lives in one of them
        return http_app(Gateway(GatewayConfig.load(setup["config"])), host=setup["host"], stateless=True)
    except GatewayError as exc:
        print(f"gateway: worker {os.getpid()} cannot start: {exc.message}", file=sys.stderr)
        sys.exit(STARTUP_FAILURE)
