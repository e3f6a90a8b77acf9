"""git's aliases, as the agent's git would resolve them: `git co` is `git checkout` when alias.co says so.

git runs a built-in command or a `git-NAME` program on PATH before it looks for an alias (an alias never
hides a command), then `alias.NAME` from its configuration: `-c alias.NAME=...` on the command line, then the
repository's, the user's and the system's config files. The analysis asks git itself (`git config --get`), in
the directory the command runs in, so includes and case are git's own. Running it is safe: `git config` runs
no hook, filter or pager.

What the analysis cannot trust is opaque: an alias that runs a shell command (`!`), an alias defined in a file
inside the workspace outside .git (the agent may rewrite it between the decision and the run), a file this
very command writes first, a HOME or XDG_CONFIG_HOME given to git (another user config), or a lookup that
fails.

    lookup(d, call, "co", {})   # "checkout -b", or None when git has no such alias
"""

from __future__ import annotations

import functools
import os
import subprocess
from pathlib import Path

from gateway.effects.shell.call import Call
from gateway.effects.shell.walker import Describer
from gateway.effects.shell.words import short

__all__ = ["Untrusted", "git_commands", "lookup"]

LOOKUP_TIMEOUT_S = 5.0
# what git reads its configuration from; GIT_* settings of the gateway's own environment are left out
_ENV_KEYS = ("PATH", "HOME", "XDG_CONFIG_HOME", "LANG", "LC_ALL")


class Untrusted(Exception):
    """The alias is there, but what it runs cannot be known or trusted here (the reason)."""


@functools.cache
def git_commands() -> frozenset[str]:
    """git's own commands and the `git-NAME` programs on PATH: these run before any alias."""
    try:
        done = subprocess.run(
            ["git", "--list-cmds=main,others"], capture_output=True, text=True, timeout=LOOKUP_TIMEOUT_S, env=_env()
        )
    except (OSError, subprocess.TimeoutExpired):
        return frozenset()
    return frozenset(done.stdout.split())


def lookup(d: Describer, call: Call, name: str, inline: dict[str, str]) -> str | None:
    """The text of alias ``name`` as git would use it here, or None when there is none; raises Untrusted."""
    if name.lower() in inline:
        return inline[name.lower()]
    for key in ("HOME", "XDG_CONFIG_HOME"):
        if key in call.facts.env:
            raise Untrusted(f"{key} is given to git: its aliases come from another configuration")
    if d.cwd is None:
        raise Untrusted("the directory git runs in is not known")
    try:
        done = subprocess.run(
            ["git", "config", "--show-origin", "-z", "--get", f"alias.{name}"],
            cwd=d.cwd if d.cwd.is_dir() else d.ws.root,
            capture_output=True,
            text=True,
            timeout=LOOKUP_TIMEOUT_S,
            env=_env(),
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise Untrusted(f"git config could not be read: {exc}") from None
    if done.returncode == 1 and not done.stdout:
        return None
    parts = done.stdout.split("\0")
    if done.returncode != 0 or len(parts) < 2:
        raise Untrusted(f"git config could not be read: {short(done.stderr.strip() or 'no answer')}")
    origin, value = parts[0], parts[1]
    _trusted_origin(d, origin, d.cwd if d.cwd.is_dir() else d.ws.root)
    return value


def _trusted_origin(d: Describer, origin: str, cwd: Path) -> None:
    """An alias from a file the agent may change (inside the workspace, outside a .git directory, or written
    by this command) is not what will run."""
    kind, _, where = origin.partition(":")
    if kind != "file":
        raise Untrusted(f"the alias comes from {short(origin)}")
    path = Path(os.path.realpath(cwd / where))
    shown = d.display(path)
    if shown in d.writes or shown in d.creates:
        raise Untrusted(f"this command writes {shown}, which defines the alias, before it runs git")
    if d.ws.contains(path) and ".git" not in Path(shown).parts:
        raise Untrusted(f"the alias is defined in {shown}, which the agent may rewrite")


def _env() -> dict[str, str]:
    return {key: os.environ[key] for key in _ENV_KEYS if key in os.environ}
