"""The tree walk: statements, redirections, substitutions, heredocs; and the helpers handlers use.

tree-sitter-bash parses the string; ``Describer`` walks the tree in execution order, does quote removal
(``words``), tracks the working directory, and hands every simple command to the handler of its
program (``handlers``, assembled in ``__init__``). Handlers state facts through the Describer's helpers
(``read``, ``write``, ``delete``, ``url``, ``inner``, ``execute``...), which record them both for the
whole call (``Effects.reads``...) and for the command itself (``CommandEffect.reads``...). Whatever
the walk cannot follow goes into ``opaque`` with a reason, so the policy fails closed.

    d = Describer(workspace, cwd, handlers)
    d.describe("cd src && rm -rf build", Ctx())
    d.effects().commands[1].cwd   # "src"
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

import tree_sitter_bash
from tree_sitter import Language, Node, Parser

from gateway.effects import network
from gateway.effects.paths import Workspace, suspicious_unicode
from gateway.effects.shell.globs import escape, expand_glob, list_tree, literal_prefix, unescape
from gateway.effects.shell.options import Opts, parse_options
from gateway.effects.shell.words import (
    ASSIGNMENT,
    BRACE,
    GLOB,
    Word,
    ansi_c,
    dq_unescape,
    has_unparsed_subst,
    heredoc_unescape,
    names,
    short,
    text,
    unquote_bare,
)
from gateway.errors import InvalidArguments
from gateway.types import CommandEffect, Effects, NetworkEffect, PackageEffect, Redirect

MAX_COMMAND_BYTES = 16 * 1024
MAX_NESTING = 16  # substitutions, wrappers and re-parsed strings inside one another
MAX_STRUCTURE = 64  # nested groups, subshells, loops and conditionals (bounds the recursion)
MAX_COMMANDS = 256  # simple commands per call: more is opaque (and the walk stops, so it stays fast)
MAX_WORDS = 1024  # words (and redirections) in all those commands

# One parser for the process: creating one costs more than a parse. A tree-sitter parser must not be
# used by two threads at once, and the gateway may describe calls from worker threads, hence the lock.
_PARSER = Parser(Language(tree_sitter_bash.language()))
_PARSE_LOCK = threading.Lock()

_CONTROL = re.compile(r"[\x01-\x08\x0b-\x1f\x7f-\x9f]")
_INVISIBLE = re.compile("[\u200b-\u200d\u2060\ufeff\u00ad\u202a-\u202e\u2066-\u2069]")
# "r\<newline>m" is one word for bash but two for tree-sitter: refuse rather than mis-read it.
_MIDWORD_CONTINUATION = re.compile(r"[^\s\\;&|(){}<>]\\\n[^\s;&|(){}<>]")
_VERSIONED = re.compile(r"^(python|pip|pypy|perl|ruby|php|node|nodejs|lua|luajit)(\d+(\.\d+)*)?$")
_DEV_NET = re.compile(r"^/dev/(tcp|udp)/([^/]+)/([^/]*)$")

# Streams, not files: writing to them changes nothing on disk. Only these exact names: any other path
# under /dev/fd or /proc (`/dev/fd/../../etc/passwd`) is resolved like every other path.
_STREAMS = names("/dev/null /dev/stdin /dev/stdout /dev/stderr /dev/tty /dev/zero -")
_STREAM_FD = re.compile(r"^/(?:dev|proc/self)/fd/[0-9]+$")

# Environment variables that change which program runs or what it loads, or how later words expand.
_ENV_RISKY = names(
    "PATH LD_PRELOAD LD_LIBRARY_PATH LD_AUDIT BASH_ENV ENV IFS SHELLOPTS BASHOPTS PS4 PROMPT_COMMAND CDPATH HOME "
    "NODE_OPTIONS PYTHONSTARTUP PYTHONHOME PYTHONINSPECT PERL5OPT PERL5LIB PERLLIB RUBYOPT RUBYLIB SSH_ASKPASS "
    "SUDO_ASKPASS LESSOPEN LESSCLOSE BROWSER"
)
_ENV_RISKY_PREFIXES = ("LD_", "DYLD_", "BASH_FUNC_")
# Editors and pagers name programs too; these values are known to be harmless.
_ENV_COMMAND_VARS = names("EDITOR VISUAL PAGER GIT_EDITOR GIT_PAGER GIT_SEQUENCE_EDITOR MANPAGER")
_SAFE_COMMAND_VALUES = frozenset({"true", ":", "cat", "less", "more", "vi", "vim", "nano", ""})
# git reads many GIT_* variables, and several name programs it runs or files it writes (GIT_EXTERNAL_DIFF,
# GIT_SSH_COMMAND, GIT_TRACE=/path, GIT_DIR, GIT_CONFIG_*): only these are known to be harmless.
GIT_SAFE_ENV = names(
    "GIT_AUTHOR_NAME GIT_AUTHOR_EMAIL GIT_AUTHOR_DATE GIT_COMMITTER_NAME GIT_COMMITTER_EMAIL GIT_COMMITTER_DATE "
    "GIT_TERMINAL_PROMPT GIT_OPTIONAL_LOCKS GIT_MERGE_AUTOEDIT GIT_FLUSH GIT_LITERAL_PATHSPECS GIT_GLOB_PATHSPECS "
    "GIT_NOGLOB_PATHSPECS GIT_ICASE_PATHSPECS GIT_ADVICE GIT_PROGRESS_DELAY GIT_DEFAULT_HASH"
)
_GIT_TRACE_VALUES = frozenset({"", "0", "1", "2", "true", "false"})

RESERVED = names("then else elif fi do done esac in } { function select")
PRIVILEGED = names("sudo su doas pkexec run0 sudoedit")
SHELLS = names("sh bash zsh dash ksh ash mksh fish rbash")
# Programs whose output is downloaded (or remote) bytes, and decoders whose output hides what it is.
_FETCHERS = names(
    "curl wget fetch nc ncat netcat socat telnet http https xh xhs aria2c lynx w3m links ftp tftp lftp ssh"
)
_DECODERS = names("gunzip zcat bunzip2 bzcat unxz xzcat unzstd zstdcat uudecode")
# Programs that run another command this module does not unwrap: say so instead of pretending to know.
_OPAQUE_RUNNERS = names(
    "at batch crontab systemd-run parallel script runuser chroot unshare nsenter flatpak-spawn firejail bwrap "
    "strace ltrace gdb valgrind expect coproc fc enable flock unbuffer faketime proot entr watchexec perf chrt "
    "taskset prlimit cgexec sg setpriv numactl cpulimit torsocks proxychains proxychains4 xvfb-run "
    "dbus-run-session fakeroot eatmydata nocache catchsegv ssh-agent"
)
# Names a function definition must not take over (the handler table's names are checked too).
_COMMON_NAMES = names(
    "ls cd echo printf test true false pwd read exit return set shift export unset type which whoami id make "
    "pytest python3 git sudo kill ps grep cat rm mv cp mkdir chmod chown sh bash command builtin exec source "
    "eval trap alias history jobs wait sleep date env"
)


# --------------------------------------------------------------------------------------------------
# What a handler sees, and what it fills in
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ctx:
    """Where a statement runs: how it was reached, how deep, and where its standard input comes from."""

    via: str = "direct"
    depth: int = 0  # substitutions, wrappers and re-parses
    nest: int = 0  # structural nesting
    stdin: str = "inherit"  # inherit | pipe | file | heredoc | herestring | socket | dup
    stdin_text: str | None = None  # literal heredoc or herestring text
    stdin_tainted: bool = False  # stdin carries downloaded or decoded bytes
    sudo: bool = False  # runs with elevated privileges


@dataclass(frozen=True)
class Redir:
    redirect: Redirect
    kind: str  # in | out | dup | heredoc | herestring | socket
    path: Path | None = None
    text: str | None = None
    tainted: bool = False
    shown: tuple[str, ...] = ()  # the files it reads (kind "in") or writes (kind "out"), as displayed


@dataclass
class CommandFacts:
    """The normalised facts of one simple command (``CommandEffect``'s fields beyond argv), filled in by
    the walk (program, cwd, env, redirections) and by the program's handler (the rest)."""

    program: str = ""
    cwd: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    subcommand: str | None = None
    subcommand_as_written: str | None = None
    operation: str | None = None
    inline_code: list[str] = field(default_factory=list)
    reads: list[str] = field(default_factory=list)
    writes: list[str] = field(default_factory=list)
    deletes: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    executes: list[str] = field(default_factory=list)
    access: str | None = None
    recursive: bool = False
    world_writable: bool = False

    def as_fields(self) -> dict[str, object]:
        return {
            "program": self.program,
            "subcommand": self.subcommand,
            "subcommand_as_written": self.subcommand_as_written,
            "operation": self.operation,
            "cwd": self.cwd,
            "inline_code": self.inline_code,
            "reads": unique(self.reads),
            "writes": unique(self.writes),
            "deletes": unique(self.deletes),
            "paths": unique(self.paths),
            "executes": unique(self.executes),
            "env": self.env,
            "access": self.access,
            "recursive": self.recursive,
            "world_writable": self.world_writable,
        }


@dataclass
class Call:
    """One simple command, as a handler sees it."""

    name: str  # normalised program name: "rm", "python", "pip"
    words: list[Word]
    ctx: Ctx
    redirects: list[Redir] = field(default_factory=list)
    facts: CommandFacts = field(default_factory=CommandFacts)

    @property
    def args(self) -> list[Word]:
        return self.words[1:]

    @property
    def taints(self) -> bool:
        """Does this command print or write downloaded or decoded bytes?"""
        return self.ctx.stdin_tainted or fetches([w.value for w in self.words])


Handler = Callable[["Describer", Call], None]


@dataclass
class _Recorded:
    argv: list[str]
    redirects: list[Redirect]
    via: str
    facts: CommandFacts


_STATEMENT_TYPES = names(
    "program list pipeline command redirected_statement subshell compound_statement if_statement elif_clause "
    "else_clause while_statement for_statement c_style_for_statement case_statement case_item do_group "
    "negated_command function_definition variable_assignment variable_assignments declaration_command "
    "unset_command test_command comment file_redirect heredoc_redirect herestring_redirect ERROR"
)
# Node types that are values, not statements: only the substitutions inside them can run anything.
_VALUE_TYPES = names(
    "word number string raw_string ansi_c_string translated_string concatenation simple_expansion expansion "
    "arithmetic_expansion command_substitution process_substitution brace_expression extglob_pattern regex "
    "variable_name special_variable_name binary_expression unary_expression postfix_expression "
    "parenthesized_expression ternary_expression test_operator array subscript"
)
_REDIRECT_TYPES = names("file_redirect heredoc_redirect herestring_redirect")
_LEAF_TEXT_TYPES = names("word string_content extglob_pattern regex")
_INPUT_KINDS = names("in heredoc herestring")
# A word with no quoting, expansion, glob, brace or tilde: its value is its text.
_PLAIN_WORD = re.compile(r"[A-Za-z0-9_./:=@%+,-]+")


class _Stop(Exception):
    """The walk went past a bound: nothing more is described (the reason is already opaque)."""


class Describer:
    """Accumulates the facts of one command string (and of the strings re-parsed from it)."""

    def __init__(self, workspace: Workspace, cwd: Path, handlers: Mapping[str, Handler]) -> None:
        self.ws = workspace
        self.handlers = handlers
        self.cwd: Path | None = cwd  # None once a cd could not be followed
        self.home = os.environ.get("HOME", "/root")
        self.reads: list[str] = []
        self.writes: list[str] = []
        self.creates: list[str] = []
        self.deletes: list[str] = []
        self.recursive_deletes: list[str] = []
        self.commands: list[_Recorded] = []
        self.emits_tainted: list[bool] = []  # per command: does it print downloaded or decoded bytes?
        self.network: list[NetworkEffect] = []
        self.packages: list[PackageEffect] = []
        self.opaques: list[str] = []
        self.privileged = False
        self.tainted: set[Path] = set()  # files that hold downloaded or decoded bytes
        self.made_dirs: set[Path] = set()  # directories made here, so a later cd into them can be followed
        self.word_count = 0
        # where a word points from a directory, and how a path is shown: asked again and again (every cd,
        # every relative path), answered once per call
        self._located: dict[tuple[str, Path | None], Path] = {}
        self._shown: dict[Path, str] = {}
        self._real_dirs: dict[str, str] = {}
        self._root = str(workspace.root)
        self._root_prefix = self._root.rstrip("/") + "/"

    # ---- results ---------------------------------------------------------------------------------

    def effects(self) -> Effects:
        writes = unique(self.writes)
        commands = [
            CommandEffect(argv=c.argv, redirects=c.redirects, via=c.via, **c.facts.as_fields())  # type: ignore[arg-type]
            for c in self.commands
        ]
        return Effects(
            reads=unique(self.reads),
            writes=writes,
            creates=unique(c for c in self.creates if c not in writes),
            deletes=unique(self.deletes),
            recursive_deletes=unique(self.recursive_deletes),
            commands=commands,
            network=list({(n.host, n.via, n.port): n for n in self.network}.values()),
            privileged=self.privileged,
            packages=list({repr(p): p for p in self.packages}.values()),
            opaque=unique(self.opaques),
        )

    def opaque(self, reason: str) -> None:
        self.opaques.append(reason)

    def execute(self, call: Call, what: str, reason: str) -> None:
        """``call`` may run ``what`` (a program or command text) that is not listed as a command of its own."""
        call.facts.executes.append(what)
        self.opaque(reason)

    def _tainted_since(self, start: int) -> bool:
        return any(self.emits_tainted[start:])

    def shown_cwd(self) -> str | None:
        return None if self.cwd is None else self.display(self.cwd)

    def display(self, path: Path) -> str:
        """Workspace-relative inside, absolute outside (as ``Workspace.display``), remembered, and by string
        prefix rather than pathlib: a call may show thousands of paths."""
        shown = self._shown.get(path)
        if shown is None:
            real = str(path)
            if real == self._root:
                shown = "."
            elif real.startswith(self._root_prefix):
                shown = real[len(self._root_prefix) :]
            else:
                shown = real
            self._shown[path] = shown
        return shown

    def _locate(self, value: str) -> Path:
        """Where ``value`` really points from the cwd (as ``Workspace.locate``: absolute, symlinks followed;
        InvalidArguments for NUL or empty), remembered."""
        key = (value, self.cwd)
        found = self._located.get(key)
        if found is None:
            if "\x00" in value or value == "":
                found = self.ws.locate(value, base=self.cwd)  # raises with the workspace's own message
            else:
                base = str(self.cwd) if self.cwd is not None else self._root
                found = Path(self._realpath(value if value.startswith("/") else os.path.join(base, value)))
            self._located[key] = found
        return found

    def _realpath(self, path: str) -> str:
        """``os.path.realpath``, with the directory part resolved once per directory: realpath(d/name) is
        realpath(realpath(d)/name), and a call names many files in few directories."""
        directory, _, name = path.rpartition("/")
        try:
            if name in ("", ".", "..") or not directory:
                return os.path.realpath(path)
            real_dir = self._real_dirs.get(directory)
            if real_dir is None:
                real_dir = self._real_dirs[directory] = os.path.realpath(directory)
            joined = os.path.join(real_dir, name)
            return os.path.realpath(joined) if os.path.islink(joined) else joined
        except OSError as exc:  # `/proc/1/root/...`: a link the gateway may not follow; where it leads is unknown
            self.opaque(f"path {short(path)} cannot be resolved ({exc.strerror or exc}): where it leads is not known")
            return os.path.normpath(path)

    # ---- entry -----------------------------------------------------------------------------------

    def run(self, command: str) -> None:
        """Describe a whole command string; a bound reached stops the walk (already opaque)."""
        try:
            self.describe(command, Ctx())
        except _Stop:
            pass
        except RecursionError:
            self.opaque("command is nested too deeply to analyse")

    def describe(self, source_text: str, ctx: Ctx) -> None:
        """Parse ``source_text`` and walk it; the checks before parsing refuse what the parser could mis-read."""
        if ctx.depth > MAX_NESTING:
            self.opaque(f"nesting deeper than {MAX_NESTING} levels of substitutions or wrappers")
            return
        if "\x00" in source_text:
            self.opaque("command contains a NUL byte")
            return
        try:
            source = source_text.encode("utf-8")
        except UnicodeEncodeError:
            self.opaque("command is not valid UTF-8 text")
            return
        if len(source) > MAX_COMMAND_BYTES:
            self.opaque(f"command is longer than 16 KiB ({len(source)} bytes)")
            return
        if _CONTROL.search(source_text):
            self.opaque("command contains control characters")
        if _INVISIBLE.search(source_text):
            self.opaque("command contains invisible or bidirectional control characters")
        if _MIDWORD_CONTINUATION.search(source_text):
            self.opaque("line continuation inside a word (bash joins the word, the parser splits it)")
        if separator_runs(source_text) > 4 * MAX_COMMANDS:
            # tree-sitter-bash takes superlinear time on long pipelines (80 ms for 8,000 `a|`): a string
            # that plainly holds far more commands than are analysed is not parsed at all
            self.opaque(f"more than {MAX_COMMANDS} simple commands: the rest is not analysed")
            raise _Stop
        with _PARSE_LOCK:
            tree = _PARSER.parse(source)
        root = tree.root_node
        if root.has_error:
            self.opaque(f"shell syntax error near {short(_error_snippet(root))}")
        self._block(root, ctx)

    # ---- statements ------------------------------------------------------------------------------

    def _stmt(self, node: Node, ctx: Ctx, redirs: list[Redir]) -> None:
        kind = node.type
        if kind == "comment" or node.is_missing:  # a MISSING node is a syntax error, already opaque
            return
        if kind not in _STATEMENT_TYPES:
            if kind not in _VALUE_TYPES:
                self.opaque(f"unsupported shell construct {kind}: {short(text(node))}")
            self._scan(node, ctx)
            return
        _STATEMENTS[kind](self, node, ctx, redirs)

    def _block(self, node: Node, ctx: Ctx, redirs: list[Redir] | None = None) -> None:
        """The named children of ``node`` in order; ``cmd &`` runs in the background (in a subshell)."""
        children = node.children
        for i, child in enumerate(children):
            if not child.is_named or child.type == "comment":
                continue
            if i + 1 < len(children) and children[i + 1].type == "&":
                saved = self.cwd
                self._stmt(child, replace(ctx, via="background"), list(redirs or []))
                self.cwd = saved
            else:
                self._stmt(child, ctx, list(redirs or []))

    def _nested(self, ctx: Ctx) -> Ctx | None:
        if ctx.nest + 1 > MAX_STRUCTURE:
            self.opaque(f"shell structure nested deeper than {MAX_STRUCTURE} levels")
            return None
        return replace(ctx, nest=ctx.nest + 1)

    def _list(self, node: Node, ctx: Ctx, redirs: list[Redir]) -> None:
        for item in _flatten(node, "list"):
            self._stmt(item, ctx, redirs)

    def _pipeline(self, node: Node, ctx: Ctx, redirs: list[Redir]) -> None:
        self._pipe([(element, []) for element in _flatten(node, "pipeline")], ctx, redirs)

    def _pipe(self, elements: list[tuple[Node, list[Redir]]], ctx: Ctx, outer: list[Redir]) -> None:
        """Pipeline elements in order; once one prints downloaded or decoded bytes, every later stdin is tainted.

        Redirections of the whole pipeline: input ones feed the first command, the others the last one."""
        first, *_ = elements
        elements[0] = (first[0], [r for r in outer if r.kind in _INPUT_KINDS] + first[1])
        last = elements[-1]
        elements[-1] = (last[0], [r for r in outer if r.kind not in _INPUT_KINDS] + last[1])
        tainted = ctx.stdin_tainted
        for i, (element, redirs) in enumerate(elements):
            element_ctx = ctx
            if i > 0:
                element_ctx = replace(ctx, via="pipe", stdin="pipe", stdin_text=None, stdin_tainted=tainted)
            start = len(self.commands)
            saved = self.cwd  # every element runs in a subshell
            self._stmt(element, element_ctx, redirs)
            self.cwd = saved
            tainted = tainted or self._tainted_since(start)

    def _subshell(self, node: Node, ctx: Ctx, redirs: list[Redir]) -> None:
        inner = self._nested(ctx)
        if inner is None:
            return
        saved = self.cwd
        self._block(node, inner, redirs)
        self.cwd = saved

    def _group(self, node: Node, ctx: Ctx, redirs: list[Redir]) -> None:
        inner = self._nested(ctx)
        if inner is not None:
            self._block(node, inner, redirs)

    def _conditional(self, node: Node, ctx: Ctx, redirs: list[Redir]) -> None:
        """if / while / for / case / function bodies: afterwards, a cd inside may or may not have happened."""
        inner = self._nested(ctx)
        if inner is None:
            return
        before = self.cwd
        self._block(node, inner, redirs)
        if self.cwd != before:
            self.cwd = None

    def _function(self, node: Node, ctx: Ctx, redirs: list[Redir]) -> None:
        name_node = node.child_by_field_name("name")
        name = text(name_node) if name_node is not None else ""
        if name in _COMMON_NAMES or name in self.handlers:
            self.opaque(f"function definition redefines the command {name!r}")
        self._conditional(node, ctx, redirs)

    def _scan_only(self, node: Node, ctx: Ctx, redirs: list[Redir]) -> None:
        """`[[ ... ]]`: its substitutions run; and `[[ -v 'a[$(id)]' ]]` runs id (bash evaluates subscripts)."""
        self._scan(node, ctx)
        stack = [node]
        while stack:
            current = stack.pop()
            if current.type == "raw_string" and _subscript_with_subst(text(current)):
                self.opaque(f"array subscript with a command substitution: {short(text(current))}")
            stack.extend(current.children)

    def _assignments(self, node: Node, ctx: Ctx, redirs: list[Redir]) -> None:
        for assignment in [node] if node.type == "variable_assignment" else node.named_children:
            if assignment.type == "variable_assignment":
                self._assignment(assignment, ctx, prefix_of=None)
            else:
                self._stmt(assignment, ctx, redirs)

    def _assignment(self, node: Node, ctx: Ctx, prefix_of: str | None) -> tuple[str, str]:
        """``NAME=value``: scan the value, flag names that change what runs. Returns (NAME, value)."""
        children = node.children
        name_node = children[0] if children else None
        name = text(name_node) if name_node is not None else ""
        if name_node is not None and name_node.type == "subscript":
            name = text(name_node.child_by_field_name("name") or name_node)
        value = Word.of("")
        for value_node in [c for c in children[1:] if c.is_named]:
            value = self._word(value_node, ctx)
        self.check_env(name, value, prefix_of)
        # x='a[$(id)]'; echo $((x)) runs id: arithmetic re-evaluates the text of variables
        if value.literal and has_unparsed_subst(value.value):
            self.opaque(f"variable {name} holds command-substitution text that arithmetic or eval could run")
        return name, value.value

    def check_env(self, name: str, value: Word, prefix_of: str | None) -> None:
        """Environment that changes which program runs, what it loads or where it writes is opaque."""
        where = f"for {prefix_of}" if prefix_of else "for the commands that follow"
        if name in _ENV_COMMAND_VARS:
            if not (value.literal and value.value in _SAFE_COMMAND_VALUES):
                self.opaque(f"{name}={value.value} names a program to run {where}")
        elif name in _ENV_RISKY or name.startswith(_ENV_RISKY_PREFIXES):
            self.opaque(f"{name}= changes what runs or how words expand {where}")
        elif name.startswith("GIT_") and name not in GIT_SAFE_ENV and not _harmless_trace(name, value):
            self.opaque(f"{name}= changes what git runs or where it reads and writes {where}")

    def _declaration(self, node: Node, ctx: Ctx, redirs: list[Redir]) -> None:
        """export / declare / local / readonly / typeset: recorded as a command; assignments checked."""
        keyword = node.children[0].type if node.children else "declare"
        self._count_words(node.named_child_count + 1)
        argv = [keyword]
        for child in node.named_children:
            if child.type == "variable_assignment":
                argv.append("=".join(self._assignment(child, ctx, prefix_of=None)))
            elif child.type != "comment":
                argv.append(self._word(child, ctx).value)
        self._run([Word.of(a) for a in argv], redirs, ctx, handle=False)
        if keyword in ("declare", "typeset", "local") and any(re.match(r"^-\w*n", a) for a in argv[1:]):
            self.opaque(f"{keyword} -n makes a name reference (indirect variables)")

    def _unset(self, node: Node, ctx: Ctx, redirs: list[Redir]) -> None:
        words = [Word.of("unset"), *(self._word(c, ctx) for c in node.named_children if c.type != "comment")]
        self._run(words, redirs, ctx, handle=False)

    def _redirected(self, node: Node, ctx: Ctx, redirs: list[Redir]) -> None:
        """A statement with redirections, or a bare redirection (``> f`` truncates f)."""
        body: Node | None = None
        own: list[Node] = []
        for child in [node] if node.type in _REDIRECT_TYPES else node.children:
            if child.type in _REDIRECT_TYPES:
                own.append(child)
            elif child.is_named and child.type != "comment":
                if body is not None:
                    self.opaque(f"unexpected statement layout: {short(text(node))}")
                body = child
        self._count_words(len(own))
        if body is not None and body.type == "list":
            # `cd d && cmd > f`: tree-sitter hangs the redirection on the whole list; bash on the last
            # command of the &&/|| chain, opened after the commands before it ran (in the cd's directory)
            *before, body = _flatten(body, "list")
            for item in before:
                self._stmt(item, ctx, redirs)
        pipe_tail: list[Node] = []
        list_tail: list[Node] = []
        infos = self._redirects(own, ctx, pipe_tail, list_tail)
        if body is None:
            self._run([], [*redirs, *infos], ctx)
        elif pipe_tail:
            # `cat <<EOF | sh`: tree-sitter hangs the rest of the pipeline under the heredoc
            elements = [(body, infos)] + [(e, []) for tail in pipe_tail for e in _flatten(tail, "pipeline")]
            self._pipe(elements, ctx, redirs)
        elif body.type == "pipeline":
            # `a | b 2>&1`: tree-sitter puts the redirect on the pipeline, bash on its last command
            elements = [(e, []) for e in _flatten(body, "pipeline")]
            elements[-1] = (elements[-1][0], infos)
            self._pipe(elements, ctx, redirs)
        else:
            self._stmt(body, ctx, [*redirs, *infos])
        for tail in list_tail:
            self._stmt(tail, ctx, redirs)

    # ---- redirects -------------------------------------------------------------------------------

    def _redirects(self, nodes: list[Node], ctx: Ctx, pipe_tail: list[Node], list_tail: list[Node]) -> list[Redir]:
        out: list[Redir] = []
        carry: int | None = None  # an fd the parser attached to the previous redirection
        for node in nodes:
            if node.type == "file_redirect":
                redir, carry = self._file_redirect(node, ctx, carry)
                out.append(redir)
            else:
                carry = None
                out.extend(self._redirect(node, ctx, pipe_tail, list_tail))
        return out

    def _redirect(self, node: Node, ctx: Ctx, pipe_tail: list[Node], list_tail: list[Node]) -> list[Redir]:
        if node.type == "file_redirect":
            return [self._file_redirect(node, ctx, None)[0]]
        if node.type == "herestring_redirect":
            return [self._herestring(node, ctx)]
        return self._heredoc(node, ctx, pipe_tail, list_tail)

    def _file_redirect(self, node: Node, ctx: Ctx, fd: int | None) -> tuple[Redir, int | None]:
        """One ``[fd]op target``; returns it and an fd the parser glued onto it that belongs to the next one."""
        op = ""
        targets: list[Node] = []
        for child in node.children:
            if child.type == "file_descriptor":
                fd = int(text(child)) if text(child).isdigit() else None
            elif not child.is_named or child.type == "ERROR":
                op += text(child)  # `3<>` parses as "<" plus an ERROR ">" (already opaque): keep "<>"
            else:
                targets.append(child)
        carry: int | None = None
        if len(targets) > 1 and all(t.type == "number" for t in targets[1:]):
            # `>a 0<b` parses as target "a" plus a number "0" that is the next redirection's fd
            carry = int(text(targets[-1]))
            targets = targets[:1]
        if len(targets) != 1:
            self.opaque(f"redirection without a single target: {short(text(node))}")
            return Redir(Redirect(op=op, target=text(node), fd=fd), kind="dup"), carry
        return self._redirect_target(targets[0], op, fd, ctx), carry

    def _redirect_target(self, target: Node, op: str, fd: int | None, ctx: Ctx) -> Redir:
        if op in (">&", "<&") and (target.type == "number" or text(target) == "-"):
            reads_stdin = op == "<&" or fd == 0
            return Redir(Redirect(op=op, target=text(target), fd=fd), kind="dup" if reads_stdin else "out")
        reading = op in ("<", "<&")
        kind = "in" if reading else "out"
        if target.type == "process_substitution":
            start = len(self.commands)
            self._subst(target, ctx, "procsubst")
            redirect = Redirect(op=op, target=text(target), fd=fd)
            return Redir(redirect, kind=kind, tainted=self._tainted_since(start))
        word = self._word(target, ctx)
        redirect = Redirect(op=op, target=word.value, fd=fd)
        if not word.literal:
            self.opaque(f"redirection target {short(word.raw)} is not literal ({word.why})")
            return Redir(redirect, kind=kind, tainted=word.tainted)
        net = _DEV_NET.match(word.value)
        if net:
            self.host(net.group(2), "bash")
            return Redir(redirect, kind="socket", tainted=True)
        if is_stream(word.value):
            return Redir(redirect, kind=kind)
        call = Call(name="redirect", words=[word], ctx=ctx)
        if reading:
            path = self.read(word, call)
            return Redir(redirect, kind="in", path=path, tainted=path in self.tainted, shown=tuple(call.facts.reads))
        path = self.write(word, call, modify=op == "<>")
        return Redir(redirect, kind="out", path=path, shown=tuple(call.facts.writes))

    def _herestring(self, node: Node, ctx: Ctx) -> Redir:
        values = [self._word(c, ctx) for c in node.named_children]
        word = values[0] if len(values) == 1 else Word(value=text(node), raw=text(node), literal=False)
        body = word.value + "\n" if word.literal else None
        return Redir(Redirect(op="<<<", target=word.value), kind="herestring", text=body, tainted=word.tainted)

    def _heredoc(self, node: Node, ctx: Ctx, pipe_tail: list[Node], list_tail: list[Node]) -> list[Redir]:
        op, delimiter, quoted = "<<", "", False
        body: Node | None = None
        nested: list[Redir] = []
        after_operator = False
        for child in node.children:
            kind = child.type
            if not child.is_named:
                op = kind if kind in ("<<", "<<-") else op
                after_operator = kind in ("&&", "||", ";", "&")
            elif kind == "heredoc_start":
                raw = text(child)
                quoted = any(q in raw for q in "'\"\\")
                delimiter = re.sub(r"['\"\\]", "", raw)
            elif kind == "heredoc_body":
                body = child
            elif kind in _REDIRECT_TYPES:
                nested.extend(self._redirect(child, ctx, pipe_tail, list_tail))
            elif kind == "pipeline" and not after_operator:
                pipe_tail.append(child)
            elif kind in _STATEMENT_TYPES:
                list_tail.append(child)
            elif kind != "heredoc_end":
                self.opaque(f"unsupported heredoc layout ({kind}): {short(text(node))}")
        content = self._heredoc_text(body, ctx, quoted, strip_tabs=op == "<<-")
        return [Redir(Redirect(op=op, target=delimiter), kind="heredoc", text=content), *nested]

    def _heredoc_text(self, body: Node | None, ctx: Ctx, quoted: bool, strip_tabs: bool) -> str | None:
        """The literal text a heredoc feeds, or None when the shell expands something in it."""
        if body is None:
            return ""
        content = text(body)
        if not quoted:
            # an unquoted body is expanded: its $(..) run when the heredoc is read
            self._scan(body, ctx, heredoc=True)
            if has_unparsed_subst(_gaps(body)):
                self.opaque("heredoc body has a command substitution the parser did not separate")
            if any(c.type != "heredoc_content" for c in body.named_children) or "$" in content.replace("\\$", ""):
                return None
            content = heredoc_unescape(content)
        if strip_tabs:
            content = "\n".join(line.lstrip("\t") for line in content.split("\n"))
        return content

    # ---- substitutions and words -----------------------------------------------------------------

    def _scan(self, node: Node, ctx: Ctx, heredoc: bool = False) -> None:
        """Walk every substitution under ``node`` (iteratively: expressions nest deeply); check expansions."""
        stack = [node]
        while stack:
            current = stack.pop()
            kind = current.type
            if kind == "command_substitution":
                self._subst(current, ctx, "heredoc" if heredoc else "subst")
                continue
            if kind == "process_substitution":
                self._subst(current, ctx, "procsubst")
                continue
            if kind in ("simple_expansion", "expansion"):
                self._check_expansion(current)
            elif kind in _LEAF_TEXT_TYPES and has_unparsed_subst(text(current)):
                self.opaque(f"command substitution the parser did not separate: {short(text(current))}")
            if current.child_count:
                stack.extend(reversed(current.children))

    def _check_expansion(self, node: Node) -> None:
        value = text(node)
        if any(c.type == "variable_name" and text(c) == "IFS" for c in node.children):
            self.opaque(f"$IFS expansion changes how words split: {short(value)}")
        if value.endswith("@P}"):
            self.opaque(f"prompt expansion can run commands: {short(value)}")

    def _subst(self, node: Node, ctx: Ctx, via: str) -> None:
        if ctx.depth + 1 > MAX_NESTING:
            self.opaque(f"nesting deeper than {MAX_NESTING} levels of substitutions or wrappers")
            return
        inner = replace(ctx, via=via, depth=ctx.depth + 1, nest=ctx.nest + 1)
        if text(node).startswith(">("):
            # >(cmd) reads what the outer command writes: data we cannot see
            inner = replace(inner, stdin="pipe", stdin_text=None)
        saved = self.cwd
        self._block(node, inner)
        self.cwd = saved

    def _word(self, node: Node, ctx: Ctx) -> Word:
        """Quote removal for one word; substitutions inside it are walked first (they run first)."""
        if node.type == "word":
            value = text(node)
            if _PLAIN_WORD.fullmatch(value):  # most words: nothing to remove, expand or run
                return Word(value=value, raw=value)
        start = len(self.commands)
        self._scan(node, ctx)
        pieces: list[tuple[str, bool]] = []
        whys: list[str] = []
        self._pieces(node, pieces, whys)
        stream = node.type == "process_substitution"
        return self._make_word(text(node), pieces, whys, self._tainted_since(start), stream)

    def _pieces(self, node: Node, out: list[tuple[str, bool]], whys: list[str]) -> None:
        kind = node.type
        value = text(node)
        if kind in ("word", "extglob_pattern"):
            pieces, why = unquote_bare(value)
            out.extend(pieces)
            whys.extend([why] if why else [])
        elif kind == "number":
            out.append((value, False))
        elif kind == "raw_string":
            out.append((value[1:-1], True))
        elif kind == "ansi_c_string":
            out.append((ansi_c(value[2:-1]), True))
        elif kind == "string":
            self._dq_pieces(node, out, whys)
        elif kind in ("translated_string", "concatenation", "command_name"):
            end: int | None = None
            for child in node.children:
                if end is not None and child.start_byte != end:
                    whys.append(f"unexpected gap in word {short(value)}")
                end = child.end_byte
                if child.is_named:
                    self._pieces(child, out, whys)
                elif kind != "translated_string":
                    out.append((text(child), False))
                    whys.append(f"unsupported syntax {short(text(child))}")
        elif kind in ("simple_expansion", "expansion"):
            known = self._known_variable(node)
            out.append((value if known is None else known, known is not None))
            whys.extend([f"variable expansion {short(value)}"] if known is None else [])
        else:
            out.append((value, False))
            whys.append(f"{kind.replace('_', ' ')} {short(value)}")

    def _dq_pieces(self, node: Node, out: list[tuple[str, bool]], whys: list[str]) -> None:
        """A "..." string, rebuilt from the source: tree-sitter leaves some text (newlines) between children."""
        source = node.text or b""
        base = node.start_byte
        pos = 1
        literal: list[str] = []

        def flush() -> None:
            if literal:
                out.append((dq_unescape("".join(literal)), True))
                literal.clear()

        for child in node.named_children:
            begin, end = child.start_byte - base, child.end_byte - base
            if begin > pos:
                literal.append(source[pos:begin].decode("utf-8", errors="replace"))
            if child.type == "string_content":
                literal.append(text(child))
            else:
                flush()
                known = self._known_variable(child) if child.type in ("simple_expansion", "expansion") else None
                out.append((text(child) if known is None else known, True))
                if known is None:
                    whys.append(f"{child.type.replace('_', ' ')} {short(text(child))}")
            pos = end
        closing = len(source) - 1 if source.endswith(b'"') and len(source) > 1 else len(source)
        if closing > pos:
            literal.append(source[pos:closing].decode("utf-8", errors="replace"))
        flush()

    def _known_variable(self, node: Node) -> str | None:
        """$HOME and $PWD have known values; every other expansion depends on the run."""
        shape = [c.type for c in node.children]
        if shape not in (["$", "variable_name"], ["${", "variable_name", "}"]):
            return None
        name = text(node.named_children[0])
        if name == "HOME":
            return self.home
        if name == "PWD" and self.cwd is not None:
            return str(self.cwd)
        return None

    def _make_word(
        self, raw: str, pieces: list[tuple[str, bool]], whys: list[str], tainted: bool, stream: bool = False
    ) -> Word:
        value = "".join(piece for piece, _ in pieces)
        bare = "".join(piece if not quoted else "\x00" * len(piece) for piece, quoted in pieces)
        pattern = "".join(escape(piece) if quoted else piece for piece, quoted in pieces)
        if BRACE.search(bare):
            whys.append(f"brace expansion in {short(raw)}")
        if pieces and not pieces[0][1] and pieces[0][0].startswith("~"):
            expanded = self._tilde(pieces[0][0])
            if expanded is None:
                whys.append(f"tilde expansion {short(pieces[0][0])}")
            else:
                value = expanded + value[len(pieces[0][0]) :]
                pattern = escape(expanded) + pattern[len(pieces[0][0]) :]
        glob = bool(GLOB.search(bare))
        return Word(
            value=value,
            raw=raw,
            literal=not whys,
            glob=glob,
            why="; ".join(whys),
            tainted=tainted,
            stream=stream,
            pattern=pattern if glob else "",
        )

    def _tilde(self, first: str) -> str | None:
        prefix, slash, rest = first.partition("/")
        if prefix == "~":
            return self.home + slash + rest
        if prefix[1:2] in ("+", "-"):
            return None
        expanded = os.path.expanduser(prefix)
        return None if expanded == prefix else expanded + slash + rest

    # ---- simple commands -------------------------------------------------------------------------

    def _command(self, node: Node, ctx: Ctx, redirs: list[Redir]) -> None:
        assignments: list[Node] = []
        name_node: Node | None = None
        rest: list[Node] = []
        own: list[Node] = []
        for child in node.children:
            kind = child.type
            if kind in _REDIRECT_TYPES:
                own.append(child)
            elif kind == "variable_assignment" and name_node is None:
                assignments.append(child)
            elif kind == "command_name":
                name_node = child
            elif kind != "comment":
                rest.append(child)
        if name_node is not None and any(c.is_missing for c in name_node.children):
            return  # `ls |`: the parser invents an empty command; the syntax error is already opaque
        self._count_words(len(rest) + len(assignments) + len(own) + 1)
        head = self._word(name_node, ctx) if name_node is not None else None
        env = dict(self._assignment(a, ctx, prefix_of=head.value if head else None) for a in assignments)
        words = [head] if head is not None else []
        for child in rest:
            if child.is_named:
                words.append(self._word(child, ctx))
            else:
                self.opaque(f"unsupported syntax {short(text(child))} in {short(text(node))}")
                words.append(Word(value=text(child), raw=text(child), literal=False, why="unsupported syntax"))
        pipe_tail: list[Node] = []
        list_tail: list[Node] = []
        infos = self._redirects(own, ctx, pipe_tail, list_tail)
        self._run(words, [*redirs, *infos], ctx, env=env)
        for tail in pipe_tail + list_tail:
            self.opaque(f"unsupported heredoc layout: {short(text(node))}")
            self._stmt(tail, replace(ctx, stdin="pipe", stdin_tainted=True), [])

    def _run(
        self, words: list[Word], redirs: list[Redir], ctx: Ctx, env: dict[str, str] | None = None, handle: bool = True
    ) -> None:
        """Record one simple command, then describe it if its program is known."""
        if ctx.depth > MAX_NESTING:
            self.opaque(f"nesting deeper than {MAX_NESTING} levels of substitutions or wrappers")
            return
        if len(self.commands) >= MAX_COMMANDS:
            self.opaque(f"more than {MAX_COMMANDS} simple commands: the rest is not analysed")
            raise _Stop
        ctx = _with_stdin(ctx, redirs)
        head = words[0] if words else None
        name = program_name(head.value) if head is not None and head.literal else ""
        facts = CommandFacts(program=self._program_fact(head, name), cwd=self.shown_cwd(), env=dict(env or {}))
        for r in redirs:
            (facts.reads if r.kind == "in" else facts.writes).extend(r.shown)
        call = Call(name=name, words=words, ctx=ctx, redirects=redirs, facts=facts)
        self.commands.append(_Recorded([w.value for w in words], [r.redirect for r in redirs], ctx.via, facts))
        self.emits_tainted.append(call.taints)
        for word in words[1:]:
            if word.literal and _subscript_with_subst(word.value):
                # `test -v 'a[$(id)]'`, `printf -v`, `read`, `unset`: bash evaluates the subscript
                self.opaque(f"array subscript with a command substitution: {short(word.value)}")
        for word in words:
            # plain printable ASCII cannot mislead (the check normalises and classifies every character)
            why = None if word.value.isascii() and word.value.isprintable() else suspicious_unicode(word.value)
            if why:
                self.opaque(f"word {short(word.value)} contains {why}")
        if head is None or not handle:
            return
        if not head.literal:
            what = "downloaded/decoded content executed" if head.tainted else "dynamic command name"
            self.opaque(f"{what}: {short(head.raw)} ({head.why})")
            return
        self.privileged = self.privileged or name in PRIVILEGED
        if name in RESERVED:
            self.opaque(f"reserved word {name!r} used as a command")
        elif "/" in head.value and self.is_tainted(head):
            self.opaque(f"downloaded/decoded content executed: {short(head.value)}")
        handler = self.handlers.get(name)
        if handler is not None:
            handler(self, call)
            if facts.subcommand_as_written is None:  # a handler that knows no other spelling states the word itself
                facts.subcommand_as_written = facts.subcommand
        elif name in _OPAQUE_RUNNERS:
            self.opaque(f"{name} runs commands this gateway does not unwrap")
        else:
            self.unknown_paths(call.args, call)  # a program we do not know: its path-like words
        if call.taints:
            self.tainted.update(r.path for r in redirs if r.kind == "out" and r.path is not None)

    def _program_fact(self, head: Word | None, name: str) -> str:
        """The program as the policy sees it: the normalised name, except for a file in the workspace
        (`./ls`, `scripts/cat`, `.venv/bin/pip`), which is whatever the agent put there: its path as written."""
        if head is None or not head.literal or "/" not in head.value:
            return name
        path = self.quiet_locate(head)
        return head.value if path is None or self.ws.contains(path) else name

    def _count_words(self, words: int) -> None:
        """Words are counted before quote removal works on them, so a huge command stops early."""
        self.word_count += words
        if self.word_count > MAX_WORDS:
            self.opaque(f"more than {MAX_WORDS} words: the rest is not analysed")
            raise _Stop

    # ---- helpers for handlers: options and paths -------------------------------------------------

    def options(
        self,
        call: Call,
        short_opts: str = "",
        long: str = "",
        known: str = "",
        optional: str = "",
        stop: bool = False,
        args: list[Word] | None = None,
    ) -> Opts:
        """getopt-style parsing (see ``options.parse_options``); a non-literal word that looks like an
        option is opaque: it could be any option."""
        opts = parse_options(call.args if args is None else args, short_opts, long, known, optional, stop)
        for word in opts.doubts:
            self.opaque(f"{call.name}: option {short(word.raw)} is not literal ({word.why})")
        return opts

    def locate(self, word: Word, what: str) -> Path | None:
        """Where a path word points, or None (with an opaque reason when that is a doubt)."""
        if not word.literal:
            self.opaque(f"{what}: path {short(word.raw)} is not literal ({word.why})")
            return None
        value = word.value
        if value == "":
            return None
        if not value.startswith("/") and self.cwd is None:
            self.opaque(f"{what}: relative path {short(value)} after a cd that could not be followed")
            return None
        try:
            return self._locate(value)
        except InvalidArguments as exc:
            self.opaque(f"{what}: path {short(value)}: {exc.message}")
            return None

    def quiet_locate(self, word: Word) -> Path | None:
        """Where a word points when that is plain to see; None (and no opaque reason) otherwise."""
        if not word.literal or word.glob or not word.value or (self.cwd is None and not word.value.startswith("/")):
            return None
        try:
            return self._locate(word.value)
        except InvalidArguments:
            return None

    def matches(self, word: Word, call: Call) -> list[Path]:
        """The files an unquoted glob names now (bash expands it before the program runs), symlinks followed."""
        if not (word.glob and word.literal) or self.cwd is None:
            return []
        # the escaped pattern, unless a handler rewrote the value (find's {} -> root)
        pattern = word.pattern if word.pattern and unescape(word.pattern) == word.value else word.value
        if not self.ws.contains(Path(os.path.realpath(self.cwd / literal_prefix(pattern)))):
            # outside the workspace (tier 3 whatever it matches): the gateway does not list other people's
            # directories (its own state, other worktrees) into a decision an agent reads
            return []
        found = expand_glob(pattern, self.cwd)
        if found is None:
            self.opaque(f"{call.name}: glob {short(word.value)} matches more files than the analysis follows")
            return []
        return [Path(os.path.realpath(p)) for p in found]

    def _note(self, call: Call, paths: Iterable[Path], kind: str) -> None:
        """Record paths for the whole call (``kind`` is an Effects list) and for the command itself."""
        own = {"reads": "reads", "writes": "writes", "creates": "writes"}.get(kind, "deletes")
        for path in paths:
            shown = self.display(path)
            getattr(self, kind).append(shown)
            getattr(call.facts, own).append(shown)

    def read(self, word: Word, call: Call, expand: bool = True) -> Path | None:
        """A file the command reads; a glob reads every file it matches (``expand=False`` for programs
        that only look at names, like ls)."""
        if word.stream or (word.literal and is_stream(word.value)):
            return None
        path = self.locate(word, call.name)
        if path is not None:
            self._note(call, [path, *(self.matches(word, call) if expand else [])], "reads")
        return path

    def read_tree(self, word: Word, call: Call, hidden: bool = True, follow: bool = False) -> None:
        """A recursive read of file contents (grep -r, tar c): the directory and the files under it
        (``follow``: symbolic links met on the way are followed, as grep -R does)."""
        path = self.read(word, call)
        for root in [path, *self.matches(word, call)] if path is not None else []:
            if root.is_dir() and self.ws.contains(root):
                found = list_tree(root, hidden, follow)
                self._note(call, [Path(os.path.realpath(p)) for p in found], "reads")

    def write(self, word: Word, call: Call, modify: bool = False) -> Path | None:
        """A write: ``writes`` if the path exists (or is a glob, or ``modify``), else ``creates``."""
        if word.stream or (word.literal and is_stream(word.value)):
            return None
        net = _DEV_NET.match(word.value) if word.literal else None
        if net:
            self.host(net.group(2), call.name)
            return None
        path = self.locate(word, call.name)
        if path is None:
            return None
        existing = modify or word.glob or os.path.lexists(path)
        self._note(call, [path, *self.matches(word, call)], "writes" if existing else "creates")
        if call.taints:
            self.tainted.add(path)
        return path

    def delete(self, word: Word, call: Call, recursive: bool = False) -> None:
        """A delete; a recursive one or a glob (mass deletion, pattern kept as text) is a recursive delete."""
        path = self.locate(word, call.name)
        if path is not None:
            kind = "recursive_deletes" if recursive or word.glob else "deletes"
            self._note(call, [path, *self.matches(word, call)], kind)

    def unknown_paths(self, words: list[Word], call: Call) -> None:
        """Path-like words of a program the analysis does not follow: what it may touch, access unknown.

        An operand with a "/" or "..", a glob (with the files it matches), or the value of
        ``--opt=path``, ``-Xpath`` or ``NAME=path``."""
        for word in words:
            if not word.literal or word.stream:
                continue
            value = word.value
            if value.startswith("--") or ASSIGNMENT.match(value):
                value = value.partition("=")[2]
            elif value.startswith("-") and len(value) > 2 and value[1].isalpha():
                value = value[2:]
            elif value.startswith("-"):
                continue
            if not ("/" in value or value == ".." or word.glob) or "://" in value or is_stream(value):
                continue
            candidate = replace(word, value=value)
            path = self.quiet_locate(replace(candidate, glob=False))
            if path is not None:
                found = [path, *self.matches(candidate, call)] if candidate.glob else [path]
                call.facts.paths.extend(self.display(p) for p in found)

    def is_dir(self, word: Word) -> bool:
        path = self.quiet_locate(word)
        return path is not None and path.is_dir()

    def in_workspace(self, word: Word) -> bool:
        path = self.quiet_locate(word)
        return path is not None and self.ws.contains(path)

    def is_tainted(self, word: Word) -> bool:
        return self.quiet_locate(word) in self.tainted

    # ---- helpers for handlers: network -----------------------------------------------------------

    def url(self, word: Word, call: Call, default_scheme: str | None = "http") -> None:
        """A URL argument: the host it contacts, or the file a file:// URL reads."""
        if not word.literal:
            self.opaque(f"{call.name}: URL {short(word.raw)} is not literal ({word.why})")
            return
        value = word.value
        if default_scheme and "://" not in value and not value.lower().startswith("file:"):
            value = f"{default_scheme}://{value}"
        found = network.describe_url(value, self.ws, via=call.name)
        self.reads.extend(found.reads)
        call.facts.reads.extend(found.reads)
        self.network.extend(found.network)
        self.opaques.extend(found.opaque)

    def remote(self, word: Word, call: Call) -> bool:
        """``[user@]host:path`` or a URL names the remote side: record its host. False for a local path."""
        if not word.literal:
            return False
        value = word.value
        if "://" in value:
            self.url(word, call, default_scheme=None)
            return True
        if value.startswith(("/", "./", "../", "~")) or ":" not in value:
            return False
        host = value.split(":", 1)[0].rpartition("@")[2]
        if "/" in host or not host:
            return False
        self.host(host.strip("[]"), call.name)
        return True

    def host_word(self, word: Word, call: Call) -> None:
        """A bare host argument (``ssh user@host``, ``nc host``)."""
        if not word.literal:
            self.opaque(f"{call.name}: host {short(word.raw)} is not literal ({word.why})")
        elif "://" in word.value:
            self.url(word, call, default_scheme=None)
        else:
            self.host(word.value.rpartition("@")[2].strip("[]"), call.name)

    def host(self, host: str, via: str) -> None:
        host = host.lower().rstrip(".")
        why = network.check_host(host)
        if why:
            self.opaque(f"{via}: host {short(host)}: {why}")
        if not why or not host.isascii():  # an IDN host is still a fact, next to the doubt
            self.network.append(NetworkEffect(host=host, via=via))

    def reach(self, host: str, via: str) -> None:
        """A fixed host a program is known to contact (a registry, a mirror, a named git remote)."""
        self.network.append(NetworkEffect(host=host, via=via))

    def listen(self, where: str, call: Call) -> None:
        """The command serves on the network (``nc -l 8080``, ``python -m http.server``)."""
        self.reach(f"listen:{where}", call.name)

    # ---- helpers for handlers: what else runs ----------------------------------------------------

    def inner(self, words: list[Word], call: Call, cwd: Word | None = None) -> None:
        """Describe the command a wrapper runs; it is listed again, with via "wrapper:<name>"."""
        words, env = self._skip_env(words, call)
        if not words:
            return
        sudo = call.ctx.sudo or call.name in PRIVILEGED
        inner_ctx = replace(call.ctx, via=f"wrapper:{call.name}", depth=call.ctx.depth + 1, sudo=sudo)
        with self.chdir(cwd, call):
            self._run(words, [], inner_ctx, env=env)

    def _skip_env(self, words: list[Word], call: Call) -> tuple[list[Word], dict[str, str]]:
        """Leading NAME=value words (env, sudo) are assignments, not the command."""
        env: dict[str, str] = {}
        i = 0
        while i < len(words) and ASSIGNMENT.match(words[i].value):
            name, _, value = words[i].value.partition("=")
            self.check_env(name, replace(words[i], value=value), prefix_of=call.name)
            env[name] = value
            i += 1
        return words[i:], env

    @contextmanager
    def chdir(self, word: Word | None, call: Call) -> Iterator[None]:
        """Run a wrapped command in another directory (git -C, env -C, sudo -D), then come back."""
        saved = self.cwd
        if word is not None:
            self.cwd = self.locate(word, call.name)
        try:
            yield
        finally:
            self.cwd = saved

    def run_text(self, word: Word, call: Call, via: str | None = None) -> None:
        """Re-parse a literal command string (bash -c, eval, su -c); text built at run time is opaque."""
        if not word.literal:
            what = "downloaded/decoded content executed" if word.tainted else "non-literal command text"
            self.opaque(f"{what}: {call.name} runs {short(word.raw)} ({word.why})")
            return
        sudo = call.ctx.sudo or call.name in PRIVILEGED
        inner = replace(call.ctx, via=via or f"wrapper:{call.name}", depth=call.ctx.depth + 1, nest=0, sudo=sudo)
        saved = self.cwd  # a child shell's cd does not move us
        self.describe(word.value, inner)
        self.cwd = saved

    def script(self, word: Word, call: Call) -> None:
        """An interpreter runs a script file: a read of that file, unless we cannot tell which file."""
        if not word.literal:
            what = "downloaded/decoded content executed" if word.tainted else "script path is not literal"
            self.opaque(f"{what}: {call.name} runs {short(word.raw)} ({word.why})")
        elif word.value in ("-", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"):
            self.program_from_stdin(call)
        else:
            if self.is_tainted(word):
                self.opaque(f"downloaded/decoded content executed: {call.name} runs {short(word.value)}")
            self.read(word, call)

    def inline_code(self, word: Word | None, call: Call) -> None:
        """``python -c CODE``: literal code is recorded (``inline_code``); code built at run time is opaque."""
        if word is None:
            self.opaque(f"{call.name}: inline code option without code")
        elif not word.literal:
            what = "downloaded/decoded content executed" if word.tainted else "inline code is not literal"
            self.opaque(f"{what}: {call.name} runs {short(word.raw)} ({word.why})")
        else:
            call.facts.inline_code.append(word.value)

    def program_from_stdin(self, call: Call) -> None:
        """An interpreter reading its program from stdin: a heredoc's text is its program (a shell's is
        parsed again, another interpreter's recorded as inline code); a pipe's is unknown (opaque)."""
        ctx = call.ctx
        source = _STDIN_NAMES.get(ctx.stdin, ctx.stdin)
        if ctx.stdin_tainted:
            self.opaque(f"downloaded/decoded content executed: {call.name} reads its program from {source}")
        elif ctx.stdin in ("pipe", "socket", "dup"):
            self.opaque(f"{call.name} reads its program from {source} whose content is not known")
        elif ctx.stdin in ("heredoc", "herestring"):
            if ctx.stdin_text is None:
                self.opaque(f"{call.name} reads its program from {source} with expansions")
            elif call.name in SHELLS:
                self.run_text(Word.of(ctx.stdin_text), call, via="heredoc")
            else:
                call.facts.inline_code.append(ctx.stdin_text)

    def package(self, manager: str, packages: list[str], local: bool, call: Call) -> None:
        """A package install or removal; anything under sudo is global whatever the manager."""
        scope = "local" if local and not call.ctx.sudo else "global"
        self.packages.append(PackageEffect(manager=manager, names=packages, scope=scope))


_STDIN_NAMES = {
    "pipe": "a pipe",
    "socket": "a network socket",
    "dup": "a duplicated file descriptor",
    "heredoc": "a heredoc",
    "herestring": "a here-string",
    "file": "a file",
}

_STATEMENTS: dict[str, Callable[[Describer, Node, Ctx, list[Redir]], None]] = {
    "program": Describer._block,
    "list": Describer._list,
    "pipeline": Describer._pipeline,
    "command": Describer._command,
    "redirected_statement": Describer._redirected,
    "file_redirect": Describer._redirected,
    "heredoc_redirect": Describer._redirected,
    "herestring_redirect": Describer._redirected,
    "subshell": Describer._subshell,
    "compound_statement": Describer._group,
    "if_statement": Describer._conditional,
    "while_statement": Describer._conditional,
    "for_statement": Describer._conditional,
    "c_style_for_statement": Describer._conditional,
    "case_statement": Describer._conditional,
    "elif_clause": Describer._block,
    "else_clause": Describer._block,
    "case_item": Describer._block,
    "do_group": Describer._block,
    "negated_command": Describer._block,
    "function_definition": Describer._function,
    "variable_assignment": Describer._assignments,
    "variable_assignments": Describer._assignments,
    "declaration_command": Describer._declaration,
    "unset_command": Describer._unset,
    "test_command": Describer._scan_only,
    "ERROR": Describer._block,  # already opaque; walk what the parser did recognise, for more facts
}


# --------------------------------------------------------------------------------------------------
# Small helpers
# --------------------------------------------------------------------------------------------------


def separator_runs(source: str) -> int:
    """About how many command separators (`|`, `;`, `&`, newline) a string holds outside quotes,
    comments and heredoc bodies; a run of them counts once. Linear, and only an estimate: it decides
    whether the string is worth parsing, never what it means."""
    count = 0
    i = 0
    n = len(source)
    in_run = False
    heredocs: list[str] = []
    while i < n:
        ch = source[i]
        if ch == "\\":
            i += 2
            in_run = False
        elif ch in "'\"":
            i = _closing_quote(source, i + 1, ch)
            in_run = False
        elif ch == "#" and (i == 0 or source[i - 1] in " \t\n;&|()"):
            end = source.find("\n", i)
            i = n if end < 0 else end
        elif ch == "<" and source.startswith("<<", i) and not source.startswith("<<<", i):
            match = _HEREDOC_START.match(source, i)
            if match:
                heredocs.append(match.group(2))
                i = match.end()
            else:
                i += 2
        else:
            if ch in "|;&\n":
                count += 0 if in_run else 1
                in_run = True
            elif ch not in " \t":
                in_run = False
            i += 1
            if ch == "\n" and heredocs:
                for delimiter in heredocs:  # the bodies follow this line, each up to its delimiter line
                    while i < n:
                        end = source.find("\n", i)
                        end = n if end < 0 else end
                        line, i = source[i:end], end + 1
                        if line.lstrip("\t") == delimiter:
                            break
                heredocs = []
    return count


_HEREDOC_START = re.compile(r"<<-?[ \t]*(['\"]?)([A-Za-z0-9_.-]+)\1")


def _closing_quote(source: str, i: int, quote: str) -> int:
    while i < len(source):
        if source[i] == "\\" and quote == '"':
            i += 2
        elif source[i] == quote:
            return i + 1
        else:
            i += 1
    return i


def _subscript_with_subst(value: str) -> bool:
    return "[" in value and has_unparsed_subst(value)


def _harmless_trace(name: str, value: Word) -> bool:
    """GIT_TRACE=1 prints to stderr; GIT_TRACE=/path writes a file."""
    return name.startswith("GIT_TRACE") and value.literal and value.value in _GIT_TRACE_VALUES


def is_stream(value: str) -> bool:
    """``-``, /dev/null, /dev/std*, /dev/tty, /dev/zero and /dev/fd/N, /proc/self/fd/N exactly."""
    return value in _STREAMS or _STREAM_FD.match(value) is not None


def program_name(value: str) -> str:
    """The program a command word runs, normalised: ``/usr/bin/python3.11`` -> ``python``, ``nodejs`` -> ``node``."""
    base = value.rstrip("/").rsplit("/", 1)[-1]
    match = _VERSIONED.match(base)
    if match:
        return {"pypy": "python", "nodejs": "node", "luajit": "lua"}.get(match.group(1), match.group(1))
    return base


def fetches(argv: list[str]) -> bool:
    """Does this command print downloaded or decoded bytes (which must not reach an interpreter)?"""
    if not argv:
        return False
    name = program_name(argv[0])
    args = argv[1:]
    flags = [a for a in args if a.startswith("-") and not a.startswith("--")]
    if name in _FETCHERS or name in _DECODERS:
        return True
    if name in ("base64", "base32", "basenc", "base58"):
        return "--decode" in args or any("d" in a or "D" in a for a in flags)
    if name == "xxd":
        return "-revert" in args or any(a.startswith("-r") for a in flags)
    if name in ("gzip", "bzip2", "xz", "zstd", "lz4"):
        return "--decompress" in args or any("d" in a for a in flags)
    if name in ("openssl", "gpg"):
        return any(a in ("-d", "-decrypt", "--decrypt") for a in args)
    return False


def unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _flatten(node: Node, kind: str) -> list[Node]:
    """The members of a nested ``kind`` node, in order: the statements of an &&/|| list (lists nest to the
    left, ((a && b) || c)) or the commands of a pipeline (tree-sitter nests ``a | b | c``, and heredoc
    tails). A long chain is deep, so this does not recurse."""
    members: list[Node] = []
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type == kind:
            stack.extend(reversed([c for c in current.children if c.is_named and c.type != "comment"]))
        else:
            members.append(current)
    return members


def _with_stdin(ctx: Ctx, redirs: list[Redir]) -> Ctx:
    """The command's stdin after its redirections (the last one wins, as in bash)."""
    for r in redirs:
        fd = r.redirect.fd
        if r.kind == "socket":
            ctx = replace(ctx, stdin="socket", stdin_text=None, stdin_tainted=True)
        elif r.kind in _INPUT_KINDS and fd in (None, 0):
            ctx = replace(ctx, stdin="file" if r.kind == "in" else r.kind, stdin_text=r.text, stdin_tainted=r.tainted)
        elif r.kind == "dup" and fd == 0:
            ctx = replace(ctx, stdin="dup", stdin_text=None)
    return ctx


def _gaps(node: Node) -> str:
    """The text of ``node`` outside its named children: what the parser left as plain text."""
    source = node.text or b""
    base = node.start_byte
    pieces: list[bytes] = []
    pos = 0
    for child in node.named_children:
        pieces.append(source[pos : child.start_byte - base])
        pos = child.end_byte - base
    pieces.append(source[pos:])
    return b"".join(pieces).decode("utf-8", errors="replace")


def _error_snippet(root: Node) -> str:
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "ERROR" or node.is_missing:
            return text(node) or text(node.parent or root)[:60] or "end of input"
        stack.extend(reversed(node.children))
    return text(root)[:60]
