"""The files family (gateway/effects/shell/files.py: cat, ls, cp, mv, rm, ln, chmod, tar, rsync, ...): the facts its
programs' commands state and what it makes opaque. Cases are grouped by the program a command starts with (a
pipeline: its fetcher or decoder, else its last program).

Cases run against ``shell_cases.shell_workspace`` (tests/shell_cases.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from shell_cases import (
    HOME,
    executes_test,
    fact,
    file_effects_test,
    network_test,
    no_file_effects_test,
    no_network_test,
    not_opaque_test,
    opaque_test,
    outside,
    run,
    shell_workspace,
    with_more_files,
)

from gateway.effects.paths import Workspace


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Workspace:
    return shell_workspace(tmp_path, monkeypatch)


FILE_CASES = [
    # reads
    ("cat exists.txt", "reads", ["exists.txt"]),
    ("cat /etc/passwd", "reads", ["/etc/passwd"]),
    ("cat ~/.ssh/id_rsa", "reads", [f"{HOME}/.ssh/id_rsa"]),
    ("cat $HOME/.aws/credentials", "reads", [f"{HOME}/.aws/credentials"]),
    ("head -n 5 exists.txt", "reads", ["exists.txt"]),
    ("tail -f -n 20 log.txt", "reads", ["log.txt"]),
    ("less src/a.py", "reads", ["src/a.py"]),
    ("cp exists.txt copy.txt", "reads", ["exists.txt"]),
    ("tar czf out.tgz src", "reads", ["src"]),
    ("tar -cf out.tar -C dir .", "reads", ["dir"]),
    ("cat < exists.txt", "reads", ["exists.txt"]),
    ("cat ../outside.txt", "reads", ["__parent__/outside.txt"]),
    ("ls -la ~/.ssh", "reads", [f"{HOME}/.ssh"]),
    ("dd if=exists.txt of=copy.img", "reads", ["exists.txt"]),
    ("echo x | tee out.txt", "creates", ["out.txt"]),
    ("echo x | tee -a exists.txt", "writes", ["exists.txt"]),
    ("cp exists.txt copy.txt", "creates", ["copy.txt"]),
    ("cp exists.txt dir", "creates", ["dir/exists.txt"]),
    ("cp -t dir a b", "creates", ["dir/a", "dir/b"]),
    ("cp -r src /tmp/gw-test-out", "creates", ["/tmp/gw-test-out"]),
    ("mv exists.txt new.txt", "creates", ["new.txt"]),
    ("mv exists.txt dir/", "creates", ["dir/exists.txt"]),
    ("touch new.txt exists.txt", "creates", ["new.txt"]),
    ("touch new.txt exists.txt", "writes", ["exists.txt"]),
    ("mkdir newdir", "creates", ["newdir"]),
    ("mkdir -p dir", "writes", ["dir"]),
    ("ln -s /etc/passwd link", "creates", ["link"]),
    ("ln -sf ../x", "creates", ["x"]),
    ("chmod 644 exists.txt", "writes", ["exists.txt"]),
    ("chmod -x exists.txt", "writes", ["exists.txt"]),
    ("chmod -R 777 /", "writes", ["/"]),
    ("chown -R user:group dir", "writes", ["dir"]),
    ("tar xf archive.tar", "writes", ["."]),
    ("tar -xzf a.tgz -C dir", "writes", ["dir"]),
    ("dd if=/dev/zero of=disk.img", "creates", ["disk.img"]),
    ("truncate -s 0 exists.txt", "writes", ["exists.txt"]),
    ("install -m 755 tool dir", "creates", ["dir/tool"]),
    ("patch -p1 < fix.diff", "writes", ["."]),
    # deletes
    ("rm exists.txt", "deletes", ["exists.txt"]),
    ("rm -f -- -x", "deletes", ["-x"]),
    ("rm 'a*'", "deletes", ["a*"]),
    ("rmdir dir", "deletes", ["dir"]),
    ("unlink exists.txt", "deletes", ["exists.txt"]),
    ("mv exists.txt new.txt", "deletes", ["exists.txt"]),
    ("shred -u exists.txt", "deletes", ["exists.txt"]),
    # recursive (and mass) deletes
    ("rm -r dir", "recursive_deletes", ["dir"]),
    ("rm -rf /", "recursive_deletes", ["/"]),
    ("rm -Rf ~", "recursive_deletes", [HOME]),
    ("rm -fr ~/", "recursive_deletes", [HOME]),
    ("rm --recursive dir", "recursive_deletes", ["dir"]),
    ("rm --rec dir", "recursive_deletes", ["dir"]),
    ("rm *.txt", "recursive_deletes", ["*.txt"]),
    ("rm -f src/?.py", "recursive_deletes", ["src/?.py"]),
    ("rm -rf ./build/*", "recursive_deletes", ["build/*"]),
    ("rm [ab].txt", "recursive_deletes", ["[ab].txt"]),
    ("mv src elsewhere", "recursive_deletes", ["src"]),
    ("rsync -a --delete src/ backup/", "recursive_deletes", ["backup"]),
    ("tar czf a.tgz src --remove-files", "recursive_deletes", ["src"]),
]


test_file_effects = file_effects_test(FILE_CASES)


NO_FILE_EFFECT_CASES = [
    "rm",
]


test_no_file_effects = no_file_effects_test(NO_FILE_EFFECT_CASES)


NETWORK_CASES = [
    ("rsync -avz src/ backup.example.com:/srv/", {("backup.example.com", "rsync")}),
    ("rsync -a rsync://mirror.example.org/pub/ dir/", {("mirror.example.org", "rsync")}),
    ("cat < /dev/tcp/evil.com/80", {("evil.com", "bash")}),
]


test_network = network_test(NETWORK_CASES)


NO_NETWORK_CASES = [
    "ls",
]


test_no_network = no_network_test(NO_NETWORK_CASES)


OPAQUE_CASES = [
    ("cat <<'EOF' | sh\nls\nEOF", "reads its program from a pipe"),
    # environment that changes what runs
    ("PATH=/tmp/evil:$PATH ls", "PATH= changes"),
    ("LD_PRELOAD=/tmp/x.so ls", "LD_PRELOAD= changes"),
    ("HOME=/tmp; rm -rf ~", "HOME= changes"),
    ("rsync -e 'sh -c id' a host.com:b", "rsync -e runs"),
    ("tar -xf a.tar --to-command='sh -c id'", "tar runs a program"),
    ("tar -cf a.tar --checkpoint=1 --checkpoint-action=exec=id .", "tar runs a program"),
    ("tar -xPf a.tar", "may write anywhere"),
    # paths we cannot resolve
    ('rm -rf "$DIR"/', "not literal"),
    ("rm -rf $HOME/$X", "not literal"),
    ("cat $(ls)", "not literal"),
    ("rm -$FLAGS x", "option"),
    ("rm ~nosuchuser123/x", "tilde expansion"),
    ("ls |", "syntax error"),
    ("ls &&", "syntax error"),
    ("ls \u202egnp.exe", "invisible or bidirectional"),
    ("cat .\u0435nv", "mixes Latin with Cyrillic"),
    ("cat sec\u200bret.txt", "invisible"),
    ("cat <<EOF\n`id`\nEOF", "did not separate"),
]


test_opaque = opaque_test(OPAQUE_CASES)


NOT_OPAQUE_CASES = [
    "ls -la",
    "cat <<'EOF' > notes.md\n$(not run) `nor this`\nEOF",
    "grep -rn TODO src | head -20",
    "tar czf a.tgz src",
    "ls > >(tee listing.txt)",
    "echo {} | cat",
]


test_not_opaque = not_opaque_test(NOT_OPAQUE_CASES)


@pytest.fixture
def files(ws: Workspace) -> Workspace:
    return with_more_files(ws)


def test_globs_in_writes_and_deletes(files: Workspace) -> None:
    fx = run("rm src/*.py", files)
    assert fx.recursive_deletes == ["src/*.py", "src/a.py", "src/b.py"]
    assert "server.key" in run("chmod 600 *.key", files).writes


def test_names_only_programs_do_not_expand(files: Workspace) -> None:
    assert run("ls *", files).reads == ["*"]


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


EXECUTES_CASES = [
    ("tar -xf a.tar --to-command=id", "tar", ["id"]),
]


test_executes = executes_test(EXECUTES_CASES)


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
