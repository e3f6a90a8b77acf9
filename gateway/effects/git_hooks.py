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
from pathlib import Path

from gateway.repo import common_dir

__all__ = ["hooks_path"]

_SECTION = re.compile(r'^\s*\[\s*([A-Za-z0-9.-]+)\s*(?:"[^"]*")?\s*\]')
_HOOKS_PATH = re.compile(r"^\s*hookspath\s*=\s*(.*?)\s*$", re.IGNORECASE)
_cache: dict[tuple[str, int, int], str | None] = {}


def hooks_path(root: Path) -> str | None:
    """core.hooksPath of the checkout at ``root`` relative to it, when it points inside; else None."""
    common = common_dir(root)
    if common is None:
        return None
    found = None
    for path in (common / "config", root / ".git" / "config.worktree"):
        found = _read(path) or found
    if not found:
        return None
    target = Path(os.path.realpath(root / os.path.expanduser(found)))
    try:
        relative = target.relative_to(Path(os.path.realpath(root))).as_posix()
    except ValueError:
        return None
    return relative if relative not in (".", "") else None


def _read(path: Path) -> str | None:
    """The last core.hooksPath in one config file, remembered while the file is unchanged."""
    try:
        stat = path.stat()
    except OSError:
        return None
    key = (str(path), stat.st_mtime_ns, stat.st_size)
    if key not in _cache:
        _cache.clear() if len(_cache) > 256 else None
        _cache[key] = _parse(path)
    return _cache[key]


def _parse(path: Path) -> str | None:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
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
