"""The egress proxy: the only way out of the sandbox, to the hosts the call's decision allowed.

A confined command has a network namespace of its own with nothing but a loopback. When the decision for
its call allowed network egress (a tier-3 call a person approved, or a role allowed to run it), the
gateway serves an HTTP proxy on a Unix socket for that one command, bound into its sandbox, where
``egress_inside.py`` relays the command's connections to it. Each connection is checked in four steps, and
any doubt is a 403 with the reason:

1. the request is read strictly: ``CONNECT host:port`` or an absolute-form ``http://host[:port]/...``, in
   printable ASCII, no userinfo, no percent-encoding, one Host header that agrees with the target, and the
   host parsed by gateway/hosts.py (IDNA, canonical IP literals; a NUL or CR/LF anywhere is refused);
2. the host and port must be allowed (gateway/hosts.py ``AllowList``): the hosts the call's effects named,
   label by label, and the download hosts a known registry hands out (pip is sent from pypi.org to
   files.pythonhosted.org); ports 443 and 80, or the port a URL named;
3. the proxy resolves the name itself, once, and every address it resolves to must be one it may reach
   (gateway/addresses.py: no loopback, private, link-local, CGNAT, multicast, metadata or this host's own
   address unless gateway.yaml's ``egress.allow_addresses`` names it; never the gateway's own ports);
4. it connects to that address (no second resolution: a name that rebinds between check and use gets
   nothing).

Every connection, let through or refused, is a ledger row (kind ``egress``) with the host asked for and the
address reached. Only what speaks HTTP(S) through a proxy gets out; ssh, raw sockets and DNS do not. A TLS
tunnel's inner SNI and Host are not inspected: a name served from the same address as an allowed one (a CDN)
is reachable by whoever controls the client's TLS.

    egress = Egress(ledger, AddressGuard(config.egress.allow_addresses))
    async with egress.serving(["pypi.org"], trace_id) as socket_path:
        argv = sandbox.command(confinement, ["/bin/bash", "-c", "pip download requests"], egress=socket_path)
"""

from __future__ import annotations

import shutil
import socket
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager, suppress
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

import anyio
import structlog
from anyio.abc import ByteReceiveStream, SocketStream
from anyio.streams.buffered import BufferedByteReceiveStream

from gateway.addresses import AddressGuard
from gateway.hosts import AllowList, Host, HostRefused, IPAddress, parse_address, parse_authority
from gateway.ledger.chain import Ledger

__all__ = ["COMPANIONS", "Egress", "ProxyRequest", "Refused", "Resolver", "parse_request", "resolve"]

log = structlog.get_logger("gateway.egress")

# Hosts a registry sends its clients on to, allowed along with it.
COMPANIONS = {
    "pypi.org": ("files.pythonhosted.org",),
    "registry.npmjs.org": ("registry.yarnpkg.com",),
    "github.com": ("codeload.github.com", "objects.githubusercontent.com", "raw.githubusercontent.com"),
}
MAX_HEAD = 16_384
CONNECT_TIMEOUT_S = 30.0
RESOLVE_TIMEOUT_S = 10.0
DRAIN_S = 2.0  # how long the connections of a command that has ended may take to close by themselves
# headers that belong to the hop to this proxy, not to the origin server; a plain request goes on with
# "Connection: close", so one connection carries one request to the host that was checked
HOP_HEADERS = frozenset({b"connection", b"proxy-connection", b"keep-alive", b"proxy-authorization", b"te", b"upgrade"})

Resolver = Callable[[str, int], Awaitable[list[str]]]
"""``async (name, port) -> addresses``: the proxy's one name lookup per connection (tests inject their own)."""


class Refused(Exception):
    pass


class Unresolvable(Exception):
    pass


@dataclass(frozen=True)
class ProxyRequest:
    method: str
    host: Host
    port: int
    asked: str  # the target's authority as the client wrote it (escaped), for the ledger
    forward: bytes  # a plain request's head as it goes on to the origin server; empty for CONNECT


async def resolve(name: str, port: int) -> list[str]:
    """The addresses ``name`` resolves to, by the system's resolver."""
    found = await anyio.getaddrinfo(name, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    return [str(sockaddr[0]) for *_, sockaddr in found]


def parse_request(head: bytes) -> ProxyRequest:
    """The proxy request in ``head`` (up to and including the blank line), read strictly; Refused otherwise."""
    lines = head.split(b"\r\n")
    if len(lines) < 3 or lines[-2:] != [b"", b""]:
        raise Refused("the request head does not end with an empty line")
    line, fields = lines[0], lines[1:-2]
    if any(byte < 0x20 or byte > 0x7E for byte in line):
        raise Refused(f"control or non-ASCII byte in the request line {_escaped(line)}")
    parts = line.decode("ascii").split(" ")
    if len(parts) != 3 or parts[2] not in ("HTTP/1.1", "HTTP/1.0"):
        raise Refused(f"not an HTTP/1 proxy request: {_escaped(line)}")
    method, target, _ = parts
    hosts = _host_headers(fields)
    if method == "CONNECT":
        host, port = _authority(target)
        if port is None:
            raise Refused(f"CONNECT needs host:port, not {_escaped(target)}")
        _agrees(hosts, host, port, default=port)
        return ProxyRequest(method, host, port, _escaped(target), b"")
    scheme, sep, rest = target.partition("://")
    if not sep or scheme.lower() != "http":
        raise Refused(f"only http:// requests and CONNECT go through this proxy, not {_escaped(target[:100])}")
    authority = rest.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]
    host, port = _authority(authority)
    port = port or 80
    _agrees(hosts, host, port, default=80)
    kept = [f for f in fields if f.split(b":", 1)[0].strip().lower() not in HOP_HEADERS]
    forward = b"\r\n".join([line, *kept, b"Connection: close", b"", b""])
    return ProxyRequest(method, host, port, _escaped(f"http://{authority}"), forward)


def _host_headers(fields: list[bytes]) -> list[str]:
    """The Host header values; Refused for a header line a server and this proxy could read differently."""
    hosts = []
    for field in fields:
        if any((byte < 0x20 and byte != 0x09) or byte == 0x7F for byte in field):
            raise Refused(f"control byte in a header line {_escaped(field[:100])}")
        if field[:1] in (b" ", b"\t") or b":" not in field:
            raise Refused(f"malformed header line {_escaped(field[:100])}")
        name, value = field.split(b":", 1)
        if name != name.strip():
            raise Refused(f"whitespace around the header name {_escaped(name[:100])}")
        if name.lower() == b"host":
            hosts.append(value.strip().decode("latin-1"))
    if len(hosts) > 1:
        raise Refused("more than one Host header")
    return hosts


def _authority(text: str) -> tuple[Host, int | None]:
    try:
        return parse_authority(text)
    except HostRefused as exc:
        raise Refused(str(exc)) from None


def _agrees(hosts: list[str], host: Host, port: int, default: int) -> None:
    """A Host header, when there is one, names the target the proxy checked: the same host and port."""
    if not hosts:
        return
    named, named_port = _authority(hosts[0])
    if named != host or (named_port or default) != port:
        raise Refused(f"the Host header {_escaped(hosts[0])} does not name the target {host.authority(port)}")


def _escaped(text: str | bytes) -> str:
    """Text from the request as the ledger keeps it: control and non-ASCII bytes escaped, at most 200 long."""
    raw = text.encode("latin-1", "replace") if isinstance(text, str) else text
    return raw[:200].decode("latin-1").encode("unicode_escape").decode("ascii")


class Egress:
    """Serves one proxy per command (``serving``); the ledger, the address guard and the resolver are shared."""

    def __init__(
        self, ledger: Ledger | None = None, guard: AddressGuard | None = None, resolver: Resolver = resolve
    ) -> None:
        self.ledger = ledger
        self.guard = guard or AddressGuard()
        self.resolver = resolver

    @asynccontextmanager
    async def serving(self, hosts: Sequence[str], trace_id: str | None = None) -> AsyncIterator[Path]:
        """A proxy for one command, on a fresh Unix socket (under the gateway's own /tmp, which no sandbox sees)."""
        directory = Path(tempfile.mkdtemp(prefix="gw-egress-"))
        path = directory / "proxy.sock"
        listener = await anyio.create_unix_listener(path)
        allowed = AllowList.of(hosts, COMPANIONS)
        open_connections = _Count()
        try:
            async with anyio.create_task_group() as tg:

                async def handle(client: SocketStream) -> None:
                    with open_connections:
                        async with client:
                            await self._handle(client, allowed, trace_id)

                tg.start_soon(listener.serve, handle)
                try:
                    yield path
                finally:
                    # the command has ended: its connections end with it; cut off only those that linger
                    with anyio.move_on_after(DRAIN_S):
                        await open_connections.none()
                    tg.cancel_scope.cancel()
        finally:
            await listener.aclose()
            shutil.rmtree(directory, ignore_errors=True)

    async def _handle(self, client: SocketStream, allowed: AllowList, trace_id: str | None) -> None:
        reader = BufferedByteReceiveStream(client)
        record = _Recorder(self.ledger, trace_id, allowed.named)
        try:
            try:
                head = await reader.receive_until(b"\r\n\r\n", MAX_HEAD) + b"\r\n\r\n"
            except anyio.DelimiterNotFound:
                raise Refused(f"no complete request head within {MAX_HEAD} bytes") from None
            request = parse_request(head)
            record.asked = request.asked
            why = allowed.refusal(request.host, request.port)
            if why:
                raise Refused(why)
            addresses = await self._addresses(request, record)
        except Refused as exc:
            record("denied", refused=str(exc))
            await _answer(client, 403, str(exc))
            return
        except (anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError):
            record("denied", refused="the client closed the connection before its request")
            return
        except Unresolvable as exc:  # nothing to connect to
            record("error", refused=str(exc))
            await _answer(client, 502, str(exc))
            return
        await self._connect(client, reader, request, addresses, record)

    async def _addresses(self, request: ProxyRequest, record: _Recorder) -> list[IPAddress]:
        """Where ``request`` may go: its IP literal, or what its name resolves to, once; every one checked."""
        host = request.host
        if host.ip is not None:
            found = [host.ip]
        else:
            try:
                with anyio.fail_after(RESOLVE_TIMEOUT_S):
                    answers = await self.resolver(str(host), request.port)
            except OSError as exc:  # socket.gaierror, or TimeoutError
                raise Unresolvable(f"cannot resolve {host}: {str(exc) or type(exc).__name__}") from None
            found = []
            for answer in answers:
                try:
                    found.append(parse_address(answer))
                except ValueError:
                    raise Refused(f"{host} resolves to {_escaped(answer)}, not an IP address") from None
            if not found:
                raise Unresolvable(f"{host} resolves to nothing")
        for address in dict.fromkeys(found):
            why = self.guard.refusal(address, request.port)
            if why:
                record.address = str(address)
                resolved = f"{host} resolves to {address}: " if host.ip is None else ""
                raise Refused(resolved + why)
        return list(dict.fromkeys(found))

    async def _connect(
        self,
        client: SocketStream,
        reader: BufferedByteReceiveStream,
        request: ProxyRequest,
        addresses: list[IPAddress],
        record: _Recorder,
    ) -> None:
        target = request.host.authority(request.port)
        failures = []
        for address in addresses:
            try:
                with anyio.fail_after(CONNECT_TIMEOUT_S):
                    upstream = await anyio.connect_tcp(str(address), request.port)  # the checked address itself
                break
            except (OSError, TimeoutError) as exc:
                failures.append(f"{address}: {str(exc) or type(exc).__name__}")
        else:
            record.address = ", ".join(str(a) for a in addresses)
            record("error", refused=f"cannot connect to {target}: {'; '.join(failures)}")
            await _answer(client, 502, f"cannot connect to {target}")
            return
        record.address = str(address)
        record("ok", target=target)
        async with upstream:
            if request.method == "CONNECT":
                await client.send(b"HTTP/1.1 200 Connection established\r\n\r\n")
            else:
                await upstream.send(request.forward)
            async with anyio.create_task_group() as tg:
                tg.start_soon(_pump, reader, upstream, tg.cancel_scope)
                tg.start_soon(_pump, upstream, client, tg.cancel_scope)


class _Count:
    """Connections being handled; ``none()`` returns once there are none."""

    def __init__(self) -> None:
        self.open = 0
        self.idle = anyio.Event()
        self.idle.set()

    def __enter__(self) -> None:
        if self.open == 0:
            self.idle = anyio.Event()
        self.open += 1

    def __exit__(self, *exc: object) -> None:
        self.open -= 1
        if self.open == 0:
            self.idle.set()

    async def none(self) -> None:
        await self.idle.wait()


class _Recorder:
    """One ledger row per connection: let through ("ok": the target and the address reached) or not (why)."""

    def __init__(self, ledger: Ledger | None, trace_id: str | None, allowed: Sequence[str]) -> None:
        self.ledger = ledger
        self.trace_id = trace_id
        self.allowed = list(allowed)
        self.asked: str | None = None  # the authority the client asked for, once read
        self.address: str | None = None  # the address reached, or the one refused

    def __call__(self, outcome: str, **what: str) -> None:
        if self.ledger is not None:
            detail = {"allowed": self.allowed, "asked": self.asked, "address": self.address, **what}
            self.ledger.append({"kind": "egress", "trace_id": self.trace_id, "outcome": outcome, "detail": detail})
        if outcome != "ok":
            log.warning("egress refused", reason=what.get("refused"), asked=self.asked)


async def _answer(client: SocketStream, status: int, reason: str) -> None:
    body = f"gateway egress proxy: {reason}\n".encode()
    phrase = {403: "Forbidden", 502: "Bad Gateway"}[status]
    head = f"HTTP/1.1 {status} {phrase}\r\nContent-Type: text/plain\r\nContent-Length: {len(body)}\r\n"
    with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
        await client.send(f"{head}Connection: close\r\n\r\n".encode() + body)


# The bytes a call's egress carried, both ways (its budget, gateway/budgets.py): the call's stage sets a
# counter; the proxy's connections, started inside the call, see it.
EGRESS_BYTES: ContextVar[list[int] | None] = ContextVar("egress_bytes", default=None)


async def _pump(source: ByteReceiveStream, sink: SocketStream, scope: anyio.CancelScope) -> None:
    """Copy one direction; at its end pass the end on (the other direction may still be answering)."""
    counter = EGRESS_BYTES.get()
    try:
        while True:
            data = await source.receive()
            if counter is not None:
                counter[0] += len(data)
            await sink.send(data)
    except anyio.EndOfStream:
        try:
            await sink.send_eof()
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            scope.cancel()
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        scope.cancel()
