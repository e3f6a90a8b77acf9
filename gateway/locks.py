"""Locks that go only with their owner: a lock is taken with its owner recorded, and removed only when that
owner is known to be dead; never because of its age.

The gateway's own locks are files in the state dir held with ``flock``. The kernel lets one go when every
process holding it is gone, so a crash never leaves it held; and every git the gateway starts while it holds
one inherits it (``Repo.run`` passes the held locks on), so a gateway killed alone keeps its worktree locked
until the git it started has finished. The holder (host, pid, process start time) is written into the file,
for the people and error messages that ask who holds it. Every process on one host sees the same lock: gateway
worker processes and replicas on one machine share the state dir (docs/scale-out.md).

git's own lock files (``index.lock``, ``HEAD.lock``, ``refs/heads/main.lock``) carry no owner. One is taken as
abandoned only while the gateway holds the lock its own gits work under (so none it started runs there) and no
process on this host has it open: git holds a lock file open from making it until it renames it into place,
so a live git of a worker's, a person's or a replica's keeps it. The scan is made twice around to be sure it
was not between close and rename.

    with file_lock(state / "locks" / "worktree-T1.lock", "making T1's worktree"):
        Repo(path).run("reset", "--hard")            # the git holds the lock too, until it exits
    if abandoned(private / "index.lock"): ...
    alive("host|1234|t5678")                         # False once process 1234 (started at 5678) is gone
"""

from __future__ import annotations

import contextvars
import fcntl
import json
import os
import socket
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from functools import cache
from pathlib import Path

import anyio

from gateway.errors import ToolFailed

__all__ = [
    "HOST",
    "LockBusy",
    "abandoned",
    "alive",
    "async_file_lock",
    "file_lock",
    "held_locks",
    "this_process",
    "try_file_lock",
]

HOST = socket.gethostname()
WAIT_S = 300.0  # a 6,000-file checkout under load, or an orphaned git finishing, takes seconds, not minutes
POLL_S = 0.02

# the gateway's locks this context holds: every git it starts meanwhile inherits them (gateway/repo.py)
_HELD: contextvars.ContextVar[tuple[int, ...]] = contextvars.ContextVar("held_locks", default=())


class LockBusy(ToolFailed):
    code = "lock_busy"


def start_time(pid: int) -> str | None:
    """When process ``pid`` started (clock ticks since boot, /proc/PID/stat field 22); None when it is gone
    (or this is not Linux)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


@cache
def _identity(pid: int) -> str:
    return f"{HOST}|{pid}|t{start_time(pid)}"


def this_process() -> str:
    """This process as lock and ledger records name it: ``host|pid|t<start time>``."""
    return _identity(os.getpid())


def alive(owner: str) -> bool:
    """``host|pid[|t<start>][|...]``: a process of this host is alive while its pid runs with the recorded
    start time (a pid reused by another process is not it); one of another host cannot be judged from here
    and is taken to be alive."""
    host, _, rest = owner.partition("|")
    if host != HOST:
        return True
    fields = rest.split("|")
    try:
        pid = int(fields[0])
        os.kill(pid, 0)
    except (ValueError, ProcessLookupError):
        return False
    except PermissionError:
        pass  # another user's process: it runs
    recorded = next((f[1:] for f in fields[1:] if f.startswith("t") and f[1:].isdigit()), None)
    started = start_time(pid)
    return recorded is None or started is None or started == recorded


def held_locks() -> tuple[int, ...]:
    """The descriptors of the gateway locks this context holds (what a git started now inherits)."""
    return _HELD.get()


def _acquire(path: Path, what: str, wait_s: float) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if time.monotonic() >= deadline:
                os.close(fd)
                raise LockBusy(f"{what}: {path.name} is held by {_recorded(path)} (or a git it started)") from None
            time.sleep(POLL_S)
    record = {"owner": this_process(), "what": what, "since": time.time()}
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps(record).encode(), 0)
    return fd


def _recorded(path: Path) -> str:
    try:
        record = json.loads(path.read_text() or "{}")
    except (OSError, ValueError):
        return "an unknown holder"
    return f"{record.get('owner')} ({record.get('what')})"


@contextmanager
def file_lock(path: Path, what: str, wait_s: float = WAIT_S) -> Iterator[None]:
    """Hold ``path`` exclusively while the body runs (waiting up to ``wait_s``; LockBusy after), across
    threads, processes and replicas on this host; gits started in the body hold it too."""
    fd = _acquire(path, what, wait_s)
    token = _HELD.set((*_HELD.get(), fd))
    try:
        yield
    finally:
        _HELD.reset(token)
        os.close(fd)  # closing releases it (once any git that inherited it has exited too)


@contextmanager
def try_file_lock(path: Path, what: str) -> Iterator[bool]:
    """Hold ``path`` if nobody holds it now: yields whether it is held (False: a live holder has it)."""
    try:
        fd = _acquire(path, what, 0)
    except LockBusy:
        yield False
        return
    token = _HELD.set((*_HELD.get(), fd))
    try:
        yield True
    finally:
        _HELD.reset(token)
        os.close(fd)


@asynccontextmanager
async def async_file_lock(path: Path, what: str, wait_s: float = WAIT_S) -> AsyncIterator[None]:
    """``file_lock`` for a coroutine: waited for off the event loop, held by this task (and its threads)."""
    fd = await anyio.to_thread.run_sync(_acquire, path, what, wait_s)
    token = _HELD.set((*_HELD.get(), fd))
    try:
        yield
    finally:
        _HELD.reset(token)
        os.close(fd)


def abandoned(lock: Path) -> bool:
    """Whether git's lock file ``lock`` was left by a process that is gone: it exists, no process on this host
    has it open, and it is the same file after looking (a live git that had just closed it to rename it into
    place has done so by then). Ask it only while holding the lock the gateway's own gits there work under."""
    try:
        before = lock.stat()
    except OSError:
        return False
    if _open_anywhere(before.st_dev, before.st_ino):
        return False
    try:
        after = lock.stat()
    except OSError:
        return False
    return (after.st_dev, after.st_ino, after.st_ctime_ns) == (before.st_dev, before.st_ino, before.st_ctime_ns)


def _open_anywhere(device: int, inode: int) -> bool:
    """Whether any process on this host whose descriptors this user may read has the file open (compared by
    device and inode, so a process in a sandbox's own mount namespace counts as well)."""
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        directory = f"/proc/{entry.name}/fd"
        try:
            descriptors = os.listdir(directory)
        except OSError:  # gone, or another user's
            continue
        for descriptor in descriptors:
            try:
                found = os.stat(f"{directory}/{descriptor}")
            except OSError:
                continue
            if found.st_ino == inode and found.st_dev == device:
                return True
    return False
