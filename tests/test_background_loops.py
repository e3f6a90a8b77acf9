"""The gateway's background loops survive their failures, and its engine's worker processes never outlive a
start that failed. A real PostgreSQL stopped under a running gateway (tests/pg.py) fails its claim sweeps: the
failure is recorded once the store is back, the gateway keeps serving, and the sweeps go on; a start stopped by
a malformed upstream lockfile leaves no decision worker process behind."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import inproc_client, ledger_rows, reconfigure, text_of, token
from pg import PASSWORD_VAR, PostgresServer

from gateway.config import GatewayConfig
from gateway.errors import ConfigError
from gateway.runtime import Gateway
from gateway.supervise import Supervised

pytestmark = pytest.mark.anyio


async def wait_for(condition: Callable[[], bool], timeout: float = 60) -> None:
    with anyio.fail_after(timeout):
        while not condition():
            await anyio.sleep(0.02)


async def test_a_store_lost_during_a_sweep_is_recorded_and_the_gateway_keeps_serving(
    config: GatewayConfig, postgres: PostgresServer
) -> None:
    store = postgres.url(postgres.fresh_database(), password="${" + PASSWORD_VAR + "}")
    config = reconfigure(config, store=store, tasks={"sweep_s": 0.05})
    gateway = Gateway(config)
    try:
        async with inproc_client(gateway, token(config, "developer")) as client:
            [sweeps] = [loop for loop in gateway.background if loop.name == "claim sweep"]
            postgres.stop()  # the store is gone under the running gateway: every sweep fails
            await wait_for(lambda: sweeps.streak is not None and sweeps.streak.failures >= 2)
            assert sweeps.streak is not None and "StoreUnavailable" in sweeps.streak.error
            postgres.restart()
            await wait_for(lambda: sweeps.streak is None)  # a sweep went through again
            read = await client.call_tool("fs_read", {"path": "README.md"})
            assert not read.is_error, text_of(read)
    finally:
        if postgres.process is None:
            postgres.restart()
    [recovered] = ledger_rows(gateway, kind="loop")
    assert recovered.tool == "claim sweep" and recovered.outcome == "ok", recovered
    assert recovered.detail["recovered_after"] >= 2 and "StoreUnavailable" in recovered.detail["last_error"]
    assert postgres.password not in json.dumps(recovered.detail)


def decision_workers() -> list[int]:
    """This process's children that are decision workers (gateway/policy/worker.py)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            command = (entry / "cmdline").read_bytes().split(b"\0")
        except (OSError, IndexError, ValueError):
            continue
        if ppid == os.getpid() and b"gateway.policy.worker" in command:
            found.append(int(entry.name))
    return found


async def test_a_failed_start_leaves_no_decision_worker_behind(config: GatewayConfig) -> None:
    assert config.upstream_lockfile is not None
    config.upstream_lockfile.write_text("{ this is not a lockfile")
    gateway = Gateway(config)  # decisions in worker processes, as a served gateway makes them
    before = decision_workers()
    with pytest.raises(ConfigError):
        async with gateway.running():
            pytest.fail("the start goes no further than the lockfile")
    await wait_for(lambda: decision_workers() == before, timeout=10)


async def test_a_failing_loop_backs_off_and_recovers(config: GatewayConfig) -> None:
    """The loop's clock is the test's: each pass comes when the test lets it, and the waits say the backoff."""
    gateway = Gateway(config)
    waits: list[float] = []
    outcomes = iter([RuntimeError("first"), RuntimeError("second"), None, RuntimeError("third password=hunter2")])

    async def step() -> Any:
        outcome = next(outcomes)
        if outcome is not None:
            raise outcome

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    loop = Supervised("test loop", step, every_s=1.0, ledger=gateway.ledger, max_backoff_s=3.0, sleep=sleep)
    for _ in range(4):
        await loop.sleep(loop.wait_s)
        await loop.once()
    assert waits == [1.0, 2.0, 3.0, 1.0]
    rows = [(r.outcome, r.detail) for r in ledger_rows(gateway, kind="loop")]
    assert [o for o, _ in rows] == ["error", "ok", "error"], rows
    assert rows[1][1]["recovered_after"] == 2 and rows[1][1]["last_error"] == "RuntimeError: second"
    assert "hunter2" not in rows[2][1]["error"], rows[2]  # what looks like a credential is masked
