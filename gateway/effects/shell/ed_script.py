"""An ed script reader: what a script (a heredoc or here-string fed to ed) reads, writes and runs.

ed is sed's interactive ancestor and as able: ``w FILE``/``W FILE`` write a file, ``r FILE`` and
``e FILE`` read one (and ``e``/``f FILE`` make the next bare ``w`` write there), ``!cmd``, ``r !cmd``,
``w !cmd`` and ``e !cmd`` run a shell command. Each line's addresses (numbers, ``.``, ``$``, ``+``/``-``,
``/re/``, ``?re?``, ``'x``, ``,``, ``;``) are skipped, ``g/re/`` and ``v/re/`` are followed into their
command, and the text of ``a``/``i``/``c`` up to its ``.`` line is skipped. ``G``/``V`` (which read their
commands interactively) and unfinished text raise ``EdError`` (the caller treats it as opaque).

    parse_ed("w /tmp/x\\nq")       # SedEffects(reads=[], writes=["/tmp/x"], runs=[])
    parse_ed("r !id\\nw\\nq")      # SedEffects(reads=[], writes=[], runs=["id"])
"""

from __future__ import annotations

import re

from gateway.effects.shell.sed_script import SedEffects

# One address part: a number, ., $, +n/-n, a regular expression (its closing delimiter optional at the
# end of the line, as ed allows), a mark, or a separator.
_ADDRESSES = re.compile(
    r"""(?:\s|[0-9]+|[.$,;]|[-+^][0-9]*|/(?:[^/\\]|\\.)*(?:/|$)|\?(?:[^?\\]|\\.)*(?:\?|$)|'[a-z])*"""
)
_GLOBAL = re.compile(r"""[gv](.)(?:(?!\1)[^\\]|\\.)*\1?""")


class EdError(ValueError):
    """A script this reader cannot follow."""


def parse_ed(script: str) -> SedEffects:
    found = SedEffects()
    text_mode = False
    for line in script.split("\n"):
        if text_mode:
            text_mode = line != "."
            continue
        text_mode = _command(line, found)
    if text_mode:
        raise EdError("text of a/i/c is not ended by a '.' line")
    return found


def _command(line: str, found: SedEffects) -> bool:
    """One command line into ``found``; True when it starts text input (a, i, c)."""
    rest = line[_ADDRESSES.match(line).end() :]  # type: ignore[union-attr]  # the pattern matches empty
    if rest[:1] in ("G", "V"):
        raise EdError(f"{rest[0]} reads its commands interactively")
    if rest[:1] in ("g", "v"):
        command = _GLOBAL.match(rest)
        return _command(rest[command.end() :] if command else "", found)
    letter, argument = rest[:1], rest[1:]
    if letter in ("w", "W") and argument.startswith("q"):
        argument = argument[1:]
    argument = argument.strip()
    if letter == "!":
        found.runs.append(argument)
    elif letter in ("w", "W", "r", "e", "E", "f") and argument.startswith("!"):
        found.runs.append(argument[1:].strip())
    elif letter in ("w", "W", "f") and argument:
        found.writes.append(argument)
    elif letter == "r" and argument:
        found.reads.append(argument)
    elif letter in ("e", "E") and argument:
        found.reads.append(argument)
        found.writes.append(argument)  # the next bare `w` writes the file it now edits
    return letter in ("a", "i", "c") and not argument
