"""What git's subcommands share: the options parser (``--output`` writes, ``--ext-diff`` and ``--textconv``
run programs), configuration keys that may name a program, committed files named as ``REV:path``, and the
subcommands whose first operand names an operation (``stash drop``).

    options(d, call, rest, "SGLnO", "--author")   # Opts, with --output written and --ext-diff executed
"""

from __future__ import annotations

import re
from collections.abc import Callable

from gateway.effects.shell.call import Call
from gateway.effects.shell.options import Opts
from gateway.effects.shell.walker import Describer
from gateway.effects.shell.words import Word, names, short

__all__ = ["SAFE_CONFIG_KEYS", "GitHandler", "blobs", "config_key", "has", "operation", "options"]

# `git -c` / `git config` keys whose values are harmless; any other key may name a program git runs.
SAFE_CONFIG_KEYS = tuple(
    names(
        "user. color. advice. init.defaultbranch core.quotepath core.autocrlf core.safecrlf core.filemode "
        "core.ignorecase commit.gpgsign tag.gpgsign pull.rebase pull.ff merge.ff push.default push.autosetupremote "
        "fetch.prune log. status. column. i18n. safe.directory gc.auto maintenance.auto rebase.autosquash "
        "rebase.autostash diff.renames branch.autosetuprebase http.sslverify"
    )
)

# A subcommand's handler: the words after the subcommand (long options unabbreviated).
GitHandler = Callable[[Describer, Call, list[Word]], None]


def config_key(d: Describer, call: Call, word: Word) -> None:
    """A configuration key set for this command (-c) or in a config file: outside the safe list, git may
    run what it names (core.pager, core.sshCommand, alias.x='!sh', diff.external, core.hooksPath...)."""
    key = word.value.split("=", 1)[0].lower()
    if not word.literal or not key.startswith(SAFE_CONFIG_KEYS):
        d.execute(call, f"config {key}", f"git config {short(key)} may make git run a program")


def options(
    d: Describer, call: Call, rest: list[Word], short_opts: str = "", long: str = "", optional: str = ""
) -> Opts:
    """Parse a subcommand's options; --output writes a file, --ext-diff/--textconv run programs."""
    opts = d.options(call, short_opts, f"{long} --output", optional=optional, args=rest)
    for word in opts.values("--output"):
        d.write(word, call)
    if opts.has("--ext-diff"):
        d.execute(call, "external diff", "git --ext-diff runs the configured external diff program")
    if opts.has("--textconv"):
        d.execute(call, "textconv filter", "git --textconv runs the configured textconv filters")
    return opts


_BLOB = re.compile(r"^[^:]*:(?:[0-3]:)?(?!/)(.+)$")


def blobs(d: Describer, call: Call, operands: list[Word]) -> None:
    """`git show HEAD:.env`, `git cat-file -p :0:config/secrets.yml`: the committed content of a file,
    named by its path from the top of the repository (stated as a path, for the secrets concern)."""
    for word in operands:
        match = _BLOB.match(word.value) if word.literal and "://" not in word.value else None
        if match:
            path = match.group(1).removeprefix("./")
            located = d.quiet_locate(Word.of(str(d.ws.root / path)))
            if located is not None:
                call.facts.paths.append(d.display(located))


def has(rest: list[Word], *flags: str) -> bool:
    return any(w.value in flags for w in rest)


def operation(reads: tuple[str, ...], default: str, executes: tuple[str, ...] = ()) -> GitHandler:
    """stash/worktree/notes/reflog/...: the first operand names the operation; some only read."""

    def handler(d: Describer, call: Call, rest: list[Word]) -> None:
        operands = [w for w in rest if not w.value.startswith("-")]
        action = operands[0].value if operands else default
        call.facts.operation = action
        call.facts.access = "read" if action in reads else "write"
        if action in executes:
            d.execute(
                call, f"git {call.facts.subcommand} {action}", f"git {call.facts.subcommand} {action} runs a program"
            )
        options(d, call, rest)

    return handler
