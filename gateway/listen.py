"""Where ``gateway serve --http`` listens: the address as a person writes it, and the socket bound to it.

Standard library only: the argument parser uses ``parse_listen`` (``gateway --help`` loads no pydantic).
A bare port is loopback: ``8787`` means ``127.0.0.1:8787`` (listening on every interface is always
written out, ``0.0.0.0:8787``). The socket is bound before the gateway says it serves, so an address in
use is one clear error, not a "serving" line followed by an exit.

    parse_listen("8787")              # ("127.0.0.1", 8787)
    parse_listen("[::1]:8787")        # ("::1", 8787)
    sock = listen_socket("127.0.0.1", 8787)   # CannotListen("... address already in use ...")
"""

from __future__ import annotations

import errno
import socket

__all__ = ["LOOPBACK", "listen_socket", "parse_listen"]

LOOPBACK = "127.0.0.1"  # a bare port listens here


def parse_listen(value: str) -> tuple[str, int]:
    """HOST:PORT (an IPv6 host in brackets) or a bare PORT on loopback; ValueError says what is expected."""
    text = value.strip()
    host, sep, port = text.rpartition(":")
    if not sep:
        host, port = LOOPBACK, text
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(
            f"listen address {value!r}: expected HOST:PORT (e.g. 127.0.0.1:8787, 0.0.0.0:8787) or a port "
            "from 1 to 65535 (listens on 127.0.0.1)"
        )
    return host.strip("[]"), int(port)


def listen_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to host:port, inheritable (``serve --workers`` hands it to its worker processes).
    An address in use, not on this machine or not allowed is a CannotListen naming it and what to do."""
    from gateway.errors import CannotListen

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a restart need not wait out TIME_WAIT
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        where = f"[{host}]:{port}" if family == socket.AF_INET6 else f"{host}:{port}"
        raise CannotListen(f"cannot listen on {where}: {why_not(exc, port)}") from None
    sock.set_inheritable(True)
    return sock


def why_not(exc: OSError, port: int) -> str:
    if exc.errno == errno.EADDRINUSE:
        return (
            f"address already in use (another gateway or program listens there: `ss -ltnp 'sport = :{port}'` "
            "names it); stop it or choose another port with --http HOST:PORT"
        )
    if exc.errno == errno.EADDRNOTAVAIL:
        return "no interface of this machine has that address (0.0.0.0 listens on every one)"
    if exc.errno == errno.EACCES:
        return "permission denied (ports below 1024 need privileges: choose a port above 1023)"
    if isinstance(exc, socket.gaierror):
        return f"unknown host ({exc.strerror})"
    return exc.strerror or str(exc)
