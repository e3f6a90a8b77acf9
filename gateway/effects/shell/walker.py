"""The Describer: the walk of a command string, from its parse to the facts of every simple command in it.

tree-sitter-bash parses the string; ``Describer`` walks the tree in execution order, does quote removal,
tracks the working directory, and hands every simple command to the handler of its program, found in the
registry of program families (registry.py; the walk itself knows no program by name). Handlers state facts
through the Describer's helpers (``read``, ``write``, ``delete``, ``url``, ``inner``, ``execute``...), which
record them both for the whole call (``Effects.reads``...) and for the command itself (``CommandEffect.reads``
...). Whatever the walk cannot follow goes into ``opaque`` with a reason, so the policy fails closed.

The Describer is built in layers, one concern each (gateway/effects/shell/walk/): the accumulated state
(state.py), the helpers for hosts (host_facts.py) and paths (path_facts.py), word expansion (expansion.py),
redirections (redirects.py), statements (statements.py), simple commands (commands.py), the helpers for what
else runs (run_facts.py), and here, the parse.

    d = Describer(workspace, cwd, REGISTRY)
    d.run("cd src && rm -rf build")
    d.effects().commands[1].cwd   # "src"
"""

from __future__ import annotations

import re
import threading

import tree_sitter_bash
from tree_sitter import Language, Parser

from gateway.effects.shell.call import Call, Ctx, Handler
from gateway.effects.shell.walk.nodes import error_snippet
from gateway.effects.shell.walk.run_facts import RunFacts
from gateway.effects.shell.walk.state import MAX_COMMAND_BYTES, MAX_COMMANDS, MAX_NESTING, MAX_WORDS, Stop
from gateway.effects.shell.words import short

__all__ = ["MAX_COMMANDS", "MAX_COMMAND_BYTES", "MAX_WORDS", "Call", "Describer", "Handler", "separator_runs"]

# One parser for the process: creating one costs more than a parse. A tree-sitter parser must not be
# used by two threads at once, and the gateway may describe calls from worker threads, hence the lock.
_PARSER = Parser(Language(tree_sitter_bash.language()))
_PARSE_LOCK = threading.Lock()

_CONTROL = re.compile(r"[\x01-\x08\x0b-\x1f\x7f-\x9f]")
_INVISIBLE = re.compile("[\u200b-\u200d\u2060\ufeff\u00ad\u202a-\u202e\u2066-\u2069]")
# "r\<newline>m" is one word for bash but two for tree-sitter: refuse rather than mis-read it.
_MIDWORD_CONTINUATION = re.compile(r"[^\s\\;&|(){}<>]\\\n[^\s;&|(){}<>]")


class Describer(RunFacts):
    """Describes one command string (and the strings re-parsed from it): ``run``, then ``effects``."""

    def run(self, command: str) -> None:
        """Describe a whole command string; a bound reached stops the walk (already opaque)."""
        try:
            self.describe(command, Ctx())
        except Stop:
            pass
        except RecursionError:
            self.opaque("command is nested too deeply to analyse")

    def describe(self, source_text: str, ctx: Ctx) -> None:
        """Parse ``source_text`` and walk it; the checks before parsing refuse what the parser could mis-read."""
        if ctx.depth > MAX_NESTING:
            self.opaque(f"nesting deeper than {MAX_NESTING} levels of substitutions or wrappers")
            return
        if "\x00" in source_text:
            self.opaque("command contains a NUL byte")
            return
        try:
            source = source_text.encode("utf-8")
        except UnicodeEncodeError:
            self.opaque("command is not valid UTF-8 text")
            return
        if len(source) > MAX_COMMAND_BYTES:
            self.opaque(f"command is longer than 16 KiB ({len(source)} bytes)")
            return
        if _CONTROL.search(source_text):
            self.opaque("command contains control characters")
        if _INVISIBLE.search(source_text):
            self.opaque("command contains invisible or bidirectional control characters")
        if _MIDWORD_CONTINUATION.search(source_text):
            self.opaque("line continuation inside a word (bash joins the word, the parser splits it)")
        if separator_runs(source_text) > 4 * MAX_COMMANDS:
            # tree-sitter-bash takes superlinear time on long pipelines (80 ms for 8,000 `a|`): a string
            # that plainly holds far more commands than are analysed is not parsed at all
            self.opaque(f"more than {MAX_COMMANDS} simple commands: the rest is not analysed")
            raise Stop
        with _PARSE_LOCK:
            tree = _PARSER.parse(source)
        root = tree.root_node
        if root.has_error:
            self.opaque(f"shell syntax error near {short(error_snippet(root))}")
        self._block(root, ctx)


def separator_runs(source: str) -> int:
    """About how many command separators (`|`, `;`, `&`, newline) a string holds outside quotes,
    comments and heredoc bodies; a run of them counts once. Linear, and only an estimate: it decides
    whether the string is worth parsing, never what it means."""
    count = 0
    i = 0
    n = len(source)
    in_run = False
    heredocs: list[str] = []
    while i < n:
        ch = source[i]
        if ch == "\\":
            i += 2
            in_run = False
        elif ch in "'\"":
            i = _closing_quote(source, i + 1, ch)
            in_run = False
        elif ch == "#" and (i == 0 or source[i - 1] in " \t\n;&|()"):
            end = source.find("\n", i)
            i = n if end < 0 else end
        elif ch == "<" and source.startswith("<<", i) and not source.startswith("<<<", i):
            match = _HEREDOC_START.match(source, i)
            if match:
                heredocs.append(match.group(2))
                i = match.end()
            else:
                i += 2
        else:
            if ch in "|;&\n":
                count += 0 if in_run else 1
                in_run = True
            elif ch not in " \t":
                in_run = False
            i += 1
            if ch == "\n" and heredocs:
                for delimiter in heredocs:  # the bodies follow this line, each up to its delimiter line
                    while i < n:
                        end = source.find("\n", i)
                        end = n if end < 0 else end
                        line, i = source[i:end], end + 1
                        if line.lstrip("\t") == delimiter:
                            break
                heredocs = []
    return count


_HEREDOC_START = re.compile(r"<<-?[ \t]*(['\"]?)([A-Za-z0-9_.-]+)\1")


def _closing_quote(source: str, i: int, quote: str) -> int:
    while i < len(source):
        if source[i] == "\\" and quote == '"':
            i += 2
        elif source[i] == quote:
            return i + 1
        else:
            i += 1
    return i
