"""Requests whose text is not valid Unicode (a lone UTF-16 surrogate: JSON "\\ud800") against a live gateway,
sent as raw JSON over streamable HTTP in both protocol eras and over stdio: each is refused with an error that
says where, and recorded (escaped); none is dropped. A seeded fuzz over odd Unicode: every request gets its
ledger row, and the ledger still verifies."""

from __future__ import annotations

import json
import random
import select
import subprocess
from typing import Any

import httpx2
import pytest
from conftest import add_role, http_gateway, ledger_rows, stdio_server, token
from mcp.shared.inbound import encode_header_value

from gateway.process import gateway_cli
from gateway.runtime import Gateway

pytestmark = pytest.mark.anyio

MODERN, HANDSHAKE = "2026-07-28", "2025-11-25"
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
ACCEPT = "application/json, text/event-stream"


@pytest.fixture
def reader(config: Any) -> str:
    add_role(config, "reader", ["fs_*"], max_tier=1)
    return token(config, "reader", agent="r1")


class RawHttp:
    """A client that sends JSON-RPC requests as the bytes it is given, in one protocol era: a 2026-07-28
    envelope on each request, or a 2025-11-25 session opened with initialize."""

    def __init__(self, url: str, bearer: str, era: str) -> None:
        self.url = f"{url}/mcp"
        self.era = era
        self.headers = {"authorization": f"Bearer {bearer}", "accept": ACCEPT, "content-type": "application/json"}
        if era == HANDSHAKE:
            hello = {"protocolVersion": HANDSHAKE, "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}
            opened = httpx2.post(self.url, json=request(0, "initialize", hello), headers=self.headers)
            self.headers |= {"mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": HANDSHAKE}
            initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            httpx2.post(self.url, json=initialized, headers=self.headers)

    def send(self, message: dict[str, Any]) -> httpx2.Response:
        headers = dict(self.headers)
        params = message["params"]
        if self.era == MODERN:
            params["_meta"] = {**ENVELOPE, **params.get("_meta", {})}
            name = params.get("name", params.get("uri"))
            headers |= {"mcp-protocol-version": MODERN, "mcp-method": message["method"]}
            if isinstance(name, str):  # what a client sends; one holding a lone surrogate cannot be UTF-8
                headers["mcp-name"] = encode_header_value(name.encode("utf-8", "surrogatepass").decode("latin-1"))
        body = json.dumps(message).encode()  # ASCII JSON: a lone surrogate goes as its \\u escape
        return httpx2.post(self.url, content=body, headers=headers, timeout=60)


def exchange(proc: subprocess.Popen[str], message: dict[str, Any], timeout_s: float = 60) -> dict[str, Any]:
    """Write one line to a stdio gateway; answer the reply to it (nothing for a notification)."""
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps(message) + "\n")
    proc.stdin.flush()
    if "id" not in message:
        return {}
    while True:
        ready, _, _ = select.select([proc.stdout], [], [], timeout_s)
        assert ready, f"no answer to {message['method']} within {timeout_s} s"
        answer = json.loads(proc.stdout.readline())
        if answer.get("id") == message["id"]:
            return answer


def request(rid: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}


def read(path: str, **extra: Any) -> dict[str, Any]:
    return {"name": "fs_read", "arguments": {"path": path}, **extra}


# where a lone surrogate goes, and the field the refusal names
PLACES = {
    "argument": ("tools/call", read("\ud800x"), "params.arguments.path"),
    "argument key": ("tools/call", {"name": "fs_read", "arguments": {"pa\udc00th": "README.md"}}, "params.arguments"),
    "tool name": ("tools/call", {"name": "fs_\ud800", "arguments": {}}, "params.name"),
    "_meta": ("tools/call", read("README.md", _meta={"progressToken": "\ud83d"}), "params._meta.progressToken"),
    "request state": ("tools/call", read("README.md", requestState="\udfff"), "params.requestState"),
    "resource uri": ("resources/read", {"uri": "file:///\ud800"}, "params.uri"),
}


def invalid_rows(config: Any) -> list[Any]:
    return [r for r in ledger_rows(Gateway(config)) if r.outcome == "invalid"]


@pytest.mark.parametrize("era", [MODERN, HANDSHAKE])
def test_raw_http_requests_that_are_not_valid_unicode_are_refused_and_recorded(
    config: Any, reader: str, era: str
) -> None:
    with http_gateway(config.source) as url:
        client = RawHttp(url, reader, era)
        answers = {place: client.send(request(i, method, params)) for i, (place, (method, params, _)) in
                   enumerate(PLACES.items(), start=1)}  # fmt: skip
        fine = client.send(request(99, "tools/call", read("README.md")))
    assert fine.status_code == 200 and "demo repo" in fine.text, fine.text
    rows = invalid_rows(config)
    assert len(rows) == len(PLACES), [r.detail for r in rows]
    for (place, (_, _, field)), row in zip(PLACES.items(), rows, strict=True):
        answer = answers[place]
        error = answer.json()["error"]
        assert answer.status_code == 400 and error["code"] == -32602, (place, answer.text)
        assert error["message"].startswith("invalid_unicode: request field") and field in error["message"], place
        assert "lone UTF-16 surrogate" in error["message"] and "Nothing was run" in error["message"]
        assert row.detail["error"]["code"] == "invalid_unicode" and field in row.detail["error"]["message"]
        assert row.principal is not None and row.principal["agent"] == "r1"
        assert error["data"]["call_id"] == row.call_id
    by_place = dict(zip(PLACES, rows, strict=True))
    assert by_place["tool name"].tool == "fs_\\ud800", "recorded escaped"
    assert by_place["resource uri"].detail["method"] == "resources/read"
    assert gateway_cli(config, "ledger", "verify").returncode == 0


@pytest.mark.parametrize("era", [MODERN, HANDSHAKE])
def test_raw_stdio_requests_that_are_not_valid_unicode_are_answered_and_recorded(
    config: Any, reader: str, era: str
) -> None:
    """Over stdio the SDK drops a line it cannot parse without an answer (the client would wait forever):
    the gateway answers it and records it."""
    params = stdio_server(config, reader)
    proc = subprocess.Popen(
        [params.command, *params.args], env=params.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        if era == HANDSHAKE:
            hello = {"protocolVersion": HANDSHAKE, "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}
            exchange(proc, request(0, "initialize", hello))
            exchange(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        meta = {"_meta": ENVELOPE} if era == MODERN else {}
        refused = exchange(proc, request(1, "tools/call", read("\ud800", **meta)))
        fine = exchange(proc, request(2, "tools/call", read("README.md", **meta)))
    finally:
        proc.kill()
        proc.wait(10)
    assert refused["error"]["code"] == -32602 and "params.arguments.path" in refused["error"]["message"], refused
    assert "demo repo" in json.dumps(fine.get("result")), fine
    [row] = invalid_rows(config)
    assert row.tool == "fs_read" and row.detail["error"]["code"] == "invalid_unicode"


async def test_the_pipeline_refuses_text_that_is_not_valid_unicode_wherever_it_comes_from(
    config: Any, reader: str
) -> None:
    """What reaches the pipeline without the MCP transports (gateway check, the hook, an in-process client)
    is refused by its ValidText stage, and recorded escaped."""
    gateway = Gateway(config)  # with the reader role in place
    principal = gateway.tokens.verify(reader)
    report = await gateway.check(principal, "fs_read", {"path": "README\ud800.md", "n\udc00": 1})
    assert report["action"] == "deny" and report["rules"] == ["gateway.invalid_unicode"], report
    assert "argument 'path' is not valid Unicode" in report["reasons"][0]
    [row] = [r for r in ledger_rows(gateway, kind="check") if r.outcome == "invalid"]
    assert row.detail["error"]["code"] == "invalid_unicode"
    event = gateway.ledger.append({"kind": "call", "tool": "x\ud800", "outcome": "ok", "detail": {"k\udfff": "\ud83d"}})
    assert event.tool == "x\\ud800" and event.detail == {"k\\udfff": "\\ud83d"}
    assert gateway.ledger.verify().ok


def test_a_request_the_transport_refuses_for_its_headers_is_recorded(config: Any, reader: str) -> None:
    """A 2026-07-28 call whose Mcp-Name header does not match its body (here: base64 of bytes that are not
    UTF-8) is refused by the SDK's transport before the gateway's server sees it; it is recorded."""
    with http_gateway(config.source) as url:
        client = RawHttp(url, reader, MODERN)
        client.headers["mcp-name"] = "=?base64?7aCA?="
        answer = httpx2.post(
            client.url,
            content=json.dumps(request(1, "tools/call", read("README.md", _meta=ENVELOPE))).encode(),
            headers={**client.headers, "mcp-protocol-version": MODERN, "mcp-method": "tools/call"},
        )
    assert answer.status_code == 400 and "mcp-name" in answer.text
    [row] = invalid_rows(config)
    assert row.tool == "fs_read" and row.detail["error"]["code"] == "malformed_request"
    assert "refused by the transport (HTTP 400)" in row.detail["error"]["message"]


ODD = [
    "\ud800", "\udfff", "\ud83d", "\ude00", "\udc00\ud800", "\ud800\ud800",  # lone (or reversed) surrogates
    "\ud83d\ude00", "\U0010ffff", "\ufffe", "\uffff", "\x00", "\u202e", "\u2028", "e\u0301", "\ufeff",  # valid
]  # fmt: skip
FUZZ_REQUESTS = 60


def odd_request(rng: random.Random, rid: int) -> dict[str, Any]:
    """fs_read (tier 1) or a resource read, with odd text in one or two places."""
    text = lambda: rng.choice(["", "src/"]) + "".join(rng.choice(ODD) for _ in range(rng.randint(1, 3)))  # noqa: E731
    params: dict[str, Any] = read("README.md")
    for _ in range(rng.randint(1, 2)):
        place = rng.choice(["value", "key", "name", "meta", "state"])
        if place == "value":
            params["arguments"]["path"] = text()
        elif place == "key":
            params["arguments"][text()] = "x"
        elif place == "name":
            params["name"] = "fs_read" + text()
        elif place == "meta":
            params["_meta"] = {text(): text()}
        else:
            params["requestState"] = text()
    if rng.random() < 0.15:
        return request(rid, "resources/read", {"uri": "file:///" + text()})
    return request(rid, "tools/call", params)


def test_fuzz_every_request_with_odd_unicode_gets_a_ledger_row(config: Any, reader: str) -> None:
    """A seeded generator (the seed is in the failure) over both eras: every request is answered and has
    exactly one ledger row (a tier-1 read has one), and the ledger verifies."""
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    with http_gateway(config.source) as url:
        clients = [RawHttp(url, reader, MODERN), RawHttp(url, reader, HANDSHAKE)]
        statuses = [rng.choice(clients).send(odd_request(rng, n)).status_code for n in range(FUZZ_REQUESTS)]
    rows = [r for r in ledger_rows(Gateway(config)) if r.kind == "call" and r.outcome != "started"]
    assert len(rows) == FUZZ_REQUESTS, (seed, statuses, [(r.tool, r.outcome, r.detail.get("error")) for r in rows])
    assert set(statuses) <= {200, 400}, (seed, statuses)
    assert gateway_cli(config, "ledger", "verify").returncode == 0, seed
