"""Revoked token ids (``revocations``)."""

from __future__ import annotations

from gateway.store.interface import Store, Transaction

__all__ = ["is_revoked", "revoke"]


def revoke(tx: Transaction, jti: str, time: str, reason: str | None) -> bool:
    """False when the jti was revoked already."""
    cursor = tx.execute(
        "INSERT INTO revocations (jti, time, reason) VALUES (?, ?, ?) ON CONFLICT DO NOTHING", (jti, time, reason)
    )
    return cursor.rowcount == 1


def is_revoked(store: Store, jti: str) -> bool:
    return bool(store.query("SELECT 1 FROM revocations WHERE jti = ?", (jti,)))
