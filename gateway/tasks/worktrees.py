"""Git worktrees for tasks: one branch and one working tree per task, inside the state dir.

ensure_worktree(repo, Path(".gateway/worktrees/T1"), "task/T1", base_commit)
sha = commit_all(Path(".gateway/worktrees/T1"), "T1: record ...")
changed_files(repo, base_commit, "task/T1")     # ["src/a.py", ...], deletions included
"""

from __future__ import annotations

from pathlib import Path

from gateway.repo import Repo


def ensure_worktree(repo: Repo, path: Path, branch: str, base_commit: str) -> Path:
    """The task's worktree, created on first use; a later claim continues where the last attempt left off."""
    if (path / ".git").exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    repo.run("worktree", "prune")
    exists = repo.run("rev-parse", "--verify", "-q", f"refs/heads/{branch}", check=False).strip()
    if exists:
        repo.run("worktree", "add", "-q", str(path), branch)
    else:
        repo.run("worktree", "add", "-q", "-b", branch, str(path), base_commit)
    return path


def commit_all(path: Path, message: str) -> str:
    """Commit everything in the worktree (the worker never commits itself); answers the new HEAD."""
    tree = Repo(path)
    tree.run("add", "-A")
    tree.run("commit", "-q", "--allow-empty", "--no-verify", "-F", "-", input=message)
    return tree.run("rev-parse", "HEAD").strip()


def changed_files(repo: Repo, base_commit: str, branch: str) -> list[str]:
    """Every path the branch changes relative to where it forked (renames as delete plus add)."""
    out = repo.run("diff", "--name-only", "-z", "--no-renames", f"{base_commit}...{branch}")
    return sorted(p for p in out.split("\0") if p)


def is_clean(path: Path) -> bool:
    return Repo(path).run("status", "--porcelain").strip() == ""


def head(path: Path) -> str:
    return Repo(path).run("rev-parse", "HEAD").strip()
