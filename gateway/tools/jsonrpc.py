"""Raw JSON-RPC to an upstream MCP server: the per-call forward path.

A tools/call (or resources/read, prompts/get) goes out as one JSON-RPC request over the connection the
upstream already has, and its answer comes back as the JSON the upstream sent: no SDK session, no result
models. The SDK's ``Client`` still connects over the same connection (``initialize`` or
``server/discover``), lists and completes: for a stdio server the channel *is* its transport (one process,
one pair of pipes, answers routed by id), for streamable HTTP it shares the SDK's pooled HTTP client and the
session the upstream gave at initialize. Each request carries the era's envelope as the SDK's own session
stamps it (``_meta`` and headers on 2026-07-28, the protocol version and session id before).

    channel = StdioChannel(argv, env=env, cwd=None, max_bytes=1 << 20, on_lost=lost.set)
    async with Client(channel.transport(), mode="auto") as client:    # connects and lists through it
        channel.adopt(client)                                           # the era it negotiated
        answer = await channel.request("tools/call", {"name": "echo", "arguments": {"text": "hi"}}, progress)
        answer.result, answer.size                                      # the result object, its bytes

A failure is one of four exceptions, for the caller to word: ``ConnectionLost`` (the upstream is gone: the
call may or may not have run), ``RemoteError`` (a JSON-RPC error answer), ``TooLarge`` (over ``max_bytes``)
and ``Malformed`` (an answer no client could read).
"""

from __future__ import annotations

import itertools
import json
import sys
from collections.abc import Callable, Mapping
from contextlib import AbstractAsyncContextManager, AsyncExitStack, suppress
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import anyio
import httpx2
import structlog
from anyio.abc import Process, TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp import Client
from mcp.client.stdio import _stop_server_process
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.dispatcher import CallOptions
from mcp.shared.message import SessionMessage
from mcp_types import jsonrpc_message_adapter
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from gateway.origin import ProgressFn
from gateway.tools.relay import ASKS, NO_RELAY, ClientRelay, RelayRefused, refusal_answer
from gateway.types import JSONObject

log = structlog.get_logger("gateway.upstream")

LOG_LEVEL_META = "io.modelcontextprotocol/logLevel"  # 2026-07-28: the lowest log level a request asks for
STDIO_LINE_FLOOR = 8 << 20  # a stdio line longer than this (or 4x max_bytes) ends the connection
CANCEL_WRITE_S = 1.0  # how long telling the upstream about a cancelled request may take


class ConnectionLost(Exception):
    """The upstream went away (process exited, connection closed, session gone) before it answered."""


class RemoteError(Exception):
    def __init__(self, code: Any, message: Any) -> None:
        super().__init__(f"{code}: {message}")
        self.code, self.message = code, str(message)[:500]


class TooLarge(Exception):
    def __init__(self, size: int, exact: bool = True) -> None:
        super().__init__(size)
        self.size, self.exact = size, exact


class Malformed(Exception):
    """An answer that is not a JSON-RPC response a client could read; the message says what is wrong."""


@dataclass(frozen=True)
class Answer:
    result: JSONObject
    size: int  # bytes of the JSON-RPC message it came in


Stamp = Callable[[dict[str, Any], CallOptions], None]


class Channel:
    """What both transports share: request ids, the era's envelope, reading an answer."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._ids = itertools.count(1)
        self._stamp: Stamp | None = None
        self.protocol_version: str | None = None
        self.modern = False

    def adopt(self, client: Client) -> None:
        """Stamp requests as ``client``'s session does for the era it negotiated (mcp is pinned to 2.3.*,
        whose session keeps the stamp in ``_stamp``: ``_meta`` and headers per era, Mcp-Param headers)."""
        self._stamp = client.session._stamp
        self.protocol_version = client.protocol_version
        self.modern = client.protocol_version in MODERN_PROTOCOL_VERSIONS

    def _next_id(self) -> str:
        return f"fwd-{next(self._ids)}"  # strings: never one of the SDK session's integer ids

    def _envelope(self, method: str, params: JSONObject, request_id: str | None) -> tuple[JSONObject, dict[str, str]]:
        data: JSONObject = {"jsonrpc": "2.0", "method": method, "params": params}
        if request_id is not None:
            data["id"] = request_id
        options: CallOptions = {}
        if self._stamp is not None:
            self._stamp(data, options)
        return data, options.get("headers", {})

    def _request(
        self, method: str, params: JSONObject, relay: ClientRelay = NO_RELAY
    ) -> tuple[str, JSONObject, dict[str, str]]:
        request_id = self._next_id()
        # progress is asked for on every call; the gateway relays it to its caller (a no-op if it sent no token)
        meta = {**params.get("_meta", {}), "progressToken": request_id}
        if self.modern and relay.log_level is not None:  # 2026-07-28: log messages are opt-in per request
            meta[LOG_LEVEL_META] = relay.log_level
        params = {**params, "_meta": meta}
        data, headers = self._envelope(method, params, request_id)
        return request_id, data, headers

    def _cancellation(self, request_id: str) -> tuple[JSONObject, dict[str, str]]:
        params = {"requestId": request_id, "reason": "the gateway's caller gave up on the call"}
        return self._envelope("notifications/cancelled", params, None)

    async def _reply(self, request: JSONObject, relay: ClientRelay) -> JSONObject:
        """The answer to a request the upstream sent during a call: ping is answered, an elicitation or a
        sampling request is relayed to the call's client (judged first: a refused question is declined, a
        refused sampling request an error), anything else (roots) is refused."""
        reply: JSONObject = {"jsonrpc": "2.0", "id": request["id"]}
        method = request.get("method")
        params = request.get("params")
        if method == "ping":
            reply["result"] = {}
        elif method in ASKS and isinstance(params, dict):
            try:
                reply["result"] = await relay.ask(method, params)
            except RelayRefused as exc:
                result, error = refusal_answer(method, str(exc))
                reply.update({"result": result} if result is not None else {"error": error})
        else:
            reply["error"] = {"code": -32601, "message": f"the gateway does not relay {str(method)[:80]!r}"}
        return reply

    def _answer(self, message: Any, size: int, limit: int | None = None) -> Answer:
        if size > (self.max_bytes if limit is None else limit):
            raise TooLarge(size)
        if not isinstance(message, dict):
            raise Malformed("the answer is not a JSON-RPC object")
        if "error" in message:
            error = message["error"]
            if not isinstance(error, dict):
                raise Malformed("its error is not an object")
            raise RemoteError(error.get("code"), error.get("message"))
        result = message.get("result")
        if not isinstance(result, dict):
            raise Malformed("the answer has no result object")
        return Answer(result, size)


async def _report(progress: ProgressFn, params: Any) -> None:
    """One progress notification passed to the caller; a malformed one is dropped, never fatal."""
    try:
        value = float(params["progress"])
        total = float(params["total"]) if params.get("total") is not None else None
        message = params.get("message")
        await progress(value, total, message if isinstance(message, str) else None)
    except (KeyError, TypeError, ValueError):
        pass


# --- stdio -----------------------------------------------------------------------------------------


class _Pending:
    def __init__(self, progress: ProgressFn, relay: ClientRelay) -> None:
        self.progress = progress
        self.relay = relay
        self.done = anyio.Event()
        self.message: Any = None
        self.size = 0
        self.lost: str | None = None


class StdioChannel(Channel):
    """One stdio server process: JSON-RPC lines on its pipes, answers routed to their request by id.

    It is also the SDK client's transport (``Client(channel.transport())``): every line that is not an
    answer to (or progress of) one of its own requests goes to the SDK session, and the session's
    messages go out on the same stdin.
    """

    def __init__(
        self,
        argv: list[str],
        env: Mapping[str, str],
        cwd: str | None,
        max_bytes: int,
        on_lost: Callable[[], None] = lambda: None,
    ) -> None:
        super().__init__(max_bytes)
        self.argv, self.env, self.cwd = argv, dict(env), cwd
        self.line_limit = max(4 * max_bytes, STDIO_LINE_FLOOR)
        self.on_lost = on_lost
        self._pending: dict[str, _Pending] = {}
        self._lost: str | None = None
        self._write_lock = anyio.Lock()
        self._stack = AsyncExitStack()
        self._process: Process | None = None
        self._to_session: MemoryObjectSendStream[SessionMessage | Exception] | None = None
        self._tg: TaskGroup | None = None

    def transport(self) -> StdioChannel:
        return self

    async def __aenter__(
        self,
    ) -> tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]:
        process = await anyio.open_process(
            self.argv, env=self.env, cwd=self.cwd, stderr=sys.stderr, start_new_session=True
        )
        self._process = process
        self._stack.push_async_callback(self._stop)
        to_session, session_reads = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        session_writes, from_session = anyio.create_memory_object_stream[SessionMessage](0)
        self._to_session = to_session
        tg = self._tg = await self._stack.enter_async_context(anyio.create_task_group())
        self._stack.callback(tg.cancel_scope.cancel)  # runs first: the pipe tasks stop, then the process
        tg.start_soon(self._read, process)
        tg.start_soon(self._write_session, from_session)
        return session_reads, session_writes

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._close("the gateway closed the connection")
        await self._stack.aclose()

    async def request(
        self,
        method: str,
        params: JSONObject,
        progress: ProgressFn,
        max_bytes: int | None = None,
        relay: ClientRelay = NO_RELAY,
    ) -> Answer:
        """One request and its answer; ``max_bytes`` (default the channel's) bounds the answer's size, and
        ``relay`` takes what the upstream asks of the client meanwhile."""
        request_id, data, _ = self._request(method, params, relay)
        pending = self._pending[request_id] = _Pending(progress, relay)
        try:
            await self._send(data)
            await pending.done.wait()
        except BaseException:
            if not pending.done.is_set() and self._lost is None:  # cancelled or timed out: tell the upstream
                with anyio.CancelScope(shield=True), anyio.move_on_after(CANCEL_WRITE_S), suppress(ConnectionLost):
                    await self._send(self._cancellation(request_id)[0])
            raise
        finally:
            del self._pending[request_id]
        if pending.lost is not None:
            raise ConnectionLost(pending.lost)
        return self._answer(pending.message, pending.size, max_bytes)

    async def _send(self, data: JSONObject) -> None:
        if self._lost is not None:
            raise ConnectionLost(self._lost)
        line = json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"
        await self._write(line)

    async def _write(self, line: bytes) -> None:
        assert self._process is not None and self._process.stdin is not None
        try:
            async with self._write_lock:
                await self._process.stdin.send(line)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            self._close("its stdin is closed")
            raise ConnectionLost(self._lost) from None

    async def _write_session(self, from_session: MemoryObjectReceiveStream[SessionMessage]) -> None:
        async with from_session:
            async for message in from_session:
                data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                with suppress(ConnectionLost):
                    await self._write(data.encode() + b"\n")

    async def _read(self, process: Process) -> None:
        assert process.stdout is not None
        buffer, scanned = bytearray(), 0  # scanned: bytes of the buffer known to hold no newline
        try:
            async for chunk in process.stdout:
                buffer += chunk
                while (end := buffer.find(b"\n", scanned)) >= 0 and end <= self.line_limit:
                    line = bytes(buffer[:end])
                    del buffer[: end + 1]
                    scanned = 0
                    await self._route(line)
                if len(buffer) > self.line_limit:  # its first line is longer than any answer may be
                    self._close(f"it wrote a line of more than {self.line_limit} bytes")
                    return
                scanned = len(buffer)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            pass
        self._close("the server exited" if process.returncode is not None else "it closed its stdout")

    async def _route(self, line: bytes) -> None:
        if not line.strip():
            return
        try:
            message = json.loads(line)
        except ValueError:
            log.warning("upstream wrote a line that is not JSON", bytes=len(line))
            return
        if isinstance(message, dict):
            request_id = message.get("id")
            if "method" not in message and isinstance(request_id, str) and request_id in self._pending:
                pending = self._pending[request_id]
                pending.message, pending.size = message, len(line)
                pending.done.set()
                return
            if message.get("method") == "notifications/progress":
                params = message.get("params") or {}
                token = params.get("progressToken") if isinstance(params, dict) else None
                if isinstance(token, str) and token in self._pending:
                    await _report(self._pending[token].progress, params)
                    return
            relay = self._relaying()
            if relay is not None and message.get("method") == "notifications/message":
                if isinstance(message.get("params"), dict):
                    await relay.log(message["params"])
                return
            if relay is not None and isinstance(message.get("method"), str) and "id" in message:
                assert self._tg is not None  # answered in its own task: the pipe keeps being read meanwhile
                self._tg.start_soon(self._relay_request, message, relay)
                return
        try:
            parsed: SessionMessage | Exception = SessionMessage(jsonrpc_message_adapter.validate_python(message))
        except ValidationError as exc:
            parsed = exc
        if self._to_session is not None:
            with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                await self._to_session.send(parsed)

    def _relaying(self) -> ClientRelay | None:
        """The relay of the one call in flight that has a client: stdio carries no link from an upstream's
        request or log message to the call it belongs to, so with two such calls in flight neither gets it
        (the SDK session then declines the request; the log message is dropped)."""
        relays = [p.relay for p in self._pending.values() if p.relay is not NO_RELAY]
        return relays[0] if len(relays) == 1 else None

    async def _relay_request(self, request: JSONObject, relay: ClientRelay) -> None:
        with suppress(ConnectionLost):
            await self._send(await self._reply(request, relay))

    def _close(self, why: str) -> None:
        """The connection is over: every request waiting for an answer gets ``why``, the session its end."""
        if self._lost is not None:
            return
        self._lost = why
        for pending in self._pending.values():
            pending.lost = why
            pending.done.set()
        if self._to_session is not None:
            self._to_session.close()
        self.on_lost()

    async def _stop(self) -> None:
        # the SDK's own shutdown (mcp is pinned to 2.3.*): stdin closed, a grace period, then the process
        # group killed; it polls for the exit, since waiting would also wait for the EOF of an unread stdout
        assert self._process is not None
        with anyio.CancelScope(shield=True):
            await _stop_server_process(self._process)


# --- streamable HTTP -------------------------------------------------------------------------------

SESSION_HEADER = "mcp-session-id"
ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


class HttpChannel(Channel):
    """A streamable-HTTP server: each request one POST on the SDK client's own pooled HTTP client, the
    answer read from a JSON body or from the SSE stream the upstream opens for it."""

    def __init__(self, url: str, http: httpx2.AsyncClient, max_bytes: int) -> None:
        super().__init__(max_bytes)
        self.url = url
        self.http = http
        self.session_id: str | None = None  # a handshake-era upstream's session, as it answered initialize
        http.event_hooks["response"] = [*http.event_hooks.get("response", []), self._note_session]

    def transport(self) -> AbstractAsyncContextManager[Any]:
        return streamable_http_client(self.url, http_client=self.http)

    async def _note_session(self, response: httpx2.Response) -> None:
        if self.session_id is None and (session := response.headers.get(SESSION_HEADER)):
            self.session_id = session

    def _headers(self, headers: dict[str, str]) -> dict[str, str]:
        merged = {**ACCEPT, **headers}
        if self.session_id is not None:
            merged[SESSION_HEADER] = self.session_id
        return merged

    async def request(
        self,
        method: str,
        params: JSONObject,
        progress: ProgressFn,
        max_bytes: int | None = None,
        relay: ClientRelay = NO_RELAY,
    ) -> Answer:
        """One request and its answer; ``max_bytes`` (default the channel's) bounds the answer's size, and
        ``relay`` takes what the upstream asks of the client meanwhile (on the answer's event stream)."""
        request_id, data, headers = self._request(method, params, relay)
        body = json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode()
        limit = self.max_bytes if max_bytes is None else max_bytes
        try:
            async with self.http.stream("POST", self.url, content=body, headers=self._headers(headers)) as response:
                return await self._read(response, request_id, progress, limit, relay)
        except httpx2.HTTPError as exc:
            raise ConnectionLost(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__) from None
        except anyio.get_cancelled_exc_class():
            if not self.modern:  # a 2026-07-28 upstream learns it from the closed stream; older ones are told
                await self._cancel(request_id)
            raise

    async def _cancel(self, request_id: str) -> None:
        data, headers = self._cancellation(request_id)
        with anyio.CancelScope(shield=True), anyio.move_on_after(CANCEL_WRITE_S), suppress(httpx2.HTTPError):
            await self.http.post(self.url, json=data, headers=self._headers(headers))

    async def _read(
        self, response: httpx2.Response, request_id: str, progress: ProgressFn, limit: int, relay: ClientRelay
    ) -> Answer:
        kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
        if response.status_code == 404 and self.session_id is not None:
            raise ConnectionLost("the upstream no longer knows its session (HTTP 404)")
        if response.status_code >= 300 or response.status_code == 202:  # a redirect is not followed
            if kind == "application/json":
                with suppress(ValueError, TooLarge, Malformed):
                    self._answer(json.loads(await self._body(response, limit)), 0)  # a JSON-RPC error answer raises
            raise Malformed(f"it answered HTTP {response.status_code}")
        if kind == "application/json":
            body = await self._body(response, limit)
            try:
                message = json.loads(body)
            except ValueError:
                raise Malformed("its JSON body does not parse") from None
            return self._answer(message, len(body), limit)
        if kind == "text/event-stream":
            return await self._events(response, request_id, progress, limit, relay)
        raise Malformed(f"it answered content type {kind or 'none'!r}")

    async def _body(self, response: httpx2.Response, limit: int) -> bytes:
        declared = response.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise TooLarge(int(declared))
        body = bytearray()
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) > limit:
                raise TooLarge(len(body), exact=False)
        return bytes(body)

    async def _events(
        self, response: httpx2.Response, request_id: str, progress: ProgressFn, limit: int, relay: ClientRelay
    ) -> Answer:
        try:
            async for event in httpx2.EventSource(response, max_event_size=max(4 * limit, STDIO_LINE_FLOOR)):
                if event.event != "message" or not event.data:
                    continue  # a priming event (resumability) or one that is not MCP's
                size = len(event.data.encode())
                if size > limit:
                    raise TooLarge(size)
                try:
                    message = json.loads(event.data)
                except ValueError:
                    raise Malformed("an event of its answer stream does not parse") from None
                if not isinstance(message, dict):
                    raise Malformed("an event of its answer stream is not a JSON-RPC object")
                method = message.get("method")
                if method is None and message.get("id") == request_id:
                    return self._answer(message, size, limit)
                if method == "notifications/progress" and isinstance(message.get("params"), dict):
                    await _report(progress, message["params"])
                elif method == "notifications/message" and isinstance(message.get("params"), dict):
                    await relay.log(message["params"])
                elif method is not None and "id" in message:
                    await self._post_reply(await self._reply(message, relay))
        except httpx2.SSEError:
            raise TooLarge(4 * limit, exact=False) from None
        raise ConnectionLost("its answer stream ended without an answer")

    async def _post_reply(self, reply: JSONObject) -> None:
        headers = {"mcp-protocol-version": self.protocol_version} if self.protocol_version else {}
        with suppress(httpx2.HTTPError):
            await self.http.post(self.url, json=reply, headers=self._headers(headers))
