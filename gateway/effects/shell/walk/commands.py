"""Simple commands: their words, assignments and redirections, recorded as a command, then handed to the
handler of their program (the registry's); an unknown program's path-like words are stated as ``paths``.

    d._run([Word.of("rm"), Word.of("-rf"), Word.of("build")], [], Ctx())   # rm's handler states the delete
"""

from __future__ import annotations

from dataclasses import replace

from gateway.effects.paths import suspicious_unicode
from gateway.effects.shell.call import Call, CommandFacts, Ctx, Redir
from gateway.effects.shell.walk.nodes import INPUT_KINDS
from gateway.effects.shell.walk.state import MAX_COMMANDS, MAX_NESTING, Stop
from gateway.effects.shell.walk.statements import Statements
from gateway.effects.shell.words import Word, names, short, subscript_with_subst

__all__ = ["Commands"]

RESERVED = names("then else elif fi do done esac in } { function select")


class Commands(Statements):
    """A simple command: recorded, checked, and described by its program's handler."""

    def _run(
        self, words: list[Word], redirs: list[Redir], ctx: Ctx, env: dict[str, str] | None = None, handle: bool = True
    ) -> None:
        """Record one simple command, then describe it if its program is known."""
        if ctx.depth > MAX_NESTING:
            self.opaque(f"nesting deeper than {MAX_NESTING} levels of substitutions or wrappers")
            return
        if len(self.commands) >= MAX_COMMANDS:
            self.opaque(f"more than {MAX_COMMANDS} simple commands: the rest is not analysed")
            raise Stop
        ctx = _with_stdin(ctx, redirs)
        head = words[0] if words else None
        registry = self.registry
        argv = [w.value for w in words]
        name = registry.program_name(head.value) if head is not None and head.literal else ""
        # validated: pydantic's model_construct resolves every default factory anew, far slower
        facts = CommandFacts(
            argv=argv,
            redirects=[r.redirect for r in redirs],
            via=ctx.via,
            program=self._program_fact(head, name),
            cwd=self.shown_cwd(),
            env=dict(env or {}),
        )
        for r in redirs:
            (facts.reads if r.kind == "in" else facts.writes).extend(r.shown)
        taints = ctx.stdin_tainted or registry.emits_untrusted(argv)
        call = Call(name=name, words=words, ctx=ctx, redirects=redirs, facts=facts, taints=taints)
        self.commands.append(facts)
        self.emits_tainted.append(taints)
        for word in words[1:]:
            if word.literal and subscript_with_subst(word.value):
                # `test -v 'a[$(id)]'`, `printf -v`, `read`, `unset`: bash evaluates the subscript
                self.opaque(f"array subscript with a command substitution: {short(word.value)}")
        for word in words:
            # plain printable ASCII cannot mislead (the check normalises and classifies every character)
            why = None if word.value.isascii() and word.value.isprintable() else suspicious_unicode(word.value)
            if why:
                self.opaque(f"word {short(word.value)} contains {why}")
        if head is None or not handle:
            return
        if not head.literal:
            what = "downloaded/decoded content executed" if head.tainted else "dynamic command name"
            self.opaque(f"{what}: {short(head.raw)} ({head.why})")
            return
        self.privileged = self.privileged or name in registry.privileged
        if name in RESERVED:
            self.opaque(f"reserved word {name!r} used as a command")
        elif "/" in head.value and self.is_tainted(head):
            self.opaque(f"downloaded/decoded content executed: {short(head.value)}")
        handler = registry.handlers.get(name)
        if handler is not None:
            handler(self, call)  # this walk is a Describer's (walker.py)
            if facts.subcommand_as_written is None:  # a handler that knows no other spelling states the word itself
                facts.subcommand_as_written = facts.subcommand
        elif name in registry.opaque_runners:
            self.opaque(f"{name} runs commands this gateway does not unwrap")
        else:
            self.unknown_paths(call.args, call)  # a program we do not know: its path-like words
        if call.taints:
            self.tainted.update(r.path for r in redirs if r.kind == "out" and r.path is not None)

    def _program_fact(self, head: Word | None, name: str) -> str:
        """The program as the policy sees it: the normalised name, except for a file in the workspace
        (`./ls`, `scripts/cat`, `.venv/bin/pip`), which is whatever the agent put there: its path as written."""
        if head is None or not head.literal or "/" not in head.value:
            return name
        path = self.quiet_locate(head)
        return head.value if path is None or self.ws.contains(path) else name


def _with_stdin(ctx: Ctx, redirs: list[Redir]) -> Ctx:
    """The command's stdin after its redirections (the last one wins, as in bash)."""
    for r in redirs:
        fd = r.redirect.fd
        if r.kind == "socket":
            ctx = replace(ctx, stdin="socket", stdin_text=None, stdin_tainted=True)
        elif r.kind in INPUT_KINDS and fd in (None, 0):
            ctx = replace(ctx, stdin="file" if r.kind == "in" else r.kind, stdin_text=r.text, stdin_tainted=r.tainted)
        elif r.kind == "dup" and fd == 0:
            ctx = replace(ctx, stdin="dup", stdin_text=None)
    return ctx
