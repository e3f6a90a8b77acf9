"""A commit of a working tree as it is now: every file git does not ignore, tracked or not.

Built through an index of the gateway's own, never the user's: only ``git add`` reads the work tree, and
it runs behind the sandbox's wall (a directory swapped for a link to the gateway's keys leads nowhere in
there), writing nothing but objects and that index. For a checkpoint the index is kept in the state dir
between calls (``IndexCache``), so ``git add -A`` hashes only what changed since the last checkpoint of
that tree, not the whole tree each time.

Checkpoints run git through a ``shadow`` git dir (HEAD and a commondir file of the gateway's making,
naming the repository the gateway knows from the layout): the work tree's own HEAD, index and
commondir file (all within an agent's reach in a developer's workspace) are never what git goes by, so a
corrupted HEAD neither breaks the checkpoint nor steers it.

    with shadow(root, repository) as git:
        tree = write_tree(git, ["gateway.yaml"], sandbox, IndexCache(state / "checkpoints" / "index" / tag), head)
    commit = snapshot(Repo(worktree), "leftovers", [], sandbox)   # tree and commit, HEAD as its parent
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from gateway.repo import Repo
from gateway.sandbox import Sandbox

__all__ = ["IndexCache", "git_path", "shadow", "snapshot", "write_tree"]


@contextlib.contextmanager
def shadow(root: Path, repository: Path) -> Iterator[Repo]:
    """git for the checkout at ``root`` of ``repository`` (its common dir), through a git dir of the
    gateway's making in a private temporary directory (which a walled git must be given: ``scratch``)."""
    with tempfile.TemporaryDirectory(prefix="gateway-git-") as scratch:
        gitdir = Path(scratch) / "git"
        gitdir.mkdir()
        (gitdir / "HEAD").write_text("ref: refs/gateway/shadow\n")
        (gitdir / "commondir").write_text(f"{repository}\n")
        yield Repo(root, gitdir=gitdir)


@dataclass(frozen=True)
class IndexCache:
    """The gateway's index of one work tree, kept between checkpoints (``<path>``), and the commit its
    tracked entries were read from (``<path>.head``): git reuses the file data of unchanged paths."""

    path: Path

    def load(self, index: Path, head: str) -> bool:
        """Copy the cached index to ``index``; True when it was read from ``head`` (else read it again)."""
        try:
            shutil.copyfile(self.path, index)
            return self.path.with_suffix(".head").read_text() == head
        except OSError:
            return False

    def save(self, index: Path, head: str) -> None:
        """Marker off, index in, marker on: a crash in between leaves an index read again next time."""
        marker = self.path.with_suffix(".head")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        marker.unlink(missing_ok=True)
        for target, copy in (
            (self.path, lambda to: shutil.copyfile(index, to)),
            (marker, lambda to: to.write_text(head)),
        ):
            aside = target.with_name(f".{target.name}.{os.getpid()}.tmp")
            copy(aside)
            os.replace(aside, target)


def write_tree(
    repo: Repo, exclude: list[str], sandbox: Sandbox, cache: IndexCache | None = None, head: str | None = None
) -> str:
    """The tree of the working tree as it is now (``exclude``: paths left out), through the gateway's index:
    read from ``head`` (the checkout's commit, so tracked files git ignores are in) unless the cached one
    already was. ``git add`` runs walled; writing the tree reads and writes only the index and objects."""
    objects = Path(repo.gitdir.joinpath("commondir").read_text().strip(), "objects") if repo.gitdir else None
    objects = objects or git_path(repo, "objects")
    with tempfile.TemporaryDirectory(prefix="gateway-index-") as scratch:
        index = Path(scratch) / "index"
        env = {"GIT_INDEX_FILE": str(index)}
        # built first: a repository whose objects dir is a link is refused before anything is written
        writes = [objects, Path(scratch), *([repo.gitdir.parent] if repo.gitdir else [])]
        walled = Repo(repo.root, wall=sandbox.git_wall(repo.root, writes=writes), gitdir=repo.gitdir)
        cached = cache is not None and cache.load(index, head or "")
        if head and not cached:
            # --reset: the stat data of paths whose content is the same stays (and none is refused as stale)
            repo.run("read-tree", "--reset", head, env=env)
        walled.run("add", "-A", "--", ".", env=env)
        if exclude:
            # left out of the index after the add, not by an exclude pathspec to it: `git add` fails on a
            # pathspec that names an ignored file (a .gitignore listing gateway.yaml failed every tier-2 call).
            # ls-files and update-index read the index only, never the work tree; a directory goes whole.
            named = repo.run("ls-files", "-z", "--cached", "--", *[f":(literal){p}" for p in exclude], env=env)
            if named:
                repo.run("update-index", "--force-remove", "-z", "--stdin", input=named, env=env)
        tree = repo.run("write-tree", env=env).strip()
        if cache is not None:
            cache.save(index, head or "")
    return tree


def snapshot(repo: Repo, message: str, exclude: list[str], sandbox: Sandbox) -> str:
    """A commit of the working tree as it is now, with HEAD (if any) as its parent."""
    head = repo.run("rev-parse", "--verify", "-q", "HEAD", check=False).strip()
    tree = write_tree(repo, exclude, sandbox, head=head)
    parents = ["-p", head] if head else []
    return repo.run("commit-tree", tree, *parents, "-m", message).strip()


def git_path(repo: Repo, name: str) -> Path:
    """Where the repository keeps ``name`` ("objects", "index"): what a walled ``git add`` may write."""
    return repo.root / repo.run("rev-parse", "--git-path", name).strip()
