"""The helpers handlers state file facts with: options, where a word points, reads, writes, deletes.

d.read(word, call)                   # a file the command reads (a glob: every file it matches)
d.write(word, call, modify=True)     # a write ("writes" if it exists, else "creates")
d.delete(word, call, recursive=True)
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

from gateway.effects.shell.call import Call
from gateway.effects.shell.globs import expand_glob, list_tree, literal_prefix, unescape
from gateway.effects.shell.options import Opts, parse_options
from gateway.effects.shell.walk.host_facts import HostFacts
from gateway.effects.shell.words import ASSIGNMENT, Word, names, short
from gateway.errors import InvalidArguments

__all__ = ["DEV_NET", "PathFacts", "is_stream"]

DEV_NET = re.compile(r"^/dev/(tcp|udp)/([^/]+)/([^/]*)$")


# Streams, not files: writing to them changes nothing on disk. Only these exact names: any other path
# under /dev/fd or /proc (`/dev/fd/../../etc/passwd`) is resolved like every other path.
_STREAMS = names("/dev/null /dev/stdin /dev/stdout /dev/stderr /dev/tty /dev/zero -")
_STREAM_FD = re.compile(r"^/(?:dev|proc/self)/fd/[0-9]+$")


def is_stream(value: str) -> bool:
    """``-``, /dev/null, /dev/std*, /dev/tty, /dev/zero and /dev/fd/N, /proc/self/fd/N exactly."""
    return value in _STREAMS or _STREAM_FD.match(value) is not None


class PathFacts(HostFacts):
    """File facts: options parsed getopt-style, paths located, globs expanded, reads/writes/deletes noted."""

    def options(
        self,
        call: Call,
        short_opts: str = "",
        long: str = "",
        known: str = "",
        optional: str = "",
        stop: bool = False,
        args: list[Word] | None = None,
    ) -> Opts:
        """getopt-style parsing (see ``options.parse_options``); a non-literal word that looks like an
        option is opaque: it could be any option."""
        opts = parse_options(call.args if args is None else args, short_opts, long, known, optional, stop)
        for word in opts.doubts:
            self.opaque(f"{call.name}: option {short(word.raw)} is not literal ({word.why})")
        return opts

    def locate(self, word: Word, what: str) -> Path | None:
        """Where a path word points, or None (with an opaque reason when that is a doubt)."""
        if not word.literal:
            self.opaque(f"{what}: path {short(word.raw)} is not literal ({word.why})")
            return None
        value = word.value
        if value == "":
            return None
        if not value.startswith("/") and self.cwd is None:
            self.opaque(f"{what}: relative path {short(value)} after a cd that could not be followed")
            return None
        try:
            return self._locate(value)
        except InvalidArguments as exc:
            self.opaque(f"{what}: path {short(value)}: {exc.message}")
            return None

    def quiet_locate(self, word: Word) -> Path | None:
        """Where a word points when that is plain to see; None (and no opaque reason) otherwise."""
        if not word.literal or word.glob or not word.value or (self.cwd is None and not word.value.startswith("/")):
            return None
        try:
            return self._locate(word.value)
        except InvalidArguments:
            return None

    def matches(self, word: Word, call: Call) -> list[Path]:
        """The files an unquoted glob names now (bash expands it before the program runs), symlinks followed."""
        if not (word.glob and word.literal) or self.cwd is None:
            return []
        # the escaped pattern, unless a handler rewrote the value (find's {} -> root)
        pattern = word.pattern if word.pattern and unescape(word.pattern) == word.value else word.value
        if not self.ws.contains(Path(os.path.realpath(self.cwd / literal_prefix(pattern)))):
            # outside the workspace (tier 3 whatever it matches): the gateway does not list other people's
            # directories (its own state, other worktrees) into a decision an agent reads
            return []
        found = expand_glob(pattern, self.cwd)
        if found is None:
            self.opaque(f"{call.name}: glob {short(word.value)} matches more files than the analysis follows")
            return []
        return [Path(os.path.realpath(p)) for p in found]

    def _note(self, call: Call, paths: Iterable[Path], kind: str) -> None:
        """Record paths for the whole call (``kind`` is an Effects list) and for the command itself."""
        own = {"reads": "reads", "writes": "writes", "creates": "writes"}.get(kind, "deletes")
        for path in paths:
            shown = self.display(path)
            getattr(self, kind).append(shown)
            getattr(call.facts, own).append(shown)

    def read(self, word: Word, call: Call, expand: bool = True) -> Path | None:
        """A file the command reads; a glob reads every file it matches (``expand=False`` for programs
        that only look at names, like ls)."""
        if word.stream or (word.literal and is_stream(word.value)):
            return None
        path = self.locate(word, call.name)
        if path is not None:
            self._note(call, [path, *(self.matches(word, call) if expand else [])], "reads")
        return path

    def read_tree(self, word: Word, call: Call, hidden: bool = True, follow: bool = False) -> None:
        """A recursive read of file contents (grep -r, tar c): the directory and the files under it
        (``follow``: symbolic links met on the way are followed, as grep -R does)."""
        path = self.read(word, call)
        for root in [path, *self.matches(word, call)] if path is not None else []:
            if root.is_dir() and self.ws.contains(root):
                found = list_tree(root, hidden, follow)
                self._note(call, [Path(os.path.realpath(p)) for p in found], "reads")

    def write(self, word: Word, call: Call, modify: bool = False) -> Path | None:
        """A write: ``writes`` if the path exists (or is a glob, or ``modify``), else ``creates``."""
        if word.stream or (word.literal and is_stream(word.value)):
            return None
        net = DEV_NET.match(word.value) if word.literal else None
        if net:
            self.host(net.group(2), call.name)
            return None
        path = self.locate(word, call.name)
        if path is None:
            return None
        existing = modify or word.glob or os.path.lexists(path)
        self._note(call, [path, *self.matches(word, call)], "writes" if existing else "creates")
        if call.taints:
            self.tainted.add(path)
        return path

    def delete(self, word: Word, call: Call, recursive: bool = False) -> None:
        """A delete; a recursive one or a glob (mass deletion, pattern kept as text) is a recursive delete."""
        path = self.locate(word, call.name)
        if path is not None:
            kind = "recursive_deletes" if recursive or word.glob else "deletes"
            self._note(call, [path, *self.matches(word, call)], kind)

    def unknown_paths(self, words: list[Word], call: Call) -> None:
        """Path-like words of a program the analysis does not follow: what it may touch, access unknown.

        An operand with a "/" or "..", a glob (with the files it matches), or the value of
        ``--opt=path``, ``-Xpath`` or ``NAME=path``."""
        for word in words:
            if not word.literal or word.stream:
                continue
            value = word.value
            if value.startswith("--") or ASSIGNMENT.match(value):
                value = value.partition("=")[2]
            elif value.startswith("-") and len(value) > 2 and value[1].isalpha():
                value = value[2:]
            elif value.startswith("-"):
                continue
            if not ("/" in value or value == ".." or word.glob) or "://" in value or is_stream(value):
                continue
            candidate = replace(word, value=value)
            path = self.quiet_locate(replace(candidate, glob=False))
            if path is not None:
                found = [path, *self.matches(candidate, call)] if candidate.glob else [path]
                call.facts.paths.extend(self.display(p) for p in found)

    def is_dir(self, word: Word) -> bool:
        path = self.quiet_locate(word)
        return path is not None and path.is_dir()

    def in_workspace(self, word: Word) -> bool:
        path = self.quiet_locate(word)
        return path is not None and self.ws.contains(path)

    def is_tainted(self, word: Word) -> bool:
        return self.quiet_locate(word) in self.tainted
