"""A small awk lexer: what an awk program writes, reads and runs.

awk prints to files (``print > "f"``, ``>>``), pipes to commands (``print | "sh"``, ``"cmd" | getline``,
``|&``), runs them (``system()``), reads files (``getline < "f"``), reads the environment (ENVIRON,
PROCINFO) and loads code (``@load``, ``@include``, indirect ``@f()`` calls). The lexer knows string
literals, regex literals and comments, so a ``}``, ``>`` or ``|`` inside them is not mistaken for code.

    scan_awk('{print "}" > "/tmp/x"}')   # AwkEffects(writes=["/tmp/x"], ...)
    scan_awk('BEGIN{system("id")}')      # AwkEffects(doubts=["calls system()"], ...)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field


class AwkError(ValueError):
    """The program could not be tokenised (an unterminated string or regex)."""


@dataclass
class AwkEffects:
    reads: list[str] = field(default_factory=list)
    writes: list[str] = field(default_factory=list)
    runs: list[str] = field(default_factory=list)  # command text piped to or from, when literal
    doubts: list[str] = field(default_factory=list)  # what cannot be followed (opaque)


@dataclass(frozen=True)
class _Token:
    kind: str  # name | number | string | regex | op | newline | funcname
    value: str


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NUMBER = re.compile(r"(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|0[xX][0-9a-fA-F]+")
_OPERATORS = ("|&", "||", "&&", ">>", ">=", "<=", "==", "!=", "++", "--", "+=", "-=", "*=", "/=", "%=", "^=", "**")
# after these a "/" divides; after anything else it starts a regex literal
_OPERAND_END = {"name", "number", "string", "regex"}
_STATEMENT_END = {";", "\n", "}", "{"}
_BEFORE_REGEX = {"print", "printf", "return", "in", "case"}  # keywords, not operands: a regex follows


def tokenize(program: str) -> list[_Token]:
    tokens: list[_Token] = []
    i = 0
    n = len(program)
    while i < n:
        ch = program[i]
        if ch in " \t\r":
            i += 1
        elif ch == "\\" and program[i + 1 : i + 2] == "\n":
            i += 2  # a continued line
        elif ch == "\n":
            tokens.append(_Token("newline", "\n"))
            i += 1
        elif ch == "#":
            while i < n and program[i] != "\n":
                i += 1
        elif ch == '"':
            end = _closing(program, i + 1, '"')
            tokens.append(_Token("string", _unescape(program[i + 1 : end])))
            i = end + 1
        elif ch == "/" and not _divides(tokens):
            end = _closing(program, i + 1, "/")
            tokens.append(_Token("regex", program[i + 1 : end]))
            i = end + 1
        elif ch == "@":
            name = _NAME.match(program, i + 1)
            tokens.append(_Token("at", name.group() if name else ""))
            i = name.end() if name else i + 1
        elif (name := _NAME.match(program, i)) is not None:
            tokens.append(_Token("name", name.group()))
            i = name.end()
        elif (number := _NUMBER.match(program, i)) is not None:
            tokens.append(_Token("number", number.group()))
            i = number.end()
        else:
            op = next((o for o in _OPERATORS if program.startswith(o, i)), ch)
            tokens.append(_Token("op", op))
            i += len(op)
    return tokens


def _divides(tokens: list[_Token]) -> bool:
    if not tokens:
        return False
    last = tokens[-1]
    if last.kind == "name" and last.value in _BEFORE_REGEX:
        return False
    return last.kind in _OPERAND_END or (last.kind == "op" and last.value in (")", "]", "$", "++", "--"))


def _closing(program: str, start: int, quote: str) -> int:
    i = start
    in_bracket = False
    while i < len(program):
        ch = program[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "\n":
            break
        if quote == "/" and ch == "[":
            in_bracket = True
        elif quote == "/" and ch == "]":
            in_bracket = False
        elif ch == quote and not in_bracket:
            return i
        i += 1
    raise AwkError("unterminated string" if quote == '"' else "unterminated regex")


def _unescape(value: str) -> str:
    return re.sub(
        r"\\(.)", lambda m: {"n": "\n", "t": "\t", "\\": "\\", '"': '"', "/": "/"}.get(m.group(1), m.group(0)), value
    )


def scan_awk(program: str) -> AwkEffects:
    tokens = tokenize(program)
    out = AwkEffects()
    printing = False  # inside a print/printf statement
    depth = 0  # parentheses inside it: `print (a > b)` compares, `print a > b` redirects
    for k, token in enumerate(tokens):
        kind, value = token.kind, token.value
        nxt = tokens[k + 1] if k + 1 < len(tokens) else None
        if kind == "at":
            out.doubts.append(f"@{value} loads code or calls a function by name" if value else "@ indirect call")
        elif kind == "name" and value == "system":
            out.doubts.append("calls system()")
        elif kind == "name" and value in ("ENVIRON", "PROCINFO"):
            out.doubts.append(f"reads {value}")
        elif kind == "name" and value in ("ARGV", "ARGC"):
            out.doubts.append(f"uses {value}: the files it reads may change while it runs")
        elif kind == "name" and value in ("print", "printf"):
            printing, depth = True, 0
        elif kind == "name" and value == "getline":
            _getline(tokens, k, out)
        elif kind == "op" and value in ("|", "|&"):
            _pipe(tokens, k, out)
        elif kind == "op" and value in ("(", "["):
            depth += 1
        elif kind == "op" and value in (")", "]"):
            depth -= 1
        elif kind == "op" and value in (">", ">>") and printing and depth <= 0:
            target = _literal_target(tokens, k + 1)
            if target is None:
                out.doubts.append("prints to a file whose name is not literal")
            else:
                out.writes.append(target)
        if (kind == "op" and value in _STATEMENT_END) or kind == "newline" or (nxt is None):
            printing = False
    return out


def _literal_target(tokens: list[_Token], k: int) -> str | None:
    """A redirection target that is one string literal ending the statement, else None."""
    if k >= len(tokens) or tokens[k].kind != "string":
        return None
    after = tokens[k + 1] if k + 1 < len(tokens) else None
    if after is None or after.kind == "newline" or (after.kind == "op" and after.value in (";", "}")):
        return tokens[k].value
    return None


def _pipe(tokens: list[_Token], k: int, out: AwkEffects) -> None:
    """`print | "cmd"`, `"cmd" | getline`, `|&` (a coprocess): a command runs."""
    before = tokens[k - 1] if k > 0 else None
    after = tokens[k + 1] if k + 1 < len(tokens) else None
    if after is not None and after.kind == "string":
        out.runs.append(after.value)
    elif before is not None and before.kind == "string" and after is not None and after.value == "getline":
        out.runs.append(before.value)
    out.doubts.append("runs a command through a pipe" if tokens[k].value == "|" else "runs a coprocess (|&)")


def _getline(tokens: list[_Token], k: int, out: AwkEffects) -> None:
    """`getline < "file"` (or `getline var < "file"`) reads a file; plain getline reads the next record."""
    j = k + 1
    while j < len(tokens) and j <= k + 6:
        token = tokens[j]
        if token.kind == "newline" or (token.kind == "op" and token.value in (";", "}", "{", ")", "&&", "||")):
            return
        if token.kind == "op" and token.value == "<":
            target = tokens[j + 1] if j + 1 < len(tokens) else None
            if target is not None and target.kind == "string":
                out.reads.append(target.value)
            else:
                out.doubts.append("getline reads a file whose name is not literal")
            return
        j += 1
