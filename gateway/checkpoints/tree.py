"""The work tree a checkpoint is taken from and restored into, walked without following a symbolic link.

An agent prepares the tree a person later rolls back: a directory swapped for a link to the state dir,
a file replaced by a link to a role file. So every path here is a relative path from the gateway's own
record, walked from the root one component at a time, each opened relative to the one before with
``O_NOFOLLOW`` (as gateway/effects/beneath.py does for the fs tools). What stands in a path's way (a
link, a file where a directory must be) is reported by ``look``; ``put`` and ``remove`` replace or
delete that entry itself, in the directory that holds it, never what it points at. Nothing outside the
root is reachable from here, whatever the tree holds.

    tree = WorkTree(Path("/repo"))
    tree.look("src/app.py")                      # Found(kind="file", mode=REGULAR) / Found("missing", blocked="src")
    tree.blob_id("src/app.py")                   # git's object id of the bytes there (None: not a file or link)
    tree.put("src/app.py", b"x = 1\\n", REGULAR)  # parents made; a link or file in their way replaced
    tree.put("docs", b"../shared/docs", LINK)     # a symbolic link, made (not followed)
    tree.remove("build")                         # a file, a link, or a directory with all it holds
    for rel, found in tree.walk("assets"): ...    # everything below, links reported and not entered
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import secrets
import shutil
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from gateway.effects.beneath import OPEN_CREATE, OPEN_DIR, OPEN_READ
from gateway.errors import ToolFailed

__all__ = ["EXECUTABLE", "LINK", "REGULAR", "Found", "WorkTree", "git_blob_id", "unsafe"]

REGULAR, EXECUTABLE, LINK = 0o100644, 0o100755, 0o120000  # git's modes
Kind = Literal["missing", "file", "link", "dir", "other"]


def unsafe(rel: str) -> str | None:
    """Why ``rel`` is no path a restore may act on (it would leave the root, or reach into git's own
    directory), or None. Git never records such paths; a record that has one was not made by it."""
    if not rel or "\0" in rel:
        return "an empty path or one with a NUL byte"
    if rel.startswith("/"):
        return "an absolute path"
    for part in rel.split("/"):
        if part in ("", ".", ".."):
            return f"a path with an empty, '.' or '..' component ({part!r})"
        if part.lower() == ".git":
            return "a path into .git"
    return None


def git_blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


@dataclass(frozen=True)
class Found:
    """What is at a path, not following it: ``mode`` is git's for a file or a link; ``blocked`` names the
    first parent that is no directory (a link, a file), so nothing is at the path itself."""

    kind: Kind
    mode: int = 0
    blocked: str | None = None


class Blocked(Exception):
    def __init__(self, rel: str) -> None:
        self.rel = rel


@dataclass(frozen=True)
class WorkTree:
    root: Path

    def look(self, rel: str) -> Found:
        parents, name = _split(rel)
        try:
            with self._directory(parents) as fd:
                return _found(fd, name)
        except FileNotFoundError:
            return Found("missing")
        except Blocked as exc:
            return Found("missing", blocked=exc.rel)

    def blob_id(self, rel: str) -> str | None:
        """The id git gives the file's bytes (or the link's target) at ``rel``; None when there is neither."""
        found = self.read(rel)
        return None if found is None else git_blob_id(found[0])

    def read(self, rel: str, limit: int | None = None) -> tuple[bytes, int] | None:
        """The bytes of the regular file (or the target of the link) at ``rel`` and git's mode for it; None
        when there is neither. More than ``limit`` bytes: ToolFailed."""
        parents, name = _split(rel)
        try:
            with self._directory(parents) as fd:
                found = _found(fd, name)
                if found.kind == "link":
                    return os.fsencode(os.readlink(name, dir_fd=fd)), LINK
                if found.kind != "file":
                    return None
                handle = os.open(name, OPEN_READ, dir_fd=fd)
        except (FileNotFoundError, Blocked):
            return None
        except OSError as exc:
            if exc.errno == errno.ELOOP:  # a link since the look: read nothing through it
                return None
            raise
        with os.fdopen(handle, "rb") as file:
            info = os.fstat(file.fileno())
            if not stat.S_ISREG(info.st_mode):
                return None
            if limit is not None and info.st_size > limit:
                raise ToolFailed(f"{rel!r} is larger than {limit} bytes")
            return file.read(), EXECUTABLE if info.st_mode & stat.S_IXUSR else REGULAR

    def put(self, rel: str, data: bytes, mode: int) -> None:
        """Make ``rel`` a file with ``data`` (``mode`` REGULAR or EXECUTABLE) or a link to ``data`` (LINK),
        replacing whatever is there (a directory with all it holds) in one rename."""
        parents, name = _split(rel)
        with self._directory(parents, make=True) as fd:
            temporary = f".gateway-restore-{secrets.token_hex(6)}"
            if mode == LINK:
                os.symlink(os.fsdecode(data), temporary, dir_fd=fd)
            else:
                out = os.open(temporary, OPEN_CREATE, 0o600, dir_fd=fd)
                with os.fdopen(out, "wb") as file:
                    file.write(data)
                    os.fchmod(file.fileno(), 0o755 if mode == EXECUTABLE else 0o644)
            try:
                try:
                    os.rename(temporary, name, src_dir_fd=fd, dst_dir_fd=fd)
                except OSError as exc:
                    if exc.errno not in (errno.EISDIR, errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR):
                        raise
                    _remove(fd, name)  # a directory in the file's place
                    os.rename(temporary, name, src_dir_fd=fd, dst_dir_fd=fd)
            except BaseException:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(temporary, dir_fd=fd)
                raise

    def make_directory(self, rel: str) -> None:
        """``rel`` a directory (parents made, a link or file in the way replaced)."""
        with self._directory(_names(rel), make=True):
            pass

    def remove(self, rel: str) -> bool:
        """Remove what is at ``rel`` (a directory with all it holds); False when nothing was there."""
        parents, name = _split(rel)
        try:
            with self._directory(parents) as fd:
                return _remove(fd, name)
        except (FileNotFoundError, Blocked):
            return False  # a parent is gone or is no directory: nothing is at rel itself

    def walk(self, rel: str) -> Iterator[tuple[str, Found]]:
        """Every entry below the directory ``rel`` ("" for the root), top-down; links are not entered."""
        try:
            with self._directory(_names(rel) if rel else ()) as fd:
                yield from _walk(fd, rel)
        except (FileNotFoundError, Blocked):
            return

    @contextlib.contextmanager
    def _directory(self, names: tuple[str, ...], make: bool = False) -> Iterator[int]:
        """A descriptor of the directory ``names`` below the root. ``make``: missing ones are made and an
        entry in the way (a link, a file) is replaced by a directory; else Blocked names it."""
        fd = os.open(self.root, OPEN_DIR)
        try:
            for depth, name in enumerate(names, start=1):
                step = _enter(fd, name, make)
                if step is None:
                    raise Blocked("/".join(names[:depth]))
                os.close(fd)
                fd = step
            yield fd
        finally:
            os.close(fd)


def _names(rel: str) -> tuple[str, ...]:
    why = unsafe(rel)
    if why is not None:
        raise ToolFailed(f"refused {rel!r}: {why}")
    return tuple(rel.split("/"))


def _split(rel: str) -> tuple[tuple[str, ...], str]:
    *parents, name = _names(rel)
    return tuple(parents), name


def _enter(parent: int, name: str, make: bool) -> int | None:
    """The directory ``name`` in ``parent`` opened without following it; None when a link or a file is in
    the way and ``make`` is False (missing: FileNotFoundError)."""
    for _ in range(3):  # what is in the way may be swapped back meanwhile: try again, then give up
        try:
            return os.open(name, OPEN_DIR, dir_fd=parent)
        except FileNotFoundError:
            if not make:
                raise
        except OSError as exc:
            if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                raise
            if not make:
                return None
            _remove(parent, name)  # the link (or file) itself, in the directory we hold
        with contextlib.suppress(FileExistsError):
            os.mkdir(name, dir_fd=parent)
    raise ToolFailed(f"{name!r} kept changing while it was being made a directory; nothing was written through it")


def _found(parent: int, name: str) -> Found:
    try:
        info = os.stat(name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        return Found("missing")
    if stat.S_ISLNK(info.st_mode):
        return Found("link", LINK)
    if stat.S_ISDIR(info.st_mode):
        return Found("dir")
    if stat.S_ISREG(info.st_mode):
        return Found("file", EXECUTABLE if info.st_mode & stat.S_IXUSR else REGULAR)
    return Found("other")


def _remove(parent: int, name: str) -> bool:
    try:
        info = os.stat(name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        return False
    if stat.S_ISDIR(info.st_mode):
        shutil.rmtree(name, dir_fd=parent)  # fd-based on Linux: it never follows a link inside
    else:
        os.unlink(name, dir_fd=parent)
    return True


def _walk(fd: int, here: str) -> Iterator[tuple[str, Found]]:
    with os.scandir(fd) as listing:
        names = sorted(entry.name for entry in listing)
    for name in names:
        rel = f"{here}/{name}" if here else name
        found = _found(fd, name)
        if found.kind == "missing":
            continue
        yield rel, found
        if found.kind == "dir":
            try:
                child = _enter(fd, name, make=False)
            except FileNotFoundError:
                continue
            if child is None:
                continue  # swapped for a link since: not entered
            try:
                yield from _walk(child, rel)
            finally:
                os.close(child)
