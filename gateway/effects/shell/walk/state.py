"""What the walk of one command string accumulates, and the bounds it keeps to.

``WalkState`` holds the facts for the whole call (``Effects``) and per command (``CommandFacts``), the
working directory as cd moves it, and the caches that make paths cheap; each part of the Describer
(host_facts, path_facts, expansion, redirects, statements, commands, run_facts, walker) builds on it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Set
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from gateway.effects.paths import Workspace
from gateway.effects.shell.call import Call, CommandFacts, Ctx, Handler, Redir
from gateway.effects.shell.words import Word, short
from gateway.types import CommandEffect, Effects, NetworkEffect, PackageEffect

if TYPE_CHECKING:
    from tree_sitter import Node


__all__ = [
    "MAX_COMMANDS",
    "MAX_COMMAND_BYTES",
    "MAX_NESTING",
    "MAX_STRUCTURE",
    "MAX_WORDS",
    "Programs",
    "Stop",
    "WalkState",
    "unique",
]

MAX_COMMAND_BYTES = 16 * 1024
MAX_NESTING = 16  # substitutions, wrappers and re-parsed strings inside one another
MAX_STRUCTURE = 64  # nested groups, subshells, loops and conditionals (bounds the recursion)
MAX_COMMANDS = 256  # simple commands per call: more is opaque (and the walk stops, so it stays fast)
MAX_WORDS = 1024  # words (and redirections) in all those commands

# the fields of a command whose entries are stated once, in the order first met
_UNIQUE_FIELDS = ("reads", "writes", "deletes", "paths", "executes")


class Programs(Protocol):
    """What the walk asks of the program families: registry.py's ``Registry`` (a protocol, so the walk never
    names the families it dispatches to)."""

    @property
    def handlers(self) -> Mapping[str, Handler]: ...
    @property
    def shells(self) -> Set[str]: ...
    @property
    def privileged(self) -> Set[str]: ...
    @property
    def opaque_runners(self) -> Set[str]: ...
    @property
    def guarded(self) -> Set[str]: ...
    def program_name(self, value: str) -> str: ...
    def emits_untrusted(self, argv: list[str]) -> bool: ...
    def env_doubt(self, name: str, value: Word) -> str | None: ...


class Stop(Exception):
    """The walk went past a bound: nothing more is described (the reason is already opaque)."""


class WalkState:
    """Accumulates the facts of one command string (and of the strings re-parsed from it)."""

    def __init__(self, workspace: Workspace, cwd: Path, registry: Programs) -> None:
        self.ws = workspace
        self.registry = registry
        self.cwd: Path | None = cwd  # None once a cd could not be followed
        self.home = os.environ.get("HOME", "/root")
        self.reads: list[str] = []
        self.writes: list[str] = []
        self.creates: list[str] = []
        self.deletes: list[str] = []
        self.recursive_deletes: list[str] = []
        self.commands: list[CommandFacts] = []  # every simple command, as its handler left it
        self.emits_tainted: list[bool] = []  # per command: does it print downloaded or decoded bytes?
        self.network: list[NetworkEffect] = []
        self.packages: list[PackageEffect] = []
        self.opaques: list[str] = []
        self.privileged = False
        self.tainted: set[Path] = set()  # files that hold downloaded or decoded bytes
        self.made_dirs: set[Path] = set()  # directories made here, so a later cd into them can be followed
        self.word_count = 0
        # where a word points from a directory, and how a path is shown: asked again and again (every cd,
        # every relative path), answered once per call
        self._located: dict[tuple[str, Path | None], Path] = {}
        self._shown: dict[Path, str] = {}
        self._real_dirs: dict[str, str] = {}
        self._root = str(workspace.root)
        self._root_prefix = self._root.rstrip("/") + "/"

    # ---- the walk's own steps, defined by the parts that build on this state ----------------------

    def describe(self, source_text: str, ctx: Ctx) -> None:
        raise NotImplementedError

    def _block(self, node: Node, ctx: Ctx, redirs: list[Redir] | None = None) -> None:
        raise NotImplementedError

    def _run(
        self, words: list[Word], redirs: list[Redir], ctx: Ctx, env: dict[str, str] | None = None, handle: bool = True
    ) -> None:
        raise NotImplementedError

    # ---- results ---------------------------------------------------------------------------------

    def effects(self) -> Effects:
        writes = unique(self.writes)
        commands = [
            CommandEffect(**{**facts.__dict__, **{name: unique(getattr(facts, name)) for name in _UNIQUE_FIELDS}})
            for facts in self.commands
        ]
        return Effects(
            reads=unique(self.reads),
            writes=writes,
            creates=unique(c for c in self.creates if c not in writes),
            deletes=unique(self.deletes),
            recursive_deletes=unique(self.recursive_deletes),
            commands=commands,
            network=list({(n.host, n.via, n.port): n for n in self.network}.values()),
            privileged=self.privileged,
            packages=list({repr(p): p for p in self.packages}.values()),
            opaque=unique(self.opaques),
        )

    def opaque(self, reason: str) -> None:
        self.opaques.append(reason)

    def execute(self, call: Call, what: str, reason: str) -> None:
        """``call`` may run ``what`` (a program or command text) that is not listed as a command of its own."""
        call.facts.executes.append(what)
        self.opaque(reason)

    def _tainted_since(self, start: int) -> bool:
        return any(self.emits_tainted[start:])

    def shown_cwd(self) -> str | None:
        return None if self.cwd is None else self.display(self.cwd)

    def display(self, path: Path) -> str:
        """Workspace-relative inside, absolute outside (as ``Workspace.display``), remembered, and by string
        prefix rather than pathlib: a call may show thousands of paths."""
        shown = self._shown.get(path)
        if shown is None:
            real = str(path)
            if real == self._root:
                shown = "."
            elif real.startswith(self._root_prefix):
                shown = real[len(self._root_prefix) :]
            else:
                shown = real
            self._shown[path] = shown
        return shown

    def _locate(self, value: str) -> Path:
        """Where ``value`` really points from the cwd (as ``Workspace.locate``: absolute, symlinks followed;
        InvalidArguments for NUL or empty), remembered."""
        key = (value, self.cwd)
        found = self._located.get(key)
        if found is None:
            if "\x00" in value or value == "":
                found = self.ws.locate(value, base=self.cwd)  # raises with the workspace's own message
            else:
                base = str(self.cwd) if self.cwd is not None else self._root
                found = Path(self._realpath(value if value.startswith("/") else os.path.join(base, value)))
            self._located[key] = found
        return found

    def _realpath(self, path: str) -> str:
        """``os.path.realpath``, with the directory part resolved once per directory: realpath(d/name) is
        realpath(realpath(d)/name), and a call names many files in few directories."""
        directory, _, name = path.rpartition("/")
        try:
            if name in ("", ".", "..") or not directory:
                return os.path.realpath(path)
            real_dir = self._real_dirs.get(directory)
            if real_dir is None:
                real_dir = self._real_dirs[directory] = os.path.realpath(directory)
            joined = os.path.join(real_dir, name)
            return os.path.realpath(joined) if os.path.islink(joined) else joined
        except OSError as exc:  # `/proc/1/root/...`: a link the gateway may not follow; where it leads is unknown
            self.opaque(f"path {short(path)} cannot be resolved ({exc.strerror or exc}): where it leads is not known")
            return os.path.normpath(path)

    def _count_words(self, words: int) -> None:
        """Words are counted before quote removal works on them, so a huge command stops early."""
        self.word_count += words
        if self.word_count > MAX_WORDS:
            self.opaque(f"more than {MAX_WORDS} words: the rest is not analysed")
            raise Stop


def unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))
