"""Interpreters and editors: shells, python, node, perl, ruby, php, deno, lua, R, julia, pwsh, vim, ...

A shell's program text (-c, a heredoc) is parsed again and its commands listed; another interpreter's
program text (-c/-e/--eval wherever it sits among the options, a heredoc or here-string on stdin) is
recorded as the command's ``inline_code`` for the policy to judge; a script file is a read; the
arguments after the program are path-like operands of unknown use (``paths``).

    HANDLERS["python"](d, call)   # `python3 -W ignore -c 'import os'`: inline_code ["import os"]
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gateway.effects.shell import packages
from gateway.effects.shell.walker import SHELLS, Call, Describer, Handler
from gateway.effects.shell.words import Word, short


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
    else:
        d.unknown_paths(rest, call)


@dataclass
class Interpreter:
    """node/perl/ruby/php/lua/...: which option letters carry inline code, which take a value, and whether
    -i edits the operands; ``long_code`` names the long options that carry code (``--eval``)."""

    code: str
    takes_value: str
    edits: bool = False
    long_code: tuple[str, ...] = ("--eval", "--print")
    long_values: tuple[str, ...] = ("--require", "--import", "--loader", "--experimental-loader", "--input-type")

    def __call__(self, d: Describer, call: Call) -> None:
        args = call.args
        has_code = edit = per_line = False
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
            used, code, found_code = self._option(word, args, i)
            if found_code:
                has_code = True
                d.inline_code(code, call)
            edit = edit or (self.edits and re.match(r"^-[a-zA-Z]*i", value) is not None)
            per_line = per_line or re.match(r"^-[a-zA-Z]*[np]", value) is not None
            if call.name == "php" and value.startswith("-S"):
                d.listen(word.value[2:] or (args[i + 1].value if i + 1 < len(args) else "?"), call)
            i += used
        operands = args[i:]
        if not has_code:
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

    def _option(self, word: Word, args: list[Word], i: int) -> tuple[int, Word | None, bool]:
        """One option word: (words used, inline code, whether it was a code option)."""
        value = word.value
        nxt = args[i + 1] if i + 1 < len(args) else None
        if value.startswith("--"):
            name, eq, _ = value.partition("=")
            if name in self.long_code:
                return (1, word.tail(len(name) + 1), True) if eq else (2, nxt, True)
            takes = not eq and name in self.long_values
            return (2 if takes else 1), None, False
        for j in range(1, len(value)):
            letter = value[j]
            if letter in self.code:
                return (1, word.tail(j + 1), True) if j + 1 < len(value) else (2, nxt, True)
            if letter == "i" and self.edits:
                return 1, None, False  # -i[SUFFIX]: the rest of the word is the backup suffix
            if letter in self.takes_value:
                return (1 if j + 1 < len(value) else 2), None, False
        return 1, None, False


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
        Interpreter(code="ep", takes_value="r")(d, call)
    else:
        packages.HANDLERS["npm"](d, call)


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
    "node": Interpreter(code="ep", takes_value="rC"),
    "perl": Interpreter(code="eE", takes_value="IMmlFCDx0", edits=True, long_code=()),
    "ruby": Interpreter(code="e", takes_value="IrCEFx", edits=True, long_code=()),
    "php": Interpreter(code="rBRFE", takes_value="dcztSf", long_code=()),
    "lua": Interpreter(code="e", takes_value="lW", long_code=()),
    "Rscript": Interpreter(code="e", takes_value="", long_code=("--expr",)),
    "julia": Interpreter(code="eE", takes_value="LJCOtp", long_code=("--eval", "--print")),
    "deno": _deno,
    "bun": _bun,
    "pwsh": _pwsh,
    "powershell": _pwsh,
    "osascript": _osascript,
    **{name: _vim for name in ("vim", "vi", "nvim", "gvim", "view", "ex", "vimdiff", "rvim")},
    "emacs": _emacs,
}
