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

import contextlib
import os
import subprocess
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO

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


class ObjectReader:
    """``git cat-file --batch`` on the other end: ``read(id)`` is the object's bytes, None when it is missing."""

    def __init__(self, ask: IO[bytes], answers: IO[bytes]) -> None:
        self.ask, self.answers = ask, answers

    def read(self, object_id: str) -> bytes | None:
        self.ask.write(object_id.encode() + b"\n")
        self.ask.flush()
        header = self.answers.readline().split()
        if len(header) != 3:
            return None  # "<id> missing" (or ambiguous)
        data = self.answers.read(int(header[2]))
        self.answers.read(1)  # the newline after each object
        return data


class Repo:
    def __init__(self, root: Path, wall: Wall | None = None, gitdir: Path | None = None) -> None:
        self.root = root
        self.wall = wall  # every command of this Repo runs inside it (the gateway's own git, confined)
        # a git dir of the gateway's making (gateway/checkpoints/snapshot.py ``shadow``): git then reads no
        # HEAD, index or commondir file of the work tree's, only the repository its commondir file names
        self.gitdir = gitdir

    def run(
        self,
        *args: str,
        check: bool = True,
        input: str | None = None,
        env: dict[str, str] | None = None,
        errors: str = "strict",
    ) -> str:
        """git's output; ``errors="surrogateescape"`` keeps a path that is not UTF-8 (os functions take it back)."""
        proc = subprocess.run(
            self._argv(args),
            capture_output=True,
            text=True,
            env=self._environ(env),
            input=input,
            timeout=120,
            errors=errors,
            pass_fds=held_locks(),
        )
        if check and proc.returncode != 0:
            raise GitError(f"git {args[0]} failed: {proc.stderr.strip() or proc.stdout.strip()}")
        return proc.stdout

    def invocation(self, *args: str, env: dict[str, str] | None = None) -> tuple[list[str], dict[str, str]]:
        """The argv (walled, if this Repo is) and environment of ``git args``, for a caller that runs it
        itself (with its output bounded: gateway/tools/git.py)."""
        return self._argv(args), self._environ(env)

    @contextmanager
    def objects(self) -> Iterator[ObjectReader]:
        """Objects read by id, many through one ``git cat-file --batch``."""
        with self.process("cat-file", "--batch") as proc:
            assert proc.stdin is not None and proc.stdout is not None
            yield ObjectReader(proc.stdin, proc.stdout)

    @contextmanager
    def process(self, *args: str) -> Iterator[subprocess.Popen[bytes]]:
        """git running with pipes to its stdin and stdout (bytes), for input too large to hold at once;
        GitError when it exits non-zero after its stdin is closed."""
        with subprocess.Popen(
            self._argv(args),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=self._environ(None),
            pass_fds=held_locks(),
        ) as proc:
            assert proc.stdin is not None and proc.stderr is not None
            try:
                yield proc
            finally:
                with contextlib.suppress(BrokenPipeError):
                    proc.stdin.close()
            code = proc.wait(120)
            if code != 0:
                raise GitError(f"git {args[0]} failed: {proc.stderr.read().decode(errors='replace').strip()}")

    def _argv(self, args: Sequence[str]) -> list[str]:
        # a git holding the gateway's locks runs no maintenance in the background: that would hold them on
        detached = ["-c", "gc.autoDetach=false", "-c", "maintenance.autoDetach=false"] if held_locks() else []
        argv = ["git", *SAFE_CONFIG, *detached, "-C", str(self.root), *args]
        return self.wall(argv) if self.wall is not None else argv

    def _environ(self, env: dict[str, str] | None) -> dict[str, str]:
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
        if self.gitdir is not None:
            environ.update(GIT_DIR=str(self.gitdir), GIT_WORK_TREE=str(self.root))
        else:
            common = common_dir(self.root)
            if common is not None:
                environ["GIT_COMMON_DIR"] = str(common)  # overrides any commondir file inside the gitdir
        return environ

    async def arun(self, *args: str, check: bool = True) -> str:
        return await anyio.to_thread.run_sync(lambda: self.run(*args, check=check))

    def is_repo(self) -> bool:
        return self.run("rev-parse", "--is-inside-work-tree", check=False).strip() == "true"
