"""``/readyz``: whether this gateway can do its job now, each dependency named (``/healthz`` stays liveness).

    policy    the policy on disk loads (a file that stopped compiling is named, even while the last good
              bundle keeps deciding) and the engine decides (the decision workers, or OPA, answer)
    store     the store answers at this gateway's schema version (SQLite: the file on disk, opened afresh;
              PostgreSQL: a query on a live connection)
    sandbox   bubblewrap starts the gateway's sandbox (probed afresh; with ``sandbox.mode: off``: ready, and
              said so); a failure names its cause (gateway/sandbox_probe.py)

200 ``{"status": "ready", "checks": {...}}`` or 503 ``{"status": "not ready", "reasons": ["store: ...", ...],
"checks": {...}}``. A report is kept for ``ttl_s`` seconds: probes start processes and open files, and
the endpoint needs no credential (an orchestrator asks it), so a flood of requests costs one probe a period.

    readiness = Readiness(gateway)
    ready, body = await readiness.report()
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio

from gateway.store import SCHEMA_VERSION, SqliteStore
from gateway.types import JSONObject

if TYPE_CHECKING:
    from gateway.runtime import Gateway

__all__ = ["Readiness"]

CHECK_TIMEOUT_S = 10.0  # a probe slower than this (a store that hangs) is a failure
Check = tuple[bool, str]


class Readiness:
    def __init__(self, gateway: Gateway, ttl_s: float = 2.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.gateway = gateway
        self.ttl_s = ttl_s
        self.clock = clock
        self._kept: tuple[float, bool, JSONObject] | None = None
        self._lock = anyio.Lock()

    async def report(self) -> tuple[bool, JSONObject]:
        async with self._lock:  # concurrent probes wait for one report
            now = self.clock()
            if self._kept is None or now - self._kept[0] >= self.ttl_s:
                ready, body = await self._probe()
                self._kept = (self.clock(), ready, body)
            return self._kept[1], self._kept[2]

    async def _probe(self) -> tuple[bool, JSONObject]:
        checks: dict[str, Check] = {}

        async def run(name: str, probe: Callable[[], Any]) -> None:
            try:
                with anyio.fail_after(CHECK_TIMEOUT_S):
                    checks[name] = await probe()
            except TimeoutError:
                checks[name] = (False, f"no answer within {CHECK_TIMEOUT_S:.0f} s")
            except Exception as exc:  # a probe that fails is the answer, whatever it raised
                checks[name] = (False, getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}")

        async with anyio.create_task_group() as tg:
            tg.start_soon(run, "policy", self._policy)
            tg.start_soon(run, "store", self._store)
            tg.start_soon(run, "sandbox", self._sandbox)
        ready = all(ok for ok, _ in checks.values())
        body: JSONObject = {
            "status": "ready" if ready else "not ready",
            "checks": {name: {"ok": ok, "detail": detail} for name, (ok, detail) in sorted(checks.items())},
        }
        if not ready:
            body["reasons"] = [f"{name}: {detail}" for name, (ok, detail) in sorted(checks.items()) if not ok]
        return ready, body

    async def _policy(self) -> Check:
        engine = self.gateway.engine
        status = await anyio.to_thread.run_sync(engine.status)  # looks at the files again (at most once a second)
        if status.get("last_error"):
            return False, f"the policy on disk does not load: {status['last_error']} (the last good one still decides)"
        await engine.query("gateway.decision", {})  # the engine answers: its workers, or OPA
        return True, f"{status.get('engine')}, {len(status.get('files') or [])} files"

    async def _store(self) -> Check:
        db = self.gateway.db
        if isinstance(db, SqliteStore):  # a new connection: the one kept open still reads a file since removed
            version = await anyio.to_thread.run_sync(db.version_on_disk)
        else:
            version = await anyio.to_thread.run_sync(db.schema_version)
        if version != SCHEMA_VERSION:
            return False, f"{db.where} is at schema version {version}, this gateway's is {SCHEMA_VERSION}"
        return True, f"{db.where}, schema version {version}"

    async def _sandbox(self) -> Check:
        config = self.gateway.config.sandbox
        if config.mode == "off":
            return True, "off (sandbox.mode: off): commands run unconfined, each marked so"
        from gateway.sandbox import Sandbox, SandboxUnavailable
        from gateway.sandbox_probe import first_failure

        try:
            await anyio.to_thread.run_sync(Sandbox(config).check)  # a new Sandbox probes afresh
        except SandboxUnavailable as exc:
            failed = await anyio.to_thread.run_sync(first_failure, config)  # the cause, named
            return False, f"{failed.name}: {failed.detail}" if failed is not None else exc.message
        return True, "bubblewrap starts the sandbox"
