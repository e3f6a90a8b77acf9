"""The decision cache serves a decision again only for the same facts under the same policy: a policy edit,
a role edit and a claim's expiry each end what was cached (real engines, real policy files, real claims)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import anyio
import pytest
from conftest import token
from structlog.testing import capture_logs
from test_merge_queue import call, started, submit

from gateway.judge.call import Call
from gateway.judge.decide import policy_input
from gateway.origin import Origin
from gateway.policy.cache import DecisionCache
from gateway.policy.embedded import EmbeddedEngine
from gateway.policy.opa import OpaEngine
from gateway.process import free_port
from gateway.types import Principal

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
        duty = config.policy_dir / "duty" / "duty.rego"
        duty.write_text(duty.read_text() + EDIT)
        with anyio.fail_after(30):  # the files are looked at once a second: wait for the edit to be seen
            while (answer := await gateway.check(DEVELOPER, "fs_read", {"path": "README.md"}))["action"] == "allow":
                await anyio.sleep(0.1)
    assert answer["action"] == "deny" and answer["rules"] == ["test.edited"]


async def test_a_role_edit_ends_what_was_cached_without_a_restart(config: Any) -> None:
    command = {"command": "rm -f README.md"}  # tier 2: within the developer's max_tier
    async with started(config) as gateway:
        assert (await gateway.check(DEVELOPER, "shell_run", command))["action"] == "allow"
        assert (await gateway.check(DEVELOPER, "shell_run", command))["action"] == "allow"
        assert gateway.engine.status()["cache"]["hits"] == 1
        before = gateway.engine.revision()
        role = config.roles_dir / "developer.yaml"
        role.write_text(role.read_text().replace("max_tier: 2", "max_tier: 1"))
        with anyio.fail_after(30):  # role files are looked at once a second, like policy files
            while (answer := await gateway.check(DEVELOPER, "shell_run", command))["action"] == "allow":
                await anyio.sleep(0.1)
        assert answer["action"] == "ask" and gateway.engine.revision() != before
        cache = gateway.engine.status()["cache"]
        assert (await gateway.check(DEVELOPER, "shell_run", command))["action"] == "ask"
        assert gateway.engine.status()["cache"]["hits"] == cache["hits"] + 1  # cached again, under the new roles


async def test_a_role_file_that_does_not_load_keeps_the_last_good_roles(config: Any) -> None:
    command = {"command": "rm -f README.md"}
    async with started(config) as gateway:
        before = gateway.engine.revision()
        role = config.roles_dir / "developer.yaml"
        good = role.read_text()
        role.write_text(good.replace("max_tier: 2", "max_tier: 7"))  # not a tier
        (config.roles_dir / "Bad Name.yaml").write_text("name: [\n")  # not YAML
        with capture_logs() as logs, anyio.fail_after(30):
            while gateway.roles.last_error is None:
                await anyio.sleep(0.1)
        assert "max_tier" in gateway.roles.last_error or "not valid YAML" in gateway.roles.last_error
        assert any(e["event"] == "roles reload failed; keeping the last good roles" for e in logs)
        assert gateway.roles["developer"].max_tier == 2 and gateway.visible_tools(DEVELOPER)
        assert (await gateway.check(DEVELOPER, "shell_run", command))["action"] == "allow"
        assert gateway.engine.revision() == before  # the policy still decides with the last good roles
        (config.roles_dir / "Bad Name.yaml").unlink()
        role.write_text(good.replace("max_tier: 2", "max_tier: 1"))
        with anyio.fail_after(30):  # fixed: the new roles take effect
            while gateway.roles.last_error is not None or gateway.roles["developer"].max_tier != 1:
                await anyio.sleep(0.1)
        assert (await gateway.check(DEVELOPER, "shell_run", command))["action"] == "ask"


async def test_a_decision_about_a_claim_ends_when_the_claim_expires(config: Any) -> None:
    async with started(config) as gateway:
        await submit(gateway, "T1", ["src/**"], ["grep -q 42 src/app.py"])
        claimed = await call(gateway, token(config, "worker", agent="w"), "task_claim", {"task_id": "T1"})
        expires = datetime.fromisoformat(claimed.structured_content["claim"]["expires_at"])
        write = Call(tool="fs_write", arguments={"path": "src/new.py", "content": "x = 1\n"}, origin=Origin(
            transport="inprocess", protocol_version="check"), kind="check")  # fmt: skip
        write.principal = Principal(agent="w", role="worker", task="T1")
        await gateway.stacks.check.run(write)
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
