"""Statements: lists, pipelines, subshells, groups, conditionals and loops, functions, assignments,
declarations, and statements with redirections; each walked in execution order, cd tracked.

    d._stmt(node, ctx, [])   # `cd src && make > log`: make runs in src, its output goes to src/log
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace

from tree_sitter import Node

from gateway.effects.shell.call import Ctx, Redir
from gateway.effects.shell.walk.environment import env_doubt
from gateway.effects.shell.walk.nodes import INPUT_KINDS, REDIRECT_TYPES, STATEMENT_TYPES, VALUE_TYPES, flatten
from gateway.effects.shell.walk.redirects import Redirections
from gateway.effects.shell.walk.state import MAX_STRUCTURE
from gateway.effects.shell.words import Word, has_unparsed_subst, short, subscript_with_subst, text

__all__ = ["Statements"]


class Statements(Redirections):
    """The walk over statements; simple commands go to ``_command`` (commands.py)."""

    def _stmt(self, node: Node, ctx: Ctx, redirs: list[Redir]) -> None:
        kind = node.type
        if kind == "comment" or node.is_missing:  # a MISSING node is a syntax error, already opaque
            return
        if kind not in STATEMENT_TYPES:
            if kind not in VALUE_TYPES:
                self.opaque(f"unsupported shell construct {kind}: {short(text(node))}")
            self._scan(node, ctx)
            return
        _STATEMENTS[kind](self, node, ctx, redirs)

    def _block(self, node: Node, ctx: Ctx, redirs: list[Redir] | None = None) -> None:
        """The named children of ``node`` in order; ``cmd &`` runs in the background (in a subshell)."""
        children = node.children
        for i, child in enumerate(children):
            if not child.is_named or child.type == "comment":
                continue
            if i + 1 < len(children) and children[i + 1].type == "&":
                saved = self.cwd
                self._stmt(child, replace(ctx, via="background"), list(redirs or []))
                self.cwd = saved
            else:
                self._stmt(child, ctx, list(redirs or []))

    def _nested(self, ctx: Ctx) -> Ctx | None:
        if ctx.nest + 1 > MAX_STRUCTURE:
            self.opaque(f"shell structure nested deeper than {MAX_STRUCTURE} levels")
            return None
        return replace(ctx, nest=ctx.nest + 1)

    def _list(self, node: Node, ctx: Ctx, redirs: list[Redir]) -> None:
        for item in flatten(node, "list"):
            self._stmt(item, ctx, redirs)

    def _pipeline(self, node: Node, ctx: Ctx, redirs: list[Redir]) -> None:
        self._pipe([(element, []) for element in flatten(node, "pipeline")], ctx, redirs)

    def _pipe(self, elements: list[tuple[Node, list[Redir]]], ctx: Ctx, outer: list[Redir]) -> None:
        """Pipeline elements in order; once one prints downloaded or decoded bytes, every later stdin is tainted.

        Redirections of the whole pipeline: input ones feed the first command, the others the last one."""
        first, *_ = elements
        elements[0] = (first[0], [r for r in outer if r.kind in INPUT_KINDS] + first[1])
        last = elements[-1]
        elements[-1] = (last[0], [r for r in outer if r.kind not in INPUT_KINDS] + last[1])
        tainted = ctx.stdin_tainted
        for i, (element, redirs) in enumerate(elements):
            element_ctx = ctx
            if i > 0:
                element_ctx = replace(ctx, via="pipe", stdin="pipe", stdin_text=None, stdin_tainted=tainted)
            start = len(self.commands)
            saved = self.cwd  # every element runs in a subshell
            self._stmt(element, element_ctx, redirs)
            self.cwd = saved
            tainted = tainted or self._tainted_since(start)

    def _subshell(self, node: Node, ctx: Ctx, redirs: list[Redir]) -> None:
        inner = self._nested(ctx)
        if inner is None:
            return
        saved = self.cwd
        self._block(node, inner, redirs)
        self.cwd = saved

    def _group(self, node: Node, ctx: Ctx, redirs: list[Redir]) -> None:
        inner = self._nested(ctx)
        if inner is not None:
            self._block(node, inner, redirs)

    def _conditional(self, node: Node, ctx: Ctx, redirs: list[Redir]) -> None:
        """if / while / for / case / function bodies: afterwards, a cd inside may or may not have happened."""
        inner = self._nested(ctx)
        if inner is None:
            return
        before = self.cwd
        self._block(node, inner, redirs)
        if self.cwd != before:
            self.cwd = None

    def _function(self, node: Node, ctx: Ctx, redirs: list[Redir]) -> None:
        name_node = node.child_by_field_name("name")
        name = text(name_node) if name_node is not None else ""
        if name in self.registry.guarded:
            self.opaque(f"function definition redefines the command {name!r}")
        self._conditional(node, ctx, redirs)

    def _scan_only(self, node: Node, ctx: Ctx, redirs: list[Redir]) -> None:
        """`[[ ... ]]`: its substitutions run; and `[[ -v 'a[$(id)]' ]]` runs id (bash evaluates subscripts)."""
        self._scan(node, ctx)
        stack = [node]
        while stack:
            current = stack.pop()
            if current.type == "raw_string" and subscript_with_subst(text(current)):
                self.opaque(f"array subscript with a command substitution: {short(text(current))}")
            stack.extend(current.children)

    def _assignments(self, node: Node, ctx: Ctx, redirs: list[Redir]) -> None:
        for assignment in [node] if node.type == "variable_assignment" else node.named_children:
            if assignment.type == "variable_assignment":
                self._assignment(assignment, ctx, prefix_of=None)
            else:
                self._stmt(assignment, ctx, redirs)

    def _assignment(self, node: Node, ctx: Ctx, prefix_of: str | None) -> tuple[str, str]:
        """``NAME=value``: scan the value, flag names that change what runs. Returns (NAME, value)."""
        children = node.children
        name_node = children[0] if children else None
        name = text(name_node) if name_node is not None else ""
        if name_node is not None and name_node.type == "subscript":
            name = text(name_node.child_by_field_name("name") or name_node)
        value = Word.of("")
        for value_node in [c for c in children[1:] if c.is_named]:
            value = self._word(value_node, ctx)
        self.check_env(name, value, prefix_of)
        # x='a[$(id)]'; echo $((x)) runs id: arithmetic re-evaluates the text of variables
        if value.literal and has_unparsed_subst(value.value):
            self.opaque(f"variable {name} holds command-substitution text that arithmetic or eval could run")
        return name, value.value

    def check_env(self, name: str, value: Word, prefix_of: str | None) -> None:
        """Environment that changes which program runs, what it loads or where it writes is opaque."""
        doubt = env_doubt(name, value, self.registry)
        if doubt:
            self.opaque(f"{doubt} for {prefix_of}" if prefix_of else f"{doubt} for the commands that follow")

    def _declaration(self, node: Node, ctx: Ctx, redirs: list[Redir]) -> None:
        """export / declare / local / readonly / typeset: recorded as a command; assignments checked."""
        keyword = node.children[0].type if node.children else "declare"
        self._count_words(node.named_child_count + 1)
        argv = [keyword]
        for child in node.named_children:
            if child.type == "variable_assignment":
                argv.append("=".join(self._assignment(child, ctx, prefix_of=None)))
            elif child.type != "comment":
                argv.append(self._word(child, ctx).value)
        self._run([Word.of(a) for a in argv], redirs, ctx, handle=False)
        if keyword in ("declare", "typeset", "local") and any(re.match(r"^-\w*n", a) for a in argv[1:]):
            self.opaque(f"{keyword} -n makes a name reference (indirect variables)")

    def _unset(self, node: Node, ctx: Ctx, redirs: list[Redir]) -> None:
        words = [Word.of("unset"), *(self._word(c, ctx) for c in node.named_children if c.type != "comment")]
        self._run(words, redirs, ctx, handle=False)

    def _command(self, node: Node, ctx: Ctx, redirs: list[Redir]) -> None:
        assignments: list[Node] = []
        name_node: Node | None = None
        rest: list[Node] = []
        own: list[Node] = []
        for child in node.children:
            kind = child.type
            if kind in REDIRECT_TYPES:
                own.append(child)
            elif kind == "variable_assignment" and name_node is None:
                assignments.append(child)
            elif kind == "command_name":
                name_node = child
            elif kind != "comment":
                rest.append(child)
        if name_node is not None and any(c.is_missing for c in name_node.children):
            return  # `ls |`: the parser invents an empty command; the syntax error is already opaque
        self._count_words(len(rest) + len(assignments) + len(own) + 1)
        head = self._word(name_node, ctx) if name_node is not None else None
        env = dict(self._assignment(a, ctx, prefix_of=head.value if head else None) for a in assignments)
        words = [head] if head is not None else []
        for child in rest:
            if child.is_named:
                words.append(self._word(child, ctx))
            else:
                self.opaque(f"unsupported syntax {short(text(child))} in {short(text(node))}")
                words.append(Word(value=text(child), raw=text(child), literal=False, why="unsupported syntax"))
        pipe_tail: list[Node] = []
        list_tail: list[Node] = []
        infos = self._redirects(own, ctx, pipe_tail, list_tail)
        self._run(words, [*redirs, *infos], ctx, env=env)
        for tail in pipe_tail + list_tail:
            self.opaque(f"unsupported heredoc layout: {short(text(node))}")
            self._stmt(tail, replace(ctx, stdin="pipe", stdin_tainted=True), [])

    def _redirected(self, node: Node, ctx: Ctx, redirs: list[Redir]) -> None:
        """A statement with redirections, or a bare redirection (``> f`` truncates f)."""
        body: Node | None = None
        own: list[Node] = []
        for child in [node] if node.type in REDIRECT_TYPES else node.children:
            if child.type in REDIRECT_TYPES:
                own.append(child)
            elif child.is_named and child.type != "comment":
                if body is not None:
                    self.opaque(f"unexpected statement layout: {short(text(node))}")
                body = child
        self._count_words(len(own))
        if body is not None and body.type == "list":
            # `cd d && cmd > f`: tree-sitter hangs the redirection on the whole list; bash on the last
            # command of the &&/|| chain, opened after the commands before it ran (in the cd's directory)
            *before, body = flatten(body, "list")
            for item in before:
                self._stmt(item, ctx, redirs)
        pipe_tail: list[Node] = []
        list_tail: list[Node] = []
        infos = self._redirects(own, ctx, pipe_tail, list_tail)
        if body is None:
            self._run([], [*redirs, *infos], ctx)
        elif pipe_tail:
            # `cat <<EOF | sh`: tree-sitter hangs the rest of the pipeline under the heredoc
            elements = [(body, infos)] + [(e, []) for tail in pipe_tail for e in flatten(tail, "pipeline")]
            self._pipe(elements, ctx, redirs)
        elif body.type == "pipeline":
            # `a | b 2>&1`: tree-sitter puts the redirect on the pipeline, bash on its last command
            elements = [(e, []) for e in flatten(body, "pipeline")]
            elements[-1] = (elements[-1][0], infos)
            self._pipe(elements, ctx, redirs)
        else:
            self._stmt(body, ctx, [*redirs, *infos])
        for tail in list_tail:
            self._stmt(tail, ctx, redirs)


_STATEMENTS: dict[str, Callable[[Statements, Node, Ctx, list[Redir]], None]] = {
    "program": Statements._block,
    "list": Statements._list,
    "pipeline": Statements._pipeline,
    "command": Statements._command,
    "redirected_statement": Statements._redirected,
    "file_redirect": Statements._redirected,
    "heredoc_redirect": Statements._redirected,
    "herestring_redirect": Statements._redirected,
    "subshell": Statements._subshell,
    "compound_statement": Statements._group,
    "if_statement": Statements._conditional,
    "while_statement": Statements._conditional,
    "for_statement": Statements._conditional,
    "c_style_for_statement": Statements._conditional,
    "case_statement": Statements._conditional,
    "elif_clause": Statements._block,
    "else_clause": Statements._block,
    "case_item": Statements._block,
    "do_group": Statements._block,
    "negated_command": Statements._block,
    "function_definition": Statements._function,
    "variable_assignment": Statements._assignments,
    "variable_assignments": Statements._assignments,
    "declaration_command": Statements._declaration,
    "unset_command": Statements._unset,
    "test_command": Statements._scan_only,
    "ERROR": Statements._block,  # already opaque; walk what the parser did recognise, for more facts
}
