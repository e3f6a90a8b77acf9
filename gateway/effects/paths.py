"""Paths, resolved against the workspace with symlinks followed.

One function decides where a path really points; the describe stage uses it to state facts and the
tools use it to refuse anything that leaves the workspace or touches the gateway's own state.

    ws = Workspace(Path("/repo"), protected=[Path("/repo/.gateway")])
    ws.resolve("src/a.py")        # Path("/repo/src/a.py")
    ws.resolve("../etc/passwd")   # raises PathOutsideWorkspace
    ws.display(Path("/etc/passwd"))  # "/etc/passwd"; inside paths come back relative: "src/a.py"
"""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from gateway.errors import InvalidArguments, PathChanged, PathOutsideWorkspace

# Characters that make a path look like something it is not: zero-width, bidi controls, BOM.
_INVISIBLE = (
    {"\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad"}
    | {chr(c) for c in range(0x202A, 0x202F)}
    | {chr(c) for c in range(0x2066, 0x206A)}
)


def suspicious_unicode(text: str) -> str | None:
    """Why a path's characters could mislead a reader or a pattern, or None.

    Invisible and bidi characters, text that NFKC-normalises to something else (a
    full-width ``.env``), and a name mixing Latin with Cyrillic or Greek letters (``.env`` with a Cyrillic
    ``e``) all count.
    """
    if any(ch in _INVISIBLE for ch in text):
        return "invisible or bidirectional control characters"
    if any(unicodedata.category(ch) == "Cc" for ch in text):
        return "control characters"
    if unicodedata.normalize("NFKC", text) != text:
        return "characters that normalise to different ones (NFKC)"
    for part in text.split("/"):
        scripts = {_script(ch) for ch in part if ch.isalpha()}
        if "LATIN" in scripts and scripts & {"CYRILLIC", "GREEK"}:
            return "a name that mixes Latin with Cyrillic or Greek letters"
    return None


def _script(ch: str) -> str:
    name = unicodedata.name(ch, "")
    return name.split(" ", 1)[0] if name else "UNKNOWN"


@dataclass(frozen=True)
class Workspace:
    """The directory tree a call may act in, and the paths inside it that stay off limits."""

    root: Path
    protected: tuple[Path, ...] = field(default_factory=tuple)

    def __init__(self, root: Path, protected: Iterable[Path] = ()) -> None:
        root = Path(root).resolve()
        object.__setattr__(self, "root", root)
        # a protected path that contains the root (a worktree inside the state dir) guards nothing here
        guarded = tuple(p.resolve() for p in protected if not _within(root, p.resolve()))
        object.__setattr__(self, "protected", guarded)

    def locate(self, raw: str, base: Path | None = None) -> Path:
        """Where ``raw`` really points (absolute, symlinks followed), without judging it."""
        if "\x00" in raw:
            raise InvalidArguments("path contains a NUL byte")
        if raw == "":
            raise InvalidArguments("path is empty")
        path = Path(raw)
        if not path.is_absolute():
            path = (base or self.root) / path
        try:
            return Path(os.path.realpath(path))
        except OSError:
            # realpath read a link that was no longer one (EINVAL): the path is being swapped under it
            raise PathChanged(f"path {raw!r} changed while it was being resolved; refused") from None

    def resolve(self, raw: str, base: Path | None = None) -> Path:
        """The real path of ``raw`` if it stays inside the workspace and off the protected paths."""
        real = self.locate(raw, base)
        if not self.contains(real):
            raise PathOutsideWorkspace(f"path {raw!r} resolves outside the workspace", path=raw)
        if self.is_protected(real):
            raise PathOutsideWorkspace(f"path {raw!r} is part of the gateway's own state and is off limits", path=raw)
        return real

    def contains(self, real: Path) -> bool:
        return _within(real, self.root)

    def is_protected(self, real: Path) -> bool:
        return any(_within(real, p) for p in self.protected)

    def display(self, real: Path) -> str:
        """Workspace-relative for paths inside (``.`` for the root), absolute for paths outside."""
        if self.contains(real):
            rel = real.relative_to(self.root).as_posix()
            return rel or "."
        return real.as_posix()


def _within(path: Path, parent: Path) -> bool:
    # The same answer as ``path == parent or path.is_relative_to(parent)`` for the absolute, normalised paths
    # this module compares, by string prefix on a "/" boundary: pathlib's version splits both into parts and
    # builds a new path each time, and every call checks a path against the root and each protected path.
    if path == parent:
        return True
    prefix = str(parent)
    if not prefix.endswith("/"):
        prefix += "/"
    return str(path).startswith(prefix)
