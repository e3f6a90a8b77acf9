"""What a developer can plant in the workspace's `.git` (writable to it, all but hooks, config and modules)
against the gateway's own git: real git 2.39, real repositories in temp dirs.

Each variant is shown twice: what git does with it when run the way the gateway ran it before
(``old_git``: ``git -C root`` with ``GIT_COMMON_DIR`` pinned, which git does not apply to refs), and what
``Repo`` does now (a shadow git dir of the gateway's making; what git would follow out of the repository
refused before git runs). A live gateway and a developer's own commands are in
tests/test_hostile_agents.py (``test_a_developer_cannot_plant_git_structure``).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from conftest import make_repo

from gateway.repo import GitError, GitRefused, Repo, common_dir


def old_git(root: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """git as gateway/repo.py ran it until now: the repository pinned by GIT_COMMON_DIR alone."""
    env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/"), "GIT_CONFIG_NOSYSTEM": "1"}
    env |= {"GIT_COMMON_DIR": str(common_dir(root)), "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    env |= {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t"}
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, env=env, check=check)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo")


@pytest.fixture
def elsewhere(tmp_path: Path) -> Path:
    """Another repository (the state dir's vault, a hidden project): a branch and a blob of its own."""
    path = make_repo(tmp_path / "elsewhere")
    (path / "secret.txt").write_text("the hidden project's secret\n")
    Repo(path).run("add", "-A")
    Repo(path).run("commit", "-q", "-m", "secret")
    Repo(path).run("branch", "hidden")
    return path


def refs_of(path: Path) -> dict[str, str]:
    out = subprocess.run(
        ["git", "-C", str(path), "for-each-ref", "--format=%(refname) %(objectname)"],
        capture_output=True,
        text=True,
        check=True,
    )
    return dict(line.split(" ") for line in out.stdout.splitlines())


def refused(repo: Repo, *args: str) -> str:
    with pytest.raises(GitRefused) as caught:
        repo.run(*args)
    return caught.value.message


# --- commondir -------------------------------------------------------------------------------------------


def test_git_reads_refs_through_a_planted_commondir_whatever_GIT_COMMON_DIR_says(repo: Path, elsewhere: Path) -> None:
    """The report: with GIT_COMMON_DIR naming the workspace's .git, git 2.39's ref store still takes its
    directory from .git/commondir (config and objects follow the environment, refs do not)."""
    ours = refs_of(repo)["refs/heads/main"]
    (repo / ".git" / "commondir").write_text(f"{elsewhere / '.git'}\n")
    listed = old_git(repo, "for-each-ref", "--format=%(refname)", check=False)
    assert "refs/heads/hidden" in listed.stdout + listed.stderr  # the other repository's branch
    old_git(repo, "update-ref", "refs/heads/planted", ours)
    assert "refs/heads/planted" in refs_of(elsewhere)  # and a ref update lands over there


def test_a_commondir_planted_in_the_repository_is_refused(repo: Path, elsewhere: Path) -> None:
    """The gateway's git never reads it (a shadow git dir names the repository), and refuses to run while it
    is there: the user's own git, run later without the gateway, would take its config from there."""
    before = refs_of(elsewhere)
    (repo / ".git" / "commondir").write_text(f"{elsewhere / '.git'}\n")
    message = refused(Repo(repo), "update-ref", "refs/heads/planted", "HEAD")
    assert "commondir" in message and "remove it" in message
    assert refs_of(elsewhere) == before


def test_a_commondir_planted_in_a_worktrees_admin_dir_is_not_read(repo: Path, elsewhere: Path, tmp_path: Path) -> None:
    """A task's worktree has an admin dir in the workspace's .git (git's own commondir file in it): the
    gateway's git goes by the repository its .git file names, reading, committing and moving HEAD."""
    Repo(repo).run("worktree", "add", "-q", "-b", "task/T1", str(tmp_path / "T1"), "main")
    admin = repo / ".git" / "worktrees" / "T1"
    (admin / "commondir").write_text(f"{elsewhere / '.git'}\n")
    listed = old_git(tmp_path / "T1", "for-each-ref", check=False)
    assert "refs/heads/hidden" in listed.stdout + listed.stderr  # before: the other repository's refs
    before = refs_of(elsewhere)
    tree = Repo(tmp_path / "T1")
    assert "refs/heads/hidden" not in tree.run("for-each-ref")
    (tmp_path / "T1" / "new.txt").write_text("x\n")
    tree.run("add", "-A")
    tree.run("commit", "-q", "-m", "T1: work")
    assert Repo(repo).run("log", "-1", "--format=%s", "task/T1").strip() == "T1: work"
    tree.run("checkout", "-q", "-B", "task/T1b", "main")  # HEAD moved in the shadow, written back
    assert (admin / "HEAD").read_text() == "ref: refs/heads/task/T1b\n"
    assert refs_of(elsewhere) == before


# --- links out of the repository -------------------------------------------------------------------------


def test_worktree_prune_through_a_planted_link_is_refused(repo: Path, tmp_path: Path) -> None:
    """git worktree prune (claims, merges, verification) deletes a stale admin dir by opening it as a
    directory: a link there, to the home dir or the state dir, empties what it points to."""
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keys").write_text("k")
    (repo / ".git" / "worktrees").mkdir()
    (repo / ".git" / "worktrees" / "evil").symlink_to(victim)
    old_git(repo, "worktree", "prune")
    assert list(victim.iterdir()) == []  # emptied
    (victim / "keys").write_text("k")
    (repo / ".git" / "worktrees").mkdir(exist_ok=True)
    (repo / ".git" / "worktrees" / "evil").unlink(missing_ok=True)
    (repo / ".git" / "worktrees" / "evil").symlink_to(victim)
    assert "a symbolic link" in refused(Repo(repo), "worktree", "prune")
    assert (victim / "keys").read_text() == "k"


@pytest.mark.parametrize("where", ["refs/heads/task", "logs/refs/heads/main", "packed-refs", "objects/ab"])
def test_a_link_where_git_keeps_refs_logs_or_objects_is_refused(repo: Path, tmp_path: Path, where: str) -> None:
    """Through a link under refs/ or logs/ git writes a ref or appends a reflog line anywhere (a shell's
    startup file, say); through packed-refs or an objects dir it reads refs and objects from anywhere."""
    outside = tmp_path / "outside"
    outside.mkdir()
    target = outside / "file"
    target.write_text("the user's file\n")
    link = repo / ".git" / where
    link.parent.mkdir(parents=True, exist_ok=True)
    if link.is_dir() and not link.is_symlink():  # the repo's own objects under that prefix (hashes vary by run)
        link.rename(tmp_path / "moved-objects")
    link.unlink(missing_ok=True)  # main's reflog
    link.symlink_to(outside if where in ("refs/heads/task", "objects/ab") else target)
    if where == "logs/refs/heads/main":
        moved = old_git(repo, "commit-tree", "HEAD^{tree}", "-p", "HEAD", "-m", "x").stdout.strip()
        old_git(repo, "update-ref", "-m", "appended", "refs/heads/main", moved)
        assert "appended" in target.read_text()  # before: git appended to the file the link names
    if where == "refs/heads/task":
        old_git(repo, "update-ref", "refs/heads/task/T1", "HEAD")
        assert (outside / "T1").exists()  # before: a ref written in the directory the link names
    snapshot = {p.name: p.read_bytes() for p in outside.iterdir()}
    message = refused(Repo(repo), "update-ref", "-m", "appended", "refs/heads/main", "HEAD")
    assert where in message and "symbolic link" in message
    assert {p.name: p.read_bytes() for p in outside.iterdir()} == snapshot


def test_a_fifo_where_git_reads_a_ref_is_refused(repo: Path) -> None:
    """git would wait on it for ever (the merge queue, every claim)."""
    os.mkfifo(repo / ".git" / "refs" / "heads" / "stuck")
    assert "a special file" in refused(Repo(repo), "for-each-ref")


def test_alternates_are_refused(repo: Path, elsewhere: Path) -> None:
    """objects/info/alternates lets git read objects from another directory (the vault in the state dir, a
    hidden project): refused, with how to make the repository hold its own objects."""
    secret = Repo(elsewhere).run("rev-parse", "main:secret.txt").strip()
    alternates = repo / ".git" / "objects" / "info" / "alternates"
    alternates.write_text(f"{elsewhere / '.git' / 'objects'}\n")
    assert "secret" in old_git(repo, "cat-file", "-p", secret).stdout  # before: read
    message = refused(Repo(repo), "cat-file", "-p", secret)
    assert "alternates" in message and "git repack -a -d" in message
    alternates.write_text("")  # an empty one names nothing
    assert Repo(repo).run("cat-file", "-t", "HEAD").strip() == "commit"


# --- HEAD ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "head",
    [
        "link",  # a link to a file of the agent's choosing (read by git as HEAD)
        "ref: ORIG_HEAD\n",  # a pseudo-ref, not a branch
        "ref: worktrees/T1/HEAD\n",  # another worktree's HEAD
        "ref: refs/heads/../../../outside\n",
        "not a ref\n",
    ],
)
def test_a_head_that_is_no_branch_nor_commit_is_refused(repo: Path, tmp_path: Path, head: str) -> None:
    path = repo / ".git" / "HEAD"
    if head == "link":
        (tmp_path / "elsewhere-head").write_text("ref: refs/heads/main\n")
        path.unlink()
        path.symlink_to(tmp_path / "elsewhere-head")
    else:
        path.write_text(head)
    assert "HEAD" in refused(Repo(repo), "rev-parse", "HEAD")


def test_a_detached_head_is_read_and_moved_back(repo: Path) -> None:
    commit = Repo(repo).run("rev-parse", "HEAD").strip()
    Repo(repo).run("checkout", "-q", "--detach", "main")
    assert (repo / ".git" / "HEAD").read_text().strip() == commit
    Repo(repo).run("checkout", "-q", "main")
    assert (repo / ".git" / "HEAD").read_text() == "ref: refs/heads/main\n"
    assert Repo(repo).run("status", "--porcelain") == ""  # the checkout's own index, not the shadow's


# --- a .git file -----------------------------------------------------------------------------------------


def test_a_git_file_is_taken_as_written_never_through_a_link(repo: Path, elsewhere: Path, tmp_path: Path) -> None:
    """The admin dir a worktree's .git file names is the repository's only while no link leads elsewhere on
    the way: a link there (in place of the admin dir) is refused, not followed to another repository."""
    Repo(repo).run("worktree", "add", "-q", "--detach", str(tmp_path / "T2"), "main")
    admin = repo / ".git" / "worktrees" / "T2"
    Repo(elsewhere).run("worktree", "add", "-q", "--detach", str(tmp_path / "E"), "main")
    admin.rename(tmp_path / "T2-admin")
    admin.symlink_to(elsewhere / ".git" / "worktrees" / "E")
    assert common_dir(tmp_path / "T2") == repo / ".git"
    assert "a symbolic link" in refused(Repo(tmp_path / "T2"), "for-each-ref")


# --- config and packed refs ------------------------------------------------------------------------------


def test_a_planted_config_worktree_is_never_read(repo: Path, tmp_path: Path) -> None:
    """.git/config is read-only to a developer's commands (docs/sandbox.md), but with extensions.worktreeConfig
    (a user's own setting) git also reads ``config.worktree`` from the checkout's git dir, which is writable:
    a filter there runs on the gateway's ``git add -A`` (checkpoints). The shadow git dir has none."""
    marker = tmp_path / "ran"
    Repo(repo).run("config", "core.repositoryformatversion", "1")
    Repo(repo).run("config", "extensions.worktreeConfig", "true")
    planted = f'[filter "evil"]\n\tclean = touch {marker}\n[core]\n\tworktree = {tmp_path}\n'
    (repo / ".git" / "config.worktree").write_text(planted)
    (repo / ".gitattributes").write_text("* filter=evil\n")
    (repo / "a.txt").write_text("a\n")
    old_git(repo, "add", "-A")
    assert marker.exists()  # before: the agent's filter ran
    marker.unlink()
    (repo / "b.txt").write_text("b\n")
    Repo(repo).run("add", "-A")
    Repo(repo).run("commit", "-q", "-m", "b")
    assert not marker.exists()
    assert "b.txt" in Repo(repo).run("ls-files")  # core.worktree from there was not taken either


def test_packed_refs_of_git_s_making_work_and_a_dangerous_name_fails_closed(repo: Path, tmp_path: Path) -> None:
    """packed-refs is the agent's to write: refs packed by git are read as ever; a ref name that climbs out
    of refs/ makes git stop (an error the caller records), and nothing is written where it points."""
    gateway = Repo(repo)
    gateway.run("branch", "task/T1")
    gateway.run("pack-refs", "--all")
    assert "refs/heads/task/T1" in gateway.run("for-each-ref", "--format=%(refname)")
    gateway.run("update-ref", "-d", "refs/heads/task/T1")
    head = gateway.run("rev-parse", "HEAD").strip()
    escaped = tmp_path / "escaped"
    packed = repo / ".git" / "packed-refs"
    packed.write_text(f"{packed.read_text()}{head} refs/heads/../../../../{escaped.relative_to('/')}\n")
    with pytest.raises(GitError) as caught:
        gateway.run("for-each-ref")
    assert "dangerous" in caught.value.message
    with pytest.raises(GitError):
        gateway.run("update-ref", f"refs/heads/../../../../{escaped.relative_to('/')}", head)
    assert not escaped.exists()
