"""Git, run as a subprocess with settings that keep a repository's own config from running code.

A repository's config can name programs git runs on its behalf (fsmonitor, external diff, textconv,
pagers, hooks). The gateway runs git for agents, so it switches those off on every call. It also decides
itself which repository directory git reads (``common_dir``): a ``commondir`` file an agent wrote inside
a writable ``.git`` would otherwise send git to a config of the agent's making (a clean filter, run by
the gateway's next ``git add``), and a repository nested in the work tree is never looked into (its
config is the agent's too).

    repo = Repo(Path("/work/repo"))
    out = repo.run("status", "--porcelain=v1")            # raises GitError on a non-zero exit
    out = await repo.arun("log", "--max-count=5")         # the same, off the event loop

Git walks a work tree with lstat, then opens by path: an agent that swaps a directory for a symlink in
between makes an unconfined git read what the link points to (the gateway's keys, into a blob or a diff).
So git over a tree an agent can write runs behind a ``wall`` (gateway/sandbox.py ``Sandbox.git_wall``),
where the gateway's state is not there to be read:

    walled = Repo(worktree, wall=sandbox.git_wall(worktree, writes=[objects_dir]))
    walled.run("add", "-A")

A git started while the gateway holds one of its locks (gateway/locks.py) inherits it: a gateway killed alone
leaves the lock held until that git has finished, so nobody takes the git's lock files for a dead process's.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path

import anyio

from gateway.errors import ToolFailed
from gateway.locks import held_locks

SAFE_CONFIG = (
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "diff.external=",
    "-c",
    "core.pager=cat",
    "-c",
    "credential.helper=",
    "-c",
    "protocol.ext.allow=never",
    "-c",
    "diff.ignoreSubmodules=dirty",  # status/diff would run git, and its filters, inside a nested repository
)


# A git argv -> the argv that runs it inside the sandbox (Sandbox.git_wall)
Wall = Callable[[Sequence[str]], list[str]]


class GitError(ToolFailed):
    code = "git_failed"


def common_dir(root: Path) -> Path | None:
    """The repository directory (config, refs, objects) of the checkout at ``root``, from the layout alone,
    never from a ``commondir`` file: a ``.git`` directory is its own; a worktree's ``.git`` file names
    ``<repository>/worktrees/<name>``; any other gitdir it names (a submodule's) is its own. None when
    ``root`` has no ``.git`` (git then looks upwards, outside anything an agent may write).

        common_dir(Path("/work/repo"))          # /work/repo/.git
        common_dir(Path("/state/worktrees/T1"))  # /work/repo/.git
    """
    git = root / ".git"
    if git.is_dir() and not git.is_symlink():
        return git
    try:
        text = git.read_text()
    except (OSError, UnicodeDecodeError):
        return None
    if not text.startswith("gitdir: "):
        return None
    gitdir = (root / text.removeprefix("gitdir: ").strip()).resolve()
    return gitdir.parent.parent if gitdir.parent.name == "worktrees" else gitdir


class Repo:
    def __init__(self, root: Path, wall: Wall | None = None) -> None:
        self.root = root
        self.wall = wall  # every command of this Repo runs inside it (the gateway's own git, confined)

    def run(self, *args: str, check: bool = True, input: str | None = None, env: dict[str, str] | None = None) -> str:
        environ = {
            **{k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TZ")},
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_AUTHOR_NAME": os.environ.get("GIT_AUTHOR_NAME", "mcp-gateway"),
            "GIT_AUTHOR_EMAIL": os.environ.get("GIT_AUTHOR_EMAIL", "gateway@localhost"),
            "GIT_COMMITTER_NAME": os.environ.get("GIT_COMMITTER_NAME", "mcp-gateway"),
            "GIT_COMMITTER_EMAIL": os.environ.get("GIT_COMMITTER_EMAIL", "gateway@localhost"),
            **(env or {}),
        }
        common = common_dir(self.root)
        if common is not None:
            environ["GIT_COMMON_DIR"] = str(common)  # overrides any commondir file inside the gitdir
        held = held_locks()
        # a git holding the gateway's locks runs no maintenance in the background: that would hold them on
        detached = ["-c", "gc.autoDetach=false", "-c", "maintenance.autoDetach=false"] if held else []
        argv = ["git", *SAFE_CONFIG, *detached, "-C", str(self.root), *args]
        proc = subprocess.run(
            self.wall(argv) if self.wall is not None else argv,
            capture_output=True,
            text=True,
            env=environ,
            input=input,
            timeout=120,
            pass_fds=held,
        )
        if check and proc.returncode != 0:
            raise GitError(f"git {args[0]} failed: {proc.stderr.strip() or proc.stdout.strip()}")
        return proc.stdout

    async def arun(self, *args: str, check: bool = True) -> str:
        return await anyio.to_thread.run_sync(lambda: self.run(*args, check=check))

    def is_repo(self) -> bool:
        return self.run("rev-parse", "--is-inside-work-tree", check=False).strip() == "true"
