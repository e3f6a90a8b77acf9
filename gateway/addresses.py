"""Which IP addresses the egress proxy may connect to: the public internet, and what gateway.yaml names.

Refused unless ``egress.allow_addresses`` names them: loopback, unspecified (0.0.0.0/8, ::), link-local,
private (RFC 1918, unique-local), CGNAT (100.64.0.0/10), multicast, reserved and every other address that
is not globally reachable, and the addresses of this host itself. Cloud metadata services (169.254.169.254,
fd00:ec2::254, ...) only when named exactly, never as part of a named network. An IPv6 address that carries
an IPv4 one (IPv4-mapped, IPv4-compatible, 6to4, Teredo, NAT64) is judged by the IPv4 address too. Never,
whatever gateway.yaml says: the gateway's own listening ports on this host (its /mcp, /ui and hooks).

    guard = AddressGuard(["10.20.0.0/16"], own_ports=lambda: {8787})
    guard.refusal(parse_address("127.0.0.1"), 443)        # "127.0.0.1 is a loopback address; ..."
    guard.refusal(parse_address("10.20.1.5"), 443)        # None: named in gateway.yaml
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Iterable
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network, ip_network

from gateway.hosts import IPAddress, parse_address

__all__ = ["METADATA", "AddressGuard", "address_class", "is_this_host", "listening_ports"]

# cloud metadata services: AWS (IMDS, its IPv6 endpoint, ECS task metadata), GCP, Azure, OCI, DigitalOcean
# (169.254.169.254), GCP's IPv6 endpoint, Alibaba Cloud
METADATA = frozenset(
    parse_address(a) for a in ("169.254.169.254", "fd00:ec2::254", "169.254.170.2", "fd20:ce::254", "100.100.100.200")
)
_THIS_NETWORK = IPv4Network("0.0.0.0/8")  # "this network": Linux connects 0.x.x.x to this host
_CGNAT = IPv4Network("100.64.0.0/10")
_CLASSES: tuple[tuple[str, Callable[[IPAddress], bool]], ...] = (
    ("unspecified", lambda a: a.is_unspecified or a in _THIS_NETWORK),
    ("loopback", lambda a: a.is_loopback),
    ("link-local", lambda a: a.is_link_local),
    ("CGNAT (shared address space)", lambda a: a in _CGNAT),
    ("multicast", lambda a: a.is_multicast),
    ("private", lambda a: a.is_private),
    ("reserved", lambda a: a.is_reserved),
    ("not globally reachable", lambda a: not a.is_global),
)
_NAT64 = (IPv6Network("64:ff9b::/96"), IPv6Network("64:ff9b:1::/48"))
_IPV4_COMPATIBLE = IPv6Network("::/96")


def embedded_ipv4(address: IPv6Address) -> IPv4Address | None:
    """The IPv4 address an IPv6 one carries (and a router may deliver to), or None."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    if any(address in net for net in _NAT64) or (address in _IPV4_COMPATIBLE and int(address) > 1):
        return IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def address_class(address: IPAddress) -> str | None:
    """What makes ``address`` other than a public internet address (loopback, private, cloud metadata, ...)."""
    if address in METADATA:
        return "cloud metadata"
    if isinstance(address, IPv6Address):
        inner = embedded_ipv4(address)
        found = address_class(inner) if inner is not None else None
        if found is not None:
            return f"{found} (as {inner}, which it carries)"
    return next((name for name, test in _CLASSES if test(address)), None)


def is_this_host(address: IPAddress) -> bool:
    """Whether ``address`` is one of this host's own (loopback, unspecified, or bound to an interface here)."""
    if address.is_loopback or address.is_unspecified:
        return True
    family = socket.AF_INET6 if isinstance(address, IPv6Address) else socket.AF_INET
    with socket.socket(family, socket.SOCK_DGRAM) as probe:
        try:
            probe.bind((str(address), 0))  # only an address of this host can be bound
        except OSError:
            return False
    return True


def listening_ports() -> set[int]:
    """The TCP ports this process listens on (Linux: its descriptors in /proc/self/fd; empty elsewhere): the
    gateway's HTTP port under any ``--http`` or ``--workers`` (a worker holds the socket its supervisor bound).
    Each socket is asked directly (a scan of /proc/net/tcp costs milliseconds on a busy host)."""
    ports: set[int] = set()
    try:
        descriptors = os.listdir("/proc/self/fd")
    except OSError:
        return ports
    for name in descriptors:
        try:
            if not os.readlink(f"/proc/self/fd/{name}").startswith("socket:"):
                continue
            with socket.socket(fileno=os.dup(int(name))) as sock:  # a duplicate: closing it leaves ours open
                stream = sock.family in (socket.AF_INET, socket.AF_INET6) and sock.type == socket.SOCK_STREAM
                if stream and sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN):
                    ports.add(int(sock.getsockname()[1]))
        except (OSError, ValueError):  # closed meanwhile, or not a socket after all
            continue
    return ports


class AddressGuard:
    """The addresses the egress proxy refuses, less what gateway.yaml names; the gateway's own ports always."""

    def __init__(self, allowed: Iterable[str] = (), own_ports: Callable[[], set[int]] = listening_ports) -> None:
        self.networks = [_network(text) for text in allowed]
        self.own_ports = own_ports

    def refusal(self, address: IPAddress, port: int) -> str | None:
        """Why the proxy must not connect to ``address:port``, or None."""
        this_host = is_this_host(address)
        if this_host and port in self.own_ports():  # /proc is read only for an address of this host
            return f"{address} port {port} is the gateway's own (this host): never reachable through egress"
        found = address_class(address) or ("this host's own" if this_host else None)
        if found is None or self._named(address, exactly=found == "cloud metadata"):
            return None
        return f"{address} is a {found} address; gateway.yaml (egress.allow_addresses) does not name it"

    def _named(self, address: IPAddress, exactly: bool) -> bool:
        return any(
            address in net and (not exactly or net.num_addresses == 1)
            for net in self.networks
            if net.version == address.version
        )


def _network(text: str) -> IPv4Network | IPv6Network:
    """A named address or network; an IPv4-mapped IPv6 address is its IPv4 address (as the proxy sees it)."""
    network = ip_network(text, strict=True)
    if isinstance(network, IPv6Network) and network.num_addresses == 1:
        address = parse_address(str(network.network_address))
        return ip_network(f"{address}/{address.max_prefixlen}")
    return network
