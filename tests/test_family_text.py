"""The text family (gateway/effects/shell/text.py: grep, rg, sed, awk, sort, diff, jq, ...; and the sed/awk script
readers (sed_script.py, awk_program.py)): the facts its programs' commands state and what it makes opaque. Cases are
grouped by the program a command starts with (a pipeline: its fetcher or decoder, else its last program).

Cases run against ``shell_cases.shell_workspace`` (tests/shell_cases.py).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from shell_cases import (
    executes_test,
    file_effects_test,
    no_file_effects_test,
    not_opaque_test,
    opaque_test,
    run,
    shell_workspace,
    with_more_files,
)

from gateway.effects.paths import Workspace
from gateway.effects.shell.awk_program import AwkError, scan_awk
from gateway.effects.shell.sed_script import SedError, parse_sed


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Workspace:
    return shell_workspace(tmp_path, monkeypatch)


FILE_CASES = [
    ("wc -l exists.txt src/a.py", "reads", ["exists.txt", "src/a.py"]),
    ("grep -n foo exists.txt", "reads", ["exists.txt"]),
    ("grep -r TODO src", "reads", ["src"]),
    ("grep -e pattern -- -file", "reads", ["-file"]),
    ("rg secret", "reads", ["."]),
    ("egrep 'a|b' exists.txt", "reads", ["exists.txt"]),
    ("diff a.txt b.txt", "reads", ["a.txt", "b.txt"]),
    ("cmp a b", "reads", ["a", "b"]),
    ("sort -u exists.txt", "reads", ["exists.txt"]),
    ("uniq in.txt", "reads", ["in.txt"]),
    ("sed -n 1,5p exists.txt", "reads", ["exists.txt"]),
    ("sed 'r /etc/passwd' exists.txt", "reads", ["/etc/passwd", "exists.txt"]),
    ("awk '{print $1}' n=1 exists.txt", "reads", ["exists.txt"]),
    ("sed -i 's/a/b/' exists.txt", "writes", ["exists.txt"]),
    ("sed -i.bak -e 's/a/b/' exists.txt", "writes", ["exists.txt"]),
    ("sed -n 'w /etc/x' exists.txt", "creates", ["/etc/x"]),
    ("sed 's/a/b/w out.txt' exists.txt", "creates", ["out.txt"]),
    ("sort -o sorted.txt exists.txt", "creates", ["sorted.txt"]),
    ("uniq in.txt out.txt", "creates", ["out.txt"]),
]


test_file_effects = file_effects_test(FILE_CASES)


NO_FILE_EFFECT_CASES = [
    "grep foo",
]


test_no_file_effects = no_file_effects_test(NO_FILE_EFFECT_CASES)


def test_grep_pattern_is_not_a_path(ws: Workspace) -> None:
    # a recursive grep reads the directory and the files under it; the pattern is no path
    assert run("grep -rn secret src", ws).reads == ["src", "src/a.py"]


OPAQUE_CASES = [
    ("sed 's/a/b/e' exists.txt", "runs commands (e)"),
    ("awk 'BEGIN{system(\"id\")}'", "may run commands"),
    ("awk '{print | \"sh\"}' exists.txt", "may run commands"),
    ("rg --pre ./decode.sh secret", "--pre runs"),
    ("sort --compress-program=sh x", "runs a program"),
]


test_opaque = opaque_test(OPAQUE_CASES)


NOT_OPAQUE_CASES = [
    "sed -n 1,5p exists.txt",
    "sed -i 's/old/new/g' exists.txt",
    "awk '{print $1}' exists.txt | sort | uniq -c",
    "find . -name '*.py' -print | wc -l",
    "diff <(sort a) <(sort b)",
]


test_not_opaque = not_opaque_test(NOT_OPAQUE_CASES)


@pytest.fixture
def files(ws: Workspace) -> Workspace:
    return with_more_files(ws)


def test_a_recursive_read_lists_the_files_under_it(files: Workspace) -> None:
    fx = run("grep -r KEY .", files)
    assert {".", ".env", "server.key", "src/a.py", "exists.txt"} <= set(fx.reads)
    assert run("grep -rn x src", files).reads == ["src", "src/a.py", "src/b.py"]
    assert ".env" not in run("rg KEY", files).reads, "rg skips hidden files"
    assert ".env" in run("rg --hidden KEY", files).reads
    assert ".env" in run("tar czf /tmp/gw-test.tgz .", files).reads


def test_a_recursive_read_skips_symlinks_unless_told(
    files: Workspace, tmp_path_factory: pytest.TempPathFactory
) -> None:
    secret = tmp_path_factory.mktemp("outside") / "secret.txt"
    secret.write_text("s")
    (files.root / "src" / "link").symlink_to(secret)
    assert secret.as_posix() not in run("grep -r x src", files).reads
    assert secret.as_posix() in run("grep -R x src", files).reads


EXECUTES_CASES = [
    ("sed '1e id' exists.txt", "sed", ["id"]),
    ("sed 's/a/b/e' exists.txt", "sed", ["the pattern space, as a command"]),
    ("awk '{print | \"sh\"}' exists.txt", "awk", ["sh"]),
    ("rg --pre ./dec.sh x", "rg", ["./dec.sh"]),
]


test_executes = executes_test(EXECUTES_CASES)


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
