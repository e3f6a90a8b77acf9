"""Git, run as a subprocess with settings that keep a repository's own config from running code.

A repository's config can name programs git runs on its behalf (fsmonitor, external diff, textconv,
pagers, hooks). The gateway runs git for agents, so it switches those off on every call, and a repository
nested in the work tree is never looked into (its config is the agent's too).

    repo = Repo(Path("/work/repo"))
    out = repo.run("status", "--porcelain=v1")            # raises GitError on a non-zero exit
    out = await repo.arun("log", "--max-count=5")         # the same, off the event loop

A developer's ``.git`` is writable (all but its hooks, config and modules), so nothing in it decides where
git goes. Every call runs through a git dir of the gateway's making (``shadow``): its ``commondir`` names
the repository the layout says (``layout``: a ``.git`` directory, or the one a ``.git`` file names), its
HEAD is a copy of the checkout's (read without following a link, checked, written back if git moved it),
and the checkout's index is named outright. A ``commondir`` file an agent planted (git reads refs through
it even when GIT_COMMON_DIR says otherwise), in ``.git`` or in a worktree's admin dir, is never read, nor
a ``config.worktree``. What git would follow out of the repository (a link under refs/, logs/, objects/
or worktrees/, an ``objects/info/alternates`` file, a ``commondir`` file in the repository itself) refuses
the call (``GitRefused``) before git runs.

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

import atexit
import contextlib
import os
import re
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import anyio

from gateway.errors import ToolFailed
from gateway.locks import held_locks

__all__ = [
    "OBJECT_ID",
    "SAFE_CONFIG",
    "GitError",
    "GitRefused",
    "Layout",
    "ObjectReader",
    "Repo",
    "Wall",
    "bad_ref_name",
    "common_dir",
    "layout",
    "parse_head",
    "shadow_root",
]

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
OBJECT_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
HEAD_LIMIT = 4096


# A git argv -> the argv that runs it inside the sandbox (Sandbox.git_wall)
Wall = Callable[[Sequence[str]], list[str]]


class GitError(ToolFailed):
    code = "git_failed"


class GitRefused(GitError):
    """The repository holds something git would follow out of it, which the gateway never makes."""

    code = "git_refused"


@dataclass(frozen=True)
class Layout:
    """Where git keeps the checkout at ``root``: ``common``, the repository (config, refs, objects), and
    ``private``, the checkout's own git dir (HEAD, index): ``common`` itself, or ``<common>/worktrees/<name>``."""

    root: Path
    common: Path
    private: Path


def layout(root: Path) -> Layout | None:
    """The checkout's layout from its ``.git`` alone, never from a ``commondir`` file: a ``.git`` directory is
    the repository; a ``.git`` file names the checkout's git dir, whose repository is two levels up when it is
    ``<repository>/worktrees/<name>`` (a linked worktree), else that dir itself (a submodule's). Paths are
    taken as written, never resolved through a link (``GitRefused`` then finds the link). None when ``root``
    has no ``.git`` (git then looks upwards, outside anything an agent may write).

        layout(Path("/work/repo")).common           # /work/repo/.git
        layout(Path("/state/worktrees/T1")).private  # /work/repo/.git/worktrees/T1
    """
    git = root / ".git"
    try:
        mode = os.lstat(git).st_mode
    except OSError:
        return None
    if stat.S_ISDIR(mode):
        return Layout(root, git, git)
    try:
        text = git.read_text() if stat.S_ISREG(mode) else ""
    except (OSError, UnicodeDecodeError):
        return None
    if not text.startswith("gitdir: "):
        return None
    private = Path(os.path.normpath(root / text.removeprefix("gitdir: ").strip()))
    return Layout(root, private.parent.parent if private.parent.name == "worktrees" else private, private)


def common_dir(root: Path) -> Path | None:
    """The repository directory (config, refs, objects) of the checkout at ``root`` (``layout``).

    common_dir(Path("/work/repo"))          # /work/repo/.git
    common_dir(Path("/state/worktrees/T1"))  # /work/repo/.git
    """
    found = layout(root)
    return found.common if found is not None else None


def bad_ref_name(name: str) -> str | None:
    """Why ``name`` is no ref name the gateway follows or writes (git's own rules, and only under refs/)."""
    if not name.startswith("refs/") or name.endswith(("/", ".", ".lock")):
        return "not a ref name under refs/"
    if any(c in name for c in " ~^:?*[\\\x7f") or any(ord(c) < 0x20 for c in name):
        return "a character git does not allow in a ref name"
    if ".." in name or "//" in name or "@{" in name or "/." in name:
        return "a sequence git does not allow in a ref name"
    return None


def parse_head(text: str) -> tuple[str | None, str | None]:
    """(the branch a HEAD file names, the commit a detached one holds); (None, None) when it is neither
    (a ref outside refs/, a pseudo-ref, another worktree's HEAD, anything else an agent wrote there)."""
    text = text.strip()
    if text.startswith("ref: ") and bad_ref_name(text[5:]) is None:
        return text[5:], None
    return (None, text) if OBJECT_ID.fullmatch(text) else (None, None)


# --- what git would follow out of the repository ---------------------------------------------------------

_DIRECTORY, _FILE, _ABSENT = "a directory", "a regular file", "absent"


def _kind(path: Path) -> str:
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return _ABSENT
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    return _DIRECTORY if stat.S_ISDIR(mode) else _FILE if stat.S_ISREG(mode) else "a special file"


def _expect(path: Path, *allowed: str) -> None:
    found = _kind(path)
    if found not in allowed:
        raise GitRefused(
            f"the gateway's git was not run: {path} is {found} (expected {' or '.join(allowed)}): git would "
            "follow it out of the repository, and the gateway never makes one; remove it"
        )


def _below(directory: str, depth: int) -> None:
    """Nothing below ``directory`` (``depth`` levels more; -1: all) is a link or a special file."""
    try:
        entries = list(os.scandir(directory))
    except (FileNotFoundError, NotADirectoryError):
        return
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            if depth != 0:
                _below(entry.path, depth - 1)
        elif not entry.is_file(follow_symlinks=False):
            _expect(Path(entry.path), _DIRECTORY, _FILE)


def refuse_planted(where: Layout) -> None:
    """Raise ``GitRefused`` when the repository holds what git would follow out of it: a link (or a FIFO)
    where it keeps refs, reflogs, objects, packed refs, an index or worktrees' admin dirs; an
    ``objects/info/alternates`` file (objects read from anywhere, the gateway's state included); a
    ``commondir`` file in the repository itself (the user's own git would take its config from there). A
    worktree's admin dir has a ``commondir`` file of git's own; the shadow git dir never reads it."""
    common, private = where.common, where.private
    for path in (
        common,
        common / "objects",
        common / "refs",
        *([] if private == common else [private.parent, private]),
    ):
        _expect(path, _DIRECTORY)
    for path in (common / "logs", common / "worktrees", common / "objects" / "info", common / "objects" / "pack"):
        _expect(path, _DIRECTORY, _ABSENT)
    for path in (common / "packed-refs", private / "index"):
        _expect(path, _FILE, _ABSENT)
    _expect(common / "commondir", _ABSENT)
    alternates = common / "objects" / "info" / "alternates"
    _expect(alternates, _FILE, _ABSENT)
    if _kind(alternates) == _FILE and alternates.stat().st_size:
        raise GitRefused(
            f"the gateway's git was not run: {alternates} lets git read objects from other directories (the "
            "gateway's state among them, were an agent to write it); to use this repository, make it hold its "
            "own objects: git repack -a -d && rm .git/objects/info/alternates"
        )
    # loose objects as links would only be read as objects: their directories and the packs are what count
    for directory, depth in (("refs", -1), ("logs", -1), ("objects", 0), ("objects/pack", 0), ("worktrees", 0)):
        _below(os.path.join(common, directory), depth)


# --- the shadow git dir -----------------------------------------------------------------------------------

_ROOTS: dict[int, Path] = {}  # process id -> its directory of shadow git dirs


def shadow_root() -> Path:
    """This process's directory of shadow git dirs (owner-only, in the temporary dir, removed at exit): a
    walled git must see it (``Sandbox.git_wall`` binds it in, read-only)."""
    root = _ROOTS.get(os.getpid())
    if root is None or _kind(root) != _DIRECTORY:
        root = Path(tempfile.mkdtemp(prefix="gateway-shadows-"))
        _ROOTS[os.getpid()] = root
        atexit.register(_remove_root, root, os.getpid())
    return root


def _remove_root(root: Path, owner: int) -> None:
    if os.getpid() == owner:
        shutil.rmtree(root, ignore_errors=True)


def _read_head(private: Path) -> bytes:
    """The checkout's HEAD file, read without following a link, and only a branch under refs/ or a commit."""
    try:
        fd = os.open(private / "HEAD", os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise GitRefused(
            f"the gateway's git was not run: {private / 'HEAD'} cannot be read as a file ({exc.strerror})"
        ) from None
    with os.fdopen(fd, "rb") as head:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise GitRefused(f"the gateway's git was not run: {private / 'HEAD'} is not a regular file")
        data = head.read(HEAD_LIMIT)
    if parse_head(data.decode(errors="replace")) == (None, None):
        raise GitRefused(
            f"the gateway's git was not run: {private / 'HEAD'} names neither a branch under refs/ nor a commit"
        )
    return data


def _write_head(private: Path, data: bytes) -> None:
    """HEAD moved by git in the shadow, put back in the checkout's git dir the way git does (a lock file it
    creates itself, renamed over the old one: a link there is replaced, never followed)."""
    lock = private / "HEAD.lock"
    try:
        fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except FileExistsError:
        raise GitError(f"HEAD of {private} is locked by another git process ({lock}); it was not moved") from None
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(lock, private / "HEAD")
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(lock)
        raise


@contextmanager
def _shadow(where: Layout) -> Iterator[Path]:
    """A git dir of the gateway's making for one git run over ``where``: a copy of its HEAD (written back if
    git moved it) and a ``commondir`` file naming its repository."""
    head = _read_head(where.private)
    gitdir = _take_shadow(where.common)
    clean = False
    try:
        _overwrite(gitdir / "HEAD", head)
        try:
            yield gitdir
        finally:
            moved = (gitdir / "HEAD").read_bytes()
            if moved != head and parse_head(moved.decode(errors="replace")) != (None, None):
                _write_head(where.private, moved)
        clean = sorted(os.listdir(gitdir)) == ["HEAD", "commondir"]
    finally:
        _give_back(gitdir, where.common, clean)


# (process id, repository) -> shadow git dirs done with (HEAD and commondir alone in them), used again: on
# this machine's ext4, removing a directory or truncating a file to rewrite it costs ~5-10 ms each, more than
# the git command served (bench/bench_repo.py)
_FREE: dict[tuple[int, Path], list[Path]] = {}


def _take_shadow(common: Path) -> Path:
    with contextlib.suppress(KeyError, IndexError):
        return _FREE[os.getpid(), common].pop()  # atomic: two threads never take the same one
    gitdir = Path(tempfile.mkdtemp(dir=shadow_root()))
    (gitdir / "commondir").write_text(f"{common}\n")
    return gitdir


def _overwrite(path: Path, data: bytes) -> None:
    """``path`` holds ``data``: written over, then cut to length (no truncation to zero first, which ext4
    answers by flushing the file on close)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        os.pwrite(fd, data, 0)
        os.ftruncate(fd, len(data))
    finally:
        os.close(fd)


def _give_back(gitdir: Path, common: Path, clean: bool) -> None:
    """A shadow that holds only what ``_shadow`` wrote is kept for the next call over the same repository;
    one where git left more (a reflog of HEAD, COMMIT_EDITMSG) is removed, so no call sees another's."""
    if clean and gitdir.parent == _ROOTS.get(os.getpid()):
        _FREE.setdefault((os.getpid(), common), []).append(gitdir)
    else:
        shutil.rmtree(gitdir, ignore_errors=True)


def _subcommand(args: Sequence[str]) -> str | None:
    """The git command in ``args`` (past -c/-C and other options before it)."""
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in ("-c", "-C"):
            skip = True
        elif not arg.startswith("-"):
            return arg
    return None


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
        # a git dir the caller made and keeps for several calls (gateway/checkpoints/snapshot.py ``shadow``),
        # used as it is; without one, each call gets its own (``_shadow``)
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
        with self.invocation(*args, env=env) as (argv, environ):
            proc = subprocess.run(
                argv,
                capture_output=True,
                text=True,
                env=environ,
                input=input,
                timeout=120,
                errors=errors,
                pass_fds=held_locks(),
            )
        if check and proc.returncode != 0:
            raise GitError(f"git {args[0]} failed: {proc.stderr.strip() or proc.stdout.strip()}")
        return proc.stdout

    @contextmanager
    def invocation(self, *args: str, env: dict[str, str] | None = None) -> Iterator[tuple[list[str], dict[str, str]]]:
        """The argv (walled, if this Repo is) and environment of ``git args``, for as long as the ``with``
        lasts, for a caller that runs it itself (with its output bounded: gateway/tools/git.py)."""
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
        # a git holding the gateway's locks runs no maintenance in the background: that would hold them on
        detached = ["-c", "gc.autoDetach=false", "-c", "maintenance.autoDetach=false"] if held_locks() else []
        argv = ["git", *SAFE_CONFIG, *detached, "-C", str(self.root), *args]
        argv = self.wall(argv) if self.wall is not None else argv
        if self.gitdir is not None:
            yield argv, {**environ, "GIT_DIR": str(self.gitdir), "GIT_WORK_TREE": str(self.root)}
            return
        where = layout(self.root)
        if where is None:
            yield argv, environ
            return
        refuse_planted(where)
        with _shadow(where) as gitdir:
            environ.update(GIT_DIR=str(gitdir), GIT_COMMON_DIR=str(where.common), GIT_WORK_TREE=str(self.root))
            if _subcommand(args) != "worktree":  # its checkout of a new worktree would inherit the index
                environ.setdefault("GIT_INDEX_FILE", str(where.private / "index"))
            yield argv, environ

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
        with (
            self.invocation(*args) as (argv, environ),
            subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=environ,
                pass_fds=held_locks(),
            ) as proc,
        ):
            assert proc.stdin is not None and proc.stderr is not None
            try:
                yield proc
            finally:
                with contextlib.suppress(BrokenPipeError):
                    proc.stdin.close()
            code = proc.wait(120)
            if code != 0:
                raise GitError(f"git {args[0]} failed: {proc.stderr.read().decode(errors='replace').strip()}")

    async def arun(self, *args: str, check: bool = True) -> str:
        return await anyio.to_thread.run_sync(lambda: self.run(*args, check=check))

    def is_repo(self) -> bool:
        return self.run("rev-parse", "--is-inside-work-tree", check=False).strip() == "true"
