"""gh's aliases (`gh alias set co "pr checkout"`), expanded as gh expands them.

gh keeps them under `aliases:` in its config.yml ($GH_CONFIG_DIR, else $XDG_CONFIG_HOME/gh, else
~/.config/gh); one never hides a gh command, and one that starts with `!` is a shell command. The sandbox
does not show gh its config (credentials live beside it), so an alias matters for commands that run
unconfined (Claude Code's Bash through the hook), which read the user's. A `!` alias, a config that does not
read, or a GH_CONFIG_DIR given to the command: what runs is not known here, so it is opaque.

    expand(d, call, ["co", "12"])   # ["pr", "checkout", "12"] with `co: pr checkout`
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import yaml

from gateway.effects.shell.call import Call
from gateway.effects.shell.walker import Describer
from gateway.effects.shell.words import names, short

__all__ = ["COMMANDS", "expand"]

COMMANDS = names(
    "agent-task alias api attestation auth browse cache codespace completion config copilot extension gist "
    "gpg-key help issue label org pr preview project release repo ruleset run search secret ssh-key status cs ext "
    "extensions variable version workflow"
)


def expand(d: Describer, call: Call, operands: list[str]) -> list[str] | None:
    """``operands`` with an alias replaced by what it stands for; None when that is not known (opaque)."""
    if not operands or operands[0] in COMMANDS:
        return operands
    if "GH_CONFIG_DIR" in call.facts.env or "XDG_CONFIG_HOME" in call.facts.env:
        d.opaque(f"gh {short(operands[0])}: the config its aliases come from is given to the command")
        return None
    try:
        aliases = _aliases()
    except (OSError, yaml.YAMLError, UnicodeDecodeError) as exc:
        d.opaque(f"gh {short(operands[0])}: its config does not read: {exc}")
        return None
    text = aliases.get(operands[0])
    if not isinstance(text, str):
        return operands  # an extension (gh-NAME) or gh's error
    if text.startswith("!"):
        d.execute(call, text, f"gh alias {short(operands[0])} runs a shell command: {short(text)}")
        return None
    try:
        return [*shlex.split(text), *operands[1:]]
    except ValueError:
        d.opaque(f"gh alias {short(operands[0])} does not split into words")
        return None


def _aliases() -> dict[str, object]:
    base = os.environ.get("GH_CONFIG_DIR") or os.path.join(
        os.environ.get("XDG_CONFIG_HOME") or os.path.join(Path.home(), ".config"), "gh"
    )
    path = Path(base) / "config.yml"
    if not path.is_file():
        return {}
    loaded = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    aliases = loaded.get("aliases") if isinstance(loaded, dict) else None
    return aliases if isinstance(aliases, dict) else {}
