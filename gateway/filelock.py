"""An exclusive lock on a file, held across threads and processes (``flock``): the gateway's processes
(serve --workers, replicas, the CLI) share the state dir, so a lock file there serialises them.

    with exclusive(state_dir / "worktrees" / "T1.lock"):
        ...  # one process at a time
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["exclusive"]


@contextmanager
def exclusive(lock: Path) -> Iterator[None]:
    lock.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock
