"""The OS sandbox: every command the gateway runs for an agent runs inside bubblewrap.

The shell analysis sorts commands into tiers and explains them; it is not a wall, since no reading of
bash is complete. This module is the wall that holds when the analysis is wrong. A confined command sees:

- the whole filesystem read-only, except the directories it may write (the call's worktree, or the
  workspace for single-agent roles) and a private /tmp;
- inside a writable workspace, the repository's ``.git`` a mount point of its own (it cannot be renamed
  or replaced), git's hooks and config and gateway.yaml still read-only (a worker's
  repository .git is read-only as a whole: it lies outside its worktree), so nothing it writes runs
  later outside the sandbox and no branch but its own can move;
- none of the gateway's state (keys, store, approvals, roles, policies), no other task's worktree and
  none of the usual credential paths (~/.ssh, ~/.aws, ~/.netrc, ...): they are not there at all;
- no network, unless the decision for the call allowed egress (``Confinement.network``), and then only to
  the hosts it allowed, through the gateway's egress proxy (gateway/egress.py);
- no capabilities, no new privileges, its own PID, IPC, UTS and user namespaces, and limits on file
  size, processes, CPU time, open files and address space (``prlimit``), by the kind of command
  (``Profile``: a command, a verification command, an upstream server);
- memory that is bounded: every tmpfs it gets has a size (RAM, not disk: ``/tmp`` and the scratch dirs
  ``sandbox.tmpfs_mb``, the rest a few pages), RLIMIT_AS bounds each process (tmpfs pages are not charged to
  it), a memory cgroup (where the machine gives one: gateway/memory_cgroup.py) bounds all of it together,
  and its OOM score is the highest there is, so the kernel's OOM killer takes it before the gateway;
- no new Unix-domain socket (gateway/seccomp.py), so no host socket is reachable by its path.

If bubblewrap cannot start, nothing runs: ``SandboxUnavailable`` says how to install it. An operator can
opt out only explicitly (``sandbox.mode: off`` in gateway.yaml); every such call is marked unconfined in
the ledger, the decision log (``input.context.sandbox``) and ``gateway trace``.

    sandbox = Sandbox(config.sandbox, hidden=config.secret_paths() + [config.worktrees])
    confinement = sandbox.confine(writable=[worktree], cwd=worktree, protect=[...], profile="verify")
    async with sandbox.memory_group(confinement) as group:
        argv = sandbox.command(confinement, ["/bin/bash", "-c", "pytest -q"], group=group)
        ...
        group.oom_kills() if group else 0    # what the kernel killed for its memory limit
    confinement.describe()        # the facts the policy sees as input.context.sandbox
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

import anyio
import structlog

from gateway import egress_inside, seccomp
from gateway.config import SandboxConfig
from gateway.errors import ToolFailed
from gateway.memory_cgroup import MemoryGroup, MemoryGroups
from gateway.repo import Wall, common_dir, shadow_root
from gateway.types import JSONObject

log = structlog.get_logger(__name__)
ANY_HOST = "*"  # network: the whole network (an upstream server the operator lets out), not a host list
EGRESS_SOCKET = "/run/gateway-egress.sock"  # where the call's egress proxy appears inside the sandbox
SECCOMP_FD = 3  # the seccomp filter's descriptor, for bwrap (or, with egress, the launcher inside)
MIB = 1024 * 1024
SMALL_TMPFS = MIB  # /run and the empty directories that hide paths: mount points, nothing else
# The kernel's OOM killer adds this (of 1000) to a process's share of memory when it picks a victim: every
# confined process is picked before any process at the default 0, the gateway included. The launcher sets it
# before bubblewrap starts; a process may always raise its own, and lower it back only as far as the lowest
# value a privileged process set (root's launcher sets that floor too; an ordinary user's cannot).
OOM_SCORE_ADJ = 1000
LAUNCHER_FAILED = "sandbox launcher: "
# $0: the seccomp filter file; $1: the memory cgroup's cgroup.procs, or empty; the rest: bwrap's argv
LAUNCHER = (
    f'echo {OOM_SCORE_ADJ} >/proc/self/oom_score_adj && {{ [ -z "$1" ] || echo $$ >"$1"; }} || '
    f'{{ echo "{LAUNCHER_FAILED}could not set its OOM score or join its memory cgroup" >&2; exit 1; }}; '
    f'shift; exec "$@" {SECCOMP_FD}<"$0"'
)
# Where credentials usually live, relative to $HOME: never visible to a confined command.
CREDENTIAL_PATHS = (
    ".ssh",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".config/gh",
    ".config/git/credentials",
    ".git-credentials",
    ".netrc",
    ".docker",
    ".gnupg",
    ".kube",
    ".npmrc",
    ".pypirc",
    ".pgpass",
    ".password-store",
    ".local/share/keyrings",
    ".vault-token",
    ".terraform.d/credentials.tfrc.json",
)
INSTALL_HINT = (
    "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap), "
    "or set 'sandbox: {mode: off}' in gateway.yaml to run commands unconfined (every such call is marked "
    "unconfined in the ledger)"
)


Profile = Literal["command", "verify", "server"]  # shell_run and the gateway's git; verification; an upstream


class SandboxUnavailable(ToolFailed):
    code = "sandbox_unavailable"


class PathRefused(ToolFailed):
    """A path the wall would have to bind that an agent may have placed there (a link, a hidden path)."""

    code = "path_refused"


@dataclass(frozen=True)
class Confinement:
    """What one command (or one upstream server) may touch; ``describe`` is ``input.context.sandbox``."""

    mode: Literal["bubblewrap", "off"]
    cwd: Path
    writable: tuple[Path, ...] = ()
    protect: tuple[Path, ...] = ()  # read-only again inside a writable directory
    pinned: tuple[Path, ...] = ()  # writable, but mount points: cannot be renamed, removed or replaced
    # read-only directories inside a writable one, there (empty) even when git has not made them yet, so
    # nothing can be planted in them (a repository's worktrees admin dir: gateway/repo.py)
    sealed: tuple[Path, ...] = ()
    visible: tuple[Path, ...] = ()  # read-only even where the sandbox hides the rest (a worktree's repository)
    hidden: tuple[Path, ...] = ()
    network: tuple[str, ...] = ()  # hosts the decision allowed (ANY_HOST: all); empty: no network at all
    limits: JSONObject = field(default_factory=dict)

    @property
    def confined(self) -> bool:
        return self.mode != "off"

    @property
    def proxied(self) -> bool:
        """Its egress goes through the gateway's proxy (some hosts allowed, not the whole network)."""
        return self.confined and bool(self.network) and ANY_HOST not in self.network

    def allowing(self, hosts: Iterable[str]) -> Confinement:
        """The same confinement with network egress to ``hosts`` (what the decision allowed)."""
        return replace(self, network=tuple(sorted(set(hosts))))

    def binding(self) -> JSONObject:
        """Everything that makes this confinement what it is, as an approval binds to it (gateway/approvals.py):
        a command approved in one confinement is not approved in another."""
        return {
            "mode": self.mode,
            "confined": self.confined,
            "cwd": str(self.cwd),
            "writable": [str(p) for p in self.writable],
            "read_only_inside": [str(p) for p in self.protect],
            "pinned": [str(p) for p in self.pinned],
            "sealed": [str(p) for p in self.sealed],
            "visible": [str(p) for p in self.visible],
            "hidden": [str(p) for p in self.hidden],
            "network": list(self.network),
            "limits": self.limits,
        }

    def describe(self) -> JSONObject:
        """What the policy sees (input.context.sandbox). What is hidden is the same for every call, so it is
        said once, in words: the gateway's state, other worktrees and the usual key files under $HOME."""
        return {
            "mode": self.mode,
            "confined": self.confined,
            "writable": [str(p) for p in self.writable],
            "read_only_inside": [str(p) for p in (*self.protect, *self.sealed)],
            "hides": ["gateway state", "other worktrees", "home key files"] if self.confined else [],
            "network": list(self.network) if self.network else "none",
            "unix_sockets": "socketpair only" if self.confined else "any",  # gateway/seccomp.py
            "limits": self.limits,
        }


class Sandbox:
    """Builds bubblewrap command lines from a ``Confinement``; checks once that bubblewrap works here."""

    def __init__(self, config: SandboxConfig, hidden: Sequence[Path] = ()) -> None:
        self.config = config
        home = Path(os.environ.get("HOME") or Path.home())
        extra = [Path(os.path.expanduser(p)) for p in config.hide]
        # a symlinked ~/.ssh is hidden where it really is (bubblewrap mounts over the target)
        paths = list(
            dict.fromkeys(Path(os.path.realpath(p)) for p in [*hidden, *(home / p for p in CREDENTIAL_PATHS), *extra])
        )
        # a path inside another hidden one is hidden with it (its ancestors looked up: a pairwise test of two
        # dozen paths was a third of building a Gateway)
        named = set(paths)
        self.hidden = tuple(p for p in paths if named.isdisjoint(p.parents))
        self.scratch = tuple(Path(os.path.expanduser(p)) for p in config.scratch)
        self._working: bool | None = None
        self._problem = ""

    @property
    def mode(self) -> Literal["bubblewrap", "off"]:
        return self.config.mode

    def confine(
        self,
        writable: Sequence[Path],
        cwd: Path,
        protect: Sequence[Path] = (),
        profile: Profile = "command",
        visible: Sequence[Path] = (),
        pinned: Sequence[Path] = (),
        sealed: Sequence[Path] = (),
    ) -> Confinement:
        """A confinement with no network, and the limits of its ``profile`` (a server has no CPU-time limit)."""
        memory = {
            "command": self.config.memory_mb,
            "verify": self.config.verify_memory_mb,
            "server": self.config.upstream_memory_mb,
        }
        limits: JSONObject = {
            "file_size_mb": self.config.file_size_mb,
            "processes": self.config.processes,
            "open_files": self.config.open_files,
            "memory_mb": memory[profile],
            "tmpfs_mb": self.config.tmpfs_mb,
            # the memory_mb of all its processes and tmpfs files together, not only each process's
            "memory_cgroup": profile != "server" and self.groups is not None,
        }
        if profile != "server":
            limits["cpu_s"] = self.config.cpu_s
        # the gateway's own Python (the egress launcher runs on it), wherever it is installed
        runtime = [Path(sys.prefix), Path(sys.base_prefix), Path(egress_inside.__file__).parent]
        visible = list(dict.fromkeys(Path(os.path.realpath(p)) for p in [*visible, *runtime]))
        return Confinement(
            mode=self.mode,
            cwd=cwd,
            writable=tuple(writable),
            protect=tuple(p for p in protect if any(_within(p, w) for w in writable)),
            pinned=tuple(p for p in pinned if any(_within(p, w) and p != w for w in writable)),
            sealed=tuple(p for p in sealed if any(_within(p, w) and p != w for w in writable)),
            visible=tuple(p for p in visible if not any(_within(p, h) for h in self.hidden)),
            hidden=self.hidden,
            limits=limits,
        )

    def git_wall(
        self,
        root: Path,
        writes: Sequence[Path] = (),
        protect: Sequence[Path] = (),
        sources: Sequence[Path] = (),
    ) -> Wall:
        """The wall around the gateway's own git over a tree an agent can write (``Repo(root, wall=...)``).

        git lists a directory and then opens what it listed by path, so a directory the agent swaps for a
        symlink in between would make an unconfined git read the link's target; in here the gateway's state,
        other worktrees and key files are not there to be read. ``root`` is read-only, and so is the
        repository, except ``writes`` (what git must write: the objects dir, a temporary index's dir), and
        inside them ``protect`` again. ``sources`` are the gateway's own directories git must read although
        they lie in a hidden one (the checkpoint vault a rollback fetches from): bound in read-only, the
        rest stays hidden.

            wall = sandbox.git_wall(worktree, writes=[common / "objects", index_dir])
            Repo(worktree, wall=wall).run("add", "-A")
        """
        for path in writes:
            # what the wall lets git write is bound into it as it resolves: a repository whose objects dir an
            # agent replaced by a link (to the state dir's parent, say) would bind that target in, writable
            absolute = Path(os.path.abspath(path))
            if os.path.realpath(absolute) != str(absolute):
                raise PathRefused(f"the gateway's git was not run: {absolute} is a symlink or passes through one")
            if any(_within(absolute, h) or _within(h, absolute) for h in self.hidden):
                raise PathRefused(f"the gateway's git was not run: {absolute} holds or lies in a hidden path")
        real = Path(os.path.realpath(root))
        repository = common_dir(real)
        # a task's worktree lies in the hidden worktrees dir: bound back in, then read-only again (and so are
        # the gateway's sources)
        back = [real] if any(_within(real, h) for h in self.hidden) else []
        back += [Path(os.path.realpath(p)) for p in sources]
        # and the gateway's shadow git dirs (gateway/repo.py), which name the repository and hold HEAD
        visible = [real, *([repository] if repository else []), shadow_root()]
        confinement = self.confine(writable=[*back, *writes], cwd=real, protect=[*back, *protect], visible=visible)
        return functools.partial(self.command, confinement)

    @functools.cached_property
    def groups(self) -> MemoryGroups | None:
        """Where commands get their memory cgroups; None where this machine gives the gateway none."""
        if self.mode == "off" or self.config.memory_cgroup == "off":
            return None
        found = MemoryGroups.find(self.config.cgroup_parent)
        if found is None and self.config.memory_cgroup == "auto":
            log.warning(
                "no memory cgroup: each sandboxed process is bounded (sandbox.memory_mb, RLIMIT_AS) and each "
                "tmpfs (sandbox.tmpfs_mb), not all of a command's processes together (docs/sandbox.md)",
                cgroup_parent=self.config.cgroup_parent,
            )
        return found

    @contextlib.asynccontextmanager
    async def memory_group(self, confinement: Confinement) -> AsyncIterator[MemoryGroup | None]:
        """The memory cgroup one confined command runs in, removed afterwards (off the event loop: what the
        command left in it is killed first); None without one."""
        if not confinement.confined or self.groups is None:
            yield None
            return
        group = self.groups.make(int(confinement.limits["memory_mb"]) * MIB)
        try:
            yield group
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(group.remove)

    def command(
        self,
        confinement: Confinement,
        argv: Sequence[str],
        egress: Path | None = None,
        group: MemoryGroup | None = None,
    ) -> list[str]:
        """The argv that runs ``argv`` inside ``confinement``; raises SandboxUnavailable when it cannot.
        A confinement with allowed hosts needs ``egress``, the socket of the call's egress proxy; ``group``
        is the memory cgroup the command joins before bubblewrap starts."""
        if not confinement.confined:
            return list(argv)
        self.check()
        return self._argv(confinement, argv, egress, group)

    def _argv(self, c: Confinement, argv: Sequence[str], egress: Path | None, group: MemoryGroup | None) -> list[str]:
        bwrap = self._bwrap(c)
        if c.proxied:
            if egress is None:
                raise SandboxUnavailable("the command was not run: its network egress needs the egress proxy")
            bwrap[bwrap.index("--chdir") : bwrap.index("--chdir")] = ["--bind", str(egress), EGRESS_SOCKET]
            # the launcher connects to the proxy by a Unix socket: it puts the filter on the command alone
            argv = [sys.executable, "-I", egress_inside.__file__, EGRESS_SOCKET, str(SECCOMP_FD), "--", *argv]
        else:
            bwrap[1:1] = ["--seccomp", str(SECCOMP_FD)]
        return self._launched([*bwrap, "--", *self._limits(c), "--", *argv], group)

    def check(self) -> None:
        """Raise SandboxUnavailable, naming the fix, unless bubblewrap can start a sandbox here."""
        if self._working is None:
            self._working, self._problem = self._probe()
        if not self._working:
            raise SandboxUnavailable(
                f"the command was not run: the sandbox cannot start ({self._problem}); {INSTALL_HINT}"
            )
        if self.groups is None and self.config.memory_cgroup == "required":
            raise SandboxUnavailable(
                "the command was not run: sandbox.memory_cgroup is 'required' and this machine gives the gateway "
                "no memory cgroup (cgroup v2: run it in a delegated cgroup, e.g. systemd Delegate=yes with "
                "DelegateSubgroup=main, or name one in sandbox.cgroup_parent; cgroup v1: as root)"
            )

    def failure(self, exit_code: int | None, stderr: str) -> str | None:
        """Why bubblewrap itself failed to set up a sandbox (rather than the command failing), or None."""
        first = stderr.lstrip().splitlines()[0] if stderr.strip() else ""
        if exit_code == 1 and first.startswith(("bwrap: ", LAUNCHER_FAILED)):
            return first
        return None

    def _probe(self) -> tuple[bool, str]:
        binary = shutil.which(self.config.bwrap)
        if binary is None:
            return False, f"{self.config.bwrap!r} not found on PATH"
        if shutil.which("prlimit") is None:
            return False, "'prlimit' (util-linux) not found on PATH"
        try:
            seccomp.program()  # a machine whose syscall numbers the filter does not know gets no sandbox
            probe = self._argv(self.confine(writable=[], cwd=Path("/")), ["true"], None, None)
        except seccomp.UnsupportedArch as exc:
            return False, str(exc)
        try:
            done = subprocess.run(probe, capture_output=True, text=True, timeout=30, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return False, f"bubblewrap did not run: {exc}"
        if done.returncode != 0:
            return False, (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[0]
        return True, ""

    def _bwrap(self, c: Confinement) -> list[str]:
        args = [self.config.bwrap, "--die-with-parent", "--new-session", "--unshare-all", "--unshare-user"]
        args += ["--disable-userns", "--cap-drop", "ALL"]
        if ANY_HOST in c.network:
            args.append("--share-net")
        tmpfs = int(c.limits["tmpfs_mb"]) * MIB
        args += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        args += [*_tmpfs("/tmp", tmpfs), *_tmpfs("/run", SMALL_TMPFS)]
        # Mount order matters. What must stay visible under the private /tmp (a repository, the gateway's
        # own Python) is bound back first, read-only, so that a hidden path inside it is still hidden; a
        # hidden directory that holds a writable one (the worktrees dir around the call's own worktree)
        # stays a writable tmpfs so the worktree can be bound into it; hidden paths inside a writable
        # directory are hidden after it is bound.
        for path in c.visible:
            if path.exists():
                args += ["--ro-bind", str(path), str(path)]
        inside = [h for h in c.hidden if any(_within(h, w) and h != w for w in c.writable)]
        for path in c.hidden:
            if path not in inside:
                args += _hide(path, read_only=not any(_within(w, path) for w in c.writable))
        for path in self.scratch:
            if path.is_dir() and not any(_within(path, h) for h in c.hidden):
                args += _tmpfs(str(path), tmpfs)
        for path in c.writable:
            args += ["--bind", str(path), str(path)]
        for path in c.pinned:  # before what is read-only inside it, which would be covered otherwise
            if path.is_dir():
                args += ["--bind", str(path), str(path)]
        for path in inside:
            args += _hide(path, read_only=True)
        for path in c.protect:
            if os.path.lexists(path):
                args += ["--ro-bind", str(path), str(path)]
        for path in c.sealed:
            args += _sealed(path)
        args += ["--chdir", str(c.cwd)]
        return args

    def _launched(self, argv: list[str], group: MemoryGroup | None) -> list[str]:
        """``argv`` with the seccomp filter open as SECCOMP_FD (bwrap takes it by number, not by path), the
        OOM score every process in the sandbox inherits, and in ``group`` (its pid written there first)."""
        return ["/bin/sh", "-c", LAUNCHER, _filter_file(), str(group.procs) if group else "", *argv]

    def _limits(self, c: Confinement) -> list[str]:
        limits = c.limits
        args = ["prlimit", f"--fsize={int(limits['file_size_mb']) * MIB}"]
        args += [f"--nproc={limits['processes']}", f"--nofile={limits['open_files']}"]
        args.append(f"--as={int(limits['memory_mb']) * MIB}")
        if "cpu_s" in limits:
            args.append(f"--cpu={limits['cpu_s']}")
        return args


_FILTERS: dict[int, str] = {}  # process id -> its filter file (a forked process writes its own)


def _filter_file() -> str:
    """The compiled filter in an owner-only file, one per process (written again if a tmp cleaner took
    it), removed when that process exits; raises seccomp.UnsupportedArch on a machine it does not know."""
    path = _FILTERS.get(os.getpid())
    if path is None or not os.path.exists(path):
        fd, path = tempfile.mkstemp(prefix="gateway-seccomp-", suffix=".bpf")
        with os.fdopen(fd, "wb") as out:
            out.write(seccomp.program())
        _FILTERS[os.getpid()] = path
        atexit.register(_remove_filter, path, os.getpid())
    return path


def _remove_filter(path: str, owner: int) -> None:
    if os.getpid() == owner:
        with contextlib.suppress(OSError):
            os.unlink(path)


def _hide(path: Path, read_only: bool) -> list[str]:
    """A directory becomes an empty tmpfs, a file an empty one; a missing path needs nothing."""
    if path.is_dir() and not path.is_symlink():
        return [*_tmpfs(str(path), SMALL_TMPFS), *(["--remount-ro", str(path)] if read_only else [])]
    if path.is_file():
        return ["--ro-bind", "/dev/null", str(path)]
    return []


def _sealed(path: Path) -> list[str]:
    """A directory read-only in the sandbox: bound onto itself, or an empty tmpfs where it is missing (bubblewrap
    makes the directory); a link or a file there is refused, as something an agent planted."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return [*_tmpfs(str(path), SMALL_TMPFS), "--remount-ro", str(path)]
    if not stat.S_ISDIR(mode):
        raise SandboxUnavailable(
            f"the command was not run: {path} is not a directory (a link or a file planted there?)"
        )
    return ["--ro-bind", str(path), str(path)]


def _tmpfs(path: str, size: int) -> list[str]:
    """A tmpfs of at most ``size`` bytes (RAM: without a size it may take half the host's)."""
    return ["--size", str(size), "--tmpfs", path]


def _within(path: Path, parent: Path) -> bool:
    # parts compared, as is_relative_to does on POSIX, without the Path it makes and parses per call
    prefix = parent.parts
    return path.parts[: len(prefix)] == prefix if prefix else not path.is_absolute()
