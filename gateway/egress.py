"""The egress proxy: the only way out of the sandbox, to the hosts the call's decision allowed.

A confined command has a network namespace of its own with nothing but a loopback. When the decision for
its call allowed network egress (a tier-3 call a person approved, or a role allowed to run it), the
gateway serves an HTTP proxy on a Unix socket for that one command, bound into its sandbox, where
``egress_inside.py`` relays the command's connections to it. The proxy lets ``CONNECT host:port`` and
plain ``http://host/...`` requests through to the hosts the call's effects named, their subdomains and
the download hosts a known registry hands out (pip is sent from pypi.org to files.pythonhosted.org);
anything else gets 403 with the reason. Every connection, let through or refused, is in the ledger.
Only what speaks HTTP(S) through a proxy gets out; ssh, raw sockets and DNS do not.

    egress = Egress(ledger)
    async with egress.serving(["pypi.org"], trace_id) as socket_path:
        argv = sandbox.command(confinement, ["/bin/bash", "-c", "pip download requests"], egress=socket_path)
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from urllib.parse import urlsplit

import anyio
import structlog
from anyio.abc import ByteReceiveStream, SocketStream
from anyio.streams.buffered import BufferedByteReceiveStream

from gateway.ledger.chain import Ledger

log = structlog.get_logger("gateway.egress")

# Hosts a registry sends its clients on to, allowed along with it.
COMPANIONS = {
    "pypi.org": ("files.pythonhosted.org",),
    "registry.npmjs.org": ("registry.yarnpkg.com",),
    "github.com": ("codeload.github.com", "objects.githubusercontent.com", "raw.githubusercontent.com"),
}
MAX_HEAD = 16_384
CONNECT_TIMEOUT_S = 30.0


def reachable(host: str, allowed: Sequence[str]) -> bool:
    """Whether ``host`` is one of ``allowed``, a subdomain of one, or a registry's companion host."""
    host = host.lower().rstrip(".")
    names = [*allowed, *(c for a in allowed for c in COMPANIONS.get(a, ()))]
    return any(host == name or host.endswith(f".{name}") for name in names)


class Refused(Exception):
    pass


def target_of(head: bytes) -> tuple[str, str, int]:
    """The request's method, host and port; Refused for anything a proxy should not forward."""
    line = head.split(b"\r\n", 1)[0].decode("latin-1")
    parts = line.split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise Refused(f"not an HTTP/1 proxy request: {line[:100]!r}")
    method, target, _ = parts
    if method == "CONNECT":
        host, sep, port = target.rpartition(":")
        if not sep or not port.isdigit():
            raise Refused(f"CONNECT needs host:port, not {target[:100]!r}")
        return method, host.strip("[]"), int(port)
    url = urlsplit(target)
    if url.scheme != "http" or not url.hostname:
        raise Refused(f"only http:// requests and CONNECT go through this proxy, not {target[:100]!r}")
    return method, url.hostname, url.port or 80


class Egress:
    def __init__(self, ledger: Ledger | None = None) -> None:
        self.ledger = ledger

    @asynccontextmanager
    async def serving(self, hosts: Sequence[str], trace_id: str | None = None) -> AsyncIterator[Path]:
        """A proxy for one command, on a fresh Unix socket (under the gateway's own /tmp, which no sandbox sees)."""
        directory = Path(tempfile.mkdtemp(prefix="gw-egress-"))
        path = directory / "proxy.sock"
        listener = await anyio.create_unix_listener(path)
        try:
            async with anyio.create_task_group() as tg:

                async def handle(client: SocketStream) -> None:
                    async with client:
                        await self._handle(client, tuple(hosts), trace_id)

                tg.start_soon(listener.serve, handle)
                try:
                    yield path
                finally:
                    tg.cancel_scope.cancel()
        finally:
            await listener.aclose()
            shutil.rmtree(directory, ignore_errors=True)

    async def _handle(self, client: SocketStream, hosts: tuple[str, ...], trace_id: str | None) -> None:
        reader = BufferedByteReceiveStream(client)
        try:
            head = await reader.receive_until(b"\r\n\r\n", MAX_HEAD) + b"\r\n\r\n"
            method, host, port = target_of(head)
            if not reachable(host, hosts):
                raise Refused(f"{host} is not among the hosts this call's decision allowed ({', '.join(hosts)})")
        except Refused as exc:
            self._record(trace_id, "denied", hosts, str(exc))
            await _answer(client, 403, str(exc))
            return
        except (anyio.EndOfStream, anyio.IncompleteRead, anyio.DelimiterNotFound):
            return
        try:
            with anyio.fail_after(CONNECT_TIMEOUT_S):
                upstream = await anyio.connect_tcp(host, port)
        except (OSError, TimeoutError) as exc:
            self._record(trace_id, "error", hosts, f"cannot connect to {host}:{port}: {exc}")
            await _answer(client, 502, f"cannot connect to {host}:{port}: {exc}")
            return
        self._record(trace_id, "ok", hosts, f"{host}:{port}")
        async with upstream:
            if method == "CONNECT":
                await client.send(b"HTTP/1.1 200 Connection established\r\n\r\n")
            else:
                await upstream.send(head)
            async with anyio.create_task_group() as tg:
                tg.start_soon(_pump, reader, upstream, tg.cancel_scope)
                tg.start_soon(_pump, upstream, client, tg.cancel_scope)

    def _record(self, trace_id: str | None, outcome: str, hosts: tuple[str, ...], what: str) -> None:
        """One ledger row per connection: let through ("ok", what is host:port) or not (what says why)."""
        if self.ledger is not None:
            detail = {"allowed": list(hosts), "target" if outcome == "ok" else "refused": what}
            self.ledger.append({"kind": "egress", "trace_id": trace_id, "outcome": outcome, "detail": detail})
        if outcome != "ok":
            log.warning("egress refused", reason=what)


async def _answer(client: SocketStream, status: int, reason: str) -> None:
    body = f"gateway egress proxy: {reason}\n".encode()
    phrase = {403: "Forbidden", 502: "Bad Gateway"}[status]
    head = f"HTTP/1.1 {status} {phrase}\r\nContent-Type: text/plain\r\nContent-Length: {len(body)}\r\n"
    with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
        await client.send(f"{head}Connection: close\r\n\r\n".encode() + body)


async def _pump(source: ByteReceiveStream, sink: SocketStream, scope: anyio.CancelScope) -> None:
    """Copy one direction; at its end pass the end on (the other direction may still be answering)."""
    try:
        while True:
            await sink.send(await source.receive())
    except anyio.EndOfStream:
        try:
            await sink.send_eof()
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            scope.cancel()
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        scope.cancel()
