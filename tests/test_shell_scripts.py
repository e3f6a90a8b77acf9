"""The sed script parser and the awk lexer on their own: what a script reads, writes and runs.

Real GNU sed agrees with the parser on the cases marked ``gnu``: the test runs them through
``sed --debug`` (which parses and prints the program without running it) when GNU sed is there.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest

from gateway.effects.shell.awk_program import AwkError, scan_awk
from gateway.effects.shell.sed_script import SedError, parse_sed

SED_CASES = [
    # (script, reads, writes, runs)
    ("p", [], [], []),
    ("1,5p", [], [], []),
    ("s/a/b/g", [], [], []),
    ("s/a/b/w out.txt", [], ["out.txt"], []),
    ("s|a|b|gw /tmp/x", [], ["/tmp/x"], []),
    ("s/a/b/e", [], [], [""]),
    ("s/a/b/Ie", [], [], [""]),
    ("s/[/]/x/w /tmp/y", [], ["/tmp/y"], []),
    ("s/[]/]/x/", [], [], []),
    ("s/[[:alpha:]/]/x/", [], [], []),
    ("s/a\\/b/c/w f", [], ["f"], []),
    ("1etouch /tmp/x", [], [], ["touch /tmp/x"]),
    ("1 e id", [], [], ["id"]),
    ("1!e id", [], [], ["id"]),
    ("$!{e id\n}", [], [], ["id"]),
    ("e", [], [], [""]),
    ("s/a/b/;e id; echo x", [], [], ["id; echo x"]),
    ("w /tmp/x", [], ["/tmp/x"], []),
    ("/x/w out; p", [], ["out; p"], []),
    ("1W /tmp/x", [], ["/tmp/x"], []),
    ("r /etc/passwd", ["/etc/passwd"], [], []),
    ("1R /etc/shadow", ["/etc/shadow"], [], []),
    ("a hello; w /tmp/q", [], [], []),
    ("a\\\nhello\\\nw /tmp/q", [], [], []),
    ("i\\\n  text", [], [], []),
    ("$a foo", [], [], []),
    ("c\\\nx", [], [], []),
    (":a;N;$!ba;s/\\n/ /g", [], [], []),
    ("/x/!{p;d}", [], [], []),
    ("/x/I,/y/Mp", [], [], []),
    ("0,/re/d", [], [], []),
    ("1~2p", [], [], []),
    ("/x/,+3d", [], [], []),
    ("/x/,~4d", [], [], []),
    ("y/abc/xyz/", [], [], []),
    ("y/a\\/b/xyz/", [], [], []),
    ("#n\np", [], [], []),
    ("# a comment; w /tmp/x\np", [], [], []),
    ("q5", [], [], []),
    ("l 20", [], [], []),
    ("=", [], [], []),
    ("\\%x%p", [], [], []),
    ("\\%x%w /tmp/x", [], ["/tmp/x"], []),
    ("2{\ns/a/b/w o1\nw o2\n}", [], ["o1", "o2"], []),
    ("F;z;x;h;H;g;G;n;N;D;P", [], [], []),
    ("v 4.2", [], [], []),
    ("btarget;:target", [], [], []),
]

SED_ERRORS = ["s/a/b", "s/a[/x/", "{p", "p}", "x;y", "k", "r", "w", "s/a/b/q", ":", "1,", "/x"]


@pytest.mark.parametrize(("script", "reads", "writes", "runs"), SED_CASES, ids=[c[0] for c in SED_CASES])
def test_sed_script(script: str, reads: list[str], writes: list[str], runs: list[str]) -> None:
    found = parse_sed(script)
    assert (found.reads, found.writes, found.runs) == (reads, writes, runs)


@pytest.mark.parametrize("script", SED_ERRORS)
def test_sed_scripts_that_do_not_parse(script: str) -> None:
    with pytest.raises(SedError):
        parse_sed(script)


@pytest.mark.skipif(shutil.which("sed") is None, reason="no sed on this machine")
@pytest.mark.parametrize("script", [c[0] for c in SED_CASES if not c[2] and not c[3] and not c[1]])
def test_gnu_sed_accepts_what_the_parser_accepts(script: str) -> None:
    """Scripts the parser reads as harmless are ones GNU sed runs (on empty input, no output)."""
    version = subprocess.run(["sed", "--version"], capture_output=True, text=True).stdout
    if "GNU" not in version:
        pytest.skip("not GNU sed")
    result = subprocess.run(["sed", "-n", "--sandbox", script], input="", capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


@pytest.mark.skipif(shutil.which("sed") is None, reason="no sed on this machine")
@pytest.mark.parametrize("script", [c[0] for c in SED_CASES if c[1] or c[2] or c[3]])
def test_gnu_sed_sandbox_refuses_what_the_parser_flags(script: str) -> None:
    """GNU sed's --sandbox refuses e/r/w: the scripts the parser says read, write or run are refused."""
    version = subprocess.run(["sed", "--version"], capture_output=True, text=True).stdout
    if "GNU" not in version:
        pytest.skip("not GNU sed")
    result = subprocess.run(["sed", "-n", "--sandbox", script], input="", capture_output=True, text=True)
    assert result.returncode != 0 and "sandbox" in result.stderr, (result.returncode, result.stderr)


AWK_CASES = [
    # (program, reads, writes, runs, doubts?)
    ("{print $1}", [], [], [], False),
    ("NR==1", [], [], [], False),
    ('{print "}" > "/tmp/x"}', [], ["/tmp/x"], [], False),
    ('{print > "out.txt"}', [], ["out.txt"], [], False),
    ('{printf "%s", $0 >> "log"}', [], ["log"], [], False),
    ('{ printf("%s > %s", $1, $2) > "o" }', [], ["o"], [], False),
    ("{ print (a > b) }", [], [], [], False),
    ("{ x = 1 / 2; print x }", [], [], [], False),
    ('/}/ { print > "/tmp/x" }', [], ["/tmp/x"], [], False),
    ('/a\\/b/ { print "x" }', [], [], [], False),
    ('# } > "/tmp/x"\n{ print }', [], [], [], False),
    ('{ x = "a|b"; print x }', [], [], [], False),
    ('{ getline line < "/etc/passwd" }', ["/etc/passwd"], [], [], False),
    ("{ while ((getline l) > 0) n++ }", [], [], [], False),
    ('{print | "sh"}', [], [], ["sh"], True),
    ('BEGIN { "id" | getline x }', [], [], ["id"], True),
    ('{ print $0 |& "cat" }', [], [], ["cat"], True),
    ('BEGIN{system("id")}', [], [], [], True),
    ('BEGIN { print ENVIRON["HOME"] }', [], [], [], True),
    ('BEGIN { print PROCINFO["pid"] }', [], [], [], True),
    ('@load "filefuncs"', [], [], [], True),
    ('@include "x.awk"', [], [], [], True),
    ('BEGIN { f = "system"; @f("id") }', [], [], [], True),
    ("{ print > $1 }", [], [], [], True),
    ('{ print "a" > "b" "c" }', [], [], [], True),
    ("{ getline x < f }", [], [], [], True),
]


@pytest.mark.parametrize(("program", "reads", "writes", "runs", "doubts"), AWK_CASES, ids=[c[0] for c in AWK_CASES])
def test_awk_program(program: str, reads: list[str], writes: list[str], runs: list[str], doubts: bool) -> None:
    found = scan_awk(program)
    assert (found.reads, found.writes, found.runs, bool(found.doubts)) == (reads, writes, runs, doubts)


@pytest.mark.parametrize("program", ['{ print "x }', "{ print /x }", '{ print "a\n" }'])
def test_awk_programs_that_do_not_tokenise(program: str) -> None:
    with pytest.raises(AwkError):
        scan_awk(program)
