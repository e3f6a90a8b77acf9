"""Revoked token ids, kept in the store so every gateway process sees a revocation on the next call.

revocations = Revocations(db)
revocations.revoke(jti, reason="laptop lost")
revocations.is_revoked(jti)
"""

from __future__ import annotations

from gateway.ledger.chain import utc_now
from gateway.store import Store


class Revocations:
    def __init__(self, db: Store) -> None:
        self.db = db

    def revoke(self, jti: str, reason: str | None = None) -> bool:
        """Returns False when the jti was already revoked."""
        with self.db.transaction() as tx:
            cursor = tx.execute(
                "INSERT INTO revocations (jti, time, reason) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                (jti, utc_now(), reason),
            )
            return bool(cursor.rowcount == 1)

    def is_revoked(self, jti: str) -> bool:
        return bool(self.db.query("SELECT 1 FROM revocations WHERE jti = ?", (jti,)))
