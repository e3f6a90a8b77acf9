"""Environment a command is given (``NAME=value cmd``, ``export``, ``env NAME=value``) that changes which
program runs, what it loads or how later words expand; the families add their own (git's GIT_*).

    env_doubt("LD_PRELOAD", Word.of("/x.so"), registry)   # "LD_PRELOAD= changes what runs or how words expand"
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway.effects.shell.words import Word, names

if TYPE_CHECKING:
    from gateway.effects.shell.walk.state import Programs

__all__ = ["env_doubt"]

_ENV_RISKY = names(
    "PATH LD_PRELOAD LD_LIBRARY_PATH LD_AUDIT BASH_ENV ENV IFS SHELLOPTS BASHOPTS PS4 PROMPT_COMMAND CDPATH HOME "
    "NODE_OPTIONS PYTHONSTARTUP PYTHONHOME PYTHONINSPECT PERL5OPT PERL5LIB PERLLIB RUBYOPT RUBYLIB SSH_ASKPASS "
    "SUDO_ASKPASS LESSOPEN LESSCLOSE BROWSER"
)
_ENV_RISKY_PREFIXES = ("LD_", "DYLD_", "BASH_FUNC_")
# Editors and pagers name programs too; these values are known to be harmless.
_ENV_COMMAND_VARS = names("EDITOR VISUAL PAGER GIT_EDITOR GIT_PAGER GIT_SEQUENCE_EDITOR MANPAGER")
_SAFE_COMMAND_VALUES = frozenset({"true", ":", "cat", "less", "more", "vi", "vim", "nano", ""})


def env_doubt(name: str, value: Word, registry: Programs) -> str | None:
    """Why ``name=value`` changes what runs, what it loads or where it writes; None when it does not."""
    if name in _ENV_COMMAND_VARS:
        if value.literal and value.value in _SAFE_COMMAND_VALUES:
            return None
        return f"{name}={value.value} names a program to run"
    if name in _ENV_RISKY or name.startswith(_ENV_RISKY_PREFIXES):
        return f"{name}= changes what runs or how words expand"
    doubt = registry.env_doubt(name, value)
    return f"{name}= {doubt}" if doubt else None
