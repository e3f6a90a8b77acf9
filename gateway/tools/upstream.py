"""Upstream MCP servers: connected concurrently, their tools, resources and prompts exposed as
``prefix__name``, calls, reads and completions forwarded.

Resources keep the upstream's URI (clients and embedded resources refer to it): the pool routes a read
by the URIs and URI templates each upstream listed when it connected, and a URI that no upstream listed
(or that two list) is not read. A resource or template is *named* ``prefix__name`` like a tool, and that
name is what role files grant and what the ledger records; its URI is the read's argument.

Each upstream lives in its own supervisor task, which holds the connection open: the SDK's client connects
over it, its listings are read within bounds (``gateway/tools/listing.py``) and each definition is checked
against its pin (``gateway/tools/pins.py``: one not pinned is quarantined, listed to nobody and refused when
called), and calls, reads and prompts go over it as raw JSON-RPC (``gateway/tools/jsonrpc.py``), their
answers passed on as the upstream sent them (``gateway/tools/forwarded.py``). A ``list_changed`` notification
(or, on 2026-07-28, a ``subscriptions/listen`` event) has it listed again and checked again. When the
connection closes (the server died) or a listing crosses a bound, the supervisor reconnects with backoff and
a call in flight answers a clear tool error; it is never retried behind the caller's back, since it may have
had side effects.

    pool = UpstreamPool(config.upstreams, pins=Pins(db, ledger, lockfile))
    async with anyio.create_task_group() as tg:
        await pool.start(tg)
        pool.specs()      # ToolSpecs for every upstream tool that is up and pinned
"""

from __future__ import annotations

import fnmatch
import hashlib
import re
import warnings
from collections import Counter
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import replace
from typing import Any, Literal, TypeVar

import anyio
import mcp_types as mt
import structlog
from anyio.abc import TaskGroup
from mcp import Client, MCPError
from mcp.client.stdio import get_default_environment
from mcp.shared._httpx_utils import create_mcp_http_client
from pydantic import BaseModel, ValidationError

from gateway.config import ListingLimits, UpstreamConfig
from gateway.errors import Denied, ResultTooLarge, ToolFailed, UpstreamMalformed, UpstreamUnavailable
from gateway.linear_regex import PatternRefused, linear
from gateway.notices import KINDS, ChangeNotices
from gateway.origin import ProgressFn
from gateway.sandbox import Confinement, Sandbox
from gateway.tools.forwarded import Forwarded
from gateway.tools.jsonrpc import ConnectionLost, HttpChannel, Malformed, RemoteError, StdioChannel, TooLarge
from gateway.tools.listing import ListingRefused, list_all, no_progress
from gateway.tools.pins import INSTRUCTIONS, Definition, Pins, PinStatus
from gateway.tools.relay import ASKS, NO_RELAY, ClientRelay, RelayRefused, refusal_answer
from gateway.tools.spec import Provider, ToolInvocation, ToolSpec
from gateway.types import JSONObject

log = structlog.get_logger("gateway.upstream")

SEPARATOR = "__"
MAX_NAME = 64
START_TIMEOUT_S = 60.0
INPUT_ROUNDS = 4  # input_required rounds one call may take (2026-07-28)
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
        pins: Pins | None = None,
        listing: ListingLimits | None = None,
    ) -> None:
        self.prefix = prefix
        self.names_prefix = prefix if config.prefixed else None
        self.config = config
        self.sandbox = sandbox
        self.confinement = confine(config) if confine is not None else None
        self.client: Client | None = None  # the SDK's: connects, completes
        self.channel: StdioChannel | HttpChannel | None = None  # the same connection: listings, calls, reads, prompts
        self.tools: list[mt.Tool] = []
        self.by_name: dict[str, ToolSpec] = {}  # kept while down, so calls get "down", not "unknown tool"
        self.catalog = Readables()  # its resources, templates and prompts, as listed when it connected
        self.definitions: dict[tuple[str, str], Definition] = {}  # everything it listed, as pinned
        self.pins = pins  # None: nothing is pinned, so nothing is served (fail closed)
        self.listing = config.listing or listing or ListingLimits()
        self.completions = False  # whether it offers completion/complete
        self.max_read_bytes = max_read_bytes
        self.state: Literal["starting", "up", "down"] = "starting"
        self.error: str | None = None
        self.restarts = 0
        self.first_attempt = anyio.Event()
        self._lost = anyio.Event()
        self._wake = anyio.Event()  # set when the connection is lost or the upstream says a list changed
        self._changed = False
        self.notices: ChangeNotices | None = None  # the gateway's clients, told what it serves changed

    async def supervise(self) -> None:
        # a previous run's channel, closed when that run stopped, set the old event: start from a fresh one
        self._lost, self._wake = anyio.Event(), anyio.Event()
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
                    # the SDK connects (either era); listings, calls, reads and prompts go raw on the channel
                    client = Client(
                        channel.transport(),
                        mode="auto",
                        message_handler=self._on_message,
                        cache=None,
                        # declared, so an upstream may ask; a request in a call goes to the call's client
                        # (gateway/tools/relay.py), one outside any call is refused here
                        elicitation_callback=_unrelated_elicitation,
                        sampling_callback=_unrelated_sampling,
                    )
                    client = await stack.enter_async_context(client)
                    channel.adopt(client)
                    await self._load(client, channel)
                    self.completions = client.server_capabilities.completions is not None
                    self.client, self.channel, self.state, self.error = client, channel, "up", None
                    self.first_attempt.set()
                    log.info("upstream up", upstream=self.prefix, tools=len(self.tools), era=client.protocol_version)
                    backoff = 0.5
                    await self._serve(client, channel)
            except Exception as exc:  # any failure to connect or list is reported, then retried
                self.error = _describe(exc)
                log.warning("upstream failed", upstream=self.prefix, error=self.error)
            self.client, self.channel, self.state = None, None, "down"
            self._lost, self._wake, self._changed = anyio.Event(), anyio.Event(), False
            self.first_attempt.set()
            await anyio.sleep(backoff)
            backoff = min(backoff * 2, BACKOFF_MAX_S)
            self.restarts += 1

    async def _serve(self, client: Client, channel: StdioChannel | HttpChannel) -> None:
        """Until the connection is lost: list again whenever the upstream says a list changed (a listing
        that fails ends the connection, to be made again)."""
        async with anyio.create_task_group() as tg:
            if channel.modern:  # 2026-07-28: list_changed comes as events on a subscriptions/listen stream
                tg.start_soon(self._listen, client)
            while True:
                await self._wake.wait()
                self._wake = anyio.Event()
                if self._lost.is_set():
                    break
                if self._changed:
                    self._changed = False
                    log.info("upstream lists changed; listing again", upstream=self.prefix)
                    await self._load(client, channel)
            tg.cancel_scope.cancel()

    def _note_lost(self) -> None:
        self._lost.set()
        self._wake.set()

    def _note_changed(self) -> None:
        self._changed = True
        self._wake.set()

    async def _on_message(self, message: Any) -> None:
        """The SDK session's notifications (handshake era): a list_changed has the upstream listed again; a
        resource update is passed on to the clients subscribed to it, if the resource is one this upstream
        serves (it may not announce another upstream's)."""
        if isinstance(message, LIST_CHANGED):
            self._note_changed()
        elif isinstance(message, mt.ResourceUpdatedNotification) and self.notices is not None:
            uri = str(message.params.uri)
            if uri in self.catalog.resources or any(_template_matches(s, uri) for s, _ in self.catalog.templates):
                await self.notices.resource_updated(uri)

    async def subscribe(self, uri: str, subscribed: bool) -> None:
        """Pass a client's (un)subscription on to a handshake-era upstream that offers subscriptions (a
        2026-07-28 one has no resources/subscribe); a failure is logged, never the client's problem."""
        client = self.client
        resources = client.server_capabilities.resources if client is not None else None
        if client is None or resources is None or not resources.subscribe or self.channel is None:
            return
        if self.channel.modern:
            return
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # deprecated as of 2026-07-28 (listen replaces it)
            try:
                with anyio.fail_after(self.config.timeout_s):
                    await (client.subscribe_resource(uri) if subscribed else client.unsubscribe_resource(uri))
            except (MCPError, TimeoutError) as exc:
                log.info("upstream subscription failed", upstream=self.prefix, error=_describe(exc))

    async def _listen(self, client: Client) -> None:
        capabilities = client.server_capabilities  # asked of every list it has: it acks what it honours
        tools, resources, prompts = (
            c is not None for c in (capabilities.tools, capabilities.resources, capabilities.prompts)
        )
        if not (tools or resources or prompts):
            return
        try:
            listening = client.listen(
                tools_list_changed=tools, resources_list_changed=resources, prompts_list_changed=prompts
            )
            async with listening as events:
                async for _ in events:
                    self._note_changed()
        except Exception as exc:  # a stream it does not offer, or one that ended: it is listed at reconnect
            log.info("upstream list_changed stream ended", upstream=self.prefix, error=_describe(exc))

    async def _load(self, client: Client, channel: StdioChannel | HttpChannel) -> None:
        """Read every listing within bounds, check each definition against its pin, then swap them in."""
        capabilities = client.server_capabilities
        limits = self.listing
        tools = [_model(mt.Tool, i, "tools/list") for i in await list_all(channel, "tools/list", "tools", limits)]
        definitions = [self._definition("tool", item, exposed_name(self.names_prefix, t.name)) for item, t in tools]
        readables = Readables()
        if capabilities.resources is not None:
            for item in await list_all(channel, "resources/list", "resources", limits):
                _, resource = _model(mt.Resource, item, "resources/list")
                spec = self._resource_spec(resource.name, resource.uri)
                if not self.config.pin_resources:  # the operator's choice: served as listed, never held back
                    readables.add_resource(replace(spec, pin_key=None), resource)
                    continue
                spec = readables.add_resource(spec, resource)
                definitions.append(self._definition("resource", item, spec.name))
            for item in await list_all(channel, "resources/templates/list", "resourceTemplates", limits):
                _, template = _model(mt.ResourceTemplate, item, "resources/templates/list")
                spec = readables.add_template(self._resource_spec(template.name, None, template.uri_template), template)
                definitions.append(self._definition("resource_template", item, spec.name))
        if capabilities.prompts is not None:
            for item in await list_all(channel, "prompts/list", "prompts", limits):
                _, prompt = _model(mt.Prompt, item, "prompts/list")
                spec = readables.add_prompt(self._prompt_spec(prompt), prompt)
                definitions.append(self._definition("prompt", item, spec.name))
        instructions = client.instructions
        server: JSONObject = {"instructions": instructions} if instructions is not None else {}
        definitions.append(self._definition("server", server, f"{self.prefix}:instructions"))
        keyed: dict[tuple[str, str], Definition] = {}
        for definition in definitions:
            if definition.key in keyed:
                raise ListingRefused(f"it lists the {definition.kind} {definition.name[:80]!r} twice")
            keyed[definition.key] = definition
        if self.pins is not None:
            await anyio.to_thread.run_sync(self.pins.reconcile, self.prefix, definitions)
        before = self._served()
        self.tools = [t for _, t in tools]
        self.by_name = {spec.name: spec for spec in (self._spec(t) for t in self.tools)}
        self.catalog, self.definitions = readables, keyed
        after = self._served()
        changed = [kind for kind in KINDS if before.get(kind) != after.get(kind)]
        if changed and self.notices is not None:
            await self.notices.lists_changed(changed)

    def _served(self) -> dict[str, frozenset[tuple[str, str]]]:
        """What it serves now, by list (tools, resources, prompts): each definition not held, by digest."""
        held = self.held()
        served: dict[str, set[tuple[str, str]]] = {}
        for key, definition in self.definitions.items():
            kind = LIST_OF.get(key[0])
            if kind is not None and key not in held:
                served.setdefault(kind, set()).add((key[1], definition.digest))
        return {kind: frozenset(keys) for kind, keys in served.items()}

    def _definition(self, kind: str, body: JSONObject, exposed: str) -> Definition:
        try:
            definition = Definition.of(kind, body, exposed)
        except ValueError as exc:
            raise ListingRefused(f"its {kind} {exposed!r} is not JSON a digest can be taken of: {exc}") from None
        if definition.size > self.listing.definition_bytes:
            raise ListingRefused(
                f"its {kind} {definition.name[:80]!r} is {definition.size} bytes as canonical JSON; the bound is "
                f"{self.listing.definition_bytes} (limits.upstream_listing.definition_bytes, or its listing)"
            )
        return definition

    def statuses(self) -> dict[tuple[str, str], PinStatus]:
        """Each listed definition against the pins as the store holds them now (another process may have
        approved a change): without pins, every one is new."""
        if self.pins is None or not self.definitions:
            return {key: PinStatus("new", d.digest, None) for key, d in self.definitions.items()}
        return self.pins.statuses(self.prefix, self.definitions.values())

    def held(self) -> set[tuple[str, str]]:
        """The keys of the listed definitions that are quarantined."""
        return {key for key, status in self.statuses().items() if status.quarantined}

    def pin(self, spec: ToolSpec) -> PinStatus:
        """The pin status of one of its definitions; one it does not list (any more) is new."""
        definition = self.definitions.get(spec.pin_key) if spec.pin_key else None
        if definition is None or self.pins is None:
            return PinStatus("new", definition.digest if definition else "", None)
        return self.pins.status(self.prefix, definition, self.definitions.get(("server", INSTRUCTIONS)))

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
        return StdioChannel(argv, env, self.config.cwd, self.max_read_bytes, on_lost=self._note_lost)

    def connected(self) -> StdioChannel | HttpChannel:
        if self.channel is None:
            raise UpstreamUnavailable(
                f"upstream {self.prefix!r} is down: {self.error or 'not connected'}; the gateway keeps retrying",
                upstream=self.prefix,
            )
        return self.channel

    async def call(self, name: str, inv: ToolInvocation) -> Forwarded:
        """tools/call, its result passed on as the upstream sent it (checked, size-capped, not re-parsed)."""
        return await self._forward("tools/call", {"name": name, "arguments": inv.arguments}, inv.progress, inv.relay)

    async def read(self, uri: str) -> Forwarded:
        """resources/read, its contents refused whole when over ``limits.max_read_bytes``."""
        return await self._forward("resources/read", {"uri": uri}, no_progress, what=f"resource {uri!r}")

    async def prompt(self, name: str, arguments: dict[str, str]) -> Forwarded:
        return await self._forward("prompts/get", {"name": name, "arguments": arguments}, no_progress)

    async def _forward(
        self, method: str, params: JSONObject, progress: ProgressFn, relay: ClientRelay = NO_RELAY, what: str = ""
    ) -> Forwarded:
        """One request on the channel; its failures as the gateway's errors. A lost connection restarts the
        upstream and is never retried here: the call may have had side effects. A 2026-07-28 upstream that
        answers ``input_required`` gets its questions relayed (``relay``) and the request again with the
        answers, up to ``INPUT_ROUNDS`` times."""
        channel = self.connected()
        what = what or f"{method.split('/')[0][:-1]} {params['name']!r}"
        try:
            with anyio.fail_after(self.config.timeout_s):
                asked = params
                for _ in range(INPUT_ROUNDS):
                    answer = await channel.request(method, asked, progress, relay=relay)
                    if answer.result.get("resultType") != "input_required":
                        return Forwarded.checked(method, answer.result, answer.size)
                    asked = {**params, **await self._answers(answer.result, relay)}
                raise ToolFailed(f"upstream {self.prefix!r} asked for input more than {INPUT_ROUNDS} times in {what}")
        except ConnectionLost as exc:
            self._note_lost()
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

    async def _answers(self, asked: JSONObject, relay: ClientRelay) -> JSONObject:
        """The retry's ``inputResponses`` and ``requestState`` for an ``input_required`` answer: each request
        relayed to the client (judged first; a refused question is declined, any other refusal ends the call)."""
        requests = asked.get("inputRequests") or {}
        if not isinstance(requests, dict):
            raise Malformed("its inputRequests is not an object")
        responses: JSONObject = {}
        for key, request in requests.items():
            method = request.get("method") if isinstance(request, dict) else None
            params = request.get("params") if isinstance(request, dict) else None
            if method not in ASKS or not isinstance(params, dict):
                raise ToolFailed(f"upstream {self.prefix!r} asked for {str(method)[:80]!r}, which is not relayed")
            try:
                responses[key] = await relay.ask(method, params)
            except RelayRefused as exc:
                result, _ = refusal_answer(method, str(exc))
                if result is None:
                    raise Denied(f"upstream {self.prefix!r} asked for {method}, refused: {exc}") from None
                responses[key] = result
        state = asked.get("requestState")
        return {"inputResponses": responses, **({"requestState": state} if isinstance(state, str) else {})}

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

    def _resource_spec(self, name: str, uri: str | None, template: str | None = None) -> ToolSpec:
        """A resource (``uri``) or a template's resources as something the pipeline can judge: read-only by
        definition, its one argument the URI (the resource's own, or one the template matches), which names
        a path read when it is a ``file://`` URI (so paths.rego judges it as it judges fs_read)."""
        pattern = {"const": uri} if uri is not None else {"type": "string", "pattern": template_regex(template or "")}

        async def handler(inv: ToolInvocation) -> Forwarded:
            return await self.read(inv.arguments["uri"])

        return ToolSpec(
            name=exposed_name(self.names_prefix, name),
            provider=Provider.of_upstream(self.prefix),
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
            pin_key=("resource", uri) if uri is not None else ("resource_template", template or ""),
        )

    def _prompt_spec(self, prompt: mt.Prompt) -> ToolSpec:
        arguments = prompt.arguments or []

        async def handler(inv: ToolInvocation) -> Forwarded:
            return await self.prompt(prompt.name, inv.arguments)

        return ToolSpec(
            name=exposed_name(self.names_prefix, prompt.name),
            provider=Provider.of_upstream(self.prefix),
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
            pin_key=("prompt", prompt.name),
        )

    def specs(self) -> list[ToolSpec]:
        """Its tools as agents may see them: every one listed and pinned as listed."""
        held = self.held()
        return [spec for spec in self.by_name.values() if spec.pin_key not in held]

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
            provider=Provider.of_upstream(self.prefix),
            description=tool.description or f"{tool.name} (from upstream {self.prefix}; it gave no description)",
            input_schema=dict(tool.input_schema),
            handler=handler,
            annotations=tool.annotations.model_dump(by_alias=True, exclude_none=True) if tool.annotations else None,
            argument_roles=roles,
            commit_class=commit_class,
            read_only=read_only and not commit_class,
            upstream_name=tool.name,
            pin_key=("tool", tool.name),
        )


class UpstreamPool:
    def __init__(
        self,
        configs: dict[str, UpstreamConfig],
        sandbox: Sandbox | None = None,
        confine: Confine | None = None,
        max_read_bytes: int = 1_048_576,
        pins: Pins | None = None,
        listing: ListingLimits | None = None,
    ) -> None:
        self.upstreams = {
            prefix: Upstream(prefix, config, sandbox, confine, max_read_bytes, pins, listing)
            for prefix, config in configs.items()
        }
        self.notices = ChangeNotices()
        for upstream in self.upstreams.values():
            upstream.notices = self.notices

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

    def resources(self, served: bool = False) -> list[tuple[ToolSpec, mt.Resource]]:
        """Every listed resource with the spec that names it; a URI two upstreams list is left out.
        ``served``: only those agents may see (pinned as listed)."""
        found = [item for u in self.upstreams.values() for item in u.catalog.resources.values()]
        counts = Counter(resource.uri for _, resource in found)
        held = self._held() if served else None
        return [(spec, r) for spec, r in found if counts[r.uri] == 1 and _shown(spec, held)]

    def templates(self, served: bool = False) -> list[tuple[ToolSpec, mt.ResourceTemplate]]:
        held = self._held() if served else None
        return [item for u in self.upstreams.values() for item in u.catalog.templates if _shown(item[0], held)]

    def prompts(self, served: bool = False) -> list[tuple[ToolSpec, mt.Prompt]]:
        held = self._held() if served else None
        return [item for u in self.upstreams.values() for item in u.catalog.prompts.values() if _shown(item[0], held)]

    def _held(self) -> set[tuple[Provider, tuple[str, str]]]:
        """Every quarantined definition, as (provider, pin key)."""
        return {(Provider.of_upstream(u.prefix), key) for u in self.upstreams.values() for key in u.held()}

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
        return self.upstreams.get(spec.provider.prefix or "") if spec.provider.upstream else None

    def status(self) -> dict[str, dict[str, Any]]:
        return {
            p: {
                "state": u.state,
                "tools": len(u.tools),
                "quarantined": len(u.held()),
                "error": u.error,
                "restarts": u.restarts,
            }
            for p, u in self.upstreams.items()
        }


class Readables:
    """One upstream's resources, templates and prompts, each with the spec that names it."""

    def __init__(self) -> None:
        self.resources: dict[str, tuple[ToolSpec, mt.Resource]] = {}  # by URI
        self.templates: list[tuple[ToolSpec, mt.ResourceTemplate]] = []
        self.prompts: dict[str, tuple[ToolSpec, mt.Prompt]] = {}  # by exposed name
        self._names: set[str] = set()

    def add_resource(self, spec: ToolSpec, resource: mt.Resource) -> ToolSpec:
        spec = self._unique(spec, resource.uri)
        self.resources[resource.uri] = (spec, resource)
        return spec

    def add_template(self, spec: ToolSpec, template: mt.ResourceTemplate) -> ToolSpec:
        spec = self._unique(spec, template.uri_template)
        self.templates.append((spec, template))
        return spec

    def add_prompt(self, spec: ToolSpec, prompt: mt.Prompt) -> ToolSpec:
        self.prompts[spec.name] = (spec, prompt)
        return spec

    def _unique(self, spec: ToolSpec, uri: str) -> ToolSpec:
        # resource names are titles, not keys: two of one upstream may share one; the URI tells them apart
        if spec.name in self._names:
            spec = replace(spec, name=f"{spec.name[:55]}_{hashlib.sha256(uri.encode()).hexdigest()[:8]}")
        self._names.add(spec.name)
        return spec


def _shown(spec: ToolSpec, held: set[tuple[Provider, tuple[str, str]]] | None) -> bool:
    return held is None or (spec.provider, spec.pin_key) not in held


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


async def _unrelated_elicitation(context: Any, params: mt.ElicitRequestParams) -> mt.ErrorData:
    """An upstream's question outside any call the gateway forwards (or one it cannot tell the call of):
    nobody's to answer, so refused."""
    return mt.ErrorData(code=mt.INVALID_REQUEST, message="the gateway relays questions only during a call")


async def _unrelated_sampling(context: Any, params: mt.CreateMessageRequestParams) -> mt.ErrorData:
    return mt.ErrorData(code=mt.INVALID_REQUEST, message="the gateway relays sampling only during a call")


# the list a pinned definition's kind is served in (resource list entries not pinned are not followed)
LIST_OF = {"tool": "tools", "resource": "resources", "resource_template": "resources", "prompt": "prompts"}
LIST_CHANGED = (mt.ToolListChangedNotification, mt.ResourceListChangedNotification, mt.PromptListChangedNotification)
ModelT = TypeVar("ModelT", bound=BaseModel)


def _model(model: type[ModelT], item: JSONObject, method: str) -> tuple[JSONObject, ModelT]:
    """A listed item as sent (what is pinned) and as the SDK's model (what is served)."""
    try:
        return item, model.model_validate(item)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(item)"
        raise ListingRefused(
            f"{method} listed an item that is not a {model.__name__}: {where}: {first['msg']}"
        ) from None


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_describe(e) for e in exc.exceptions)
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
