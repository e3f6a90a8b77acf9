"""A memory cgroup per sandboxed command: one bound on all it holds, and a count of what the OOM killer took.

RLIMIT_AS bounds one process's address space; a command that forks many processes, or fills its tmpfs
(whose pages no process is charged for) or makes millions of empty files in it (kernel memory), is not
bound by it. A memory cgroup counts all of that. Where this machine lets the gateway make cgroups with the
memory controller, each command runs in one of its own, with a limit of its ``memory_mb``:

- cgroup v2: a delegated subtree whose ``cgroup.subtree_control`` has ``memory``: the gateway's own cgroup,
  or its parent (systemd: ``Delegate=yes`` with ``DelegateSubgroup=main`` puts the gateway in ``main``
  and leaves the service's cgroup to make children in), or ``sandbox.cgroup_parent``;
- cgroup v1: the gateway's memory cgroup, where it may make children (root).

The sandbox's launcher joins the group before bubblewrap starts, so everything the command starts is in
it; ``memory.oom.group`` (v2) kills them all when one is killed. Afterwards ``oom_kills`` says whether
the kernel killed anything for the limit, any process left is killed and the group removed.

    groups = MemoryGroups.find(config_parent)          # None where the machine gives the gateway none
    group = groups.make(4096 * MIB)
    argv = [..., group.procs, ...]                     # the launcher writes its pid there, then execs
    ...
    group.oom_kills()                                  # 1: the kernel killed a process for the limit
    group.remove()
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import structlog

__all__ = ["MemoryGroup", "MemoryGroups"]

log = structlog.get_logger(__name__)
PREFIX = "gateway-"  # gateway-<pid>-<n>: a group whose pid is gone was left by a gateway that died
_counter = itertools.count(1)


@dataclass(frozen=True)
class MemoryGroup:
    """One command's cgroup."""

    path: Path
    version: Literal[1, 2]

    @property
    def procs(self) -> Path:
        return self.path / "cgroup.procs"

    def oom_kills(self) -> int:
        """How many of its processes the kernel's OOM killer killed for the group's limit."""
        name = "memory.events" if self.version == 2 else "memory.oom_control"
        with contextlib.suppress(OSError, ValueError):
            for line in (self.path / name).read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
        return 0

    def remove(self) -> None:
        """Kill what is left in it (a daemon the command started), then remove it; a failure is logged."""
        for _ in range(100):
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                self._kill()
                time.sleep(0.01)  # killed processes leave the group as the kernel reaps them
        log.warning("could not remove a command's memory cgroup", path=str(self.path))

    def _kill(self) -> None:
        if self.version == 2 and (self.path / "cgroup.kill").exists():
            with contextlib.suppress(OSError):
                (self.path / "cgroup.kill").write_text("1")
            return
        with contextlib.suppress(OSError):
            for pid in self.procs.read_text().split():
                with contextlib.suppress(OSError):
                    os.kill(int(pid), signal.SIGKILL)


@dataclass(frozen=True)
class MemoryGroups:
    """Where the gateway makes its commands' memory cgroups."""

    parent: Path
    version: Literal[1, 2]

    @classmethod
    def find(cls, configured: str | None = None) -> MemoryGroups | None:
        """The place this process may make memory cgroups in, or None; ``configured`` (sandbox.cgroup_parent)
        is the only candidate when given."""
        candidates = [(Path(configured), 2 if _is_v2(Path(configured)) else 1)] if configured else _candidates()
        for path, version in candidates:
            groups = cls(path, version)  # type: ignore[arg-type]
            if groups._works():
                groups.sweep()
                return groups
        return None

    def make(self, limit: int) -> MemoryGroup:
        """A new group limited to ``limit`` bytes (memory, and swap with it); the caller removes it."""
        group = MemoryGroup(self.parent / f"{PREFIX}{os.getpid()}-{next(_counter)}", self.version)
        group.path.mkdir()
        if not group.procs.exists():  # the kernel fills a new cgroup at once: this is a plain directory
            group.path.rmdir()
            raise NotADirectoryError(f"{self.parent} is not a cgroup")
        try:
            if self.version == 2:
                (group.path / "memory.max").write_text(str(limit))
                _write_if_there(group.path / "memory.swap.max", "0")
                _write_if_there(group.path / "memory.oom.group", "1")
            else:
                (group.path / "memory.limit_in_bytes").write_text(str(limit))
                _write_if_there(group.path / "memory.memsw.limit_in_bytes", str(limit))
        except OSError:
            group.remove()
            raise
        return group

    def sweep(self) -> None:
        """Remove the groups of gateway processes that are gone (killed before they removed them)."""
        with contextlib.suppress(OSError):
            for path in self.parent.glob(f"{PREFIX}*-*"):
                pid = path.name.removeprefix(PREFIX).split("-")[0]
                if pid.isdigit() and not Path(f"/proc/{pid}").exists():
                    MemoryGroup(path, self.version).remove()

    def _works(self) -> bool:
        """Whether a group made here gets a memory limit (made and removed at once)."""
        try:
            self.make(1 << 40).remove()
        except OSError:
            return False
        return True


def _candidates() -> list[tuple[Path, Literal[1, 2]]]:
    """v2: the own cgroup's parent, then the own cgroup (when it enables memory for its children); v1: the
    own memory cgroup."""
    found: list[tuple[Path, Literal[1, 2]]] = []
    mounts = _mounts()
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "" and "cgroup2" in mounts:
            root, mount = mounts["cgroup2"]
            own = mount / os.path.relpath(path, root)
            for where in (own.parent, own):
                with contextlib.suppress(OSError):
                    if "memory" in (where / "cgroup.subtree_control").read_text().split():
                        found.append((where, 2))
        elif "memory" in controllers.split(",") and "memory" in mounts:
            root, mount = mounts["memory"]
            found.append((mount / os.path.relpath(path, root), 1))
    return found


def _mounts() -> dict[str, tuple[str, Path]]:
    """The cgroup2 mount and the v1 memory mount: (the cgroup path at the mount's root, where it is mounted)."""
    found: dict[str, tuple[str, Path]] = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            fields, _, tail = line.partition(" - ")
            parts, kind = fields.split(), tail.split()
            if len(parts) < 5 or len(kind) < 3:
                continue
            if kind[0] == "cgroup2":
                found.setdefault("cgroup2", (parts[3], Path(parts[4])))
            elif kind[0] == "cgroup" and "memory" in kind[2].split(","):
                found.setdefault("memory", (parts[3], Path(parts[4])))
    return found


def _is_v2(path: Path) -> bool:
    return (path / "cgroup.subtree_control").exists()


def _write_if_there(path: Path, value: str) -> None:
    if path.exists():
        path.write_text(value)
