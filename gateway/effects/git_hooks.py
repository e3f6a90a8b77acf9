"""Where the repository's git hooks live when core.hooksPath moves them into the work tree.

`git config core.hooksPath scripts/hooks` makes every file there a hook: code that runs on the next commit,
push or checkout, a protected path like .git/hooks. The policy input names it (``context.git_hooks``) so the
protected-path rules treat it as one. Read from the repository's own config files (config, config.worktree)
as a small parser sees them: an include or a user-wide setting is not followed ("where visible"); a value
outside the workspace needs nothing, since a write there is tier 3 already.

    hooks_path(Path("/repo"))   # "scripts/hooks", or None
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from gateway.repo import common_dir

__all__ = ["hooks_path"]

_SECTION = re.compile(r'^\s*\[\s*([A-Za-z0-9.-]+)\s*(?:"[^"]*")?\s*\]')
_HOOKS_PATH = re.compile(r"^\s*hookspath\s*=\s*(.*?)\s*$", re.IGNORECASE)
_cache: dict[tuple[str, int, int], str | None] = {}


def hooks_path(root: Path) -> str | None:
    """core.hooksPath of the checkout at ``root`` relative to it, when it points inside; else None. Asked for
    every decision: a plain .git directory costs two stats while its config is unchanged."""
    git = os.path.join(root, ".git")
    try:
        mode = os.lstat(git).st_mode
    except OSError:
        return None
    common = git if stat.S_ISDIR(mode) else common_dir(root)  # a worktree's .git file names its repository
    if common is None:
        return None
    found = None
    for path in (os.path.join(common, "config"), os.path.join(git, "config.worktree")):
        found = _read(path) or found
    if not found:
        return None
    target = Path(os.path.realpath(root / os.path.expanduser(found)))
    try:
        relative = target.relative_to(Path(os.path.realpath(root))).as_posix()
    except ValueError:
        return None
    return relative if relative not in (".", "") else None


def _read(path: str) -> str | None:
    """The last core.hooksPath in one config file, remembered while the file is unchanged."""
    try:
        seen = os.stat(path)
    except OSError:
        return None
    key = (path, seen.st_mtime_ns, seen.st_size)
    if key not in _cache:
        if len(_cache) > 256:
            _cache.clear()
        _cache[key] = _parse(path)
    return _cache[key]


def _parse(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as config:
            text = config.read()
    except OSError:
        return None
    section, value = "", None
    for line in text.splitlines():
        header = _SECTION.match(line)
        if header:
            section = header.group(1).lower()
            continue
        match = _HOOKS_PATH.match(line) if section == "core" else None
        if match:
            value = re.split(r"\s[#;]", match.group(1))[0].strip().strip('"')
    return value or None
