"""Credentials: every forged, stale or malformed token is refused with a reason that leaks no key."""

from __future__ import annotations

import base64
import json
import os
import stat
import time
from pathlib import Path

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric.ec import SECP256R1, generate_private_key
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from gateway.bootstrap import defaults_dir
from gateway.errors import ConfigError, Unauthenticated
from gateway.identity.keys import KeyRing
from gateway.identity.revocations import Revocations
from gateway.identity.roles import RoleSet
from gateway.identity.tokens import Tokens
from gateway.store import SqliteStore


@pytest.fixture
def ring(tmp_path: Path) -> KeyRing:
    ring = KeyRing(tmp_path / "keys")
    ring.create()
    return ring


@pytest.fixture
def tokens(ring: KeyRing, tmp_path: Path) -> Tokens:
    roles = RoleSet.load(defaults_dir() / "roles")
    return Tokens(ring, roles, Revocations(SqliteStore.open(tmp_path / "db.sqlite")), "mcp-gateway", "mcp-gateway")


def claims(**overrides: object) -> dict[str, object]:
    now = int(time.time())
    base: dict[str, object] = {
        "iss": "mcp-gateway",
        "aud": "mcp-gateway",
        "sub": "w1",
        "role": "worker",
        "jti": "j" * 32,
        "iat": now,
        "nbf": now,
        "exp": now + 600,
    }
    base.update(overrides)
    return {k: v for k, v in base.items() if v is not None}


def sign(ring: KeyRing, payload: dict[str, object], kid: str | None = None) -> str:
    active, key = ring.signing_key()
    return jwt.encode(payload, key, algorithm="EdDSA", headers={"kid": kid or active})


def test_issued_token_verifies(tokens: Tokens) -> None:
    token, issued = tokens.issue(role="worker", agent="w1", task="T1", ttl_s=60)
    principal = tokens.verify(token)
    assert (principal.agent, principal.role, principal.task, principal.jti) == ("w1", "worker", "T1", issued["jti"])
    assert jwt.get_unverified_header(token)["kid"]


def test_keys_are_owner_only(ring: KeyRing) -> None:
    assert stat.S_IMODE(os.stat(ring.directory).st_mode) == 0o700
    for pem in ring.directory.glob("*.pem"):
        assert stat.S_IMODE(os.stat(pem).st_mode) == 0o600


def _b64(data: dict[str, object]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()


def forged_cases(ring: KeyRing) -> dict[str, tuple[str, str]]:
    kid = ring.active_kid()
    other = Ed25519PrivateKey.generate()
    ec_key = generate_private_key(SECP256R1())
    return {
        "alg none": (_b64({"alg": "none", "kid": kid}) + "." + _b64(claims()) + ".", "algorithm"),
        "hs256 with the public key as secret": (
            _b64({"alg": "HS256", "kid": kid, "typ": "JWT"}) + "." + _b64(claims()) + ".c2ln",
            "algorithm",
        ),
        "es256": (jwt.encode(claims(), ec_key, algorithm="ES256", headers={"kid": kid}), "algorithm"),
        "wrong key": (jwt.encode(claims(), other, algorithm="EdDSA", headers={"kid": kid}), "signature"),
        "unknown kid": (sign(ring, claims(), kid="nope-123"), "unknown signing key"),
        "kid path traversal": (sign(ring, claims(), kid="../../etc/passwd"), "unknown signing key"),
        "no kid": (jwt.encode(claims(), ring.signing_key()[1], algorithm="EdDSA"), "unknown signing key"),
        "expired": (sign(ring, claims(exp=int(time.time()) - 3600, iat=int(time.time()) - 7200)), "expired"),
        "not yet valid": (sign(ring, claims(nbf=int(time.time()) + 3600)), "not yet valid"),
        "wrong audience": (sign(ring, claims(aud="another-service")), "audience"),
        "wrong issuer": (sign(ring, claims(iss="evil")), "issuer"),
        "unknown role": (sign(ring, claims(role="root")), "no role file"),
        "missing jti": (sign(ring, claims(jti=None)), "jti"),
        "missing exp": (sign(ring, claims(exp=None)), "exp"),
        "malformed header": ("not-a-jwt", "malformed"),
        "garbage segments": ("eyJhbGciOi.eyJzdWIi.abc", "malformed"),
        "empty": ("", "no credential"),
    }


def test_forged_tokens_are_refused(tokens: Tokens, ring: KeyRing) -> None:
    pem_text = next(ring.directory.glob("*.pem")).read_text()
    for name, (token, reason) in forged_cases(ring).items():
        with pytest.raises(Unauthenticated) as caught:
            tokens.verify(token)
        message = caught.value.message
        assert reason in message, f"{name}: {message}"
        assert "PRIVATE KEY" not in message and pem_text.splitlines()[1] not in message, name


def test_revoked_token_is_refused(tokens: Tokens) -> None:
    token, issued = tokens.issue(role="worker", agent="w1")
    assert tokens.revocations.revoke(issued["jti"])
    assert not tokens.revocations.revoke(issued["jti"])
    with pytest.raises(Unauthenticated, match="revoked"):
        tokens.verify(token)


def test_rotation_keeps_old_kids_until_removed(tokens: Tokens, ring: KeyRing) -> None:
    old_token, _ = tokens.issue(role="planner", agent="p1")
    old_kid = ring.active_kid()
    new_kid = ring.create()
    new_token, _ = tokens.issue(role="planner", agent="p1")
    assert jwt.get_unverified_header(new_token)["kid"] == new_kid
    assert tokens.verify(old_token).agent == "p1"
    ring.remove(old_kid)
    with pytest.raises(Unauthenticated, match="unknown signing key"):
        tokens.verify(old_token)
    assert tokens.verify(new_token).role == "planner"
    with pytest.raises(ConfigError):
        ring.remove(new_kid)


def test_issue_refuses_unknown_role_and_bad_agent(tokens: Tokens) -> None:
    with pytest.raises(Unauthenticated, match="unknown role"):
        tokens.issue(role="root", agent="x")
    with pytest.raises(Unauthenticated, match="agent name"):
        tokens.issue(role="worker", agent="bad agent!")
