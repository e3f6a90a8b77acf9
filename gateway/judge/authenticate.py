"""Authenticate: the credential becomes a Principal, on every call (an expired or revoked token stops here).

A replayed dead letter runs as the principal it recorded instead (``AsRecorded``); a hook call from the
command hook without a credential runs as the role it was given (the call arrives with its principal)."""

from __future__ import annotations

from typing import Protocol

from gateway.errors import Unauthenticated
from gateway.identity.revocations import Revocations
from gateway.identity.roles import RoleSet
from gateway.judge.call import Call
from gateway.types import Principal

__all__ = ["AsRecorded", "Authenticate", "Verifier"]


class Verifier(Protocol):
    def verify(self, token: str | None) -> Principal: ...


class Authenticate:
    """The credential becomes a Principal, on every call: an expired or revoked token stops here.

    ``declared``: a call that brings no credential keeps the principal it arrived with (the command hook run
    without GATEWAY_TOKEN, as ``--role``); without it, such a call is refused."""

    def __init__(self, verifier: Verifier, declared: bool = False) -> None:
        self.verifier = verifier
        self.declared = declared

    async def __call__(self, call: Call) -> None:
        if self.declared and call.origin.token is None and call.principal is not None:
            return
        call.principal = self.verifier.verify(call.origin.token)


class AsRecorded:
    """Stands in for Authenticate on a replay: the call runs as the principal the dead letter recorded (a
    person with the state dir replays it; the agent's credential may have expired since), unless that
    credential has been revoked or its role is gone."""

    def __init__(self, principal: Principal, roles: RoleSet, revocations: Revocations) -> None:
        self.principal = principal
        self.roles = roles
        self.revocations = revocations

    async def __call__(self, call: Call) -> None:
        if self.principal.jti is not None and self.revocations.is_revoked(self.principal.jti):
            raise Unauthenticated("the credential that sent this dead letter has been revoked; it is not replayed")
        if self.principal.role not in self.roles:
            raise Unauthenticated(f"role {self.principal.role!r} has no role file any more; it is not replayed")
        call.principal = self.principal
