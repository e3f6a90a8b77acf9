"""Built-in file tools: fs_read, fs_list, fs_search, fs_write, fs_edit, fs_delete.

Every path goes through ``Workspace.resolve``: resolved, symlinks followed, and refused when it leaves
the workspace or touches the gateway's own state. The checked path is then acted on through
``Beneath``, which follows no symlink, so one swapped in after the check is refused, never followed.
Writes are atomic (temp file, then rename).

    specs = file_tools(LimitsConfig())
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import anyio
from pydantic import Field

from gateway.config import LimitsConfig
from gateway.effects.beneath import Beneath, Entry
from gateway.effects.paths import Workspace
from gateway.errors import InvalidArguments, PathChanged, Timeout, ToolFailed
from gateway.linear_regex import Pattern, PatternRefused, glob, linear
from gateway.tools.base import Arguments, builtin, json_result, text_result
from gateway.types import ToolInvocation, ToolSpec

if TYPE_CHECKING:
    import mcp_types as mt

T = TypeVar("T")

SKIP_DIRS = {".git", "node_modules", "__pycache__", ".venv"}
MAX_SEARCH_FILE_BYTES = 4 * 1024 * 1024
SEARCH_THREADS = 4  # fs_search calls that run at once (per gateway process); the others wait
SEARCH_CHUNK_BYTES = 256 * 1024  # fs_search looks at its deadline after each chunk of a file it searches
MAX_EDIT_BYTES = 16 * 1024 * 1024  # fs_edit holds the file (and its edited copy) in the gateway's memory


class SearchDeadline(Timeout):
    """fs_search ran past limits.search_timeout_s: refused, with nothing of its partial result."""

    code = "search_deadline"


class ReadArgs(Arguments):
    path: str = Field(description="File to read, relative to the workspace root")
    offset: int = Field(0, ge=0, description="First line to return (0-based)")
    limit: int | None = Field(None, gt=0, description="Maximum number of lines to return")


class ListArgs(Arguments):
    path: str = Field(".", description="Directory to list, relative to the workspace root")
    recursive: bool = Field(False, description="List subdirectories too")
    include_hidden: bool = Field(False, description="Include entries whose name starts with a dot")


class SearchArgs(Arguments):
    pattern: str = Field(
        min_length=1,
        max_length=1000,
        description="Regular expression to find: RE2 syntax, Python's without backreferences or lookaround",
    )
    path: str = Field(".", description="File or directory to search, relative to the workspace root")
    glob: str | None = Field(
        None, max_length=255, description="Only search files whose name matches this glob, e.g. '*.py'"
    )
    ignore_case: bool = Field(False, description="Match case-insensitively")
    fixed_string: bool = Field(False, description="Treat the pattern as a literal string, not a regex")
    max_results: int | None = Field(None, gt=0, description="Stop after this many matching lines")


class WriteArgs(Arguments):
    path: str = Field(description="File to write, relative to the workspace root")
    content: str = Field(description="The complete new content of the file")


class EditArgs(Arguments):
    path: str = Field(description="File to edit, relative to the workspace root")
    old_string: str = Field(min_length=1, description="Exact text to replace; it must occur exactly once")
    new_string: str = Field(description="Text to put in its place")


class DeleteArgs(Arguments):
    path: str = Field(description="File or directory to delete, relative to the workspace root")
    recursive: bool = Field(False, description="Delete a non-empty directory and everything under it")


def file_tools(limits: LimitsConfig) -> list[ToolSpec]:
    searching: list[anyio.CapacityLimiter] = []  # made on first use: a limiter belongs to a running event loop

    async def fs_read(args: ReadArgs, inv: ToolInvocation) -> mt.CallToolResult:
        path = inv.workspace.resolve(args.path)
        data = Beneath(inv.workspace.root).read(path, limits.max_read_bytes + 1)
        truncated = len(data) > limits.max_read_bytes
        text = data[: limits.max_read_bytes].decode("utf-8", errors="replace")
        lines = text.splitlines(keepends=True)
        end = args.offset + args.limit if args.limit else None
        body = "".join(lines[args.offset : end])
        if truncated:
            body += f"\n[truncated: the file is larger than {limits.max_read_bytes} bytes]"
        return text_result(body)

    async def fs_list(args: ListArgs, inv: ToolInvocation) -> mt.CallToolResult:
        root = inv.workspace.resolve(args.path)
        entries: list[str] = []
        shown = _shown(inv.workspace, args.include_hidden)
        with contextlib.closing(Beneath(inv.workspace.root).scan(root, args.recursive, shown)) as found:
            for entry in found:
                rel = entry.path.relative_to(root).as_posix()
                if entry.is_symlink:
                    entries.append(f"{rel}  (symlink)")
                else:
                    entries.append(f"{rel}/" if entry.is_dir else f"{rel}  ({entry.size} bytes)")
                if len(entries) >= limits.list_entries:
                    entries.append(f"[stopped after {limits.list_entries} entries]")
                    break
        return text_result("\n".join(entries) if entries else "(empty directory)")

    async def fs_search(args: SearchArgs, inv: ToolInvocation) -> mt.CallToolResult:
        base = inv.workspace.resolve(args.path)
        lines = _compiled("pattern", lambda: LineSearch.of(args.pattern, args.ignore_case, args.fixed_string))
        names = _compiled("glob", lambda: glob(args.glob)) if args.glob else None
        cap = min(args.max_results or limits.search_results, limits.search_results)
        tree = Beneath(inv.workspace.root)
        # RE2 is linear in the text, not instant: a pattern its cache cannot hold runs at the speed of its
        # slow path over a large tree; the deadline is checked between files, chunks and lines
        deadline = time.monotonic() + limits.search_timeout_s

        def candidates() -> Iterator[Path]:
            found = tree.lstat(base)
            if not stat.S_ISDIR(found.st_mode):
                yield base
                return
            with contextlib.closing(tree.scan(base, True, _shown(inv.workspace, include_hidden=False))) as entries:
                yield from (e.path for e in entries if not e.is_dir and not e.is_symlink)

        def on_time() -> None:
            if time.monotonic() > deadline:
                raise SearchDeadline(
                    f"pattern {args.pattern[:80]!r} took longer than {limits.search_timeout_s:g} s over "
                    f"{inv.workspace.display(base)!r}; refused (limits.search_timeout_s). Narrow it with 'path' "
                    "or 'glob'."
                )

        def search() -> list[str]:
            hits: list[str] = []
            for path in candidates():
                on_time()
                if names is not None and names.fullmatch(path.name) is None:
                    continue
                try:
                    data = tree.read(path, MAX_SEARCH_FILE_BYTES + 1)
                except PathChanged:
                    raise
                except ToolFailed:
                    continue  # removed since the listing, or not a regular file
                if len(data) > MAX_SEARCH_FILE_BYTES or b"\x00" in data[:8192]:
                    continue  # too large, or binary
                rel = inv.workspace.display(path)
                for number, line in lines.matching(data.decode("utf-8", errors="replace"), on_time):
                    hits.append(f"{rel}:{number}: {line[:400]}")
                    if len(hits) >= cap:
                        hits.append(f"[stopped after {cap} matches]")
                        return hits
            return hits

        # searches share a few threads of their own: at their deadlines, hostile ones cannot take the threads
        # every other to_thread user (git, checkpoints, the store) waits on; waiting counts against the deadline
        searching[:] = searching or [anyio.CapacityLimiter(SEARCH_THREADS)]
        hits = await anyio.to_thread.run_sync(search, limiter=searching[0])
        return text_result("\n".join(hits) if hits else "no matches")

    async def fs_write(args: WriteArgs, inv: ToolInvocation) -> mt.CallToolResult:
        path = inv.workspace.resolve(args.path)
        data = args.content.encode("utf-8")
        existed = Beneath(inv.workspace.root).write(path, data)
        verb = "overwrote" if existed else "created"
        return json_result({"path": inv.workspace.display(path), "action": verb, "bytes": len(data)})

    async def fs_edit(args: EditArgs, inv: ToolInvocation) -> mt.CallToolResult:
        path = inv.workspace.resolve(args.path)
        tree = Beneath(inv.workspace.root)
        data = tree.read(path, MAX_EDIT_BYTES + 1)
        if len(data) > MAX_EDIT_BYTES:
            raise ToolFailed(
                f"{args.path!r} is larger than {MAX_EDIT_BYTES} bytes, more than fs_edit edits; nothing changed"
            )
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise ToolFailed(f"{args.path!r} is not UTF-8 text; nothing changed") from None
        count = text.count(args.old_string)
        if count == 0:
            raise ToolFailed(f"old_string was not found in {args.path!r}; nothing changed")
        if count > 1:
            raise ToolFailed(
                f"old_string occurs {count} times in {args.path!r}; include more surrounding text so it "
                "matches exactly once. Nothing changed."
            )
        tree.write(path, text.replace(args.old_string, args.new_string, 1).encode("utf-8"))
        return json_result({"path": inv.workspace.display(path), "action": "edited", "replacements": 1})

    async def fs_delete(args: DeleteArgs, inv: ToolInvocation) -> mt.CallToolResult:
        path = inv.workspace.resolve(args.path)
        if path == inv.workspace.root:
            raise InvalidArguments("argument 'path': refusing to delete the workspace root")
        Beneath(inv.workspace.root).delete(path, args.recursive)
        return json_result({"path": inv.workspace.display(path), "action": "deleted"})

    return [
        builtin(
            "fs_read",
            "Read a UTF-8 text file from the workspace. Optional offset/limit select a range of lines.",
            ReadArgs,
            fs_read,
            roles={"path": "read"},
            read_only=True,
        ),
        builtin(
            "fs_list",
            "List the entries of a workspace directory (directories end with '/'), optionally recursively.",
            ListArgs,
            fs_list,
            roles={"path": "read"},
            read_only=True,
        ),
        builtin(
            "fs_search",
            "Search workspace files for lines matching a regular expression (grep-like). "
            "Answers 'path:line: text' lines.",
            SearchArgs,
            fs_search,
            roles={"path": "read"},
            read_only=True,
        ),
        builtin(
            "fs_write",
            "Create or overwrite a workspace file with the given content (parent directories are created).",
            WriteArgs,
            fs_write,
            roles={"path": "write"},
        ),
        builtin(
            "fs_edit",
            "Replace one exact occurrence of old_string with new_string in a workspace file. "
            "Refuses when old_string is missing or occurs more than once.",
            EditArgs,
            fs_edit,
            roles={"path": "write"},
        ),
        builtin(
            "fs_delete",
            "Delete a workspace file or empty directory; recursive=true deletes a directory tree.",
            DeleteArgs,
            fs_delete,
            roles={"path": "delete"},
            destructive=True,
        ),
    ]


class LineSearch:
    """The lines of a text a pattern finds, as grep finds them: lines end at '\\n' ('\\r\\n' counts as one).

    Calling RE2 from Python costs microseconds a call, ten times ``re``'s, so a text is searched whole first
    (``anywhere``: the pattern with '^' and '$' at line ends) and only the lines where that search lands are
    searched one by one. A line's match is a match in the text at the same place, so no line is skipped;
    ``anywhere`` is None for a pattern it cannot stand in for (a literal, a text anchor, ``(?-m)``). The text
    is searched as UTF-8 bytes, encoded once: RE2's module encodes a str again on every call."""

    def __init__(self, line: Pattern, anywhere: Pattern | None) -> None:
        self.line = line
        self.anywhere = anywhere

    @classmethod
    def of(cls, source: str, ignore_case: bool = False, literal: bool = False) -> LineSearch:
        """The search for ``source``; raises PatternRefused."""
        line = linear(source, ignore_case=ignore_case, literal=literal)
        return cls(line, None if literal else _anywhere(source, ignore_case))

    def matching(self, text: str, on_time: Callable[[], None]) -> Iterator[tuple[int, str]]:
        data = text.replace("\r\n", "\n").encode()
        end = len(data) - 1 if data.endswith(b"\n") else len(data)  # no empty line after the last '\\n'
        start, number = 0, 1
        while start < end or (start == end and data):
            on_time()
            if self.anywhere is not None:
                # a chunk of whole lines at a time, so that the deadline is looked at between chunks
                reach = data.find(b"\n", min(start + SEARCH_CHUNK_BYTES, len(data)))
                reach = len(data) if reach < 0 else reach
                found = self.anywhere.search(data, start, reach)
                if found is None:
                    number += data.count(b"\n", start, reach + 1)
                    start = reach + 1
                    continue
                if found.start() > end:
                    return
                line_start = data.rfind(b"\n", 0, found.start()) + 1
                number += data.count(b"\n", start, line_start)
                start = line_start
            stop = data.find(b"\n", start)
            stop = len(data) if stop < 0 else stop
            if self.line.search(data[start:stop]):
                yield number, data[start:stop].decode()
            start, number = stop + 1, number + 1


def _anywhere(source: str, ignore_case: bool) -> Pattern | None:
    """``source`` with '^' and '$' at every line end, to search a whole text; None where it would not find
    every line that ``source`` finds in a line (text anchors, multi-line mode turned off)."""
    if "\\A" in source or "\\z" in source or re.search(r"\(\?[imsU]*-[imsU]*m", source):
        return None
    try:
        return linear(f"(?m){source}", ignore_case=ignore_case)
    except PatternRefused:
        return None


def _compiled(argument: str, compile_: Callable[[], T]) -> T:
    try:
        return compile_()
    except PatternRefused as exc:
        raise InvalidArguments(f"argument '{argument}': {exc}") from None


def _shown(workspace: Workspace, include_hidden: bool) -> Callable[[Entry], bool]:
    """Which entries a listing shows: no protected paths, VCS internals or symlinks that leave the workspace."""

    def shown(entry: Entry) -> bool:
        name = entry.path.name
        if (name.startswith(".") and not include_hidden) or (entry.is_dir and name in SKIP_DIRS):
            return False
        # a symlink is shown, never followed: where it points only decides whether its name is shown
        real = Path(os.path.realpath(entry.path)) if entry.is_symlink else entry.path
        return workspace.contains(real) and not workspace.is_protected(real)

    return shown
