"""The egress proxy checks what it connects to: strict host parsing, a label-by-label allow-list with ports as
declared, one resolution by the proxy itself, no loopback, private, link-local, CGNAT, multicast, unspecified or
cloud metadata address unless gateway.yaml names it, and never the gateway's own ports.

Unit tests of the parser (gateway/hosts.py), the address guard (gateway/addresses.py) and the request reader;
then the proxy on real sockets, with a real HTTP server in a process of its own as the target. Where a test
needs a name that resolves to a chosen address (metadata, a private network, a name that rebinds), the resolver
is injected at the proxy's seam (``Egress(resolver=...)``): this machine has no DNS to point a name anywhere.
``localhost`` is resolved by the system's resolver. Last, a live gateway runs a real confined command (bubblewrap)
that a person approved and that tries each trick, the gateway's own port among them.
"""

from __future__ import annotations

import json
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import http_client, http_gateway, ledger_rows, make_repo, reconfigure, text_of, token
from conftest import workspace_for_tests as workspace

from gateway.addresses import AddressGuard, address_class, listening_ports
from gateway.egress import COMPANIONS, Egress, Refused, parse_request
from gateway.errors import ConfigError
from gateway.hosts import AllowList, HostRefused, parse_address, parse_authority, parse_host
from gateway.process import free_port, gateway_cli, server_process
from gateway.runtime import Gateway

pytestmark = pytest.mark.anyio

HELLO = Path(__file__).parent / "servers" / "hello_http.py"


# --- hosts: parsed one way only ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "host"),
    [
        ("Pypi.ORG.", "pypi.org"),
        ("b\u00fccher.example", "xn--bcher-kva.example"),
        ("xn--bcher-kva.example", "xn--bcher-kva.example"),
        ("_dmarc.example.com", "_dmarc.example.com"),
        ("10.0.0.1", "10.0.0.1"),
        ("127.0.0.1.", "127.0.0.1"),
        ("[::1]", "::1"),
        ("0:0:0:0:0:0:0:1", "::1"),
        ("::FFFF:127.0.0.1", "127.0.0.1"),
        ("[::ffff:7f00:1]", "127.0.0.1"),
    ],
)
def test_hosts_are_normalised(text: str, host: str) -> None:
    assert str(parse_host(text)) == host


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "empty host"),
        ("127.1", "IPv4 address spelled"),
        ("0x7f.0.0.1", "IPv4 address spelled"),
        ("0X7F.1", "IPv4 address spelled"),
        ("0177.0.0.1", "IPv4 address spelled"),
        ("2130706433", "IPv4 address spelled"),
        ("1.2.3.04", "IPv4 address spelled"),
        ("1.2.3.256", "IPv4 address spelled"),
        ("evil.example.1", "IPv4 address spelled"),
        ("127.0.0.1\x00.pypi.org", "'\\x00'"),
        ("pypi.org\r\nHost: evil", "'\\r'"),
        ("pypi .org", "' '"),
        ("pypi.org\t", "'\\t'"),
        ("user@pypi.org", "userinfo"),
        ("pypi%2eorg", "percent-encoding"),
        ("pypi.org/evil", "'/'"),
        ("evil.com\\@pypi.org", "userinfo"),
        ("a..b", "label"),
        ("-a.example", "label"),
        ("a" * 64 + ".example", "label"),
        ("exam\u00adple.com", "U+00AD"),
        ("pypi\u200b.org", "U+200B"),
        ("xn--zz.example", "IDNA"),
        ("fe80::1%eth0", "zone id"),
        ("[::1", "not an IPv6 address"),
        ("::1::2", "not an IPv6 address"),
    ],
)
def test_hosts_read_two_ways_are_refused(text: str, why: str) -> None:
    with pytest.raises(HostRefused, match=None) as refused:
        parse_host(text)
    assert why in str(refused.value), str(refused.value)


@pytest.mark.parametrize(
    ("text", "host", "port"),
    [("example.com:8443", "example.com", 8443), ("[::1]:80", "::1", 80), ("pypi.org", "pypi.org", None)],
)
def test_authorities(text: str, host: str, port: int | None) -> None:
    parsed, parsed_port = parse_authority(text)
    assert (str(parsed), parsed_port) == (host, port)


@pytest.mark.parametrize(
    "text",
    [
        *("example.com:", "example.com:0443", "example.com:+443", "example.com:65536", "example.com:0", "::1:80"),
        *("user:pw@example.com:443", "[::1]x", "[::1]:", "example.com:443:80", "example.com: 443"),
    ],
)
def test_authorities_read_two_ways_are_refused(text: str) -> None:
    with pytest.raises(HostRefused):
        parse_authority(text)


# --- the allow-list: label by label, IP literals exactly, ports as declared ----------------------------------


def refusal(allowed: AllowList, authority: str) -> str | None:
    host, port = parse_authority(authority)
    return allowed.refusal(host, port or 443)


def test_names_match_label_by_label_and_ip_literals_exactly() -> None:
    allowed = AllowList.of(["pypi.org", "1.2.3.4", "example.com:8443", "::1", "listen:8000"], COMPANIONS)
    for ok in ("pypi.org", "PYPI.ORG.", "pypi.org:80", "files.pythonhosted.org", "1.2.3.4", "[::ffff:1.2.3.4]:443"):
        assert refusal(allowed, ok) is None, ok
    assert refusal(allowed, "example.com:8443") is None and refusal(allowed, "[::1]:443") is None
    homograph = str(parse_host("\u0440ypi.org"))  # a Cyrillic er for the p: its own name, in its xn-- form
    assert homograph.startswith("xn--") and homograph.endswith(".org")
    for host in ("evilpypi.org", "pypi.org.evil.com", "x.pypi.org", "1.2.3.4.nip.io", homograph, "1.2.3.5"):
        assert "is not among the hosts" in (refusal(allowed, host) or ""), host
    assert "port 22 of pypi.org is not allowed (allowed: 80, 443" in (refusal(allowed, "pypi.org:22") or "")
    assert "port 443 of example.com is not allowed (allowed: 8443" in (refusal(allowed, "example.com:443") or "")
    assert AllowList.of(["*.1.2.3.4", "*.com:8443:1", ""]).entries == (), "entries that name no host allow nothing"


def test_subdomains_only_where_a_wildcard_says_so() -> None:
    allowed = AllowList.of(["*.githubusercontent.com", "*.com", "*.1.2.3.4"])
    assert refusal(allowed, "objects.githubusercontent.com") is None
    assert refusal(allowed, "a.b.githubusercontent.com") is None
    for host in ("githubusercontent.com", "evilgithubusercontent.com", "githubusercontent.com.evil.org", "x.com"):
        assert refusal(allowed, host) is not None, host


# --- addresses ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("address", "kind"),
    [
        ("127.0.0.1", "loopback"),
        ("127.8.9.10", "loopback"),
        ("::1", "loopback"),
        ("::ffff:127.0.0.1", "loopback"),
        ("0.0.0.0", "unspecified"),
        ("0.1.2.3", "unspecified"),
        ("::", "unspecified"),
        ("10.1.2.3", "private"),
        ("172.16.0.1", "private"),
        ("192.168.1.1", "private"),
        ("fd12::1", "private"),
        ("100.64.0.1", "CGNAT"),
        ("169.254.1.1", "link-local"),
        ("fe80::1", "link-local"),
        ("224.0.0.251", "multicast"),
        ("ff02::1", "multicast"),
        ("169.254.169.254", "cloud metadata"),
        ("169.254.170.2", "cloud metadata"),
        ("fd00:ec2::254", "cloud metadata"),
        ("::ffff:169.254.169.254", "cloud metadata"),
        ("2002:a9fe:a9fe::1", "cloud metadata (as 169.254.169.254"),
        ("64:ff9b::a00:1", "private (as 10.0.0.1"),
        ("::7f00:1", "loopback (as 127.0.0.1"),
        ("8.8.8.8", None),
        ("2606:4700:4700::1111", None),
    ],
)
def test_address_classes(address: str, kind: str | None) -> None:
    found = address_class(parse_address(address))
    assert (found is None) if kind is None else (found or "").startswith(kind), found


def test_only_what_gateway_yaml_names_is_reachable_and_metadata_only_by_name() -> None:
    guard = AddressGuard(["127.0.0.1", "169.254.0.0/16", "::ffff:10.0.0.1"], own_ports=set)
    assert guard.refusal(parse_address("127.0.0.1"), 80) is None
    assert guard.refusal(parse_address("::ffff:127.0.0.1"), 80) is None, "the same address"
    assert guard.refusal(parse_address("10.0.0.1"), 80) is None, "named as IPv4-mapped: the same address"
    assert "loopback" in (guard.refusal(parse_address("127.0.0.2"), 80) or "")
    assert guard.refusal(parse_address("169.254.1.1"), 80) is None
    assert "cloud metadata" in (guard.refusal(parse_address("169.254.169.254"), 80) or ""), "not by a network"
    assert AddressGuard(["169.254.169.254"], own_ports=set).refusal(parse_address("169.254.169.254"), 80) is None
    assert guard.refusal(parse_address("8.8.8.8"), 443) is None


def test_the_gateways_own_port_is_refused_whatever_gateway_yaml_names() -> None:
    """This process listens on a port, as the gateway does on its own: no address of this host reaches it."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        own = server.getsockname()[1]
        assert own in listening_ports()
        guard = AddressGuard(["0.0.0.0/0", "::/0"])
        for address in ("127.0.0.1", "127.0.0.2", "0.0.0.0", "::ffff:127.0.0.1", "::1"):
            assert "the gateway's own" in (guard.refusal(parse_address(address), own) or ""), address
        assert guard.refusal(parse_address("127.0.0.1"), own + 1 if own < 65535 else own - 1) is None
    assert own not in listening_ports()


def test_gateway_yaml_names_addresses_or_networks(config: Any) -> None:
    assert reconfigure(config, egress={"allow_addresses": ["10.20.0.0/16", "fd00::1"]}).egress.allow_addresses
    for bad in ("10.20.0.1/16", "intranet.example", "127.1"):
        with pytest.raises(ConfigError, match="allow_addresses"):
            reconfigure(config, egress={"allow_addresses": [bad]})


# --- the request, read strictly -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("head", "why"),
    [
        (b"CONNECT 127.0.0.1\x00.pypi.org:443 HTTP/1.1\r\n\r\n", "control or non-ASCII"),
        (b"CONNECT pypi.org:443\r HTTP/1.1\r\n\r\n", "control or non-ASCII"),
        (b"CONNECT pypi.org:443 HTTP/1.1\nHost: evil.com\r\n\r\n", "control or non-ASCII"),
        (b"CONNECT pypi.org:443 HTTP/1.1\r\nHost: pypi.org\nX: 1\r\n\r\n", "control byte in a header"),
        (b"CONNECT p\xc3\xbfpi.org:443 HTTP/1.1\r\n\r\n", "control or non-ASCII"),
        (b"CONNECT pypi.org:443 HTTP/2.0\r\n\r\n", "not an HTTP/1"),
        (b"CONNECT  pypi.org:443 HTTP/1.1\r\n\r\n", "not an HTTP/1"),
        (b"CONNECT user@pypi.org:443 HTTP/1.1\r\n\r\n", "userinfo"),
        (b"CONNECT pypi.org HTTP/1.1\r\n\r\n", "needs host:port"),
        (b"CONNECT pypi.org:443:80 HTTP/1.1\r\n\r\n", "brackets"),
        (b"CONNECT pypi.org:443 HTTP/1.1\r\nHost: pypi.org:80\r\n\r\n", "does not name the target"),
        (b"CONNECT pypi.org:443 HTTP/1.1\r\nHost: evil.com:443\r\n\r\n", "does not name the target"),
        (b"GET http://pypi.org/ HTTP/1.1\r\nHost: evil.com\r\n\r\n", "does not name the target"),
        (b"GET http://pypi.org:80/ HTTP/1.1\r\nHost: pypi.org:8080\r\n\r\n", "does not name the target"),
        (b"GET http://pypi.org/ HTTP/1.1\r\nHost: pypi.org\r\nHost: evil.com\r\n\r\n", "more than one Host"),
        (b"GET http://pypi.org/ HTTP/1.1\r\n Host: evil.com\r\n\r\n", "malformed header"),
        (b"GET http://pypi.org/ HTTP/1.1\r\nHost : evil.com\r\n\r\n", "whitespace around the header name"),
        (b"GET http://user:pw@pypi.org/ HTTP/1.1\r\n\r\n", "userinfo"),
        (b"GET http://pyp%69.org/ HTTP/1.1\r\n\r\n", "percent-encoding"),
        (b"GET http://0x7f.1/ HTTP/1.1\r\n\r\n", "IPv4 address spelled"),
        (b"GET https://pypi.org/ HTTP/1.1\r\n\r\n", "only http://"),
        (b"GET /simple/ HTTP/1.1\r\nHost: pypi.org\r\n\r\n", "only http://"),
    ],
)
def test_proxy_requests_read_two_ways_are_refused(head: bytes, why: str) -> None:
    with pytest.raises(Refused) as refused:
        parse_request(head)
    assert why in str(refused.value), str(refused.value)


def test_proxy_requests_are_normalised_and_go_on_with_one_request_per_connection() -> None:
    request = parse_request(b"CONNECT PyPI.org.:443 HTTP/1.1\r\nHost: pypi.org:443\r\n\r\n")
    assert (str(request.host), request.port, request.forward) == ("pypi.org", 443, b"")
    assert str(parse_request(b"CONNECT [::1]:8443 HTTP/1.1\r\n\r\n").host) == "::1"
    plain = parse_request(
        b"GET http://Example.COM/x?y HTTP/1.1\r\nHost: example.com\r\nProxy-Connection: keep-alive\r\n"
        b"Connection: keep-alive\r\nProxy-Authorization: Basic eDp5\r\nX-A: 1\r\n\r\n"
    )
    assert (str(plain.host), plain.port, plain.asked) == ("example.com", 80, "http://Example.COM")
    assert (
        plain.forward
        == b"GET http://Example.COM/x?y HTTP/1.1\r\nHost: example.com\r\nX-A: 1\r\nConnection: close\r\n\r\n"
    )


# --- the proxy on real sockets ----------------------------------------------------------------------------------


@pytest.fixture
def hello(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    """A real HTTP server in a process of its own on the loopback; its port and the log of what reached it."""
    port, log = free_port(), tmp_path / "hello.log"
    log.write_text("")
    with server_process([sys.executable, str(HELLO), str(port), str(log)], f"http://127.0.0.1:{port}/", "hello"):
        log.write_text("")  # the health check's request is not one of the test's
        yield port, log


class Lookups:
    """A resolver injected at the proxy's seam: fixed answers, and every lookup counted."""

    def __init__(self, answers: dict[str, list[str]]) -> None:
        self.answers = answers
        self.asked: list[tuple[str, int]] = []

    async def __call__(self, name: str, port: int) -> list[str]:
        self.asked.append((name, port))
        if name not in self.answers:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return self.answers[name]


async def through(egress: Egress, allowed: list[str], request: bytes) -> bytes:
    """Send one raw request through a proxy serving ``allowed``; everything it answers, up to its close."""
    async with egress.serving(allowed, "trace-egress") as path:
        with anyio.fail_after(30):
            async with await anyio.connect_unix(path) as stream:
                await stream.send(request)
                answer = b""
                try:
                    while True:
                        answer += await stream.receive()
                except (anyio.EndOfStream, anyio.BrokenResourceError):
                    return answer


def egress_rows(gateway: Gateway) -> list[Any]:
    return ledger_rows(gateway, kind="egress")


async def test_the_proxy_resolves_once_and_connects_to_the_address_it_checked(
    gateway: Gateway, hello: tuple[int, Path]
) -> None:
    port, log = hello
    lookups = Lookups({"rebind.test": ["127.0.0.1"]})
    egress = Egress(gateway.ledger, AddressGuard(["127.0.0.1"], own_ports=set), lookups)
    answer = await through(egress, [f"rebind.test:{port}"], f"GET http://rebind.test:{port}/ HTTP/1.1\r\n\r\n".encode())
    assert answer.endswith(b"hello from the host"), answer
    # the name exists nowhere but in the injected resolver: a second lookup by the connection would have failed
    assert lookups.asked == [("rebind.test", port)]
    assert log.read_text() == f"GET http://rebind.test:{port}/ HTTP/1.1 Host=None\n"
    [row] = egress_rows(gateway)
    assert row.outcome == "ok" and row.trace_id == "trace-egress"
    assert row.detail["target"] == f"rebind.test:{port}" and row.detail["address"] == "127.0.0.1"
    assert row.detail["asked"] == f"http://rebind.test:{port}" and row.detail["allowed"] == [f"rebind.test:{port}"]


@pytest.mark.parametrize(
    ("answers", "why"),
    [
        (["169.254.169.254"], "169.254.169.254 is a cloud metadata address"),
        (["fd00:ec2::254"], "fd00:ec2::254 is a cloud metadata address"),
        (["::ffff:169.254.169.254"], "169.254.169.254 is a cloud metadata address"),
        (["10.0.0.5"], "10.0.0.5 is a private address"),
        (["100.64.3.4"], "CGNAT"),
        (["93.184.215.14", "127.0.0.2"], "127.0.0.2 is a loopback address"),
        (["127.0.0.1"], "127.0.0.1 port"),
        (["0.0.0.0"], "unspecified"),
        (["224.0.0.1"], "multicast"),
        (["not-an-address"], "not an IP address"),
    ],
    ids=[
        *("metadata", "metadata-v6", "metadata-mapped", "private", "cgnat", "rebinding", "own-port", "unspecified"),
        *("multicast", "junk"),
    ],
)
async def test_a_name_that_resolves_somewhere_forbidden_is_refused(
    gateway: Gateway, hello: tuple[int, Path], answers: list[str], why: str
) -> None:
    """Even with 127.0.0.1 named in gateway.yaml: not the gateway's own port (here: this process's), and
    nothing else is named. Nothing is connected to; the row says which address was refused."""
    port, log = hello
    with socket.create_server(("127.0.0.1", 0)) as own:
        target = own.getsockname()[1] if why.endswith("port") else port
        egress = Egress(gateway.ledger, AddressGuard(["127.0.0.1"]), Lookups({"name.test": answers}))
        answer = await through(egress, [f"name.test:{target}"], f"CONNECT name.test:{target} HTTP/1.1\r\n\r\n".encode())
    assert answer.startswith(b"HTTP/1.1 403 Forbidden") and why in answer.decode(), answer
    assert log.read_text() == ""
    [row] = egress_rows(gateway)
    assert row.outcome == "denied" and why in row.detail["refused"] and row.detail["asked"] == f"name.test:{target}"


async def test_localhost_and_loopback_literals_are_refused_unless_named(
    gateway: Gateway, hello: tuple[int, Path]
) -> None:
    """``localhost`` by the system's resolver (no resolver injected), and the loopback's literal spellings."""
    port, log = hello
    egress = Egress(gateway.ledger, AddressGuard(own_ports=set))
    allowed = [f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}", "169.254.169.254"]
    for request, why in [
        (f"GET http://localhost:{port}/ HTTP/1.1\r\nHost: localhost:{port}\r\n\r\n", "localhost resolves to"),
        (f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n", "127.0.0.1 is a loopback address"),
        (f"CONNECT [::ffff:127.0.0.1]:{port} HTTP/1.1\r\n\r\n", "127.0.0.1 is a loopback address"),
        (f"CONNECT [::1]:{port} HTTP/1.1\r\n\r\n", "::1 is a loopback address"),
        ("CONNECT 169.254.169.254:443 HTTP/1.1\r\n\r\n", "cloud metadata"),
    ]:
        answer = (await through(egress, allowed, request.encode())).decode()
        assert answer.startswith("HTTP/1.1 403") and why in answer, (request, answer)
    assert log.read_text() == ""
    rows = egress_rows(gateway)
    assert [r.outcome for r in rows] == ["denied"] * 5
    assert rows[0].detail["address"] in ("127.0.0.1", "::1") and rows[4].detail["address"] == "169.254.169.254"


TRICKS = [
    b"CONNECT 127.0.0.1\x00.pypi.org:{port} HTTP/1.1\r\n\r\n",
    b"CONNECT pypi.org\r\n.127.0.0.1:{port} HTTP/1.1\r\n\r\n",
    b"CONNECT 127.0.0.1:{port}\x00 HTTP/1.1\r\n\r\n",
    b"CONNECT PYPI.ORG.:22 HTTP/1.1\r\n\r\n",
    b"CONNECT 0x7f.0.0.1:{port} HTTP/1.1\r\n\r\n",
    b"CONNECT 2130706433:{port} HTTP/1.1\r\n\r\n",
    b"CONNECT 127.1:{port} HTTP/1.1\r\n\r\n",
    b"CONNECT pypi.org@127.0.0.1:{port} HTTP/1.1\r\n\r\n",
    b"CONNECT " + str(parse_host("\u0440ypi.org")).encode() + b":443 HTTP/1.1\r\n\r\n",  # a homograph of pypi.org
    b"CONNECT xn--pypi-ttc.org:443 HTTP/1.1\r\n\r\n",  # an A-label no IDNA name encodes to
    b"CONNECT 127.0.0.1:0{port} HTTP/1.1\r\n\r\n",
    b"CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: 127.0.0.1:1\r\n\r\n",
    b"GET http://127.0.0.1:{port}/ HTTP/1.1\r\nHost: evil.example\r\n\r\n",
    b"GET http://pypi.org@127.0.0.1:{port}/ HTTP/1.1\r\n\r\n",
    b"GET http://127.0.0.1:{port}\\@pypi.org/ HTTP/1.1\r\n\r\n",
    b"GET http://127.0.0.1%3a{port}/ HTTP/1.1\r\n\r\n",
]


async def test_connect_tricks_are_refused_and_recorded(gateway: Gateway, hello: tuple[int, Path]) -> None:
    """With 127.0.0.1 named in gateway.yaml and the hello server's port allowed: none of these reach it."""
    port, log = hello
    egress = Egress(gateway.ledger, AddressGuard(["127.0.0.1"], own_ports=set), Lookups({}))
    allowed = ["pypi.org", f"127.0.0.1:{port}"]
    for trick in TRICKS:
        answer = await through(egress, allowed, trick.replace(b"{port}", str(port).encode()))
        assert answer.startswith(b"HTTP/1.1 403 Forbidden"), (trick, answer)
    assert log.read_text() == "", "nothing reached the server"
    rows = egress_rows(gateway)
    assert len(rows) == len(TRICKS) and {r.outcome for r in rows} == {"denied"}
    assert all(r.detail["refused"] for r in rows)
    assert "\\x00" in rows[0].detail["refused"], "a control byte is recorded escaped"
    assert rows[3].detail["asked"] == "PYPI.ORG.:22" and "port 22 of pypi.org" in rows[3].detail["refused"]


# --- a real confined command, approved by a person, on a live gateway ---------------------------------------------

PROBE = """
import os, socket, sys
proxy = os.environ["http_proxy"].rsplit("/", 1)[-1].rsplit(":", 1)
for request in sys.argv[1:]:
    with socket.create_connection((proxy[0], int(proxy[1])), timeout=20) as s:
        s.sendall(request.encode("latin-1").decode("unicode_escape").encode("latin-1"))
        print("probe:", s.recv(4096).split(b"\\r\\n", 1)[0].decode())
"""


async def test_a_confined_command_cannot_reach_the_gateways_own_port(tmp_path: Path, hello: tuple[int, Path]) -> None:
    """gateway.yaml names 127.0.0.1, and a person approved a command naming the gateway's own port and the hello
    server's: the command reaches the hello server and nothing of the gateway (/healthz, /mcp, /ui), by any
    spelling or trick, through the sandbox's only way out."""
    port, log = hello
    config = workspace(make_repo(tmp_path / "repo"))
    config = reconfigure(config, egress={"allow_addresses": ["127.0.0.1"]})
    with http_gateway(config.source) as url:
        own = int(url.rsplit(":", 1)[1])
        tricks = [
            rf"CONNECT 127.0.0.1:{own} HTTP/1.1\r\n\r\n",
            rf"CONNECT [::ffff:127.0.0.1]:{own} HTTP/1.1\r\n\r\n",
            rf"CONNECT 127.0.0.1\x00.x:{own} HTTP/1.1\r\n\r\n",
            rf"CONNECT 0x7f.1:{own} HTTP/1.1\r\n\r\n",
            rf"GET http://127.0.0.1:{port}/ HTTP/1.1\r\nHost: 127.0.0.1:{own}\r\n\r\n",
            rf"GET http://localhost:{own}/mcp HTTP/1.1\r\n\r\n",
        ]
        command = (
            f"curl -s http://127.0.0.1:{own}/healthz; curl -s http://127.0.0.1:{own}/ui; "
            f"curl -s http://127.0.0.1:{port}/; echo; python3 probe.py " + " ".join(f"'{t}'" for t in tricks)
        )
        async with http_client(url, token(config, "developer", agent="d1")) as client:
            written = await client.call_tool("fs_write", {"path": "probe.py", "content": PROBE})
            assert not written.is_error, text_of(written)
            asked = (await client.call_tool("shell_run", {"command": command})).structured_content
            assert asked["status"] == "approval_pending", asked
            assert gateway_cli(config, "approvals", "approve", asked["approval_id"]).returncode == 0
            ran = (await client.call_tool("shell_run", {"command": command})).structured_content
    out = ran["stdout"]
    assert "hello from the host" in out, ran
    assert out.count(f"127.0.0.1 port {own} is the gateway's own") == 2, out
    assert [line for line in out.splitlines() if line.startswith("probe:")] == ["probe: HTTP/1.1 403 Forbidden"] * 6
    assert log.read_text() == f"GET http://127.0.0.1:{port}/ HTTP/1.1 Host=127.0.0.1:{port}\n"
    rows = ledger_rows(Gateway(config, isolated=False), kind="egress")
    reached = [(r.detail["target"], r.detail["address"]) for r in rows if r.outcome == "ok"]
    assert reached == [(f"127.0.0.1:{port}", "127.0.0.1")], json.dumps([r.detail for r in rows], indent=1)
    assert len(rows) == 3 + len(tricks) and all(r.detail.get("refused") for r in rows if r.outcome != "ok")
