"""Leases: a named lock kept in the store, so it holds across gateway processes (and replicas later).

A lease has one holder at a time and an expiry the holder keeps pushing forward while it works. A holder
that died is noticed at once when it ran on this host (its process is gone, or its pid now names a process
that started later: gateway/locks.py ``alive``) and after the expiry when it ran elsewhere. Waiting is
polling with progress: a lease is held for seconds (a merge and its verification), not for microseconds, so
a database lock is the wrong tool.

    leases = Leases(db)
    async with leases.hold("merge-queue", progress=report):   # waits its turn
        ...                                                    # one holder, in every process
    async with leases.attempt("intent:abc") as holder:        # no waiting: None when someone holds it
        if holder is not None:
            ...
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta

import anyio

from gateway.locks import alive, this_process
from gateway.origin import ProgressFn
from gateway.store import Store
from gateway.store.repositories import leases

TTL_S = 120.0  # pushed forward every RENEW_S while held
RENEW_S = 30.0
POLL_S = 0.05


class LeaseTimeout(Exception):
    pass


def _now() -> datetime:
    return datetime.now(UTC)


def _live(lease: leases.Lease, now: datetime) -> bool:
    """A lease whose holder still has it: not expired, and not a process of this host that is gone."""
    return datetime.fromisoformat(lease.expires) > now and alive(lease.holder)


def new_holder() -> str:
    """A holder id: this host, this process (its pid and start time), and a nonce (two holds in one process
    are two holders)."""
    return f"{this_process()}|{secrets.token_hex(4)}"


class Leases:
    def __init__(self, db: Store) -> None:
        self.db = db

    def try_acquire(self, name: str, holder: str, ttl_s: float = TTL_S) -> bool:
        now = _now()
        with self.db.transaction() as tx:
            current = leases.lease_in(tx, name)
            if current is not None and current.holder != holder and _live(current, now):
                return False
            leases.take(tx, name, holder, now.isoformat(), (now + timedelta(seconds=ttl_s)).isoformat())
            return True

    def renew(self, name: str, holder: str, ttl_s: float = TTL_S) -> None:
        expires = (_now() + timedelta(seconds=ttl_s)).isoformat()
        with self.db.transaction() as tx:
            leases.extend(tx, name, holder, expires)

    def release(self, name: str, holder: str) -> None:
        with self.db.transaction() as tx:
            leases.release(tx, name, holder)

    def held(self, name: str) -> bool:
        """Whether a live holder has ``name`` now: what a waiter for another's work polls."""
        current = leases.lease(self.db, name)
        return current is not None and _live(current, _now())

    def holder_of(self, name: str) -> str | None:
        current = leases.lease(self.db, name)
        return current.holder if current is not None else None

    @asynccontextmanager
    async def hold(self, name: str, progress: ProgressFn | None = None, wait_s: float = 3600.0) -> AsyncIterator[str]:
        """Wait for the lease (reporting progress every few seconds), hold it, release it however the body ends."""
        holder = new_holder()
        waited = 0.0
        with anyio.move_on_after(wait_s):
            while not await anyio.to_thread.run_sync(self.try_acquire, name, holder):
                await anyio.sleep(POLL_S)
                waited += POLL_S
                if progress is not None and int(waited / POLL_S) % 100 == 0:
                    await progress(waited, None, f"waiting for the {name} ({waited:.0f}s)")
        if self.holder_of(name) != holder:
            raise LeaseTimeout(f"the {name} was busy for {wait_s:g} s")
        async with self._kept(name, holder):
            yield holder

    @asynccontextmanager
    async def attempt(self, name: str) -> AsyncIterator[str | None]:
        """Take the lease if nobody (alive) holds it, without waiting: yields the holder id, or None when
        another holder has it. Held, it is kept and released like ``hold``'s."""
        holder = new_holder()
        if not await anyio.to_thread.run_sync(self.try_acquire, name, holder):
            yield None
            return
        async with self._kept(name, holder):
            yield holder

    @asynccontextmanager
    async def _kept(self, name: str, holder: str) -> AsyncIterator[None]:
        """Keep a held lease from expiring while the body runs; release it however the body ends."""
        try:
            async with anyio.create_task_group() as tg:

                async def keep() -> None:
                    while True:
                        await anyio.sleep(RENEW_S)
                        await anyio.to_thread.run_sync(self.renew, name, holder)

                tg.start_soon(keep)
                try:
                    yield
                finally:
                    tg.cancel_scope.cancel()
        except BaseExceptionGroup as group:  # the body's own error comes out as itself, not wrapped in a group
            if len(group.exceptions) != 1:
                raise
            error = group.exceptions[0]
            raise error from error.__cause__
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(self.release, name, holder)
