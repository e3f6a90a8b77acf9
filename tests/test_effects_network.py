"""describe_url and host_of: a URL becomes the host it contacts or the file it names, and doubts."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.effects.network import describe_url, host_of
from gateway.effects.paths import Workspace


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    (tmp_path / "notes.txt").write_text("x\n")
    return Workspace(tmp_path)


HOST_CASES = [
    ("https://example.com/x", "example.com"),
    ("https://user:pw@Example.COM:8443/x?q=1", "example.com"),
    ("http://example.com./", "example.com"),
    ("ssh://git@github.com/org/repo.git", "github.com"),
    ("git@github.com:org/repo.git", "github.com"),
    ("github.com:org/repo.git", "github.com"),
    ("git+https://github.com/org/pkg", "github.com"),
    ("wss://stream.example.org/socket", "stream.example.org"),
    ("http://127.0.0.1:8080/", "127.0.0.1"),
    ("http://[::1]:8080/", "::1"),
    ("ftp://files.example.net/pub", "files.example.net"),
]


@pytest.mark.parametrize(("url", "host"), HOST_CASES)
def test_network_urls_name_their_host(url: str, host: str, ws: Workspace) -> None:
    fx = describe_url(url, ws, via="fetch")
    assert [(n.host, n.via) for n in fx.network] == [(host, "fetch")]
    assert fx.opaque == []
    assert host_of(url) == host


OPAQUE_CASES = [
    ("", "empty URL"),
    ("not a url", "whitespace"),
    ("javascript:alert(1)", "unknown scheme"),
    ("gopher://example.com/", "unknown scheme"),
    ("ext::sh -c id", "whitespace"),
    ("ext::id", "remote helper"),
    ("https://a@b@evil.com/", "more than one '@'"),
    ("https://evil.com\\@good.com/", "backslash"),
    ("https://%65vil.com/", "percent-encoded"),
    ("https://example.com:99999/", "malformed port"),
    ("https:///path-only", "no host"),
    ("https://exa mple.com/", "whitespace"),
    ("https://ex\u0430mple.com/", "Cyrillic"),
    ("https://b\u00fccher.de/", "IDN"),
    ("file://otherhost/etc/passwd", "another host"),
    ("file:relative/path", "without an absolute path"),
]


@pytest.mark.parametrize(("url", "reason"), OPAQUE_CASES)
def test_doubtful_urls_are_opaque(url: str, reason: str, ws: Workspace) -> None:
    fx = describe_url(url, ws, via="fetch")
    assert any(reason in r for r in fx.opaque), fx.opaque
    assert host_of(url) is None


def test_file_url_inside_workspace_is_a_read(ws: Workspace) -> None:
    fx = describe_url((ws.root / "notes.txt").as_uri(), ws, via="fetch")
    assert fx.reads == ["notes.txt"]
    assert fx.network == [] and fx.opaque == []


def test_file_url_outside_workspace_is_an_absolute_read(ws: Workspace) -> None:
    fx = describe_url("file:///etc/passwd", ws, via="fetch")
    assert fx.reads == ["/etc/passwd"]


def test_file_url_with_encoded_traversal_resolves(ws: Workspace) -> None:
    fx = describe_url((ws.root.as_uri()) + "/%2e%2e/%2e%2e/etc/passwd", ws, via="fetch")
    assert fx.reads and not fx.reads[0].startswith("notes")
    assert fx.reads[0].endswith("etc/passwd") and fx.reads[0].startswith("/")
