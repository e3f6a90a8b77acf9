"""git's subcommands that reach other repositories: clone, push, fetch, pull, ls-remote, remote, submodule,
archive --remote, daemon. A URL remote is its host; a named one is ``git-remote:<name>`` (where it points
is the repository's config); a remote helper (``ext::``) runs a program.

    SUBCOMMANDS["push"](d, call, rest)   # `git push origin`: access remote, reaches git-remote:origin
"""

from __future__ import annotations

import re
from dataclasses import replace

from gateway.effects.shell.call import Call
from gateway.effects.shell.git_options import GitHandler, config_key, has
from gateway.effects.shell.git_worktree import worktree_write
from gateway.effects.shell.walker import Describer
from gateway.effects.shell.words import Word, short

__all__ = ["SUBCOMMANDS"]


def _pull(d: Describer, call: Call, rest: list[Word]) -> None:
    _network(d, call, rest)
    worktree_write(d, call, rest)
    call.facts.access = "remote"


def _remote(d: Describer, call: Call, rest: list[Word]) -> None:
    operands = [w for w in rest if not w.value.startswith("-")]
    action = operands[0].value if operands else ""
    call.facts.operation = action or None
    if any("::" in w.value and "://" not in w.value.split("::")[0] for w in operands):
        d.execute(call, "remote helper", "git remote helper URL runs a program")
    if action in ("update", "prune") or (action in ("show", "set-head") and not has(rest, "-n")):
        call.facts.access = "remote" if action != "set-head" or has(rest, "-a", "--auto") else "write"
        if call.facts.access == "remote":
            name = operands[1].value if len(operands) > 1 and action != "update" else "default"
            d.reach(f"git-remote:{name}", "git")
        return
    writes = ("add", "remove", "rm", "rename", "set-url", "set-head", "set-branches")
    call.facts.access = "write" if action in writes else "read"


def _submodule(d: Describer, call: Call, rest: list[Word]) -> None:
    positional = [w for w in rest if not w.value.startswith("-")]
    action = positional[0].value if positional else "status"
    call.facts.operation = action
    call.facts.access = "read" if action in ("status", "summary") else "write"
    if action == "foreach":
        d.execute(call, "submodule foreach", "git submodule foreach runs a shell command in every submodule")
    elif action == "add" and len(positional) > 1:
        call.facts.access = "remote"
        _url(d, call, positional[1], reading=True)
    elif action == "update":
        call.facts.access = "remote"
        d.reach("git-remote:submodules", "git")


def _archive(d: Describer, call: Call, rest: list[Word]) -> None:
    opts = d.options(call, "o", "--output --format --prefix --remote --exec --add-file --add-virtual-file", args=rest)
    call.facts.access = "read"
    for word in opts.values("-o", "--output"):
        d.write(word, call)
    for word in opts.values("--add-file"):
        d.read(word, call)
    for word in opts.values("--exec"):
        d.execute(call, word.value, "git archive --exec runs a program on the remote side")
    for word in opts.values("--remote"):
        call.facts.access = "remote"
        _remote_or_url(d, call, word, reading=True)


def _daemon(d: Describer, call: Call, rest: list[Word]) -> None:
    call.facts.access = "remote"
    port = next((w.value.partition("=")[2] for w in rest if w.value.startswith("--port=")), "9418")
    d.listen(port, call)


# --------------------------------------------------------------------------------------------------
# Remotes
# --------------------------------------------------------------------------------------------------

_NETWORK_OPTIONS = {
    "clone": ("objuc", "--origin --branch --upload-pack --reference --separate-git-dir --depth --config --jobs "),
    "push": ("o", "--repo --push-option --receive-pack --exec "),
    "fetch": ("oj", "--upload-pack --depth --deepen --shallow-since --shallow-exclude --refmap --jobs "),
    "pull": ("osXj", "--upload-pack --depth --deepen --strategy --strategy-option --jobs "),
    "ls-remote": ("o", "--upload-pack --sort "),
    "fetch-pack": ("", "--upload-pack --exec --depth "),
    "send-pack": ("", "--receive-pack --exec "),
    "request-pull": ("", ""),
}
_NETWORK_COMMON = "--filter --template --bundle-uri --server-option --shallow-exclude --negotiation-tip"


def _network(d: Describer, call: Call, rest: list[Word]) -> None:
    """clone/push/fetch/pull/ls-remote: the host of a URL remote, or ``git-remote:<name>`` for a named one."""
    sub = call.facts.subcommand or ""
    call.facts.access = "remote"
    short_opts, long = _NETWORK_OPTIONS[sub]
    opts = d.options(call, short_opts, long + _NETWORK_COMMON, args=rest)
    for word in opts.values("--upload-pack", "--receive-pack", "--exec") + (
        opts.values("-u") if sub == "clone" else []
    ):
        d.execute(call, word.value, f"git {sub} --upload-pack/--receive-pack runs a program")
    for word in opts.values("--template"):
        d.execute(call, word.value, f"git {sub} --template installs hooks that run during the clone")
    for word in opts.values("-c", "--config") if sub == "clone" else []:
        config_key(d, call, word)
    for word in opts.values("--reference") if sub == "clone" else []:
        d.read(word, call)
    operands = opts.operands
    if sub == "clone":
        for word in opts.values("--separate-git-dir"):
            d.write(word, call)
        if operands:
            _url(d, call, operands[0], reading=True)
            name = operands[0].value.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1].removesuffix(".git")
            d.write(operands[1] if len(operands) > 1 else Word.of(name or "repo"), call)
        return
    remote = operands[0] if operands else Word.of("default")
    _remote_or_url(d, call, remote, reading=sub != "push")


def _remote_or_url(d: Describer, call: Call, remote: Word, reading: bool) -> None:
    if not remote.literal:
        d.opaque(f"git {call.facts.subcommand}: remote {short(remote.raw)} is not literal")
    elif _is_url(remote) or remote.value.startswith(("/", ".", "~")):
        _url(d, call, remote, reading=reading)
    else:
        d.reach(f"git-remote:{remote.value}", "git")


def _is_url(word: Word) -> bool:
    value = word.value
    return "://" in value or "::" in value or bool(re.match(r"^[^/:]+@[^/:]+:|^[^/:]+\.[^/:]+:", value))


def _url(d: Describer, call: Call, word: Word, reading: bool) -> None:
    value = word.value
    if not word.literal:
        d.opaque(f"git: URL {short(word.raw)} is not literal")
    elif "::" in value and "://" not in value.split("::", 1)[0]:
        d.execute(call, value, f"git remote helper {short(value)} runs a program")
    elif _is_url(word):
        d.url(word, replace(call, name="git"), default_scheme=None)
    elif reading:
        d.read(word, call)
    else:
        d.write(word, call, modify=True)


SUBCOMMANDS: dict[str, GitHandler] = {
    "remote": _remote,
    "submodule": _submodule,
    "archive": _archive,
    "daemon": _daemon,
    **{name: _network for name in _NETWORK_OPTIONS if name != "pull"},
    "pull": _pull,
}
