"""Shell words after quote removal, and the text helpers the walker and the handlers share.

Quote removal is done here, so ``r''m``, ``\\rm`` and ``$'\\x72m'`` all come out as ``rm``:

    Word.of("rm")                     # a literal word
    ansi_c("\\x72m")                  # "rm": the body of $'...'
    unquote_bare("e\\\\ f")           # ([("e", False), (" ", True), ("f", False)], "")
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from tree_sitter import Node

from gateway.linear_regex import linear


def names(text: str) -> frozenset[str]:
    """A set of names written as one space-separated string (keeps the long tables compact)."""
    return frozenset(text.split())


# "NAME=value" as a word: an assignment before a command, or an operand of env and sudo
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
# brace expansion ({a,b} or {1..3}) and glob characters, searched in the unquoted parts of a word only; by RE2:
# in `re` both are quadratic in the word ('{' and 16 KiB of '.' held the GIL, and every agent, for 3 s)
BRACE = linear(r"\{[^{}]*(?:,|\.\.)[^{}]*\}")
GLOB = linear(r"[*?]|\[[^\]]+\]")


@dataclass(frozen=True)
class Word:
    """One shell word after quote removal.

    ``literal`` is False when the value depends on the run (expansions, substitutions, brace expansion);
    then ``value`` is a best-effort rendering and ``why`` says what is unknown. ``glob`` marks unquoted
    ``*``, ``?`` or ``[..]``: the word may name many files. ``tainted`` marks a word whose substitutions
    print downloaded or decoded bytes. ``stream`` marks ``<(..)``/``>(..)``: a pipe whose commands are
    described on their own, so it is no file to read or write (but still no literal program text).
    """

    value: str
    raw: str
    literal: bool = True
    glob: bool = False
    why: str = ""
    tainted: bool = False
    stream: bool = False  # the whole word is a process substitution: a pipe, not a file
    pattern: str = ""  # for a glob: the value with its quoted glob characters escaped (``'*'x*`` -> ``[*]x*``)

    @staticmethod
    def of(value: str) -> Word:
        return Word(value=value, raw=value)

    def tail(self, start: int) -> Word:
        """The rest of this word from ``start`` (an attached option value such as ``-ofile``)."""
        return replace(self, value=self.value[start:])


def text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", errors="replace")


def short(value: str, limit: int = 60) -> str:
    """A quoted, shortened rendering for reasons: ``'rm -rf ...'``."""
    value = value.replace("\n", "\\n")
    return repr(value if len(value) <= limit else value[:limit] + "...")


def joined(words: list[Word]) -> Word:
    """Words joined by spaces, as eval and watch do before parsing them again."""
    value = " ".join(w.value for w in words)
    why = "; ".join(w.why for w in words if w.why)
    return Word(value, value, literal=all(w.literal for w in words), why=why, tainted=any(w.tainted for w in words))


def inside(directory: Word, source: Word) -> Word:
    """``dir/basename(source)``: where cp/mv/ln put a source inside a target directory."""
    name = source.value.rstrip("/").rsplit("/", 1)[-1]
    return Word(
        value=f"{directory.value.rstrip('/')}/{name}",
        raw=directory.raw,
        literal=directory.literal and source.literal,
        glob=directory.glob or source.glob,
        why=directory.why or source.why,
    )


def has_unparsed_subst(value: str) -> bool:
    """An unescaped backquote or ``$(`` inside text the parser called plain."""
    i = 0
    while i < len(value):
        ch = value[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "`" or (ch == "$" and value[i + 1 : i + 2] == "("):
            return True
        i += 1
    return False


def subscript_with_subst(value: str) -> bool:
    """An array subscript holding a command substitution (`a[$(id)]`): bash runs it when it evaluates the
    subscript (`[[ -v ]]`, `test -v`, `printf -v`, `read`, `unset`, arithmetic)."""
    return "[" in value and has_unparsed_subst(value)


def unquote_bare(value: str) -> tuple[list[tuple[str, bool]], str]:
    """Backslash removal in an unquoted word: pieces as (text, quoted), and why it is not literal ("")."""
    pieces: list[tuple[str, bool]] = []
    buf: list[str] = []
    why = ""
    i = 0
    while i < len(value):
        ch = value[i]
        if ch == "\\" and i + 1 < len(value):
            if buf:
                pieces.append(("".join(buf), False))
                buf = []
            if value[i + 1] != "\n":  # backslash-newline is a line continuation: it disappears
                pieces.append((value[i + 1], True))
            i += 2
            continue
        if ch == "`" or (ch == "$" and i + 1 < len(value) and (value[i + 1].isalnum() or value[i + 1] in "_{(@*#?$!-")):
            why = f"expansion the parser did not separate in {short(value)}"
        buf.append(ch)
        i += 1
    if buf:
        pieces.append(("".join(buf), False))
    return pieces, why


def dq_unescape(value: str) -> str:
    """Inside double quotes a backslash only escapes $ ` " \\ and newline."""
    return re.sub(r'\\([$`"\\\n])', lambda m: "" if m.group(1) == "\n" else m.group(1), value)


def heredoc_unescape(value: str) -> str:
    """In an unquoted heredoc a backslash escapes $ ` \\ and newline (not ")."""
    return re.sub(r"\\([$`\\\n])", lambda m: "" if m.group(1) == "\n" else m.group(1), value)


_ANSI_SIMPLE = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_ANSI_SIMPLE |= {"v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}
_ANSI_WIDTH = {"x": 2, "u": 4, "U": 8}


def ansi_c(body: str) -> str:
    """Decode the escapes of a ``$'...'`` string as bash does."""
    out: list[str] = []
    i = 0
    while i < len(body):
        ch = body[i]
        nxt = body[i + 1] if i + 1 < len(body) else ""
        if ch != "\\" or not nxt:
            out.append(ch)
            i += 1
        elif nxt in _ANSI_SIMPLE:
            out.append(_ANSI_SIMPLE[nxt])
            i += 2
        elif nxt in "01234567":
            digits = re.match(r"[0-7]{1,3}", body[i + 1 :])
            assert digits is not None
            out.append(chr(int(digits.group(), 8) & 0xFF))
            i += 1 + len(digits.group())
        elif nxt in _ANSI_WIDTH:
            digits = re.match(rf"[0-9A-Fa-f]{{1,{_ANSI_WIDTH[nxt]}}}", body[i + 2 :])
            code = int(digits.group(), 16) if digits else -1
            out.append("\\" + nxt if code < 0 else chr(code) if code < 0x110000 else "\ufffd")
            i += 2 + (len(digits.group()) if digits else 0)
        elif nxt == "c" and i + 2 < len(body):
            out.append(chr(ord(body[i + 2]) & 0x1F))
            i += 3
        else:
            out.append("\\" + nxt)
            i += 2
    return "".join(out)
