"""Patterns an agent or an upstream wrote are matched in linear time, with a deadline, off the event loop.

The red team's fs_search with ``(a+)+$`` over 27 characters froze the gateway for every agent: Python's ``re``
backtracks and holds the GIL while it does. These tests run real searches through real gateways: the
catastrophic pattern is answered at once, one that RE2 cannot run is refused with the reason, and a search
that is merely slow (RE2's slow path over megabytes) is refused at its deadline while another client's calls
go on being answered. Upstream schemas, URI templates and frozen globs (all written by someone the gateway
does not trust) are matched the same way."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import add_role, http_client, http_gateway, inproc_client, ledger_rows, reconfigure, text_of, token

from gateway.effects.shell.words import BRACE, GLOB
from gateway.linear_regex import PatternRefused, linear
from gateway.runtime import Gateway
from gateway.tasks.drift import matches
from gateway.tools import files
from gateway.tools.files import LineSearch
from gateway.tools.upstream import template_regex
from gateway.tools.upstream_schema import SchemaRefused, upstream_validator

pytestmark = pytest.mark.anyio


@pytest.fixture
def searcher(config: Any) -> tuple[Gateway, str]:
    add_role(config, "searcher", ["fs_search", "fs_read"], max_tier=1)
    return Gateway(config), token(config, "searcher", agent="s1")


async def test_the_red_teams_pattern_is_answered_at_once(searcher: tuple[Gateway, str], repo: Path) -> None:
    gateway, bearer = searcher
    (repo / "as.txt").write_text(("a" * 27 + "!\n") * 200 + "aaa\n")
    async with inproc_client(gateway, bearer) as client:
        # in `re` this is 2**27 steps for each of 200 lines; RE2 has no backtracking to do
        result = await client.call_tool("fs_search", {"pattern": "(a+)+$", "path": "as.txt"})
    assert not result.is_error and text_of(result) == "as.txt:201: aaa"


@pytest.mark.parametrize(
    ("arguments", "why"),
    [
        ({"pattern": r"(\w+) \1"}, "invalid escape sequence"),  # a backreference
        ({"pattern": "foo(?=bar)"}, "invalid perl operator"),  # lookahead
        ({"pattern": "(?:a{65535}){65535}"}, "invalid repetition size"),  # took all memory in the `regex` package
        ({"pattern": "x", "glob": "[z-a].py"}, "invalid character class range"),
    ],
)
async def test_a_pattern_outside_re2_is_refused_with_the_reason(
    searcher: tuple[Gateway, str], arguments: dict[str, str], why: str
) -> None:
    gateway, bearer = searcher
    async with inproc_client(gateway, bearer) as client:
        result = await client.call_tool("fs_search", arguments)
    assert result.is_error and result.structured_content["error"]["code"] == "invalid_arguments"
    argument = "glob" if "glob" in arguments else "pattern"
    assert f"argument '{argument}'" in text_of(result) and why in text_of(result) and "RE2 syntax" in text_of(result)
    row = ledger_rows(gateway)[-1]
    assert row.tool == "fs_search" and row.outcome == "invalid" and row.detail["error"]["code"] == "invalid_arguments"


async def test_a_slow_search_is_refused_at_its_deadline_while_another_client_is_served(config: Any, repo: Path) -> None:
    config = reconfigure(config, limits={"search_timeout_s": 1.0})
    add_role(config, "searcher", ["fs_search", "fs_read"], max_tier=1)
    # seconds of searching (slow_files), looked at against the deadline every 256 KiB
    slow_files(repo)
    done: list[str] = []
    results: dict[str, Any] = {}
    with http_gateway(config.source) as url:
        async with (
            http_client(url, token(config, "searcher", agent="slow")) as slow,
            http_client(url, token(config, "searcher", agent="other")) as other,
        ):

            async def bad_search() -> None:
                results["slow"] = await slow.call_tool("fs_search", {"pattern": SLOW, "glob": "big*.txt"})
                done.append("slow")

            async def other_calls() -> None:
                for i in range(10):
                    results[i] = await other.call_tool("fs_read", {"path": "README.md"})
                    done.append(f"other{i}")

            async with anyio.create_task_group() as tg:
                tg.start_soon(bad_search)
                await anyio.sleep(0.2)  # the search's request is on its way first (the result holds either way)
                tg.start_soon(other_calls)

    assert done[-1] == "slow", f"the other client waited for the search: {done}"
    assert all(not results[i].is_error and "# demo repo" in text_of(results[i]) for i in range(10))
    slow_result = results["slow"]
    assert slow_result.is_error and slow_result.structured_content["error"]["code"] == "search_deadline"
    assert "took longer than 1 s" in text_of(slow_result) and "refused" in text_of(slow_result)
    row = next(r for r in ledger_rows(Gateway(config)) if r.tool == "fs_search")
    assert row.outcome == "error" and row.detail["error"]["code"] == "search_deadline"


async def test_searches_beyond_their_threads_wait_and_are_refused_at_their_deadline(config: Any, repo: Path) -> None:
    config = reconfigure(config, limits={"search_timeout_s": 1.0})
    add_role(config, "searcher", ["fs_search"], max_tier=1)
    slow_files(repo)
    gateway = Gateway(config)
    results: list[Any] = []
    async with inproc_client(gateway, token(config, "searcher")) as client:

        async def search() -> None:
            results.append(await client.call_tool("fs_search", {"pattern": SLOW, "glob": "big*.txt"}))

        async with anyio.create_task_group() as tg:
            for _ in range(files.SEARCH_THREADS + 2):  # two wait for a thread, past their deadline
                tg.start_soon(search)
    assert [r.structured_content["error"]["code"] for r in results] == ["search_deadline"] * (files.SEARCH_THREADS + 2)


def slow_files(repo: Path) -> None:
    """8 MB of random a/b in 4 KiB lines, two files (fs_search reads files up to 4 MiB) that SLOW searches
    slowly: RE2's DFA for it needs more states than a pattern may hold, so it runs on its slow path (about a
    second per MB here); nothing matches, so a search would read it all."""
    ab = bytes(97 + (i & 1) for i in range(256))
    for name in ("big1.txt", "big2.txt"):
        (repo / name).write_bytes(b"\n".join(os.urandom(4096).translate(ab) for _ in range(1000)))


def test_upstream_schema_patterns_are_matched_by_re2() -> None:
    # a sentence with a full stop: exponential in `re` (about 2**40 steps here), linear in RE2
    words = {"type": "object", "properties": {"text": {"type": "string", "pattern": r"^(\w+\s?)*$"}}}
    errors = list(upstream_validator(words).iter_errors({"text": "word " * 40 + "."}))
    assert len(errors) == 1 and "does not match" in errors[0].message
    assert not list(upstream_validator(words).iter_errors({"text": "word " * 40}))
    # lookahead (zod's e-mail has it) is left to the upstream, which checks its own input: nothing refused here
    email = {"type": "object", "properties": {"to": {"type": "string", "pattern": r"^(?!\.)[^@]+@[^@]+$"}}}
    assert not list(upstream_validator(email).iter_errors({"to": ".not-checked-here"}))
    named = {
        "type": "object",
        "patternProperties": {r"^(x+x+)+y$": {"type": "integer"}},
        "additionalProperties": False,
    }
    assert not list(upstream_validator(named).iter_errors({"xxy": 1}))
    messages = [e.message for e in upstream_validator(named).iter_errors({"xxy": "one", "x" * 40: 2})]
    assert len(messages) == 2 and any("not of type 'integer'" in m for m in messages)
    assert any("Additional properties are not allowed" in m for m in messages)
    with pytest.raises(SchemaRefused, match="unevaluatedProperties"):
        upstream_validator({**named, "unevaluatedProperties": False})


def test_uri_templates_and_frozen_globs_are_matched_in_linear_time() -> None:
    # each variable of a template and each '**' of a glob is one more nested loop for `re` on a miss
    template = linear(template_regex("file:///{a}-{b}-{c}-{d}-{e}-{f}-{g}.txt"))
    assert template.fullmatch("file:///1-2-3-4-5-6-7.txt") is not None
    assert template.fullmatch("file:///" + "-" * 5000 + ".tx") is None
    assert matches("**a**a**a**a**a**a**a**b", "a" * 3000) is False
    assert matches("src/**/a.py", "src/x/y/a.py") is True


def test_refusals_name_the_syntax() -> None:
    with pytest.raises(PatternRefused, match="lookaround"):
        linear("(?<=x)y")


SLOW = "(a|b)*a(a|b){20}c"
TEXT = "alpha\r\nbeta gamma\n\n  \nab ba\ncaf\ufffd b\nlast"


@pytest.mark.parametrize(
    "source",
    [r"^a", r"a$", r"^$", r"^\s*$", r"a\s+b", r"\bab\b", r"(?i)BETA", r"\Aab", r"a\z", r"(?-m)^b", r"x*", r"."],
)
def test_a_text_is_searched_whole_and_finds_the_lines_a_line_by_line_search_finds(
    source: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # fs_search finds lines with one RE2 call per chunk of a file, then searches the lines it lands on: the
    # same lines as a search of each line (grep's lines: '\n' ends one, '\r\n' too, no empty line after
    # the last '\n'), chunk boundaries anywhere
    monkeypatch.setattr(files, "SEARCH_CHUNK_BYTES", 3)
    line = linear(source)
    expected = [(n, text) for n, text in enumerate(TEXT.replace("\r\n", "\n").split("\n"), 1) if line.search(text)]
    assert list(LineSearch.of(source).matching(TEXT, lambda: None)) == expected
    assert list(LineSearch.of(source).matching(TEXT + "\n", lambda: None)) == expected
    assert list(LineSearch.of(source).matching("", lambda: None)) == []


def test_the_shell_analysis_finds_braces_and_globs_in_linear_time() -> None:
    # a word of a command an agent sends: in `re` these searches were quadratic ('{' and 16 KiB of '.': 3 s
    # with the GIL held, every agent waiting); RE2 answers in microseconds, the same answers
    assert BRACE.search("{" + "." * 16_000) is None and GLOB.search("[" * 16_000) is None
    assert all(BRACE.search(w) for w in ("{a,b}", "x{1..3}", "\x00{a,b\x00}"))
    assert not any(BRACE.search(w) for w in ("{a}", "{}", "a,b"))
    assert all(GLOB.search(w) for w in ("a*", "?", "[ab]", "[[]"))
    assert not any(GLOB.search(w) for w in ("[]", "a]", "plain"))
