"""Act on a checked path beneath a root directory without following any symbolic link.

``Workspace.resolve`` checks a path with every symlink followed; between that check and the open an agent
can swap a component for a symlink to the gateway's keys (time of check to time of use). So the tools act
through this module: it opens the root once and walks the checked path one component at a time, each
opened relative to the one before with ``O_NOFOLLOW``, and reads, writes, lists and deletes through those
descriptors. The checked path is already fully resolved, so a symlink met here appeared after the check:
it is refused (``PathChanged``), never followed.

    tree = Beneath(Path("/repo"))
    tree.read(Path("/repo/src/a.py"), limit=65536)      # b"..." (at most limit bytes)
    tree.write(Path("/repo/src/new/b.py"), b"x = 1\\n")  # False: created (parents made); True: replaced
    for entry in tree.scan(Path("/repo/src"), recursive=True, keep=lambda p: p.name != ".git"):
        print(entry.path, entry.is_dir, entry.size)
    tree.delete(Path("/repo/build"), recursive=True)
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import shutil
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from gateway.errors import PathChanged, PathOutsideWorkspace, ToolFailed

OPEN_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: a FIFO put in a file's place must not hang the read (it is refused by fstat instead)
OPEN_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
OPEN_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass(frozen=True)
class Entry:
    """One entry a scan met, as it was (a symlink is reported, never followed)."""

    path: Path
    is_dir: bool
    is_symlink: bool
    size: int


@dataclass(frozen=True)
class Beneath:
    """A root directory; every path given is absolute, resolved and under it (``Workspace.resolve``'s answer)."""

    root: Path

    def read(self, real: Path, limit: int | None = None) -> bytes:
        """The regular file at ``real`` (at most ``limit`` bytes when given)."""
        with self._parent(real) as parent:
            fd = self._open(parent, real, OPEN_READ)
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise ToolFailed(f"{self._show(real)!r} is not a regular file")
            return handle.read(-1 if limit is None else limit)

    def lstat(self, real: Path) -> os.stat_result:
        """What is at ``real``, not following it; a symlink there is refused."""
        if real == self.root:
            return os.stat(self.root)
        with self._parent(real) as parent:
            return self._lstat(parent, real)

    def write(self, real: Path, data: bytes) -> bool:
        """Replace or create the file at ``real`` atomically (missing parents made); whether it existed."""
        with self._parent(real, create=True) as parent:
            try:
                before: os.stat_result | None = self._lstat(parent, real)
            except FileNotFoundError:
                before = None
            if before is not None and stat.S_ISDIR(before.st_mode):
                raise ToolFailed(f"{self._show(real)!r} is a directory")
            if before is not None and not stat.S_ISREG(before.st_mode):
                raise ToolFailed(f"{self._show(real)!r} is not a regular file")
            tmp = f".{real.name}.{secrets.token_hex(6)}.tmp"
            fd = os.open(tmp, OPEN_CREATE, 0o666, dir_fd=parent)
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(data)
                    if before is not None:
                        os.fchmod(handle.fileno(), stat.S_IMODE(before.st_mode))
                # rename replaces the name itself: a symlink swapped in meanwhile is replaced, not followed
                os.rename(tmp, real.name, src_dir_fd=parent, dst_dir_fd=parent)
            except BaseException:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp, dir_fd=parent)
                raise
            return before is not None

    def delete(self, real: Path, recursive: bool) -> None:
        """Remove the file or directory at ``real`` (a non-empty directory only when ``recursive``)."""
        if real == self.root:
            raise ToolFailed("refusing to delete the root")
        with self._parent(real) as parent:
            try:
                found = self._lstat(parent, real)
            except FileNotFoundError:
                raise ToolFailed(f"{self._show(real)!r} does not exist") from None
            if not stat.S_ISDIR(found.st_mode):
                os.unlink(real.name, dir_fd=parent)
            elif recursive:
                shutil.rmtree(real.name, dir_fd=parent)  # fd-based on Linux: it never follows a symlink
            else:
                try:
                    os.rmdir(real.name, dir_fd=parent)
                except OSError as exc:
                    if exc.errno != errno.ENOTEMPTY:
                        raise
                    raise ToolFailed(f"{self._show(real)!r} is a non-empty directory; pass recursive=true") from None

    def scan(self, real: Path, recursive: bool, keep: Callable[[Entry], bool]) -> Iterator[Entry]:
        """The entries of the directory at ``real``, each directory's sorted (directories first), top-down.

        Entries ``keep`` refuses are neither yielded nor entered; symlinks are yielded but never entered.
        """
        with self._directory(real) as fd:
            yield from self._scan(fd, real, recursive, keep)

    def _scan(self, fd: int, here: Path, recursive: bool, keep: Callable[[Entry], bool]) -> Iterator[Entry]:
        found: list[Entry] = []
        with os.scandir(fd) as listing:
            for item in listing:
                with contextlib.suppress(FileNotFoundError):  # removed since the listing
                    found.append(_entry(here, item))
        kept = sorted((e for e in found if keep(e)), key=lambda e: (not e.is_dir, e.path.name))
        yield from kept
        if not recursive:
            return
        for entry in kept:
            if not entry.is_dir:
                continue
            try:
                child = self._open(fd, entry.path, OPEN_DIR)
            except PathChanged:
                raise
            except ToolFailed:
                continue  # removed or replaced by a file since the listing: nothing to enter
            try:
                yield from self._scan(child, entry.path, recursive, keep)
            finally:
                os.close(child)

    @contextlib.contextmanager
    def _directory(self, real: Path, create: bool = False) -> Iterator[int]:
        """A descriptor of the directory ``real``, walked from the root; ``create`` makes missing ones."""
        names = self._names(real)
        fd = os.open(self.root, OPEN_DIR)
        try:
            for depth, name in enumerate(names, start=1):
                if create:
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(name, dir_fd=fd)
                step = self._open(fd, self.root.joinpath(*names[:depth]), OPEN_DIR)
                os.close(fd)
                fd = step
            yield fd
        finally:
            os.close(fd)

    def _parent(self, real: Path, create: bool = False) -> contextlib.AbstractContextManager[int]:
        if real == self.root:
            raise ToolFailed("the root is a directory, not a file")
        return self._directory(real.parent, create)

    def _open(self, parent: int, real: Path, flags: int) -> int:
        try:
            return os.open(real.name, flags, dir_fd=parent)
        except OSError as exc:
            if exc.errno == errno.ENOENT:
                raise ToolFailed(f"{self._show(real)!r} does not exist") from None
            # ELOOP: it was a symlink when opened (O_NOFOLLOW), whatever is there now. ENOTDIR (O_DIRECTORY): a
            # symlink, or a file that is a directory again by now, also changed; a plain file is just not one.
            if exc.errno == errno.ENOTDIR:
                with contextlib.suppress(FileNotFoundError):
                    if not stat.S_ISDIR(self._lstat(parent, real).st_mode):
                        raise ToolFailed(f"{self._show(real)!r} is not a directory") from None
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                raise self._changed(real) from None
            raise

    def _lstat(self, parent: int, real: Path) -> os.stat_result:
        found = os.stat(real.name, dir_fd=parent, follow_symlinks=False)
        if stat.S_ISLNK(found.st_mode):
            raise self._changed(real)
        return found

    def _changed(self, real: Path) -> PathChanged:
        return PathChanged(
            f"{self._show(real)!r} became a symbolic link after the path was checked; refused, nothing was "
            "read or written through it"
        )

    def _names(self, real: Path) -> tuple[str, ...]:
        try:
            names = real.relative_to(self.root).parts
        except ValueError:
            raise PathOutsideWorkspace(f"path {str(real)!r} is outside {str(self.root)!r}") from None
        if any(name in ("", ".", "..") for name in names):
            raise PathOutsideWorkspace(f"path {str(real)!r} is not a resolved path")
        return names

    def _show(self, real: Path) -> str:
        return real.relative_to(self.root).as_posix() or "."


def _entry(here: Path, item: os.DirEntry[str]) -> Entry:
    found = item.stat(follow_symlinks=False)
    return Entry(
        path=here / item.name,
        is_dir=stat.S_ISDIR(found.st_mode),
        is_symlink=stat.S_ISLNK(found.st_mode),
        size=found.st_size,
    )
