"""Identity over real transports: role-scoped tool lists, forged tokens, revocation mid-session."""

from __future__ import annotations

import time
from typing import Any

import httpx2
import jwt
import pytest
from conftest import http_client, http_gateway, inproc_client, ledger_rows, stdio_server, text_of, token
from mcp import Client, MCPError

from gateway.runtime import Gateway

pytestmark = [pytest.mark.anyio, pytest.mark.both_stores]

ROLE_TOOLS = {
    "planner": {"fs_read", "fs_list", "fs_search", "git_status", "git_diff", "git_log", "task_show"},
    "worker": {"fs_write", "fs_edit", "fs_delete", "shell_run"},
    "verifier": {"fs_read", "git_diff"},
    "committer": {"git_status", "git_log"},
}
NEVER = {
    "planner": {"fs_write", "fs_edit", "fs_delete", "shell_run"},
    "worker": {"intent_commit", "intent_approve", "verify_run", "task_submit", "task_show"},
    "verifier": {"fs_write", "shell_run", "intent_commit"},
    "committer": {"fs_write", "shell_run", "fs_read"},
}


async def visible(client: Client) -> set[str]:
    return {t.name for t in (await client.list_tools()).tools}


def check_role_tools(role: str, names: set[str]) -> None:
    assert ROLE_TOOLS[role] <= names, f"{role} misses {ROLE_TOOLS[role] - names}"
    assert not (NEVER[role] & names), f"{role} sees {NEVER[role] & names}"


@pytest.mark.one_store  # its subject is the tool lists each role is shown, not the store: run once
async def test_four_roles_see_different_tools_over_http(config: Any) -> None:
    """In both protocol eras (auto: 2026-07-28; legacy: 2025-11-25), on one gateway process."""
    with http_gateway(config.source) as url:
        for mode in ("auto", "legacy"):
            lists = {}
            for role in ROLE_TOOLS:
                async with http_client(url, token(config, role, agent=f"{role}-1"), mode=mode) as client:
                    lists[role] = await visible(client)
            for role, names in lists.items():
                check_role_tools(role, names)
            assert len({frozenset(v) for v in lists.values()}) == 4, mode


@pytest.mark.one_store  # its subject is git, tools or a page, not the store: run once
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_four_roles_see_different_tools_over_stdio(config: Any, mode: str) -> None:
    for role in ROLE_TOOLS:
        async with Client(stdio_server(config, token(config, role, agent=f"{role}-1")), mode=mode) as client:
            check_role_tools(role, await visible(client))


async def test_planner_write_is_denied_like_an_unknown_tool_and_recorded(config: Any) -> None:
    gateway = Gateway(config)
    async with inproc_client(gateway, token(config, "planner", agent="p1")) as client:
        denied = await client.call_tool("fs_write", {"path": "x.txt", "content": "x"})
        unknown = await client.call_tool("fs_wrote", {"path": "x.txt", "content": "x"})
    assert denied.is_error and unknown.is_error
    assert text_of(denied).replace("fs_write", "X") == text_of(unknown).replace("fs_wrote", "X")
    assert denied.structured_content["error"] == {
        **unknown.structured_content["error"],
        "message": denied.structured_content["error"]["message"],
    }
    assert not (config.workspace / "x.txt").exists()
    rows = ledger_rows(gateway)
    assert rows[-2].tool == "fs_write" and rows[-2].outcome == "denied" and rows[-2].detail["tool_exists"]
    assert rows[-1].tool == "fs_wrote" and rows[-1].outcome == "invalid" and not rows[-1].detail["tool_exists"]
    assert rows[-2].principal["agent"] == "p1" and rows[-2].principal["role"] == "planner"


def forged(config: Any) -> dict[str, str]:
    gateway = Gateway(config)
    kid, key = gateway.keys.signing_key()
    now = int(time.time())
    base = {
        "iss": "mcp-gateway",
        "aud": "mcp-gateway",
        "sub": "x",
        "role": "worker",
        "jti": "a" * 32,
        "iat": now,
        "exp": now + 600,
    }

    def sign(**changes: Any) -> str:
        return jwt.encode({**base, **changes}, key, algorithm="EdDSA", headers={"kid": kid})

    return {
        "expired": sign(exp=now - 3600, iat=now - 7200),
        "not yet valid": sign(nbf=now + 3600),
        "audience": sign(aud="elsewhere"),
        "issuer": sign(iss="evil"),
        "no role file": sign(role="superuser"),
        "unknown signing key": jwt.encode(base, key, algorithm="EdDSA", headers={"kid": "other-kid"}),
        "algorithm": jwt.encode(base, "secret", algorithm="HS256", headers={"kid": kid}),
    }


def test_forged_tokens_get_401_with_the_reason_and_are_recorded(config: Any) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    cases = forged(config)
    with http_gateway(config.source) as url:
        for reason, bad in cases.items():
            answer = httpx2.post(f"{url}/mcp", json=body, headers={**headers, "Authorization": f"Bearer {bad}"})
            assert answer.status_code == 401, reason
            assert reason in answer.json()["error_description"], (reason, answer.json())
            assert "PRIVATE" not in answer.text
    refusals = ledger_rows(Gateway(config), kind="auth")
    assert len(refusals) == len(cases) and all(r.outcome == "denied" for r in refusals)


async def test_revoked_token_is_refused_on_its_next_call_over_http(config: Any) -> None:
    gateway = Gateway(config)
    bearer, claims = gateway.tokens.issue(role="planner", agent="p1")
    with http_gateway(config.source) as url:
        async with http_client(url, bearer, mode="legacy") as client:
            assert not (await client.call_tool("fs_read", {"path": "README.md"})).is_error
            gateway.revocations.revoke(claims["jti"])
            with pytest.raises(MCPError):  # the HTTP layer answers 401 before MCP sees the request
                await client.call_tool("fs_read", {"path": "README.md"})
    refusal = ledger_rows(gateway, kind="auth")[-1]
    assert refusal.outcome == "denied" and "revoked" in refusal.detail["error"]["message"]


async def test_revoked_token_is_refused_on_its_next_call_over_stdio(config: Any) -> None:
    gateway = Gateway(config)
    bearer, claims = gateway.tokens.issue(role="planner", agent="p1")
    async with Client(stdio_server(config, bearer)) as client:
        assert not (await client.call_tool("fs_read", {"path": "README.md"})).is_error
        gateway.revocations.revoke(claims["jti"])
        refused = await client.call_tool("fs_read", {"path": "README.md"})
    assert refused.is_error and "revoked" in text_of(refused)
    assert ledger_rows(gateway)[-1].outcome == "denied"


async def test_http_session_is_bound_to_the_credential_that_opened_it(config: Any) -> None:
    first = token(config, "planner", agent="p1")
    second = token(config, "planner", agent="p1")  # same agent and role, another credential
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    with http_gateway(config.source) as url:
        opened = httpx2.post(f"{url}/mcp", json=init, headers={**headers, "Authorization": f"Bearer {first}"})
        session = opened.headers["mcp-session-id"]
        listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
        hijack = httpx2.post(
            f"{url}/mcp",
            json=listing,
            headers={**headers, "Authorization": f"Bearer {second}", "mcp-session-id": session},
        )
    assert opened.status_code == 200
    assert hijack.status_code == 404


def test_a_token_verified_before_is_still_checked_on_every_call(config: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Verified tokens are cached by their text; expiry, key removal and revocation still apply on the next call."""
    from gateway.errors import Unauthenticated
    from gateway.identity import tokens as tokens_module

    gateway = Gateway(config)
    tokens = gateway.tokens
    jwt_text, claims = tokens.issue(role="developer", agent="dev-1", ttl_s=60)
    assert tokens.verify(jwt_text).jti == claims["jti"]
    assert tokens.verify(jwt_text).jti == claims["jti"]  # from the cache
    later = time.time() + 60 + tokens_module.LEEWAY_S + 1
    monkeypatch.setattr(tokens_module.time, "time", lambda: later)
    with pytest.raises(Unauthenticated, match="expired"):
        tokens.verify(jwt_text)
    monkeypatch.undo()

    old_text, _ = tokens.issue(role="developer", agent="dev-1", ttl_s=3600)
    tokens.verify(old_text)
    old_kid = tokens.keys.active_kid()
    tokens.keys.create()  # rotate, then remove the key the cached token was signed with
    tokens.keys.remove(old_kid)
    with pytest.raises(Unauthenticated, match="unknown signing key"):
        tokens.verify(old_text)

    new_text, new_claims = tokens.issue(role="developer", agent="dev-1", ttl_s=3600)
    tokens.verify(new_text)
    gateway.revocations.revoke(new_claims["jti"])
    with pytest.raises(Unauthenticated, match="revoked"):
        tokens.verify(new_text)
