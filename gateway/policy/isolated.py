"""Decisions off the event loop, with a deadline: the embedded engine in worker processes.

regorus holds the GIL while it evaluates, and no thread can be stopped from outside, so a decision that
runs long (a policy with a superlinear rule, a pathological input) would stall every other agent of the
gateway until it finished. Here each evaluation runs in one of a few worker processes
(gateway/policy/worker.py); the gateway waits for it in a thread, and a worker that has not answered by
the deadline is killed and replaced: the call is denied with a clear reason and the rest go on. The
workers also put decisions on the other cores.

    engine = IsolatedEngine(Path("policies"), gateway.roles, workers=2, deadline_s=0.5)   # or {"roles": {...}}
    decision = await engine.decide(input_doc)      # deny "gateway.decision_deadline" when too slow
    await engine.aclose()
"""

from __future__ import annotations

import json
import os
import queue
import select
import signal
import subprocess
import sys
import threading
import time
import weakref
from contextlib import suppress
from pathlib import Path
from typing import Any

import anyio
import structlog

from gateway.policy.bundle import QUERY, Bundle, LiveBundle
from gateway.policy.checked import CheckedSources
from gateway.policy.embedded import load_bundle
from gateway.policy.engine import engine_error, to_decision
from gateway.policy.reload import PolicyData
from gateway.types import Decision, JSONObject

log = structlog.get_logger("gateway.policy")

SPAWN_TIMEOUT_S = 60.0  # loading the bundle in a new worker; not counted against a decision's deadline


class DecisionTimeout(Exception):
    pass


class WorkerFailed(Exception):
    pass


class Worker:
    """One worker process and the bytes it has answered but not yet been read."""

    def __init__(self, bundle: Bundle) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "gateway.policy.worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            start_new_session=True,  # a Ctrl-C meant for the gateway is the gateway's to handle
        )
        self.buffer = b""
        # the gateway is the source of the data (the roles it has loaded): a worker never reads role files
        self.data_revision = bundle.data_revision
        self.revision = bundle.revision  # the bundle it was last told passed its checks here (below and in ask)
        setup = {"directory": str(bundle.directory), "data": bundle.data, "data_revision": bundle.data_revision}
        setup["checked"] = bundle.content  # what this process's load checked: the worker need not again
        self._send(json.dumps(setup).encode() + b"\n")
        ready = json.loads(self._line(time.monotonic() + SPAWN_TIMEOUT_S))
        if not ready.get("ok"):
            self.kill()
            raise WorkerFailed(str(ready.get("error", "the decision worker did not start")))

    def ask(self, rule: str, payload: bytes, deadline: float, bundle: Bundle) -> Any:
        """The rule's value, decided as ``bundle`` decides: its revision, and its data when the worker's is older."""
        header: JSONObject = {"rule": rule, "revision": bundle.revision}
        if bundle.data_revision != self.data_revision:
            header |= {"data": bundle.data, "data_revision": bundle.data_revision}
        if bundle.revision != self.revision:  # a reload: the worker rereads the files, and checks only other content
            header["checked"] = bundle.content
        self._send(json.dumps(header).encode() + b"\n" + payload + b"\n")
        status = json.loads(self._line(deadline))
        if not status.get("ok"):
            raise WorkerFailed(str(status.get("error", "unknown error")))
        self.data_revision, self.revision = bundle.data_revision, bundle.revision
        return json.loads(self._line(deadline))

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                stream.close()

    def _send(self, data: bytes) -> None:
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(data)
            self.process.stdin.flush()
        except (BrokenPipeError, ValueError) as exc:
            raise WorkerFailed(f"the decision worker is gone: {exc}") from None

    def _line(self, deadline: float) -> bytes:
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        while b"\n" not in self.buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise DecisionTimeout("the decision took longer than its deadline")
            readable, _, _ = select.select([fd], [], [], remaining)
            if readable:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    raise WorkerFailed(f"the decision worker exited ({self.process.poll()})")
                self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line


class WorkerPool:
    """A fixed number of worker slots; a slot's process starts on first use and after a kill."""

    def __init__(self, live: LiveBundle, size: int) -> None:
        self.live = live  # a new worker starts with the bundle in force
        self.size = size
        self._idle: queue.SimpleQueue[Worker | None] = queue.SimpleQueue()
        self._all: set[Worker] = set()
        self._lock = threading.Lock()
        for _ in range(size):
            self._idle.put(None)
        # workers exit when their stdin closes; this kills them when the pool goes away unclosed, too
        self._finalizer = weakref.finalize(self, _kill_all, self._all)

    def evaluate(self, rule: str, payload: bytes, deadline: float, bundle: Bundle) -> Any:
        """The rule's value for the input (JSON bytes) as ``bundle`` decides; DecisionTimeout past ``deadline``
        (monotonic)."""
        try:
            worker = self._idle.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise DecisionTimeout("every decision worker was busy until the deadline") from None
        try:
            if worker is None or not worker.alive:
                started = time.monotonic()
                worker = self._spawn()
                deadline += time.monotonic() - started  # starting a worker is not the decision's time
            return worker.ask(rule, payload, deadline, bundle)
        except (DecisionTimeout, WorkerFailed):
            if worker is not None:
                self._discard(worker)
            worker = None
            raise
        finally:
            self._idle.put(worker)

    def start(self) -> None:
        """Start every slot's worker now, side by side, and return once they are up: a gateway serves with its
        decision workers ready, so no early decision waits for one to start against its deadline."""

        def warm() -> None:
            try:
                self._adopt(self._spawn())
            except WorkerFailed as exc:
                log.error("a decision worker did not start", error=str(exc))

        threads = [threading.Thread(target=warm, name="decision-worker", daemon=True) for _ in range(self.size)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    def _adopt(self, worker: Worker) -> None:
        """Put a started worker in an idle slot that has none (or a dead one); discard it when a decision has
        started one in every slot meanwhile."""
        slots: list[Worker | None] = []
        with suppress(queue.Empty):
            while True:
                slots.append(self._idle.get_nowait())
        empty = next((i for i, slot in enumerate(slots) if slot is None or not slot.alive), None)
        if empty is not None:
            dead, slots[empty] = slots[empty], worker
            if dead is not None:
                self._discard(dead)
        for slot in slots:
            self._idle.put(slot)
        if empty is None:
            self._discard(worker)

    def close(self) -> None:
        """Stop every worker; the pool stays usable (a slot starts a new worker when next used)."""
        with self._lock:
            workers = list(self._all)
        _kill_all(set(workers))
        with self._lock:
            self._all.difference_update(workers)

    def _spawn(self) -> Worker:
        worker = Worker(self.live.bundle)
        with self._lock:
            self._all.add(worker)
        return worker

    def _discard(self, worker: Worker) -> None:
        with self._lock:
            self._all.discard(worker)
        worker.kill()


def _kill_all(workers: set[Worker]) -> None:
    for worker in list(workers):
        worker.kill()
    workers.clear()


class IsolatedEngine:
    """The embedded engine's decisions, made in worker processes and bounded by a deadline."""

    name = "embedded"

    def __init__(
        self,
        directory: Path,
        data: JSONObject | PolicyData,
        workers: int,
        deadline_s: float,
        checked: CheckedSources | None = None,
    ) -> None:
        # loaded here too: a bundle that never compiles stops the gateway at start, status() reads it, and
        # the workers decide as it does (its revision, and its data: the roles this process loaded)
        self.live = load_bundle(directory, data, checked)
        self.pool = WorkerPool(self.live, workers)
        self.deadline_s = deadline_s

    async def decide(self, input_doc: JSONObject) -> Decision:
        try:
            return to_decision(await self._evaluate(QUERY, input_doc))
        except DecisionTimeout as exc:
            return Decision(
                action="deny",
                tier=3,
                reasons=[f"the policy did not decide within {self.deadline_s:g} s ({exc}); the call is refused"],
                rules=["gateway.decision_deadline"],
            )
        except WorkerFailed as exc:
            return engine_error(str(exc))

    async def query(self, rule: str, input_doc: JSONObject) -> Any:
        return await self._evaluate(f"data.{rule}", input_doc)

    def start(self) -> None:
        self.pool.start()

    def status(self) -> JSONObject:
        bundle = self.live.current()
        return {
            "engine": self.name,
            "directory": str(bundle.directory),
            "files": [name for name, _ in bundle.sources],
            "last_error": self.live.last_error,
            "workers": self.pool.size,
            "deadline_s": self.deadline_s,
        }

    async def aclose(self) -> None:
        self.pool.close()

    def revision(self) -> str:
        return self.live.revision()

    async def _evaluate(self, rule: str, input_doc: JSONObject) -> Any:
        # this process logs and reports reloads; a worker that has not seen the change yet rereads the files
        # and takes the data (the roles) sent with the request
        bundle = self.live.current()
        payload = json.dumps(input_doc, separators=(",", ":"), ensure_ascii=False, default=str).encode()
        deadline = time.monotonic() + self.deadline_s
        return await anyio.to_thread.run_sync(
            self.pool.evaluate, rule, payload, deadline, bundle, abandon_on_cancel=True
        )
