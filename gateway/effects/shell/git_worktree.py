"""git's subcommands on the working tree and the index: what they read (log, show, diff, grep, blame, cat-file),
and what they rewrite (checkout, merge, rebase, reset, clean, rm, mv, add, commit, apply, am, init, ...).

    SUBCOMMANDS["reset"](d, call, rest)   # `git reset --hard`: access write, the whole tree (.) modified
"""

from __future__ import annotations

from gateway.effects.shell.call import Call
from gateway.effects.shell.files import destinations
from gateway.effects.shell.git_options import GitHandler, blobs, has, options
from gateway.effects.shell.walker import Describer
from gateway.effects.shell.words import Word, names, short

__all__ = ["SUBCOMMANDS", "local_write", "worktree_write"]


def _read(d: Describer, call: Call, rest: list[Word]) -> None:
    call.facts.access = "read"
    opts = options(
        d, call, rest, "SGLnO", "--author --committer --grep --since --until --format --pretty --max-count --skip"
    )
    blobs(d, call, opts.operands)
    d.unknown_paths(rest, call)  # fast-export --import-marks=FILE, rev-parse paths, ...


def local_write(d: Describer, call: Call, rest: list[Word]) -> None:
    call.facts.access = "write"
    options(d, call, rest)
    d.unknown_paths(rest, call)  # fast-import --export-marks=FILE, bugreport -o DIR, mailinfo MSG PATCH, ...


def _help(d: Describer, call: Call, rest: list[Word]) -> None:
    call.facts.access = "read"
    if any(w.value in ("-w", "--web", "-i", "--info", "-m", "--man") for w in rest):
        d.execute(call, "documentation viewer", "git help -w/-i/-m runs a browser, info or man")


def _diff(d: Describer, call: Call, rest: list[Word]) -> None:
    """diff (and its plumbing): --no-index compares two files anywhere, so they are reads."""
    call.facts.access = "read"
    opts = options(d, call, rest, "SGUlM", "--diff-filter --relative --src-prefix --dst-prefix")
    blobs(d, call, opts.operands)
    if opts.has("--no-index"):
        for word in opts.operands:
            d.read(word, call)
    for word in [w for name, w in opts.flags if name == "-O" and w is not None]:
        d.read(word, call)


_OPEN_FILES = "--open-files-in-pager"


def _grep(d: Describer, call: Call, rest: list[Word]) -> None:
    """grep -O[pager] / --open-files-in-pager[=pager] runs a program on the matching files."""
    call.facts.access = "read"
    opts = options(d, call, rest, "efABCm", "--max-depth --threads --context --after-context", optional="O")
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
    opts = options(d, call, rest, "SL", "--contents --ignore-revs-file --ignore-rev")
    for word in opts.values("--contents", "--ignore-revs-file", "-S"):
        d.read(word, call)


def _cat_file(d: Describer, call: Call, rest: list[Word]) -> None:
    call.facts.access = "read"
    opts = options(d, call, rest)
    blobs(d, call, opts.operands)
    if opts.has("--filters"):
        d.execute(call, "filters", "git cat-file --filters runs the configured filters")


_STRATEGIES = names("ort recursive resolve octopus ours subtree")


def worktree_write(d: Describer, call: Call, rest: list[Word]) -> None:
    """Subcommands that rewrite working-tree files: the paths given, or the whole tree (the cwd)."""
    call.facts.access = "write"
    values = [w.value for w in rest]
    opts = options(d, call, rest, "bBsXmSOC", "--strategy --strategy-option --onto --pathspec-from-file")
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


def _rebase(d: Describer, call: Call, rest: list[Word]) -> None:
    worktree_write(d, call, rest)
    opts = d.options(call, "xsXo", "--exec --strategy --strategy-option --onto", args=rest)
    for word in opts.values("-x", "--exec"):
        d.run_text(word, call)  # the command runs after each commit: listed and described like bash -c


def _reset(d: Describer, call: Call, rest: list[Word]) -> None:
    call.facts.access = "write"
    options(d, call, rest, "", "--pathspec-from-file")
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
    worktree_write(d, call, [])
    for word in d.options(call, "pC", "--directory --exclude --include --patch-format", args=rest).operands:
        d.read(word, call)


def _init(d: Describer, call: Call, rest: list[Word]) -> None:
    call.facts.access = "write"
    opts = d.options(call, "b", "--template --separate-git-dir --initial-branch --object-format --shared", args=rest)
    if opts.values("--template"):
        d.execute(call, "template hooks", "git init --template installs hooks from a template directory")
    for word in opts.values("--separate-git-dir") + opts.operands[:1]:
        d.write(word, call)


def _hash_object(d: Describer, call: Call, rest: list[Word]) -> None:
    opts = d.options(call, "t", "--path", args=rest)
    call.facts.access = "write" if opts.has("-w") else "read"
    if opts.has("--stdin-paths"):
        d.opaque("git hash-object --stdin-paths reads files named on its input")
    for word in opts.operands:
        d.read(word, call)


def _format_patch(d: Describer, call: Call, rest: list[Word]) -> None:
    """format-patch writes one file per commit into -o DIR (default: the cwd), unless --stdout."""
    opts = options(
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
    call.facts.access = "write" if has(rest, "--lost-found") else "read"


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
    **{name: local_write for name in _WRITES.split()},
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
    **{name: worktree_write for name in ("checkout", "switch", "restore", "merge", "cherry-pick", "revert")},
    "rebase": _rebase,
    "reset": _reset,
    "clean": _clean,
    "rm": _rm,
    "mv": _mv,
    "hash-object": _hash_object,
    "format-patch": _format_patch,
}
