"""Host names, IP literals and ``host:port`` authorities, read strictly, and the allow-list that matches them.

A host is a DNS name in its ASCII form (IDNA, UTS #46), lowercase, without the trailing dot, or an IP address
in its one canonical spelling. What a resolver, a URL parser and a proxy could read two ways is refused with
the reason: control characters, whitespace, userinfo (``user@``), percent-encoding, IPv6 zone ids, empty or
over-long labels, malformed ``xn--`` labels, and an IPv4 address in any spelling but decimal ``a.b.c.d``
(``127.1``, ``0x7f.0.0.1``, ``0177.0.0.1`` and ``2130706433`` all reach 127.0.0.1 through getaddrinfo). An
IPv4-mapped IPv6 address (``::ffff:127.0.0.1``) is its IPv4 address.

The allow-list matches names label by label, never as a suffix of a string: ``pypi.org`` allows ``pypi.org``
only (not ``evilpypi.org``, ``pypi.org.evil.com`` nor ``x.pypi.org``); ``*.githubusercontent.com`` allows one
or more labels before ``githubusercontent.com`` and not the name itself. IP literals match exactly, and never
a name. Ports are as declared: an entry without one allows 443 and 80; ``host:8443`` allows 8443 alone.

    parse_host("Pypi.ORG.")                 # Host(name="pypi.org")
    parse_host("bücher.example")            # Host(name="xn--bcher-kva.example")
    parse_host("[::ffff:127.0.0.1]")        # Host(ip=IPv4Address("127.0.0.1"))
    parse_host("127.1")                     # HostRefused: an IPv4 address spelled '127.1' ...
    parse_authority("example.com:8443")     # (Host(name="example.com"), 8443)
    allowed = AllowList.of(["pypi.org", "127.0.0.1:8080"], companions={"pypi.org": ("files.pythonhosted.org",)})
    allowed.refusal(parse_host("files.pythonhosted.org"), 443)   # None: allowed
"""

from __future__ import annotations

import ipaddress
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv6Address

import idna

__all__ = [
    "DEFAULT_PORTS",
    "AllowList",
    "Host",
    "HostRefused",
    "IPAddress",
    "parse_address",
    "parse_authority",
    "parse_host",
    "parse_port",
]

IPAddress = IPv4Address | IPv6Address
DEFAULT_PORTS = frozenset({443, 80})  # what a host allowed without a port may be reached on

_LABEL = re.compile(r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?")
_NUMERIC_LABEL = re.compile(r"0x[0-9a-f]*|[0-9]+")  # a label that makes a resolver read the name as IPv4
_DECIMAL_OCTET = re.compile(r"0|[1-9][0-9]{0,2}")
_PORT = re.compile(r"[1-9][0-9]{0,4}")
_INVISIBLE = frozenset({"Cc", "Cf", "Zs", "Zl", "Zp"})  # controls, format characters (soft hyphen...), spaces
_CONTROL = re.compile(r"[\x00-\x20\x7f-\x9f]")  # controls and the space: refused before anything else
# never part of a host, whatever a parser would make of them (% and @ are named with their own reasons)
_NOT_IN_HOST = re.compile(r"[\x00-\x20\x7f-\x9f/\\?#\[\]<>^`{|}\"',;=*!$&()+~]")


class HostRefused(ValueError):
    """A host, port or authority that cannot be read one way only; the message says why."""


@dataclass(frozen=True)
class Host:
    """A DNS name (ASCII, lowercase, no trailing dot) or an IP address; exactly one of the two."""

    name: str | None = None
    ip: IPAddress | None = None

    def __str__(self) -> str:
        return self.name if self.name is not None else str(self.ip)

    def authority(self, port: int) -> str:
        return f"[{self.ip}]:{port}" if isinstance(self.ip, IPv6Address) else f"{self}:{port}"

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(self.name.split(".")) if self.name is not None else ()


def parse_address(text: str) -> IPAddress:
    """An IP address in its canonical form (IPv4-mapped IPv6 as IPv4); ValueError when it is not one."""
    address = ipaddress.ip_address(text)
    if isinstance(address, IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def parse_host(text: str) -> Host:
    """``text`` as a host, or HostRefused saying why it cannot be read one way only."""
    if not text:
        raise HostRefused("empty host")
    if len(text) > 255:
        raise HostRefused("host longer than 255 characters")
    control = _CONTROL.search(text)
    if control:
        raise HostRefused(f"host {text!r} holds {control.group()!r}")
    if text.startswith("[") or ":" in text:
        return Host(ip=_ipv6(text[1:-1] if text.startswith("[") and text.endswith("]") else text))
    if "@" in text:
        raise HostRefused(f"userinfo ('@') in host {text!r}")
    if "%" in text:
        raise HostRefused(f"percent-encoding in host {text!r}")
    bad = _NOT_IN_HOST.search(text)
    if bad:
        raise HostRefused(f"host {text!r} holds {bad.group()!r}")
    if not text.isascii():
        invisible = next((c for c in text if unicodedata.category(c) in _INVISIBLE), None)
        if invisible is not None:
            raise HostRefused(f"host {text!r} holds the invisible or space character U+{ord(invisible):04X}")
        text = _idna(text)
    name = text.lower()
    name = name[:-1] if name.endswith(".") else name  # the absolute form: the same name
    labels = name.split(".")
    if _NUMERIC_LABEL.fullmatch(labels[-1]):
        return Host(ip=_ipv4(name))
    if len(name) > 253:
        raise HostRefused("host name longer than 253 characters")
    for label in labels:
        if not _LABEL.fullmatch(label):
            raise HostRefused(f"host {text!r} has an empty, over-long or malformed label {label!r}")
        if label.startswith("xn--"):
            _check_a_label(label)
    return Host(name=name)


def parse_port(text: str) -> int:
    """A port as declared: decimal, no sign, no leading zero, 1-65535."""
    if not _PORT.fullmatch(text) or int(text) > 65535:
        raise HostRefused(f"port {text!r} is not a decimal number from 1 to 65535")
    return int(text)


def parse_authority(text: str) -> tuple[Host, int | None]:
    """``host``, ``host:port``, ``[v6]`` or ``[v6]:port``: the host and the port (None when not given)."""
    if "@" in text:
        raise HostRefused(f"userinfo ('@') in {text!r}")
    if text.startswith("["):
        close = text.find("]")
        rest = text[close + 1 :] if close > 0 else ""
        if close < 0 or (rest and not rest.startswith(":")):
            raise HostRefused(f"malformed bracketed address in {text!r}")
        host = Host(ip=_ipv6(text[1:close]))
        return host, parse_port(rest[1:]) if rest else None
    if text.count(":") > 1:
        raise HostRefused(f"an IPv6 address takes brackets before a port: {text!r}")
    name, sep, port = text.partition(":")
    return parse_host(name), parse_port(port) if sep else None


def _ipv6(text: str) -> IPAddress:
    if "%" in text:
        raise HostRefused(f"IPv6 zone id in {text!r}")
    try:
        return parse_address(str(IPv6Address(text)))
    except ValueError:
        raise HostRefused(f"{text!r} is not an IPv6 address") from None


def _ipv4(name: str) -> IPv4Address:
    octets = name.split(".")
    if len(octets) != 4 or not all(_DECIMAL_OCTET.fullmatch(o) and int(o) <= 255 for o in octets):
        raise HostRefused(
            f"an IPv4 address spelled {name!r}: only decimal a.b.c.d is taken (127.1, 0x7f.0.0.1, 0177.0.0.1 and "
            "2130706433 all reach 127.0.0.1)"
        )
    return IPv4Address(name)


def _idna(text: str) -> str:
    try:
        return idna.encode(text, uts46=True).decode("ascii")
    except idna.IDNAError as exc:
        raise HostRefused(f"host {text!r} is not a valid internationalised name: {exc}") from None


def _check_a_label(label: str) -> None:
    try:
        if idna.encode(idna.decode(label)).decode("ascii") != label:
            raise idna.IDNAError("not in its canonical form")
    except (idna.IDNAError, UnicodeError) as exc:
        raise HostRefused(f"malformed IDNA label {label!r}: {exc}") from None


@dataclass(frozen=True)
class _Entry:
    host: Host
    ports: frozenset[int]
    subdomains: bool = False  # "*.example.com": one or more labels before it, never the name itself

    def matches(self, host: Host) -> bool:
        if self.host.ip is not None or host.ip is not None:
            return self.host.ip is not None and self.host.ip == host.ip
        mine, theirs = self.host.labels, host.labels
        if self.subdomains:
            return len(theirs) > len(mine) and theirs[-len(mine) :] == mine
        return theirs == mine


class AllowList:
    """The hosts (and ports) one call's decision allowed; an entry that cannot be read allows nothing."""

    def __init__(self, entries: Sequence[_Entry], named: Sequence[str]) -> None:
        self.entries = tuple(entries)
        self.named = tuple(named)

    @classmethod
    def of(cls, allowed: Iterable[str], companions: Mapping[str, Sequence[str]] | None = None) -> AllowList:
        """``allowed`` (``host``, ``host:port``, ``[v6]:port``, ``*.name``) and the companions of each."""
        named = list(allowed)
        entries = []
        for text in named:
            entry = _entry(text)
            if entry is None:
                continue
            entries.append(entry)
            for companion in (companions or {}).get(str(entry.host), ()) if not entry.subdomains else ():
                extra = _entry(companion)
                if extra is not None:
                    entries.append(extra)
        return cls(entries, named)

    def refusal(self, host: Host, port: int) -> str | None:
        """Why ``host:port`` is not allowed, or None when it is."""
        matching = [e for e in self.entries if e.matches(host)]
        if not matching:
            listed = ", ".join(self.named) or "none"
            return f"{host} is not among the hosts this call's decision allowed ({listed})"
        if not any(port in e.ports for e in matching):
            ports = ", ".join(str(p) for p in sorted({p for e in matching for p in e.ports}))
            return f"port {port} of {host} is not allowed (allowed: {ports}; a URL that names a port allows that one)"
        return None


def _entry(text: str) -> _Entry | None:
    """An allow-list entry; None for one that names no host (``listen:8000``, an unreadable name)."""
    subdomains = text.startswith("*.")
    try:
        try:
            host, port = parse_host(text[2:] if subdomains else text), None
        except HostRefused:
            host, port = parse_authority(text)
    except HostRefused:
        return None
    if subdomains and (host.ip is not None or len(host.labels) < 2):
        return None
    return _Entry(host, frozenset({port}) if port else DEFAULT_PORTS, subdomains)
