"""RecentEvents (gateway/event_store.py): what a stream sent after an event is replayed, only that stream's,
and the store stays within its bounds."""

from __future__ import annotations

from typing import Any

import mcp_types as mt
import pytest

from gateway.event_store import RecentEvents

pytestmark = pytest.mark.anyio


def note(n: int) -> Any:
    return mt.JSONRPCNotification(jsonrpc="2.0", method="notifications/progress", params={"progress": n})


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


async def test_the_oldest_events_go_first_by_count_and_by_bytes() -> None:
    store = RecentEvents(max_events=3, max_bytes=10_000)
    ids = [await store.store_event("a", note(n)) for n in range(5)]
    assert list(store.events) == ids[2:]
    small = RecentEvents(max_events=100, max_bytes=150)
    for n in range(5):
        await small.store_event("a", note(n))
    assert small.bytes <= 150 and len(small.events) < 5
