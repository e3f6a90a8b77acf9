"""git: where it runs, its subcommand, what it does to the repository, and what else it runs or writes.

One parser for git, so the policy never re-parses argv: the global options (``-C``, ``-c``,
``--git-dir``...), the subcommand after them, ``access`` (``read``, ``write`` or ``remote``) and
``operation`` (``stash drop`` -> "drop"); files its options read and write (``--output``,
``format-patch -o``, ``archive -o``, ``bundle create``); programs it may run (a pager, an external
diff, ``grep -O``, ``rebase -x``, config keys, GIT_* variables, aliases) as ``executes`` and opaque.

    HANDLERS["git"](d, call)   # `git -C src log --output=/tmp/x`: cwd src, access read, writes /tmp/x
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import replace

from gateway.effects.shell import git_aliases
from gateway.effects.shell.files import destinations
from gateway.effects.shell.options import Opts
from gateway.effects.shell.walker import GIT_SAFE_ENV, Call, Describer, Handler
from gateway.effects.shell.words import Word, names, short

# `git -c` / `git config` keys whose values are harmless; any other key may name a program git runs.
SAFE_CONFIG_KEYS = tuple(
    names(
        "user. color. advice. init.defaultbranch core.quotepath core.autocrlf core.safecrlf core.filemode "
        "core.ignorecase commit.gpgsign tag.gpgsign pull.rebase pull.ff merge.ff push.default push.autosetupremote "
        "fetch.prune log. status. column. i18n. safe.directory gc.auto maintenance.auto rebase.autosquash "
        "rebase.autostash diff.renames branch.autosetuprebase http.sslverify"
    )
)
# GIT_* variables that name a program git runs (the others change what it reads or writes)
_PROGRAM_VARS = names("GIT_EXTERNAL_DIFF GIT_PAGER GIT_EDITOR GIT_SEQUENCE_EDITOR GIT_SSH GIT_SSH_COMMAND GIT_ASKPASS")
_PROGRAM_VARS |= names("GIT_PROXY_COMMAND GIT_EXEC_PATH PAGER EDITOR VISUAL")
_GLOBAL_VALUES = names("-C -c --git-dir --work-tree --namespace --super-prefix --config-env --attr-source --list-cmds")

GitHandler = Callable[[Describer, Call, list[Word]], None]
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


def config_key(d: Describer, call: Call, word: Word) -> None:
    """A configuration key set for this command (-c) or in a config file: outside the safe list, git may
    run what it names (core.pager, core.sshCommand, alias.x='!sh', diff.external, core.hooksPath...)."""
    key = word.value.split("=", 1)[0].lower()
    if not word.literal or not key.startswith(SAFE_CONFIG_KEYS):
        d.execute(call, f"config {key}", f"git config {short(key)} may make git run a program")


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


# --------------------------------------------------------------------------------------------------
# Options shared by subcommands: files written, programs run
# --------------------------------------------------------------------------------------------------


def _opts(d: Describer, call: Call, rest: list[Word], short_opts: str = "", long: str = "", optional: str = "") -> Opts:
    """Parse a subcommand's options; --output writes a file, --ext-diff/--textconv run programs."""
    opts = d.options(call, short_opts, f"{long} --output", optional=optional, args=rest)
    for word in opts.values("--output"):
        d.write(word, call)
    if opts.has("--ext-diff"):
        d.execute(call, "external diff", "git --ext-diff runs the configured external diff program")
    if opts.has("--textconv"):
        d.execute(call, "textconv filter", "git --textconv runs the configured textconv filters")
    return opts


def _read(d: Describer, call: Call, rest: list[Word]) -> None:
    call.facts.access = "read"
    opts = _opts(
        d, call, rest, "SGLnO", "--author --committer --grep --since --until --format --pretty --max-count --skip"
    )
    _blobs(d, call, opts.operands)
    d.unknown_paths(rest, call)  # fast-export --import-marks=FILE, rev-parse paths, ...


_BLOB = re.compile(r"^[^:]*:(?:[0-3]:)?(?!/)(.+)$")


def _blobs(d: Describer, call: Call, operands: list[Word]) -> None:
    """`git show HEAD:.env`, `git cat-file -p :0:config/secrets.yml`: the committed content of a file,
    named by its path from the top of the repository (stated as a path, for the secrets concern)."""
    for word in operands:
        match = _BLOB.match(word.value) if word.literal and "://" not in word.value else None
        if match:
            path = match.group(1).removeprefix("./")
            located = d.quiet_locate(Word.of(str(d.ws.root / path)))
            if located is not None:
                call.facts.paths.append(d.display(located))


def _write(d: Describer, call: Call, rest: list[Word]) -> None:
    call.facts.access = "write"
    _opts(d, call, rest)
    d.unknown_paths(rest, call)  # fast-import --export-marks=FILE, bugreport -o DIR, mailinfo MSG PATCH, ...


def _help(d: Describer, call: Call, rest: list[Word]) -> None:
    call.facts.access = "read"
    if any(w.value in ("-w", "--web", "-i", "--info", "-m", "--man") for w in rest):
        d.execute(call, "documentation viewer", "git help -w/-i/-m runs a browser, info or man")


def _diff(d: Describer, call: Call, rest: list[Word]) -> None:
    """diff (and its plumbing): --no-index compares two files anywhere, so they are reads."""
    call.facts.access = "read"
    opts = _opts(d, call, rest, "SGUlM", "--diff-filter --relative --src-prefix --dst-prefix")
    _blobs(d, call, opts.operands)
    if opts.has("--no-index"):
        for word in opts.operands:
            d.read(word, call)
    for word in [w for name, w in opts.flags if name == "-O" and w is not None]:
        d.read(word, call)


_OPEN_FILES = "--open-files-in-pager"


def _grep(d: Describer, call: Call, rest: list[Word]) -> None:
    """grep -O[pager] / --open-files-in-pager[=pager] runs a program on the matching files."""
    call.facts.access = "read"
    opts = _opts(d, call, rest, "efABCm", "--max-depth --threads --context --after-context", optional="O")
    opts.flags = [(_OPEN_FILES if name.startswith("--open-files-in-pager") else name, v) for name, v in opts.flags]
    for name, value in opts.flags:
        if name in ("-O", "--open-files-in-pager"):
            pager = value.value if value is not None else "pager"
            d.execute(call, pager or "pager", f"git grep {name} runs {short(pager or 'a pager')} on the files")
    for word in opts.values("-f"):
        d.read(word, call)
    if opts.has("--no-index"):
        operands = opts.operands[0 if opts.values("-e", "-f") else 1 :]
        for word in operands or [Word.of(".")]:
            d.read_tree(word, call)


def _blame(d: Describer, call: Call, rest: list[Word]) -> None:
    call.facts.access = "read"
    opts = _opts(d, call, rest, "SL", "--contents --ignore-revs-file --ignore-rev")
    for word in opts.values("--contents", "--ignore-revs-file", "-S"):
        d.read(word, call)


def _cat_file(d: Describer, call: Call, rest: list[Word]) -> None:
    call.facts.access = "read"
    opts = _opts(d, call, rest)
    _blobs(d, call, opts.operands)
    if opts.has("--filters"):
        d.execute(call, "filters", "git cat-file --filters runs the configured filters")


_STRATEGIES = names("ort recursive resolve octopus ours subtree")


def _worktree_write(d: Describer, call: Call, rest: list[Word]) -> None:
    """Subcommands that rewrite working-tree files: the paths given, or the whole tree (the cwd)."""
    call.facts.access = "write"
    values = [w.value for w in rest]
    opts = _opts(d, call, rest, "bBsXmSOC", "--strategy --strategy-option --onto --pathspec-from-file")
    for word in opts.values("-s", "--strategy"):
        if not (word.literal and word.value in _STRATEGIES):  # git runs git-merge-<strategy> from PATH
            d.execute(call, f"git-merge-{word.value}", f"git merge strategy {short(word.raw)} runs a program")
    for word in opts.values("--pathspec-from-file"):
        d.read(word, call)
    paths: list[Word] = []
    if "--" in values:
        paths = rest[values.index("--") + 1 :]
    elif call.facts.subcommand == "restore" and not ("--staged" in values and "--worktree" not in values):
        paths = [w for w in rest if not w.value.startswith("-")]
    elif call.facts.subcommand == "restore":
        return  # --staged alone only touches the index
    for word in paths or [Word.of(".")]:
        d.write(word, call, modify=True)


def _pull(d: Describer, call: Call, rest: list[Word]) -> None:
    _network(d, call, rest)
    _worktree_write(d, call, rest)
    call.facts.access = "remote"


def _rebase(d: Describer, call: Call, rest: list[Word]) -> None:
    _worktree_write(d, call, rest)
    opts = d.options(call, "xsXo", "--exec --strategy --strategy-option --onto", args=rest)
    for word in opts.values("-x", "--exec"):
        d.run_text(word, call)  # the command runs after each commit: listed and described like bash -c


def _reset(d: Describer, call: Call, rest: list[Word]) -> None:
    call.facts.access = "write"
    _opts(d, call, rest, "", "--pathspec-from-file")
    if any(w.value in ("--hard", "--merge", "--keep") for w in rest):
        d.write(Word.of("."), call, modify=True)


def _clean(d: Describer, call: Call, rest: list[Word]) -> None:
    opts = d.options(call, "e", "--exclude", args=rest)
    if opts.has("-n", "--dry-run"):
        call.facts.access = "read"
        return
    call.facts.access = "write"
    call.facts.recursive = True
    for word in opts.operands or [Word.of(".")]:
        d.delete(word, call, recursive=True)


def _rm(d: Describer, call: Call, rest: list[Word]) -> None:
    call.facts.access = "write"
    opts = d.options(call, "", "--pathspec-from-file", args=rest)
    call.facts.recursive = opts.has("-r")
    if not opts.has("--cached", "-n", "--dry-run"):
        for word in opts.operands:
            d.delete(word, call, recursive=opts.has("-r"))


def _mv(d: Describer, call: Call, rest: list[Word]) -> None:
    call.facts.access = "write"
    operands = list(d.options(call, args=rest).operands)
    if len(operands) >= 2:
        dest = operands.pop()
        for word in operands:
            d.delete(word, call, recursive=d.is_dir(word))
        destinations(d, call, operands, None, dest, no_dir=False)


def _add(d: Describer, call: Call, rest: list[Word]) -> None:
    """add: the files' contents go into the index (a read of them, and a write of the repository)."""
    call.facts.access = "write"
    opts = d.options(call, "", "--chmod --pathspec-from-file", args=rest)
    for word in opts.values("--pathspec-from-file"):
        d.read(word, call)
    for word in opts.operands:
        d.read(word, call)


def _commit(d: Describer, call: Call, rest: list[Word]) -> None:
    call.facts.access = "write"
    opts = d.options(
        call,
        "mFtcCS",
        "--message --file --template --reuse-message --reedit-message --fixup --squash "
        "--author --date --cleanup --trailer --pathspec-from-file",
        args=rest,
        optional="u",
    )
    for word in opts.values("-F", "--file", "-t", "--template", "--pathspec-from-file"):
        d.read(word, call)


def _apply(d: Describer, call: Call, rest: list[Word]) -> None:
    opts = d.options(call, "pC", "--directory --exclude --include --build-fake-ancestor", args=rest)
    for word in opts.operands:
        d.read(word, call)
    if opts.has("--unsafe-paths"):
        d.opaque("git apply --unsafe-paths writes outside the repository")
    if opts.has("--check", "--stat", "--numstat", "--summary") and not opts.has("--apply"):
        call.facts.access = "read"
        return
    call.facts.access = "write"
    if not opts.has("--cached"):
        d.write(Word.of("."), call, modify=True)


def _am(d: Describer, call: Call, rest: list[Word]) -> None:
    _worktree_write(d, call, [])
    for word in d.options(call, "pC", "--directory --exclude --include --patch-format", args=rest).operands:
        d.read(word, call)


def _init(d: Describer, call: Call, rest: list[Word]) -> None:
    call.facts.access = "write"
    opts = d.options(call, "b", "--template --separate-git-dir --initial-branch --object-format --shared", args=rest)
    if opts.values("--template"):
        d.execute(call, "template hooks", "git init --template installs hooks from a template directory")
    for word in opts.values("--separate-git-dir") + opts.operands[:1]:
        d.write(word, call)


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


def _remote(d: Describer, call: Call, rest: list[Word]) -> None:
    operands = [w for w in rest if not w.value.startswith("-")]
    action = operands[0].value if operands else ""
    call.facts.operation = action or None
    if any("::" in w.value and "://" not in w.value.split("::")[0] for w in operands):
        d.execute(call, "remote helper", "git remote helper URL runs a program")
    if action in ("update", "prune") or (action in ("show", "set-head") and not _has(rest, "-n")):
        call.facts.access = "remote" if action != "set-head" or _has(rest, "-a", "--auto") else "write"
        if call.facts.access == "remote":
            name = operands[1].value if len(operands) > 1 and action != "update" else "default"
            d.reach(f"git-remote:{name}", "git")
        return
    writes = ("add", "remove", "rm", "rename", "set-url", "set-head", "set-branches")
    call.facts.access = "write" if action in writes else "read"


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


def _has(rest: list[Word], *flags: str) -> bool:
    return any(w.value in flags for w in rest)


def _operation(reads: tuple[str, ...], default: str, executes: tuple[str, ...] = ()) -> GitHandler:
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
        _opts(d, call, rest)

    return handler


def _stash(d: Describer, call: Call, rest: list[Word]) -> None:
    _operation(("list", "show"), "push")(d, call, rest)
    if call.facts.operation in ("push", "save", "pop", "apply", "branch"):
        d.write(Word.of("."), call, modify=True)


def _worktree(d: Describer, call: Call, rest: list[Word]) -> None:
    """worktree add PATH makes a checkout there; remove deletes it; move moves it."""
    _operation(("list",), "list")(d, call, rest)
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
    listing = not rest or _has(rest, "-l", "--list")
    call.facts.access = "read" if listing else "write"


def _hash_object(d: Describer, call: Call, rest: list[Word]) -> None:
    opts = d.options(call, "t", "--path", args=rest)
    call.facts.access = "write" if opts.has("-w") else "read"
    if opts.has("--stdin-paths"):
        d.opaque("git hash-object --stdin-paths reads files named on its input")
    for word in opts.operands:
        d.read(word, call)


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


def _bundle(d: Describer, call: Call, rest: list[Word]) -> None:
    operands = [w for w in rest if not w.value.startswith("-")]
    action = operands[0].value if operands else ""
    call.facts.operation = action or None
    call.facts.access = "read" if action in ("verify", "list-heads") else "write"
    if len(operands) > 1:
        (d.write if action == "create" else d.read)(operands[1], call)


def _format_patch(d: Describer, call: Call, rest: list[Word]) -> None:
    """format-patch writes one file per commit into -o DIR (default: the cwd), unless --stdout."""
    opts = _opts(
        d,
        call,
        rest,
        "ovn",
        "--output-directory --subject-prefix --signature-file --in-reply-to "
        "--to --cc --from --base --suffix --start-number --reroll-count --cover-from-description",
    )
    call.facts.access = "read" if opts.has("--stdout") else "write"
    for word in opts.values("--signature-file"):
        d.read(word, call)
    if not opts.has("--stdout") and not opts.values("--output"):
        d.write(opts.last("-o", "--output-directory") or Word.of("."), call, modify=True)


def _fsck(d: Describer, call: Call, rest: list[Word]) -> None:
    call.facts.access = "write" if _has(rest, "--lost-found") else "read"


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
    _write(d, call, rest)
    if any(not w.literal or w.value == "--stdin" or _GATEWAY_REF.search(w.value) for w in rest):
        call.facts.access = "destroy"


def _reflog(d: Describer, call: Call, rest: list[Word]) -> None:
    """reflog expire/delete drop the entries that keep a reset or deleted branch's commits alive."""
    _operation(("show", "exists", "list"), "show")(d, call, rest)
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


# --------------------------------------------------------------------------------------------------
# The subcommands git has (anything else may be an alias or a git-<name> program on PATH)
# --------------------------------------------------------------------------------------------------

_READS = (
    "status log show whatchanged shortlog ls-files ls-tree rev-parse describe rev-list show-ref for-each-ref "
    "count-objects check-ignore check-attr check-ref-format check-mailmap merge-base name-rev version var "
    "verify-commit verify-tag verify-pack show-branch cherry get-tar-commit-id merge-tree fast-export column "
    "stripspace patch-id show-index fmt-merge-msg"
)
_WRITES = (
    "commit-graph commit-tree multi-pack-index pack-objects repack prune-packed pack-refs update-server-info "
    "index-pack unpack-objects mktree mktag write-tree read-tree update-index checkout-index merge-file "
    "rerere replay fast-import unpack-file mailsplit mailinfo interpret-trailers diagnose bugreport init-db"
)
_DIFFS = "diff diff-tree diff-files diff-index range-diff"

SUBCOMMANDS: dict[str, GitHandler] = {
    **{name: _read for name in _READS.split()},
    "help": _help,
    **{name: _write for name in _WRITES.split()},
    **{name: _diff for name in _DIFFS.split()},
    "grep": _grep,
    "blame": _blame,
    "annotate": _blame,
    "cat-file": _cat_file,
    "fsck": _fsck,
    "add": _add,
    "commit": _commit,
    "apply": _apply,
    "am": _am,
    "init": _init,
    "checkout": _worktree_write,
    "switch": _worktree_write,
    "restore": _worktree_write,
    "merge": _worktree_write,
    "cherry-pick": _worktree_write,
    "revert": _worktree_write,
    "rebase": _rebase,
    "reset": _reset,
    "clean": _clean,
    "rm": _rm,
    "mv": _mv,
    "branch": _branch,
    "tag": _tag,
    "remote": _remote,
    "config": _config,
    "stash": _stash,
    "worktree": _worktree,
    "notes": _operation(("list", "show"), "list"),
    "reflog": _reflog,
    "update-ref": _update_ref,
    "prune": _prune,
    "sparse-checkout": _operation(("list",), "list"),
    "submodule": _submodule,
    "bisect": _bisect,
    "symbolic-ref": _symbolic_ref,
    "replace": _replace,
    "hash-object": _hash_object,
    "archive": _archive,
    "bundle": _bundle,
    "format-patch": _format_patch,
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
    "daemon": _daemon,
    **{name: _network for name in _NETWORK_OPTIONS if name != "pull"},
    "pull": _pull,
}

HANDLERS: dict[str, Handler] = {"git": _git}
