"""Programs that read, write, link and delete files: cat, ls, rm, cp, mv, ln, chmod, dd, tar, rsync, ...

Each handler states the files the program's own operands and options touch; ``FAMILY`` (at the end)
declares them with the policy's classes of these programs (read-only, described, dangerous, modes, links).

    FAMILY.handlers["rm"](d, call)   # `rm -rf build`: a recursive delete of build, call.facts.recursive = True
"""

from __future__ import annotations

import re
from pathlib import Path

from gateway.effects.shell.call import Call, Handler
from gateway.effects.shell.family import Family
from gateway.effects.shell.walker import Describer
from gateway.effects.shell.words import Word, inside, names

__all__ = ["FAMILY", "copy_like", "destinations", "reads", "world_writable"]


def reads(
    short_opts: str = "", long: str = "", names_only: bool = False, inputs: str = "", outputs: str = ""
) -> Handler:
    """A program whose operands are files it reads (cat, head, wc, ...).

    ``names_only`` for programs that look at names and metadata, not contents (ls, stat, du): a glob
    operand is then not expanded into the files it matches. ``inputs`` and ``outputs`` name the options
    (among those taking a value) whose value is a file it reads (hexdump -f) or writes (less -o, tree -o)."""
    reading, writing = inputs.split(), outputs.split()

    def handler(d: Describer, call: Call) -> None:
        opts = d.options(call, short_opts, f"{long} --files0-from --reference")
        for word in opts.operands + opts.values("--files0-from", "--reference", *reading):
            d.read(word, call, expand=not names_only)
        for word in opts.values(*writing):
            d.write(word, call)
        call.facts.recursive = opts.has("-R", "--recursive")

    return handler


def _mkdir(d: Describer, call: Call) -> None:
    opts = d.options(call, "m", "--mode --context")
    call.facts.world_writable = any(world_writable(w.value) for w in opts.values("-m", "--mode"))
    for word in opts.operands:
        path = d.write(word, call)
        if path is not None:
            d.made_dirs.add(path)


def _rm(d: Describer, call: Call) -> None:
    opts = d.options(call, known="--recursive --force --dir --interactive --one-file-system --no-preserve-root")
    call.facts.recursive = opts.has("-r", "-R", "--recursive")
    for word in opts.operands:
        d.delete(word, call, recursive=call.facts.recursive)


def _rmdir(d: Describer, call: Call) -> None:
    for word in d.options(call).operands:
        d.delete(word, call)


def _shred(d: Describer, call: Call) -> None:
    opts = d.options(call, "ns", "--iterations --size --random-source", known="--remove")
    for word in opts.operands:
        d.write(word, call, modify=True)
        if opts.has("-u", "--remove"):
            d.delete(word, call)


def copy_like(remove_sources: bool) -> Handler:
    """cp and mv: sources are read (cp) or deleted (mv, recursively for a directory); the target is written.

    ``cp -l`` and ``cp -s`` make links to the sources: reads too (a link to a file outside the workspace
    makes its content readable under an inside name)."""

    def handler(d: Describer, call: Call) -> None:
        opts = d.options(call, "tS", "--target-directory --suffix --sparse", known="--no-target-directory --recursive")
        call.facts.recursive = opts.has("-r", "-R", "-a", "--recursive", "--archive")
        sources = list(opts.operands)
        directory = opts.last("-t", "--target-directory")
        dest = sources.pop() if directory is None and len(sources) >= 2 else None
        for source in sources:
            if remove_sources:
                d.delete(source, call, recursive=d.is_dir(source))
            else:
                d.read(source, call)
        destinations(d, call, sources, directory, dest, no_dir=opts.has("-T", "--no-target-directory"))

    return handler


def destinations(
    d: Describer, call: Call, sources: list[Word], directory: Word | None, dest: Word | None, no_dir: bool
) -> None:
    """Where copies land: ``dir/name`` inside a target directory, or the target itself."""
    if directory is None and dest is not None:
        into = not no_dir and (len(sources) > 1 or d.is_dir(dest) or dest.value.endswith("/"))
        if not into:
            d.write(dest, call)
            return
        directory = dest
    if directory is None:
        return
    for source in sources:
        d.write(inside(directory, source), call)


def _ln(d: Describer, call: Call) -> None:
    """ln [-s] SOURCE... DEST: the links are written; the sources are reads, resolved as the kernel does.

    A symbolic link's source is relative to the link's directory, not to the cwd: `ln -s ../x sub/y`
    points at x next to sub, and `ln -s ../x y` at x above the cwd."""
    opts = d.options(call, "tS", "--target-directory --suffix", known="--no-target-directory --symbolic")
    targets = list(opts.operands)
    directory = opts.last("-t", "--target-directory")
    if directory is None and len(targets) == 1:
        directory = Word.of(".")  # `ln -s ../x` makes ./x
    dest = targets.pop() if directory is None and len(targets) >= 2 else None
    into = directory is not None or (
        dest is not None
        and not opts.has("-T", "--no-target-directory")
        and (len(targets) > 1 or d.is_dir(dest) or dest.value.endswith("/"))
    )
    symbolic = opts.has("-s", "--symbolic")
    for source in targets:
        link_dir = directory if directory is not None else (dest if into else None)
        _link_source(d, call, source, link_dir if link_dir is not None else _parent(dest), symbolic)
    destinations(d, call, targets, directory, dest, no_dir=opts.has("-T", "--no-target-directory"))


def _parent(word: Word | None) -> Word | None:
    if word is None:
        return None
    head, slash, _ = word.value.rstrip("/").rpartition("/")
    return Word(value=(head or "/") if slash else ".", raw=word.raw, literal=word.literal, why=word.why)


def _link_source(d: Describer, call: Call, source: Word, link_dir: Word | None, symbolic: bool) -> None:
    if not symbolic or source.value.startswith("/") or link_dir is None:
        d.read(source, call)
        return
    base = d.quiet_locate(link_dir)
    if base is None:
        d.read(source, call)  # where the link lands is not known: resolve against the cwd, as a hard link
        return
    d.read(Word(value=str(Path(base) / source.value), raw=source.raw, literal=source.literal), call)


def _install(d: Describer, call: Call) -> None:
    opts = d.options(
        call, "mogSt", "--mode --owner --group --suffix --target-directory --strip-program", known="--directory"
    )
    for word in opts.values("--strip-program"):
        d.execute(call, word.value, "install --strip-program runs a program")
    call.facts.world_writable = any(world_writable(w.value) for w in opts.values("-m", "--mode"))
    if opts.has("-d", "--directory"):
        for word in opts.operands:
            d.write(word, call)
        return
    sources = list(opts.operands)
    directory = opts.last("-t", "--target-directory")
    dest = sources.pop() if directory is None and len(sources) >= 2 else None
    for source in sources:
        d.read(source, call)
    destinations(d, call, sources, directory, dest, no_dir=opts.has("-T"))


_MODE = re.compile(r"^[-+=][rwxXstugo]*([,][ugoa]*[-+=][rwxXstugo]*)*$")
_SYMBOLIC_CLAUSE = re.compile(r"^([ugoa]*)([-+=])([rwxXstugo]*)$")


def world_writable(mode: str) -> bool:
    """Does a chmod mode give everyone write access? ``777``, ``0666``, ``o+w``, ``a+rwx``, ``ugo=rw``."""
    if re.fullmatch(r"[0-7]{1,4}", mode):
        return int(mode[-1]) & 2 == 2
    for clause in mode.split(","):
        match = _SYMBOLIC_CLAUSE.match(clause)
        if match and match.group(2) in "+=" and "w" in match.group(3) and re.search("[oa]", match.group(1)):
            return True
    return False


def chmod_like(mode_first: bool) -> Handler:
    """chmod / chown / chgrp: the first operand is the mode or owner; the files are written (-R too)."""

    def handler(d: Describer, call: Call) -> None:
        args = list(call.args)
        mode: Word | None = None
        if mode_first:
            # `chmod -x file`: a mode may look like an option
            for i, word in enumerate(args):
                if (
                    word.value.startswith("-")
                    and _MODE.match(word.value)
                    and word.value not in ("-R", "-f", "-v", "-c")
                ):
                    mode = args.pop(i)
                    break
        opts = d.options(call, "", "--reference --from", known="--recursive", args=args)
        operands = list(opts.operands)
        if mode is None and opts.last("--reference") is None and operands:
            mode = operands.pop(0)
        call.facts.recursive = opts.has("-R", "--recursive")
        call.facts.world_writable = mode_first and mode is not None and world_writable(mode.value)
        for word in opts.values("--reference"):
            d.read(word, call)
        for word in operands:
            d.write(word, call, modify=True)

    return handler


def _dd(d: Describer, call: Call) -> None:
    for word in call.args:
        if word.value.startswith("if="):
            d.read(word.tail(3), call)
        elif word.value.startswith("of="):
            d.write(word.tail(3), call)


def truncate_touch(short_opts: str, long: str) -> Handler:
    """truncate / touch: -r FILE is read; the operands are created or changed."""

    def handler(d: Describer, call: Call) -> None:
        opts = d.options(call, short_opts, long)
        for word in opts.values("-r", "--reference"):
            d.read(word, call)
        for word in opts.operands:
            d.write(word, call)

    return handler


def _tee(d: Describer, call: Call) -> None:
    for word in d.options(call, known="--append --ignore-interrupts --output-error").operands:
        d.write(word, call)


def _patch(d: Describer, call: Call) -> None:
    opts = d.options(call, "pidoBDrVYzFgs", "--input --directory --output --reject-file --strip --backup-prefix")
    for word in opts.values("-i", "--input"):
        d.read(word, call)
    for word in opts.values("-o", "--output"):
        d.write(word, call)
    with d.chdir(opts.last("-d", "--directory"), call):
        if opts.operands:
            d.write(opts.operands[0], call, modify=True)
        elif not opts.values("-o", "--output"):
            d.write(Word.of("."), call, modify=True)  # the files named inside the patch


_TAR_RUNS = ("-I", "--use-compress-program", "--to-command", "--checkpoint-action", "--rsh-command", "--info-script")


def _tar(d: Describer, call: Call) -> None:
    args = list(call.args)
    bundle: list[tuple[str, Word | None]] = []
    # old style `tar czf out.tgz dir`: a bundle without a dash, whose f, C, T... take the next words
    if args and args[0].literal and re.match(r"^[A-Za-z]+$", args[0].value):
        for letter in args.pop(0).value:
            takes = letter in "fCTXbLNgKVHI" and args
            bundle.append(("-" + letter, args.pop(0) if takes else None))
    opts = d.options(
        call,
        "fCTXbLNgKVHIF",
        "--file --directory --files-from --exclude-from --use-compress-program --to-command --checkpoint-action "
        "--rsh-command --info-script --new-volume-script --index-file",
        known="--create --extract --get --list --append --update --absolute-names --remove-files",
        args=args,
    )
    opts.flags[:0] = bundle
    for word in opts.values(*_TAR_RUNS, "--new-volume-script", "-F"):
        what = "tar runs a program (compress program, --to-command, checkpoint action or volume script)"
        d.execute(call, word.value, what)
    for word in opts.values("-T", "--files-from", "-X", "--exclude-from"):
        d.read(word, call)
    creating = opts.has("-c", "--create", "-r", "--append", "-u", "--update", "-A")
    extracting = opts.has("-x", "--extract", "--get")
    for archive in opts.values("-f", "--file"):
        if not d.remote(archive, call):
            (d.write if creating else d.read)(archive, call)
    directory = opts.last("-C", "--directory")
    if creating:
        with d.chdir(directory, call):
            for word in opts.operands:
                d.read_tree(word, call)
                if opts.has("--remove-files"):
                    d.delete(word, call, recursive=d.is_dir(word))
    elif extracting:
        d.write(directory or Word.of("."), call, modify=True)
        if opts.has("-P", "--absolute-names"):
            d.opaque("tar -P extracts absolute paths: it may write anywhere")


def _unzip(d: Describer, call: Call) -> None:
    opts = d.options(call, "dxP", "")
    archives = opts.operands[:1]
    for word in archives:
        d.read(word, call)
    if not opts.has("-l", "-t", "-v", "-p", "-c", "-Z"):
        d.write(opts.last("-d") or Word.of("."), call, modify=True)


def _zip(d: Describer, call: Call) -> None:
    opts = d.options(call, "bdnitxX", "--temp-path")
    if opts.has("-T", "--test"):
        d.opaque("zip -T runs an unzip command (-TT names it)")
    operands = list(opts.operands)
    if operands:
        d.write(operands.pop(0), call)
    for word in operands:
        if opts.has("-r", "--recurse-paths"):
            d.read_tree(word, call)
        else:
            d.read(word, call)


_RSYNC_LONG = (
    "--rsh --filter --exclude --include --exclude-from --include-from --files-from --temp-dir --backup-dir --suffix "
    "--chmod --chown --block-size --bwlimit --timeout --contimeout --port --log-file --password-file --partial-dir "
    "--compare-dest --copy-dest --link-dest --max-size --min-size --max-delete --modify-window --out-format "
    "--rsync-path --iconv --protocol --checksum-choice --compress-choice --compress-level --skip-compress --usermap "
    "--groupmap --info --debug --sockopts --outbuf --stop-after --stop-at --address --remote-option"
)


def _rsync(d: Describer, call: Call) -> None:
    opts = d.options(call, "efTBM@", _RSYNC_LONG, known="--delete --remove-source-files --recursive")
    call.facts.recursive = opts.has("-r", "-a", "--recursive", "--archive")
    for word in opts.values("-e", "--rsh"):
        words = word.value.split() if word.literal else []
        if not words or Path(words[0]).name != "ssh":
            d.execute(call, word.value, f"rsync -e runs {word.value!r}")
    for word in opts.values("--rsync-path"):
        d.execute(call, word.value, "rsync --rsync-path runs a program on the other side")
    for word in opts.values("--exclude-from", "--include-from", "--files-from", "--password-file"):
        d.read(word, call)
    for word in opts.values("--log-file"):
        d.write(word, call)
    operands = list(opts.operands)
    dest = operands.pop() if len(operands) > 1 else None
    for word in operands:
        if not d.remote(word, call):
            d.read(word, call)
            if opts.has("--remove-source-files"):
                d.delete(word, call, recursive=True)
    if dest is not None and not d.remote(dest, call):
        d.write(dest, call)
        if any(name.startswith("--delete") for name, _ in opts.flags):
            d.delete(dest, call, recursive=True)


HANDLERS: dict[str, Handler] = {
    # reading (contents)
    "cat": reads(),
    "head": reads("nc", "--lines --bytes"),
    "tail": reads("ncs", "--lines --bytes --pid --sleep-interval --max-unchanged-stats"),
    "less": reads("bhjkoOpPtTxyz", "--log-file --LOG-FILE --pattern --tag", outputs="-o -O --log-file --LOG-FILE"),
    "more": reads("n"),
    "od": reads("AjNSstw"),
    "hexdump": reads("enfs", inputs="-f"),
    "strings": reads("ntTe"),
    "file": reads("mfF", inputs="-m -f"),
    **{name: reads() for name in ("md5sum", "sha1sum", "sha256sum", "sha512sum", "b2sum", "cksum")},
    # reading names and metadata only
    "ls": reads("IwT", "--ignore --hide --width --tabsize --format --sort --time-style", names_only=True),
    "stat": reads("c", "--format --printf", names_only=True),
    "tree": reads("LPIoH", names_only=True, outputs="-o"),
    "du": reads("BdtX", "--block-size --max-depth --threshold --exclude-from --exclude", names_only=True),
    "df": reads("Btx", "--block-size --type --exclude-type --output", names_only=True),
    "realpath": reads("", "--relative-to --relative-base", names_only=True),
    "readlink": reads(names_only=True),
    # writing, linking and deleting
    "tee": _tee,
    "touch": truncate_touch("rdt", "--reference --date --time"),
    "truncate": truncate_touch("sr", "--size --reference"),
    "mkdir": _mkdir,
    "cp": copy_like(remove_sources=False),
    "mv": copy_like(remove_sources=True),
    "ln": _ln,
    "link": _ln,
    "install": _install,
    "chmod": chmod_like(mode_first=True),
    "chown": chmod_like(mode_first=False),
    "chgrp": chmod_like(mode_first=False),
    "dd": _dd,
    "tar": _tar,
    "zip": _zip,
    "unzip": _unzip,
    "patch": _patch,
    "rsync": _rsync,
    "rm": _rm,
    "rmdir": _rmdir,
    "unlink": _rmdir,
    "shred": _shred,
}

FAMILY = Family(
    name="files",
    handlers=HANDLERS,
    classes={
        "read_only_programs": names(
            "ls cat head tail less more wc file stat du df tree realpath readlink sha256sum sha1sum md5sum od "
            "hexdump strings tee"
        ),
        "described_programs": names("touch mkdir cp mv ln link install truncate rm rmdir unlink sha512sum b2sum cksum"),
        "dangerous_programs": names("dd shred"),
        "mode_programs": names("chmod chown chgrp"),
        "link_programs": names("ln link"),
    },
)
