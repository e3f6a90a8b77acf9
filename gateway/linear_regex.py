"""Regular expressions an agent or an upstream wrote (or shaped), run by a linear-time engine: RE2.

Python's ``re`` backtracks: ``(a+)+$`` over 27 characters runs for minutes, and ``re`` holds the GIL while
it matches, so one ``fs_search`` froze every agent's calls, off the event loop or not. RE2 (google-re2)
matches in time linear in the text, caps the memory a pattern compiles to (``MAX_MEMORY``; a larger one is
refused, where the ``regex`` package's expansion of ``(?:a{65535}){65535}`` took all the host's memory),
and releases the GIL while it matches. Its syntax is Python's without backreferences, lookaround,
possessive quantifiers or ``\\Z`` (RE2 spells it ``\\z``), with repetition counts up to 1000, and ``\\d``,
``\\w``, ``\\s`` and ``\\b`` are ASCII-only; a pattern outside it is refused with that said.

    pattern = linear("def \\w+", ignore_case=True)   # raises PatternRefused
    pattern.search(line)
    glob("src/**/*.py").fullmatch("src/a/b.py")     # a glob, as RE2 runs it: '**' crosses '/', '*' does not
    task_glob("src/**/*.py").fullmatch("src/a.py")  # a task's glob, as the policy reads it on every engine
"""

from __future__ import annotations

from typing import Any

import re2

__all__ = ["MAX_MEMORY", "SYNTAX", "PatternRefused", "glob", "linear", "task_glob"]

# What one pattern's program and match caches may use. RE2's module keeps the last 128 patterns compiled,
# so patterns agents choose pin at most 128 times this.
MAX_MEMORY = 1 << 20
SYNTAX = (
    "RE2 syntax (linear time): Python's without backreferences, lookaround or possessive quantifiers, "
    "\\z for \\Z, repetition counts up to 1000"
)

Pattern = Any  # re2._Regexp: search/match/fullmatch like re.Pattern; the module exports no type for it


class PatternRefused(ValueError):
    """A pattern RE2 will not run: outside its syntax, or larger than MAX_MEMORY allows."""


def linear(source: str, *, ignore_case: bool = False, literal: bool = False) -> Pattern:
    """``source`` compiled by RE2, case-insensitive or as a literal string if asked."""
    options = re2.Options()
    options.log_errors = False  # RE2 would print every refused pattern on the gateway's stderr
    options.max_mem = MAX_MEMORY
    options.case_sensitive = not ignore_case
    options.literal = literal
    try:
        return re2.compile(source, options)
    except re2.error as exc:
        reason = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise PatternRefused(f"{reason} ({SYNTAX})") from None


def glob(pattern: str) -> Pattern:
    """A '/'-separated glob as a pattern for ``fullmatch``: '**' matches any characters, '/' included ('**/'
    also matches no directory at all, so 'src/**/a.py' covers 'src/a.py'); '*' and '?' stay within one path
    segment; '[abc]' and '[!abc]' are character classes; everything else is literal."""
    out: list[str] = ["(?s)"]
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] in "*?":
            out.append("[^/]*" if pattern[i] == "*" else "[^/]")
            i += 1
        elif pattern[i] == "[" and (end := pattern.find("]", i + 2)) > 0:
            members = pattern[i + 1 : end]
            # ranges (a-z) stay; what would mean something else inside a class is escaped
            body = "".join(f"\\{c}" if c in "\\[]^&~|" else c for c in members.removeprefix("!"))
            out.append(f"[{'^' if members.startswith('!') else ''}{body}]")
            i = end + 1
        else:
            out.append(re2.escape(pattern[i]))
            i += 1
    return linear("".join(out))


def task_glob(pattern: str) -> Pattern:
    """A task's glob (allowed paths, acceptance, frozen) as a pattern for ``fullmatch``: '**' as a whole segment
    matches any number of directories, none included ('src/**/a.py' covers 'src/a.py', '**/x' covers 'x'), and
    at the end everything below; '*' matches any run of characters within one segment ('**' inside a name too)
    and '?' one character; everything else, '[', '{' and '\\' included, is literal. The policy reads a task's
    globs the same way on every Rego engine (policies/lib/portable.rego, task_glob_regex), which glob.match does
    not: its '**/' needs a directory in OPA and none in regorus."""
    segments = pattern.split("/")
    out: list[str] = ["(?s)"]
    for i, segment in enumerate(segments):
        last = i == len(segments) - 1
        if segment == "**":
            out.append(".*" if last else "(?:.*/)?")
            continue
        out.extend("[^/]*" if ch == "*" else "[^/]" if ch == "?" else re2.escape(ch) for ch in segment)
        if not last:
            out.append("/")
    return linear("".join(out))
