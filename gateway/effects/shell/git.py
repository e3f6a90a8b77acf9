"""git: where it runs, its subcommand, what it does to the repository, and what else it runs or writes.

One parser for git, so the policy never re-parses argv: the global options (``-C``, ``-c``,
``--git-dir``...), the subcommand after them, ``access`` (``read``, ``write`` or ``remote``) and
``operation`` (``stash drop`` -> "drop"); files its options read and write (``--output``,
``format-patch -o``, ``archive -o``, ``bundle create``); programs it may run (a pager, an external
diff, ``grep -O``, ``rebase -x``, config keys, GIT_* variables, aliases) as ``executes`` and opaque.

    FAMILY.handlers["git"](d, call)   # `git -C src log --output=/tmp/x`: cwd src, access read, writes /tmp/x

The subcommands are described in git_worktree.py (the working tree and the index), git_refs.py (refs, history,
configuration) and git_remote.py (other repositories), with what they share in git_options.py.
"""

from __future__ import annotations

import shlex
from dataclasses import replace

from gateway.effects.shell import git_aliases, git_refs, git_remote, git_worktree
from gateway.effects.shell.call import Call
from gateway.effects.shell.family import Family
from gateway.effects.shell.git_options import GitHandler, config_key
from gateway.effects.shell.walker import Describer
from gateway.effects.shell.words import Word, names, short

__all__ = ["FAMILY", "GIT_SAFE_ENV", "SUBCOMMANDS"]


# git reads many GIT_* variables, and several name programs it runs or files it writes (GIT_EXTERNAL_DIFF,
# GIT_SSH_COMMAND, GIT_TRACE=/path, GIT_DIR, GIT_CONFIG_*): only these are known to be harmless.
GIT_SAFE_ENV = names(
    "GIT_AUTHOR_NAME GIT_AUTHOR_EMAIL GIT_AUTHOR_DATE GIT_COMMITTER_NAME GIT_COMMITTER_EMAIL GIT_COMMITTER_DATE "
    "GIT_TERMINAL_PROMPT GIT_OPTIONAL_LOCKS GIT_MERGE_AUTOEDIT GIT_FLUSH GIT_LITERAL_PATHSPECS GIT_GLOB_PATHSPECS "
    "GIT_NOGLOB_PATHSPECS GIT_ICASE_PATHSPECS GIT_ADVICE GIT_PROGRESS_DELAY GIT_DEFAULT_HASH"
)
_GIT_TRACE_VALUES = frozenset({"", "0", "1", "2", "true", "false"})
# GIT_* variables that name a program git runs (the others change what it reads or writes)
_PROGRAM_VARS = names("GIT_EXTERNAL_DIFF GIT_PAGER GIT_EDITOR GIT_SEQUENCE_EDITOR GIT_SSH GIT_SSH_COMMAND GIT_ASKPASS")
_PROGRAM_VARS |= names("GIT_PROXY_COMMAND GIT_EXEC_PATH PAGER EDITOR VISUAL")
_GLOBAL_VALUES = names("-C -c --git-dir --work-tree --namespace --super-prefix --config-env --attr-source --list-cmds")

MAX_ALIAS_EXPANSIONS = 16


def _git(d: Describer, call: Call, expanded: tuple[str, ...] = ()) -> None:
    """``expanded``: the aliases already expanded into this command (git refuses a loop)."""
    args = call.args
    directories: list[Word] = []
    inline_aliases: dict[str, str] = {}
    i = 0
    while i < len(args):
        word = args[i]
        value = word.value
        if not word.literal:
            d.opaque(f"git: {short(word.raw)} is not literal ({word.why})")
            return
        if not value.startswith("-"):
            break
        name, eq, attached = value.partition("=")
        given = word.tail(len(name) + 1) if eq else (args[i + 1] if i + 1 < len(args) else None)
        if value in _GLOBAL_VALUES or (eq and name in _GLOBAL_VALUES):
            i += 0 if eq else 1
            _global_value(d, call, name, given, directories)
        elif name == "--exec-path" and eq:
            d.execute(call, attached, "git --exec-path changes which programs git runs")
        elif value in ("-p", "--paginate"):
            d.execute(call, "pager", "git --paginate runs a pager")
        elif value.startswith("-c") and len(value) > 2:
            config_key(d, call, word.tail(2))
        if value.startswith("-c"):
            setting = value[2:] or (given.value if given is not None and not eq else "")
            key, has_value, alias = setting.partition("=")
            if key.lower().startswith("alias.") and has_value:
                inline_aliases[key[len("alias.") :].lower()] = alias
        i += 1
    _environment(d, call)
    with _in_directories(d, call, directories):
        call.facts.cwd = d.shown_cwd()
        _foreign_repository(d, call)
        if i >= len(args):
            call.facts.access = "read"  # git, git --version, --help, --exec-path: prints something
            return
        sub = args[i].value
        call.facts.subcommand = sub
        handler = SUBCOMMANDS.get(sub)
        if handler is None:
            _alias(d, call, args[i:], inline_aliases, expanded)
            return
        handler(d, call, _unabbreviated(d, call, args[i + 1 :]))


def _alias(d: Describer, call: Call, words: list[Word], inline: dict[str, str], expanded: tuple[str, ...]) -> None:
    """A subcommand git does not have: the alias it names, expanded as git would (gateway/effects/shell/
    git_aliases.py), then described like the command it stands for; else a `git-NAME` program may run."""
    sub = words[0].value
    written = expanded[0] if expanded else sub
    unknown = f"git {sub!r} is not a git command it knows: an alias or git-{sub} may run"
    if sub in git_aliases.git_commands() or sub in expanded or len(expanded) >= MAX_ALIAS_EXPANSIONS:
        d.execute(call, f"git-{sub}", unknown)
        return
    try:
        text = git_aliases.lookup(d, call, sub, inline)
    except git_aliases.Untrusted as exc:
        d.execute(call, f"alias.{sub}", f"git alias {short(sub)}: {exc}")
        return
    if text is None:
        d.execute(call, f"git-{sub}", unknown)
        return
    if text.lstrip().startswith("!"):
        d.execute(call, text, f"git alias {short(sub)} runs a shell command: {short(text)}")
        return
    try:
        alias_words = [Word.of(w) for w in shlex.split(text)]
    except ValueError:
        alias_words = []
    if not alias_words:
        d.execute(call, f"alias.{sub}", f"git alias {short(sub)} does not split into words: {short(text)}")
        return
    inner = replace(call, words=[call.words[0], *alias_words, *words[1:]])
    _git(d, inner, (*expanded, sub))
    call.facts.subcommand_as_written = written


def _global_value(d: Describer, call: Call, name: str, value: Word | None, directories: list[Word]) -> None:
    if value is None:
        return
    if name == "-C":
        directories.append(value)
    elif name == "-c":
        config_key(d, call, value)
    elif name == "--config-env":
        d.execute(call, value.value, "git --config-env sets configuration from the environment")
    elif name == "--git-dir":
        path = d.quiet_locate(value)
        if path is None or path != d.ws.root / ".git":
            # a repository the agent could have written (its config names pagers, hooks, filters)
            d.opaque(f"git --git-dir {short(value.raw)} uses another repository's configuration and hooks")
    elif name == "--work-tree":
        d.unknown_paths([value], call)


class _in_directories:
    """`git -C a -C b`: each -C relative to the one before; restored afterwards."""

    def __init__(self, d: Describer, call: Call, directories: list[Word]) -> None:
        self.d, self.call, self.directories = d, call, directories

    def __enter__(self) -> None:
        self.saved = self.d.cwd
        for word in self.directories:
            if self.d.cwd is not None or word.value.startswith("/"):
                self.d.cwd = self.d.locate(word, "git -C")
            if self.d.cwd is None:
                break

    def __exit__(self, *exc: object) -> None:
        self.d.cwd = self.saved


def _foreign_repository(d: Describer, call: Call) -> None:
    """git finds its repository by looking at the cwd and its parents: a `.git` (dir or file) or a bare
    repository (HEAD, config, objects) in a subdirectory is another repository, whose config can name
    programs git runs (core.fsmonitor, core.pager, hooks). The workspace's own repository is at its root."""
    cwd = d.cwd
    if cwd is None or cwd == d.ws.root or not d.ws.contains(cwd):
        return
    made = set(d.writes) | set(d.creates)
    directory = cwd
    while directory != d.ws.root and d.ws.contains(directory):
        shown = d.display(directory)
        markers = [directory / ".git", directory / "HEAD", directory / "config"]
        if (
            any(p.exists() or p.is_symlink() for p in markers[:1])
            or all(p.exists() for p in markers[1:])
            or any(f"{shown}/{name}" in made for name in (".git", "HEAD", "config"))
        ):
            d.execute(
                call,
                f"repository {shown}",
                f"git runs in {shown}, which holds another repository: its configuration may name programs git runs",
            )
            return
        directory = directory.parent


# Long options that run programs, write or read files, or change which repository git uses. Most git
# subcommands accept any unambiguous abbreviation of a long option (`git grep --open=cat` is
# --open-files-in-pager=cat), so each abbreviation of one of these is read as the option itself.
_RISKY_LONG = names(
    "--open-files-in-pager --upload-pack --receive-pack --exec --template --output --output-directory --ext-diff "
    "--textconv --filters --unsafe-paths --stdin-paths --global --system --file --config --separate-git-dir "
    "--add-file --remote --contents --reference --pathspec-from-file --signature-file --ignore-revs-file --edit "
    "--strategy"
)
# Real options that are prefixes of a risky one but mean something else (diff --text, hash-object --stdin).
_NOT_ABBREVIATIONS = names("--text --add --signature --path --stdin --filter --ignore-rev --glob")


def _unabbreviated(d: Describer, call: Call, rest: list[Word]) -> list[Word]:
    out: list[Word] = []
    for word in rest:
        name, eq, value = word.value.partition("=")
        if word.literal and name.startswith("--") and len(name) > 3 and name not in _RISKY_LONG | _NOT_ABBREVIATIONS:
            matches = [risky for risky in _RISKY_LONG if risky.startswith(name)]
            if len(matches) == 1:
                word = replace(word, value=matches[0] + eq + value)
            elif matches:
                d.opaque(f"git: {short(name)} may abbreviate {', '.join(sorted(matches))}")
        out.append(word)
    return out


def _environment(d: Describer, call: Call) -> None:
    """GIT_* variables given to git (the walk already made the unsafe ones opaque): programs it runs."""
    harmless = ("", "cat", "true", ":", "less", "more", "vi", "vim", "nano")
    for name, value in call.facts.env.items():
        runs = name in _PROGRAM_VARS and value not in harmless
        other = (
            name.startswith("GIT_") and name not in GIT_SAFE_ENV | _PROGRAM_VARS and not name.startswith("GIT_TRACE")
        )
        if runs or other:
            call.facts.executes.append(f"{name}={value}")


def _git_env(name: str, value: Word) -> str | None:
    """GIT_* variables outside the safe ones change what git runs or where it reads and writes (GIT_TRACE=1
    prints to stderr; GIT_TRACE=/path writes a file)."""
    if not name.startswith("GIT_") or name in GIT_SAFE_ENV:
        return None
    if name.startswith("GIT_TRACE") and value.literal and value.value in _GIT_TRACE_VALUES:
        return None
    return "changes what git runs or where it reads and writes"


def _subcommands(*parts: dict[str, GitHandler]) -> dict[str, GitHandler]:
    merged: dict[str, GitHandler] = {}
    for part in parts:
        clash = merged.keys() & part.keys()
        assert not clash, f"git subcommands with two handlers: {sorted(clash)}"
        merged.update(part)
    return merged


# The subcommands git has (anything else may be an alias or a git-<name> program on PATH)
SUBCOMMANDS = _subcommands(git_worktree.SUBCOMMANDS, git_refs.SUBCOMMANDS, git_remote.SUBCOMMANDS)

FAMILY = Family(name="git", handlers={"git": _git}, env_checks=(_git_env,))
