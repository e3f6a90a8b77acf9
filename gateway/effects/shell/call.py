"""What a program's handler sees and fills in: one simple command (``Call``), where it runs (``Ctx``), its
redirections (``Redir``), and its facts (``CommandFacts``, the same fields as ``CommandEffect``).

    call = Call(name="rm", words=[Word.of("rm"), Word.of("-rf"), Word.of("build")], ctx=Ctx(), facts=facts)
    call.args            # the words after the program
    call.facts.recursive = True
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gateway.effects.shell.words import Word
from gateway.types import CommandFacts, Redirect

__all__ = ["Call", "CommandFacts", "Ctx", "Handler", "Redir"]


@dataclass(frozen=True)
class Ctx:
    """Where a statement runs: how it was reached, how deep, and where its standard input comes from."""

    via: str = "direct"
    depth: int = 0  # substitutions, wrappers and re-parses
    nest: int = 0  # structural nesting
    stdin: str = "inherit"  # inherit | pipe | file | heredoc | herestring | socket | dup
    stdin_text: str | None = None  # literal heredoc or herestring text
    stdin_tainted: bool = False  # stdin carries downloaded or decoded bytes
    sudo: bool = False  # runs with elevated privileges


@dataclass(frozen=True)
class Redir:
    redirect: Redirect
    kind: str  # in | out | dup | heredoc | herestring | socket
    path: Path | None = None
    text: str | None = None
    tainted: bool = False
    shown: tuple[str, ...] = ()  # the files it reads (kind "in") or writes (kind "out"), as displayed


@dataclass
class Call:
    """One simple command, as a handler sees it. ``facts`` is filled in by the walk (argv, program, cwd,
    env, redirections) and by the program's handler (the rest); ``taints``: the command prints or writes
    downloaded or decoded bytes (its stdin does, or its program is a fetcher or a decoder)."""

    name: str  # normalised program name: "rm", "python", "pip"
    words: list[Word]
    ctx: Ctx
    redirects: list[Redir] = field(default_factory=list)
    facts: CommandFacts = field(default_factory=lambda: CommandFacts(argv=[]))
    taints: bool = False

    @property
    def args(self) -> list[Word]:
        return self.words[1:]


# A handler is called with the walk's Describer (walker.py) and the call. Typed Any here so this module, which
# the families and the walk both import, names neither: the walk reaches the families only through the registry.
Handler = Callable[[Any, Call], None]
