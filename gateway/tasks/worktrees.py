"""Git worktrees for tasks: one branch and one working tree per task, in the worktrees dir (beside the
state dir, outside the workspace).

Each attempt starts clean from the task's base (the base branch as it is when the attempt is claimed):
the previous attempt's work, committed or not, is kept under ``refs/gateway/attempts/<task>/<n>`` for the
record, and the worktree and branch are reset to the base.

prepare_worktree(repo, worktrees / "T1", "task/T1", base, save_as="refs/gateway/attempts/T1/1")
sha = commit_all(worktrees / "T1", "T1: record ...", sandbox)
changed_files(repo, base_commit, "task/T1")     # ["src/a.py", ...], deletions included
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from gateway.checkpoints import git_path, snapshot
from gateway.repo import Repo
from gateway.sandbox import Sandbox

ATTEMPTS_REF = "refs/gateway/attempts/"
PROCESS_STARTED = time.time()  # a git lock file older than this outlived the process that took it


def prepare_worktree(
    repo: Repo,
    path: Path,
    branch: str,
    base: str,
    sandbox: Sandbox,
    save_as: str | None = None,
    keep_work: bool = False,
) -> Path:
    """The task's worktree on ``branch``, reset to ``base`` for a new attempt (``save_as`` keeps what the
    last attempt left, commits and uncommitted files alike); ``keep_work`` only makes sure it exists (a
    repair after a crash: the attempt's work so far stays)."""
    repo.run("worktree", "prune")
    exists = repo.run("rev-parse", "-q", "--verify", f"refs/heads/{branch}", check=False).strip()
    if (path / ".git").exists():
        if keep_work:
            return path
        tree = Repo(path)
        if save_as:
            left = tree.run("rev-parse", "HEAD").strip()
            if tree.run("status", "--porcelain", "--untracked-files=all").strip():
                left = snapshot(tree, f"{branch}: what the attempt left uncommitted", [], sandbox)
            if left != base:
                repo.run("update-ref", save_as, left)
        tree.run("checkout", "-q", "--force", "-B", branch, base)
        tree.run("clean", "-q", "-fdx")
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(path, ignore_errors=True)  # a half-made worktree (a crash inside `git worktree add`)
    if exists and keep_work:
        repo.run("worktree", "add", "-q", str(path), branch)
        return path
    if exists and save_as and exists != base:
        repo.run("update-ref", save_as, exists)
    repo.run("worktree", "add", "-q", "-B", branch, str(path), base)
    return path


def commit_all(path: Path, message: str, sandbox: Sandbox) -> str:
    """Commit everything in the worktree (the worker never commits itself); answers the new HEAD, or the
    commit made already with this message when nothing changed since.
    ``git add`` reads the worker's files behind the sandbox's wall (writing only objects and the
    worktree's index); the commit, which reads the index and moves the branch, runs outside."""
    tree = Repo(path)
    writes = [git_path(tree, "objects"), git_path(tree, "index").parent]
    Repo(path, wall=sandbox.git_wall(path, writes=writes)).run("add", "-A")
    if _made_already(tree, message):
        return tree.run("rev-parse", "HEAD").strip()
    tree.run("commit", "-q", "--allow-empty", "--no-verify", "-F", "-", input=message)
    return tree.run("rev-parse", "HEAD").strip()


def _made_already(tree: Repo, message: str) -> bool:
    """Whether HEAD is this very commit: the same message over the same tree (a report taken again after a
    crash cut it short once its commit was made, before the report was recorded)."""
    if tree.run("write-tree").strip() != tree.run("rev-parse", "-q", "--verify", "HEAD^{tree}", check=False).strip():
        return False
    return tree.run("log", "-1", "--format=%B", "HEAD").strip() == message.strip()


def changed_files(repo: Repo, base_commit: str, branch: str) -> list[str]:
    """Every path the branch changes relative to where it forked (renames as delete plus add)."""
    out = repo.run("diff", "--name-only", "-z", "--no-renames", f"{base_commit}...{branch}")
    return sorted(p for p in out.split("\0") if p)


def is_clean(path: Path) -> bool:
    return Repo(path).run("status", "--porcelain").strip() == ""


def head(path: Path) -> str:
    return Repo(path).run("rev-parse", "HEAD").strip()


def git_dir(worktree: Path) -> Path | None:
    """The private git dir of a linked worktree (its index, HEAD, MERGE_HEAD and their locks)."""
    try:
        text = (worktree / ".git").read_text()
    except OSError:
        return None
    path = Path(text.removeprefix("gitdir:").strip())
    return path if path.is_absolute() and path.is_dir() else None


def remove_stale_locks(directory: Path, pattern: str, older_than: float = PROCESS_STARTED) -> list[str]:
    """Remove git lock files matching ``pattern`` under ``directory`` that are older than ``older_than``: a
    live git holds one for milliseconds, so one older than this process was left by a process that died.
    Answers what was removed."""
    removed = []
    for lock in sorted(directory.glob(pattern)):
        try:
            if lock.stat().st_mtime < older_than:
                lock.unlink()
                removed.append(str(lock.relative_to(directory)))
        except FileNotFoundError:
            continue
    return removed
