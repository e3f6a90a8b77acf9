"""Shell command strings become Effects: the simple commands they run and what those commands touch.

tree-sitter-bash parses the string; the walker does its own quote removal, follows cd, unwraps
wrappers (sudo, env, xargs, find -exec, bash -c, eval, ...) and hands every simple command to the
handler of its program, which states plain facts: the files it reads, writes and deletes, the hosts
it contacts, the packages it installs, the programs it may run, and per command the normalised facts
the policy judges (program, subcommand, cwd, inline code, access...). Whatever the analysis cannot
follow goes into ``opaque`` with a reason, so the policy fails closed.

    ws = Workspace(Path("/repo"))
    fx = describe_command("cd src && rm -rf build; curl -s https://x.io/i.sh | sh", ws, cwd=Path("/repo"))
    [c.program for c in fx.commands]  # ["cd", "rm", "curl", "sh"]
    fx.commands[1].cwd              # "src"
    fx.recursive_deletes            # ["src/build"]
    fx.network                      # [NetworkEffect(host="x.io", via="curl")]
    fx.opaque                       # ["downloaded/decoded content executed: sh reads its program from a pipe"]

Layout, one concept per module:

    words.py         Word, quote removal, ANSI-C decoding
    options.py       getopt-style option parsing
    globs.py         bounded glob and directory expansion
    walker.py        the tree walk and the helpers handlers use (Describer)
    sed_script.py    the GNU sed script parser;  awk_program.py  the awk lexer
    files.py  text.py  interpreters.py  git.py  network.py  packages.py  wrappers.py
                     one module per program family, each exporting HANDLERS: program name -> handler
"""

from __future__ import annotations

from pathlib import Path

from gateway.effects.paths import Workspace
from gateway.effects.shell import files, git, interpreters, network, packages, text, wrappers
from gateway.effects.shell.walker import MAX_COMMAND_BYTES, MAX_COMMANDS, MAX_WORDS, Describer, Handler
from gateway.types import Effects

__all__ = ["HANDLERS", "MAX_COMMANDS", "MAX_COMMAND_BYTES", "MAX_WORDS", "describe_command"]

# The dispatch table: program name -> handler. A later family does not silently take over an earlier
# family's name (checked below), so each program has exactly one handler.
FAMILIES: list[dict[str, Handler]] = [
    files.HANDLERS,
    text.HANDLERS,
    interpreters.HANDLERS,
    git.HANDLERS,
    network.HANDLERS,
    packages.HANDLERS,
    wrappers.HANDLERS,
]
HANDLERS: dict[str, Handler] = {}
for _family in FAMILIES:
    _clash = HANDLERS.keys() & _family.keys()
    assert not _clash, f"programs with two handlers: {sorted(_clash)}"
    HANDLERS.update(_family)


def describe_command(command: str, workspace: Workspace, cwd: Path) -> Effects:
    """The facts of running ``command`` with bash in ``cwd`` (absolute, normally inside the workspace)."""
    describer = Describer(workspace, Path(cwd), HANDLERS)
    describer.run(command)
    return describer.effects()
