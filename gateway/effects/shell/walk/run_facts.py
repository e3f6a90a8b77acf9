"""The helpers handlers state what else runs with: a wrapper's inner command, re-parsed command text,
script files, inline code, a program read from stdin; and packages installed.

    d.inner(words, call)       # `sudo rm x`: rm is listed again, via "wrapper:sudo"
    d.run_text(word, call)     # `bash -c 'rm x'`: the text is parsed and walked
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Literal

from gateway.effects.shell.call import Call
from gateway.effects.shell.walk.commands import Commands
from gateway.effects.shell.words import ASSIGNMENT, Word, short
from gateway.types import PackageEffect

__all__ = ["RunFacts"]


class RunFacts(Commands):
    """What else a command runs, and the packages it installs."""

    def inner(self, words: list[Word], call: Call, cwd: Word | None = None) -> None:
        """Describe the command a wrapper runs; it is listed again, with via "wrapper:<name>"."""
        words, env = self._skip_env(words, call)
        if not words:
            return
        sudo = call.ctx.sudo or call.name in self.registry.privileged
        inner_ctx = replace(call.ctx, via=f"wrapper:{call.name}", depth=call.ctx.depth + 1, sudo=sudo)
        with self.chdir(cwd, call):
            self._run(words, [], inner_ctx, env=env)

    def _skip_env(self, words: list[Word], call: Call) -> tuple[list[Word], dict[str, str]]:
        """Leading NAME=value words (env, sudo) are assignments, not the command."""
        env: dict[str, str] = {}
        i = 0
        while i < len(words) and ASSIGNMENT.match(words[i].value):
            name, _, value = words[i].value.partition("=")
            self.check_env(name, replace(words[i], value=value), prefix_of=call.name)
            env[name] = value
            i += 1
        return words[i:], env

    @contextmanager
    def chdir(self, word: Word | None, call: Call) -> Iterator[None]:
        """Run a wrapped command in another directory (git -C, env -C, sudo -D), then come back."""
        saved = self.cwd
        if word is not None:
            self.cwd = self.locate(word, call.name)
        try:
            yield
        finally:
            self.cwd = saved

    def run_text(self, word: Word, call: Call, via: str | None = None) -> None:
        """Re-parse a literal command string (bash -c, eval, su -c); text built at run time is opaque."""
        if not word.literal:
            what = "downloaded/decoded content executed" if word.tainted else "non-literal command text"
            self.opaque(f"{what}: {call.name} runs {short(word.raw)} ({word.why})")
            return
        sudo = call.ctx.sudo or call.name in self.registry.privileged
        inner = replace(call.ctx, via=via or f"wrapper:{call.name}", depth=call.ctx.depth + 1, nest=0, sudo=sudo)
        saved = self.cwd  # a child shell's cd does not move us
        self.describe(word.value, inner)
        self.cwd = saved

    def script(self, word: Word, call: Call) -> None:
        """An interpreter runs a script file: a read of that file, unless we cannot tell which file."""
        if not word.literal:
            what = "downloaded/decoded content executed" if word.tainted else "script path is not literal"
            self.opaque(f"{what}: {call.name} runs {short(word.raw)} ({word.why})")
        elif word.value in ("-", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"):
            self.program_from_stdin(call)
        else:
            if self.is_tainted(word):
                self.opaque(f"downloaded/decoded content executed: {call.name} runs {short(word.value)}")
            self.read(word, call)

    def inline_code(self, word: Word | None, call: Call) -> None:
        """``python -c CODE``: literal code is recorded (``inline_code``); code built at run time is opaque."""
        if word is None:
            self.opaque(f"{call.name}: inline code option without code")
        elif not word.literal:
            what = "downloaded/decoded content executed" if word.tainted else "inline code is not literal"
            self.opaque(f"{what}: {call.name} runs {short(word.raw)} ({word.why})")
        else:
            call.facts.inline_code.append(word.value)

    def program_from_stdin(self, call: Call) -> None:
        """An interpreter reading its program from stdin: a heredoc's text is its program (a shell's is
        parsed again, another interpreter's recorded as inline code); a pipe's is unknown (opaque)."""
        ctx = call.ctx
        source = _STDIN_NAMES.get(ctx.stdin, ctx.stdin)
        if ctx.stdin_tainted:
            self.opaque(f"downloaded/decoded content executed: {call.name} reads its program from {source}")
        elif ctx.stdin in ("pipe", "socket", "dup"):
            self.opaque(f"{call.name} reads its program from {source} whose content is not known")
        elif ctx.stdin in ("heredoc", "herestring"):
            if ctx.stdin_text is None:
                self.opaque(f"{call.name} reads its program from {source} with expansions")
            elif call.name in self.registry.shells:
                self.run_text(Word.of(ctx.stdin_text), call, via="heredoc")
            else:
                call.facts.inline_code.append(ctx.stdin_text)

    def package(self, manager: str, packages: list[str], local: bool, call: Call) -> None:
        """A package install or removal; anything under sudo is global whatever the manager."""
        scope: Literal["local", "global"] = "local" if local and not call.ctx.sudo else "global"
        self.packages.append(PackageEffect(manager=manager, names=packages, scope=scope))


_STDIN_NAMES = {
    "pipe": "a pipe",
    "socket": "a network socket",
    "dup": "a duplicated file descriptor",
    "heredoc": "a heredoc",
    "herestring": "a here-string",
    "file": "a file",
}
