"""git's subcommands on refs, history and configuration: branch, tag, config, stash, worktree, notes, reflog,
update-ref, gc, prune, bisect, bundle, maintenance, and the ones that run other programs (difftool, ...).
``destroy`` marks what deletes what a rollback restores from (the gateway's refs, reflog entries, unreachable
objects).

    SUBCOMMANDS["gc"](d, call, rest)   # `git gc --prune=now`: access destroy
"""

from __future__ import annotations

import re

from gateway.effects.shell.call import Call
from gateway.effects.shell.git_options import GitHandler, config_key, has, operation
from gateway.effects.shell.git_worktree import local_write
from gateway.effects.shell.walker import Describer
from gateway.effects.shell.words import Word

__all__ = ["SUBCOMMANDS"]


def _branch(d: Describer, call: Call, rest: list[Word]) -> None:
    opts = d.options(
        call,
        "u",
        "--set-upstream-to --sort --format --contains --no-contains --merged --no-merged --points-at --color --column",
        args=rest,
    )
    writes = opts.has(
        "-d",
        "-D",
        "--delete",
        "-m",
        "-M",
        "--move",
        "-c",
        "-C",
        "--copy",
        "-f",
        "--force",
        "-u",
        "--set-upstream-to",
        "--unset-upstream",
        "--edit-description",
        "-t",
        "--track",
    )
    listing = opts.has(
        "-l",
        "--list",
        "--contains",
        "--no-contains",
        "--merged",
        "--no-merged",
        "--points-at",
        "--show-current",
        "-a",
        "--all",
        "-r",
        "--remotes",
    )
    call.facts.access = "write" if writes or (opts.operands and not listing) else "read"


def _tag(d: Describer, call: Call, rest: list[Word]) -> None:
    opts = d.options(
        call,
        "muF",
        "--message --local-user --file --sort --format --contains --no-contains "
        "--merged --no-merged --points-at --color --column --cleanup --trailer",
        args=rest,
        optional="n",
    )
    for word in opts.values("-F", "--file"):
        d.read(word, call)
    writes = opts.has(
        "-d",
        "--delete",
        "-a",
        "--annotate",
        "-s",
        "--sign",
        "-u",
        "--local-user",
        "-f",
        "--force",
        "-m",
        "--message",
        "-F",
        "--file",
        "-e",
        "--edit",
    )
    listing = opts.has(
        "-l", "--list", "--contains", "--no-contains", "--merged", "--no-merged", "--points-at", "-v", "--verify", "-n"
    )
    call.facts.access = "write" if writes or (opts.operands and not listing) else "read"


def _config(d: Describer, call: Call, rest: list[Word]) -> None:
    """config: reading a key is a read; setting one (or editing) writes a config file and is checked
    against the safe keys; --global/--system/--file say which file."""
    opts = d.options(
        call,
        "f",
        "--file --type --default --blob --comment --value",
        known="--global --system --local --worktree --add --replace-all --unset --unset-all --rename-section "
        "--remove-section --edit --get --get-all --get-regexp --list",
        args=rest,
    )
    operands = list(opts.operands)
    modern = {"set", "unset", "rename-section", "remove-section", "edit", "get", "list"}
    action = operands.pop(0).value if operands and operands[0].value in modern else ""
    call.facts.operation = action or None
    editing = action == "edit" or opts.has("-e", "--edit")
    setting = (
        editing
        or action in ("set", "unset", "rename-section", "remove-section")
        or (
            not action
            and (
                len(operands) >= 2
                or opts.has("--add", "--replace-all", "--unset", "--unset-all", "--rename-section", "--remove-section")
            )
        )
    )
    files = opts.values("-f", "--file")
    if not setting:
        call.facts.access = "read"
        for word in files:
            d.read(word, call)
        return
    call.facts.access = "write"
    if editing:
        d.execute(call, "editor", "git config --edit runs an editor")
    elif operands:
        config_key(d, call, operands[0])
    if opts.has("--global"):
        d.write(Word.of(f"{d.home}/.gitconfig"), call)
    elif opts.has("--system"):
        d.write(Word.of("/etc/gitconfig"), call)
    for word in files:
        d.write(word, call)


def _stash(d: Describer, call: Call, rest: list[Word]) -> None:
    operation(("list", "show"), "push")(d, call, rest)
    if call.facts.operation in ("push", "save", "pop", "apply", "branch"):
        d.write(Word.of("."), call, modify=True)


def _worktree(d: Describer, call: Call, rest: list[Word]) -> None:
    """worktree add PATH makes a checkout there; remove deletes it; move moves it."""
    operation(("list",), "list")(d, call, rest)
    opts = d.options(call, "bB", "--reason --orphan", args=rest)
    operands = opts.operands[1:]
    action = call.facts.operation
    if action == "add" and operands:
        d.write(operands[0], call)
    elif action == "remove" and operands:
        d.delete(operands[0], call, recursive=True)
    elif action == "move" and len(operands) >= 2:
        d.delete(operands[0], call, recursive=True)
        d.write(operands[1], call)


def _bisect(d: Describer, call: Call, rest: list[Word]) -> None:
    action = rest[0].value if rest else ""
    call.facts.operation = action or None
    call.facts.access = "read" if action in ("log", "terms", "help") else "write"
    if action == "run":
        d.inner(rest[1:], call)
    elif action in ("visualize", "view"):
        d.execute(call, "gitk", "git bisect visualize runs gitk or git log")
    elif action == "replay" and len(rest) > 1:
        d.read(rest[1], call)


def _symbolic_ref(d: Describer, call: Call, rest: list[Word]) -> None:
    opts = d.options(call, "m", args=rest)
    reading = len(opts.operands) == 1 and not opts.has("-d", "--delete")
    call.facts.access = "read" if reading else "write"


def _replace(d: Describer, call: Call, rest: list[Word]) -> None:
    listing = not rest or has(rest, "-l", "--list")
    call.facts.access = "read" if listing else "write"


def _bundle(d: Describer, call: Call, rest: list[Word]) -> None:
    operands = [w for w in rest if not w.value.startswith("-")]
    action = operands[0].value if operands else ""
    call.facts.operation = action or None
    call.facts.access = "read" if action in ("verify", "list-heads") else "write"
    if len(operands) > 1:
        (d.write if action == "create" else d.read)(operands[1], call)


def _gc(d: Describer, call: Call, rest: list[Word]) -> None:
    """gc --prune=<date> drops unreachable objects sooner than git's two weeks: a dropped commit, stash or
    checkpoint goes for good (`gc` alone, and --no-prune, keep them)."""
    call.facts.operation = next((w.value for w in rest if not w.value.startswith("-")), None)
    pruning = any(w.value.startswith("--prune=") or w.value == "--prune" or not w.literal for w in rest)
    call.facts.access = "destroy" if pruning else "write"


def _prune(d: Describer, call: Call, rest: list[Word]) -> None:
    call.facts.access = "destroy"


# update-ref on the gateway's refs (its checkpoints) or on refs it cannot read (xargs input, --stdin)
_GATEWAY_REF = re.compile(r"(^|/)gateway(/|$)")


def _update_ref(d: Describer, call: Call, rest: list[Word]) -> None:
    local_write(d, call, rest)
    if any(not w.literal or w.value == "--stdin" or _GATEWAY_REF.search(w.value) for w in rest):
        call.facts.access = "destroy"


def _reflog(d: Describer, call: Call, rest: list[Word]) -> None:
    """reflog expire/delete drop the entries that keep a reset or deleted branch's commits alive."""
    operation(("show", "exists", "list"), "show")(d, call, rest)
    if call.facts.operation in ("expire", "delete"):
        call.facts.access = "destroy"


def _maintenance(d: Describer, call: Call, rest: list[Word]) -> None:
    action = next((w.value for w in rest if not w.value.startswith("-")), "")
    call.facts.operation = action or None
    call.facts.access = "write"
    if action in ("start", "register"):
        d.execute(call, "scheduler", "git maintenance start schedules background jobs (cron or systemd)")
    if action == "run":
        d.reach("git-remote:default", "git")  # the prefetch task fetches from every remote
        call.facts.access = "remote"


def _runs_tools(what: str) -> GitHandler:
    """difftool, mergetool, instaweb, send-email, filter-branch, credential...: they run other programs."""

    def handler(d: Describer, call: Call, rest: list[Word]) -> None:
        call.facts.access = "write"
        d.execute(call, f"git {call.facts.subcommand}", f"git {call.facts.subcommand} {what}")

    return handler


SUBCOMMANDS: dict[str, GitHandler] = {
    "branch": _branch,
    "tag": _tag,
    "config": _config,
    "stash": _stash,
    "worktree": _worktree,
    "notes": operation(("list", "show"), "list"),
    "reflog": _reflog,
    "update-ref": _update_ref,
    "prune": _prune,
    "sparse-checkout": operation(("list",), "list"),
    "bisect": _bisect,
    "symbolic-ref": _symbolic_ref,
    "replace": _replace,
    "bundle": _bundle,
    "gc": _gc,
    "maintenance": _maintenance,
    "merge-index": _runs_tools("runs a merge program for each file"),
    "difftool": _runs_tools("runs a diff tool"),
    "mergetool": _runs_tools("runs a merge tool"),
    "instaweb": _runs_tools("starts a web server and a browser"),
    "send-email": _runs_tools("sends mail (it runs sendmail or contacts an SMTP server)"),
    "filter-branch": _runs_tools("runs shell filters on every commit"),
    "credential": _runs_tools("runs credential helpers (and prints credentials)"),
    "credential-store": _runs_tools("reads and writes stored credentials"),
    "credential-cache": _runs_tools("reads and writes cached credentials"),
    "web--browse": _runs_tools("runs a web browser"),
}
