"""cargo's aliases, expanded as cargo expands them (src/bin/cargo/main.rs, cli.rs).

`cargo b` builds; a user alias can name any command with arguments, `b = "publish --no-verify"` included,
and wins over the built-in aliases (b, c, d, r, t, rm) but never over a built-in command. Aliases come from
`--config alias.NAME=...`, `CARGO_ALIAS_NAME`, the `[alias]` tables of `.cargo/config.toml` (or
`.cargo/config`) in the directory cargo runs in and each one above it (the nearer wins), then
`$CARGO_HOME/config.toml`. An alias may name another; a loop is cargo's error.

The workspace's .cargo/config.toml is the agent's to write: it is read as it is when the call is judged. A
command that writes a cargo config before it runs cargo, an alias table that does not parse, or a --config
file: the alias cannot be known here, so it is opaque.

    expand(d, call, ["b", "--release"], [])   # ["build", "--release"], or what an alias says
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

from gateway.effects.shell.call import Call
from gateway.effects.shell.walker import Describer
from gateway.effects.shell.words import Word, names, short

__all__ = ["BUILTIN_ALIASES", "COMMANDS", "expand"]

COMMANDS = names(
    "add bench build check clean config doc fetch fix generate-lockfile git-checkout help info init install "
    "locate-project login logout metadata new owner package pkgid publish read-manifest remove report run rustc "
    "rustdoc search test tree uninstall update vendor verify-project version yank"
)
BUILTIN_ALIASES = {"b": "build", "c": "check", "d": "doc", "r": "run", "t": "test", "rm": "remove"}
MAX_EXPANSIONS = 16
CONFIG_NAMES = ("config.toml", "config")


def expand(d: Describer, call: Call, operands: list[str], config_options: list[Word]) -> list[str] | None:
    """``operands`` with the subcommand replaced by what cargo runs for it; None when that is not known
    (opaque, with the reason)."""
    seen: list[str] = []
    while operands and operands[0] not in COMMANDS:
        name = operands[0]
        if name in seen or len(seen) >= MAX_EXPANSIONS:
            d.opaque(f"cargo alias {short(name)} expands into itself")
            return None
        seen.append(name)
        try:
            alias = _user_alias(d, call, name, config_options)
        except _Unknown as exc:
            d.opaque(f"cargo {short(name)}: {exc}")
            return None
        if alias is None:
            alias = [BUILTIN_ALIASES[name]] if name in BUILTIN_ALIASES else None
        if alias is None:
            return operands  # an external `cargo-NAME` program, or cargo's error
        operands = [*alias, *operands[1:]]
    return operands


class _Unknown(Exception):
    """Where the alias comes from cannot be read here."""


def _user_alias(d: Describer, call: Call, name: str, config_options: list[Word]) -> list[str] | None:
    for word in reversed(config_options):  # the last --config wins
        key, eq, value = word.value.partition("=")
        if not word.literal or not eq:
            raise _Unknown("a --config file or value is not read here")
        if key.strip() == f"alias.{name}":
            return _words(_toml_value(value))
    env = call.facts.env.get(f"CARGO_ALIAS_{name.upper().replace('-', '_')}")
    if env is not None:
        return env.split()
    if "CARGO_HOME" in call.facts.env:
        raise _Unknown("CARGO_HOME is given: its config is not read here")
    if d.cwd is None:
        raise _Unknown("the directory it runs in is not known")
    cargo_home = Path(os.environ.get("CARGO_HOME") or Path.home() / ".cargo")
    folders = [place / ".cargo" for place in (d.cwd, *d.cwd.parents)] + [cargo_home]
    written = {*d.writes, *d.creates}
    for folder in folders:
        for config_name in CONFIG_NAMES:
            path = folder / config_name
            if d.display(path) in written:
                raise _Unknown(f"this command writes {d.display(path)} before it runs cargo")
            alias = _alias_in(path, name)
            if alias is not None:
                return alias
    return None


def _alias_in(path: Path, name: str) -> list[str] | None:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise _Unknown(f"{path} does not read: {exc}") from None
    try:
        table = tomllib.loads(text).get("alias", {})
    except tomllib.TOMLDecodeError as exc:
        raise _Unknown(f"{path} does not parse: {exc}") from None
    return _words(table[name]) if isinstance(table, dict) and name in table else None


def _toml_value(text: str) -> object:
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        raise _Unknown("a --config alias does not parse") from None


def _words(value: object) -> list[str]:
    """A string is split at whitespace, a list is taken as it is (cargo's `StringOrVec`)."""
    if isinstance(value, str) and value.split():
        return value.split()
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return list(value)
    raise _Unknown("the alias is empty or not a string or a list of strings")
