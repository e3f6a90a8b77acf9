"""Frozen interfaces and drift: what an attempt changed that its manifest froze, and how far it wandered.

Pure functions over a git repository: commits in, plain data out; nothing is stored. Only the Python files a
diff touches are read (``git cat-file blob commit:path``) and parsed with ``ast``.

    repo = Repo(Path("/work/repo"))
    frozen_problems(repo, "main", ["api/**", "src/a.py:parse"])   # at submit: [] or
        # ["frozen 'src/a.py:parse': no function or class 'parse' in src/a.py at 1a2b3c4"]
    frozen_violations(repo, base, head, manifest.frozen)           # ["FROZEN_PATH api/v1.json",
        # "FROZEN_SIGNATURE src/a.py:parse: (text) -> Doc became (text, strict) -> Doc"]
    drift(repo, base, head, previous, outside_scope)               # {"files_changed": 3, "lines_added": 40, ...}
    diff_shape(repo, "refs/heads/main", head)                      # {"added": 1, "deleted": 0, "tracked": 120, ...}
    matches("api/**", "api/v1/schema.json")                        # True: '**' crosses '/', '*' does not

A frozen entry is a path or glob (see ``matches``), or a Python symbol 'path.py:name' or 'path.py:Class.method'.
A symbol's interface is what ``ast`` shows of it: for a function its decorators, async or not, parameters
(names, kinds, annotations, defaults) and return annotation; for a class its decorators and bases, and each
public method (name not starting with '_', or ``__init__``) as 'Class.method'. Bodies may change freely.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Sequence
from typing import Any

from gateway.linear_regex import Pattern, task_glob
from gateway.repo import GitError, Repo
from gateway.tasks.worktrees import changed_files

Definition = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
MAX_PARSED_BYTES = 4 * 1024 * 1024


def matches(pattern: str, path: str) -> bool:
    """Whether a '/'-separated path matches a task's glob (allowed paths, acceptance, frozen), whole: '**' as a
    whole segment matches any number of directories, none included ('src/**/a.py' covers 'src/a.py', '**/x'
    covers 'x'), and at its end everything below; '*' matches any run of characters within one segment ('**'
    inside a name too) and '?' one character; everything else, '[', '{' and '\\' included, is literal. The
    policy reads a task's globs the same way on every Rego engine (policies/lib/portable.rego, task_glob_regex).

    matches("src/*.py", "src/a.py") -> True; matches("src/*.py", "src/x/a.py") -> False
    """
    return _compile(pattern).fullmatch(path) is not None


@functools.lru_cache(maxsize=512)
def _compile(pattern: str) -> Pattern:
    # agents write the globs and name the files: RE2 matches in linear time, where nested '**' backtracked
    return task_glob(pattern)


def frozen_problems(repo: Repo, commit: str, frozen: list[str]) -> list[str]:
    """Why frozen entries name nothing at ``commit`` (checked when a task is submitted): a symbol's file must
    exist and parse and define it; a path or glob must match at least one file. [] when all is well."""
    short = repo.run("rev-parse", "--short", f"{commit}^{{commit}}").strip()
    files: list[str] | None = None  # listed once, and only if a path entry needs it
    trees = _Trees(repo)
    problems = []
    for entry in frozen:
        path, symbol = _split(entry)
        if symbol:
            problem = _symbol_problem(trees, commit, path, symbol)
        else:
            if files is None:
                files = [f for f in repo.run("ls-tree", "-r", "-z", "--name-only", commit).split("\0") if f]
            problem = None if any(matches(path, f) for f in files) else "matches no file"
        if problem:
            problems.append(f"frozen {entry!r}: {problem} at {short}")
    return problems


def frozen_violations(repo: Repo, base: str, head: str, frozen: list[str]) -> list[str]:
    """What ``head`` changed, since it forked from ``base``, that ``frozen`` forbids: "FROZEN_PATH <file>" for
    each changed file a path entry matches, "FROZEN_SIGNATURE <entry>: <old> became <new>" (or "was removed",
    "was added", "... no longer parses") for each frozen symbol whose interface changed. A symbol that is not
    at ``base`` has nothing to hold to (``frozen_problems`` reports it at submit)."""
    changed = changed_files(repo, base, head)  # base...head: the attempt's own changes, even if base moved on
    paths = [entry for entry in frozen if not _split(entry)[1]]
    violations = [f"FROZEN_PATH {f}" for f in changed if any(matches(p, f) for p in paths)]
    trees = _Trees(repo)
    for entry in frozen:
        path, symbol = _split(entry)
        if symbol and path in changed:
            violations += _symbol_violations(trees, base, head, path, symbol)
    return violations


def drift(repo: Repo, base: str, head: str, previous: str | None, outside_scope: list[str]) -> dict[str, Any]:
    """Figures for one attempt: how much ``head`` changed since ``base``, how much since the ``previous``
    attempt's saved commit (None: no previous attempt), and which public top-level functions and classes of
    the changed Python files it removed or renamed (a removed symbol whose interface, name aside, equals an
    added one's in the same file was renamed). ``outside_scope`` is the caller's scope check, passed through.

    {"files_changed": 2, "files_outside_scope": 0, "outside_scope": [], "lines_added": 12, "lines_removed": 3,
     "churn_vs_previous": 9, "public_symbols_removed": ["src/a.py:old"],
     "public_symbols_renamed": [{"from": "src/a.py:f", "to": "src/a.py:g"}], "files_unparsable": []}
    """
    stats = _numstat(repo, f"{base}...{head}")
    removed, renamed, unparsable = _public_changes(_Trees(repo), base, head, [p for _, _, p in stats])
    return {
        "files_changed": len(stats),
        "files_outside_scope": len(outside_scope),
        "outside_scope": sorted(outside_scope),
        "lines_added": sum(added for added, _, _ in stats),
        "lines_removed": sum(deleted for _, deleted, _ in stats),
        "churn_vs_previous": None if previous is None else sum(a + d for a, d, _ in _numstat(repo, previous, head)),
        "public_symbols_removed": removed,
        "public_symbols_renamed": renamed,
        "files_unparsable": unparsable,
    }


def diff_shape(repo: Repo, base: str, head: str) -> dict[str, Any]:
    """What merging ``head`` into ``base`` does to the tree: the files it adds, changes and deletes since they
    forked, its lines, and the share of the files tracked at the fork point that it deletes (what the commit
    policy holds a mass deletion on).

    {"added": 1, "changed": 2, "deleted": 0, "tracked": 120, "deleted_share": 0.0, "lines_added": 14,
     "lines_deleted": 3}
    """
    fork = repo.run("merge-base", base, head).strip()
    fields = repo.run("diff", "--name-status", "-z", "--no-renames", fork, head).split("\0")
    letters = [status[:1] for status in fields[0:-1:2]]  # "M\0path\0A\0path\0": a status, then its path
    tracked = repo.run("ls-tree", "-r", "-z", "--name-only", fork).count("\0")
    stats = _numstat(repo, fork, head)
    deleted = letters.count("D")
    return {
        "added": letters.count("A"),
        "changed": len(letters) - letters.count("A") - deleted,
        "deleted": deleted,
        "tracked": tracked,
        "deleted_share": round(deleted / tracked, 4) if tracked else 0.0,
        "lines_added": sum(added for added, _, _ in stats),
        "lines_deleted": sum(removed for _, removed, _ in stats),
    }


class Unparsable(Exception):
    """A Python file that is not valid Python (or not UTF-8) at a commit; the message says why."""


class _Trees:
    """Python files at commits, each read and parsed once."""

    def __init__(self, repo: Repo) -> None:
        self.repo = repo
        self._cache: dict[tuple[str, str], ast.Module | Unparsable | None] = {}

    def module(self, commit: str, path: str) -> ast.Module | None:
        """The parsed file, or None when it is not at ``commit``; raises Unparsable."""
        key = (commit, path)
        if key not in self._cache:
            self._cache[key] = self._parse(commit, path)
        found = self._cache[key]
        if isinstance(found, Unparsable):
            raise found
        return found

    def _parse(self, commit: str, path: str) -> ast.Module | Unparsable | None:
        try:
            size = int(self.repo.run("cat-file", "-s", f"{commit}:{path}"))
            if size > MAX_PARSED_BYTES:  # an agent committed it: its tree would take the gateway's memory
                return Unparsable(f"{path} is {size} bytes; the gateway parses Python files up to {MAX_PARSED_BYTES}")
            source = self.repo.run("cat-file", "blob", f"{commit}:{path}")
        except GitError:
            return None
        except UnicodeDecodeError:
            return Unparsable(f"{path} is not UTF-8 text")
        try:
            return ast.parse(source, filename=path)
        except SyntaxError as e:
            return Unparsable(f"{path} does not parse: {e.msg} (line {e.lineno})")
        except (ValueError, RecursionError, MemoryError) as e:  # null bytes; nesting too deep for the parser
            return Unparsable(f"{path} does not parse: {type(e).__name__} {e}")


def _split(entry: str) -> tuple[str, str]:
    """'src/a.py:C.m' -> ('src/a.py', 'C.m'); a path or glob -> (path, '')."""
    path, _, symbol = entry.partition(":")
    return path, symbol


def _lookup(module: ast.Module, symbol: str) -> list[Definition]:
    """The definitions of 'name' at the top of the module, or of 'Class.name' in that class's body (more than
    one when a name is defined again: overloads, a property's setter)."""
    outer, _, inner = symbol.partition(".")
    found = _named(module.body, outer)
    if inner:
        found = [d for cls in found if isinstance(cls, ast.ClassDef) for d in _named(cls.body, inner)]
    return found


def _find(trees: _Trees, commit: str, path: str, symbol: str) -> list[Definition]:
    """The symbol's definitions at ``commit``; [] when it or its file is not there. Raises Unparsable."""
    module = trees.module(commit, path)
    return [] if module is None else _lookup(module, symbol)


def _named(body: Sequence[ast.stmt], name: str) -> list[Definition]:
    return [node for node in body if isinstance(node, DEFINITIONS) and node.name == name]


def _symbol_problem(trees: _Trees, commit: str, path: str, symbol: str) -> str | None:
    try:
        module = trees.module(commit, path)
    except Unparsable as e:
        return str(e)
    if module is None:
        return f"no file {path}"
    if _lookup(module, symbol):
        return None
    cls, _, method = symbol.partition(".")
    if not method:
        return f"no function or class {symbol!r} in {path}"
    if not _lookup(module, cls):
        return f"no class {cls!r} in {path}"
    return f"no method {method!r} in class {cls!r} in {path}"


def _symbol_violations(trees: _Trees, base: str, head: str, path: str, symbol: str) -> list[str]:
    try:
        before = _find(trees, base, path, symbol)
    except Unparsable:
        return []  # nothing to hold to: frozen_problems refuses this at submit
    if not before:
        return []
    try:
        after = _find(trees, head, path, symbol)
    except Unparsable as e:
        return [f"FROZEN_SIGNATURE {path}:{symbol}: {e}"]
    old, new = _interface(before, symbol), _interface(after, symbol)
    if not after:  # one line for a removed class, not one per method
        return [f"FROZEN_SIGNATURE {path}:{symbol}: {old[symbol]} was removed"]
    return [f"FROZEN_SIGNATURE {path}:{name}: {change}" for name, change in _compare(old, new)]


def _compare(old: dict[str, str], new: dict[str, str]) -> list[tuple[str, str]]:
    """(name, what changed) for each entry of two interfaces that differs."""
    changes = []
    for name in sorted(old.keys() | new.keys()):
        if name not in new:
            changes.append((name, f"{old[name]} was removed"))
        elif name not in old:
            changes.append((name, f"{new[name]} was added"))
        elif old[name] != new[name]:
            changes.append((name, f"{old[name]} became {new[name]}"))
    return changes


def _interface(definitions: list[Definition], name: str) -> dict[str, str]:
    """name -> readable signature; a class adds 'name.method' for each public method."""
    if not definitions:
        return {}
    interface = {name: "; ".join(_signature(d) for d in definitions)}
    for cls in definitions:
        if isinstance(cls, ast.ClassDef):
            methods = [d for d in cls.body if isinstance(d, DEFINITIONS) and _is_public_method(d.name)]
            for method in methods:
                interface[f"{name}.{method.name}"] = "; ".join(_signature(d) for d in _named(methods, method.name))
    return interface


def _is_public_method(name: str) -> bool:
    return not name.startswith("_") or name == "__init__"


def _signature(node: Definition) -> str:
    """'@cache async (a, b: int=1, *, c) -> int' for a function, 'class (Base, metaclass=M)' for a class."""
    decorators = "".join(f"@{ast.unparse(d)} " for d in node.decorator_list)
    type_params = getattr(node, "type_params", None)  # Python 3.12+: def f[T](...)
    generic = f"[{', '.join(ast.unparse(p) for p in type_params)}]" if type_params else ""
    if isinstance(node, ast.ClassDef):
        bases = ", ".join(ast.unparse(b) for b in [*node.bases, *node.keywords])
        return f"{decorators}class{generic} ({bases})"
    asynchronous = "async " if isinstance(node, ast.AsyncFunctionDef) else ""
    returns = f" -> {ast.unparse(node.returns)}" if node.returns else ""
    return f"{decorators}{asynchronous}{generic}({ast.unparse(node.args)}){returns}"


def _numstat(repo: Repo, *revisions: str) -> list[tuple[int, int, str]]:
    """(lines added, lines removed, path) per changed file; a binary file counts 0 lines."""
    out = repo.run("diff", "--numstat", "-z", "--no-renames", *revisions)
    rows = []
    for record in filter(None, out.split("\0")):
        added, deleted, path = record.split("\t", 2)
        rows.append((int(added) if added != "-" else 0, int(deleted) if deleted != "-" else 0, path))
    return rows


def _public_changes(
    trees: _Trees, base: str, head: str, paths: list[str]
) -> tuple[list[str], list[dict[str, str]], list[str]]:
    """Public top-level symbols of the Python files in ``paths`` removed and renamed between base and head,
    and the files skipped because one side does not parse."""
    removed: list[str] = []
    renamed: list[dict[str, str]] = []
    unparsable: list[str] = []
    for path in sorted(p for p in paths if p.endswith(".py")):
        try:
            before, after = _public_symbols(trees, base, path), _public_symbols(trees, head, path)
        except Unparsable:
            unparsable.append(path)
            continue
        added = {name: shape for name, shape in after.items() if name not in before}
        for name in sorted(before.keys() - after.keys()):
            twin = next((new for new, shape in added.items() if shape == before[name]), None)
            if twin is None:
                removed.append(f"{path}:{name}")
            else:
                del added[twin]  # each added symbol is the new name of one removed symbol at most
                renamed.append({"from": f"{path}:{name}", "to": f"{path}:{twin}"})
    return removed, renamed, unparsable


def _public_symbols(trees: _Trees, commit: str, path: str) -> dict[str, tuple[tuple[str, str], ...]]:
    """name -> interface with the name taken out (so a renamed symbol compares equal), for the public
    top-level functions and classes of the file ({} when it is not at ``commit``)."""
    module = trees.module(commit, path)
    if module is None:
        return {}
    names = {n.name for n in module.body if isinstance(n, DEFINITIONS) and not n.name.startswith("_")}
    return {
        name: tuple((key.removeprefix(name), sig) for key, sig in _interface(_named(module.body, name), name).items())
        for name in names
    }
