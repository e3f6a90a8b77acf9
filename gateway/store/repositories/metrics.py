"""What the scrape endpoint's gauges read from the store: what waits for a person, and what waits to merge."""

from __future__ import annotations

from gateway.store.interface import Store

__all__ = ["merge_queue_depth", "pending_approvals"]


def pending_approvals(store: Store, now: str) -> int:
    return int(store.query("SELECT COUNT(*) FROM approvals WHERE state = 'pending' AND expires > ?", (now,))[0][0])


def merge_queue_depth(store: Store) -> int:
    sql = "SELECT COUNT(*) FROM intents WHERE action = 'merge' AND state IN ('approved', 'executing')"
    return int(store.query(sql)[0][0])
