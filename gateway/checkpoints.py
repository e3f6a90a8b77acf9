"""Tier-2 safeguards: a rollback point taken before a risky call runs.

In a git workspace the checkpoint records everything a command there can change: the working tree (a
commit of tracked and untracked files, .gitignore respected, built through a temporary index so neither
the user's index nor their branch moves), the index, HEAD, every branch, tag and remote-tracking ref,
and the stash list. One commit under ``refs/gateway/checkpoints/`` has all of them as parents, which
keeps their objects from garbage collection: a deleted branch, a commit ``reset --hard`` dropped and a
dropped stash all come back with ``rollback``. That ref lives in the workspace's repository, which an
agent can write: right after it is made, the ``Vault`` (a bare repository in the state dir, which no
sandbox shows) fetches it, so deleting ``refs/gateway/*``, expiring the reflog and ``git gc --prune=now``
lose nothing: ``rollback`` fetches the objects back first. Outside git, the files the call names are
copied into the state dir.

    checkpoints = Checkpoints(db, state_dir / "checkpoints", sandbox)
    cp = checkpoints.take(workspace_root, call_id, paths=["src/a.py"])   # {"id", "kind", "ref", ...}
    checkpoints.rollback(cp["id"])              # the tree, index, refs and stashes as they were
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
from gateway.ledger.store import Store
from gateway.repo import GitError, Repo
from gateway.sandbox import Sandbox
from gateway.types import JSONObject

REF_PREFIX = "refs/gateway/checkpoints/"
MAX_COPY_BYTES = 64 * 1024 * 1024
# git's own maintenance stays out of the gateway's fetches: no automatic gc, no background process
QUIET_FETCH = ("-c", "gc.auto=0", "-c", "maintenance.auto=false", "fetch", "--quiet", "--no-tags")


class Vault:
    """A bare repository in the state dir with a copy of every git checkpoint's objects.

    Each direction is driven by the workspace's git (``Repo.run``: ``SAFE_CONFIG``, and the repository
    directory pinned from the layout, so a ``commondir`` file an agent planted is not followed): it pushes
    a checkpoint in, and a rollback fetches it back. The other end of both is git in the vault, whose config
    and hooks are the gateway's.

        vault = Vault(state_dir / "checkpoints" / "vault.git")
        vault.keep(Repo(workspace), "cp-1a2b3c", keep_commit)      # after update-ref refs/gateway/checkpoints/cp-1a2b3c
        vault.bring_back(Repo(workspace), "cp-1a2b3c", keep_commit) # before a rollback reads those objects
    """

    PREFIX = "refs/checkpoints/"

    def __init__(self, path: Path) -> None:
        self.path = path
        self.repo = Repo(path)

    def keep(self, workspace: Repo, checkpoint_id: str, commit: str) -> None:
        """Copy the objects of the workspace's checkpoint ref in; raises GitError when they did not arrive."""
        if not (self.path / "HEAD").exists():
            self._create()
        ref = self.PREFIX + checkpoint_id
        workspace.run("push", "--quiet", "--no-verify", str(self.path), f"+{commit}:{ref}")
        if self.repo.run("rev-parse", "--verify", "-q", ref, check=False).strip() != commit:
            raise GitError(f"the checkpoint {checkpoint_id} did not reach the vault {self.path}")

    def _create(self) -> None:
        """Made aside and renamed into place: several gateway processes (serve --workers, replicas) may take
        their first checkpoint at once, and two `git init` in one directory collide."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        aside = Path(tempfile.mkdtemp(prefix=".vault-", dir=self.path.parent))
        try:
            repo = Repo(aside)
            repo.run("init", "--bare", "--quiet")
            for key, value in (("gc.auto", "0"), ("receive.autogc", "false")):  # the vault keeps everything
                repo.run("config", key, value)
            os.rename(aside, self.path)  # onto nothing (or an empty dir); another process's vault stays
        except OSError:
            if not (self.path / "HEAD").exists():
                raise
        finally:
            shutil.rmtree(aside, ignore_errors=True)

    def bring_back(self, workspace: Repo, checkpoint_id: str, commit: str) -> bool:
        """Put the checkpoint's ref (and every object it reaches) back into the workspace's repository;
        False when the vault does not hold it (a checkpoint taken before there was a vault)."""
        ref = self.PREFIX + checkpoint_id
        if self.repo.run("rev-parse", "--verify", "-q", ref, check=False).strip() != commit:
            return False
        workspace.run(*QUIET_FETCH, "--no-write-fetch-head", str(self.path), f"+{ref}:{REF_PREFIX}{checkpoint_id}")
        return True


class Checkpoints:
    def __init__(self, db: Store, directory: Path, sandbox: Sandbox) -> None:
        self.db = db
        self.directory = directory
        self.sandbox = sandbox  # the snapshot reads the agent's tree behind its wall
        self.vault = Vault(directory / "vault.git")

    def take(self, root: Path, call_id: str, paths: list[str], exclude: Sequence[str] = ()) -> JSONObject:
        """``exclude``: workspace-relative paths left out (the gateway's own config), never rolled back."""
        checkpoint_id = "cp-" + secrets.token_hex(6)
        repo = Repo(root)
        if repo.is_repo():
            commit = snapshot(
                repo, f"gateway checkpoint {checkpoint_id} before call {call_id}", list(exclude), self.sandbox
            )
            detail: JSONObject = {"commit": commit, "exclude": list(exclude)}
            if (root / ".git").is_dir():
                # a repository's own checkout: a command there can move refs, the index and stashes. In a
                # task's worktree (.git is a file) it cannot: the sandbox keeps the repository read-only.
                detail.update(repository_state(repo))
            keep = keepalive(repo, commit, detail, f"gateway checkpoint {checkpoint_id}: what it restores")
            repo.run("update-ref", REF_PREFIX + checkpoint_id, keep)
            self.vault.keep(repo, checkpoint_id, keep)  # before the call runs: it may destroy the ref above
            detail["keep"] = keep
            kind, ref = "git", REF_PREFIX + checkpoint_id
        else:
            detail = {"files": self._copy(root, checkpoint_id, paths)}
            kind, ref = "files", None
        what = {"git": "the working tree", "files": "the files this call names"}[kind]
        if "refs" in detail:
            what = "the working tree, index, refs and stashes"
        with self.db.transaction() as tx:
            tx.execute(
                "INSERT INTO checkpoints (id, time, kind, workspace, ref, call_id, detail) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (checkpoint_id, utc_now(), kind, str(root), ref, call_id, json.dumps(detail)),
            )
        return {
            "id": checkpoint_id,
            "kind": kind,
            "ref": ref,
            "restores": what,
            "rollback": f"gateway rollback {checkpoint_id}",
        }

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
            repo = Repo(root)
            if cp["detail"].get("keep"):
                self.vault.bring_back(repo, checkpoint_id, cp["detail"]["keep"])
            refs = restore_repository(repo, cp["detail"]) if "refs" in cp["detail"] else {}
            files = restore(repo, cp["detail"]["commit"], cp["detail"].get("exclude", []))
            if cp["detail"].get("index"):
                repo.run("read-tree", cp["detail"]["index"])
            return {"checkpoint": checkpoint_id, **files, **refs}
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


def snapshot(repo: Repo, message: str, exclude: list[str], sandbox: Sandbox) -> str:
    """A commit of the working tree as it is now, through a throwaway index. Only ``git add`` reads the
    work tree: it runs behind the sandbox's wall, writing nothing but objects and the throwaway index (a
    directory swapped for a symlink to the gateway's keys leads nowhere in there). The rest reads and
    writes only the index and objects, outside."""
    with tempfile.TemporaryDirectory() as tmp:
        index = os.path.join(tmp, "index")
        env = {"GIT_INDEX_FILE": index}
        head = repo.run("rev-parse", "--verify", "-q", "HEAD", check=False).strip()
        if head:
            repo.run("read-tree", head, env=env)
        walled = Repo(repo.root, wall=sandbox.git_wall(repo.root, writes=[git_path(repo, "objects"), Path(tmp)]))
        walled.run("add", "-A", "--", ".", env=env)
        if exclude:
            # left out of the index after the add, not by an exclude pathspec to it: `git add` fails on a
            # pathspec that names an ignored file (a .gitignore listing gateway.yaml failed every tier-2 call).
            # ls-files and update-index read the index only, never the work tree; a directory goes whole.
            named = repo.run("ls-files", "-z", "--cached", "--", *[f":(literal){p}" for p in exclude], env=env)
            if named:
                repo.run("update-index", "--force-remove", "-z", "--stdin", input=named, env=env)
        tree = repo.run("write-tree", env=env).strip()
    parents = ["-p", head] if head else []
    return repo.run("commit-tree", tree, *parents, "-m", message).strip()


# Refs a rollback leaves alone: the gateway's own (checkpoints, task branches other agents work on).
GATEWAY_REFS = ("refs/gateway/", "refs/heads/task/")


def repository_state(repo: Repo) -> JSONObject:
    """HEAD, the index's tree, every ref but the gateway's, and the stash list (newest first)."""
    head = repo.run("symbolic-ref", "-q", "HEAD", check=False).strip()
    detached = "" if head else repo.run("rev-parse", "-q", "--verify", "HEAD", check=False).strip()
    index = repo.run("write-tree", check=False).strip()  # fails with unmerged entries: then not restored
    refs = {}
    for line in repo.run("for-each-ref", "--format=%(refname) %(objectname)").splitlines():
        name, _, sha = line.partition(" ")
        if name != "refs/stash" and not name.startswith(GATEWAY_REFS):
            refs[name] = sha
    stash = []
    if repo.run("rev-parse", "-q", "--verify", "refs/stash", check=False).strip():
        for line in repo.run("log", "-g", "--format=%H%x00%gs", "refs/stash").splitlines():
            sha, _, message = line.partition("\0")
            stash.append({"commit": sha, "message": message})
    return {"head": head or None, "detached": detached or None, "index": index or None, "refs": refs, "stash": stash}


def keepalive(repo: Repo, snapshot_commit: str, state: JSONObject, message: str) -> str:
    """A commit whose parents are the snapshot and every commit the checkpoint may restore: one ref to it
    keeps them all from garbage collection."""
    refs, stash = state.get("refs", {}), state.get("stash", [])
    tips = [refs[name] for name in sorted(refs)] + [entry["commit"] for entry in stash]
    commits = [sha for sha in dict.fromkeys(tips) if repo.run("cat-file", "-t", sha, check=False).strip() == "commit"]
    if state.get("index"):  # the index's tree is no commit's: one of its own keeps it
        commits.append(repo.run("commit-tree", state["index"], "-m", "the index").strip())
    tree = repo.run("rev-parse", f"{snapshot_commit}^{{tree}}").strip()
    parents = [arg for sha in [snapshot_commit, *commits] for arg in ("-p", sha)]
    return repo.run("commit-tree", tree, *parents, "-m", message).strip()


def restore_repository(repo: Repo, state: JSONObject) -> JSONObject:
    """Put refs, HEAD and the stash list back as recorded; refs made since (not the gateway's) go."""
    now = {}
    for line in repo.run("for-each-ref", "--format=%(refname) %(objectname)").splitlines():
        name, _, sha = line.partition(" ")
        if name != "refs/stash" and not name.startswith(GATEWAY_REFS):
            now[name] = sha
    recorded: dict[str, str] = state["refs"]
    moved = sorted(name for name, sha in recorded.items() if now.get(name) != sha)
    removed = sorted(set(now) - set(recorded))
    commands = [f"update {name} {recorded[name]}" for name in moved] + [f"delete {name}" for name in removed]
    if commands:
        repo.run("update-ref", "--stdin", input="\n".join(commands) + "\n")
    if state.get("head"):
        repo.run("symbolic-ref", "HEAD", state["head"])
    elif state.get("detached"):
        repo.run("update-ref", "--no-deref", "HEAD", state["detached"])
    repo.run("update-ref", "-d", "refs/stash", check=False)
    for entry in reversed(state.get("stash") or []):  # oldest first, so the newest ends on top
        repo.run("stash", "store", "-m", entry["message"], entry["commit"])
    return {"refs_restored": moved, "refs_removed": removed, "stashes": len(state.get("stash") or [])}


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


def git_path(repo: Repo, name: str) -> Path:
    """Where the repository keeps ``name`` ("objects", "index"): what a walled ``git add`` may write."""
    return repo.root / repo.run("rev-parse", "--git-path", name).strip()


def _worktree_files(repo: Repo) -> list[str]:
    out = repo.run("ls-files", "-z", "--cached", "--others", "--exclude-standard")
    return [p for p in out.split("\0") if p and (repo.root / p).exists()]


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
