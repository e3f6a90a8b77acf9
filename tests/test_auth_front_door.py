"""The HTTP front door: RFC 9728 metadata, RFC 6750 challenges that say why, and JWTs from an external issuer.

A real identity provider stand-in (an http.server on 127.0.0.1 serving a JWKS of keys made here), real
`gateway serve --http` processes, the SDK's MCP client and the MCP Inspector CLI.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import anyio
import httpx2
import jwt
import pytest
from conftest import BIN, NPM_MODULES, http_client, http_gateway, inproc_client, ledger_rows, reconfigure, token
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from starlette.requests import HTTPConnection

from gateway.errors import Unauthenticated
from gateway.identity.external import JwksCache
from gateway.process import free_port
from gateway.runtime import Gateway

ISSUER = "https://idp.example.test/realms/dev"
AUDIENCE = "mcp-gateway-dev"
ROLE_MAP = {"team-planners": "planner", "team-workers": "worker", "team-admins": "admin"}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
INSPECTOR = NPM_MODULES / ".bin" / "inspector"
# the Inspector's switch for non-interactive runs: never start interactive OAuth (see docs/auth.md)
NON_INTERACTIVE = ["--stored-auth-only", "--method", "tools/list"]


class IdentityProvider:
    """Signing keys (RS256, ES256, EdDSA) made in the test, their JWKS served on 127.0.0.1; counts fetches."""

    def __init__(self) -> None:
        self.keys: dict[str, tuple[str, Any]] = {
            "rsa-1": ("RS256", rsa.generate_private_key(public_exponent=65537, key_size=2048)),
            "ec-1": ("ES256", ec.generate_private_key(ec.SECP256R1())),
            "ed-1": ("EdDSA", ed25519.Ed25519PrivateKey.generate()),
        }
        self.fetches = 0
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/jwks"

    def jwks(self) -> dict[str, Any]:
        keys = []
        for kid, (alg, private) in self.keys.items():
            algorithm = jwt.get_algorithm_by_name(alg)
            jwk = json.loads(algorithm.to_jwk(private.public_key()))
            keys.append({**jwk, "kid": kid, "use": "sig", "alg": alg})
        return {"keys": keys}

    def token(self, kid: str = "rsa-1", signed_by: Any = None, kid_header: str | None = None, **overrides: Any) -> str:
        now = int(time.time())
        claims: dict[str, Any] = {
            "iss": ISSUER,
            "aud": AUDIENCE,
            "sub": "f3c1d2e4-0000",
            "preferred_username": "alice",
            "groups": ["staff", "team-planners"],
            "iat": now,
            "nbf": now,
            "exp": now + 600,
            "jti": f"idp-{kid}-{now}-{len(overrides)}",
        }
        claims.update(overrides)
        claims = {k: v for k, v in claims.items() if v is not None}
        alg, key = self.keys[kid]
        return jwt.encode(claims, signed_by or key, algorithm=alg, headers={"kid": kid_header or kid})

    @staticmethod
    def config(jwks_url: str, **overrides: Any) -> dict[str, Any]:
        return {
            "issuer": "mcp-gateway",
            "audience": "mcp-gateway",
            "external_issuer": {
                "issuer": ISSUER,
                "jwks_url": jwks_url,
                "audience": AUDIENCE,
                "agent_claim": "preferred_username",
                "roles_claim": "groups",
                "roles": ROLE_MAP,
                **overrides,
            },
        }

    def serve(self) -> Iterator[IdentityProvider]:
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                provider.fetches += 1
                body = json.dumps(provider.jwks()).encode() if self.path == "/jwks" else b"{}"
                self.send_response(200 if self.path == "/jwks" else 404)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            server.shutdown()
            server.server_close()


@pytest.fixture
def idp() -> Iterator[IdentityProvider]:
    yield from IdentityProvider().serve()


@pytest.fixture
def external(config: Any, idp: IdentityProvider) -> Any:
    """The test workspace with the identity provider configured as external issuer."""
    return reconfigure(config, identity=IdentityProvider.config(idp.url))


def refused(url: str, bearer: str | None) -> httpx2.Response:
    headers = dict(MCP_HEADERS, **({"Authorization": f"Bearer {bearer}"} if bearer else {}))
    return httpx2.post(f"{url}/mcp", json=LIST, headers=headers, timeout=30)


def challenge(answer: httpx2.Response) -> dict[str, str]:
    value = answer.headers["www-authenticate"]
    assert value.startswith("Bearer "), value
    return dict(re.findall(r'(\w+)="([^"]*)"', value))


# --- external JWTs through the whole gateway ----------------------------------------------------------


@pytest.mark.anyio
async def test_external_jwts_get_their_mapped_role_over_http(external: Any, idp: IdentityProvider) -> None:
    with http_gateway(external.source) as url:
        for kid in ("rsa-1", "ec-1", "ed-1"):  # RS256, ES256, EdDSA
            async with http_client(url, idp.token(kid)) as client:
                names = {t.name for t in (await client.list_tools()).tools}
                assert "fs_read" in names and "fs_write" not in names, kid  # the planner's tools
        worker = idp.token("rsa-1", preferred_username="bob", groups="team-workers")  # a single string works too
        async with http_client(url, worker) as client:
            assert "fs_write" in {t.name for t in (await client.list_tools()).tools}
            result = await client.call_tool("fs_read", {"path": "README.md"})
            assert not result.is_error
    calls = [r for r in ledger_rows(Gateway(external)) if r.tool == "fs_read"]
    assert calls and calls[-1].principal["agent"] == "bob" and calls[-1].principal["role"] == "worker"
    assert idp.fetches == 1, "one JWKS fetch serves every key until the TTL"


@pytest.mark.anyio
async def test_external_jwt_over_stdio_and_revocation(external: Any, idp: IdentityProvider) -> None:
    gateway = Gateway(external)
    bearer = idp.token("ed-1", jti="idp-session-42")
    async with inproc_client(gateway, bearer) as client:  # the pipeline's own authentication, not only HTTP's
        assert "fs_read" in {t.name for t in (await client.list_tools()).tools}
    principal = gateway.tokens.verify(bearer)
    assert (principal.agent, principal.role, principal.jti) == ("alice", "planner", "idp-session-42")
    gateway.revocations.revoke("idp-session-42")  # `gateway token revoke` works for the IdP's tokens too
    with pytest.raises(Unauthenticated, match="revoked"):
        gateway.tokens.verify(bearer)
    own = token(external, "worker", agent="w1")  # the gateway's own tokens are unchanged beside it
    assert gateway.tokens.verify(own).role == "worker"


def test_bad_external_tokens_get_401_with_the_failed_check(external: Any, idp: IdentityProvider) -> None:
    stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    hour_ago = int(time.time()) - 3600
    cases = {
        "unknown issuer": (idp.token(iss="https://other-idp.example"), "issuer 'https://other-idp.example' is not"),
        "no role claim": (idp.token(groups=None), "has no 'groups' claim"),
        "unmapped claim": (idp.token(groups=["staff", "interns"]), "maps to no gateway role"),
        "hostile claim": (idp.token(groups=['a"b\r\nSet-Cookie: x=1', "\u00e9quipe"]), "maps to no gateway role"),
        "two roles": (idp.token(groups=["team-workers", "team-admins"]), "maps to several gateway roles"),
        "bad signature": (idp.token(signed_by=stranger), "signature does not verify"),
        "expired": (idp.token(iat=hour_ago - 600, nbf=hour_ago - 600, exp=hour_ago), "expired"),
        "wrong audience": (idp.token(aud="another-service"), "another audience"),
        "unknown kid": (idp.token(signed_by=stranger, kid_header="x9"), "does not list"),
        "symmetric alg": (jwt.encode({"iss": ISSUER}, "s" * 32, "HS256", headers={"kid": "rsa-1"}), "algorithm"),
        "bad agent name": (idp.token(preferred_username="a b;rm"), "'preferred_username' claim (the agent)"),
    }
    with http_gateway(external.source) as url:
        answers = {name: refused(url, bearer) for name, (bearer, _) in cases.items()}
    rows = [r.detail["error"]["message"] for r in ledger_rows(Gateway(external), kind="auth")]
    for name, (bearer, reason) in cases.items():
        answer = answers[name]
        assert answer.status_code == 401, name
        assert reason in answer.json()["error_description"], (name, answer.json())
        said = challenge(answer)
        assert said["error"] == "invalid_token" and reason.replace('"', "'") in said["error_description"], name
        assert bearer not in answer.text and bearer not in answer.headers["www-authenticate"], name
        assert "set-cookie" not in answer.headers, "claim values cannot inject headers"
        assert any(reason in row for row in rows), f"{name}: no ledger row"
        assert not any(bearer in row for row in rows)


def test_unreachable_jwks_is_a_401_that_says_so(config: Any) -> None:
    closed = f"http://127.0.0.1:{free_port()}/jwks"
    configured = reconfigure(config, identity=IdentityProvider.config(closed, jwks_timeout_s=5))
    bearer = IdentityProvider().token()
    with http_gateway(configured.source) as url:
        answer = refused(url, bearer)
        assert refused(url, token(configured, "planner")).status_code != 401, "own tokens still work"
    assert answer.status_code == 401
    assert "JWKS" in answer.json()["error_description"] and "could not be fetched" in answer.json()["error_description"]
    rows = [r.detail["error"]["message"] for r in ledger_rows(Gateway(configured), kind="auth")]
    assert any("could not be fetched" in row for row in rows)


def test_config_refuses_an_incomplete_external_issuer(config: Any) -> None:
    from gateway.errors import ConfigError

    incomplete = {"issuer": ISSUER, "jwks_url": "https://x/jwks", "audience": "a", "roles": {}}
    with pytest.raises(ConfigError, match=r"identity\.external_issuer\.roles"):
        reconfigure(config, identity={"external_issuer": incomplete})
    shadowing = IdentityProvider.config("https://x/jwks", issuer="mcp-gateway")  # would shadow the own tokens
    with pytest.raises(ConfigError, match="must differ"):
        reconfigure(config, identity=shadowing)


# --- the JWKS cache: TTL, refetch on unknown kid, bounded ----------------------------------------------


def test_jwks_cache_refetches_on_ttl_and_new_kids_but_never_faster_than_its_bound(idp: IdentityProvider) -> None:
    now = [1000.0]
    cache = JwksCache(idp.url, ttl_s=300, min_refetch_s=30, timeout_s=5, clock=lambda: now[0])
    assert cache.key("rsa-1") is not None and cache.fetches == 1
    for kid in ("forged-1", "forged-2", "forged-3"):  # made-up kids do not hammer the IdP
        assert cache.key(kid) is None
    assert cache.fetches == 1
    idp.keys["rsa-2"] = ("RS256", rsa.generate_private_key(public_exponent=65537, key_size=2048))  # key rotation
    now[0] += 31
    assert cache.key("rsa-2") is not None and cache.fetches == 2
    now[0] += 100
    assert cache.key("rsa-1") is not None and cache.fetches == 2, "a known kid within the TTL is not refetched"
    now[0] += 300
    cache.key("rsa-1")
    assert cache.fetches == 3, "after the TTL the set is fetched again"


def test_jwks_cache_reports_an_unreachable_issuer_and_drops_expired_keys(idp: IdentityProvider) -> None:
    now = [0.0]
    cache = JwksCache(idp.url, ttl_s=60, min_refetch_s=10, timeout_s=5, clock=lambda: now[0])
    assert cache.key("ec-1") is not None
    cache.url = f"http://127.0.0.1:{free_port()}/jwks"  # the IdP goes away
    now[0] += 61
    with pytest.raises(Unauthenticated, match="could not be fetched: ConnectError"):
        cache.key("ec-1")
    fetches = cache.fetches
    with pytest.raises(Unauthenticated, match="could not be fetched"):
        cache.key("ec-1")
    assert cache.fetches == fetches, "a failed fetch is not retried before the bound"


# --- RFC 9728 metadata and RFC 6750 challenges ---------------------------------------------------------


def test_metadata_without_an_external_issuer_names_no_authorization_server(config: Any) -> None:
    with http_gateway(config.source) as url:
        documents = [httpx2.get(f"{url}/.well-known/oauth-protected-resource{suffix}") for suffix in ("", "/mcp")]
        port = url.rsplit(":", 1)[1]
        metadata = f"{url}/.well-known/oauth-protected-resource/mcp"
        as_localhost = httpx2.get(metadata, headers={"host": f"localhost:{port}"})
        foreign = httpx2.get(metadata, headers={"host": "evil.example"})
        help_page = httpx2.get(f"{url}/auth")
        missing = refused(url, None)
    for answer in documents:
        assert answer.status_code == 200 and answer.headers["content-type"] == "application/json"
        document = answer.json()
        assert document["resource"] == f"{url}/mcp"
        assert document["bearer_methods_supported"] == ["header"]
        assert document["resource_documentation"] == f"{url}/auth"
        assert "authorization_servers" not in document  # own tokens only: no OAuth server to send clients to
    assert as_localhost.json()["resource"] == f"http://localhost:{port}/mcp", "the URL as the client reached it"
    assert foreign.status_code == 421, "a Host the transport refuses is never reflected"
    assert "gateway token issue" in help_page.text
    said = challenge(missing)
    assert "error" not in said, "RFC 6750: no error code when no credential was sent"
    assert "no credential" in said["error_description"] and "no credential" in missing.json()["error_description"]
    assert said["resource_metadata"] == f"{url}/.well-known/oauth-protected-resource/mcp"


def test_metadata_with_an_external_issuer_and_the_challenge_points_to_it(external: Any, idp: IdentityProvider) -> None:
    with http_gateway(external.source) as url:
        expired = refused(url, token(external, "planner", ttl=-120))
        said = challenge(expired)
        document = httpx2.get(said["resource_metadata"]).json()
        help_page = httpx2.get(document["resource_documentation"]).text
    assert said["error"] == "invalid_token" and "expired" in said["error_description"]
    assert said["resource_metadata"] == f"{url}/.well-known/oauth-protected-resource/mcp"
    assert document["resource"] == f"{url}/mcp" and document["authorization_servers"] == [ISSUER]
    assert document["bearer_methods_supported"] == ["header"]
    assert ISSUER in help_page and "team-workers -> worker" in help_page


# --- the MCP Inspector CLI shows the gateway's reason ----------------------------------------------------


@pytest.mark.skipif(not INSPECTOR.exists(), reason="run `make test` to install the Inspector CLI")
def test_inspector_shows_the_gateways_401_reason(config: Any) -> None:
    expired = token(config, "planner", ttl=-120)
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}", MCP_INSPECTOR_SECRET_STORE="memory")
    with http_gateway(config.source) as url:
        proc = subprocess.run(
            [str(INSPECTOR), "--cli", f"{url}/mcp", "--header", f"Authorization: Bearer {expired}", *NON_INTERACTIVE],
            capture_output=True,
            text=True,
            timeout=90,
            env=env,
            stdin=subprocess.DEVNULL,
        )
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "token expired: issue a new one with 'gateway token issue'" in output, output
    assert "Interactive OAuth" not in output and expired not in output


def test_jwks_fetch_does_not_hold_the_event_loop(external: Any, idp: IdentityProvider) -> None:
    """The HTTP front door fetches the IdP's keys in a worker thread (CredentialBackend), never inline."""
    from gateway.server import CredentialBackend, GatewayTokenVerifier

    gateway = Gateway(external)
    backend = CredentialBackend(GatewayTokenVerifier(gateway.tokens))
    bearer = idp.token("ec-1")
    assert gateway.tokens.external is not None and gateway.tokens.external.stale(bearer)
    threads: list[str] = []
    download = gateway.tokens.external.jwks._download

    def watched() -> Any:
        threads.append(threading.current_thread().name)
        return download()

    gateway.tokens.external.jwks._download = watched  # type: ignore[method-assign]

    conn = HTTPConnection({"type": "http", "headers": [(b"authorization", f"Bearer {bearer}".encode())]})

    async def main() -> Any:
        return await backend.authenticate(conn)

    result = anyio.run(main)
    assert result is not None and result[1].access_token.client_id == "alice"
    assert threads and threads[0] != threading.main_thread().name
