"""Tier-2 safeguards: a rollback point taken before a risky call runs.

In a git workspace the checkpoint is a commit of the whole working tree (tracked and untracked files,
.gitignore respected) built through a temporary index, so neither the user's index nor their branch
moves; a ref under ``refs/gateway/checkpoints/`` keeps it from garbage collection. Outside git, the
files the call names are copied into the state dir.

    checkpoints = Checkpoints(db, state_dir)
    cp = checkpoints.take(workspace_root, call_id, paths=["src/a.py"])   # {"id", "kind", "ref", ...}
    checkpoints.rollback(cp["id"])                                      # the tree as it was
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from gateway.errors import ConfigError, ToolFailed
from gateway.ledger.chain import utc_now
from gateway.ledger.store import Database
from gateway.repo import Repo
from gateway.types import JSONObject

REF_PREFIX = "refs/gateway/checkpoints/"
MAX_COPY_BYTES = 64 * 1024 * 1024


class Checkpoints:
    def __init__(self, db: Database, directory: Path) -> None:
        self.db = db
        self.directory = directory

    def take(self, root: Path, call_id: str, paths: list[str], exclude: Sequence[str] = ()) -> JSONObject:
        """``exclude``: workspace-relative paths left out (the gateway's own config), never rolled back."""
        checkpoint_id = "cp-" + secrets.token_hex(6)
        repo = Repo(root)
        if repo.is_repo():
            commit = snapshot(repo, f"gateway checkpoint {checkpoint_id} before call {call_id}", list(exclude))
            repo.run("update-ref", REF_PREFIX + checkpoint_id, commit)
            detail: JSONObject = {"commit": commit, "exclude": list(exclude)}
            kind, ref = "git", REF_PREFIX + checkpoint_id
        else:
            detail = {"files": self._copy(root, checkpoint_id, paths)}
            kind, ref = "files", None
        with self.db.transaction() as tx:
            tx.execute(
                "INSERT INTO checkpoints (id, time, kind, workspace, ref, call_id, detail) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (checkpoint_id, utc_now(), kind, str(root), ref, call_id, json.dumps(detail)),
            )
        return {"id": checkpoint_id, "kind": kind, "ref": ref, "rollback": f"gateway rollback {checkpoint_id}"}

    def get(self, checkpoint_id: str) -> JSONObject:
        rows = self.db.query("SELECT * FROM checkpoints WHERE id = ?", (checkpoint_id,))
        if not rows:
            raise ConfigError(f"no checkpoint {checkpoint_id!r}")
        row = dict(rows[0])
        row["detail"] = json.loads(row["detail"])
        return row

    def rollback(self, checkpoint_id: str) -> JSONObject:
        """Put the workspace back as it was when the checkpoint was taken; answers what changed."""
        cp = self.get(checkpoint_id)
        root = Path(cp["workspace"])
        if cp["kind"] == "git":
            return restore(Repo(root), cp["detail"]["commit"], cp["detail"].get("exclude", []))
        restored, removed = [], []
        for rel, saved in cp["detail"]["files"].items():
            target = root / rel
            if saved is None:  # did not exist before the call
                if target.is_dir() and not target.is_symlink():
                    shutil.rmtree(target)
                    removed.append(rel)
                elif target.exists() or target.is_symlink():
                    target.unlink()
                    removed.append(rel)
                continue
            source = self.directory / checkpoint_id / saved
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
            target.parent.mkdir(parents=True, exist_ok=True)
            if source.is_dir():
                shutil.copytree(source, target, symlinks=True)
            else:
                shutil.copy2(source, target)
            restored.append(rel)
        return {"checkpoint": checkpoint_id, "restored": restored, "removed": removed}

    def _copy(self, root: Path, checkpoint_id: str, paths: list[str]) -> dict[str, str | None]:
        """Copy each named path (inside the workspace) aside; None marks a path that does not exist yet."""
        target_dir = self.directory / checkpoint_id
        target_dir.mkdir(parents=True, exist_ok=True)
        saved: dict[str, str | None] = {}
        total = 0
        for index, rel in enumerate(sorted(set(paths))):
            if rel.startswith("/"):
                continue  # outside the workspace: tier 3, never safeguarded here
            source = root / rel
            if not source.exists():
                saved[rel] = None
                continue
            total += _size(source)
            if total > MAX_COPY_BYTES:
                raise ToolFailed(f"cannot safeguard: more than {MAX_COPY_BYTES} bytes to copy; nothing was run")
            name = f"{index:04d}"
            if source.is_dir():
                shutil.copytree(source, target_dir / name, symlinks=True)
            else:
                shutil.copy2(source, target_dir / name, follow_symlinks=False)
            saved[rel] = name
        return saved


def snapshot(repo: Repo, message: str, exclude: list[str]) -> str:
    """A commit of the working tree as it is now, through a throwaway index."""
    with tempfile.TemporaryDirectory() as tmp:
        index = os.path.join(tmp, "index")
        env = {"GIT_INDEX_FILE": index}
        head = repo.run("rev-parse", "--verify", "-q", "HEAD", check=False).strip()
        if head:
            repo.run("read-tree", head, env=env)
        if exclude:
            repo.run("rm", "-q", "--cached", "--ignore-unmatch", "--", *exclude, env=env)
        repo.run("add", "-A", "--", ".", *[f":(exclude,literal){p}" for p in exclude], env=env)
        tree = repo.run("write-tree", env=env).strip()
    parents = ["-p", head] if head else []
    return repo.run("commit-tree", tree, *parents, "-m", message).strip()


def restore(repo: Repo, commit: str, exclude: list[str]) -> JSONObject:
    """Make the working tree match ``commit`` (tracked and untracked files), leaving HEAD alone."""
    now = set(_worktree_files(repo)) - set(exclude)
    then = set(repo.run("ls-tree", "-r", "-z", "--name-only", commit).split("\0")) - {""}
    with tempfile.TemporaryDirectory() as tmp:
        env = {"GIT_INDEX_FILE": os.path.join(tmp, "index")}
        repo.run("read-tree", commit, env=env)
        repo.run("checkout-index", "-a", "-f", env=env)
    removed = sorted(now - then)
    for rel in removed:
        (repo.root / rel).unlink(missing_ok=True)
    return {"commit": commit, "restored": sorted(then), "removed": removed}


def _worktree_files(repo: Repo) -> list[str]:
    out = repo.run("ls-files", "-z", "--cached", "--others", "--exclude-standard")
    return [p for p in out.split("\0") if p and (repo.root / p).exists()]


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
