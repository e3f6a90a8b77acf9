"""URLs become Effects: the host a call would contact, or the local file a ``file://`` URL names.

Plain facts, no judgement. Whatever cannot be read with confidence (an unknown scheme, a host with
odd characters, an internationalised host that may imitate another) is stated in ``opaque`` so the
policy fails closed.

    fx = describe_url("https://user@Example.COM:8443/x", workspace, via="fetch")
    fx.network    # [NetworkEffect(host="example.com", via="fetch", port=8443)]
    fx = describe_url("file:///etc/passwd", workspace, via="fetch")
    fx.reads      # ["/etc/passwd"]
    host_of("git@github.com:org/repo.git")   # "github.com"
    host_of("not a url")                      # None
    host_of("http://127.1/")                  # None: an IPv4 address spelled so is refused (gateway/hosts.py)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from gateway.effects.paths import Workspace, suspicious_unicode
from gateway.errors import InvalidArguments
from gateway.hosts import HostRefused, parse_host
from gateway.types import Effects, NetworkEffect

# Schemes whose URL names a host the call would contact. git+https and friends are how pip and npm
# spell VCS requirements.
NETWORK_SCHEMES = frozenset(
    {
        "http",
        "https",
        "ftp",
        "ftps",
        "ws",
        "wss",
        "ssh",
        "git",
        "sftp",
        "scp",
        "rsync",
        "telnet",
        "git+ssh",
        "ssh+git",
        "git+https",
        "git+http",
        "git+git",
    }
)

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
# git's "scp-like" syntax: [user@]host:path, where no slash comes before the colon.
_SCP_LIKE = re.compile(r"^(?:(?P<user>[^@/:\s]+)@)?(?P<host>\[[0-9A-Fa-f:.]+\]|[^@/:\s\[\]\\]+):(?P<path>(?!//).*)$")
_BAD_CHARS = re.compile(r"[\s\x00-\x1f\x7f]")


@dataclass(frozen=True)
class _Target:
    """What a URL points at: a host, a local file, or nothing we can name (``why``)."""

    host: str | None = None
    file: str | None = None
    why: str | None = None
    port: int | None = None  # the port the URL named


def describe_url(url: str, workspace: Workspace, via: str) -> Effects:
    """The facts of contacting ``url``: the host (network) or the file (``file://``), and any doubts."""
    opaque: list[str] = []
    why = suspicious_unicode(url)
    if why:
        opaque.append(f"URL {_short(url)} contains {why}")
    target = _analyse(url)
    if target.why:
        opaque.append(f"URL {_short(url)}: {target.why}")
    if target.host is not None:
        return Effects(network=[NetworkEffect(host=target.host, via=via, port=target.port)], opaque=opaque)
    if target.file is not None:
        try:
            real = workspace.locate(target.file)
        except InvalidArguments as exc:
            return Effects(opaque=[*opaque, f"URL {_short(url)}: {exc.message}"])
        return Effects(reads=[workspace.display(real)], opaque=opaque)
    return Effects(opaque=opaque or [f"URL {_short(url)} could not be analysed"])


def host_of(url: str) -> str | None:
    """The lowercased host a network URL or scp-like address contacts; None if it names none we trust."""
    target = _analyse(url)
    return target.host if target.why is None else None


def check_host(host: str) -> str | None:
    """Why ``host`` (already lowercased, without port) is not a plain host name or IP address, or None.
    Read as the egress proxy reads it (gateway/hosts.py): an IPv4 address spelled other than a.b.c.d is
    refused, so a host the analysis names is one the proxy can match."""
    if not host:
        return "empty host"
    if not host.isascii():
        return "internationalised (IDN) host name"
    try:
        parse_host(host)
    except HostRefused as exc:
        return str(exc)
    return None


def _analyse(url: str) -> _Target:
    if not url:
        return _Target(why="empty URL")
    if _BAD_CHARS.search(url):
        return _Target(why="contains whitespace or control characters")
    scheme_match = _SCHEME.match(url)
    if "://" not in url:
        scp = _SCP_LIKE.match(url)
        if scp and scp.group("path").startswith(":"):
            return _Target(why="remote helper syntax (transport::address) runs a program")
        if scp and _looks_like_host(scp):
            return _host_target(scp.group("host").strip("[]").lower())
        if scheme_match and scheme_match.group(1).lower() == "file":
            return _file_target(url)
        if scheme_match:
            return _Target(why=f"unknown scheme {scheme_match.group(1)!r}")
        return _Target(why="not a URL")
    if not scheme_match:
        return _Target(why="not a URL")
    scheme = scheme_match.group(1).lower()
    if scheme == "file":
        return _file_target(url)
    if scheme not in NETWORK_SCHEMES:
        return _Target(why=f"unknown scheme {scheme!r}")
    return _network_target(url)


def _looks_like_host(scp: re.Match[str]) -> bool:
    """``user@host:path``, ``host.name:path`` or ``[::1]:path`` read as scp-like; ``mailto:x`` does not."""
    host = scp.group("host")
    return bool(scp.group("user")) or "." in host or host.startswith("[") or host.lower() == "localhost"


def _network_target(url: str) -> _Target:
    parts = urlsplit(url)
    netloc = parts.netloc
    # Parsers disagree on these (WHATWG reads "\" as "/", curl and Python do not): refuse to guess.
    if "\\" in netloc:
        return _Target(why="backslash in the authority part")
    if netloc.count("@") > 1:
        return _Target(why="more than one '@' in the authority part")
    if "%" in netloc.rpartition("@")[2]:
        return _Target(why="percent-encoded host name")
    try:
        port = parts.port
    except ValueError:
        return _Target(why="malformed port")
    host = (parts.hostname or "").rstrip(".")
    if not host:
        return _Target(why="no host")
    return _host_target(host, port)


def _host_target(host: str, port: int | None = None) -> _Target:
    host = host.lower().rstrip(".")
    why = check_host(host)
    if why and host and not host.isascii():
        # keep the host as a fact, but the look-alike risk makes it opaque
        return _Target(host=host, why=why, port=port)
    return _Target(host=None if why else host, why=why, port=None if why else port)


def _file_target(url: str) -> _Target:
    parts = urlsplit(url)
    if parts.netloc not in ("", "localhost"):
        return _Target(why=f"file URL on another host {parts.netloc!r}")
    path = unquote(parts.path)
    if not path.startswith("/"):
        return _Target(why="file URL without an absolute path")
    return _Target(file=path)


def _short(text: str, limit: int = 80) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")
