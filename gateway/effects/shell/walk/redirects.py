"""Redirections: files read and written, here-documents and here-strings (their literal text is a
command's stdin), /dev/tcp sockets, and fds duplicated.

    d._redirects(nodes, ctx, pipe_tail, list_tail)   # [Redir(kind="out", path=..., shown=("out.txt",))]
"""

from __future__ import annotations

import re

from tree_sitter import Node

from gateway.effects.shell.call import Call, Ctx, Redir
from gateway.effects.shell.walk.expansion import Expansion
from gateway.effects.shell.walk.nodes import REDIRECT_TYPES, STATEMENT_TYPES, gaps
from gateway.effects.shell.walk.path_facts import DEV_NET, is_stream
from gateway.effects.shell.words import Word, has_unparsed_subst, heredoc_unescape, short, text
from gateway.types import Redirect

__all__ = ["Redirections"]


class Redirections(Expansion):
    """The redirections of a statement, as ``Redir``: what each reads, writes or feeds to stdin."""

    def _redirects(self, nodes: list[Node], ctx: Ctx, pipe_tail: list[Node], list_tail: list[Node]) -> list[Redir]:
        out: list[Redir] = []
        carry: int | None = None  # an fd the parser attached to the previous redirection
        for node in nodes:
            if node.type == "file_redirect":
                redir, carry = self._file_redirect(node, ctx, carry)
                out.append(redir)
            else:
                carry = None
                out.extend(self._redirect(node, ctx, pipe_tail, list_tail))
        return out

    def _redirect(self, node: Node, ctx: Ctx, pipe_tail: list[Node], list_tail: list[Node]) -> list[Redir]:
        if node.type == "file_redirect":
            return [self._file_redirect(node, ctx, None)[0]]
        if node.type == "herestring_redirect":
            return [self._herestring(node, ctx)]
        return self._heredoc(node, ctx, pipe_tail, list_tail)

    def _file_redirect(self, node: Node, ctx: Ctx, fd: int | None) -> tuple[Redir, int | None]:
        """One ``[fd]op target``; returns it and an fd the parser glued onto it that belongs to the next one."""
        op = ""
        targets: list[Node] = []
        for child in node.children:
            if child.type == "file_descriptor":
                fd = int(text(child)) if text(child).isdigit() else None
            elif not child.is_named or child.type == "ERROR":
                op += text(child)  # `3<>` parses as "<" plus an ERROR ">" (already opaque): keep "<>"
            else:
                targets.append(child)
        carry: int | None = None
        if len(targets) > 1 and all(t.type == "number" for t in targets[1:]):
            # `>a 0<b` parses as target "a" plus a number "0" that is the next redirection's fd
            carry = int(text(targets[-1]))
            targets = targets[:1]
        if len(targets) != 1:
            self.opaque(f"redirection without a single target: {short(text(node))}")
            return Redir(Redirect(op=op, target=text(node), fd=fd), kind="dup"), carry
        return self._redirect_target(targets[0], op, fd, ctx), carry

    def _redirect_target(self, target: Node, op: str, fd: int | None, ctx: Ctx) -> Redir:
        if op in (">&", "<&") and (target.type == "number" or text(target) == "-"):
            reads_stdin = op == "<&" or fd == 0
            return Redir(Redirect(op=op, target=text(target), fd=fd), kind="dup" if reads_stdin else "out")
        reading = op in ("<", "<&")
        kind = "in" if reading else "out"
        if target.type == "process_substitution":
            start = len(self.commands)
            self._subst(target, ctx, "procsubst")
            redirect = Redirect(op=op, target=text(target), fd=fd)
            return Redir(redirect, kind=kind, tainted=self._tainted_since(start))
        word = self._word(target, ctx)
        redirect = Redirect(op=op, target=word.value, fd=fd)
        if not word.literal:
            self.opaque(f"redirection target {short(word.raw)} is not literal ({word.why})")
            return Redir(redirect, kind=kind, tainted=word.tainted)
        net = DEV_NET.match(word.value)
        if net:
            self.host(net.group(2), "bash")
            return Redir(redirect, kind="socket", tainted=True)
        if is_stream(word.value):
            return Redir(redirect, kind=kind)
        taints = ctx.stdin_tainted or self.registry.emits_untrusted([word.value])
        call = Call(name="redirect", words=[word], ctx=ctx, taints=taints)
        if reading:
            path = self.read(word, call)
            return Redir(redirect, kind="in", path=path, tainted=path in self.tainted, shown=tuple(call.facts.reads))
        path = self.write(word, call, modify=op == "<>")
        return Redir(redirect, kind="out", path=path, shown=tuple(call.facts.writes))

    def _herestring(self, node: Node, ctx: Ctx) -> Redir:
        values = [self._word(c, ctx) for c in node.named_children]
        word = values[0] if len(values) == 1 else Word(value=text(node), raw=text(node), literal=False)
        body = word.value + "\n" if word.literal else None
        return Redir(Redirect(op="<<<", target=word.value), kind="herestring", text=body, tainted=word.tainted)

    def _heredoc(self, node: Node, ctx: Ctx, pipe_tail: list[Node], list_tail: list[Node]) -> list[Redir]:
        op, delimiter, quoted = "<<", "", False
        body: Node | None = None
        nested: list[Redir] = []
        after_operator = False
        for child in node.children:
            kind = child.type
            if not child.is_named:
                op = kind if kind in ("<<", "<<-") else op
                after_operator = kind in ("&&", "||", ";", "&")
            elif kind == "heredoc_start":
                raw = text(child)
                quoted = any(q in raw for q in "'\"\\")
                delimiter = re.sub(r"['\"\\]", "", raw)
            elif kind == "heredoc_body":
                body = child
            elif kind in REDIRECT_TYPES:
                nested.extend(self._redirect(child, ctx, pipe_tail, list_tail))
            elif kind == "pipeline" and not after_operator:
                pipe_tail.append(child)
            elif kind in STATEMENT_TYPES:
                list_tail.append(child)
            elif kind != "heredoc_end":
                self.opaque(f"unsupported heredoc layout ({kind}): {short(text(node))}")
        content = self._heredoc_text(body, ctx, quoted, strip_tabs=op == "<<-")
        return [Redir(Redirect(op=op, target=delimiter), kind="heredoc", text=content), *nested]

    def _heredoc_text(self, body: Node | None, ctx: Ctx, quoted: bool, strip_tabs: bool) -> str | None:
        """The literal text a heredoc feeds, or None when the shell expands something in it."""
        if body is None:
            return ""
        content = text(body)
        if not quoted:
            # an unquoted body is expanded: its $(..) run when the heredoc is read
            self._scan(body, ctx, heredoc=True)
            if has_unparsed_subst(gaps(body)):
                self.opaque("heredoc body has a command substitution the parser did not separate")
            if any(c.type != "heredoc_content" for c in body.named_children) or "$" in content.replace("\\$", ""):
                return None
            content = heredoc_unescape(content)
        if strip_tabs:
            content = "\n".join(line.lstrip("\t") for line in content.split("\n"))
        return content
