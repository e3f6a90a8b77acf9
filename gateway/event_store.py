"""Recent SSE events, so a handshake-era client whose stream dropped mid-call resumes it (SEP-1699).

The streamable-HTTP transport numbers every event of its SSE streams through this store and, when a client
comes back with ``Last-Event-ID``, replays what that stream sent after it. Kept in this process's memory and
bounded (the oldest events go first, by count and by bytes); a gateway run with ``--workers`` keeps no
session, so it has none. Event ids are random: one names a stream only to a client that read it (a GET needs
the session too, which is bound to the credential that opened it).

    manager = StreamableHTTPSessionManager(app=server, event_store=RecentEvents(), retry_interval=RETRY_MS)
"""

from __future__ import annotations

import secrets
from collections import OrderedDict

from mcp.server.streamable_http import EventCallback, EventId, EventMessage, EventStore, StreamId
from mcp_types import JSONRPCMessage

__all__ = ["MAX_EVENTS", "MAX_EVENT_BYTES", "RETRY_MS", "RecentEvents"]

MAX_EVENTS = 4096
MAX_EVENT_BYTES = 64 << 20
RETRY_MS = 1000  # how long a client whose stream dropped waits before it reconnects


class RecentEvents(EventStore):
    def __init__(self, max_events: int = MAX_EVENTS, max_bytes: int = MAX_EVENT_BYTES) -> None:
        self.max_events, self.max_bytes = max_events, max_bytes
        self.events: OrderedDict[EventId, tuple[StreamId, JSONRPCMessage | None, int]] = OrderedDict()
        self.bytes = 0

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        event_id = secrets.token_urlsafe(16)
        size = len(message.model_dump_json(by_alias=True, exclude_none=True)) if message is not None else 0
        self.events[event_id] = (stream_id, message, size)
        self.bytes += size
        while self.events and (len(self.events) > self.max_events or self.bytes > self.max_bytes):
            _, (_, _, dropped) = self.events.popitem(last=False)
            self.bytes -= dropped
        return event_id

    async def replay_events_after(self, last_event_id: EventId, send_callback: EventCallback) -> StreamId | None:
        if last_event_id not in self.events:
            return None
        stream_id = self.events[last_event_id][0]
        after = False
        for event_id, (stream, message, _) in list(self.events.items()):
            if after and stream == stream_id and message is not None:
                await send_callback(EventMessage(message, event_id))
            after = after or event_id == last_event_id
        return stream_id
