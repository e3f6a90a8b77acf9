"""Change notices: an upstream's lists changed, or a resource it serves did, and the gateway's own clients
are told (in both protocol eras).

An upstream's ``list_changed`` has the gateway list it again (gateway/tools/upstream.py) and check every
definition against its pin: a changed one is quarantined and listed to nobody. Only then is each kind whose
served list changed announced: ``notifications/tools/list_changed`` (and resources', prompts') on every
handshake-era connection that has made a request, and the same event on every 2026-07-28
``subscriptions/listen`` stream that asked for it. A client re-lists and sees what its role may see now.
``notifications/resources/updated`` goes to the connections subscribed to that URI (handshake era) and to
listen streams that named it (2026-07-28).

    notices = ChangeNotices()
    notices.seen(connection)                 # server.py, on every handshake-era request
    await notices.lists_changed({"tools"})   # the pool, after a reload that changed the tools it serves
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any
from weakref import WeakSet

import structlog
from mcp.server.subscriptions import InMemorySubscriptionBus
from mcp.shared.subscriptions import PromptsListChanged, ResourcesListChanged, ResourceUpdated, ToolsListChanged

__all__ = ["KINDS", "ChangeNotices"]

log = structlog.get_logger("gateway.notices")

KINDS = ("tools", "resources", "prompts")
_EVENTS: dict[str, type[ToolsListChanged | ResourcesListChanged | PromptsListChanged]] = {
    "tools": ToolsListChanged,
    "resources": ResourcesListChanged,
    "prompts": PromptsListChanged,
}


class ChangeNotices:
    """Who is told what changed: handshake-era connections (held weakly: a closed one drops out) and the
    2026-07-28 listen streams (through the SDK's subscription bus)."""

    def __init__(self) -> None:
        self.bus = InMemorySubscriptionBus()
        self._connections: WeakSet[Any] = WeakSet()
        self._subscribed: dict[str, WeakSet[Any]] = {}

    def seen(self, connection: Any) -> None:
        self._connections.add(connection)

    def subscribe(self, connection: Any, uri: str) -> None:
        self._subscribed.setdefault(uri, WeakSet()).add(connection)

    def unsubscribe(self, connection: Any, uri: str) -> None:
        self._subscribed.get(uri, WeakSet()).discard(connection)

    async def lists_changed(self, kinds: Iterable[str]) -> None:
        for kind in kinds:
            await self.bus.publish(_EVENTS[kind]())
            await self._send(list(self._connections), f"notifications/{kind}/list_changed", None)

    async def resource_updated(self, uri: str) -> None:
        await self.bus.publish(ResourceUpdated(uri=uri))
        await self._send(list(self._subscribed.get(uri, ())), "notifications/resources/updated", {"uri": uri})

    async def _send(self, connections: list[Any], method: str, params: dict[str, Any] | None) -> None:
        for connection in connections:
            try:
                await connection.outbound.notify(method, params)
            except Exception as exc:  # a connection that went away: the others are still told
                log.info("a client could not be told", method=method, error=type(exc).__name__)
