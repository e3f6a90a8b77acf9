"""Text tools: grep/rg, sed, awk, sort, uniq, cut, diff, jq, ...

Most read their file operands; sed and awk are languages, so their scripts are parsed
(``sed_script``, ``awk_program``) for the files they read and write and the commands they run.

    FAMILY.handlers["sed"](d, call)   # `sed -n 'w /tmp/x' f`: reads f, writes /tmp/x
"""

from __future__ import annotations

from gateway.effects.shell.awk_program import AwkError, scan_awk
from gateway.effects.shell.call import Call, Handler
from gateway.effects.shell.family import Family
from gateway.effects.shell.files import reads
from gateway.effects.shell.sed_script import SedEffects, SedError, parse_sed
from gateway.effects.shell.walker import Describer
from gateway.effects.shell.words import ASSIGNMENT, Word, names, short

__all__ = ["FAMILY", "in_out", "script_effects"]


def grep_like(short_opts: str, long: str, recursive_default: bool = False) -> Handler:
    """grep-like: the first operand is the pattern unless -e/-f gave one; the other operands are read.

    A recursive search reads the files under its directories (rg skips hidden ones unless told not to)."""

    def handler(d: Describer, call: Call) -> None:
        opts = d.options(call, short_opts, f"--regexp --file {long}", known="--hidden --no-ignore --follow")
        operands = list(opts.operands)
        if not opts.values("-e", "--regexp", "-f", "--file") and operands:
            operands.pop(0)
        for word in opts.values("-f", "--file", "--ignore-file", "--exclude-from"):
            d.read(word, call)
        for name, value in opts.flags:
            if name in ("--pre", "--pager", "--hostname-bin") and value is not None:
                d.execute(call, value.value, f"{call.name} {name} runs a program: {short(value.raw)}")
        recursive = recursive_default or opts.has("-r", "-R", "--recursive", "--dereference-recursive")
        call.facts.recursive = recursive
        hidden = not recursive_default or opts.has(
            "--hidden", "-.", "-u", "--no-ignore", "--unrestricted", "-a", "--all-types"
        )
        default = [Word.of(".")] if recursive and call.ctx.stdin == "inherit" else []
        follow = opts.has("-R", "--dereference-recursive", "-L", "--follow")
        for word in operands or default:
            if recursive:
                d.read_tree(word, call, hidden=hidden, follow=follow)
            else:
                d.read(word, call)

    return handler


_GREP = grep_like(
    "efmABCdD",
    "--max-count --after-context --before-context --context --directories --devices --include --exclude "
    "--exclude-dir --exclude-from --label --binary-files --group-separator",
)
_AG = grep_like(
    "AmBCGgp",
    "--after --before --context --max-count --file-search-regex --ignore --ignore-dir --path-to-ignore --pager",
    recursive_default=True,
)
_RG = grep_like(
    "efgtTmjABCEMrd",
    "--glob --iglob --type --type-not --type-add --max-count --threads --context --after-context --before-context "
    "--encoding --max-columns --replace --max-depth --max-filesize --pre --pre-glob --ignore-file --sort --sortr "
    "--colors --engine --hostname-bin",
    recursive_default=True,
)


def _sed(d: Describer, call: Call) -> None:
    """sed: the script is parsed (GNU grammar): `r`/`R` read, `w`/`W` and s///w write, `e` and s///e run."""
    opts = d.options(
        call, "efl", "--expression --file --line-length", known="--in-place --quiet --silent", optional="i"
    )
    operands = list(opts.operands)
    scripts = opts.values("-e", "--expression")
    if not scripts and not opts.values("-f", "--file") and operands:
        scripts = [operands.pop(0)]
    if scripts:
        _sed_script(d, call, scripts)
    for word in opts.values("-f", "--file"):
        d.read(word, call)
        d.opaque(f"sed script file {short(word.raw)} is not analysed")
    for word in operands:
        if opts.has("-i", "--in-place"):
            d.write(word, call, modify=True)
        else:
            d.read(word, call)


def _sed_script(d: Describer, call: Call, scripts: list[Word]) -> None:
    raw = short("\n".join(w.raw for w in scripts))
    if not all(w.literal for w in scripts):
        d.opaque(f"sed script {raw} is not literal: it may run commands or write files")
        return
    try:
        found = parse_sed("\n".join(w.value for w in scripts))  # GNU sed joins -e fragments with newlines
    except SedError as exc:
        d.opaque(f"sed script {raw} could not be parsed ({exc}): it may run commands or write files")
        return
    script_effects(d, call, found, f"sed script {raw} runs commands (e)")


def script_effects(d: Describer, call: Call, found: SedEffects, runs: str) -> None:
    """What an editor script (sed's, ed's) reads, writes and runs, as the call's effects; ``runs`` says why
    a command runs."""
    for name in found.reads:
        d.read(Word.of(name), call)
    for name in found.writes:
        d.write(Word.of(name), call)
    for command in found.runs:
        what = command or "the pattern space, as a command"
        d.execute(call, what, f"{runs}: {short(what)}")


def _awk(d: Describer, call: Call) -> None:
    """awk: the program is scanned for output redirection, pipes, system(), getline files and loaded code."""
    opts = d.options(call, "fvFiEle", "--file --assign --field-separator --include --load --source --exec")
    operands = list(opts.operands)
    programs = opts.values("-e", "--source")
    files = opts.values("-f", "--file", "-E", "--exec")
    if not programs and not files and operands:
        programs = [operands.pop(0)]
    for program in programs:
        _awk_program(d, call, program)
    for word in files:
        d.read(word, call)
        d.opaque(f"awk program file {short(word.raw)} is not analysed")
    for word in opts.values("-l", "--load"):
        d.execute(call, word.value, f"awk loads the extension {short(word.raw)}")
    includes = opts.values("-i", "--include")
    for word in includes:
        if word.value != "inplace":
            d.read(word, call)
            d.opaque(f"awk include file {short(word.raw)} is not analysed")
    in_place = any(w.value == "inplace" for w in includes)
    for word in operands:
        if ASSIGNMENT.match(word.value):
            continue  # `awk '{..}' n=1 file`: a variable assignment, not a file
        if in_place:
            d.write(word, call, modify=True)
        else:
            d.read(word, call)


def _awk_program(d: Describer, call: Call, program: Word) -> None:
    raw = short(program.raw)
    if not program.literal:
        d.opaque(f"awk program {raw} is not literal: it may run commands or write files")
        return
    try:
        found = scan_awk(program.value)
    except AwkError as exc:
        d.opaque(f"awk program {raw} could not be read ({exc}): it may run commands or write files")
        return
    for name in found.reads:
        if name.startswith("/inet"):
            d.opaque(f"awk program {raw} opens a network connection ({name})")
        else:
            d.read(Word.of(name), call)
    for name in found.writes:
        if name.startswith("/inet"):
            d.opaque(f"awk program {raw} opens a network connection ({name})")
        else:
            d.write(Word.of(name), call)
    call.facts.executes.extend(found.runs)
    for doubt in found.doubts:
        d.opaque(f"awk program {raw} may run commands or write files: {doubt}")


def _sort(d: Describer, call: Call) -> None:
    opts = d.options(
        call,
        "ktSTo",
        "--key --field-separator --buffer-size --temporary-directory --output --files0-from --batch-size --parallel "
        "--random-source --compress-program",
    )
    for word in opts.values("--compress-program"):
        d.execute(call, word.value, "sort --compress-program runs a program")
    for word in opts.values("-o", "--output"):
        d.write(word, call)
    for word in opts.operands + opts.values("--files0-from", "--random-source"):
        d.read(word, call)


def in_out(short_opts: str = "", long: str = "", inputs: int = 1, output: bool = True) -> Handler:
    """uniq IN OUT, xxd IN OUT, cmp A B: the first ``inputs`` operands are read, the next one is written."""

    def handler(d: Describer, call: Call) -> None:
        opts = d.options(call, short_opts, long)
        for word in opts.operands[:inputs]:
            d.read(word, call)
        for word in opts.operands[inputs : inputs + 1] if output else []:
            d.write(word, call)

    return handler


_JQ_PAIRS = ("--arg", "--argjson")
_JQ_FILES = ("--slurpfile", "--rawfile")


def _jq(d: Describer, call: Call) -> None:
    """jq FILTER [FILES]: -f/--from-file names the filter's file; --slurpfile/--rawfile NAME FILE read files."""
    args = list(call.args)
    operands: list[Word] = []
    filter_file = False
    i = 0
    while i < len(args):
        value = args[i].value
        if value in _JQ_PAIRS:
            i += 3
            continue
        if value in _JQ_FILES:
            if i + 2 < len(args):
                d.read(args[i + 2], call)
            i += 3
            continue
        if value in ("-f", "--from-file"):
            filter_file = True
        elif value in ("-L", "--indent"):
            i += 1  # a search directory, a number
        elif value in ("--args", "--jsonargs"):
            break  # the rest are arguments, not files
        elif not value.startswith("-") or value == "-":
            operands.append(args[i])
        i += 1
    if not filter_file and operands:
        operands.pop(0)  # the filter (with -f, the first operand is the filter's file: read like the rest)
    for word in operands:
        d.read(word, call)


def _yq(d: Describer, call: Call) -> None:
    """yq is jq for YAML, and -i/--inplace writes the files it reads."""
    if any(w.value in ("-i", "--inplace") or w.value.startswith("--inplace=") for w in call.args):
        args = [w for w in call.args if not w.value.startswith("-")]
        for word in args[1:]:
            d.write(word, call, modify=True)
        return
    _jq(d, call)


def _diff(d: Describer, call: Call) -> None:
    """diff: with -r it reads every file under the directories it compares (and -N prints their contents)."""
    opts = d.options(
        call,
        "CUDFILSxX",
        "--label --from-file --to-file --exclude --exclude-from --ifdef --starting-file --to-file --color",
        known="--recursive --new-file",
    )
    recursive = opts.has("-r", "--recursive")
    call.facts.recursive = recursive
    for word in opts.operands + opts.values("--from-file", "--to-file", "-X", "--exclude-from"):
        if recursive:
            d.read_tree(word, call)
        else:
            d.read(word, call)


def _date(d: Describer, call: Call) -> None:
    """date -f FILE parses each line of FILE (and prints the ones it cannot in its error messages)."""
    opts = d.options(call, "dfrIs", "--date --file --reference --iso-8601 --set")
    for word in opts.values("-f", "--file", "-r", "--reference"):
        d.read(word, call)


def _noop(d: Describer, call: Call) -> None:
    """Programs with no file, network or package effects to state (tr reads only stdin)."""


HANDLERS: dict[str, Handler] = {
    "grep": _GREP,
    "egrep": _GREP,
    "fgrep": _GREP,
    "rg": _RG,
    "ag": _AG,
    "sed": _sed,
    **{name: _awk for name in ("awk", "gawk", "mawk", "nawk")},
    "sort": _sort,
    "uniq": in_out("fsw", "--skip-fields --skip-chars --check-chars"),
    "cmp": in_out("in", "--ignore-initial --bytes", inputs=2, output=False),
    "diff": _diff,
    "cut": reads("bcdf", "--bytes --characters --delimiter --fields --output-delimiter"),
    "paste": reads("d", "--delimiters"),
    "comm": reads("", "--output-delimiter"),
    "join": reads("12aejotv"),
    "tac": reads("s", "--separator"),
    "nl": reads("bdfhilnsvw"),
    "wc": reads(),
    "rev": reads(),
    "column": reads("cstoR", "--columns --separator --output-separator --table-columns"),
    "jq": _jq,
    "yq": _yq,
    "date": _date,
    "tr": _noop,
}

FAMILY = Family(
    name="text",
    handlers=HANDLERS,
    classes={
        "read_only_programs": names(
            "grep egrep fgrep rg ag diff cmp cut tr jq yq column nl sed tac rev paste comm date"
        ),
        "described_programs": names("sort uniq cmp awk gawk mawk nawk join"),
    },
)
