"""An upstream's listings read within bounds: pages, items, bytes and time (gateway.yaml ``limits.upstream_listing``,
or an upstream's own ``listing``).

An upstream answers tools/list (resources/list, resources/templates/list, prompts/list) a page at a time, each
with the cursor of the next. One that never stops (an endless or repeating cursor, pages that keep growing or
keep coming slowly) would otherwise hold the gateway's memory and its event loop for as long as it likes. Here
each listing reads its pages as raw JSON-RPC on the upstream's channel, every answer bounded by the bytes the
listing has left, and stops at the first bound it crosses with ``ListingRefused``, which names the bound: the
upstream is then marked down with that error, and the gateway serves everything else as before.

    items = await list_all(channel, "tools/list", "tools", limits)     # [{"name": ..., ...}, ...] as sent
"""

from __future__ import annotations

from typing import Protocol

import anyio

from gateway.config import ListingLimits
from gateway.tools.jsonrpc import Answer, TooLarge
from gateway.types import JSONObject, ProgressFn

__all__ = ["ListingRefused", "list_all", "no_progress"]


class ListingRefused(Exception):
    """A listing over one of its bounds, or not shaped as its method's result; the message says which."""


class Requester(Protocol):
    async def request(
        self, method: str, params: JSONObject, progress: ProgressFn, max_bytes: int | None = None
    ) -> Answer: ...


BOUNDS = "limits.upstream_listing (or the upstream's listing)"


async def list_all(channel: Requester, method: str, field: str, limits: ListingLimits) -> list[JSONObject]:
    """Every item of a paginated listing, as the upstream sent them, within ``limits``."""
    items: list[JSONObject] = []
    cursors: set[str] = set()
    cursor: str | None = None
    read = 0
    try:
        with anyio.fail_after(limits.seconds):
            for _ in range(limits.pages):
                answer = await channel.request(
                    method, {"cursor": cursor} if cursor else {}, no_progress, max_bytes=limits.bytes - read
                )
                read += answer.size
                listed = answer.result.get(field)
                if not isinstance(listed, list) or not all(isinstance(item, dict) for item in listed):
                    raise ListingRefused(f"{method}: its {field!r} is not a list of objects")
                items.extend(listed)
                if len(items) > limits.items:
                    raise ListingRefused(f"{method} listed more than {limits.items} items ({BOUNDS}.items)")
                following = answer.result.get("nextCursor")
                if not following:
                    return items
                if not isinstance(following, str):
                    raise ListingRefused(f"{method}: its nextCursor is not a string")
                if following in cursors:
                    raise ListingRefused(f"{method} gave cursor {following[:40]!r} twice: its pages would never end")
                cursors.add(following)
                cursor = following
    except TimeoutError:
        raise ListingRefused(f"{method} took longer than {limits.seconds:g} s ({BOUNDS}.seconds)") from None
    except TooLarge:
        raise ListingRefused(f"{method}'s pages came to more than {limits.bytes} bytes ({BOUNDS}.bytes)") from None
    raise ListingRefused(f"{method} still had more after {limits.pages} pages ({BOUNDS}.pages)")


async def no_progress(progress: float, total: float | None, message: str | None) -> None:
    """A request's progress, dropped (a listing, a read or a prompt reports none to anyone)."""
    return None
