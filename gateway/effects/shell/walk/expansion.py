"""Words as bash expands them: quote removal, $HOME/$PWD, tilde, brace and glob marks; and the
substitutions inside them, walked first (they run first).

    word = d._word(node, ctx)   # Word(value="src/a b", literal=True) for `src/"a b"`
"""

from __future__ import annotations

import os
import re
from dataclasses import replace

from tree_sitter import Node

from gateway.effects.shell.call import Ctx
from gateway.effects.shell.globs import escape
from gateway.effects.shell.walk.path_facts import PathFacts
from gateway.effects.shell.walk.state import MAX_NESTING
from gateway.effects.shell.words import (
    BRACE,
    GLOB,
    Word,
    ansi_c,
    dq_unescape,
    has_unparsed_subst,
    names,
    short,
    text,
    unquote_bare,
)

__all__ = ["Expansion"]

_LEAF_TEXT_TYPES = names("word string_content extglob_pattern regex")
# A word with no quoting, expansion, glob, brace or tilde: its value is its text.
_PLAIN_WORD = re.compile(r"[A-Za-z0-9_./:=@%+,-]+")


class Expansion(PathFacts):
    """Quote removal and expansion of words; command and process substitutions walked."""

    def _scan(self, node: Node, ctx: Ctx, heredoc: bool = False) -> None:
        """Walk every substitution under ``node`` (iteratively: expressions nest deeply); check expansions."""
        stack = [node]
        while stack:
            current = stack.pop()
            kind = current.type
            if kind == "command_substitution":
                self._subst(current, ctx, "heredoc" if heredoc else "subst")
                continue
            if kind == "process_substitution":
                self._subst(current, ctx, "procsubst")
                continue
            if kind in ("simple_expansion", "expansion"):
                self._check_expansion(current)
            elif kind in _LEAF_TEXT_TYPES and has_unparsed_subst(text(current)):
                self.opaque(f"command substitution the parser did not separate: {short(text(current))}")
            if current.child_count:
                stack.extend(reversed(current.children))

    def _check_expansion(self, node: Node) -> None:
        value = text(node)
        if any(c.type == "variable_name" and text(c) == "IFS" for c in node.children):
            self.opaque(f"$IFS expansion changes how words split: {short(value)}")
        if value.endswith("@P}"):
            self.opaque(f"prompt expansion can run commands: {short(value)}")

    def _subst(self, node: Node, ctx: Ctx, via: str) -> None:
        if ctx.depth + 1 > MAX_NESTING:
            self.opaque(f"nesting deeper than {MAX_NESTING} levels of substitutions or wrappers")
            return
        inner = replace(ctx, via=via, depth=ctx.depth + 1, nest=ctx.nest + 1)
        if text(node).startswith(">("):
            # >(cmd) reads what the outer command writes: data we cannot see
            inner = replace(inner, stdin="pipe", stdin_text=None)
        saved = self.cwd
        self._block(node, inner)
        self.cwd = saved

    def _word(self, node: Node, ctx: Ctx) -> Word:
        """Quote removal for one word; substitutions inside it are walked first (they run first)."""
        if node.type == "word":
            value = text(node)
            if _PLAIN_WORD.fullmatch(value):  # most words: nothing to remove, expand or run
                return Word(value=value, raw=value)
        start = len(self.commands)
        self._scan(node, ctx)
        pieces: list[tuple[str, bool]] = []
        whys: list[str] = []
        self._pieces(node, pieces, whys)
        stream = node.type == "process_substitution"
        return self._make_word(text(node), pieces, whys, self._tainted_since(start), stream)

    def _pieces(self, node: Node, out: list[tuple[str, bool]], whys: list[str]) -> None:
        kind = node.type
        value = text(node)
        if kind in ("word", "extglob_pattern"):
            pieces, why = unquote_bare(value)
            out.extend(pieces)
            whys.extend([why] if why else [])
        elif kind == "number":
            out.append((value, False))
        elif kind == "raw_string":
            out.append((value[1:-1], True))
        elif kind == "ansi_c_string":
            out.append((ansi_c(value[2:-1]), True))
        elif kind == "string":
            self._dq_pieces(node, out, whys)
        elif kind in ("translated_string", "concatenation", "command_name"):
            end: int | None = None
            for child in node.children:
                if end is not None and child.start_byte != end:
                    whys.append(f"unexpected gap in word {short(value)}")
                end = child.end_byte
                if child.is_named:
                    self._pieces(child, out, whys)
                elif kind != "translated_string":
                    out.append((text(child), False))
                    whys.append(f"unsupported syntax {short(text(child))}")
        elif kind in ("simple_expansion", "expansion"):
            known = self._known_variable(node)
            out.append((value if known is None else known, known is not None))
            whys.extend([f"variable expansion {short(value)}"] if known is None else [])
        else:
            out.append((value, False))
            whys.append(f"{kind.replace('_', ' ')} {short(value)}")

    def _dq_pieces(self, node: Node, out: list[tuple[str, bool]], whys: list[str]) -> None:
        """A "..." string, rebuilt from the source: tree-sitter leaves some text (newlines) between children."""
        source = node.text or b""
        base = node.start_byte
        pos = 1
        literal: list[str] = []

        def flush() -> None:
            if literal:
                out.append((dq_unescape("".join(literal)), True))
                literal.clear()

        for child in node.named_children:
            begin, end = child.start_byte - base, child.end_byte - base
            if begin > pos:
                literal.append(source[pos:begin].decode("utf-8", errors="replace"))
            if child.type == "string_content":
                literal.append(text(child))
            else:
                flush()
                known = self._known_variable(child) if child.type in ("simple_expansion", "expansion") else None
                out.append((text(child) if known is None else known, True))
                if known is None:
                    whys.append(f"{child.type.replace('_', ' ')} {short(text(child))}")
            pos = end
        closing = len(source) - 1 if source.endswith(b'"') and len(source) > 1 else len(source)
        if closing > pos:
            literal.append(source[pos:closing].decode("utf-8", errors="replace"))
        flush()

    def _known_variable(self, node: Node) -> str | None:
        """$HOME and $PWD have known values; every other expansion depends on the run."""
        shape = [c.type for c in node.children]
        if shape not in (["$", "variable_name"], ["${", "variable_name", "}"]):
            return None
        name = text(node.named_children[0])
        if name == "HOME":
            return self.home
        if name == "PWD" and self.cwd is not None:
            return str(self.cwd)
        return None

    def _make_word(
        self, raw: str, pieces: list[tuple[str, bool]], whys: list[str], tainted: bool, stream: bool = False
    ) -> Word:
        value = "".join(piece for piece, _ in pieces)
        bare = "".join(piece if not quoted else "\x00" * len(piece) for piece, quoted in pieces)
        pattern = "".join(escape(piece) if quoted else piece for piece, quoted in pieces)
        if BRACE.search(bare):
            whys.append(f"brace expansion in {short(raw)}")
        if pieces and not pieces[0][1] and pieces[0][0].startswith("~"):
            expanded = self._tilde(pieces[0][0])
            if expanded is None:
                whys.append(f"tilde expansion {short(pieces[0][0])}")
            else:
                value = expanded + value[len(pieces[0][0]) :]
                pattern = escape(expanded) + pattern[len(pieces[0][0]) :]
        glob = bool(GLOB.search(bare))
        return Word(
            value=value,
            raw=raw,
            literal=not whys,
            glob=glob,
            why="; ".join(whys),
            tainted=tainted,
            stream=stream,
            pattern=pattern if glob else "",
        )

    def _tilde(self, first: str) -> str | None:
        prefix, slash, rest = first.partition("/")
        if prefix == "~":
            return self.home + slash + rest
        if prefix[1:2] in ("+", "-"):
            return None
        expanded = os.path.expanduser(prefix)
        return None if expanded == prefix else expanded + slash + rest
