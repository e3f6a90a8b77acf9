"""Wrappers and builtins that run another command or change where the next ones run: env, xargs, find -exec,
timeout, nice, eval, source, watch, cd/pushd/popd, ... (sudo and su: privilege.py)

A wrapper's inner command is listed again (via "wrapper:<name>") and described like any other; text
it runs (eval, watch, su -c) is parsed again; what cannot be followed is opaque.

    FAMILY.handlers["env"](d, call)   # `env -C src rm x`: lists rm (via wrapper:env), in src
"""

from __future__ import annotations

import shlex
from dataclasses import replace

from gateway.effects.shell.call import Call, Handler
from gateway.effects.shell.family import Family
from gateway.effects.shell.walker import Describer
from gateway.effects.shell.words import Word, has_unparsed_subst, joined, names, short

__all__ = ["FAMILY", "wrapper"]


def wrapper(short: str = "", long: str = "", known: str = "") -> Handler:
    """A wrapper whose options end at its first operand, which starts the inner command."""

    def handler(d: Describer, call: Call) -> None:
        d.inner(d.options(call, short, long, known, stop=True).operands, call)

    return handler


def _env(d: Describer, call: Call) -> None:
    opts = d.options(
        call, "uCSP", "--unset --chdir --split-string", known="--ignore-environment --null --debug", stop=True
    )
    words = list(opts.operands)
    for split in opts.values("-S", "--split-string"):
        try:
            if not split.literal:
                raise ValueError(split.why)
            words = [Word.of(part) for part in shlex.split(split.value)] + words
        except ValueError:
            d.opaque(f"env -S text {short(split.raw)} could not be split")
            return
    d.inner(words, call, cwd=opts.last("-C", "--chdir"))


def _timeout(d: Describer, call: Call) -> None:
    opts = d.options(call, "sk", "--signal --kill-after", "--preserve-status --foreground --verbose", stop=True)
    d.inner(opts.operands[1:], call)  # the first operand is the duration


def _time(d: Describer, call: Call) -> None:
    opts = d.options(call, "fo", "--format --output", "--append --portability --verbose", stop=True)
    for word in opts.values("-o", "--output"):
        d.write(word, call)
    d.inner(opts.operands, call)


def _command_builtin(d: Describer, call: Call) -> None:
    opts = d.options(call, stop=True)
    if not opts.has("-v", "-V"):  # -v and -V only look the name up
        d.inner(opts.operands, call)


def _exec(d: Describer, call: Call) -> None:
    opts = d.options(call, "a", stop=True)
    if opts.operands:
        d.inner(opts.operands, call)
    elif call.redirects:
        d.opaque("exec with only redirections changes the shell's own file descriptors")


def _ionice(d: Describer, call: Call) -> None:
    opts = d.options(call, "cnpPu", "--class --classdata --pid --pgid --uid", stop=True)
    if not opts.values("-p", "-P", "-u", "--pid", "--pgid", "--uid"):
        d.inner(opts.operands, call)


def _xargs(d: Describer, call: Call) -> None:
    """xargs CMD: CMD gets the words of xargs' input, which we cannot know: a non-literal argument."""
    opts = d.options(
        call,
        "EIdLnPsa",
        "--eof --replace --delimiter --max-lines --max-args --max-procs --max-chars --arg-file --process-slot-var",
        known="--null --no-run-if-empty --verbose --interactive --exit --open-tty",
        optional="eil",
        stop=True,
    )
    for word in opts.values("-a", "--arg-file"):
        d.read(word, call)
    marker = Word("{xargs input}", "{xargs input}", literal=False, why="comes from xargs input")
    marker = replace(marker, tainted=call.ctx.stdin_tainted)
    inner = list(opts.operands) or [Word.of("echo")]
    placeholders = [w.value for w in opts.values("-I", "--replace")]
    if opts.has("-i", "--replace"):
        placeholders.append("{}")
    if placeholders:
        inner = [marker if any(p and p in w.value for p in placeholders) else w for w in inner]
    else:
        inner.append(marker)
    # the inner command's stdin is not xargs' input
    d.inner(inner, replace(call, ctx=replace(call.ctx, stdin="inherit", stdin_text=None, stdin_tainted=False)))


_FIND_TESTS_WITH_ARG = names(
    "-name -iname -path -ipath -wholename -iwholename -regex -iregex -type -xtype -size -perm -user -group -uid "
    "-gid -mtime -mmin -atime -amin -ctime -cmin -newer -anewer -cnewer -maxdepth -mindepth -links -inum "
    "-samefile -used -lname -ilname -fstype -context -regextype -printf -files0-from"
)
_FIND_EXEC = names("-exec -execdir -ok -okdir")
_FIND_WRITES = names("-fprint -fprint0 -fls -fprintf")


def _find(d: Describer, call: Call) -> None:
    """find ROOTS EXPR: roots are read; -delete deletes under them; -exec runs a command on what it finds."""
    args = call.args
    i = 0
    while i < len(args) and (args[i].value in ("-H", "-L", "-P") or args[i].value.startswith("-O")):
        i += 1
    roots: list[Word] = []
    while i < len(args) and not args[i].value.startswith("-") and args[i].value not in ("(", "!", ")", ","):
        roots.append(args[i])
        i += 1
    roots = roots or [Word.of(".")]
    for root in roots:
        d.read(root, call)
    expr = args[i:]
    j = 0
    while j < len(expr):
        word = expr[j]
        value = word.value
        if not word.literal:
            d.opaque(f"find: expression word {short(word.raw)} is not literal ({word.why})")
        elif value == "-delete":
            for root in roots:
                d.delete(root, call, recursive=True)
        elif value in _FIND_EXEC:
            end = j + 1
            while end < len(expr) and not (expr[end].literal and expr[end].value in (";", "+")):
                end += 1
            for root in roots:
                _find_exec(d, call, expr[j + 1 : end], root)
            j = end
        elif value in _FIND_WRITES:
            if j + 1 < len(expr):
                d.write(expr[j + 1], call)
            j += 2 if value == "-fprintf" else 1
        elif value.startswith("-newer") or value in _FIND_TESTS_WITH_ARG:
            j += 1
        j += 1


def _find_exec(d: Describer, call: Call, words: list[Word], root: Word) -> None:
    """``{}`` stands for every file under the root: the root, as a glob (so a delete of it is a mass delete)."""
    inner = [
        replace(w, value=w.value.replace("{}", root.value), glob=True, literal=w.literal and root.literal)
        if "{}" in w.value
        else w
        for w in words
    ]
    d.inner(inner, call)


def _watch(d: Describer, call: Call) -> None:
    opts = d.options(call, "nq", "--interval --equexit", known="--exec", optional="d", stop=True)
    if opts.has("-x", "--exec"):
        d.inner(opts.operands, call)
    elif opts.operands:
        d.run_text(joined(opts.operands), call)  # watch runs its words with sh -c


def _busybox(d: Describer, call: Call) -> None:
    if call.args and not call.args[0].value.startswith("-"):
        d.inner(call.args, call)


def _eval(d: Describer, call: Call) -> None:
    d.run_text(joined(call.args), call)


def _source(d: Describer, call: Call) -> None:
    operands = [w for w in call.args if w.value != "--"]
    if not operands:
        return
    script = operands[0]
    if script.tainted or d.is_tainted(script):
        d.opaque(f"downloaded/decoded content executed: {call.name} {short(script.raw)}")
    else:
        d.opaque(f"{call.name} runs the commands in {short(script.raw)}, which are not analysed")
    if script.literal:
        d.read(script, call)


def _alias(d: Describer, call: Call) -> None:
    if any("=" in w.value or not w.literal for w in call.args):
        d.opaque("alias defines a command name")


def _trap(d: Describer, call: Call) -> None:
    operands = [w for w in call.args if w.value not in ("-p", "-l", "--")]
    if len(operands) >= 2 and not (operands[0].literal and operands[0].value in ("", "-")):
        d.opaque(f"trap installs a command to run later: {short(operands[0].raw)}")


def _hash(d: Describer, call: Call) -> None:
    if any(w.value.startswith("-p") for w in call.args):
        d.opaque("hash -p maps a command name to another program")


def _let(d: Describer, call: Call) -> None:
    if any(has_unparsed_subst(w.value) or not w.literal for w in call.args):
        d.opaque("let evaluates text that may hold command substitutions")


def _cd(d: Describer, call: Call) -> None:
    """cd/pushd/popd move the cwd that later relative paths resolve against; an unknown move is None.

    The target is also the command's ``paths``: where it goes, so a cd out of the workspace shows
    even when nothing runs after it."""
    operands = [w for w in call.args if w.value not in ("-L", "-P", "-e", "-@", "--")]
    if call.name == "popd" or (operands and operands[0].value.startswith(("+", "-"))):
        d.cwd = None  # the directory stack is not tracked
        return
    target = operands[0] if operands else Word.of(d.home)
    path = d.quiet_locate(target)
    if path is not None:
        call.facts.paths.append(d.display(path))
    # a cd that fails leaves the shell where it was, so only a directory we can see (or made) is followed
    d.cwd = path if path is not None and (path.is_dir() or path in d.made_dirs) else None


def _mapfile(d: Describer, call: Call) -> None:
    """mapfile/readarray -C CALLBACK runs the callback text every -c lines."""
    opts = d.options(call, "dnOsutcC")
    for word in opts.values("-C"):
        d.run_text(word, call)


def _noop(d: Describer, call: Call) -> None:
    """Builtins and programs with no file, network or package effects to state (their words are names,
    numbers or text, not paths)."""


_NOOP = (
    "echo printf true false : pwd test [ read exit return shift wait sleep seq uname whoami id hostname "
    "basename dirname which type expr printenv nproc free uptime ps tput clear break continue set"
)

HANDLERS: dict[str, Handler] = {
    "env": _env,
    "nice": wrapper("n", "--adjustment"),
    "ionice": _ionice,
    "nohup": wrapper(),
    "timeout": _timeout,
    "time": _time,
    "command": _command_builtin,
    "builtin": wrapper(),
    "exec": _exec,
    "stdbuf": wrapper("ioe", "--input --output --error"),
    "setsid": wrapper(known="--ctty --fork --wait"),
    "busybox": _busybox,
    "toybox": _busybox,
    "mapfile": _mapfile,
    "readarray": _mapfile,
    "xargs": _xargs,
    "find": _find,
    "watch": _watch,
    "eval": _eval,
    "source": _source,
    ".": _source,
    "alias": _alias,
    "trap": _trap,
    "hash": _hash,
    "let": _let,
    "cd": _cd,
    "pushd": _cd,
    "popd": _cd,
    **{name: _noop for name in _NOOP.split()},
}

FAMILY = Family(
    name="wrappers",
    handlers=HANDLERS,
    # programs that run another command this module does not unwrap: said so instead of pretending to know
    opaque_runners=names(
        "at batch crontab systemd-run parallel script runuser chroot unshare nsenter flatpak-spawn firejail bwrap "
        "strace ltrace gdb valgrind expect coproc fc enable flock unbuffer faketime proot entr watchexec perf "
        "chrt taskset prlimit cgexec sg setpriv numactl cpulimit torsocks proxychains proxychains4 xvfb-run "
        "dbus-run-session fakeroot eatmydata nocache catchsegv ssh-agent"
    ),
    # names a shell function must not take over (every handled program's too)
    guarded=names(
        "ls cd echo printf test true false pwd read exit return set shift export unset type which whoami id make "
        "pytest python3 git sudo kill ps grep cat rm mv cp mkdir chmod chown sh bash command builtin exec source "
        "eval trap alias history jobs wait sleep date env"
    ),
    classes={
        "read_only_programs": names(
            "pwd echo printf true false test [ which whoami id uname hostname find basename dirname type sleep seq "
            "cd expr printenv env nproc free uptime ps xargs timeout nice nohup time command builtin exit wait : "
            "read return shift"
        ),
        "cd_programs": names("cd pushd"),
    },
)
