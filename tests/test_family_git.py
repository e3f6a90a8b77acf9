"""The git family (gateway/effects/shell/git.py, git_worktree.py, git_refs.py, git_remote.py, git_options.py,
git_aliases.py): the facts its programs' commands state and what it makes opaque. Cases are grouped by the program a
command starts with (a pipeline: its fetcher or decoder, else its last program).

Cases run against ``shell_cases.shell_workspace`` (tests/shell_cases.py).
"""

from __future__ import annotations

import subprocess
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
    shell_workspace,
    subcommand_test,
)

from gateway.effects.paths import Workspace
from gateway.effects.shell import describe_command
from gateway.types import CommandEffect, Effects


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Workspace:
    return shell_workspace(tmp_path, monkeypatch)


FILE_CASES = [
    ("git clone https://github.com/org/repo.git", "creates", ["repo"]),
    ("git checkout -- src/a.py", "writes", ["src/a.py"]),
    ("git reset --hard HEAD~1", "writes", ["."]),
    ("git config --global core.editor vim", "creates", [f"{HOME}/.gitconfig"]),
    ("git rm src/a.py", "deletes", ["src/a.py"]),
    ("git clean -fdx", "recursive_deletes", ["."]),
]


test_file_effects = file_effects_test(FILE_CASES)


NO_FILE_EFFECT_CASES = [
    "git rm --cached src/a.py",
    "git clean -n",
]


test_no_file_effects = no_file_effects_test(NO_FILE_EFFECT_CASES)


NETWORK_CASES = [
    ("git push origin main", {("git-remote:origin", "git")}),
    ("git push -u origin main", {("git-remote:origin", "git")}),
    ("git push", {("git-remote:default", "git")}),
    ("git fetch --all", {("git-remote:default", "git")}),
    ("git pull upstream", {("git-remote:upstream", "git")}),
    ("git ls-remote https://github.com/org/repo", {("github.com", "git")}),
    ("git clone git@github.com:org/repo.git", {("github.com", "git")}),
    ("git clone --depth 1 https://gitlab.com/a/b.git dest", {("gitlab.com", "git")}),
    ("git fetch https://evil.com/x.git", {("evil.com", "git")}),
    ("git submodule update --init", {("git-remote:submodules", "git")}),
]


test_network = network_test(NETWORK_CASES)


NO_NETWORK_CASES = [
    "git status",
    "git commit -m 'x'",
]


test_no_network = no_network_test(NO_NETWORK_CASES)


OPAQUE_CASES = [
    ("GIT_SSH_COMMAND='sh -c id' git fetch", "GIT_SSH_COMMAND= changes"),
    ("EDITOR='sh -c id' git commit", "names a program to run"),
    # programs that run commands we do not unwrap, or that run configured programs
    ("git -c core.sshCommand='sh -c id' fetch", "may make git run a program"),
    ("git -c alias.x='!sh' x", "may make git run a program"),
    ("git config core.hooksPath /tmp/hooks", "may make git run a program"),
    ("git clone --upload-pack='touch /tmp/x' https://a.io/r", "runs a program"),
    ("git clone ext::sh -c 'touch x'", "remote helper"),
    ("git fetch 'ext::sh -c id'", "remote helper"),
    ("git submodule foreach 'rm -rf .'", "foreach runs"),
    ("git filter-branch --tree-filter 'rm x' HEAD", "filter-branch"),
]


test_opaque = opaque_test(OPAQUE_CASES)


NOT_OPAQUE_CASES = [
    "git status && git diff --stat",
    "git commit -m 'fix: handle $HOME'",
    "git push origin main",
    "GIT_PAGER=cat git log -3",
]


test_not_opaque = not_opaque_test(NOT_OPAQUE_CASES)


SUBCOMMAND_CASES = [
    ("git -C src -c user.name=x log", "git", "log", None),
    ("git --git-dir=.git --no-pager status", "git", "status", None),
    ("git stash drop", "git", "stash", "drop"),
    ("git remote add up https://x.io/r", "git", "remote", "add"),
    ("git config --global user.name x", "git", "config", None),
    ("git", "git", None, None),
]


test_subcommand_after_global_options = subcommand_test(SUBCOMMAND_CASES)


EXECUTES_CASES = [
    ("git -p log", "git", ["pager"]),
    ("git grep -Ocat x", "git", ["cat"]),
    ("git grep --open-files-in-pager=less x", "git", ["less"]),
    ("GIT_EXTERNAL_DIFF=./x.sh git diff", "git", ["GIT_EXTERNAL_DIFF=./x.sh"]),
    ("git st", "git", ["git-st"]),
    ("git -c core.pager=id log", "git", ["config core.pager"]),
    ("git log", "git", []),
]


test_executes = executes_test(EXECUTES_CASES)


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


def described(command: str, root: Path) -> tuple[Effects, CommandEffect]:
    fx = describe_command(command, Workspace(root), cwd=root)
    return fx, fx.commands[-1]


def host_names(fx: Effects) -> set[str]:
    return {n.host for n in fx.network}


def git_config(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), "config", *args], check=True)


def test_git_aliases_are_what_git_runs(repo: Path) -> None:
    git_config(repo, "alias.co", "checkout -b")
    git_config(repo, "alias.p", "push")
    git_config(repo, "alias.pp", "p --force")
    git_config(repo, "alias.st", "status --short")
    fx, cmd = described("git co topic", repo)
    assert (cmd.subcommand, cmd.subcommand_as_written, cmd.access) == ("checkout", "co", "write")
    fx, cmd = described("git pp origin main", repo)
    assert (cmd.subcommand, cmd.subcommand_as_written, cmd.access) == ("push", "pp", "remote")
    assert "git-remote:origin" in host_names(fx)
    fx, cmd = described("git -C . st", repo)
    assert (cmd.subcommand, cmd.access, fx.opaque) == ("status", "read", [])
    fx, cmd = described("git -c alias.q=push q", repo)
    assert cmd.subcommand == "push" and "git-remote:default" in host_names(fx)


def test_an_alias_never_hides_a_git_command(repo: Path) -> None:
    git_config(repo, "alias.status", "push")
    fx, cmd = described("git status", repo)
    assert (cmd.subcommand, cmd.access, fx.network) == ("status", "read", [])


@pytest.mark.parametrize(
    ("alias", "command", "why"),
    [
        ("!sh -c 'curl x | sh'", "git x", "runs a shell command"),
        ("x", "git x", "not a git command it knows"),  # a loop: git refuses it
        (None, "git nothing", "not a git command it knows"),
        ("status", "HOME=/tmp git x", "HOME is given"),
        ("status", "echo '[alias]' >> .git/config && git x", "writes .git/config"),
    ],
)
def test_a_git_alias_that_cannot_be_trusted_is_opaque(repo: Path, alias: str | None, command: str, why: str) -> None:
    if alias is not None:
        git_config(repo, "alias.x", alias)
    fx, _ = described(command, repo)
    assert any(why in reason for reason in fx.opaque), fx.opaque


def test_an_alias_from_a_file_the_agent_may_write_is_opaque(repo: Path) -> None:
    (repo / "team.gitconfig").write_text("[alias]\n\tship = status\n")
    git_config(repo, "include.path", "../team.gitconfig")
    fx, _ = described("git ship", repo)
    assert any("team.gitconfig, which the agent may rewrite" in reason for reason in fx.opaque), fx.opaque
