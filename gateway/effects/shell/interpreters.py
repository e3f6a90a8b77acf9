"""Interpreters and editors: shells, python, node, perl, ruby, php, deno, lua, R, julia, pwsh, vim, ...

A shell's program text (-c, a heredoc) is parsed again and its commands listed; another interpreter's
program text (-c/-e/--eval wherever it sits among the options, a heredoc or here-string on stdin) is
recorded as the command's ``inline_code`` for the policy to judge; a script file is a read; the
arguments after the program are path-like operands of unknown use (``paths``).

    FAMILY.handlers["python"](d, call)   # `python3 -W ignore -c 'import os'`: inline_code ["import os"]
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace

from gateway.effects.shell import packages
from gateway.effects.shell.call import Call, Handler
from gateway.effects.shell.ed_script import EdError, parse_ed
from gateway.effects.shell.family import Family
from gateway.effects.shell.text import script_effects
from gateway.effects.shell.walker import Describer
from gateway.effects.shell.words import Word, names, short

__all__ = ["FAMILY", "SHELLS", "Interpreter", "plain_substitution"]

# Shells: a heredoc or here-string they read is a shell script, parsed again.
SHELLS = names("sh bash zsh dash ksh ash mksh fish rbash")


def _shell(d: Describer, call: Call) -> None:
    """sh/bash/zsh: -c STRING is parsed again; a script file is read; else the program comes from stdin."""
    args = call.args
    command_mode = stdin_mode = False
    i = 0
    while i < len(args):
        word = args[i]
        value = word.value
        if value in ("--", "-"):
            i += 1
            break
        if not value.startswith(("-", "+")):
            break
        if not word.literal:
            d.opaque(f"{call.name}: option {short(word.raw)} is not literal")
        elif value in ("-o", "+o", "-O", "+O"):
            i += 1
        elif value in ("--rcfile", "--init-file") and i + 1 < len(args):
            d.script(args[i + 1], call)
            i += 1
        elif not value.startswith("--"):
            command_mode = command_mode or (value[0] == "-" and "c" in value)
            stdin_mode = stdin_mode or (value[0] == "-" and "s" in value)
        i += 1
    operands = args[i:]
    if command_mode:
        if operands:
            d.run_text(operands[0], call)
            d.unknown_paths(operands[1:], call)  # $0, $1...: what the text does with them is in the text
        else:
            d.opaque(f"{call.name} -c without a command string")
    elif operands and not stdin_mode:
        d.script(operands[0], call)
        d.unknown_paths(operands[1:], call)
    else:
        d.program_from_stdin(call)
        d.unknown_paths(operands, call)


# `python -m MODULE` servers: they listen on a port (the default when none is given)
_PYTHON_SERVERS = {"http.server": "8000", "SimpleHTTPServer": "8000", "smtpd": "8025", "pyftpdlib": "2121"}
_PYTHON_APP_SERVERS = frozenset({"uvicorn", "flask", "gunicorn", "aiohttp.web", "xmlrpc.server", "jupyter"})


def _python(d: Describer, call: Call) -> None:
    """python: -c CODE (wherever it sits among the options), -m MODULE, a script, or stdin."""
    args = call.args
    i = 0
    while i < len(args):
        word = args[i]
        value = word.value
        if value == "-" or not value.startswith("-"):
            d.script(word, call)
            d.unknown_paths(args[i + 1 :], call)
            return
        if not word.literal:
            d.opaque(f"{call.name}: option {short(word.raw)} is not literal")
        elif value == "--":
            if i + 1 < len(args):
                d.script(args[i + 1], call)
                d.unknown_paths(args[i + 2 :], call)
            return
        elif value.startswith("--"):
            i += 1 if value == "--check-hash-based-pycs" else 0
        else:
            for j in range(1, len(value)):
                if value[j] not in "cmWX":
                    continue
                attached = j + 1 < len(value)
                arg = word.tail(j + 1) if attached else (args[i + 1] if i + 1 < len(args) else None)
                rest = args[i + 1 if attached else i + 2 :]
                if value[j] == "c":
                    d.inline_code(arg, call)
                    d.unknown_paths(rest, call)
                    return
                if value[j] == "m":
                    _python_module(d, call, arg, rest)
                    return
                i += 0 if attached else 1  # -W and -X take a value
                break
        i += 1
    d.program_from_stdin(call)


# Modules that are package tools with a handler of their own (publishing among what they do)
_PYTHON_PUBLISHERS = frozenset({"twine", "poetry", "flit", "pdm", "hatch", "uv"})


def _python_module(d: Describer, call: Call, module: Word | None, rest: list[Word]) -> None:
    if module is None or not module.literal:
        d.opaque(f"{call.name} -m runs a module that is not literal")
        return
    name = module.value
    call.facts.subcommand = name
    if name == "pip":
        packages.pip_command(d, call, rest, runner=call.words[0])
    elif name in ("venv", "virtualenv"):
        for word in d.options(call, "p", "--prompt --python", args=rest).operands:
            d.write(word, call)
    elif name in _PYTHON_SERVERS:
        port = next((w.value for w in rest if w.value.isdigit()), _PYTHON_SERVERS[name])
        d.listen(port, call)
        d.unknown_paths(rest, call)
    elif name in _PYTHON_APP_SERVERS:
        d.listen("?", call)
        d.unknown_paths(rest, call)
    elif name in _PYTHON_PUBLISHERS:  # `python -m twine upload`: the program itself, with its own facts
        packages.FAMILY.handlers[name](d, replace(call, name=name, words=[module, *rest]))
        call.facts.operation, call.facts.subcommand = call.facts.subcommand, name  # python -m twine upload
    else:
        d.unknown_paths(rest, call)


@dataclass
class Interpreter:
    """node/perl/ruby/php/lua/...: how each option letter reads, so that program text is found wherever
    it sits in a cluster (`perl -lne CODE`, `ruby -rjson -e CODE`, `node -pe CODE`).

    ``code`` letters carry program text and ``takes_value`` letters a value, each the rest of the word
    or the next word; ``attached`` letters take the rest of the word only (perl -F, -x, -i); ``digits``
    letters take optional digits (perl -l, -0); ``scripts`` letters name a program file (php -f);
    ``per_line`` letters (-n, -p) make the operands input files; with ``edits``, -i writes them."""

    code: str
    takes_value: str = ""
    attached: str = ""
    digits: str = ""
    scripts: str = ""
    per_line: str = ""
    edits: bool = False
    long_code: tuple[str, ...] = ("--eval", "--print")
    long_values: tuple[str, ...] = ("--require", "--import", "--loader", "--experimental-loader", "--input-type")
    aliases: tuple[str, ...] = ()  # whole words that mean the code option (node's -pe and -ep)

    def __call__(self, d: Describer, call: Call) -> None:
        args = call.args
        has_code = has_script = edit = per_line = False
        codes: list[Word | None] = []
        i = 0
        while i < len(args):
            word = args[i]
            value = word.value
            if value == "--":
                i += 1
                break
            if value == "-" or not value.startswith("-"):
                break
            if not word.literal:
                d.opaque(f"{call.name}: option {short(word.raw)} is not literal")
                i += 1
                continue
            used, letters = self._option(word, args, i)
            for letter, given in letters:
                if letter in self.code or letter == "code":
                    has_code = True
                    codes.append(given)
                    d.inline_code(given, call)
                elif letter in self.scripts or letter == "require":
                    has_script = letter != "require" or has_script
                    if given is not None:
                        d.script(given, call)
                elif letter == "S" and call.name == "php":
                    d.listen(given.value if given is not None else "?", call)
                edit = edit or (letter == "i" and self.edits)
                per_line = per_line or letter in self.per_line
            i += used
        operands = args[i:]
        if edit and has_code and not all(code is not None and plain_substitution(code.value) for code in codes):
            # `perl -i -pe 'BEGIN{open F,">/x"}' f` is no in-place edit: only s/// and tr/// read as one
            d.opaque(f"{call.name} -i runs code that is not a plain substitution: it may open or write any file")
        if not has_code and not has_script:
            if not operands or operands[0].value == "-":
                d.program_from_stdin(call)
                operands = operands[1:]
            else:
                d.script(operands[0], call)
                operands = operands[1:]
        if not per_line:
            d.unknown_paths(operands, call)
        for word in operands if per_line else []:
            if edit:
                d.write(word, call, modify=True)
            else:
                d.read(word, call)

    def _option(self, word: Word, args: list[Word], i: int) -> tuple[int, list[tuple[str, Word | None]]]:
        """One option word: (words used, [(letter, its value)]); code options come out as their letter."""
        value = word.value
        nxt = args[i + 1] if i + 1 < len(args) else None
        if value in self.aliases:
            return 2, [("code", nxt)]
        if value.startswith("--"):
            name, eq, _ = value.partition("=")
            given = word.tail(len(name) + 1) if eq else nxt
            if name in self.long_code:
                return (1 if eq else 2), [("code", given)]
            if name in self.long_values:
                kind = "require" if name in ("--require", "--import", "--loader", "--experimental-loader") else "-"
                return (1 if eq else 2), [(kind, given)]
            return 1, [(name, None)]
        letters: list[tuple[str, Word | None]] = []
        j = 1
        while j < len(value):
            letter = value[j]
            rest = word.tail(j + 1) if j + 1 < len(value) else None
            if letter in self.code or letter in self.takes_value or letter in self.scripts:
                if rest is not None:
                    return 1, [*letters, (letter, rest)]
                return 2, [*letters, (letter, nxt)]
            if letter in self.attached:
                return 1, [*letters, (letter, rest)]
            letters.append((letter, None))
            j += 1
            if letter in self.digits:
                while j < len(value) and value[j] in "0123456789abcdefxABCDEFX":
                    j += 1
        return 1, letters


# `s/a/b/g; tr/x/y/`: substitutions with a one-character delimiter and harmless flags (no `e`, which
# evaluates the replacement); `(?{...})`, `@{[...]}`, `${\...}` and backticks run code inside them.
_DELIMITED = r"(?P<{0}>[^\w\s{{}}()\[\]<>])(?:(?!(?P={0}))[^\\]|\\.)*(?P={0})(?:(?!(?P={0}))[^\\]|\\.)*(?P={0})"
_SUBSTITUTIONS = re.compile(
    rf"(?:\s*(?:s{_DELIMITED.format('s')}[gimsxlur]*|(?:tr|y){_DELIMITED.format('t')}[cdsr]*)\s*(?:;|$))+"
)
_CODE_INSIDE = re.compile(r"\(\?\??\{|[@$]\{|`")


def plain_substitution(code: str) -> bool:
    """True for Perl text that is only substitutions and transliterations (what ``perl -i -pe`` edits with)."""
    return bool(_SUBSTITUTIONS.fullmatch(code.strip())) and not _CODE_INSIDE.search(code)


def _make(d: Describer, call: Call) -> None:
    """make runs recipes, shell commands from its makefiles: -C DIR is where it runs and finds them, -f FILE
    (relative to DIR) is a script, a makefile from stdin or --eval TEXT is program text (always asked about)."""
    opts = d.options(
        call,
        "fCIoWE",
        "--file --makefile --directory --include-dir --old-file --assume-old --what-if --new-file --assume-new "
        "--eval --jobserver-auth --jobserver-style",
        optional="jlO",
    )
    directories = opts.values("-C", "--directory")
    if not all(w.literal for w in directories):
        d.opaque(f"{call.name} -C directory is not literal")
        return
    where = os.path.join(*(w.value for w in directories)) if directories else ""
    if where:
        d.unknown_paths([Word.of(where)], call)  # its recipes may touch anything there
    if any(name in ("-f", "--file", "--makefile") and word is None for name, word in opts.flags):
        d.opaque(f"{call.name} -f names no makefile the analysis can see")  # `make -f - <<EOF` parses so
    for word in opts.values("-f", "--file", "--makefile"):
        relative = word.literal and not word.value.startswith("/") and word.value not in ("-",)
        d.script(Word.of(os.path.join(where, word.value)) if where and relative else word, call)
    for word in opts.values("-I", "--include-dir"):
        d.read(word if not where or word.value.startswith("/") else Word.of(os.path.join(where, word.value)), call)
    for word in opts.values("-E", "--eval"):
        d.inline_code(word, call)
    d.unknown_paths(opts.operands, call)


def _deno(d: Describer, call: Call) -> None:
    """deno eval CODE; deno run SCRIPT|URL (a URL is fetched); other subcommands are unknown programs."""
    operands = [w for w in call.args if not w.value.startswith("-")]
    sub = operands[0].value if operands else ""
    call.facts.subcommand = sub or None
    if sub == "eval":
        d.inline_code(operands[1] if len(operands) > 1 else None, call)
    elif sub == "run" and len(operands) > 1:
        script = operands[1]
        if "://" in script.value:
            d.url(script, call)
            d.opaque(f"deno runs a program fetched from {short(script.raw)}")
        else:
            d.script(script, call)
        d.unknown_paths(operands[2:], call)
    else:
        d.unknown_paths(call.args, call)


def _bun(d: Describer, call: Call) -> None:
    """bun -e/--eval CODE runs code; otherwise bun is a package manager (see packages)."""
    if any(re.match(r"^(-e|--eval|-p|--print)(=|$)", w.value) for w in call.args):
        Interpreter(code="ep", takes_value="r", aliases=("-pe", "-ep"))(d, call)
    else:
        packages.FAMILY.handlers["npm"](d, call)


def _pwsh(d: Describer, call: Call) -> None:
    """pwsh -Command TEXT... (the rest of the words), -EncodedCommand B64 (opaque), -File SCRIPT."""
    args = call.args
    for i, word in enumerate(args):
        value = word.value.lower()
        if value in ("-c", "-command", "-co", "-com"):
            d.inline_code(Word.of(" ".join(w.value for w in args[i + 1 :])), call)
            return
        if value in ("-e", "-ec", "-en", "-enc", "-encodedcommand"):
            d.opaque(f"{call.name} runs a base64-encoded command")
            return
        if value in ("-f", "-file") and i + 1 < len(args):
            d.script(args[i + 1], call)
            d.unknown_paths(args[i + 2 :], call)
            return
        if not value.startswith("-"):
            d.script(word, call)
            d.unknown_paths(args[i + 1 :], call)
            return
    d.program_from_stdin(call)


def _vim(d: Describer, call: Call) -> None:
    """vim -c CMD / --cmd CMD / +CMD run editor commands (recorded as inline code); -S FILE sources a script."""
    args = call.args
    files: list[Word] = []
    i = 0
    while i < len(args):
        word = args[i]
        value = word.value
        nxt = args[i + 1] if i + 1 < len(args) else None
        if value in ("-c", "--cmd"):
            d.inline_code(nxt, call)
            i += 1
        elif value.startswith("+") and len(value) > 1:
            d.inline_code(word.tail(1), call)
        elif value.startswith("-S"):
            script = word.tail(2) if len(value) > 2 else nxt
            if script is not None:
                d.read(script, call)
                d.execute(call, f"vim script {script.value}", f"{call.name} -S sources a Vim script, not analysed")
            i += 0 if len(value) > 2 else 1
        elif value in ("-s", "-w", "-W", "-u", "-U", "-i", "-T", "--servername", "--remote-send"):
            if value in ("-s", "-u", "--remote-send"):
                d.opaque(f"{call.name} {value} runs editor commands from {short(nxt.raw if nxt else '')}")
            i += 1
        elif value == "--":
            files.extend(args[i + 1 :])
            break
        elif not value.startswith(("-", "+")):
            files.append(word)
        i += 1
    for word in files:
        d.write(word, call, modify=True)
    if call.ctx.stdin != "inherit":
        d.program_from_stdin(call)  # `ex -s file <<EOF`: editor commands (`:!cmd` included) from stdin


def _ed(d: Describer, call: Call) -> None:
    """ed FILE <<EOF: the script edits the file; it is read (ed_script) for the files its `w`, `r`, `e` and
    `f` commands name and the commands its `!` runs (also in `r !cmd`, `w !cmd`, `e !cmd`)."""
    opts = d.options(call, "p")
    for word in opts.operands:
        if word.value.startswith("!"):
            d.execute(call, word.value[1:], f"{call.name} runs the command {short(word.value[1:])}")
        else:
            d.write(word, call, modify=True)
    text = call.ctx.stdin_text
    if call.ctx.stdin in ("heredoc", "herestring") and text is not None:
        try:
            found = parse_ed(text)
        except EdError as exc:
            d.opaque(f"{call.name} script {short(text)} could not be read ({exc}): it may run commands or write files")
            return
        script_effects(d, call, found, f"{call.name} script runs commands (!)")
    elif call.ctx.stdin != "inherit":
        d.opaque(f"{call.name} reads editing commands (which may run programs) from stdin")


def _emacs(d: Describer, call: Call) -> None:
    """emacs --eval EXPR (inline code); -l/--load/--script FILE runs Lisp from a file."""
    args = call.args
    for i, word in enumerate(args):
        value = word.value
        nxt = args[i + 1] if i + 1 < len(args) else None
        if value in ("--eval", "-eval", "-e"):
            d.inline_code(nxt, call)
        elif value.startswith("--eval="):
            d.inline_code(word.tail(7), call)
        elif value in ("-l", "--load", "--script", "-script", "-f", "--funcall") and nxt is not None:
            d.execute(call, nxt.value, f"{call.name} {value} runs Lisp that is not analysed")


def _osascript(d: Describer, call: Call) -> None:
    """osascript -e STATEMENT (inline code, every -e), or a script file."""
    opts = d.options(call, "elsi")
    statements = opts.values("-e")
    for word in statements:
        d.inline_code(word, call)
    if not statements:
        if opts.operands:
            d.script(opts.operands[0], call)
        else:
            d.program_from_stdin(call)


HANDLERS: dict[str, Handler] = {
    **{name: _shell for name in SHELLS},
    "python": _python,
    "node": Interpreter(code="ep", takes_value="rC", aliases=("-pe", "-ep")),
    "perl": Interpreter(
        code="eE", takes_value="IMm", attached="FCDxdiV", digits="l0", per_line="np", edits=True, long_code=()
    ),
    "ruby": Interpreter(
        code="e", takes_value="IrCE", attached="FxiWK", digits="0", per_line="np", edits=True, long_code=()
    ),
    "php": Interpreter(code="rBRE", takes_value="dcztS", scripts="fF", long_code=()),
    "lua": Interpreter(code="e", takes_value="l", long_code=()),
    "Rscript": Interpreter(code="e", long_code=("--expr",)),
    "julia": Interpreter(code="eE", takes_value="JCOtp", scripts="L", long_code=("--eval", "--print")),
    "deno": _deno,
    "bun": _bun,
    "pwsh": _pwsh,
    "powershell": _pwsh,
    "osascript": _osascript,
    **{name: _vim for name in ("vim", "vi", "nvim", "gvim", "view", "ex", "vimdiff", "rvim")},
    "emacs": _emacs,
    "ed": _ed,
    "make": _make,
    "gmake": _make,
    "red": _ed,
}

FAMILY = Family(
    name="interpreters",
    handlers=HANDLERS,
    shells=SHELLS,
    versioned=names("python pypy perl ruby php node nodejs lua luajit"),
    renamed={"pypy": "python", "nodejs": "node", "luajit": "lua"},
    classes={
        "always_ask_interpreters": names(
            "vim vi nvim gvim view ex vimdiff rvim emacs pwsh powershell osascript make gmake"
        ),
    },
)
