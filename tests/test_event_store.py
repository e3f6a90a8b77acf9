"""RecentEvents (gateway/event_store.py): what a stream sent after an event is replayed, only that stream's,
and the store stays within its bounds."""

from __future__ import annotations

from typing import Any

import httpx2
import mcp_types as mt
import pytest
from conftest import add_role, http_gateway, token

from gateway.event_store import RETRY_MS, RecentEvents


def note(n: int) -> Any:
    return mt.JSONRPCNotification(jsonrpc="2.0", method="notifications/progress", params={"progress": n})


@pytest.mark.anyio
async def test_a_stream_is_replayed_after_the_last_event_its_client_saw() -> None:
    store = RecentEvents()
    first = await store.store_event("a", note(1))
    await store.store_event("b", note(99))
    await store.store_event("a", note(2))
    await store.store_event("a", note(3))
    replayed: list[Any] = []

    async def send(event: Any) -> None:
        replayed.append(event.message.params["progress"])

    assert await store.replay_events_after(first, send) == "a"
    assert replayed == [2, 3]
    assert await store.replay_events_after("not-an-event", send) is None


@pytest.mark.anyio
async def test_the_oldest_events_go_first_by_count_and_by_bytes() -> None:
    store = RecentEvents(max_events=3, max_bytes=10_000)
    ids = [await store.store_event("a", note(n)) for n in range(5)]
    assert list(store.events) == ids[2:]
    small = RecentEvents(max_events=100, max_bytes=150)
    for n in range(5):
        await small.store_event("a", note(n))
    assert small.bytes <= 150 and len(small.events) < 5


def test_a_2025_11_25_post_stream_starts_with_a_priming_event(config: Any) -> None:
    """Over the gateway's /mcp: the POST stream of a 2025-11-25 request opens with an event id (what a client
    resumes from) and a retry field."""
    add_role(config, "reader", ["fs_read"], max_tier=1)
    headers = {
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "Authorization": f"Bearer {token(config, 'reader')}",
        "mcp-protocol-version": "2025-11-25",
    }
    hello = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    with http_gateway(config.source) as url, httpx2.Client(timeout=30) as http:
        opened = http.post(
            f"{url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}, headers=headers
        )
        session = {**headers, "mcp-session-id": opened.headers["mcp-session-id"]}
        http.post(f"{url}/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session)
        listed = http.post(f"{url}/mcp", json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, headers=session)
        events = [block for block in listed.text.split("\n\n") if block.strip()]
        priming = dict(line.split(": ", 1) for line in events[0].splitlines() if ": " in line)
        assert "id" in priming and priming.get("retry") == str(RETRY_MS)
