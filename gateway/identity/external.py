"""Tokens from an external issuer (the team's identity provider): JWTs verified against its JWKS.

The result is the same ``Principal`` the gateway's own tokens produce, so role scoping, the policy input and
the ledger do not know which issuer a caller came from. gateway.yaml names the issuer, its JWKS URL, the
audience, the claim that names the agent and the claim whose values map to a gateway role:

    identity:
      external_issuer:
        issuer: https://idp.example.com/realms/dev
        jwks_url: https://idp.example.com/realms/dev/protocol/openid-connect/certs
        audience: mcp-gateway
        agent_claim: preferred_username
        roles_claim: groups
        roles: {mcp-workers: worker, mcp-admins: admin}

    external = ExternalIssuer(config.identity.external_issuer, roles, revocations)
    principal = external.verify(jwt)        # raises Unauthenticated naming the check that failed

Every refusal says which check failed and never echoes the token.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable
from typing import Any

import jwt

from gateway.config import ExternalIssuerConfig
from gateway.errors import Unauthenticated
from gateway.identity.revocations import Revocations
from gateway.identity.roles import RoleSet
from gateway.identity.tokens import AGENT_NAME, decode_claims, header_of, issuer_of
from gateway.types import Principal

# A JWKS is a few keys; anything larger is refused unread beyond this, as is a set with too many keys.
MAX_JWKS_BYTES = 256 * 1024
MAX_JWKS_KEYS = 64
REQUIRED_CLAIMS = ["iss", "aud", "exp"]


def clip(value: object, limit: int = 64) -> str:
    """A claim value as a refusal may quote it: short, and never more than a fragment of what was sent."""
    return repr(str(value)[:limit])


class JwksCache:
    """The issuer's signing keys, fetched with httpx2 and kept for ``ttl_s``.

    A kid the cached set does not list fetches the set again, but never more often than ``min_refetch_s``
    (a failed fetch counts too), so tokens with made-up kids cannot make the gateway hammer the identity
    provider. Thread-safe: the HTTP front door fetches in a worker thread (see ``stale``).

        cache = JwksCache("https://idp/certs", ttl_s=300, min_refetch_s=30, timeout_s=5)
        cache.key("kid-1")        # a jwt.PyJWK, or None when the issuer does not list that kid
    """

    def __init__(
        self,
        url: str,
        ttl_s: float,
        min_refetch_s: float,
        timeout_s: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.url = url
        self.ttl_s = ttl_s
        self.min_refetch_s = min_refetch_s
        self.timeout_s = timeout_s
        self.clock = clock
        self.fetches = 0  # how many times the set was requested (for tests and the bound above)
        self._keys: dict[str, jwt.PyJWK] = {}
        self._fetched_at: float | None = None  # last successful fetch
        self._tried_at: float | None = None  # last attempt, successful or not
        self._error: str | None = None  # why the last attempt failed
        self._lock = threading.Lock()

    def key(self, kid: str) -> jwt.PyJWK | None:
        """The key with this kid, fetching the set when it is stale or does not list the kid (bounded)."""
        self.refresh(kid)
        if self._fetched_at is None:
            raise Unauthenticated(
                f"the external issuer's keys (JWKS at {self.url}) could not be fetched: {self._error}"
            )
        return self._keys.get(kid)

    def stale(self, kid: str) -> bool:
        """Would ``key(kid)`` fetch the set now? (Lets async callers fetch in a thread first.)"""
        now = self.clock()
        if self._tried_at is not None and now - self._tried_at < self.min_refetch_s:
            return False
        if self._fetched_at is None or now - self._fetched_at >= self.ttl_s:
            return True
        return kid not in self._keys

    def refresh(self, kid: str) -> None:
        """Fetch the set if ``key(kid)`` would; never raises (a failure is kept and reported by ``key``)."""
        if self.stale(kid):
            with self._lock:
                if self.stale(kid):  # another thread may have fetched meanwhile
                    self._fetch()

    def _fetch(self) -> None:
        self._tried_at = self.clock()
        self.fetches += 1
        try:
            keys = self._download()
        except Unauthenticated as exc:
            self._error = exc.message
            if self._fetched_at is not None and self.clock() - self._fetched_at >= self.ttl_s:
                self._keys, self._fetched_at = {}, None  # expired keys are not kept past a failed refresh
            return
        self._keys, self._fetched_at, self._error = keys, self._tried_at, None

    def _download(self) -> dict[str, jwt.PyJWK]:
        import httpx2  # only a gateway with an external issuer needs it (the hook starts without it)

        try:
            with (
                httpx2.Client(timeout=self.timeout_s, follow_redirects=False) as client,
                client.stream("GET", self.url, headers={"accept": "application/json"}) as response,
            ):
                if response.status_code != 200:
                    raise Unauthenticated(f"HTTP {response.status_code}")
                body = b""
                for chunk in response.iter_bytes():
                    body += chunk
                    if len(body) > MAX_JWKS_BYTES:
                        raise Unauthenticated(f"the JWKS is larger than {MAX_JWKS_BYTES} bytes")
        except httpx2.HTTPError as exc:
            raise Unauthenticated(f"{type(exc).__name__}") from None
        try:
            document = jwt.PyJWKSet.from_json(body.decode())
        except (ValueError, jwt.PyJWTError) as exc:
            raise Unauthenticated(f"not a usable JWKS ({str(exc)[:80]})") from None
        keys = [k for k in document.keys if k.key_id and k.public_key_use in (None, "sig")]
        if len(keys) > MAX_JWKS_KEYS:
            raise Unauthenticated(f"the JWKS lists more than {MAX_JWKS_KEYS} keys")
        return {k.key_id: k for k in keys if k.key_id is not None}


class ExternalIssuer:
    """Verifies the external issuer's JWTs and maps their claims to a gateway Principal."""

    def __init__(
        self,
        config: ExternalIssuerConfig,
        roles: RoleSet,
        revocations: Revocations,
        jwks: JwksCache | None = None,
    ) -> None:
        self.config = config
        self.issuer = config.issuer
        self.roles = roles
        self.revocations = revocations
        self.jwks = jwks or JwksCache(
            config.jwks_url, config.jwks_ttl_s, config.jwks_min_refetch_s, config.jwks_timeout_s
        )

    def stale(self, token: str) -> bool:
        """Would verifying this token fetch the JWKS first? (The HTTP front door then fetches in a thread.)"""
        kid = self._kid_to_fetch(token)
        return kid is not None and self.jwks.stale(kid)

    def refresh(self, token: str) -> None:
        """Fetch the JWKS if verifying this token would; blocking, so async callers run it in a thread."""
        kid = self._kid_to_fetch(token)
        if kid is not None:
            self.jwks.refresh(kid)

    def _kid_to_fetch(self, token: str) -> str | None:
        try:
            if issuer_of(token) != self.issuer:
                return None  # the gateway's own tokens never make it fetch the IdP's keys
            kid = header_of(token).get("kid")
        except Unauthenticated:
            return None  # verify() says what is wrong with it
        return kid if isinstance(kid, str) and kid else None

    def verify(self, token: str) -> Principal:
        header = header_of(token)
        alg = header.get("alg")
        if alg not in self.config.algorithms:
            raise Unauthenticated(
                f"external token algorithm {clip(alg, 20)} is not accepted; "
                f"allowed: {', '.join(self.config.algorithms)}"
            )
        kid = header.get("kid")
        if not isinstance(kid, str) or not kid:
            raise Unauthenticated("external token has no kid: cannot tell which of the issuer's keys signed it")
        key = self.jwks.key(kid)
        if key is None:
            raise Unauthenticated(f"external token names a key (kid {clip(kid, 40)}) the issuer's JWKS does not list")
        claims = self._decode(token, key)
        return Principal(
            agent=self._agent(claims),
            role=self._role(claims),
            jti=self._jti(token, claims),
            exp=int(claims["exp"]),
        )

    def _decode(self, token: str, key: jwt.PyJWK) -> dict[str, Any]:
        return decode_claims(
            token,
            key,
            algorithms=list(self.config.algorithms),
            audience=self.config.audience,
            issuer=self.issuer,
            leeway=self.config.leeway_s,
            required=REQUIRED_CLAIMS,
            renew="get a new one from the identity provider",
            whose="external token",
        )

    def _agent(self, claims: dict[str, Any]) -> str:
        name = self.config.agent_claim
        agent = claims.get(name)
        if not isinstance(agent, str) or not AGENT_NAME.match(agent):
            raise Unauthenticated(
                f"external token's {clip(name, 32)} claim (the agent) is missing or not a name matching "
                f"{AGENT_NAME.pattern}"
            )
        return agent

    def _role(self, claims: dict[str, Any]) -> str:
        name = self.config.roles_claim
        value = claims.get(name)
        if value is None:
            raise Unauthenticated(f"external token has no {clip(name, 32)} claim, which names its gateway role")
        values = [value] if isinstance(value, str) else value
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise Unauthenticated(f"external token's {clip(name, 32)} claim must be a string or a list of strings")
        roles = sorted({self.config.roles[v] for v in values if v in self.config.roles})
        if not roles:
            shown = ", ".join(clip(v, 32) for v in values[:5]) + (", ..." if len(values) > 5 else "")
            raise Unauthenticated(f"external token's {clip(name, 32)} claim ({shown}) maps to no gateway role")
        if len(roles) > 1:
            raise Unauthenticated(
                f"external token's {clip(name, 32)} claim maps to several gateway roles ({', '.join(roles)}); "
                "a credential must map to exactly one"
            )
        if roles[0] not in self.roles:
            raise Unauthenticated(f"external token maps to role {clip(roles[0], 32)}, which has no role file")
        return roles[0]

    def _jti(self, token: str, claims: dict[str, Any]) -> str:
        # The jti names the credential (sessions are bound to it, `gateway token revoke` takes it); an IdP
        # token without one is named by a digest of the whole token.
        jti = claims.get("jti")
        if not isinstance(jti, str) or not jti or len(jti) > 128:
            jti = "sha256-" + hashlib.sha256(token.encode()).hexdigest()[:32]
        if self.revocations.is_revoked(jti):
            raise Unauthenticated("token has been revoked")
        return jti
