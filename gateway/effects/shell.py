"""Shell command strings become Effects: the simple commands they run and what those commands touch.

tree-sitter-bash parses the string; this module walks the tree, does its own quote removal, unwraps
wrappers (sudo, env, xargs, find -exec, bash -c, eval, ...) and states plain facts for the programs it
knows. Whatever it cannot follow goes into ``opaque`` with a reason, so the policy fails closed.

    ws = Workspace(Path("/repo"))
    fx = describe_command("cd src && rm -rf build; curl -s https://x.io/i.sh | sh", ws, cwd=Path("/repo"))
    [c.argv[0] for c in fx.commands]  # ["cd", "rm", "curl", "sh"]
    fx.recursive_deletes            # ["src/build"]
    fx.network                      # [NetworkEffect(host="x.io", via="curl")]
    fx.opaque                       # ["downloaded/decoded content executed: sh reads its program from a pipe"]

Layout: the word model and quote removal; the tree walk (statements, redirects, substitutions); the
helpers handlers use to state facts (paths, hosts, packages); one handler per known program; and the
dispatch table ``HANDLERS`` that maps a program name to its handler.
"""

from __future__ import annotations

import os
import re
import shlex
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from itertools import pairwise
from pathlib import Path

import tree_sitter_bash
from tree_sitter import Language, Node, Parser

from gateway.effects import network
from gateway.effects.paths import Workspace, suspicious_unicode
from gateway.errors import InvalidArguments
from gateway.types import CommandEffect, Effects, NetworkEffect, PackageEffect, Redirect

MAX_COMMAND_BYTES = 16 * 1024
MAX_NESTING = 16  # substitutions, wrappers and re-parsed strings inside one another
MAX_STRUCTURE = 64  # nested groups, subshells, loops and conditionals (bounds the recursion)

# One parser for the process: creating one costs more than a parse. A tree-sitter parser must not be
# used by two threads at once, and the gateway may describe calls from worker threads, hence the lock.
_PARSER = Parser(Language(tree_sitter_bash.language()))
_PARSE_LOCK = threading.Lock()


def _names(text: str) -> frozenset[str]:
    """A set of names written as one space-separated string (keeps the long tables compact)."""
    return frozenset(text.split())


_CONTROL = re.compile(r"[\x01-\x08\x0b-\x1f\x7f-\x9f]")
_INVISIBLE = re.compile("[\u200b-\u200d\u2060\ufeff\u00ad\u202a-\u202e\u2066-\u2069]")
# "r\<newline>m" is one word for bash but two for tree-sitter: refuse rather than mis-read it.
_MIDWORD_CONTINUATION = re.compile(r"[^\s\\;&|(){}<>]\\\n[^\s;&|(){}<>]")
_BRACE = re.compile(r"\{[^{}]*(?:,|\.\.)[^{}]*\}")
_GLOB = re.compile(r"[*?]|\[[^\]]+\]")
_VERSIONED = re.compile(r"^(python|pip|pypy|perl|ruby|php|node|nodejs)(\d+(\.\d+)*)?$")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_DEV_NET = re.compile(r"^/dev/(tcp|udp)/([^/]+)/([^/]*)$")

# Targets that are streams, not files: writing to them changes nothing on disk.
_STREAMS = _names("/dev/null /dev/stdin /dev/stdout /dev/stderr /dev/tty /dev/zero -")

# Environment variables that change which program runs or what it loads, or how later words expand.
_ENV_RISKY = _names(
    "PATH LD_PRELOAD LD_LIBRARY_PATH LD_AUDIT BASH_ENV ENV IFS SHELLOPTS BASHOPTS PS4 PROMPT_COMMAND CDPATH HOME "
    "NODE_OPTIONS PYTHONSTARTUP PYTHONHOME PYTHONINSPECT PERL5OPT PERL5LIB PERLLIB RUBYOPT RUBYLIB GIT_SSH "
    "GIT_SSH_COMMAND GIT_EXEC_PATH GIT_PROXY_COMMAND GIT_ASKPASS SSH_ASKPASS SUDO_ASKPASS GIT_DIR GIT_WORK_TREE "
    "GIT_CONFIG GIT_CONFIG_GLOBAL GIT_CONFIG_SYSTEM GIT_CONFIG_PARAMETERS GIT_TEMPLATE_DIR LESSOPEN LESSCLOSE BROWSER"
)
_ENV_RISKY_PREFIXES = ("LD_", "DYLD_", "GIT_CONFIG_", "BASH_FUNC_")
# Editors and pagers name programs too; these values are known to be harmless.
_ENV_COMMAND_VARS = _names("EDITOR VISUAL PAGER GIT_EDITOR GIT_PAGER GIT_SEQUENCE_EDITOR MANPAGER")
_SAFE_COMMAND_VALUES = frozenset({"true", ":", "cat", "less", "more", "vi", "vim", "nano", ""})

_RESERVED = _names("then else elif fi do done esac in } { function select")
_PRIVILEGED = _names("sudo su doas pkexec run0 sudoedit")
_SHELLS = _names("sh bash zsh dash ksh ash mksh fish rbash")
# Programs whose output is downloaded (or remote) bytes, and decoders whose output hides what it is.
_FETCHERS = _names(
    "curl wget fetch nc ncat netcat socat telnet http https xh xhs aria2c lynx w3m links ftp tftp lftp ssh"
)
_DECODERS = _names("gunzip zcat bunzip2 bzcat unxz xzcat unzstd zstdcat uudecode")
# Programs that run another command this module does not unwrap: say so instead of pretending to know.
_OPAQUE_RUNNERS = _names(
    "at batch crontab systemd-run parallel script runuser chroot unshare nsenter flatpak-spawn firejail bwrap "
    "strace ltrace gdb valgrind expect coproc fc enable flock unbuffer faketime proot"
)

Handler = Callable[["_Describer", "_Call"], None]


# --------------------------------------------------------------------------------------------------
# Words: quote removal is done here, so "r''m", "\rm" and $'\x72m' all come out as "rm"
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Word:
    """One shell word after quote removal.

    ``literal`` is False when the value depends on the run (expansions, substitutions, brace expansion);
    then ``value`` is a best-effort rendering and ``why`` says what is unknown. ``glob`` marks unquoted
    ``*``, ``?`` or ``[..]``: the word may name many files. ``tainted`` marks a word whose substitutions
    print downloaded or decoded bytes. ``stream`` marks ``<(..)``/``>(..)``: a pipe whose commands are
    described on their own, so it is no file to read or write (but still no literal program text).
    """

    value: str
    raw: str
    literal: bool = True
    glob: bool = False
    why: str = ""
    tainted: bool = False
    stream: bool = False  # the whole word is a process substitution: a pipe, not a file

    @staticmethod
    def of(value: str) -> Word:
        return Word(value=value, raw=value)

    def tail(self, start: int) -> Word:
        """The rest of this word from ``start`` (an attached option value such as ``-ofile``)."""
        return replace(self, value=self.value[start:])


def _text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", errors="replace")


def _short(text: str, limit: int = 60) -> str:
    text = text.replace("\n", "\\n")
    return repr(text if len(text) <= limit else text[:limit] + "...")


def _has_unparsed_subst(text: str) -> bool:
    """An unescaped backquote or ``$(`` inside text the parser called plain."""
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "`" or (ch == "$" and text[i + 1 : i + 2] == "("):
            return True
        i += 1
    return False


def _unquote_bare(text: str) -> tuple[list[tuple[str, bool]], str]:
    """Backslash removal in an unquoted word: pieces as (text, quoted), and why it is not literal ("")."""
    pieces: list[tuple[str, bool]] = []
    buf: list[str] = []
    why = ""
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            if buf:
                pieces.append(("".join(buf), False))
                buf = []
            if text[i + 1] != "\n":  # backslash-newline is a line continuation: it disappears
                pieces.append((text[i + 1], True))
            i += 2
            continue
        if ch == "`" or (ch == "$" and i + 1 < len(text) and (text[i + 1].isalnum() or text[i + 1] in "_{(@*#?$!-")):
            why = f"expansion the parser did not separate in {_short(text)}"
        buf.append(ch)
        i += 1
    if buf:
        pieces.append(("".join(buf), False))
    return pieces, why


def _dq_unescape(text: str) -> str:
    """Inside double quotes a backslash only escapes $ ` " \\ and newline."""
    return re.sub(r'\\([$`"\\\n])', lambda m: "" if m.group(1) == "\n" else m.group(1), text)


def _heredoc_unescape(text: str) -> str:
    """In an unquoted heredoc a backslash escapes $ ` \\ and newline (not ")."""
    return re.sub(r"\\([$`\\\n])", lambda m: "" if m.group(1) == "\n" else m.group(1), text)


_ANSI_SIMPLE = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_ANSI_SIMPLE |= {"v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}
_ANSI_WIDTH = {"x": 2, "u": 4, "U": 8}


def _ansi_c(body: str) -> str:
    """Decode the escapes of a ``$'...'`` string as bash does."""
    out: list[str] = []
    i = 0
    while i < len(body):
        ch = body[i]
        nxt = body[i + 1] if i + 1 < len(body) else ""
        if ch != "\\" or not nxt:
            out.append(ch)
            i += 1
        elif nxt in _ANSI_SIMPLE:
            out.append(_ANSI_SIMPLE[nxt])
            i += 2
        elif nxt in "01234567":
            digits = re.match(r"[0-7]{1,3}", body[i + 1 :])
            assert digits is not None
            out.append(chr(int(digits.group(), 8) & 0xFF))
            i += 1 + len(digits.group())
        elif nxt in _ANSI_WIDTH:
            digits = re.match(rf"[0-9A-Fa-f]{{1,{_ANSI_WIDTH[nxt]}}}", body[i + 2 :])
            code = int(digits.group(), 16) if digits else -1
            out.append("\\" + nxt if code < 0 else chr(code) if code < 0x110000 else "\ufffd")
            i += 2 + (len(digits.group()) if digits else 0)
        elif nxt == "c" and i + 2 < len(body):
            out.append(chr(ord(body[i + 2]) & 0x1F))
            i += 3
        else:
            out.append("\\" + nxt)
            i += 2
    return "".join(out)


# --------------------------------------------------------------------------------------------------
# The walk
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Ctx:
    """Where a statement runs: how it was reached, how deep, and where its standard input comes from."""

    via: str = "direct"
    depth: int = 0  # substitutions, wrappers and re-parses
    nest: int = 0  # structural nesting
    stdin: str = "inherit"  # inherit | pipe | file | heredoc | herestring | socket | dup
    stdin_text: str | None = None  # literal heredoc or herestring text
    stdin_tainted: bool = False  # stdin carries downloaded or decoded bytes
    sudo: bool = False  # runs with elevated privileges


@dataclass(frozen=True)
class _Redir:
    redirect: Redirect
    kind: str  # in | out | dup | heredoc | herestring | socket
    path: Path | None = None
    text: str | None = None
    tainted: bool = False


@dataclass
class _Call:
    """One simple command, as a handler sees it."""

    name: str  # normalised program name: "rm", "python", "pip"
    words: list[Word]
    ctx: _Ctx
    redirects: list[_Redir] = field(default_factory=list)

    @property
    def args(self) -> list[Word]:
        return self.words[1:]

    @property
    def taints(self) -> bool:
        """Does this command print or write downloaded or decoded bytes?"""
        return self.ctx.stdin_tainted or _fetches([w.value for w in self.words])


@dataclass
class _Opts:
    flags: list[tuple[str, Word | None]] = field(default_factory=list)
    operands: list[Word] = field(default_factory=list)

    def has(self, *names: str) -> bool:
        return any(name in names for name, _ in self.flags)

    def values(self, *names: str) -> list[Word]:
        return [value for name, value in self.flags if name in names and value is not None]

    def last(self, *names: str) -> Word | None:
        found = self.values(*names)
        return found[-1] if found else None


_STATEMENT_TYPES = _names(
    "program list pipeline command redirected_statement subshell compound_statement if_statement elif_clause "
    "else_clause while_statement for_statement c_style_for_statement case_statement case_item do_group "
    "negated_command function_definition variable_assignment variable_assignments declaration_command "
    "unset_command test_command comment file_redirect heredoc_redirect herestring_redirect ERROR"
)
# Node types that are values, not statements: only the substitutions inside them can run anything.
_VALUE_TYPES = _names(
    "word number string raw_string ansi_c_string translated_string concatenation simple_expansion expansion "
    "arithmetic_expansion command_substitution process_substitution brace_expression extglob_pattern regex "
    "variable_name special_variable_name binary_expression unary_expression postfix_expression "
    "parenthesized_expression ternary_expression test_operator array subscript"
)
_REDIRECT_TYPES = _names("file_redirect heredoc_redirect herestring_redirect")
_LEAF_TEXT_TYPES = _names("word string_content extglob_pattern regex")
_INPUT_KINDS = _names("in heredoc herestring")


class _Describer:
    """Accumulates the facts of one command string (and of the strings re-parsed from it)."""

    def __init__(self, workspace: Workspace, cwd: Path) -> None:
        self.ws = workspace
        self.cwd: Path | None = cwd  # None once a cd could not be followed
        self.home = os.environ.get("HOME", "/root")
        self.reads: list[str] = []
        self.writes: list[str] = []
        self.creates: list[str] = []
        self.deletes: list[str] = []
        self.recursive_deletes: list[str] = []
        self.commands: list[CommandEffect] = []
        self.emits_tainted: list[bool] = []  # per command: does it print downloaded or decoded bytes?
        self.network: list[NetworkEffect] = []
        self.packages: list[PackageEffect] = []
        self.opaques: list[str] = []
        self.privileged = False
        self.tainted: set[Path] = set()  # files that hold downloaded or decoded bytes
        self.made_dirs: set[Path] = set()  # directories made here, so a later cd into them can be followed

    # ---- results ---------------------------------------------------------------------------------

    def effects(self) -> Effects:
        writes = _unique(self.writes)
        return Effects(
            reads=_unique(self.reads),
            writes=writes,
            creates=_unique(c for c in self.creates if c not in writes),
            deletes=_unique(self.deletes),
            recursive_deletes=_unique(self.recursive_deletes),
            commands=self.commands,
            network=list({(n.host, n.via): n for n in self.network}.values()),
            privileged=self.privileged,
            packages=list({repr(p): p for p in self.packages}.values()),
            opaque=_unique(self.opaques),
        )

    def opaque(self, reason: str) -> None:
        self.opaques.append(reason)

    def _record(self, argv: list[str], redirs: list[_Redir], via: str, tainted: bool = False) -> None:
        self.commands.append(CommandEffect(argv=argv, redirects=[r.redirect for r in redirs], via=via))
        self.emits_tainted.append(tainted)

    def _tainted_since(self, start: int) -> bool:
        return any(self.emits_tainted[start:])

    # ---- entry -----------------------------------------------------------------------------------

    def describe(self, text: str, ctx: _Ctx) -> None:
        """Parse ``text`` and walk it; the checks before parsing refuse what the parser could mis-read."""
        if ctx.depth > MAX_NESTING:
            self.opaque(f"nesting deeper than {MAX_NESTING} levels of substitutions or wrappers")
            return
        if "\x00" in text:
            self.opaque("command contains a NUL byte")
            return
        try:
            source = text.encode("utf-8")
        except UnicodeEncodeError:
            self.opaque("command is not valid UTF-8 text")
            return
        if len(source) > MAX_COMMAND_BYTES:
            self.opaque(f"command is longer than 16 KiB ({len(source)} bytes)")
            return
        if _CONTROL.search(text):
            self.opaque("command contains control characters")
        if _INVISIBLE.search(text):
            self.opaque("command contains invisible or bidirectional control characters")
        if _MIDWORD_CONTINUATION.search(text):
            self.opaque("line continuation inside a word (bash joins the word, the parser splits it)")
        with _PARSE_LOCK:
            tree = _PARSER.parse(source)
        root = tree.root_node
        if root.has_error:
            self.opaque(f"shell syntax error near {_short(_error_snippet(root))}")
        self._block(root, ctx)

    # ---- statements ------------------------------------------------------------------------------

    def _stmt(self, node: Node, ctx: _Ctx, redirs: list[_Redir]) -> None:
        kind = node.type
        if kind == "comment" or node.is_missing:  # a MISSING node is a syntax error, already opaque
            return
        if kind not in _STATEMENT_TYPES:
            if kind not in _VALUE_TYPES:
                self.opaque(f"unsupported shell construct {kind}: {_short(_text(node))}")
            self._scan(node, ctx)
            return
        _STATEMENTS[kind](self, node, ctx, redirs)

    def _block(self, node: Node, ctx: _Ctx, redirs: list[_Redir] | None = None) -> None:
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

    def _nested(self, ctx: _Ctx) -> _Ctx | None:
        if ctx.nest + 1 > MAX_STRUCTURE:
            self.opaque(f"shell structure nested deeper than {MAX_STRUCTURE} levels")
            return None
        return replace(ctx, nest=ctx.nest + 1)

    def _list(self, node: Node, ctx: _Ctx, redirs: list[_Redir]) -> None:
        # lists nest to the left ((a && b) || c): flatten without recursion, since a long chain is deep
        items: list[Node] = []
        stack = [node]
        while stack:
            current = stack.pop()
            if current.type == "list":
                stack.extend(reversed([c for c in current.children if c.is_named and c.type != "comment"]))
            else:
                items.append(current)
        for item in items:
            self._stmt(item, ctx, redirs)

    def _pipeline(self, node: Node, ctx: _Ctx, redirs: list[_Redir]) -> None:
        self._pipe([(element, []) for element in _pipeline_elements(node)], ctx, redirs)

    def _pipe(self, elements: list[tuple[Node, list[_Redir]]], ctx: _Ctx, outer: list[_Redir]) -> None:
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

    def _subshell(self, node: Node, ctx: _Ctx, redirs: list[_Redir]) -> None:
        inner = self._nested(ctx)
        if inner is None:
            return
        saved = self.cwd
        self._block(node, inner, redirs)
        self.cwd = saved

    def _group(self, node: Node, ctx: _Ctx, redirs: list[_Redir]) -> None:
        inner = self._nested(ctx)
        if inner is not None:
            self._block(node, inner, redirs)

    def _conditional(self, node: Node, ctx: _Ctx, redirs: list[_Redir]) -> None:
        """if / while / for / case / function bodies: afterwards, a cd inside may or may not have happened."""
        inner = self._nested(ctx)
        if inner is None:
            return
        before = self.cwd
        self._block(node, inner, redirs)
        if self.cwd != before:
            self.cwd = None

    def _function(self, node: Node, ctx: _Ctx, redirs: list[_Redir]) -> None:
        name_node = node.child_by_field_name("name")
        name = _text(name_node) if name_node is not None else ""
        if name in _COMMON_NAMES or name in HANDLERS:
            self.opaque(f"function definition redefines the command {name!r}")
        self._conditional(node, ctx, redirs)

    def _scan_only(self, node: Node, ctx: _Ctx, redirs: list[_Redir]) -> None:
        self._scan(node, ctx)

    def _assignments(self, node: Node, ctx: _Ctx, redirs: list[_Redir]) -> None:
        for assignment in [node] if node.type == "variable_assignment" else node.named_children:
            if assignment.type == "variable_assignment":
                self._assignment(assignment, ctx, prefix_of=None)
            else:
                self._stmt(assignment, ctx, redirs)

    def _assignment(self, node: Node, ctx: _Ctx, prefix_of: str | None) -> str:
        """``NAME=value``: scan the value, flag names that change what runs. Returns "NAME=value"."""
        children = node.children
        name_node = children[0] if children else None
        name = _text(name_node) if name_node is not None else ""
        if name_node is not None and name_node.type == "subscript":
            name = _text(name_node.child_by_field_name("name") or name_node)
        value = Word.of("")
        for value_node in [c for c in children[1:] if c.is_named]:
            value = self._word(value_node, ctx)
        self._check_env(name, value, prefix_of)
        # x='a[$(id)]'; echo $((x)) runs id: arithmetic re-evaluates the text of variables
        if value.literal and _has_unparsed_subst(value.value):
            self.opaque(f"variable {name} holds command-substitution text that arithmetic or eval could run")
        return f"{name}={value.value}"

    def _check_env(self, name: str, value: Word, prefix_of: str | None) -> None:
        where = f"for {prefix_of}" if prefix_of else "for the commands that follow"
        if name in _ENV_COMMAND_VARS:
            if not (value.literal and value.value in _SAFE_COMMAND_VALUES):
                self.opaque(f"{name}={value.value} names a program to run {where}")
        elif name in _ENV_RISKY or name.startswith(_ENV_RISKY_PREFIXES):
            self.opaque(f"{name}= changes what runs or how words expand {where}")

    def _declaration(self, node: Node, ctx: _Ctx, redirs: list[_Redir]) -> None:
        """export / declare / local / readonly / typeset: recorded as a command; assignments checked."""
        keyword = node.children[0].type if node.children else "declare"
        argv = [keyword]
        for child in node.named_children:
            if child.type == "variable_assignment":
                argv.append(self._assignment(child, ctx, prefix_of=None))
            elif child.type != "comment":
                argv.append(self._word(child, ctx).value)
        self._record(argv, redirs, ctx.via)
        if keyword in ("declare", "typeset", "local") and any(re.match(r"^-\w*n", a) for a in argv[1:]):
            self.opaque(f"{keyword} -n makes a name reference (indirect variables)")

    def _unset(self, node: Node, ctx: _Ctx, redirs: list[_Redir]) -> None:
        argv = ["unset", *(self._word(c, ctx).value for c in node.named_children if c.type != "comment")]
        self._record(argv, redirs, ctx.via)

    def _redirected(self, node: Node, ctx: _Ctx, redirs: list[_Redir]) -> None:
        """A statement with redirections, or a bare redirection (``> f`` truncates f)."""
        body: Node | None = None
        own: list[Node] = []
        for child in [node] if node.type in _REDIRECT_TYPES else node.children:
            if child.type in _REDIRECT_TYPES:
                own.append(child)
            elif child.is_named and child.type != "comment":
                if body is not None:
                    self.opaque(f"unexpected statement layout: {_short(_text(node))}")
                body = child
        pipe_tail: list[Node] = []
        list_tail: list[Node] = []
        infos = self._redirects(own, ctx, pipe_tail, list_tail)
        if body is None:
            self._record([], [*redirs, *infos], ctx.via)
        elif pipe_tail:
            # `cat <<EOF | sh`: tree-sitter hangs the rest of the pipeline under the heredoc
            elements = [(body, infos)] + [(e, []) for tail in pipe_tail for e in _pipeline_elements(tail)]
            self._pipe(elements, ctx, redirs)
        elif body.type == "pipeline":
            # `a | b 2>&1`: tree-sitter puts the redirect on the pipeline, bash on its last command
            elements = [(e, []) for e in _pipeline_elements(body)]
            elements[-1] = (elements[-1][0], infos)
            self._pipe(elements, ctx, redirs)
        else:
            self._stmt(body, ctx, [*redirs, *infos])
        for tail in list_tail:
            self._stmt(tail, ctx, redirs)

    # ---- redirects -------------------------------------------------------------------------------

    def _redirects(self, nodes: list[Node], ctx: _Ctx, pipe_tail: list[Node], list_tail: list[Node]) -> list[_Redir]:
        out: list[_Redir] = []
        carry: int | None = None  # an fd the parser attached to the previous redirection
        for node in nodes:
            if node.type == "file_redirect":
                redir, carry = self._file_redirect(node, ctx, carry)
                out.append(redir)
            else:
                carry = None
                out.extend(self._redirect(node, ctx, pipe_tail, list_tail))
        return out

    def _redirect(self, node: Node, ctx: _Ctx, pipe_tail: list[Node], list_tail: list[Node]) -> list[_Redir]:
        if node.type == "file_redirect":
            return [self._file_redirect(node, ctx, None)[0]]
        if node.type == "herestring_redirect":
            return [self._herestring(node, ctx)]
        return self._heredoc(node, ctx, pipe_tail, list_tail)

    def _file_redirect(self, node: Node, ctx: _Ctx, fd: int | None) -> tuple[_Redir, int | None]:
        """One ``[fd]op target``; returns it and an fd the parser glued onto it that belongs to the next one."""
        op = ""
        targets: list[Node] = []
        for child in node.children:
            if child.type == "file_descriptor":
                fd = int(_text(child)) if _text(child).isdigit() else None
            elif not child.is_named or child.type == "ERROR":
                op += _text(child)  # `3<>` parses as "<" plus an ERROR ">" (already opaque): keep "<>"
            else:
                targets.append(child)
        carry: int | None = None
        if len(targets) > 1 and all(t.type == "number" for t in targets[1:]):
            # `>a 0<b` parses as target "a" plus a number "0" that is the next redirection's fd
            carry = int(_text(targets[-1]))
            targets = targets[:1]
        if len(targets) != 1:
            self.opaque(f"redirection without a single target: {_short(_text(node))}")
            return _Redir(Redirect(op=op, target=_text(node), fd=fd), kind="dup"), carry
        return self._redirect_target(targets[0], op, fd, ctx), carry

    def _redirect_target(self, target: Node, op: str, fd: int | None, ctx: _Ctx) -> _Redir:
        if op in (">&", "<&") and (target.type == "number" or _text(target) == "-"):
            reads_stdin = op == "<&" or fd == 0
            return _Redir(Redirect(op=op, target=_text(target), fd=fd), kind="dup" if reads_stdin else "out")
        reading = op in ("<", "<&")
        kind = "in" if reading else "out"
        if target.type == "process_substitution":
            start = len(self.commands)
            self._subst(target, ctx, "procsubst")
            redirect = Redirect(op=op, target=_text(target), fd=fd)
            return _Redir(redirect, kind=kind, tainted=self._tainted_since(start))
        word = self._word(target, ctx)
        redirect = Redirect(op=op, target=word.value, fd=fd)
        if not word.literal:
            self.opaque(f"redirection target {_short(word.raw)} is not literal ({word.why})")
            return _Redir(redirect, kind=kind, tainted=word.tainted)
        net = _DEV_NET.match(word.value)
        if net:
            self._host(net.group(2), "bash")
            return _Redir(redirect, kind="socket", tainted=True)
        if word.value in _STREAMS or word.value.startswith(("/dev/fd/", "/proc/self/fd/")):
            return _Redir(redirect, kind=kind)
        call = _Call(name="redirect", words=[word], ctx=ctx)
        if reading:
            path = self.read(word, call)
            return _Redir(redirect, kind="in", path=path, tainted=path in self.tainted)
        path = self.write(word, call, modify=op == "<>")
        return _Redir(redirect, kind="out", path=path)

    def _herestring(self, node: Node, ctx: _Ctx) -> _Redir:
        values = [self._word(c, ctx) for c in node.named_children]
        word = values[0] if len(values) == 1 else Word(value=_text(node), raw=_text(node), literal=False)
        text = word.value + "\n" if word.literal else None
        return _Redir(Redirect(op="<<<", target=word.value), kind="herestring", text=text, tainted=word.tainted)

    def _heredoc(self, node: Node, ctx: _Ctx, pipe_tail: list[Node], list_tail: list[Node]) -> list[_Redir]:
        op, delimiter, quoted = "<<", "", False
        body: Node | None = None
        nested: list[_Redir] = []
        after_operator = False
        for child in node.children:
            kind = child.type
            if not child.is_named:
                op = kind if kind in ("<<", "<<-") else op
                after_operator = kind in ("&&", "||", ";", "&")
            elif kind == "heredoc_start":
                raw = _text(child)
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
                self.opaque(f"unsupported heredoc layout ({kind}): {_short(_text(node))}")
        text = self._heredoc_text(body, ctx, quoted, strip_tabs=op == "<<-")
        return [_Redir(Redirect(op=op, target=delimiter), kind="heredoc", text=text), *nested]

    def _heredoc_text(self, body: Node | None, ctx: _Ctx, quoted: bool, strip_tabs: bool) -> str | None:
        """The literal text a heredoc feeds, or None when the shell expands something in it."""
        if body is None:
            return ""
        text = _text(body)
        if not quoted:
            # an unquoted body is expanded: its $(..) run when the heredoc is read
            self._scan(body, ctx, heredoc=True)
            if _has_unparsed_subst(_gaps(body)):
                self.opaque("heredoc body has a command substitution the parser did not separate")
            if any(c.type != "heredoc_content" for c in body.named_children) or "$" in text.replace("\\$", ""):
                return None
            text = _heredoc_unescape(text)
        if strip_tabs:
            text = "\n".join(line.lstrip("\t") for line in text.split("\n"))
        return text

    # ---- substitutions and words -----------------------------------------------------------------

    def _scan(self, node: Node, ctx: _Ctx, heredoc: bool = False) -> None:
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
            elif kind in _LEAF_TEXT_TYPES and _has_unparsed_subst(_text(current)):
                self.opaque(f"command substitution the parser did not separate: {_short(_text(current))}")
            if current.child_count:
                stack.extend(reversed(current.children))

    def _check_expansion(self, node: Node) -> None:
        text = _text(node)
        if any(c.type == "variable_name" and _text(c) == "IFS" for c in node.children):
            self.opaque(f"$IFS expansion changes how words split: {_short(text)}")
        if text.endswith("@P}"):
            self.opaque(f"prompt expansion can run commands: {_short(text)}")

    def _subst(self, node: Node, ctx: _Ctx, via: str) -> None:
        if ctx.depth + 1 > MAX_NESTING:
            self.opaque(f"nesting deeper than {MAX_NESTING} levels of substitutions or wrappers")
            return
        inner = replace(ctx, via=via, depth=ctx.depth + 1, nest=ctx.nest + 1)
        if _text(node).startswith(">("):
            # >(cmd) reads what the outer command writes: data we cannot see
            inner = replace(inner, stdin="pipe", stdin_text=None)
        saved = self.cwd
        self._block(node, inner)
        self.cwd = saved

    def _word(self, node: Node, ctx: _Ctx) -> Word:
        """Quote removal for one word; substitutions inside it are walked first (they run first)."""
        start = len(self.commands)
        self._scan(node, ctx)
        pieces: list[tuple[str, bool]] = []
        whys: list[str] = []
        self._pieces(node, pieces, whys)
        word = self._make_word(_text(node), pieces, whys, self._tainted_since(start))
        return replace(word, stream=node.type == "process_substitution")

    def _pieces(self, node: Node, out: list[tuple[str, bool]], whys: list[str]) -> None:
        kind = node.type
        text = _text(node)
        if kind in ("word", "extglob_pattern"):
            pieces, why = _unquote_bare(text)
            out.extend(pieces)
            whys.extend([why] if why else [])
        elif kind == "number":
            out.append((text, False))
        elif kind == "raw_string":
            out.append((text[1:-1], True))
        elif kind == "ansi_c_string":
            out.append((_ansi_c(text[2:-1]), True))
        elif kind == "string":
            self._dq_pieces(node, out, whys)
        elif kind in ("translated_string", "concatenation", "command_name"):
            end: int | None = None
            for child in node.children:
                if end is not None and child.start_byte != end:
                    whys.append(f"unexpected gap in word {_short(text)}")
                end = child.end_byte
                if child.is_named:
                    self._pieces(child, out, whys)
                elif kind != "translated_string":
                    out.append((_text(child), False))
                    whys.append(f"unsupported syntax {_short(_text(child))}")
        elif kind in ("simple_expansion", "expansion"):
            known = self._known_variable(node)
            out.append((text if known is None else known, known is not None))
            whys.extend([f"variable expansion {_short(text)}"] if known is None else [])
        else:
            out.append((text, False))
            whys.append(f"{kind.replace('_', ' ')} {_short(text)}")

    def _dq_pieces(self, node: Node, out: list[tuple[str, bool]], whys: list[str]) -> None:
        """A "..." string, rebuilt from the source: tree-sitter leaves some text (newlines) between children."""
        source = node.text or b""
        base = node.start_byte
        pos = 1
        literal: list[str] = []

        def flush() -> None:
            if literal:
                out.append((_dq_unescape("".join(literal)), True))
                literal.clear()

        for child in node.named_children:
            begin, end = child.start_byte - base, child.end_byte - base
            if begin > pos:
                literal.append(source[pos:begin].decode("utf-8", errors="replace"))
            if child.type == "string_content":
                literal.append(_text(child))
            else:
                flush()
                known = self._known_variable(child) if child.type in ("simple_expansion", "expansion") else None
                out.append((_text(child) if known is None else known, True))
                if known is None:
                    whys.append(f"{child.type.replace('_', ' ')} {_short(_text(child))}")
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
        name = _text(node.named_children[0])
        if name == "HOME":
            return self.home
        if name == "PWD" and self.cwd is not None:
            return str(self.cwd)
        return None

    def _make_word(self, raw: str, pieces: list[tuple[str, bool]], whys: list[str], tainted: bool) -> Word:
        value = "".join(text for text, _ in pieces)
        bare = "".join(text if not quoted else "\x00" * len(text) for text, quoted in pieces)
        if _BRACE.search(bare):
            whys.append(f"brace expansion in {_short(raw)}")
        if pieces and not pieces[0][1] and pieces[0][0].startswith("~"):
            expanded = self._tilde(pieces[0][0])
            if expanded is None:
                whys.append(f"tilde expansion {_short(pieces[0][0])}")
            else:
                value = expanded + value[len(pieces[0][0]) :]
        glob = bool(_GLOB.search(bare))
        return Word(value=value, raw=raw, literal=not whys, glob=glob, why="; ".join(whys), tainted=tainted)

    def _tilde(self, first: str) -> str | None:
        prefix, slash, rest = first.partition("/")
        if prefix == "~":
            return self.home + slash + rest
        if prefix[1:2] in ("+", "-"):
            return None
        expanded = os.path.expanduser(prefix)
        return None if expanded == prefix else expanded + slash + rest

    # ---- simple commands -------------------------------------------------------------------------

    def _command(self, node: Node, ctx: _Ctx, redirs: list[_Redir]) -> None:
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
        head = self._word(name_node, ctx) if name_node is not None else None
        for assignment in assignments:
            self._assignment(assignment, ctx, prefix_of=head.value if head else None)
        words = [head] if head is not None else []
        for child in rest:
            if child.is_named:
                words.append(self._word(child, ctx))
            else:
                self.opaque(f"unsupported syntax {_short(_text(child))} in {_short(_text(node))}")
                words.append(Word(value=_text(child), raw=_text(child), literal=False, why="unsupported syntax"))
        pipe_tail: list[Node] = []
        list_tail: list[Node] = []
        infos = self._redirects(own, ctx, pipe_tail, list_tail)
        self._run(words, [*redirs, *infos], ctx)
        for tail in pipe_tail + list_tail:
            self.opaque(f"unsupported heredoc layout: {_short(_text(node))}")
            self._stmt(tail, replace(ctx, stdin="pipe", stdin_tainted=True), [])

    def _run(self, words: list[Word], redirs: list[_Redir], ctx: _Ctx) -> None:
        """Record one simple command, then describe it if its program is known."""
        if ctx.depth > MAX_NESTING:
            self.opaque(f"nesting deeper than {MAX_NESTING} levels of substitutions or wrappers")
            return
        ctx = _with_stdin(ctx, redirs)
        head = words[0] if words else None
        name = _program(head.value) if head is not None and head.literal else ""
        call = _Call(name=name, words=words, ctx=ctx, redirects=redirs)
        self._record([w.value for w in words], redirs, ctx.via, tainted=call.taints)
        for word in words:
            why = suspicious_unicode(word.value)
            if why:
                self.opaque(f"word {_short(word.value)} contains {why}")
        if head is None:
            return
        if not head.literal:
            what = "downloaded/decoded content executed" if head.tainted else "dynamic command name"
            self.opaque(f"{what}: {_short(head.raw)} ({head.why})")
            return
        self.privileged = self.privileged or name in _PRIVILEGED
        if name in _RESERVED:
            self.opaque(f"reserved word {name!r} used as a command")
        elif "/" in head.value and self._is_tainted(head):
            self.opaque(f"downloaded/decoded content executed: {_short(head.value)}")
        handler = HANDLERS.get(name)
        if handler is not None:
            handler(self, call)
        elif name in _OPAQUE_RUNNERS:
            self.opaque(f"{name} runs commands this gateway does not unwrap")
        if call.taints:
            self.tainted.update(r.path for r in redirs if r.kind == "out" and r.path is not None)

    # ---- helpers for handlers --------------------------------------------------------------------

    def options(
        self,
        call: _Call,
        short: str = "",
        long: str = "",
        known: str = "",
        optional: str = "",
        stop: bool = False,
        args: list[Word] | None = None,
    ) -> _Opts:
        """getopt-style parsing. ``short`` letters and ``long`` names (space-separated) take a value,
        ``optional`` letters take an attached one; ``known`` lists long flags (for abbreviations, which GNU
        getopt accepts). ``stop`` ends options at the first operand (wrappers). A non-literal word that
        looks like an option is opaque: it could be any option."""
        args = call.args if args is None else args
        with_value = _names(long)
        names = with_value | _names(known)
        opts = _Opts()
        i = 0
        while i < len(args):
            word = args[i]
            value = word.value
            if value == "--" and word.literal:
                opts.operands.extend(args[i + 1 :])
                break
            if not value.startswith("-") or value == "-":
                if stop:
                    opts.operands.extend(args[i:])
                    break
                opts.operands.append(word)
                i += 1
            elif not word.literal:
                self.opaque(f"{call.name}: option {_short(word.raw)} is not literal ({word.why})")
                i += 1
            elif value.startswith("--"):
                name, eq, _ = value.partition("=")
                canonical = _canonical(name, names)
                if eq:
                    opts.flags.append((canonical, word.tail(len(name) + 1)))
                elif canonical in with_value:
                    opts.flags.append((canonical, args[i + 1] if i + 1 < len(args) else None))
                    i += 1
                else:
                    opts.flags.append((canonical, None))
                i += 1
            else:
                i += _short_cluster(word, args, i, short, optional, opts)
        return opts

    def locate(self, word: Word, what: str) -> Path | None:
        """Where a path word points, or None (with an opaque reason when that is a doubt)."""
        if not word.literal:
            self.opaque(f"{what}: path {_short(word.raw)} is not literal ({word.why})")
            return None
        value = word.value
        if value == "":
            return None
        if not value.startswith("/") and self.cwd is None:
            self.opaque(f"{what}: relative path {_short(value)} after a cd that could not be followed")
            return None
        try:
            return self.ws.locate(value, base=self.cwd)
        except InvalidArguments as exc:
            self.opaque(f"{what}: path {_short(value)}: {exc.message}")
            return None

    def read(self, word: Word, call: _Call) -> Path | None:
        if word.stream or (word.literal and (word.value in _STREAMS or word.value.startswith("/dev/fd/"))):
            return None
        path = self.locate(word, call.name)
        if path is not None:
            self.reads.append(self.ws.display(path))
        return path

    def write(self, word: Word, call: _Call, modify: bool = False) -> Path | None:
        """A write: ``writes`` if the path exists (or is a glob, or ``modify``), else ``creates``."""
        if word.stream or (word.literal and (word.value in _STREAMS or word.value.startswith("/dev/fd/"))):
            return None
        net = _DEV_NET.match(word.value) if word.literal else None
        if net:
            self._host(net.group(2), call.name)
            return None
        path = self.locate(word, call.name)
        if path is None:
            return None
        shown = self.ws.display(path)
        if modify or word.glob or os.path.lexists(path):
            self.writes.append(shown)
        else:
            self.creates.append(shown)
        if call.taints:
            self.tainted.add(path)
        return path

    def delete(self, word: Word, call: _Call, recursive: bool = False) -> None:
        """A delete; a recursive one or a glob (mass deletion, pattern kept as text) is a recursive delete."""
        path = self.locate(word, call.name)
        if path is not None:
            shown = self.ws.display(path)
            (self.recursive_deletes if recursive or word.glob else self.deletes).append(shown)

    def is_dir(self, word: Word) -> bool:
        path = self._quiet_locate(word)
        return path is not None and path.is_dir()

    def in_workspace(self, word: Word) -> bool:
        path = self._quiet_locate(word)
        return path is not None and self.ws.contains(path)

    def _is_tainted(self, word: Word) -> bool:
        return self._quiet_locate(word) in self.tainted

    def _quiet_locate(self, word: Word) -> Path | None:
        """Where a word points when that is plain to see; None (and no opaque reason) otherwise."""
        if not word.literal or word.glob or not word.value or (self.cwd is None and not word.value.startswith("/")):
            return None
        try:
            return self.ws.locate(word.value, base=self.cwd)
        except InvalidArguments:
            return None

    def url(self, word: Word, call: _Call, default_scheme: str | None = "http") -> None:
        """A URL argument: the host it contacts, or the file a file:// URL reads."""
        if not word.literal:
            self.opaque(f"{call.name}: URL {_short(word.raw)} is not literal ({word.why})")
            return
        value = word.value
        if default_scheme and "://" not in value and not value.lower().startswith("file:"):
            value = f"{default_scheme}://{value}"
        found = network.describe_url(value, self.ws, via=call.name)
        self.reads.extend(found.reads)
        self.network.extend(found.network)
        self.opaques.extend(found.opaque)

    def remote(self, word: Word, call: _Call) -> bool:
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
        self._host(host.strip("[]"), call.name)
        return True

    def host_word(self, word: Word, call: _Call) -> None:
        """A bare host argument (``ssh user@host``, ``nc host``)."""
        if not word.literal:
            self.opaque(f"{call.name}: host {_short(word.raw)} is not literal ({word.why})")
        elif "://" in word.value:
            self.url(word, call, default_scheme=None)
        else:
            self._host(word.value.rpartition("@")[2].strip("[]"), call.name)

    def _host(self, host: str, via: str) -> None:
        host = host.lower().rstrip(".")
        why = network.check_host(host)
        if why:
            self.opaque(f"{via}: host {_short(host)}: {why}")
        if not why or not host.isascii():  # an IDN host is still a fact, next to the doubt
            self.network.append(NetworkEffect(host=host, via=via))

    def inner(self, words: list[Word], call: _Call, cwd: Word | None = None) -> None:
        """Describe the command a wrapper runs; it is listed again, with via "wrapper:<name>"."""
        words = self._skip_env(words, call)
        if not words:
            return
        sudo = call.ctx.sudo or call.name in _PRIVILEGED
        inner_ctx = replace(call.ctx, via=f"wrapper:{call.name}", depth=call.ctx.depth + 1, sudo=sudo)
        with self.chdir(cwd, call):
            self._run(words, [], inner_ctx)

    def _skip_env(self, words: list[Word], call: _Call) -> list[Word]:
        """Leading NAME=value words (env, sudo) are assignments, not the command."""
        i = 0
        while i < len(words) and _ASSIGNMENT.match(words[i].value):
            name, _, value = words[i].value.partition("=")
            self._check_env(name, replace(words[i], value=value), prefix_of=call.name)
            i += 1
        return words[i:]

    @contextmanager
    def chdir(self, word: Word | None, call: _Call) -> Iterator[None]:
        """Run a wrapped command in another directory (git -C, env -C, sudo -D), then come back."""
        saved = self.cwd
        if word is not None:
            self.cwd = self.locate(word, call.name)
        try:
            yield
        finally:
            self.cwd = saved

    def run_text(self, word: Word, call: _Call, via: str | None = None) -> None:
        """Re-parse a literal command string (bash -c, eval, su -c); text built at run time is opaque."""
        if not word.literal:
            what = "downloaded/decoded content executed" if word.tainted else "non-literal command text"
            self.opaque(f"{what}: {call.name} runs {_short(word.raw)} ({word.why})")
            return
        sudo = call.ctx.sudo or call.name in _PRIVILEGED
        inner = replace(call.ctx, via=via or f"wrapper:{call.name}", depth=call.ctx.depth + 1, nest=0, sudo=sudo)
        saved = self.cwd  # a child shell's cd does not move us
        self.describe(word.value, inner)
        self.cwd = saved

    def script(self, word: Word, call: _Call) -> None:
        """An interpreter runs a script file: a read of that file, unless we cannot tell which file."""
        if not word.literal:
            what = "downloaded/decoded content executed" if word.tainted else "script path is not literal"
            self.opaque(f"{what}: {call.name} runs {_short(word.raw)} ({word.why})")
        elif word.value in ("-", "/dev/stdin"):
            self.stdin_program(call)
        else:
            if self._is_tainted(word):
                self.opaque(f"downloaded/decoded content executed: {call.name} runs {_short(word.value)}")
            self.read(word, call)

    def inline_code(self, word: Word | None, call: _Call) -> None:
        """``python -c CODE``: literal code is a recorded fact; code built at run time is opaque."""
        if word is None:
            self.opaque(f"{call.name}: inline code option without code")
        elif not word.literal:
            what = "downloaded/decoded content executed" if word.tainted else "inline code is not literal"
            self.opaque(f"{what}: {call.name} runs {_short(word.raw)} ({word.why})")

    def stdin_program(self, call: _Call) -> str | None:
        """An interpreter reading its program from stdin: the literal text, or None (opaque when unknown)."""
        ctx = call.ctx
        source = _STDIN_NAMES.get(ctx.stdin, ctx.stdin)
        if ctx.stdin_tainted:
            self.opaque(f"downloaded/decoded content executed: {call.name} reads its program from {source}")
        elif ctx.stdin in ("pipe", "socket", "dup"):
            self.opaque(f"{call.name} reads its program from {source} whose content is not known")
        elif ctx.stdin in ("heredoc", "herestring"):
            if ctx.stdin_text is None:
                self.opaque(f"{call.name} reads its program from {source} with expansions")
            return ctx.stdin_text
        return None

    def package(self, manager: str, names: list[str], local: bool, call: _Call) -> None:
        """A package install or removal; anything under sudo is global whatever the manager."""
        scope = "local" if local and not call.ctx.sudo else "global"
        self.packages.append(PackageEffect(manager=manager, names=names, scope=scope))

    def reach(self, host: str, via: str) -> None:
        """A fixed host a program is known to contact (a registry, a mirror, a named git remote)."""
        self.network.append(NetworkEffect(host=host, via=via))


_STDIN_NAMES = {
    "pipe": "a pipe",
    "socket": "a network socket",
    "dup": "a duplicated file descriptor",
    "heredoc": "a heredoc",
    "herestring": "a here-string",
    "file": "a file",
}

_STATEMENTS: dict[str, Callable[[_Describer, Node, _Ctx, list[_Redir]], None]] = {
    "program": _Describer._block,
    "list": _Describer._list,
    "pipeline": _Describer._pipeline,
    "command": _Describer._command,
    "redirected_statement": _Describer._redirected,
    "file_redirect": _Describer._redirected,
    "heredoc_redirect": _Describer._redirected,
    "herestring_redirect": _Describer._redirected,
    "subshell": _Describer._subshell,
    "compound_statement": _Describer._group,
    "if_statement": _Describer._conditional,
    "while_statement": _Describer._conditional,
    "for_statement": _Describer._conditional,
    "c_style_for_statement": _Describer._conditional,
    "case_statement": _Describer._conditional,
    "elif_clause": _Describer._block,
    "else_clause": _Describer._block,
    "case_item": _Describer._block,
    "do_group": _Describer._block,
    "negated_command": _Describer._block,
    "function_definition": _Describer._function,
    "variable_assignment": _Describer._assignments,
    "variable_assignments": _Describer._assignments,
    "declaration_command": _Describer._declaration,
    "unset_command": _Describer._unset,
    "test_command": _Describer._scan_only,
    "ERROR": _Describer._block,  # already opaque; walk what the parser did recognise, for more facts
}


def _short_cluster(word: Word, args: list[Word], i: int, short: str, optional: str, opts: _Opts) -> int:
    """Parse ``-abc`` / ``-ofile`` / ``-o file`` into ``opts``; returns how many words it used."""
    value = word.value
    for j in range(1, len(value)):
        letter = value[j]
        if letter in short:
            if j + 1 < len(value):
                opts.flags.append(("-" + letter, word.tail(j + 1)))
                return 1
            opts.flags.append(("-" + letter, args[i + 1] if i + 1 < len(args) else None))
            return 2
        if letter in optional:
            opts.flags.append(("-" + letter, word.tail(j + 1) if j + 1 < len(value) else None))
            return 1
        opts.flags.append(("-" + letter, None))
    return 1


def _pipeline_elements(node: Node) -> list[Node]:
    """The commands of a pipeline, flattened (tree-sitter nests ``a | b | c``, and heredoc tails)."""
    out: list[Node] = []
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type == "pipeline":
            stack.extend(reversed([c for c in current.children if c.is_named and c.type != "comment"]))
        else:
            out.append(current)
    return out


def _with_stdin(ctx: _Ctx, redirs: list[_Redir]) -> _Ctx:
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
            return _text(node) or _text(node.parent or root)[:60] or "end of input"
        stack.extend(reversed(node.children))
    return _text(root)[:60]


def _canonical(name: str, names: frozenset[str]) -> str:
    """GNU getopt accepts any unambiguous prefix of a long option: ``--rec`` is ``--recursive``."""
    if name in names or len(name) < 4:
        return name
    matches = [n for n in names if n.startswith(name)]
    return matches[0] if len(matches) == 1 else name


def _program(value: str) -> str:
    """The program name a command word runs: ``/usr/bin/python3.11`` -> ``python``."""
    base = value.rstrip("/").rsplit("/", 1)[-1]
    match = _VERSIONED.match(base)
    if match:
        return {"pypy": "python", "nodejs": "node"}.get(match.group(1), match.group(1))
    return base


def _fetches(argv: list[str]) -> bool:
    """Does this command print downloaded or decoded bytes (which must not reach an interpreter)?"""
    if not argv:
        return False
    name = _program(argv[0])
    args = argv[1:]
    short = [a for a in args if a.startswith("-") and not a.startswith("--")]
    if name in _FETCHERS or name in _DECODERS:
        return True
    if name in ("base64", "base32", "basenc", "base58"):
        return "--decode" in args or any("d" in a or "D" in a for a in short)
    if name == "xxd":
        return "-revert" in args or any(a.startswith("-r") for a in short)
    if name in ("gzip", "bzip2", "xz", "zstd", "lz4"):
        return "--decompress" in args or any("d" in a for a in short)
    if name in ("openssl", "gpg"):
        return any(a in ("-d", "-decrypt", "--decrypt") for a in args)
    return False


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _join(directory: Word, source: Word) -> Word:
    """``dir/basename(source)``: where cp/mv/ln put a source inside a target directory."""
    name = source.value.rstrip("/").rsplit("/", 1)[-1]
    return Word(
        value=f"{directory.value.rstrip('/')}/{name}",
        raw=directory.raw,
        literal=directory.literal and source.literal,
        glob=directory.glob or source.glob,
        why=directory.why or source.why,
    )


# --------------------------------------------------------------------------------------------------
# Handlers: reading, writing and deleting files
# --------------------------------------------------------------------------------------------------


def _reads(short: str = "", long: str = "") -> Handler:
    """A program whose operands are files it reads (cat, head, wc, ...)."""

    def handler(d: _Describer, call: _Call) -> None:
        opts = d.options(call, short, f"{long} --files0-from --reference")
        for word in opts.operands + opts.values("--files0-from", "--reference"):
            d.read(word, call)

    return handler


def _mkdir(d: _Describer, call: _Call) -> None:
    for word in d.options(call, "m", "--mode --context").operands:
        path = d.write(word, call)
        if path is not None:
            d.made_dirs.add(path)


def _rm(d: _Describer, call: _Call) -> None:
    opts = d.options(call, known="--recursive --force --dir --interactive --one-file-system --no-preserve-root")
    recursive = opts.has("-r", "-R", "--recursive")
    for word in opts.operands:
        d.delete(word, call, recursive=recursive)


def _rmdir(d: _Describer, call: _Call) -> None:
    for word in d.options(call).operands:
        d.delete(word, call)


def _shred(d: _Describer, call: _Call) -> None:
    opts = d.options(call, "ns", "--iterations --size --random-source", known="--remove")
    for word in opts.operands:
        d.write(word, call, modify=True)
        if opts.has("-u", "--remove"):
            d.delete(word, call)


def _copy_like(remove_sources: bool) -> Handler:
    """cp and mv: sources are read (cp) or deleted (mv, recursively for a directory); the target is written."""

    def handler(d: _Describer, call: _Call) -> None:
        opts = d.options(call, "tS", "--target-directory --suffix --sparse", known="--no-target-directory")
        sources = list(opts.operands)
        directory = opts.last("-t", "--target-directory")
        dest = sources.pop() if directory is None and len(sources) >= 2 else None
        for source in sources:
            if remove_sources:
                d.delete(source, call, recursive=d.is_dir(source))
            else:
                d.read(source, call)
        _destinations(d, call, sources, directory, dest, no_dir=opts.has("-T", "--no-target-directory"))

    return handler


def _destinations(
    d: _Describer, call: _Call, sources: list[Word], directory: Word | None, dest: Word | None, no_dir: bool
) -> None:
    """Where copies land: ``dir/name`` inside a target directory, or the target itself."""
    if directory is None and dest is not None:
        into = not no_dir and (len(sources) > 1 or d.is_dir(dest) or dest.value.endswith("/"))
        if not into:
            d.write(dest, call)
            return
        directory = dest
    for source in sources if directory is not None else []:
        d.write(_join(directory, source), call)


def _ln(d: _Describer, call: _Call) -> None:
    opts = d.options(call, "tS", "--target-directory --suffix", known="--no-target-directory --symbolic")
    targets = list(opts.operands)
    directory = opts.last("-t", "--target-directory")
    if directory is None and len(targets) == 1:
        directory = Word.of(".")  # `ln -s ../x` makes ./x
    dest = targets.pop() if directory is None and len(targets) >= 2 else None
    _destinations(d, call, targets, directory, dest, no_dir=opts.has("-T", "--no-target-directory"))


def _install(d: _Describer, call: _Call) -> None:
    opts = d.options(
        call, "mogSt", "--mode --owner --group --suffix --target-directory --strip-program", known="--directory"
    )
    if opts.values("--strip-program"):
        d.opaque("install --strip-program runs a program")
    if opts.has("-d", "--directory"):
        for word in opts.operands:
            d.write(word, call)
        return
    sources = list(opts.operands)
    directory = opts.last("-t", "--target-directory")
    dest = sources.pop() if directory is None and len(sources) >= 2 else None
    for source in sources:
        d.read(source, call)
    _destinations(d, call, sources, directory, dest, no_dir=opts.has("-T"))


_MODE = re.compile(r"^[-+=][rwxXstugo]*([,][ugoa]*[-+=][rwxXstugo]*)*$")


def _chmod_like(mode_first: bool) -> Handler:
    """chmod / chown / chgrp: the first operand is the mode or owner; the files are written (-R too)."""

    def handler(d: _Describer, call: _Call) -> None:
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
        opts = d.options(call, "", "--reference --from", args=args)
        operands = list(opts.operands)
        if mode is None and opts.last("--reference") is None and operands:
            operands.pop(0)
        for word in opts.values("--reference"):
            d.read(word, call)
        for word in operands:
            d.write(word, call, modify=True)

    return handler


def _dd(d: _Describer, call: _Call) -> None:
    for word in call.args:
        if word.value.startswith("if="):
            d.read(word.tail(3), call)
        elif word.value.startswith("of="):
            d.write(word.tail(3), call)


def _truncate_touch(short: str, long: str) -> Handler:
    """truncate / touch: -r FILE is read; the operands are created or changed."""

    def handler(d: _Describer, call: _Call) -> None:
        opts = d.options(call, short, long)
        for word in opts.values("-r", "--reference"):
            d.read(word, call)
        for word in opts.operands:
            d.write(word, call)

    return handler


def _tee(d: _Describer, call: _Call) -> None:
    for word in d.options(call, known="--append --ignore-interrupts --output-error").operands:
        d.write(word, call)


def _patch(d: _Describer, call: _Call) -> None:
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


def _grep(short: str, long: str, recursive_default: bool = False) -> Handler:
    """grep-like: the first operand is the pattern unless -e/-f gave one; the other operands are read."""

    def handler(d: _Describer, call: _Call) -> None:
        opts = d.options(call, short, f"--regexp --file {long}")
        operands = list(opts.operands)
        if not opts.values("-e", "--regexp", "-f", "--file") and operands:
            operands.pop(0)
        for word in opts.values("-f", "--file", "--ignore-file", "--exclude-from"):
            d.read(word, call)
        if opts.values("--pre"):
            d.opaque(f"{call.name} --pre runs a preprocessor command")
        recursive = recursive_default or opts.has("-r", "-R", "--recursive", "--dereference-recursive")
        default = [Word.of(".")] if recursive and call.ctx.stdin == "inherit" else []
        for word in operands or default:
            d.read(word, call)

    return handler


_GREP = _grep(
    "efmABCdD",
    "--max-count --after-context --before-context --context --directories --devices --include --exclude "
    "--exclude-dir --exclude-from --label --binary-files --group-separator",
)
_RG = _grep(
    "efgtTmjABCEMrd",
    "--glob --iglob --type --type-not --type-add --max-count --threads --context --after-context --before-context "
    "--encoding --max-columns --replace --max-depth --max-filesize --pre --pre-glob --ignore-file --sort --sortr "
    "--colors --engine",
    recursive_default=True,
)

# sed's `e` command and s///e flag run commands; `w`/`W` (command or s/// flag) write files; `r`/`R` read them.
# Heuristics that err towards opaque.
_SED_COMMAND = re.compile(r"(^|[;{}\n])\s*(\d+|\$|/[^/]*/)?(,\s*(\d+|\$|/[^/]*/))?\s*!?\s*[eEwWrR](\s|$)")
_SED_S_FLAGS = re.compile(r"s(.)(?:\\.|(?!\1).)*\1(?:\\.|(?!\1).)*\1[gpIiMm0-9]*[ewW]")


def _sed(d: _Describer, call: _Call) -> None:
    opts = d.options(call, "efl", "--expression --file --line-length", known="--in-place", optional="i")
    operands = list(opts.operands)
    scripts = opts.values("-e", "--expression")
    if not scripts and not opts.values("-f", "--file") and operands:
        scripts = [operands.pop(0)]
    for script in scripts:
        if not script.literal or _SED_COMMAND.search(script.value) or _SED_S_FLAGS.search(script.value):
            d.opaque(f"sed script {_short(script.raw)} may run commands or write files (e/w)")
    for word in opts.values("-f", "--file"):
        d.read(word, call)
        d.opaque(f"sed script file {_short(word.raw)} is not analysed")
    for word in operands:
        if opts.has("-i", "--in-place"):
            d.write(word, call, modify=True)
        else:
            d.read(word, call)


_AWK_RISKY = re.compile(r"system|\||printf?[^;}]*>|getline|ENVIRON")


def _awk(d: _Describer, call: _Call) -> None:
    opts = d.options(call, "fvFiEle", "--file --assign --field-separator --include --load --source --exec")
    operands = list(opts.operands)
    programs = opts.values("-e", "--source")
    files = opts.values("-f", "--file", "-E", "--exec")
    if not programs and not files and operands:
        programs = [operands.pop(0)]
    for program in programs:
        if not program.literal or _AWK_RISKY.search(program.value):
            d.opaque(f"awk program {_short(program.raw)} may run commands or write files")
    for word in files:
        d.read(word, call)
        d.opaque(f"awk program file {_short(word.raw)} is not analysed")
    in_place = any(w.value == "inplace" for w in opts.values("-i", "--include"))
    for word in operands:
        if _ASSIGNMENT.match(word.value):
            continue  # `awk '{..}' n=1 file`: a variable assignment, not a file
        if in_place:
            d.write(word, call, modify=True)
        else:
            d.read(word, call)


def _sort(d: _Describer, call: _Call) -> None:
    opts = d.options(
        call,
        "ktSTo",
        "--key --field-separator --buffer-size --temporary-directory --output --files0-from --batch-size --parallel "
        "--random-source --compress-program",
    )
    if opts.values("--compress-program"):
        d.opaque("sort --compress-program runs a program")
    for word in opts.values("-o", "--output"):
        d.write(word, call)
    for word in opts.operands:
        d.read(word, call)


def _in_out(short: str = "", long: str = "", inputs: int = 1) -> Handler:
    """uniq IN OUT, xxd IN OUT, cmp A B: the first ``inputs`` operands are read, the next one is written."""

    def handler(d: _Describer, call: _Call) -> None:
        opts = d.options(call, short, long)
        for word in opts.operands[:inputs]:
            d.read(word, call)
        for word in opts.operands[inputs : inputs + 1] if call.name != "cmp" else []:
            d.write(word, call)

    return handler


def _openssl(d: _Describer, call: _Call) -> None:
    args = call.args
    for word, value in pairwise(args):
        if word.value == "-in":
            d.read(value, call)
        elif word.value == "-out":
            d.write(value, call)
        elif word.value == "-connect":
            d.host_word(replace(value, value=value.value.rsplit(":", 1)[0]), call)


_TAR_RUNS = ("-I", "--use-compress-program", "--to-command", "--checkpoint-action", "--rsh-command", "--info-script")


def _tar(d: _Describer, call: _Call) -> None:
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
    if opts.values(*_TAR_RUNS, "--new-volume-script", "-F"):
        d.opaque("tar runs a program (compress program, --to-command, checkpoint action or volume script)")
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
                d.read(word, call)
                if opts.has("--remove-files"):
                    d.delete(word, call, recursive=d.is_dir(word))
    elif extracting:
        d.write(directory or Word.of("."), call, modify=True)
        if opts.has("-P", "--absolute-names"):
            d.opaque("tar -P extracts absolute paths: it may write anywhere")


# --------------------------------------------------------------------------------------------------
# Handlers: wrappers that run another command
# --------------------------------------------------------------------------------------------------


def _wrapper(short: str = "", long: str = "", known: str = "") -> Handler:
    """A wrapper whose options end at its first operand, which starts the inner command."""

    def handler(d: _Describer, call: _Call) -> None:
        d.inner(d.options(call, short, long, known, stop=True).operands, call)

    return handler


def _sudo(d: _Describer, call: _Call) -> None:
    opts = d.options(
        call,
        "CDghpRrtTUu",
        "--close-from --chdir --group --host --prompt --chroot --role --type --user --other-user --command-timeout",
        known="--edit --login --shell --list --validate --preserve-env",
        stop=True,
    )
    if opts.has("-e", "--edit") or call.name == "sudoedit":
        for word in opts.operands:
            d.write(word, call, modify=True)
        return
    if opts.values("-R", "--chroot"):
        d.opaque("sudo --chroot runs the command in another root directory")
    d.inner(opts.operands, call, cwd=opts.last("-D", "--chdir"))


def _su(d: _Describer, call: _Call) -> None:
    opts = d.options(call, "cCsgGw", "--command --session-command --shell --group --supp-group")
    commands = opts.values("-c", "--command", "--session-command", "-C")
    for word in commands:
        d.run_text(word, call)
    if not commands and len([w for w in opts.operands if w.value != "-"]) > 1:
        d.opaque("su passes extra arguments to a shell")


def _env(d: _Describer, call: _Call) -> None:
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
            d.opaque(f"env -S text {_short(split.raw)} could not be split")
            return
    d.inner(words, call, cwd=opts.last("-C", "--chdir"))


def _timeout(d: _Describer, call: _Call) -> None:
    opts = d.options(call, "sk", "--signal --kill-after", "--preserve-status --foreground --verbose", stop=True)
    d.inner(opts.operands[1:], call)  # the first operand is the duration


def _time(d: _Describer, call: _Call) -> None:
    opts = d.options(call, "fo", "--format --output", "--append --portability --verbose", stop=True)
    for word in opts.values("-o", "--output"):
        d.write(word, call)
    d.inner(opts.operands, call)


def _command_builtin(d: _Describer, call: _Call) -> None:
    opts = d.options(call, stop=True)
    if not opts.has("-v", "-V"):  # -v and -V only look the name up
        d.inner(opts.operands, call)


def _exec(d: _Describer, call: _Call) -> None:
    opts = d.options(call, "a", stop=True)
    if opts.operands:
        d.inner(opts.operands, call)
    elif call.redirects:
        d.opaque("exec with only redirections changes the shell's own file descriptors")


def _ionice(d: _Describer, call: _Call) -> None:
    opts = d.options(call, "cnpPu", "--class --classdata --pid --pgid --uid", stop=True)
    if not opts.values("-p", "-P", "-u", "--pid", "--pgid", "--uid"):
        d.inner(opts.operands, call)


def _xargs(d: _Describer, call: _Call) -> None:
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


_FIND_TESTS_WITH_ARG = _names(
    "-name -iname -path -ipath -wholename -iwholename -regex -iregex -type -xtype -size -perm -user -group -uid "
    "-gid -mtime -mmin -atime -amin -ctime -cmin -newer -anewer -cnewer -maxdepth -mindepth -links -inum "
    "-samefile -used -lname -ilname -fstype -context -regextype -printf -files0-from"
)
_FIND_EXEC = _names("-exec -execdir -ok -okdir")
_FIND_WRITES = _names("-fprint -fprint0 -fls -fprintf")


def _find(d: _Describer, call: _Call) -> None:
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
            d.opaque(f"find: expression word {_short(word.raw)} is not literal ({word.why})")
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


def _find_exec(d: _Describer, call: _Call, words: list[Word], root: Word) -> None:
    """``{}`` stands for every file under the root: the root, as a glob (so a delete of it is a mass delete)."""
    inner = [
        replace(w, value=w.value.replace("{}", root.value), glob=True, literal=w.literal and root.literal)
        if "{}" in w.value
        else w
        for w in words
    ]
    d.inner(inner, call)


def _watch(d: _Describer, call: _Call) -> None:
    opts = d.options(call, "nq", "--interval --equexit", known="--exec", optional="d", stop=True)
    if opts.has("-x", "--exec"):
        d.inner(opts.operands, call)
    elif opts.operands:
        d.run_text(_joined(opts.operands), call)  # watch runs its words with sh -c


def _busybox(d: _Describer, call: _Call) -> None:
    if call.args and not call.args[0].value.startswith("-"):
        d.inner(call.args, call)


def _joined(words: list[Word]) -> Word:
    """Words joined by spaces, as eval and watch do before parsing them again."""
    text = " ".join(w.value for w in words)
    why = "; ".join(w.why for w in words if w.why)
    return Word(text, text, literal=all(w.literal for w in words), why=why, tainted=any(w.tainted for w in words))


def _eval(d: _Describer, call: _Call) -> None:
    d.run_text(_joined(call.args), call)


def _source(d: _Describer, call: _Call) -> None:
    operands = [w for w in call.args if w.value != "--"]
    if not operands:
        return
    script = operands[0]
    if script.tainted or d._is_tainted(script):
        d.opaque(f"downloaded/decoded content executed: {call.name} {_short(script.raw)}")
    else:
        d.opaque(f"{call.name} runs the commands in {_short(script.raw)}, which are not analysed")
    if script.literal:
        d.read(script, call)


def _alias(d: _Describer, call: _Call) -> None:
    if any("=" in w.value or not w.literal for w in call.args):
        d.opaque("alias defines a command name")


def _trap(d: _Describer, call: _Call) -> None:
    operands = [w for w in call.args if w.value not in ("-p", "-l", "--")]
    if len(operands) >= 2 and not (operands[0].literal and operands[0].value in ("", "-")):
        d.opaque(f"trap installs a command to run later: {_short(operands[0].raw)}")


def _hash(d: _Describer, call: _Call) -> None:
    if any(w.value.startswith("-p") for w in call.args):
        d.opaque("hash -p maps a command name to another program")


def _let(d: _Describer, call: _Call) -> None:
    if any(_has_unparsed_subst(w.value) or not w.literal for w in call.args):
        d.opaque("let evaluates text that may hold command substitutions")


def _cd(d: _Describer, call: _Call) -> None:
    """cd/pushd/popd move the cwd that later relative paths resolve against; an unknown move is None."""
    operands = [w for w in call.args if w.value not in ("-L", "-P", "-e", "-@", "--")]
    if call.name == "popd" or (operands and operands[0].value.startswith(("+", "-"))):
        d.cwd = None  # the directory stack is not tracked
        return
    target = operands[0] if operands else Word.of(d.home)
    path = d._quiet_locate(target)
    # a cd that fails leaves the shell where it was, so only a directory we can see (or made) is followed
    d.cwd = path if path is not None and (path.is_dir() or path in d.made_dirs) else None


# --------------------------------------------------------------------------------------------------
# Handlers: interpreters
# --------------------------------------------------------------------------------------------------


def _shell(d: _Describer, call: _Call) -> None:
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
            d.opaque(f"{call.name}: option {_short(word.raw)} is not literal")
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
        else:
            d.opaque(f"{call.name} -c without a command string")
    elif operands and not stdin_mode:
        d.script(operands[0], call)
    else:
        text = d.stdin_program(call)
        if text is not None:
            d.run_text(Word.of(text), call, via="heredoc")


def _python(d: _Describer, call: _Call) -> None:
    """python: -c CODE (literal is fine), -m MODULE (pip is a package manager), a script, or stdin."""
    args = call.args
    i = 0
    while i < len(args):
        word = args[i]
        value = word.value
        if value == "-" or not value.startswith("-"):
            d.script(word, call)
            return
        if not word.literal:
            d.opaque(f"{call.name}: option {_short(word.raw)} is not literal")
        elif value.startswith("--"):
            i += 1 if value == "--check-hash-based-pycs" else 0
        else:
            for j in range(1, len(value)):
                if value[j] not in "cmWX":
                    continue
                attached = j + 1 < len(value)
                arg = word.tail(j + 1) if attached else (args[i + 1] if i + 1 < len(args) else None)
                if value[j] == "c":
                    d.inline_code(arg, call)
                    return
                if value[j] == "m":
                    _python_module(d, call, arg, args[i + 1 if attached else i + 2 :])
                    return
                i += 0 if attached else 1  # -W and -X take a value
                break
        i += 1
    d.stdin_program(call)


def _python_module(d: _Describer, call: _Call, module: Word | None, rest: list[Word]) -> None:
    if module is None or not module.literal:
        d.opaque(f"{call.name} -m runs a module that is not literal")
    elif module.value == "pip":
        _pip_command(d, call, rest, runner=call.words[0])
    elif module.value in ("venv", "virtualenv"):
        for word in d.options(call, "p", "--prompt --python", args=rest).operands:
            d.write(word, call)


@dataclass
class _Interpreter:
    """node/perl/ruby/php: which option letters carry inline code, which take a value, and whether -i edits."""

    code: str
    takes_value: str
    edits: bool = False

    def __call__(self, d: _Describer, call: _Call) -> None:
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
                d.opaque(f"{call.name}: option {_short(word.raw)} is not literal")
                i += 1
                continue
            used, code, found_code = self._option(word, args, i)
            if found_code:
                has_code = True
                d.inline_code(code, call)
            edit = edit or (self.edits and re.match(r"^-[a-zA-Z]*i", value) is not None)
            per_line = per_line or re.match(r"^-[a-zA-Z]*[np]", value) is not None
            i += used
        operands = args[i:]
        if not has_code:
            if not operands or operands[0].value == "-":
                d.stdin_program(call)
                return
            d.script(operands[0], call)
            operands = operands[1:]
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
            if name in ("--eval", "--print"):
                return (1, word.tail(len(name) + 1), True) if eq else (2, nxt, True)
            takes = not eq and name in ("--require", "--import", "--loader", "--experimental-loader", "--input-type")
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


# --------------------------------------------------------------------------------------------------
# Handlers: network clients
# --------------------------------------------------------------------------------------------------

_CURL_LONG = (
    "--url --output --data --data-raw --data-binary --data-ascii --data-urlencode --json --form --form-string "
    "--header --user --user-agent --referer --cookie --cookie-jar --request --upload-file --config --proxy "
    "--proxy-user --max-time --connect-timeout --retry --retry-delay --retry-max-time --range --write-out "
    "--dump-header --cert --key --cacert --capath --output-dir --resolve --connect-to --interface --limit-rate "
    "--max-filesize --oauth2-bearer --trace --trace-ascii --stderr --unix-socket --abstract-unix-socket --doh-url "
    "--dns-servers --preproxy --socks4 --socks4a --socks5 --socks5-hostname --proto --proto-redir --variable "
    "--etag-save --etag-compare --hsts --alt-svc --netrc-file --aws-sigv4 --ciphers --local-port --continue-at "
    "--speed-time --speed-limit --time-cond --telnet-option --quote --ftp-port --mail-from --mail-rcpt "
    "--max-redirs --parallel-max --expect100-timeout --keepalive-time --pinnedpubkey --tls-max"
)


def _curl(d: _Describer, call: _Call) -> None:
    opts = d.options(call, "AbcCdDeEFHKmoPQrtTuUwxXyYz", _CURL_LONG, known="--remote-name --next")
    urls = [*opts.operands, *opts.values("--url")]
    for word in urls:
        d.url(word, call)
    outputs = ("-o", "--output", "-c", "--cookie-jar", "-D", "--dump-header", "--trace", "--trace-ascii", "--stderr")
    for word in opts.values(*outputs, "--etag-save"):
        d.write(word, call)
    if opts.has("-O", "--remote-name"):
        for word in urls:
            name = word.value.split("?", 1)[0].split("://", 1)[-1].rstrip("/").rsplit("/", 1)
            if word.literal and len(name) == 2 and name[1]:
                d.write(Word.of(name[1]), call)
    for word in opts.values("-T", "--upload-file", "--netrc-file"):
        d.read(word, call)
    for word in opts.values("-d", "--data", "--data-binary", "--data-ascii", "--data-urlencode", "--json"):
        _at_file(d, call, word)
    for word in opts.values("-F", "--form"):
        _at_file(d, call, replace(word, value=word.value.partition("=")[2]))
    for word in opts.values("-K", "--config"):
        d.read(word, call)
        d.opaque(f"curl config file {_short(word.raw)} may name more URLs and options")
    for word in opts.values("-x", "--proxy", "--preproxy", "--socks4", "--socks4a", "--socks5", "--socks5-hostname"):
        d.url(word, call)
    if opts.values("--resolve", "--connect-to", "--dns-servers", "--doh-url"):
        d.opaque("curl maps host names to other addresses (--resolve/--connect-to/--dns-servers/--doh-url)")
    if opts.values("--variable") or any(name.startswith("--expand-") for name, _ in opts.flags):
        d.opaque("curl variable expansion may read files or the environment")


def _at_file(d: _Describer, call: _Call, word: Word) -> None:
    """curl -d @file and -F name=@file / name=<file: the file is read (and sent)."""
    value = word.value
    if value.startswith(("@", "<")) and value[1:] not in ("-", ""):
        d.read(replace(word, value=value[1:].split(";", 1)[0]), call)


_WGET_LONG = (
    "--output-document --output-file --append-output --directory-prefix --input-file --base --execute --tries "
    "--timeout --wait --quota --user-agent --level --accept --reject --domains --exclude-directories "
    "--include-directories --header --post-data --post-file --body-data --body-file --method --user --password "
    "--http-user --http-password --load-cookies --save-cookies --ca-certificate --certificate --private-key "
    "--bind-address --limit-rate --referer --config --proxy-user --proxy-password --default-page --progress"
)


def _wget(d: _Describer, call: _Call) -> None:
    opts = d.options(call, "OoaPiBetTwQUlARDXIY", _WGET_LONG, known="--recursive --mirror")
    for word in opts.operands:
        d.url(word, call)
    documents = opts.values("-O", "--output-document")
    for word in documents + opts.values("-o", "--output-file", "-a", "--append-output", "--save-cookies"):
        d.write(word, call)
    for word in opts.values("-i", "--input-file"):
        d.read(word, call)
        d.opaque(f"wget reads the URLs to fetch from {_short(word.raw)}")
    for word in opts.values("--post-file", "--body-file", "--load-cookies"):
        d.read(word, call)
    for word in opts.values("--config"):
        d.read(word, call)
        d.opaque("wget --config may name more URLs and options")
    prefix = opts.last("-P", "--directory-prefix") or Word.of(".")
    if opts.has("-r", "--recursive", "-m", "--mirror"):
        d.write(prefix, call, modify=True)
    elif not documents:
        for word in opts.operands if all(w.literal for w in opts.operands) else []:
            name = word.value.split("?", 1)[0].split("://", 1)[-1].rstrip("/").rsplit("/", 1)
            d.write(_join(prefix, Word.of(name[1] if len(name) == 2 and name[1] else "index.html")), call)


def _httpie(d: _Describer, call: _Call) -> None:
    opts = d.options(
        call,
        "aAospv",
        "--auth --auth-type --output --session --session-read-only --proxy --cert --cert-key --verify --timeout "
        "--max-redirects --style --print --pretty --format-options",
    )
    operands = list(opts.operands)
    if operands and re.match(r"^[A-Z]+$", operands[0].value):
        operands.pop(0)  # the method
    if operands:
        url = operands.pop(0)
        if url.literal and url.value.startswith(":"):
            url = replace(url, value="localhost" + url.value)  # `http :8000/x`
        d.url(url, call, default_scheme="https" if call.name in ("https", "xhs") else "http")
    for item in operands:
        match = re.match(r"^[^=:@]*(?:=@|:=@|@)(.+)$", item.value)
        if match:
            d.read(replace(item, value=match.group(1)), call)
    for word in opts.values("-o", "--output", "--session"):
        d.write(word, call)
    for word in opts.values("--proxy"):
        d.url(replace(word, value=word.value.split(":", 1)[-1]) if "://" not in word.value else word, call)


def _ssh_options(d: _Describer, call: _Call, opts: _Opts) -> None:
    """Options ssh, scp and sftp share: keys read, jump hosts contacted, local commands run."""
    for word in opts.values("-i"):
        d.read(word, call)
    for word in opts.values("-F"):
        d.read(word, call)
        d.opaque(f"{call.name} -F config file may run local commands (ProxyCommand)")
    for word in opts.values("-J"):
        for hop in word.value.split(","):
            d.host_word(replace(word, value=hop.split(":", 1)[0]), call)
    for word in opts.values("-o"):
        key, _, value = word.value.replace(" ", "=", 1).partition("=")
        if key.lower() in ("proxycommand", "localcommand", "permitlocalcommand", "knownhostscommand", "match"):
            d.opaque(f"{call.name} -o {key} runs a local command")
        elif key.lower() == "proxyjump":
            d.host_word(replace(word, value=value.split(":", 1)[0]), call)
    for word in opts.values("-S") if call.name != "ssh" else []:
        d.opaque(f"{call.name} -S runs the program {_short(word.raw)}")
    for word in opts.values("-E"):
        d.write(word, call)


def _ssh(d: _Describer, call: _Call) -> None:
    opts = d.options(call, "BbcDEeFIiJLlmOoPpQRSWw", stop=True)
    _ssh_options(d, call, opts)
    for word in opts.values("-W"):
        d.host_word(replace(word, value=word.value.rsplit(":", 1)[0]), call)
    if opts.operands:
        d.host_word(opts.operands[0], call)  # the rest is a command that runs on the remote side


def _scp(d: _Describer, call: _Call) -> None:
    opts = d.options(call, "cFiJloPSD")
    _ssh_options(d, call, opts)
    operands = opts.operands
    for i, word in enumerate(operands):
        if d.remote(word, call):
            continue
        if i == len(operands) - 1 and len(operands) > 1:
            d.write(word, call)
        else:
            d.read(word, call)


def _sftp(d: _Describer, call: _Call) -> None:
    opts = d.options(call, "BbcDFiJloPRsS")
    _ssh_options(d, call, opts)
    for word in opts.values("-b"):
        d.read(word, call)
        d.opaque("sftp -b batch file may transfer files and run local commands")
    if opts.values("-s", "-D"):
        d.opaque("sftp -s/-D runs another server program")
    if opts.operands:
        target = opts.operands[0]
        d.host_word(target if "://" in target.value else replace(target, value=target.value.split(":", 1)[0]), call)
    if call.ctx.stdin in ("pipe", "heredoc", "herestring", "socket"):
        d.opaque(f"{call.name} reads commands (which may run local programs) from stdin")


_RSYNC_LONG = (
    "--rsh --filter --exclude --include --exclude-from --include-from --files-from --temp-dir --backup-dir --suffix "
    "--chmod --chown --block-size --bwlimit --timeout --contimeout --port --log-file --password-file --partial-dir "
    "--compare-dest --copy-dest --link-dest --max-size --min-size --max-delete --modify-window --out-format "
    "--rsync-path --iconv --protocol --checksum-choice --compress-choice --compress-level --skip-compress --usermap "
    "--groupmap --info --debug --sockopts --outbuf --stop-after --stop-at --address --remote-option"
)


def _rsync(d: _Describer, call: _Call) -> None:
    opts = d.options(call, "efTBM@", _RSYNC_LONG, known="--delete --remove-source-files --recursive")
    for word in opts.values("-e", "--rsh"):
        words = word.value.split() if word.literal else []
        if not words or _program(words[0]) != "ssh":
            d.opaque(f"rsync -e runs {_short(word.raw)}")
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


def _netcat(d: _Describer, call: _Call) -> None:
    opts = d.options(
        call,
        "pswiqxXOPITVecmgG",
        "--exec --sh-exec --lua-exec --proxy --proxy-type --proxy-auth --source --source-port --wait --idle-timeout "
        "--max-conns --allow --deny --allowfile --denyfile --output",
        known="--listen --keep-open --udp --unixsock",
    )
    if opts.values("-e", "-c", "--exec", "--sh-exec", "--lua-exec"):
        d.opaque(f"{call.name} runs a program for the connection")
    for word in opts.values("-x", "--proxy"):
        d.host_word(replace(word, value=word.value.rsplit(":", 1)[0]), call)
    for word in opts.values("--output"):
        d.write(word, call)
    if opts.has("-l", "--listen"):
        port = (opts.values("-p") or opts.operands[-1:] or [Word.of("?")])[-1]
        d.reach(f"listen:{port.value}", call.name)
    elif opts.operands:
        d.host_word(opts.operands[0], call)


def _first_host(short: str = "", long: str = "") -> Handler:
    """telnet, ping, traceroute, ftp, whois: the first operand is the host."""

    def handler(d: _Describer, call: _Call) -> None:
        opts = d.options(call, short, long)
        if opts.operands:
            d.host_word(opts.operands[0], call)
        for word in opts.values("-h") if call.name == "whois" else []:
            d.host_word(word, call)
        if call.name in ("ftp", "lftp", "tftp") and call.ctx.stdin in ("pipe", "heredoc", "herestring"):
            d.opaque(f"{call.name} reads commands (which may run local programs) from stdin")
        if call.name == "lftp" and opts.values("-e", "-c", "-f"):
            d.opaque("lftp runs command text (-e/-c/-f)")

    return handler


_DNS_WORDS = _names("a aaaa any mx ns txt soa cname ptr srv caa in ch hs axfr ixfr")


def _dns(d: _Describer, call: _Call) -> None:
    """dig/nslookup/host: the resolver (@server) and the name asked about (a name can carry data out)."""
    opts = d.options(call, "bcfkpqtxyWRi" if call.name == "dig" else "tcWRNm")
    for word in opts.values("-f", "-k"):
        d.read(word, call)
    for word in opts.values("-q", "-x") + opts.operands:
        if not (word.value.startswith("+") or word.value.lower() in _DNS_WORDS):
            d.host_word(replace(word, value=word.value.lstrip("@")), call)


_SOCAT_HOSTS = _names("TCP TCP4 TCP6 UDP UDP4 UDP6 SCTP OPENSSL SSL SOCKS4 SOCKS4A PROXY")
_SOCAT_FILES = _names("FILE OPEN CREATE CREAT GOPEN")
_SOCAT_QUIET = _names("STDIO STDIN STDOUT STDERR - PIPE")


def _socat(d: _Describer, call: _Call) -> None:
    for word in d.options(call, "TtbL").operands:
        kind, _, rest = word.value.partition(":")
        kind = kind.upper().split(",")[0]
        where = rest.split(",")[0].split(":")[0]
        if not word.literal:
            d.opaque(f"socat address {_short(word.raw)} is not literal")
        elif kind in ("EXEC", "SYSTEM"):
            d.opaque(f"socat {kind} runs a program")
        elif kind.endswith(("-LISTEN", "-L")):
            d.reach(f"listen:{where}", "socat")
        elif kind in _SOCAT_HOSTS:
            d.host_word(Word.of(where), call)
        elif kind in _SOCAT_FILES:
            d.write(Word.of(where), call, modify=True)
        elif kind not in _SOCAT_QUIET:
            d.opaque(f"socat address type {kind!r} is not analysed")


# --------------------------------------------------------------------------------------------------
# Handlers: git
# --------------------------------------------------------------------------------------------------

# `git -c` / `git config` keys whose values are harmless; any other key may name a program git runs.
_GIT_SAFE_KEYS = tuple(
    _names(
        "user. color. advice. init.defaultbranch core.quotepath core.autocrlf core.safecrlf core.filemode "
        "core.ignorecase commit.gpgsign tag.gpgsign pull.rebase pull.ff merge.ff push.default push.autosetupremote "
        "fetch.prune log. status. column. i18n. safe.directory gc.auto maintenance.auto rebase.autosquash "
        "rebase.autostash diff.renames branch.autosetuprebase http.sslverify"
    )
)
_GIT_WORKTREE = _names("checkout switch restore merge rebase cherry-pick revert am stash pull")
_GIT_NETWORK_OPTIONS = {
    "clone": ("objuc", "--origin --branch --upload-pack --reference --separate-git-dir --depth --config --jobs "),
    "push": ("o", "--repo --push-option --receive-pack --exec "),
    "fetch": ("oj", "--upload-pack --depth --deepen --shallow-since --shallow-exclude --refmap --jobs "),
    "pull": ("osXj", "--upload-pack --depth --deepen --strategy --strategy-option --jobs "),
    "ls-remote": ("o", "--upload-pack --sort "),
}
_GIT_NETWORK_COMMON = "--filter --template --bundle-uri --server-option --shallow-exclude --negotiation-tip"


def _git(d: _Describer, call: _Call) -> None:
    args = call.args
    cwd: Word | None = None
    i = 0
    while i < len(args):
        word = args[i]
        value = word.value
        if not word.literal:
            d.opaque(f"git: {_short(word.raw)} is not literal ({word.why})")
            return
        if value == "-C" and i + 1 < len(args):
            cwd = args[i + 1]
            i += 1
        elif value == "-c" and i + 1 < len(args):
            _git_config_key(d, args[i + 1])
            i += 1
        elif value.startswith(("--exec-path=", "--config-env")):
            d.opaque(f"git {value.split('=')[0]} changes which programs git runs")
        elif value in ("--git-dir", "--work-tree", "--namespace", "--super-prefix", "--list-cmds"):
            i += 1
        elif not value.startswith("-"):
            break
        i += 1
    if i < len(args):
        with d.chdir(cwd, call):
            _git_subcommand(d, call, args[i].value, args[i + 1 :])


def _git_config_key(d: _Describer, word: Word) -> None:
    key = word.value.split("=", 1)[0].lower()
    if not word.literal or not key.startswith(_GIT_SAFE_KEYS):
        d.opaque(f"git config {_short(key)} may make git run a program")


def _git_subcommand(d: _Describer, call: _Call, sub: str, rest: list[Word]) -> None:
    if sub in _GIT_NETWORK_OPTIONS:
        _git_network(d, call, sub, rest)
    if sub in _GIT_WORKTREE or (sub == "apply" and not any(w.value in ("--check", "--stat") for w in rest)):
        _git_worktree(d, call, sub, rest)
    handler = _GIT_SUBCOMMANDS.get(sub)
    if handler is not None:
        handler(d, call, rest)


def _git_network(d: _Describer, call: _Call, sub: str, rest: list[Word]) -> None:
    """clone/push/fetch/pull/ls-remote: the host of a URL remote, or ``git-remote:<name>`` for a named one."""
    short, long = _GIT_NETWORK_OPTIONS[sub]
    opts = d.options(call, short, long + _GIT_NETWORK_COMMON, args=rest)
    if opts.values("--upload-pack", "--receive-pack", "--exec") or (sub == "clone" and opts.values("-u")):
        d.opaque(f"git {sub} --upload-pack/--receive-pack runs a program")
    if opts.values("--template"):
        d.opaque("git clone --template installs hooks that run during the clone")
    for word in opts.values("-c", "--config") if sub == "clone" else []:
        _git_config_key(d, word)
    operands = opts.operands
    if sub == "clone":
        if operands:
            _git_url(d, call, operands[0], reading=True)
            name = operands[0].value.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1].removesuffix(".git")
            d.write(operands[1] if len(operands) > 1 else Word.of(name or "repo"), call)
        return
    remote = operands[0] if operands else Word.of("default")
    if not remote.literal:
        d.opaque(f"git {sub}: remote {_short(remote.raw)} is not literal")
    elif _git_is_url(remote) or remote.value.startswith(("/", ".", "~")):
        _git_url(d, call, remote, reading=sub != "push")
    else:
        d.reach(f"git-remote:{remote.value}", "git")


def _git_is_url(word: Word) -> bool:
    value = word.value
    return "://" in value or "::" in value or bool(re.match(r"^[^/:]+@[^/:]+:|^[^/:]+\.[^/:]+:", value))


def _git_url(d: _Describer, call: _Call, word: Word, reading: bool) -> None:
    value = word.value
    if not word.literal:
        d.opaque(f"git: URL {_short(word.raw)} is not literal")
    elif "::" in value and "://" not in value.split("::", 1)[0]:
        d.opaque(f"git remote helper {_short(value)} runs a program")
    elif _git_is_url(word):
        d.url(word, replace(call, name="git"), default_scheme=None)
    elif reading:
        d.read(word, call)
    else:
        d.write(word, call, modify=True)


def _git_worktree(d: _Describer, call: _Call, sub: str, rest: list[Word]) -> None:
    """Subcommands that rewrite working-tree files: the paths given, or the whole tree (the cwd)."""
    values = [w.value for w in rest]
    if sub == "stash" and values[:1] in (["list"], ["show"]):
        return
    paths: list[Word] = []
    if "--" in values:
        paths = rest[values.index("--") + 1 :]
    elif sub == "restore" and not ("--staged" in values and "--worktree" not in values):
        paths = [w for w in rest if not w.value.startswith("-")]
    elif sub == "restore":
        return  # --staged alone only touches the index
    for word in paths or [Word.of(".")]:
        d.write(word, call, modify=True)


def _git_reset(d: _Describer, call: _Call, rest: list[Word]) -> None:
    if any(w.value in ("--hard", "--merge", "--keep") for w in rest):
        d.write(Word.of("."), call, modify=True)


def _git_clean(d: _Describer, call: _Call, rest: list[Word]) -> None:
    opts = d.options(call, "e", "--exclude", args=rest)
    if not opts.has("-n", "--dry-run"):
        for word in opts.operands or [Word.of(".")]:
            d.delete(word, call, recursive=True)


def _git_rm(d: _Describer, call: _Call, rest: list[Word]) -> None:
    opts = d.options(call, "", "--pathspec-from-file", args=rest)
    if not opts.has("--cached", "-n", "--dry-run"):
        for word in opts.operands:
            d.delete(word, call, recursive=opts.has("-r"))


def _git_mv(d: _Describer, call: _Call, rest: list[Word]) -> None:
    operands = list(d.options(call, args=rest).operands)
    if len(operands) >= 2:
        dest = operands.pop()
        for word in operands:
            d.delete(word, call, recursive=d.is_dir(word))
        _destinations(d, call, operands, None, dest, no_dir=False)


def _git_config(d: _Describer, call: _Call, rest: list[Word]) -> None:
    opts = d.options(call, "f", "--file --type --default --blob", args=rest)
    operands = opts.operands
    setting = len(operands) >= 2 or opts.has("--add", "--replace-all", "--unset", "--unset-all", "-e", "--edit")
    if not operands or not setting:
        return
    _git_config_key(d, operands[0])
    if opts.has("--global"):
        d.write(Word.of(f"{d.home}/.gitconfig"), call)
    elif opts.has("--system"):
        d.write(Word.of("/etc/gitconfig"), call)
    for word in opts.values("-f", "--file"):
        d.write(word, call)


def _git_submodule(d: _Describer, call: _Call, rest: list[Word]) -> None:
    positional = [w for w in rest if not w.value.startswith("-")]
    action = positional[0].value if positional else ""
    if action == "foreach":
        d.opaque("git submodule foreach runs a shell command in every submodule")
    elif action == "add" and len(positional) > 1:
        _git_url(d, call, positional[1], reading=True)
    elif action in ("update", "sync"):
        d.reach("git-remote:submodules", "git")


def _git_remote(d: _Describer, call: _Call, rest: list[Word]) -> None:
    values = [w.value for w in rest]
    if values[:1] == ["update"]:
        d.reach("git-remote:default", "git")
    elif values[:1] in (["add"], ["set-url"]) and any("::" in v and "://" not in v.split("::")[0] for v in values):
        d.opaque("git remote helper URL runs a program")


def _git_rebase(d: _Describer, call: _Call, rest: list[Word]) -> None:
    for word in d.options(call, "xsXo", "--exec --strategy --strategy-option --onto", args=rest).values("-x", "--exec"):
        d.run_text(word, call)


def _git_bisect(d: _Describer, call: _Call, rest: list[Word]) -> None:
    if rest and rest[0].value == "run":
        d.inner(rest[1:], call)


def _git_filter_branch(d: _Describer, call: _Call, rest: list[Word]) -> None:
    d.opaque("git filter-branch runs shell filters on every commit")


_GIT_SUBCOMMANDS: dict[str, Callable[[_Describer, _Call, list[Word]], None]] = {
    "reset": _git_reset,
    "clean": _git_clean,
    "rm": _git_rm,
    "mv": _git_mv,
    "config": _git_config,
    "submodule": _git_submodule,
    "remote": _git_remote,
    "rebase": _git_rebase,
    "bisect": _git_bisect,
    "filter-branch": _git_filter_branch,
}


# --------------------------------------------------------------------------------------------------
# Handlers: package managers
# --------------------------------------------------------------------------------------------------

_PIP_LONG = (
    "--requirement --constraint --editable --target --index-url --extra-index-url --find-links --config-settings "
    "--prefix --root --src --upgrade-strategy --python-version --platform --implementation --abi --only-binary "
    "--no-binary --progress-bar --log --proxy --cert --client-cert --cache-dir --exists-action --trusted-host "
    "--retries --timeout --global-option --install-option --report --python --dest"
)


def _pip(d: _Describer, call: _Call) -> None:
    _pip_command(d, call, call.args, runner=call.words[0])


def _pip_command(d: _Describer, call: _Call, args: list[Word], runner: Word, uv: bool = False) -> None:
    """pip (also ``python -m pip`` and ``uv pip``): the packages, their scope and the indexes contacted."""
    opts = d.options(call, "rceitfCd", _PIP_LONG, known="--user --no-index --system --dry-run", args=args)
    operands = list(opts.operands)
    sub = operands.pop(0).value if operands else ""
    if sub not in ("install", "uninstall", "download"):
        return
    names = [w.value for w in operands]
    names += [f"-r {w.value}" for w in opts.values("-r", "--requirement")]
    names += [f"-e {w.value}" for w in opts.values("-e", "--editable")]
    for word in opts.values("-r", "--requirement", "-c", "--constraint"):
        d.read(word, call)
    if sub == "download":
        for word in opts.values("-d", "--dest"):
            d.write(word, call)
    else:
        d.package("pip", names, _pip_local(d, runner, opts, uv), call)
    if sub != "uninstall":
        _pip_network(d, call, opts, operands)


def _pip_local(d: _Describer, runner: Word, opts: _Opts, uv: bool) -> bool:
    """Local only when the target is visibly inside the workspace: a bare pip could be any interpreter's."""
    if opts.has("--user"):
        return False
    targets = opts.values("-t", "--target", "--prefix", "--root") or opts.values("--python")
    if targets:
        return all(d.in_workspace(w) for w in targets)
    if uv:
        return not opts.has("--system")  # uv installs into the project's venv unless told otherwise
    return "/" in runner.value and d.in_workspace(runner)  # ./.venv/bin/pip, venv/bin/python -m pip


def _pip_network(d: _Describer, call: _Call, opts: _Opts, operands: list[Word]) -> None:
    pip_call = replace(call, name="pip")
    if not opts.has("--no-index"):
        d.reach("pypi.org", "pip")
    for word in opts.values("-i", "--index-url", "--extra-index-url", "--proxy"):
        d.url(word, pip_call)
    for word in opts.values("-f", "--find-links") + operands:
        url = word.value.split(" @ ", 1)[-1].strip()  # `name @ https://...`
        if "://" in url:
            d.url(replace(word, value=re.sub(r"^(git|hg|svn|bzr)\+", "", url)), pip_call)


def _uv(d: _Describer, call: _Call) -> None:
    opts = d.options(call, "p", "--python --directory --project --cache-dir --color", stop=True)
    sub = opts.operands[0].value if opts.operands else ""
    rest = opts.operands[1:]
    if sub == "pip":
        _pip_command(d, call, rest, runner=call.words[0], uv=True)
        return
    if sub in ("add", "remove", "sync", "lock", "run") or (sub == "tool" and rest[:1] and rest[0].value != "list"):
        d.reach("pypi.org", "uv")
    if sub in ("add", "remove"):
        names = d.options(call, "", "--group --optional --extra --package", args=rest).operands
        d.package("pip", [w.value for w in names], True, call)
    elif sub == "tool" and rest[:1] and rest[0].value in ("install", "upgrade", "uninstall"):
        d.package("pip", [w.value for w in rest[1:] if not w.value.startswith("-")], False, call)
    elif sub == "run":
        inner = d.options(call, "p", "--with --python --extra --group --env-file --package", args=rest, stop=True)
        d.inner(inner.operands, call)
    elif sub == "venv":
        for word in [w for w in rest if not w.value.startswith("-")][:1] or [Word.of(".venv")]:
            d.write(word, call)


def _pipx(d: _Describer, call: _Call) -> None:
    operands = [w for w in call.args if not w.value.startswith("-")]
    sub = operands[0].value if operands else ""
    if sub in ("install", "inject", "upgrade", "reinstall", "uninstall"):
        d.package("pipx", [w.value for w in operands[1:]], False, call)
    if sub in ("install", "inject", "upgrade", "reinstall", "run"):
        d.reach("pypi.org", "pipx")


_NPM_INSTALL = _names(
    "install i in ins inst insta instal isnt isnta isntal isntall add ci install-clean update up upgrade"
)
_NPM_REMOVE = _names("uninstall un unlink remove rm r")
_NPM_FETCH = _NPM_INSTALL | _names("exec x dlx create init publish")
_REGISTRY = {"npm": "registry.npmjs.org", "pnpm": "registry.npmjs.org", "yarn": "registry.yarnpkg.com"}


def _npm_like(d: _Describer, call: _Call) -> None:
    """npm, yarn, pnpm, bun: add/install/remove (local unless global); exec/dlx/create fetch and run packages."""
    opts = d.options(call, "wC", "--registry --prefix --workspace --location --tag --filter --dir --cwd")
    operands = [w.value for w in opts.operands]
    global_ = opts.has("-g", "--global") or any(w.value == "global" for w in opts.values("--location"))
    if call.name == "yarn" and operands[:1] == ["global"]:
        global_, operands = True, operands[1:]
    sub = operands[0] if operands else ("install" if call.name == "yarn" else "")
    if sub in _NPM_INSTALL or sub in _NPM_REMOVE:
        d.package(call.name, operands[1:], not global_, call)
    if sub in _NPM_FETCH and not opts.has("--offline"):
        d.reach(_REGISTRY.get(call.name, "registry.npmjs.org"), call.name)
        for word in opts.values("--registry"):
            d.url(word, call)


def _registry_runner(host: str) -> Handler:
    """npx, bunx, uvx: fetch a package from the registry (when not installed) and run it."""

    def handler(d: _Describer, call: _Call) -> None:
        d.reach(host, call.name)

    return handler


def _system_packages(host: str, installs: str, fetches: str = "update upgrade") -> Handler:
    """apt, dnf, yum, apk, brew: always global; installs and updates contact the distribution's mirrors."""
    install_set = _names(installs)
    fetch_set = _names(fetches) | install_set

    def handler(d: _Describer, call: _Call) -> None:
        opts = d.options(call, "otcXC", "--option --target-release --config-file --repository --setopt")
        if opts.values("-o", "--option", "-c", "--config-file"):
            d.opaque(f"{call.name} -o/-c options can make it run commands")
        operands = [w.value for w in opts.operands]
        sub = operands[0] if operands else ""
        if sub in install_set:
            d.package(call.name, operands[1:], False, call)
        if sub in fetch_set:
            d.reach(host, call.name)
        for word in opts.values("-X", "--repository"):
            d.url(word, call)

    return handler


_APT = _system_packages(
    "deb.debian.org", "install reinstall remove purge build-dep", "update upgrade full-upgrade dist-upgrade source"
)
_DNF = _system_packages(
    "mirrors.fedoraproject.org", "install reinstall remove erase downgrade", "update upgrade makecache"
)


def _cargo(d: _Describer, call: _Call) -> None:
    opts = d.options(call, "Zj", "--git --path --root --version --branch --tag --rev --jobs")
    operands = [w.value for w in opts.operands]
    sub = operands[0] if operands else ""
    if sub in ("install", "uninstall", "add", "remove"):
        d.package("cargo", operands[1:], sub in ("add", "remove"), call)
    if sub in ("install", "add"):
        d.reach("crates.io", "cargo")
        for word in opts.values("--git"):
            d.url(word, call)


def _gem(d: _Describer, call: _Call) -> None:
    opts = d.options(call, "ivs", "--install-dir --version --source --bindir")
    operands = [w.value for w in opts.operands]
    sub = operands[0] if operands else ""
    if sub not in ("install", "update", "uninstall"):
        return
    dirs = opts.values("-i", "--install-dir")
    d.package("gem", operands[1:], bool(dirs) and all(d.in_workspace(w) for w in dirs), call)
    if sub != "uninstall":
        d.reach("rubygems.org", "gem")
        for word in opts.values("-s", "--source"):
            d.url(word, call)


def _go(d: _Describer, call: _Call) -> None:
    operands = [w.value for w in call.args if not w.value.startswith("-")]
    sub = operands[0] if operands else ""
    if sub in ("install", "get"):
        d.package("go", operands[1:], sub == "get", call)  # go get edits go.mod; go install writes ~/go/bin
    if sub in ("install", "get") or operands[:2] in (["mod", "download"], ["mod", "tidy"]):
        d.reach("proxy.golang.org", "go")


def _virtualenv(d: _Describer, call: _Call) -> None:
    for word in d.options(call, "p", "--python --prompt").operands[:1]:
        d.write(word, call)


def _noop(d: _Describer, call: _Call) -> None:
    """Known programs with no file, network or package effects to state."""


# --------------------------------------------------------------------------------------------------
# The dispatch table: program name -> handler
# --------------------------------------------------------------------------------------------------

_REGISTRY_RUNNERS = {"npx": "registry.npmjs.org", "bunx": "registry.npmjs.org", "uvx": "pypi.org"}
_READERS = {
    "cat": _reads(),
    "tac": _reads("s", "--separator"),
    "head": _reads("nc", "--lines --bytes"),
    "tail": _reads("ncs", "--lines --bytes --pid --sleep-interval --max-unchanged-stats"),
    "less": _reads("bhjkoOpPtTxyz", "--log-file --pattern --tag"),
    "more": _reads("n"),
    "nl": _reads("bdfhilnsvw"),
    "wc": _reads(),
    "od": _reads("AjNSstw"),
    "hexdump": _reads("enfs"),
    "strings": _reads("ntTe"),
    "file": _reads("mfF"),
    "stat": _reads("c", "--format --printf"),
    "ls": _reads("IwT", "--ignore --hide --width --tabsize --format --sort --time-style"),
    "tree": _reads("LPIoH"),
    "du": _reads("BdtX", "--block-size --max-depth --threshold --exclude-from --exclude"),
    "diff": _reads("CUDFILSxX", "--label --from-file --to-file --exclude --exclude-from --ifdef"),
    "cut": _reads("bcdf", "--bytes --characters --delimiter --fields --output-delimiter"),
    "paste": _reads("d", "--delimiters"),
    "comm": _reads("", "--output-delimiter"),
    "join": _reads("12aejotv"),
    **{name: _reads() for name in ("md5sum", "sha1sum", "sha256sum", "sha512sum", "b2sum", "cksum")},
    **{name: _reads("w", "--wrap") for name in ("base64", "base32", "basenc")},
}

HANDLERS: dict[str, Handler] = {
    **_READERS,
    "cmp": _in_out("in", "--ignore-initial --bytes", inputs=2),
    "uniq": _in_out("fsw", "--skip-fields --skip-chars --check-chars"),
    "xxd": _in_out("cglnosC"),
    "sort": _sort,
    "grep": _GREP,
    "egrep": _GREP,
    "fgrep": _GREP,
    "rg": _RG,
    "sed": _sed,
    **{name: _awk for name in ("awk", "gawk", "mawk", "nawk")},
    "openssl": _openssl,
    # writing and deleting
    "tee": _tee,
    "touch": _truncate_touch("rdt", "--reference --date --time"),
    "truncate": _truncate_touch("sr", "--size --reference"),
    "mkdir": _mkdir,
    "cp": _copy_like(remove_sources=False),
    "mv": _copy_like(remove_sources=True),
    "ln": _ln,
    "install": _install,
    "chmod": _chmod_like(mode_first=True),
    "chown": _chmod_like(mode_first=False),
    "chgrp": _chmod_like(mode_first=False),
    "dd": _dd,
    "tar": _tar,
    "patch": _patch,
    "rsync": _rsync,
    "rm": _rm,
    "rmdir": _rmdir,
    "unlink": _rmdir,
    "shred": _shred,
    "find": _find,
    # wrappers
    "sudo": _sudo,
    "sudoedit": _sudo,
    "doas": _wrapper("Cu"),
    "pkexec": _wrapper("", "--user", "--disable-internal-agent --keep-cwd"),
    "run0": _wrapper("ugD", "--user --group --nice --chdir --setenv --property --unit --description --slice --machine"),
    "su": _su,
    "env": _env,
    "nice": _wrapper("n", "--adjustment"),
    "ionice": _ionice,
    "nohup": _wrapper(),
    "timeout": _timeout,
    "time": _time,
    "command": _command_builtin,
    "builtin": _wrapper(),
    "exec": _exec,
    "stdbuf": _wrapper("ioe", "--input --output --error"),
    "setsid": _wrapper(known="--ctty --fork --wait"),
    "busybox": _busybox,
    "xargs": _xargs,
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
    # interpreters
    **{name: _shell for name in _SHELLS},
    "python": _python,
    "node": _Interpreter(code="ep", takes_value="rC"),
    "perl": _Interpreter(code="eE", takes_value="IMmlFCDx0", edits=True),
    "ruby": _Interpreter(code="e", takes_value="IrCEFx", edits=True),
    "php": _Interpreter(code="rBRFE", takes_value="dcztS"),
    # network
    "curl": _curl,
    "wget": _wget,
    **{name: _httpie for name in ("http", "https", "xh", "xhs")},
    "ssh": _ssh,
    "scp": _scp,
    "sftp": _sftp,
    **{name: _netcat for name in ("nc", "ncat", "netcat")},
    "socat": _socat,
    "telnet": _first_host("lneXkb"),
    "ping": _first_host("cistWwIlpQSMFmT"),
    "ping6": _first_host("cistWwIlpQSMFmT"),
    "traceroute": _first_host("fgimNptqswzA"),
    "tracepath": _first_host("lmp"),
    "mtr": _first_host("acfimpsBGQTUIZ"),
    "ftp": _first_host("P"),
    "tftp": _first_host("m"),
    "lftp": _first_host("efcup"),
    "whois": _first_host("hpiTsgS"),
    **{name: _dns for name in ("dig", "nslookup", "host")},
    "git": _git,
    # packages
    "pip": _pip,
    "uv": _uv,
    "pipx": _pipx,
    **{name: _npm_like for name in ("npm", "yarn", "pnpm", "bun")},
    **{name: _registry_runner(host) for name, host in _REGISTRY_RUNNERS.items()},
    "apt": _APT,
    "apt-get": _APT,
    "aptitude": _APT,
    "dnf": _DNF,
    "yum": _DNF,
    "microdnf": _DNF,
    "apk": _system_packages("dl-cdn.alpinelinux.org", "add del", "update upgrade fix"),
    "brew": _system_packages("formulae.brew.sh", "install reinstall uninstall remove", "update upgrade tap"),
    "cargo": _cargo,
    "gem": _gem,
    "go": _go,
    "virtualenv": _virtualenv,
    # known, nothing to add
    **{name: _noop for name in ("echo", "printf", "true", "false", ":", "pwd", "test", "[", "read", "exit")},
}

# Names a function definition must not take over (the HANDLERS keys are checked too).
_COMMON_NAMES = _names(
    "ls cd echo printf test true false pwd read exit return set shift export unset type which whoami id make "
    "pytest python3 git sudo kill ps grep cat rm mv cp mkdir chmod chown sh bash command builtin exec source "
    "eval trap alias history jobs wait sleep date env"
)


def describe_command(command: str, workspace: Workspace, cwd: Path) -> Effects:
    """The facts of running ``command`` with bash in ``cwd`` (absolute, normally inside the workspace)."""
    describer = _Describer(workspace, Path(cwd))
    try:
        describer.describe(command, _Ctx())
    except RecursionError:
        describer.opaque("command is nested too deeply to analyse")
    return describer.effects()
