"""Role-scoped credentials: EdDSA-signed JWTs with a kid, checked on every call.

    tokens = Tokens(KeyRing(keys_dir), roles, revocations, issuer="mcp-gateway", audience="mcp-gateway")
    jwt, claims = tokens.issue(role="worker", agent="w1", task="T1", ttl_s=8 * 3600)
    principal = tokens.verify(jwt)       # raises Unauthenticated with a reason that carries no key material

Verification accepts only EdDSA, only a kid the key ring knows, and requires every claim; a revoked jti
or a role without a role file is refused as well. With an external issuer configured
(gateway/identity/external.py), a token whose iss names it is verified against that issuer's JWKS instead;
a token naming any other issuer is refused as such.
"""

from __future__ import annotations

import re
import secrets
import time
from typing import TYPE_CHECKING, Any, Protocol

from gateway.errors import Unauthenticated
from gateway.identity.keys import KeyRing
from gateway.identity.revocations import Revocations
from gateway.identity.roles import RoleSet
from gateway.types import Principal

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

ALGORITHM = "EdDSA"
REQUIRED_CLAIMS = ["iss", "aud", "sub", "role", "jti", "iat", "exp"]
LEEWAY_S = 30
AGENT_NAME = re.compile(r"^[A-Za-z0-9_.@-]{1,64}$")
# Verified tokens, by their exact text (see Tokens.verify); bounded, the oldest entry goes first.
CACHE_SIZE = 1024


class ExternalVerifier(Protocol):
    """Tokens from the team's identity provider (gateway/identity/external.py ExternalIssuer)."""

    issuer: str

    def verify(self, token: str) -> Principal: ...
    def stale(self, token: str) -> bool: ...
    def refresh(self, token: str) -> None: ...


class Tokens:
    def __init__(
        self,
        keys: KeyRing,
        roles: RoleSet,
        revocations: Revocations,
        issuer: str,
        audience: str,
        external: ExternalVerifier | None = None,
    ) -> None:
        self.keys = keys
        self.roles = roles
        self.revocations = revocations
        self.issuer = issuer
        self.audience = audience
        self.external = external
        # token text -> (kid, key it verified with, principal). Parsing and the Ed25519 signature check cost
        # ~0.3 ms, on every call and twice per HTTP request (middleware, then the pipeline). A signature that
        # verified once verifies again for the very same string, so only that part is cached; expiry, the
        # key still being in the ring, the role still existing and revocation are checked on every call.
        self._verified: dict[str, tuple[str, Any, Principal]] = {}

    def issue(
        self, role: str, agent: str, task: str | None = None, ttl_s: int = 8 * 3600
    ) -> tuple[str, dict[str, Any]]:
        if role not in self.roles:
            raise Unauthenticated(f"unknown role {role!r}; roles: {', '.join(sorted(self.roles.roles))}")
        if not AGENT_NAME.match(agent):
            raise Unauthenticated(f"agent name {agent!r} must match {AGENT_NAME.pattern}")
        now = int(time.time())
        claims: dict[str, Any] = {
            "iss": self.issuer,
            "aud": self.audience,
            "sub": agent,
            "role": role,
            "jti": secrets.token_hex(16),
            "iat": now,
            "nbf": now,
            "exp": now + ttl_s,
        }
        if task is not None:
            claims["task"] = task
        import jwt  # here: the hook and `gateway check` without a token never load it

        kid, key = self.keys.signing_key()
        return jwt.encode(claims, key, algorithm=ALGORITHM, headers={"kid": kid}), claims

    def verify(self, token: str | None) -> Principal:
        if not token:
            raise Unauthenticated("no credential: send 'Authorization: Bearer <token>' (HTTP) or set GATEWAY_TOKEN")
        cached = self._verified.get(token)
        if cached is not None:
            return self._recheck(token, *cached)
        issuer = issuer_of(token)
        if self.external is not None and issuer == self.external.issuer:
            return self.external.verify(token)  # uncached: an IdP may drop a key from its JWKS at any time
        if issuer != self.issuer:
            accepted = [self.issuer] + ([self.external.issuer] if self.external is not None else [])
            raise Unauthenticated(
                f"token issuer {str(issuer)[:80]!r} is not accepted; this gateway accepts tokens from "
                + " and ".join(repr(a) for a in accepted)
            )
        principal, kid, key = self._verify_fully(token)
        if len(self._verified) >= CACHE_SIZE:
            self._verified.pop(next(iter(self._verified)), None)
        self._verified[token] = (kid, key, principal)
        return principal

    def _recheck(self, token: str, kid: str, key: Any, principal: Principal) -> Principal:
        """The per-call checks for a token whose signature and claims already verified (same as a full check:
        nbf/iat only move into the past, everything else here can change between calls)."""
        if principal.exp is None or principal.exp <= time.time() - LEEWAY_S:  # PyJWT's rule and leeway
            self._verified.pop(token, None)
            raise Unauthenticated("token expired: issue a new one with 'gateway token issue'")
        if self.keys.public_key(kid) is not key:  # the key was removed (or replaced) since: verify afresh
            self._verified.pop(token, None)
            return self.verify(token)
        if principal.role not in self.roles:
            raise Unauthenticated(f"token names role {principal.role[:32]!r}, which has no role file")
        if principal.jti is None or self.revocations.is_revoked(principal.jti):
            raise Unauthenticated("token has been revoked")
        return principal

    async def fetch_keys_for(self, token: str) -> None:
        """Before verifying in an event loop: fetch the external issuer's JWKS in a thread when this token
        needs keys not held yet, so a slow identity provider stalls no other agent."""
        if self.external is not None and self.external.stale(token):
            import anyio

            await anyio.to_thread.run_sync(self.external.refresh, token)

    def _verify_fully(self, token: str) -> tuple[Principal, str, Ed25519PublicKey]:

        header = header_of(token)
        if header.get("alg") != ALGORITHM:
            raise Unauthenticated(f"token algorithm {str(header.get('alg'))[:20]!r} is not accepted; only EdDSA is")
        kid = header.get("kid")
        key = self.keys.public_key(kid) if isinstance(kid, str) else None
        if key is None or not isinstance(kid, str):
            raise Unauthenticated("token names an unknown signing key (kid); it was not issued by this gateway")
        claims = decode_claims(
            token,
            key,
            algorithms=[ALGORITHM],
            audience=self.audience,
            issuer=self.issuer,
            leeway=LEEWAY_S,
            required=REQUIRED_CLAIMS,
            renew="issue a new one with 'gateway token issue'",
        )
        role, agent, task = claims.get("role"), claims.get("sub"), claims.get("task")
        if not isinstance(role, str) or role not in self.roles:
            raise Unauthenticated(f"token names role {str(role)[:32]!r}, which has no role file")
        if not isinstance(agent, str) or not AGENT_NAME.match(agent) or not isinstance(claims["jti"], str):
            raise Unauthenticated("token has a malformed subject or jti")
        if task is not None and not isinstance(task, str):
            raise Unauthenticated("token has a malformed task claim")
        if self.revocations.is_revoked(claims["jti"]):
            raise Unauthenticated("token has been revoked")
        principal = Principal(agent=agent, role=role, task=task, jti=claims["jti"], exp=int(claims["exp"]))
        return principal, kid, key


def decode_claims(
    token: str,
    key: Any,
    *,
    algorithms: list[str],
    audience: str,
    issuer: str,
    leeway: float,
    required: list[str],
    renew: str,
    whose: str = "token",
) -> dict[str, Any]:
    """The verified claims of a JWT, or Unauthenticated naming the check that failed. ``whose`` names the
    token in the messages ("external token"); ``renew`` says where a new one comes from."""
    import jwt

    try:
        return jwt.decode(
            token,
            key,
            algorithms=algorithms,
            audience=audience,
            issuer=issuer,
            leeway=leeway,
            options={"require": required},
        )
    except jwt.ExpiredSignatureError:
        raise Unauthenticated(f"{whose} expired: {renew}") from None
    except jwt.ImmatureSignatureError:
        raise Unauthenticated(f"{whose} is not yet valid (nbf/iat in the future)") from None
    except jwt.InvalidAudienceError:
        raise Unauthenticated(f"{whose} was issued for another audience (this gateway is {audience[:64]!r})") from None
    except jwt.InvalidIssuerError:
        raise Unauthenticated(f"{whose} was issued by another issuer") from None
    except jwt.MissingRequiredClaimError as exc:
        raise Unauthenticated(f"{whose} lacks the required claim {str(exc.claim)[:32]!r}") from None
    except jwt.InvalidSignatureError:
        raise Unauthenticated(f"{whose} signature does not verify") from None
    except jwt.InvalidAlgorithmError:
        raise Unauthenticated(f"{whose} algorithm does not match its key's algorithm") from None
    except jwt.PyJWTError:
        raise Unauthenticated(f"malformed {whose}") from None


def header_of(token: str) -> dict[str, Any]:
    import jwt  # here, not at import: the hook and `gateway check` start without it

    try:
        return jwt.get_unverified_header(token)
    except jwt.PyJWTError:
        raise Unauthenticated("malformed token: not a JWT with a readable header") from None


def issuer_of(token: str) -> str | None:
    """The iss claim as the token states it, before anything is verified: only to choose the verifier."""
    import jwt

    try:
        claims = jwt.decode(token, options={"verify_signature": False})
    except jwt.PyJWTError:
        raise Unauthenticated("malformed token: not a JWT with readable claims") from None
    issuer = claims.get("iss")
    return issuer if isinstance(issuer, str) else None
