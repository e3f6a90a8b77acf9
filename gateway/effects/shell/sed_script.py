"""A GNU sed script parser: what a script reads, writes and runs.

sed is a small language: ``r``/``R`` read files, ``w``/``W`` and the ``w`` flag of ``s`` write them,
``e`` and the ``e`` flag of ``s`` run commands. A regular expression over the script text misses
``1etouch x`` or ``s/a/b/w x``; this parser follows the grammar (addresses, ``!``, ``{}``, ``;`` and
newlines, ``s`` and ``y`` with any delimiter, ``a``/``i``/``c`` text, labels, comments), so it does
not. A script it cannot parse raises ``SedError`` (the caller treats it as opaque).

    parse_sed("s/a/b/w out.txt")      # SedEffects(reads=[], writes=["out.txt"], runs=[])
    parse_sed("1etouch /tmp/x")       # SedEffects(reads=[], writes=[], runs=["touch /tmp/x"])
"""

from __future__ import annotations

from dataclasses import dataclass, field


class SedError(ValueError):
    """The script is not one GNU sed would run (or not one this parser understands)."""


@dataclass
class SedEffects:
    reads: list[str] = field(default_factory=list)
    writes: list[str] = field(default_factory=list)
    runs: list[str] = field(default_factory=list)  # "" for a bare `e`: the pattern space runs as a command


_NO_ARGUMENT = set("=dDgGhHnNpPxzF")
_OPTIONAL_NUMBER = set("lLqQ")
_LABELLED = set("btT")
_TEXT = set("aic")
_FILE_COMMANDS = set("rRwW")
_S_FLAGS = set("gpiImMe0123456789")


def parse_sed(script: str) -> SedEffects:
    return _Parser(script).parse()


class _Parser:
    def __init__(self, script: str) -> None:
        self.s = script
        self.i = 0
        self.depth = 0
        self.out = SedEffects()

    # ---- low level ---------------------------------------------------------------------------------

    def peek(self) -> str:
        return self.s[self.i] if self.i < len(self.s) else ""

    def take(self) -> str:
        ch = self.peek()
        self.i += 1
        return ch

    def skip_blanks(self) -> None:
        while self.peek() in (" ", "\t"):
            self.i += 1

    def rest_of_line(self) -> str:
        end = self.s.find("\n", self.i)
        end = len(self.s) if end < 0 else end
        value = self.s[self.i : end]
        self.i = end
        return value

    # ---- grammar -----------------------------------------------------------------------------------

    def parse(self) -> SedEffects:
        while True:
            while self.peek() in (" ", "\t", "\n", ";"):
                self.i += 1
            if not self.peek():
                break
            self.command()
        if self.depth:
            raise SedError("unmatched {")
        return self.out

    def command(self) -> None:
        if self.peek() == "#":
            self.rest_of_line()  # a comment (`#n` on the first line is the same as -n)
            return
        self.address()
        self.skip_blanks()
        while self.peek() == "!":
            self.i += 1
            self.skip_blanks()
        cmd = self.take()
        if not cmd:
            raise SedError("missing command")
        if cmd == "{":
            self.depth += 1
            return
        if cmd == "}":
            if self.depth == 0:
                raise SedError("unexpected }")
            self.depth -= 1
            self.end_of_command()
            return
        if cmd == ":":
            self.skip_blanks()
            if not self.label():
                raise SedError('":" lacks a label')
            return
        if cmd in _NO_ARGUMENT:
            self.end_of_command()
        elif cmd in _OPTIONAL_NUMBER:
            self.skip_blanks()
            while self.peek().isdigit():
                self.i += 1
            self.end_of_command()
        elif cmd in _LABELLED:
            self.skip_blanks()
            self.label()
            self.end_of_command()
        elif cmd in _TEXT:
            self.text()
        elif cmd in _FILE_COMMANDS:
            name = self.filename()
            (self.out.reads if cmd in "rR" else self.out.writes).append(name)
        elif cmd == "e":
            self.skip_blanks()
            self.out.runs.append(self.rest_of_line())
        elif cmd == "s":
            self.substitute()
        elif cmd == "y":
            delimiter = self.delimiter()
            self.part(delimiter, regex=False)
            self.part(delimiter, regex=False)
            self.end_of_command()
        elif cmd == "v":
            self.skip_blanks()
            self.label()
            self.end_of_command()
        else:
            raise SedError(f"unknown command {cmd!r}")

    def end_of_command(self) -> None:
        """After a command: blanks, then the end, a newline, ";", "}" or a comment."""
        self.skip_blanks()
        ch = self.peek()
        if ch in ("", "\n", ";"):
            if ch:
                self.i += 1
        elif ch not in ("}", "#"):
            raise SedError(f"extra characters after command: {ch!r}")

    def label(self) -> str:
        start = self.i
        while self.peek() not in ("", "\n", ";", " ", "\t"):
            self.i += 1
        return self.s[start : self.i]

    def text(self) -> None:
        """a/i/c: `a\\` then lines (a trailing backslash continues them), or GNU's one-line `a text`."""
        self.skip_blanks()
        if self.peek() == "\\":
            self.i += 1
            if self.peek() == "\n":
                self.i += 1
        while self.i < len(self.s):
            ch = self.take()
            if ch == "\\":
                self.i += 1  # an escaped character, a newline included, is part of the text
            elif ch == "\n":
                break

    def filename(self) -> str:
        self.skip_blanks()
        name = self.rest_of_line()
        if not name:
            raise SedError("missing filename in r/R/w/W commands")
        return name

    def address(self) -> None:
        if not self.one_address():
            return
        self.skip_blanks()
        if self.peek() == ",":
            self.i += 1
            self.skip_blanks()
            if self.peek() in ("+", "~"):
                self.i += 1
                self.number()
            elif not self.one_address():
                raise SedError("unexpected ,")
        elif self.peek() == "~":
            self.i += 1
            self.number()

    def one_address(self) -> bool:
        ch = self.peek()
        if ch.isdigit():
            self.number()
            return True
        if ch == "$":
            self.i += 1
            return True
        if ch in ("/", "\\"):
            self.i += 1
            delimiter = "/" if ch == "/" else self.take()
            if delimiter in ("", "\n", "\\"):
                raise SedError("bad regex delimiter")
            self.part(delimiter)
            while self.peek() in ("I", "M"):
                self.i += 1
            return True
        return False

    def number(self) -> None:
        if not self.peek().isdigit():
            raise SedError("expected a number")
        while self.peek().isdigit():
            self.i += 1

    def delimiter(self) -> str:
        delimiter = self.take()
        if delimiter in ("", "\n", "\\"):
            raise SedError("bad delimiter")
        return delimiter

    def part(self, delimiter: str, regex: bool = True) -> None:
        """A regex or replacement up to the unescaped delimiter; in a regex, a bracket expression
        (``[/]``, ``[]x]``, ``[[:alpha:]/]``) may hold the delimiter, as GNU sed reads it."""
        while True:
            ch = self.take()
            if not ch:
                raise SedError("unterminated `s' or `y' command or address")
            if ch == "\\":
                if not self.take():
                    raise SedError("trailing backslash")
            elif ch == "[" and regex:
                self.bracket()
            elif ch == delimiter:
                return

    def bracket(self) -> None:
        if self.peek() == "^":
            self.i += 1
        if self.peek() == "]":
            self.i += 1
        while True:
            ch = self.take()
            if not ch or ch == "\n":
                raise SedError("unterminated bracket expression")
            if ch == "\\":
                self.i += 1
            elif ch == "[" and self.peek() in (":", ".", "="):
                end = self.s.find(self.peek() + "]", self.i + 1)
                if end < 0:
                    raise SedError("unterminated character class")
                self.i = end + 2
            elif ch == "]":
                return

    def substitute(self) -> None:
        delimiter = self.delimiter()
        self.part(delimiter)
        self.part(delimiter, regex=False)
        while True:
            ch = self.peek()
            if ch == "w":
                self.i += 1
                self.out.writes.append(self.filename())
                return
            if ch == "e":
                self.out.runs.append("")  # the pattern space after the substitution runs as a command
            if ch not in _S_FLAGS:
                break
            self.i += 1
        self.end_of_command()
