"""The decision cache serves a decision again only for the same facts under the same policy: a policy edit,
a role edit and a claim's expiry each end what was cached (real engines, real policy files, real claims)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import anyio
import pytest
from conftest import token
from test_merge_queue import call, started, submit

from gateway.pipeline import Call, policy_input
from gateway.policy.cache import DecisionCache
from gateway.policy.embedded import EmbeddedEngine
from gateway.policy.opa import OpaEngine
from gateway.process import free_port
from gateway.types import Origin, Principal

pytestmark = pytest.mark.anyio

DEVELOPER = Principal(agent="d", role="developer")
EDIT = """
deny contains {"rule": "test.edited", "reason": "an edit of the policy"} if input.tool.name == "fs_read"
"""


async def test_the_same_facts_are_answered_from_the_cache(config: Any) -> None:
    async with started(config) as gateway:
        first = await gateway.check(DEVELOPER, "fs_read", {"path": "README.md"})
        again = await gateway.check(DEVELOPER, "fs_read", {"path": "README.md"})  # new time, new trace id
        other = await gateway.check(DEVELOPER, "fs_read", {"path": "src/app.py"})
        cache = gateway.engine.status()["cache"]
    assert first["action"] == again["action"] == other["action"] == "allow"
    assert (cache["hits"], cache["misses"]) == (1, 2)


async def test_a_policy_edit_ends_what_was_cached(config: Any) -> None:
    async with started(config) as gateway:
        assert (await gateway.check(DEVELOPER, "fs_read", {"path": "README.md"}))["action"] == "allow"
        duty = config.policy_dir / "duty.rego"
        duty.write_text(duty.read_text() + EDIT)
        with anyio.fail_after(30):  # the files are looked at once a second: wait for the edit to be seen
            while (answer := await gateway.check(DEVELOPER, "fs_read", {"path": "README.md"}))["action"] == "allow":
                await anyio.sleep(0.1)
    assert answer["action"] == "deny" and answer["rules"] == ["test.edited"]


async def test_a_role_edit_is_a_restart_and_a_restart_starts_with_an_empty_cache(config: Any) -> None:
    command = {"command": "rm -f README.md"}  # tier 2: within the developer's max_tier
    async with started(config) as gateway:
        assert (await gateway.check(DEVELOPER, "shell_run", command))["action"] == "allow"
        assert (await gateway.check(DEVELOPER, "shell_run", command))["action"] == "allow"
        assert gateway.engine.status()["cache"]["hits"] == 1
    role = config.roles_dir / "developer.yaml"
    role.write_text(role.read_text().replace("max_tier: 2", "max_tier: 1"))
    async with started(config) as gateway:  # roles are read at start: the policy's data.roles
        answer = await gateway.check(DEVELOPER, "shell_run", command)
        assert answer["action"] == "ask" and gateway.engine.status()["cache"]["hits"] == 0


async def test_a_decision_about_a_claim_ends_when_the_claim_expires(config: Any) -> None:
    async with started(config) as gateway:
        await submit(gateway, "T1", ["src/**"], ["grep -q 42 src/app.py"])
        claimed = await call(gateway, token(config, "worker", agent="w"), "task_claim", {"task_id": "T1"})
        expires = datetime.fromisoformat(claimed.structured_content["claim"]["expires_at"])
        write = Call(tool="fs_write", arguments={"path": "src/new.py", "content": "x = 1\n"}, origin=Origin(
            transport="inprocess", protocol_version="check"), kind="check")  # fmt: skip
        write.principal = Principal(agent="w", role="worker", task="T1")
        await gateway.judge.run(write)
        doc = policy_input(write)
        assert doc["task"]["claim"]["owner"] == "w"

    clock = [datetime.fromisoformat(doc["context"]["time"]).timestamp()]
    cache = DecisionCache(
        EmbeddedEngine(config.policy_dir, {"roles": gateway.roles.as_data()}),
        ttl_s=3600,
        size=16,
        clock=lambda: clock[0],
    )
    assert (await cache.decide(doc)).action == "allow"
    soon = {**doc, "context": {**doc["context"], "time": (expires - timedelta(seconds=5)).isoformat()}}
    clock[0] = (expires - timedelta(seconds=5)).timestamp()
    assert (await cache.decide(soon)).action == "allow" and cache.hits == 1  # same facts, claim still live
    after = {**doc, "context": {**doc["context"], "time": (expires + timedelta(seconds=1)).isoformat()}}
    clock[0] = (expires + timedelta(seconds=1)).timestamp()
    expired = await cache.decide(after)  # the key is the same (time is not in it): only the lifetime ends it
    assert expired.action == "deny" and "paths.claim_not_held" in expired.rules
    assert (cache.hits, cache.misses) == (1, 2)


async def test_engine_errors_are_never_cached(config: Any) -> None:
    unreachable = OpaEngine(config.policy_dir, {"roles": {}}, url=f"http://127.0.0.1:{free_port()}")  # no OPA there
    engine = DecisionCache(unreachable, ttl_s=3600, size=16)
    doc = {"version": 2, "tool": {"name": "fs_read"}, "context": {"time": "2026-11-23T00:00:00+00:00"}}
    first = await engine.decide(doc)
    await engine.decide(doc)
    await engine.aclose()
    assert first.action == "deny" and first.rules == ["engine.error"]
    assert (engine.hits, engine.misses) == (0, 2)
