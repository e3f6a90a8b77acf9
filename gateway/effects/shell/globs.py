"""Bounded filesystem expansion: which files a glob or a recursive read names here and now.

``cat *`` in a directory that holds server.key reads server.key; the policy can only see that if the
analysis says so. Both functions give up (None) rather than walk a large tree: the caller then treats
the word as it did before (the pattern alone, or an opaque reason).

    expand_glob("src/*.py", Path("/repo"))    # [Path("/repo/src/a.py"), ...] or None when too many
    list_tree(Path("/repo/src"))              # files under src, breadth first, at most MAX_FILES
"""

from __future__ import annotations

import fnmatch
import itertools
import os
import re
from pathlib import Path

MAX_MATCHES = 256  # more matches than this: the expansion is not reported (the caller decides what that means)
MAX_ENTRIES = 4096  # directory entries looked at per expansion: a deep pattern cannot walk a whole tree
MAX_FILES = 256  # files listed for one recursive read

_MAGIC = re.compile(r"[*?\[]")


def expand_glob(pattern: str, cwd: Path) -> list[Path] | None:
    """The paths an unquoted glob matches, as bash expands it (no dotglob, no globstar), sorted.

    ``pattern`` has its quoted glob characters escaped (``[*]``). An empty list means no match (bash
    then passes the pattern itself); None means the expansion was too large to follow."""
    parts = pattern.split("/")
    current = [Path("/")] if pattern.startswith("/") else [cwd]
    budget = MAX_ENTRIES
    for k, part in enumerate(parts):
        last = k == len(parts) - 1
        if part == "":
            continue
        if not _MAGIC.search(part):
            name = unescape(part)
            joined = [p / name for p in current]
            current = [p for p in joined if (os.path.lexists(p) if last else p.is_dir())]
            continue
        matcher = re.compile(fnmatch.translate(part.replace("[^", "[!")), re.DOTALL)
        hidden = part.startswith(".")
        found: list[Path] = []
        for directory in current:
            try:
                entries = list(os.scandir(directory))
            except OSError:
                continue
            budget -= len(entries)
            if budget < 0:
                return None
            for entry in entries:
                if entry.name.startswith(".") and not hidden:
                    continue
                if matcher.match(entry.name) and (last or entry.is_dir()):
                    found.append(directory / entry.name)
            if len(found) > MAX_MATCHES:
                return None
        current = found
    return sorted(current)


def literal_prefix(pattern: str) -> str:
    """The directories a pattern names before its first wildcard: ``src/*.py`` -> ``src``, ``*`` -> ``.``."""
    parts = itertools.takewhile(lambda part: not _MAGIC.search(part), pattern.split("/"))
    return unescape("/".join(parts)) or "."


def unescape(part: str) -> str:
    return re.sub(r"\[([*?\[])\]", r"\1", part)


def escape(value: str) -> str:
    """A quoted piece of a word, made literal inside a glob pattern."""
    return re.sub(r"([*?\[])", r"[\1]", value)


def list_tree(root: Path, hidden: bool = True, follow: bool = False) -> list[Path]:
    """Files under ``root`` (a directory), breadth first, at most MAX_FILES of them.

    Breadth first so that the shallow files (``.env`` next to the sources) are always among them in a
    tree too large to list whole. Symbolic links met on the way are skipped, as grep -r and rg do,
    unless ``follow`` (grep -R): then a link is listed (the caller resolves where it points) but a
    linked directory is not entered."""
    files: list[Path] = []
    queue = [root]
    budget = MAX_ENTRIES
    while queue and budget > 0 and len(files) < MAX_FILES:
        directory = queue.pop(0)
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:
            continue
        budget -= len(entries)
        for entry in entries:
            if not hidden and entry.name.startswith("."):
                continue
            if entry.is_symlink():
                if follow:
                    files.append(directory / entry.name)
            elif entry.is_dir(follow_symlinks=False):
                queue.append(directory / entry.name)
            else:
                files.append(directory / entry.name)
    return files[:MAX_FILES]
