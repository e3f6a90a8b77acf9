"""Revoked token ids, kept in the store so every gateway process sees a revocation on the next call.

revocations = Revocations(db)
revocations.revoke(jti, reason="laptop lost")
revocations.is_revoked(jti)
"""

from __future__ import annotations

from gateway.ledger.chain import utc_now
from gateway.store import Store
from gateway.store.repositories import revocations


class Revocations:
    def __init__(self, db: Store) -> None:
        self.db = db

    def revoke(self, jti: str, reason: str | None = None) -> bool:
        """Returns False when the jti was already revoked."""
        with self.db.transaction() as tx:
            return revocations.revoke(tx, jti, utc_now(), reason)

    def is_revoked(self, jti: str) -> bool:
        return revocations.is_revoked(self.db, jti)
