"""The walk of a command string: quote removal, command splitting, via, cd tracking, redirections and
streams, heredocs, globs, bounds, and what the walk itself makes opaque (whatever the program).

Cases run against ``shell_cases.shell_workspace`` (tests/shell_cases.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from shell_cases import (
    HOME,
    argvs,
    command,
    fact,
    file_effects_test,
    no_file_effects_test,
    not_opaque_test,
    opaque_test,
    outside,
    run,
    shell_workspace,
    vias,
)

from gateway.effects.paths import Workspace
from gateway.effects.shell import MAX_COMMAND_BYTES, MAX_COMMANDS, describe_command


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Workspace:
    return shell_workspace(tmp_path, monkeypatch)


ARGV_CASES = [
    ("\\rm -rf /", [["rm", "-rf", "/"]]),
    ("r''m x", [["rm", "x"]]),
    ('"r"m x', [["rm", "x"]]),
    ('r""m x', [["rm", "x"]]),
    ("$'\\x72m' x", [["rm", "x"]]),
    ("$'\\162m' x", [["rm", "x"]]),
    ("ls;rm x", [["ls"], ["rm", "x"]]),
    ("ls&&rm x", [["ls"], ["rm", "x"]]),
    ("ls||rm x", [["ls"], ["rm", "x"]]),
    ("ls\nrm x", [["ls"], ["rm", "x"]]),
    ("echo 'a b' \"c d\" e\\ f", [["echo", "a b", "c d", "e f"]]),
    ('echo "a\\"b\\$c\\\\d"', [["echo", 'a"b$c\\d']]),
    ('echo "x\ny"', [["echo", "x\ny"]]),
    ("echo 'x\\ny'", [["echo", "x\\ny"]]),
    ("echo $'a\\tb\\n'", [["echo", "a\tb\n"]]),
    ("echo $'it\\'s'", [["echo", "it's"]]),
    ("echo '#' \"#x\" # rm -rf /", [["echo", "#", "#x"]]),
    ("echo a # rm -rf /", [["echo", "a"]]),
    ("# only a comment", []),
    ("rm -rf \\\n  build", [["rm", "-rf", "build"]]),
    ('echo "$HOME" ${HOME}/x', [["echo", HOME, f"{HOME}/x"]]),
    ("cat ~/.ssh/id_rsa", [["cat", f"{HOME}/.ssh/id_rsa"]]),
    ("echo '~' \"~\"", [["echo", "~", "~"]]),
    ("echo \\$HOME", [["echo", "$HOME"]]),
    ("A=1 B=2 env", [["env"]]),
    ('$"printf" x', [["printf", "x"]]),
    ("find . -exec rm {} \\;", [["find", ".", "-exec", "rm", "{}", ";"], ["rm", "."]]),
    ("(ls; pwd)", [["ls"], ["pwd"]]),
    ("{ ls; pwd; }", [["ls"], ["pwd"]]),
    ("! grep -q x exists.txt", [["grep", "-q", "x", "exists.txt"]]),
    ("echo $((1+2))", [["echo", "$((1+2))"]]),
    ("[[ -f a && -n $(id) ]] && echo ok", [["id"], ["echo", "ok"]]),
    ("[ -d dir ] || mkdir dir", [["mkdir", "dir"]]),
    ("for f in a b; do echo $f; done", [["echo", "$f"]]),
    ("for ((i=0; i<3; i++)); do echo $i; done", [["echo", "$i"]]),
    ("while read l; do echo $l; done < exists.txt", [["read", "l"], ["echo", "$l"]]),
    ("until false; do break; done", [["false"], ["break"]]),
    ("if true; then a; elif b; then c; else d; fi", [["true"], ["a"], ["b"], ["c"], ["d"]]),
    ("case $x in a|b) one;; *) two;; esac", [["one"], ["two"]]),
    ("f() { rm -rf build; }; f", [["rm", "-rf", "build"], ["f"]]),
    ("function g { ls; }", [["ls"]]),
    ("export A=1 B", [["export", "A=1", "B"]]),
    ("local x=$(id)", [["id"], ["local", "x=$(id)"]]),
    ("unset A", [["unset", "A"]]),
    ("> f", [[]]),
    ("x=$(whoami)", [["whoami"]]),
    ("echo `id` $(date)", [["id"], ["date"], ["echo", "`id`", "$(date)"]]),
]


@pytest.mark.parametrize(("command", "expected"), ARGV_CASES, ids=[c for c, _ in ARGV_CASES])
def test_argv(command: str, expected: list[list[str]], ws: Workspace) -> None:
    assert argvs(run(command, ws)) == expected


VIA_CASES = [
    ("a | b | c", [("a", "direct"), ("b", "pipe"), ("c", "pipe")]),
    ("a |& b", [("a", "direct"), ("b", "pipe")]),
    ("echo $(id)", [("id", "subst"), ("echo", "direct")]),
    ("echo `id`", [("id", "subst"), ("echo", "direct")]),
    ("diff <(ls a) >(cat)", [("ls", "procsubst"), ("cat", "procsubst"), ("diff", "direct")]),
    ("sleep 1 &", [("sleep", "background")]),
    ("a && b | c &", [("a", "background"), ("b", "background"), ("c", "pipe")]),
    ("sudo rm x", [("sudo", "direct"), ("rm", "wrapper:sudo")]),
    ("xargs rm", [("xargs", "direct"), ("rm", "wrapper:xargs")]),
    ("find . -exec rm {} +", [("find", "direct"), ("rm", "wrapper:find")]),
    ("bash -c 'ls | wc'", [("bash", "direct"), ("ls", "wrapper:bash"), ("wc", "pipe")]),
    ("sh -lc 'ls'", [("sh", "direct"), ("ls", "wrapper:sh")]),
    ("eval 'ls -l'", [("eval", "direct"), ("ls", "wrapper:eval")]),
    ("cat <<EOF\n$(id)\nEOF", [("id", "heredoc"), ("cat", "direct")]),
    ("bash <<'EOF'\nls\nEOF", [("bash", "direct"), ("ls", "heredoc")]),
    ("cat <<EOF | sh\nls\nEOF", [("cat", "direct"), ("sh", "pipe")]),
    ("env A=1 nice -n 5 ls", [("env", "direct"), ("nice", "wrapper:env"), ("ls", "wrapper:nice")]),
    ("timeout 10 nohup ls", [("timeout", "direct"), ("nohup", "wrapper:timeout"), ("ls", "wrapper:nohup")]),
    ("time ls", [("time", "direct"), ("ls", "wrapper:time")]),
    ("command ls", [("command", "direct"), ("ls", "wrapper:command")]),
    ("builtin echo x", [("builtin", "direct"), ("echo", "wrapper:builtin")]),
    ("exec ls", [("exec", "direct"), ("ls", "wrapper:exec")]),
    ("doas ls", [("doas", "direct"), ("ls", "wrapper:doas")]),
    ("ionice -c 3 ls", [("ionice", "direct"), ("ls", "wrapper:ionice")]),
    ("echo $(echo $(id))", [("id", "subst"), ("echo", "subst"), ("echo", "direct")]),
]


@pytest.mark.parametrize(("command", "expected"), VIA_CASES, ids=[c for c, _ in VIA_CASES])
def test_via(command: str, expected: list[tuple[str, str]], ws: Workspace) -> None:
    assert vias(run(command, ws)) == expected


def test_redirects_are_recorded_on_the_command(ws: Workspace) -> None:
    fx = run("cmd 2>err.log >>exists.txt 2>&1 < exists.txt", ws)
    redirects = [(r.op, r.target, r.fd) for r in fx.commands[0].redirects]
    assert redirects == [(">", "err.log", 2), (">>", "exists.txt", None), (">&", "1", 2), ("<", "exists.txt", None)]


def test_pipeline_redirect_belongs_to_last_command(ws: Workspace) -> None:
    fx = run("a | b 2>&1 | c > out.txt", ws)
    assert [len(c.redirects) for c in fx.commands] == [0, 1, 1]
    assert fx.creates == ["out.txt"]


FILE_CASES = [
    ("cmd &> all.log", "creates", ["all.log"]),
    ("cmd &>> all.log", "creates", ["all.log"]),
    ("cmd 2> err.log", "creates", ["err.log"]),
    ("cmd >& out.log", "creates", ["out.log"]),
    ("> truncated.txt", "creates", ["truncated.txt"]),
]


test_file_effects = file_effects_test(FILE_CASES)


NO_FILE_EFFECT_CASES = [
    "cmd 2>/dev/null",
    "cmd 2>&1",
    "cmd >&2",
    "unknowncmd exists.txt /etc/passwd",
]


test_no_file_effects = no_file_effects_test(NO_FILE_EFFECT_CASES)


def test_quoted_glob_is_one_file(ws: Workspace) -> None:
    fx = run("rm '*.txt' \\*.md", ws)
    assert fx.deletes == ["*.txt", "*.md"] and fx.recursive_deletes == []


def test_existing_path_is_written_missing_one_created(ws: Workspace) -> None:
    fx = run("cp exists.txt src/a.py && cp exists.txt src/b.py", ws)
    assert fx.writes == ["src/a.py"] and fx.creates == ["src/b.py"]


CD_CASES = [
    ("cd src && rm a.py", "deletes", ["src/a.py"]),
    ("cd /tmp && rm x", "deletes", ["/tmp/x"]),
    ("cd src; cd ..; touch new.txt", "creates", ["new.txt"]),
    ("(cd src && rm a.py); rm b", "deletes", ["src/a.py", "b"]),
    ("cd src | true; rm b", "deletes", ["b"]),
    ("mkdir -p build && cd build && touch x", "creates", ["build", "build/x"]),
    ("git -C src rm a.py", "deletes", ["src/a.py"]),
    ("env -C src rm a.py", "deletes", ["src/a.py"]),
    ("sudo -D src rm a.py", "deletes", ["src/a.py"]),
    ("bash -c 'cd src && rm a.py'; rm b", "deletes", ["src/a.py", "b"]),
    # a bare cd goes to $HOME, which the analyser does not follow: what comes after is opaque
    ("cd; rm x", "opaque", ["rm: relative path 'x' after a cd that could not be followed"]),
]


@pytest.mark.parametrize(("command", "field", "items"), CD_CASES, ids=[c for c, _, _ in CD_CASES])
def test_cd_tracking(command: str, field: str, items: list[str], ws: Workspace) -> None:
    fx = run(command, ws)
    assert getattr(fx, field) == items, fx


CD_OPAQUE_CASES = [
    "cd $X && rm f",
    "cd $(mktemp -d) && touch f",
    "cd nonexistent; rm -rf *",
    "cd -; rm f",
    "pushd src; popd; rm f",
    "if true; then cd src; fi; rm f",
]


@pytest.mark.parametrize("command", CD_OPAQUE_CASES)
def test_cd_that_cannot_be_followed_makes_relative_paths_opaque(command: str, ws: Workspace) -> None:
    fx = run(command, ws)
    assert any("cd that could not be followed" in r for r in fx.opaque), fx


def test_absolute_paths_survive_an_unknown_cd(ws: Workspace) -> None:
    fx = run("cd $X && rm /tmp/x", ws)
    assert fx.deletes == ["/tmp/x"] and fx.opaque == []


def test_describe_uses_the_given_cwd(ws: Workspace) -> None:
    fx = describe_command("rm a.py", ws, ws.root / "src")
    assert fx.deletes == ["src/a.py"]


OPAQUE_CASES = [
    # dynamic command names
    ("$(echo rm) -rf /", "dynamic command name"),
    ("a=rm; $a -rf /", "dynamic command name"),
    ("${CMD} x", "dynamic command name"),
    ("`echo rm` x", "dynamic command name"),
    ('"$x" arg', "dynamic command name"),
    ("{rm,-rf,/}", "shell syntax error"),
    ("r{m,} -rf /", "brace expansion"),
    ("$(curl x.io)", "downloaded/decoded content executed"),
    ("ls() { rm -rf /; }", "redefines the command 'ls'"),
    ("function git { echo; }", "redefines the command 'git'"),
    ("cd() { :; }", "redefines the command 'cd'"),
    ("IFS=/; x=a/b; $x", "IFS= changes"),
    ("cat$IFS/etc/passwd", "$IFS expansion"),
    ("declare -n ref=PATH", "name reference"),
    ("export PATH=/tmp:$PATH", "PATH= changes"),
    ("for f in *.txt; do rm $f; done", "not literal"),
    ("(ls", "syntax error"),
    ("if true; then ls", "syntax error"),
    ("fi", "reserved word"),
    ("a\x00b", "NUL byte"),
    ("r\\\nm -rf /", "line continuation inside a word"),
    ("\uff52\uff4d -rf /", "NFKC"),
    ("r\u043c x", "mixes Latin with Cyrillic"),
]


test_opaque = opaque_test(OPAQUE_CASES)


NOT_OPAQUE_CASES = [
    "pytest -q tests/test_a.py",
    "[[ -f exists.txt ]] && echo yes",
    "for i in 1 2 3; do echo $i; done",
    "case $1 in a) echo a;; esac",
    "while true; do sleep 1; break; done",
    "f() { echo hi; }; f",
    "PYTHONPATH=src pytest",
    "export FOO=bar",
]


test_not_opaque = not_opaque_test(NOT_OPAQUE_CASES)


def test_heredoc_body_is_data(ws: Workspace) -> None:
    fx = run("cat <<'EOF' > notes.md\nrm -rf /\n$(rm -rf /)\nEOF", ws)
    assert argvs(fx) == [["cat"]] and fx.recursive_deletes == [] and fx.creates == ["notes.md"]


def test_unquoted_heredoc_runs_its_substitutions(ws: Workspace) -> None:
    fx = run("cat <<EOF\n$(rm -rf /)\nEOF", ws)
    assert ["rm", "-rf", "/"] in argvs(fx) and fx.recursive_deletes == ["/"]


def test_indented_heredoc(ws: Workspace) -> None:
    fx = run("bash <<-'EOF'\n\trm exists.txt\n\tEOF", ws)
    assert fx.deletes == ["exists.txt"]


def test_hundred_kib_command_is_refused(ws: Workspace) -> None:
    fx = run("echo " + "a" * 100 * 1024, ws)
    assert fx.commands == [] and any("longer than 16 KiB" in r for r in fx.opaque)


def test_limit_is_exactly_16_kib(ws: Workspace) -> None:
    fits = "echo " + "a" * (MAX_COMMAND_BYTES - 5)
    assert run(fits, ws).opaque == []
    assert run(fits + "a", ws).opaque != []


def test_fifty_nested_substitutions(ws: Workspace) -> None:
    fx = run("echo " + "$(echo " * 50 + "x" + ")" * 50, ws)
    assert any("nesting deeper than 16" in r for r in fx.opaque)
    assert len(fx.commands) <= 18


def test_quoting_blowup_is_refused_by_size(ws: Workspace) -> None:
    command = "ls"
    for _ in range(12):
        command = "bash -c " + "'" + command.replace("'", "'\\''") + "'"
    assert any("longer than" in r for r in run(command, ws).opaque)


def test_deep_structure_does_not_crash(ws: Workspace) -> None:
    fx = run("( " * 2000 + "ls" + " )" * 2000, ws)
    assert any("nested deeper" in r for r in fx.opaque)


def test_long_lists_and_pipelines_are_not_recursive(ws: Workspace) -> None:
    fx = run("true && " * 200 + "rm x", ws)
    assert fx.deletes == ["x"] and len(fx.commands) == 201 and fx.opaque == []
    fx = run("cat exists.txt" + " | cat" * 200, ws)
    assert len(fx.commands) == 201 and fx.opaque == []


def test_more_commands_than_the_bound_are_opaque(ws: Workspace) -> None:
    fx = run("true && " * 300 + "rm x", ws)
    assert len(fx.commands) == MAX_COMMANDS and "more than 256 simple commands" in fx.opaque[0]
    assert fx.deletes == [], "the walk stops at the bound"
    # far more separators than the bound allows: not even parsed
    fx = run("true && " * 1500 + "rm x", ws)
    assert fx.commands == [] and fx.opaque == ["more than 256 simple commands: the rest is not analysed"]


def test_nul_byte_stops_analysis(ws: Workspace) -> None:
    fx = run("ls\x00; rm -rf /", ws)
    assert fx.commands == [] and fx.opaque == ["command contains a NUL byte"]


def test_lone_surrogate_is_refused(ws: Workspace) -> None:
    assert "not valid UTF-8" in run("echo \udc80", ws).opaque[0]


def test_every_simple_command_is_found(ws: Workspace) -> None:
    command = (
        "a; b && c || d | e; (f); { g; }; if h; then i; fi; for x in 1; do j; done; while k; do l; done; "
        "case y in *) m;; esac; fn() { n; }; echo $(o) `p` <(q) >(r); s &"
    )
    names = sorted({c.argv[0] for c in run(command, ws).commands if c.argv})
    assert names == sorted(
        ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p", "q", "r", "s", "echo"]
    )


def test_commands_of_a_broken_string_are_still_listed(ws: Workspace) -> None:
    fx = run("rm -rf / && echo $(", ws)
    assert fx.opaque and ["rm", "-rf", "/"] in argvs(fx)


STREAM_ESCAPES = [
    ("cat /dev/fd/../../../etc/passwd", "reads", "/etc/passwd"),
    ("cat < /dev/fd/../../../etc/passwd", "reads", "/etc/passwd"),
    ("cat /proc/self/fd/../../../../etc/passwd", "reads", "/etc/passwd"),
    ("cat /proc/self/root/etc/passwd", "reads", "/etc/passwd"),
    ("cat /dev/stdin/../../etc/passwd", "reads", "/etc/passwd"),
    ("echo x > /dev/fd/../../../etc/gw-test-x", "creates", "/etc/gw-test-x"),
    ("cp exists.txt /dev/fd/../../../etc/gw-test-x", "creates", "/etc/gw-test-x"),
    ("echo x | tee /proc/self/fd/../../../../etc/gw-test-x", "creates", "/etc/gw-test-x"),
    ("sed -n p /dev/fd/../../../etc/hostname", "reads", "/etc/hostname"),
]


@pytest.mark.parametrize(("command", "field", "path"), STREAM_ESCAPES, ids=[c for c, _, _ in STREAM_ESCAPES])
def test_a_stream_path_used_as_a_prefix_is_resolved(command: str, field: str, path: str, ws: Workspace) -> None:
    assert path in getattr(run(command, ws), field)


def test_a_stream_path_inside_the_workspace_is_a_path_there(ws: Workspace) -> None:
    inside = f"/dev/fd/../../../{ws.root.as_posix().lstrip('/')}/src/new.py"
    assert run(f"echo x > {inside}", ws).creates == ["src/new.py"]


@pytest.mark.parametrize(
    "command",
    [
        "echo x > /dev/fd/2",
        "cat /dev/fd/0",
        "cat /proc/self/fd/0",
        "echo x > /proc/self/fd/1",
        "cat -",
        "echo x > /dev/stderr",
        "head -c 1 /dev/zero",
        "cat /dev/stdin",
        "echo x > /dev/tty",
    ],
)
def test_real_streams_are_no_files(command: str, ws: Workspace) -> None:
    fx = run(command, ws)
    assert not (fx.reads or fx.writes or fx.creates), fx


@pytest.fixture
def files(ws: Workspace) -> Workspace:
    (ws.root / "server.key").write_text("k")
    (ws.root / ".env").write_text("KEY=1")
    (ws.root / "src" / "b.py").write_text("")
    return ws


def test_a_glob_reads_the_files_it_matches(files: Workspace) -> None:
    fx = run("cat *", files)
    assert {"*", "exists.txt", "server.key", "src", "dir"} <= set(fx.reads)
    assert ".env" not in fx.reads, "* does not match dotfiles"
    assert {".e*", ".env"} <= set(run("cat .e*", files).reads)
    assert run("cat src/*.py", files).reads == ["src/*.py", "src/a.py", "src/b.py"]
    assert run("cd src && cat *.py", files).commands[1].reads == ["src/*.py", "src/a.py", "src/b.py"]


def test_a_quoted_glob_is_one_name(files: Workspace) -> None:
    assert run("cat '*'", files).reads == ["*"]
    assert run("cat s'*'.key", files).reads == ["s*.key"], "the quoted * is no glob character"


def test_a_glob_that_matches_nothing_is_the_pattern(files: Workspace) -> None:
    assert run("cat *.nothing", files).reads == ["*.nothing"]


def test_a_glob_matching_too_many_files_is_opaque(files: Workspace) -> None:
    many = files.root / "many"
    many.mkdir()
    for i in range(300):
        (many / f"f{i}").write_text("")
    fx = run("cat many/*", files)
    assert any("matches more files than the analysis follows" in r for r in fx.opaque)


PROGRAM_CASES = [
    ("/usr/bin/python3.11 x.py", "python"),
    ("pypy3 x.py", "python"),
    ("nodejs app.js", "node"),
    ("pip3 list", "pip"),
    ("perl5.36 -e 1", "perl"),
    ("luajit x.lua", "lua"),
    ("\\rm x", "rm"),
    ("r''m x", "rm"),
    ("./scripts/run.sh", "./scripts/run.sh"),
    # a program in the workspace is whatever the agent put there, not the program of the same name
    ("./ls", "./ls"),
    ("src/cat x", "src/cat"),
    (".venv/bin/python x.py", ".venv/bin/python"),
    ("/bin/ls", "ls"),
    ("$X y", ""),
]


@pytest.mark.parametrize(("command_text", "program"), PROGRAM_CASES, ids=[c for c, _ in PROGRAM_CASES])
def test_program_is_normalised(command_text: str, program: str, ws: Workspace) -> None:
    assert run(command_text, ws).commands[0].program == program


def test_programs_without_subcommands_state_none(ws: Workspace) -> None:
    found = run("ls -la src", ws).commands[0]
    assert (found.subcommand, found.operation, found.access) == (None, None, None)


CWD_CASES = [
    ("ls", "ls", "."),
    ("cd src && ls", "ls", "src"),
    ("cd src; cd ..; ls", "ls", "."),
    ("cd src && cd .. && cd dir && ls", "ls", "dir"),
    ("git -C src log", "git", "src"),
    ("git -C src -C .. status", "git", "."),
    ("env -C src ls", "ls", "src"),
    ("sudo -D src ls", "ls", "src"),
    ("(cd src); ls", "ls", "."),
    ("cd src | true; ls", "ls", "."),
    ("bash -c 'cd src && ls'", "ls", "src"),
    ("cd src && bash -c 'ls'", "ls", "src"),
    ("mkdir -p build && cd build && ls", "ls", "build"),
    ("cd $X; ls", "ls", None),
    ("pushd src; popd; ls", "ls", None),
    ("cd -; ls", "ls", None),
    ("if true; then cd src; fi; ls", "ls", None),
    ("cd nonexistent; ls", "ls", None),
]


@pytest.mark.parametrize(("command_text", "program", "cwd"), CWD_CASES, ids=[c[0] for c in CWD_CASES])
def test_cwd(command_text: str, program: str, cwd: str | None, ws: Workspace) -> None:
    assert fact(command_text, program, "cwd", ws) == cwd


def test_cwd_outside_the_workspace_is_absolute(ws: Workspace) -> None:
    assert fact("cd .. && ls", "ls", "cwd", ws) == ws.root.parent.as_posix()
    assert fact("cd /tmp && ls", "ls", "cwd", ws) == Path("/tmp").resolve().as_posix()
    assert fact("git -C /tmp status", "git", "cwd", ws) == Path("/tmp").resolve().as_posix()
    # a cd follows symlinks: link_out points outside
    assert fact("cd link_out && ls", "ls", "cwd", ws) == outside(ws, "outside")
    assert fact("cd; ls", "ls", "cwd", ws) in (None, HOME)


def test_a_redirection_on_a_list_lands_after_the_cd(ws: Workspace) -> None:
    """tree-sitter hangs `> f` on the whole `cd d && cmd` list; bash on cmd, in d."""
    fx = run("cd src && echo x > new.py", ws)
    assert fx.creates == ["src/new.py"]
    assert command(fx, "echo").writes == ["src/new.py"] and command(fx, "cd").redirects == []
    fx = run("cd src && cat < a.py || echo no 2>/dev/null", ws)
    assert command(fx, "cat").reads == ["src/a.py"] and command(fx, "echo").redirects[0].target == "/dev/null"
    fx = run("cd src && cat > new.py <<'EOF'\nx\nEOF", ws)
    assert command(fx, "cat").writes == ["src/new.py"]


def test_each_command_states_its_own_files(ws: Workspace) -> None:
    fx = run("cat exists.txt > out.txt; rm src/a.py; cp exists.txt dir/", ws)
    assert command(fx, "cat").reads == ["exists.txt"] and command(fx, "cat").writes == ["out.txt"]
    assert command(fx, "rm").deletes == ["src/a.py"] and command(fx, "rm").reads == []
    assert command(fx, "cp").reads == ["exists.txt"] and command(fx, "cp").writes == ["dir/exists.txt"]


PATH_CASES = [
    ("./tool ../../x", ["__up2__/x"]),
    ("make -C ../..", ["__up2__"]),
    ("make -C src", []),  # no "/" or "..": a name, not plainly a path
    ("tool --out=/tmp/x", ["/tmp/x"]),
    ("tool -o/etc/x", ["/etc/x"]),
    ("tool -I../include", ["__up1__/include"]),
    ("make DESTDIR=/opt/x install", ["/opt/x"]),
    ("tool ..", ["__up1__"]),
    ("tool link_out/x", ["__up1__/outside/x"]),
    ("tool src/a.py plain.txt", ["src/a.py"]),
    ("tool https://x.io/a /dev/null - -v --flag", []),
    ("python3 src/a.py ../data.csv", ["__up1__/data.csv"]),
    ("node app.js --config=/etc/app.json", ["/etc/app.json"]),
    ("bash scripts/x.sh /etc/hosts", ["/etc/hosts"]),
    ("npm install ../other", ["__up1__/other"]),
    ("go build -o /tmp/bin ./...", ["/tmp/bin", "..."]),
]


@pytest.mark.parametrize(("command_text", "paths"), PATH_CASES, ids=[c for c, _ in PATH_CASES])
def test_paths_of_unknown_programs(command_text: str, paths: list[str], ws: Workspace) -> None:
    up = {"__up1__": ws.root.parent.as_posix(), "__up2__": ws.root.parent.parent.as_posix()}
    expected = []
    for p in paths:
        for key, value in up.items():
            p = p.replace(key, value)
        expected.append(Path(p).resolve().as_posix() if p.startswith("/") else p)
    fx = run(command_text, ws)
    assert sorted({p for c in fx.commands for p in c.paths}) == sorted(expected), fx.commands


def test_paths_resolve_against_the_cwd(ws: Workspace) -> None:
    assert fact("cd src && ./tool ../exists.txt", "./tool", "paths", ws) == ["exists.txt"]


def test_known_programs_state_no_paths(ws: Workspace) -> None:
    for text in ("echo /etc/passwd", "cat /etc/passwd", "basename /etc/passwd", "which /usr/bin/env"):
        assert all(c.paths == [] for c in run(text, ws).commands), text


def test_env_given_to_a_command(ws: Workspace) -> None:
    assert fact("A=1 B='x y' ls", "ls", "env", ws) == {"A": "1", "B": "x y"}
    assert fact("env A=1 ls", "ls", "env", ws) == {"A": "1"}
    assert fact("sudo A=1 ls", "ls", "env", ws) == {"A": "1"}
    assert fact("A=1; ls", "ls", "env", ws) == {}
