"""CPU time of a group of processes, read from /proc: what a proxy costs per call, whatever it is written in.

A group is every descendant of this process whose environment carries ``BENCH_PROC=<name>``: the bench starts
each proxy with that variable, and whatever the proxy forks inherits it (the gateway's decision workers, the
``--workers`` processes), while the upstream servers the proxies spawn get a fresh environment and are not
counted. Sample before and after the timed calls; the difference is user + system time of the live processes.

    meter = ProcCpu("gw-http")
    before = meter.seconds()
    ...  # the timed calls
    cpu_per_call = (meter.seconds() - before) / calls
"""

from __future__ import annotations

import os
from pathlib import Path

PROC = Path("/proc")
MARKER = "BENCH_PROC"
CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def marked_env(env: dict[str, str], name: str) -> dict[str, str]:
    """``env`` with the variable that puts a process (and what it forks) in group ``name``."""
    return {**env, MARKER: name}


def _stat(pid: str) -> tuple[int, int, int] | None:
    """(parent pid, utime + stime in clock ticks, start time) of one process, None when it is gone."""
    try:
        text = (PROC / pid / "stat").read_text()
    except OSError:
        return None
    # the command name (field 2) is in parentheses and may hold spaces: split after its closing one
    fields = text[text.rindex(")") + 2 :].split()
    # ppid, utime + stime, starttime (fields 4, 14, 15, 22 of proc(5))
    return int(fields[1]), int(fields[11]) + int(fields[12]), int(fields[19])


def _descendants(root: int) -> dict[tuple[int, int], int]:
    """Every live descendant of ``root``: (pid, start time) -> its CPU ticks."""
    parents: dict[int, int] = {}
    ticks: dict[tuple[int, int], int] = {}
    for entry in PROC.iterdir():
        stat = _stat(entry.name) if entry.name.isdigit() else None
        if stat is not None:
            parents[int(entry.name)] = stat[0]
            ticks[(int(entry.name), stat[2])] = stat[1]
    found: dict[tuple[int, int], int] = {}
    for key, used in ticks.items():
        ancestor = parents.get(key[0])
        for _ in range(64):  # a bound, not a depth any process tree here reaches
            if ancestor is None or ancestor <= 1:
                break
            if ancestor == root:
                found[key] = used
                break
            ancestor = parents.get(ancestor)
    return found


def descendants_seconds(root: int) -> float:
    """The CPU seconds used so far by the live descendants of ``root``, whatever their environment (a PostgreSQL
    server overwrites its processes' environment with their titles)."""
    return sum(_descendants(root).values()) / CLOCK_TICKS


class ProcCpu:
    """The CPU seconds used so far by the live processes of one group (see the module docstring)."""

    def __init__(self, name: str, root: int | None = None) -> None:
        self.name = name
        self.root = os.getpid() if root is None else root
        # (pid, start time) -> in the group: a process's initial environment does not change, a reused pid does
        self._members: dict[tuple[int, int], bool] = {}

    def _member(self, key: tuple[int, int]) -> bool:
        if key not in self._members:
            try:
                environ = (PROC / str(key[0]) / "environ").read_bytes().split(b"\0")
            except OSError:
                return False
            self._members[key] = f"{MARKER}={self.name}".encode() in environ
        return self._members[key]

    def pids(self) -> list[int]:
        return sorted(key[0] for key in _descendants(self.root) if self._member(key))

    def seconds(self) -> float:
        return sum(t for key, t in _descendants(self.root).items() if self._member(key)) / CLOCK_TICKS
