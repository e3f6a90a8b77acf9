"""Git worktrees the gateway makes: one per task (its branch, in the worktrees dir beside the state dir, outside
the workspace), the verification checkouts and the merge queue's own.

A worktree is complete only when the gateway says so. ``make_worktree`` discards whatever is at the path (a
crash's half-made checkout included: never repaired into use), records the new worktree in the repository
without files (``git worktree add --no-checkout``), writes the files, and then checks the result: HEAD at the
commit (on the branch), the index exactly the commit's tree, no tracked file missing or changed, nothing else
there. Only then does its caller publish it: a task's worktree is published by the transaction that names it
on the task's row (gateway/tasks/worktree_records.py), which is the one place the gateway reads it from. A
crash at any point before leaves the row naming no worktree, and the next maker discards what it finds.

Every change to the repository's worktree records (add, remove, prune) is made under one lock in the state dir
(``metadata_lock``), across the gateway's processes and replicas on this host: git's own ``worktree add`` and
``worktree prune`` race otherwise (prune removes a record add is still writing). Writing the files happens
outside it, under the worktree's own lock (``worktree_lock``), which every git the gateway runs in that worktree
holds too (gateway/locks.py).

Each attempt of a task starts clean from the task's base (the base branch as it is when the attempt is claimed):
the previous attempt's work, committed or not, is kept under ``refs/gateway/attempts/<task>/<n>``
(``save_attempt``) before its worktree is discarded and the branch reset to the base.

    with worktree_lock(locks, "T1"):
        save_attempt(repo, "refs/gateway/attempts/T1/1", "task/T1", worktrees / "T1", sandbox)
        make_worktree(repo, worktrees / "T1", base, locks, branch="task/T1", reset_branch=True)
    sha = commit_all(worktrees / "T1", "T1: record ...", sandbox)
    changed_files(repo, base_commit, "task/T1")     # ["src/a.py", ...], deletions included
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from gateway.checkpoints import git_path, snapshot
from gateway.locks import abandoned, file_lock
from gateway.repo import GitError, Repo, common_dir
from gateway.sandbox import Sandbox

ATTEMPTS_REF = "refs/gateway/attempts/"


class IncompleteWorktree(GitError):
    code = "incomplete_worktree"


@contextmanager
def metadata_lock(locks: Path) -> Iterator[None]:
    """The repository's worktree records change under this, one process at a time."""
    with file_lock(locks / "worktrees.lock", "changing the repository's worktree records"):
        yield


@contextmanager
def worktree_lock(locks: Path, name: str) -> Iterator[None]:
    """One process at a time makes, repairs or runs git in the worktree ``name`` (a task id, or the merge
    queue's): a claim making it and a replica repairing it would otherwise both make it."""
    with file_lock(locks / f"worktree-{name}.lock", f"the worktree {name}"):
        yield


def admin_dirs(repo: Repo, path: Path) -> list[Path]:
    """The repository's records of a worktree at ``path`` (``.git/worktrees/<id>``, whose ``gitdir`` names
    ``path/.git``): read from the repository, never from the worktree an agent could write."""
    common = common_dir(repo.root)
    if common is None or not (common / "worktrees").is_dir():
        return []
    wanted = os.path.realpath(path / ".git")
    found = []
    for admin in sorted((common / "worktrees").iterdir()):
        try:
            named = (admin / "gitdir").read_text().strip()
        except OSError:
            continue
        if os.path.realpath(named) == wanted:
            found.append(admin)
    return found


def discard(repo: Repo, path: Path) -> bool:
    """Remove the worktree at ``path`` with the repository's records of it, whatever a crash left (files
    without ``.git``, a record git left locked while "initializing"). Call under ``metadata_lock``. Answers
    whether anything was there."""
    records = admin_dirs(repo, path)
    for admin in records:
        shutil.rmtree(admin)
    there = path.exists() or path.is_symlink()
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.exists():
        remove_tree(path)
    repo.run("worktree", "prune")
    return there or bool(records)


def remove_tree(path: Path) -> None:
    """Remove a directory a worker or a verification command wrote, including directories it made read-only:
    those are made writable again first (opened without following links: a link an agent left is never
    followed out of the tree)."""
    try:
        shutil.rmtree(path)
        return
    except PermissionError:
        pass
    for root, directories, _ in os.walk(path):
        for name in [".", *directories]:
            try:
                fd = os.open(os.path.join(root, name), os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
            except OSError:
                continue  # a link, or gone
            try:
                os.fchmod(fd, 0o700)
            finally:
                os.close(fd)
    shutil.rmtree(path)


def discard_worktree(repo: Repo, path: Path, locks: Path) -> bool:
    with metadata_lock(locks):
        return discard(repo, path)


def make_worktree(
    repo: Repo, path: Path, start: str, locks: Path, branch: str | None = None, reset_branch: bool = False
) -> str:
    """A complete checkout at ``path`` of ``start``: on ``branch`` (reset to ``start`` when ``reset_branch``,
    else at its tip) or detached. Whatever was at ``path`` is discarded first. Answers the commit checked
    out; raises IncompleteWorktree when the result is not exactly that commit."""
    commit = repo.run("rev-parse", "--verify", "-q", f"{start}^{{commit}}").strip()
    path.parent.mkdir(parents=True, exist_ok=True)
    with metadata_lock(locks):
        discard(repo, path)
        if branch is None:
            repo.run("worktree", "add", "-q", "--no-checkout", "--detach", str(path), commit)
        elif reset_branch:
            repo.run("worktree", "add", "-q", "--no-checkout", "-B", branch, str(path), commit)
        else:
            repo.run("worktree", "add", "-q", "--no-checkout", str(path), branch)
    Repo(path).run("reset", "-q", "--hard")
    problem = incomplete(path, commit, branch)
    if problem is not None:
        raise IncompleteWorktree(f"the worktree {path.name} was not made complete: {problem}")
    return commit


def incomplete(path: Path, commit: str, branch: str | None = None) -> str | None:
    """What keeps the checkout at ``path`` from being exactly ``commit`` (on ``branch``), or None: HEAD, the
    index against the commit's tree, and every file against the index (none missing, changed or extra)."""
    tree = Repo(path)
    head = tree.run("rev-parse", "-q", "--verify", "HEAD", check=False).strip()
    if head != commit:
        return f"HEAD is {head[:12] or 'missing'}, not {commit[:12]}"
    if branch is not None and tree.run("symbolic-ref", "-q", "HEAD", check=False).strip() != f"refs/heads/{branch}":
        return f"it is not on {branch}"
    if tree.run("write-tree", check=False).strip() != tree.run("rev-parse", f"{commit}^{{tree}}").strip():
        return "its index is not the commit's tree"
    status = [e for e in tree.run("status", "--porcelain", "-z", "--untracked-files=all", "--ignored").split("\0") if e]
    if status:
        missing = sum(1 for e in status if e[:2].strip() == "D")
        return f"{len(status)} paths differ from the commit ({missing} tracked files missing), e.g. {status[0][3:]}"
    return None


def save_attempt(repo: Repo, ref: str, branch: str, left_in: Path | None, sandbox: Sandbox) -> str | None:
    """Keep what the last attempt left under ``ref``, once (a ref already there was written before a crash):
    the files of its complete worktree ``left_in``, committed or not, else the task branch's tip. Answers the
    commit kept (None: no branch, nothing to keep)."""
    saved = repo.run("rev-parse", "-q", "--verify", ref, check=False).strip()
    if saved:
        return saved
    left = repo.run("rev-parse", "-q", "--verify", f"refs/heads/{branch}", check=False).strip()
    if left and left_in is not None and admin_dirs(repo, left_in):
        tree = Repo(left_in)
        at_tip = tree.run("rev-parse", "-q", "--verify", "HEAD", check=False).strip() == left
        if at_tip and tree.run("status", "--porcelain", "--untracked-files=all").strip():
            left = snapshot(tree, f"{branch}: what the attempt left uncommitted", [], sandbox)
    if not left:
        return None
    repo.run("update-ref", ref, left, "")  # only if absent: a saved attempt is never overwritten
    return left


def clear_abandoned_locks(repo: Repo, path: Path, refs: Sequence[str] = ()) -> list[str]:
    """Remove git's lock files on the worktree at ``path`` (its index, HEAD and the other files of its record)
    and on ``refs`` that a process now gone left (gateway/locks.py ``abandoned``). Call holding the worktree's
    lock, so that no git the gateway started still works there. Answers what was removed."""
    common = common_dir(repo.root)
    if common is None:
        return []
    candidates = [lock for admin in admin_dirs(repo, path) for lock in sorted(admin.glob("*.lock"))]
    removed = []
    for lock in [*candidates, *(common / f"{ref}.lock" for ref in refs)]:
        if abandoned(lock):
            lock.unlink(missing_ok=True)
            removed.append(str(lock.relative_to(common)))
    return removed


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
