"""Tier-2 safeguards: a rollback point taken before a risky call runs, and the rollback a person runs.

Which kind a checkpoint is comes from what the gateway knows, never from the tree at the time of the call:
the workspace's layout recorded in the state dir when it was set up (``layout.json``, by ``gateway init``
or this version's first start; ``checkpoints.kind`` in gateway.yaml overrides it), and task worktrees,
which the gateway made with git. A corrupted HEAD changes nothing about it.

- git: a commit of the working tree (every file .gitignore does not exclude; see snapshot.py), and in a
  repository's own checkout also HEAD, the index, every ref and the stash list (repository.py). It is
  pushed to the vault (vault.py) before the call runs; only the newest ``repository_refs`` stay as refs
  under ``refs/gateway/checkpoints/`` in the repository, for a person to look at.
- files (a workspace without git): the paths the call names, read without following a link and written
  straight into the vault.

A rollback first works out what it would do (``plan``: plan.py, from the vault's record and the tree as
it is now), refuses anything that would leave the worktree, and then writes and removes through walks
that follow no link (tree.py) and moves refs with git behind the sandbox's wall. ``--dry-run`` stops
after the plan. Every rollback, refused or done, is a ledger row. The vault keeps the newest
``checkpoints.keep`` checkpoints younger than ``max_age_days``; older ones are pruned (their row says
when), and a rollback of one says so.

    checkpoints = Checkpoints(db, sandbox, config, ledger)
    cp = checkpoints.take(workspace_root, call_id, paths=["src/a.py"])   # {"id", "kind", "restores", ...}
    checkpoints.rollback(cp["id"], dry_run=True)   # what it would write, remove and move; changes nothing
    checkpoints.rollback(cp["id"])                 # the tree (and index, refs, stashes) as they were
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import stat
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import structlog

from gateway.checkpoints.plan import DIRECTORY, FilesPlan, plan_files
from gateway.checkpoints.repository import (
    CHECKPOINT_REFS,
    RefsPlan,
    keep_parents,
    list_refs,
    plan_refs,
    read_head,
    record,
    restore_refs,
)
from gateway.checkpoints.snapshot import IndexCache, git_path, shadow, snapshot, write_tree
from gateway.checkpoints.tree import WorkTree, unsafe
from gateway.checkpoints.vault import QUIET_FETCH, Vault, tree_entries
from gateway.config import CheckpointsConfig, GatewayConfig
from gateway.errors import ConfigError, GatewayError, ToolFailed
from gateway.ledger.chain import utc_now
from gateway.locks import file_lock
from gateway.repo import Repo, common_dir
from gateway.sandbox import Sandbox
from gateway.store import Store
from gateway.store.repositories import checkpoints
from gateway.types import JSONObject

__all__ = [
    "CheckpointPruned",
    "Checkpoints",
    "RollbackRefused",
    "Vault",
    "git_path",
    "record_layout",
    "snapshot",
]

log = structlog.get_logger(__name__)

LAYOUT_FILE = "layout.json"
ORPHAN_GRACE = timedelta(hours=1)  # a vault ref with no row this young may be a checkpoint still being taken
MAX_COPY_ENTRIES = 100_000


class CheckpointPruned(ConfigError):
    code = "checkpoint_pruned"


class RollbackRefused(GatewayError):
    code = "rollback_refused"
    outcome = "denied"


def record_layout(directory: Path, workspace: Path) -> JSONObject:
    """Decide once, from the workspace's layout, which kind its checkpoints are, and record it in the state
    dir: a ``.git`` directory at its root (its own repository), a ``.git`` file (a checkout of another
    one), or neither (copies)."""
    git = workspace / ".git"
    repository = common_dir(workspace)
    if git.is_dir() and not git.is_symlink():
        layout: JSONObject = {"kind": "git", "repository": str(git), "own": True}
    elif repository is not None:
        layout = {"kind": "git", "repository": str(repository), "own": False}
    else:
        layout = {"kind": "files", "repository": None, "own": False}
    layout.update(workspace=str(workspace), recorded=utc_now())
    directory.mkdir(parents=True, exist_ok=True)
    aside = directory / f".{LAYOUT_FILE}.{os.getpid()}.tmp"
    aside.write_text(json.dumps(layout, indent=2) + "\n")
    os.replace(aside, directory / LAYOUT_FILE)
    return layout


@dataclass(frozen=True)
class Where:
    """Where a checkpoint of ``root`` is taken from: its kind, its repository (git), and whether that is
    the checkout's own (HEAD, refs, index and stashes are then part of it)."""

    root: Path
    kind: str
    repository: Path | None = None
    own: bool = False


@dataclass
class Plan:
    """What one rollback would do (``Checkpoints.plan``)."""

    row: JSONObject
    where: Where
    commit: str
    source: Repo  # where the recorded objects are read: the vault (or, for an old checkpoint, the repository)
    record: dict[str, tuple[int, str]]
    files: FilesPlan
    refs: RefsPlan | None
    refused: list[JSONObject]

    def summary(self, dry_run: bool) -> JSONObject:
        detail = self.row["detail"]
        return {
            "checkpoint": self.row["id"],
            "kind": self.row["kind"],
            "taken": self.row["time"],
            "workspace": self.row["workspace"],
            "restores": detail.get("restores"),
            "dry_run": dry_run,
            "write": self.files.write,
            "remove": self.files.remove,
            "refs": self.refs.summary() if self.refs is not None else None,
            "unchanged": self.files.unchanged,
            "left": self.files.left,
            "refused": self.refused,
        }


class Checkpoints:
    def __init__(self, db: Store, sandbox: Sandbox, config: GatewayConfig, ledger: Any = None) -> None:
        self.db = db
        self.sandbox = sandbox  # the snapshot reads the agent's tree behind its wall; rollback moves refs there
        self.settings: CheckpointsConfig = config.checkpoints
        self.workspace = config.workspace
        self.worktrees = config.worktrees
        self.directory = config.checkpoints_dir
        self.vault = Vault(self.directory / "vault.git")
        self.ledger = ledger  # rollbacks are recorded there (refused ones too)
        self._layout: JSONObject | None = None

    # --- where and what kind -----------------------------------------------------------------------

    def layout(self) -> JSONObject:
        """The workspace's recorded layout (recorded now if this state dir has none yet)."""
        if self._layout is None:
            try:
                self._layout = json.loads((self.directory / LAYOUT_FILE).read_text())
            except FileNotFoundError:
                self._layout = record_layout(self.directory, self.workspace)
        return self._layout

    def where(self, root: Path) -> Where:
        """The kind and repository of a checkpoint of ``root``, from the recorded layout and the gateway's
        own worktrees; a root that is neither the workspace nor a task's worktree gets none."""
        layout = self.layout()
        repository = Path(layout["repository"]) if layout.get("repository") else None
        if root == self.workspace:
            kind = self.settings.kind if self.settings.kind != "auto" else layout["kind"]
            if kind == "git" and repository is None:
                repository = root / ".git"  # gateway.yaml says git for a workspace recorded without one
            return Where(
                root, kind, repository if kind == "git" else None, kind == "git" and root / ".git" == repository
            )
        if root.is_relative_to(self.worktrees) and root != self.worktrees and repository is not None:
            return Where(root, "git", repository)
        raise ToolFailed(f"no checkpoint can be taken of {root}: it is neither the workspace nor a task's worktree")

    def _check(self, where: Where) -> None:
        """The repository is still where the layout says, as a directory (not a link, not replaced)."""
        assert where.repository is not None
        git = where.root / ".git"
        found = common_dir(where.root) if not where.own else (git if stat.S_ISDIR(_lstat_mode(git)) else None)
        if found != where.repository or not stat.S_ISDIR(_lstat_mode(where.repository)):
            raise ToolFailed(
                f"no checkpoint: {where.root}'s repository is not the directory {where.repository} the gateway "
                "recorded (moved, replaced or a link); nothing was run"
            )

    # --- take --------------------------------------------------------------------------------------

    def take(self, root: Path, call_id: str, paths: list[str], exclude: list[str] | tuple[str, ...] = ()) -> JSONObject:
        """``exclude``: workspace-relative paths left out (the gateway's own config), never rolled back."""
        where = self.where(Path(root))
        checkpoint_id = "cp-" + secrets.token_hex(6)
        message = f"gateway checkpoint {checkpoint_id} before call {call_id}"
        if where.kind == "git":
            detail, restores = self._take_git(where, checkpoint_id, message, list(exclude))
        else:
            detail, restores = self._take_copy(where, checkpoint_id, message, paths, list(exclude))
        detail["restores"] = restores
        row = checkpoints.Checkpoint(
            checkpoint_id,
            utc_now(),
            where.kind,
            str(where.root),
            Vault.PREFIX + checkpoint_id,
            call_id,
            json.dumps(detail),
        )
        with self.db.transaction() as tx:
            checkpoints.record(tx, row)
        self._retain()
        return {
            "id": checkpoint_id,
            "kind": where.kind,
            "ref": detail.get("repository_ref"),
            "restores": restores,
            "rollback": f"gateway rollback {checkpoint_id}",
        }

    def _take_git(self, where: Where, checkpoint_id: str, message: str, exclude: list[str]) -> tuple[JSONObject, str]:
        assert where.repository is not None
        self._check(where)
        # a repository whose objects dir is a link is refused before git reads (or writes) anything there
        self.sandbox.git_wall(where.root, writes=[where.repository / "objects"])
        with shadow(where.root, where.repository) as git:
            gitdir = where.repository if where.own else _worktree_gitdir(where.root)
            branch, detached = read_head(gitdir) if gitdir is not None else (None, None)
            patterns = () if where.own else (CHECKPOINT_REFS, *([branch] if branch else []))
            listing = list_refs(git, *patterns, behind=where.repository if where.own else None)
            head = listing.tips.get(branch) if branch else detached
            tag = hashlib.sha256(str(where.root).encode()).hexdigest()[:16]
            with file_lock(self.directory / "index" / f"{tag}.lock", "the checkpoint index of the tree"):
                tree = write_tree(git, exclude, self.sandbox, IndexCache(self.directory / "index" / tag), head)
            detail: JSONObject = {"repository": str(where.repository), "exclude": exclude}
            parents = [head] if head else []
            restores = "the working tree (every file .gitignore does not exclude)"
            if where.own:
                state = record(git, where.repository, listing)
                detail.update(state)
                parents += keep_parents(state, listing)
                if state["index"]:  # the index's tree is no commit's: one of its own keeps it
                    parents.append(git.run("commit-tree", state["index"], "-m", "the index").strip())
                restores += ", the index, HEAD, refs and stashes"
            flags = [arg for sha in dict.fromkeys(parents) for arg in ("-p", sha)]
            commit = git.run("commit-tree", tree, *flags, "-m", message).strip()
            # before the call runs: it may destroy what is in the repository
            self.vault.keep(git, checkpoint_id, commit)
            detail["commit"] = commit
            detail["repository_ref"] = self._repository_ref(git, where, checkpoint_id, commit, listing.checkpoints)
        return detail, restores

    def _repository_ref(
        self, git: Repo, where: Where, checkpoint_id: str, commit: str, existing: list[tuple[int, str]]
    ) -> str | None:
        """The checkpoint as a ref in the repository (for a person to look at), and only the newest
        ``repository_refs`` kept there. Not when the way to the refs dir holds a link an agent planted."""
        assert where.repository is not None
        keep = self.settings.repository_refs
        ref = CHECKPOINT_REFS + checkpoint_id
        if WorkTree(where.repository).look(ref).blocked is not None:
            return None  # git would write (and delete) through the link: the vault has the checkpoint
        commands = [f"delete {name}" for _, name in existing[max(keep - 1, 0) :]]
        commands += [f"create {ref} {commit}"] if keep else []
        if commands:
            git.run("update-ref", "--stdin", input="\n".join(commands) + "\n", check=False)
        return ref if keep else None

    def _take_copy(
        self, where: Where, checkpoint_id: str, message: str, paths: list[str], exclude: list[str]
    ) -> tuple[JSONObject, str]:
        tree = WorkTree(where.root)
        named = sorted({_relative(p) for p in paths if not p.startswith("/")} - set(exclude))  # outside: tier 3
        absent: list[str] = []
        dirs: list[str] = []
        files: list[tuple[str, int, bytes]] = []
        budget = self.settings.max_copy_mb * 1024 * 1024
        for rel in named:
            why = unsafe(rel) if rel else None
            found = tree.look(rel) if rel else None
            if why is not None or (found is not None and found.blocked is not None):
                why = why or f"{found.blocked!r} is a symbolic link or a file where a directory was"  # type: ignore[union-attr]
                raise ToolFailed(f"cannot safeguard {rel!r}: {why}; nothing was run")
            if found is not None and found.kind == "missing":
                absent.append(rel)
                continue
            below = tree.walk(rel) if found is None or found.kind == "dir" else iter(())
            for sub, what in ([(rel, found)] if found is not None else []) + list(below):
                if what.kind == "dir":
                    dirs.append(sub)
                elif what.kind in ("file", "link"):
                    try:
                        data = tree.read(sub, limit=budget)
                    except ToolFailed:
                        raise ToolFailed(
                            f"cannot safeguard: more than {self.settings.max_copy_mb} MB to copy "
                            "(checkpoints.max_copy_mb); nothing was run"
                        ) from None
                    if data is not None:
                        budget -= len(data[0])
                        files.append((sub, data[1], data[0]))
                else:  # a FIFO, a socket, a device: not copied, and left where it is by a rollback
                    exclude.append(sub)
                if len(files) + len(dirs) > MAX_COPY_ENTRIES:
                    raise ToolFailed(f"cannot safeguard: more than {MAX_COPY_ENTRIES} paths to copy; nothing was run")
        commit = self.vault.import_files(checkpoint_id, files, message)
        shown = ", ".join(p or "." for p in named[:10]) + (f" and {len(named) - 10} more" if len(named) > 10 else "")
        restores = f"the files this call names ({shown or 'none'}), and what is below them"
        return {"commit": commit, "paths": named, "absent": absent, "dirs": dirs, "exclude": exclude}, restores

    # --- retention ---------------------------------------------------------------------------------

    def _retain(self) -> None:
        """Prune now and then (about every tenth take, every take for a small ``keep``): the cost of a
        checkpoint stays flat however many came before."""
        if secrets.randbelow(max(1, min(16, self.settings.keep // 10))) == 0:
            try:
                self.prune()
            except (GatewayError, OSError) as exc:  # the checkpoint is taken; pruning is tried again later
                log.warning("checkpoint pruning failed", error=str(exc))

    def prune(self, now: datetime | None = None) -> list[str]:
        """Mark the checkpoints past the retention pruned (in the store, first), then drop their refs from the
        vault (and refs no row has, once they are an hour old) and let git pack and prune; their ids."""
        now = now or datetime.now(UTC)
        kept = checkpoints.kept(self.db)
        cutoff = (now - timedelta(days=self.settings.max_age_days)).isoformat(timespec="microseconds")
        doomed = [cp for n, (cp, time) in enumerate(kept) if n >= self.settings.keep or time < cutoff]
        if doomed:
            why = (
                f"past the retention (checkpoints.keep {self.settings.keep}, max_age_days {self.settings.max_age_days})"
            )
            with self.db.transaction() as tx:
                for cp in doomed:  # what it held goes; the row says when and why (and stays small)
                    checkpoints.prune(tx, cp, json.dumps({"pruned": {"time": now.isoformat(), "why": why}}))
        restorable = {cp for cp, _ in kept} - set(doomed)
        old = (now - ORPHAN_GRACE).timestamp()
        gone = [
            cp for cp, when in self.vault.checkpoints().items() if cp not in restorable and (when < old or cp in doomed)
        ]
        self.vault.forget(gone)
        self.vault.maintain()
        return doomed

    # --- rollback ----------------------------------------------------------------------------------

    def get(self, checkpoint_id: str) -> JSONObject:
        found = checkpoints.checkpoint(self.db, checkpoint_id)
        if found is None:
            raise ConfigError(f"no checkpoint {checkpoint_id!r}")
        return {**asdict(found), "detail": json.loads(found.detail)}

    def plan(self, checkpoint_id: str) -> Plan:
        """What rolling back would write, remove and move, against the tree as it is now; changes nothing."""
        row = self.get(checkpoint_id)
        detail = row["detail"]
        if row["ref"] is None:
            if "pruned" in detail:
                pruned = detail["pruned"]
                raise CheckpointPruned(
                    f"checkpoint {checkpoint_id} was pruned on {pruned['time'][:19]} ({pruned['why']}): it can no "
                    "longer be rolled back; nothing was changed"
                )
            raise CheckpointPruned(
                f"checkpoint {checkpoint_id} is a copy taken by an older version, which rollback no longer reads "
                f"(its files are under {self.directory / checkpoint_id}); nothing was changed"
            )
        where = self._recorded(row)
        refused: list[JSONObject] = []
        for directory in (where.root, where.repository):
            if directory is not None and not stat.S_ISDIR(_lstat_mode(directory)):
                raise RollbackRefused(
                    f"rollback of {checkpoint_id} refused: {directory} is no directory now (a link, or gone)"
                )
        source, commit = self._source(checkpoint_id, row, where)
        record_entries = tree_entries(source, commit)
        tree = WorkTree(where.root)
        refs = None
        with self._git(where) as git:
            if row["kind"] == "git":
                present = self._untracked(git, {p: e for p, e in record_entries.items() if unsafe(p) is None})
            else:
                record_entries.update({d: (DIRECTORY, "") for d in detail.get("dirs") or []})
                present = [p for rel in detail.get("paths") or [] for p in _present(tree, rel)]
            files = plan_files(tree, record_entries, present, exclude=detail.get("exclude") or [])
            if where.own and "refs" in detail:
                assert where.repository is not None
                refs = plan_refs(git, where.repository, detail)
                if refs.missing and source is not self.vault.repo:
                    refs.refused.append({"what": "refs", "why": f"{len(refs.missing)} objects they name are gone"})
        refused += files.refused + (refs.refused if refs else [])
        return Plan(row, where, commit, source, record_entries, files, refs, refused)

    def _recorded(self, row: JSONObject) -> Where:
        """Where the checkpoint was taken, as its row records it: the kind it was taken as (whatever the
        layout says now), of a root that is still the workspace or one of the gateway's worktrees."""
        now = self.where(Path(row["workspace"]))
        recorded = row["detail"].get("repository")
        repository = Path(recorded) if recorded else now.repository
        if row["kind"] != "git":
            return Where(now.root, row["kind"])
        if repository is None:
            raise RollbackRefused(f"rollback of {row['id']} refused: the repository it was taken in is unknown")
        return Where(now.root, "git", repository, now.root / ".git" == repository)

    def rollback(self, checkpoint_id: str, dry_run: bool = False) -> JSONObject:
        """Put the workspace back as it was when the checkpoint was taken; answers what it did (or, with
        ``dry_run``, would do). A refusal (or a pruned checkpoint) raises, recorded in the ledger."""
        try:
            plan = self.plan(checkpoint_id)
            if plan.refused:
                raise RollbackRefused(
                    f"rollback of {checkpoint_id} refused, nothing was changed: "
                    + "; ".join(f"{r['what']}: {r['why']}" for r in plan.refused),
                    refused=plan.refused,
                )
        except GatewayError as exc:
            self._record(checkpoint_id, "refused", {"why": exc.message})
            raise
        summary = plan.summary(dry_run)
        if dry_run:
            return summary
        counts = {"write": len(plan.files.write), "remove": plan.files.remove[:100], "refs": summary["refs"]}
        self._record(checkpoint_id, "started", counts)  # before anything changes: a crash leaves this row
        try:
            self._apply(plan)
        except BaseException as exc:
            self._record(checkpoint_id, "failed", {"why": str(exc)[:500]})
            raise
        self._record(checkpoint_id, "ok", {"removed": plan.files.remove[:100], "written": len(plan.files.write)})
        return summary

    def _apply(self, plan: Plan) -> None:
        where, tree = plan.where, WorkTree(plan.where.root)
        if plan.refs is not None:
            assert where.repository is not None
            with self._git(where) as git:
                walled = Repo(
                    where.root,
                    wall=self.sandbox.git_wall(
                        where.root,
                        writes=[where.repository, git.gitdir.parent],  # type: ignore[union-attr]
                        protect=[where.repository / p for p in ("config", "hooks", "modules")],
                        sources=[self.vault.path] if plan.refs.missing else [],
                    ),
                    gitdir=git.gitdir,
                )
                if plan.refs.missing:  # the agent destroyed them in the repository: the vault has them
                    ref = f"+{Vault.PREFIX}{plan.row['id']}:{CHECKPOINT_REFS}{plan.row['id']}"
                    walled.run(*QUIET_FETCH, "--no-write-fetch-head", str(self.vault.path), ref)
                restore_refs(walled, where.repository, plan.row["detail"], plan.refs)
        for rel in plan.files.remove:
            tree.remove(rel)
        with plan.source.objects() as objects:
            for rel in plan.files.write:
                mode, object_id = plan.record[rel]
                if mode == DIRECTORY:
                    tree.make_directory(rel)
                    continue
                data = objects.read(object_id)
                if data is None:
                    raise ToolFailed(f"the checkpoint's copy of {rel!r} ({object_id}) is missing")
                tree.put(rel, data, mode)

    def _source(self, checkpoint_id: str, row: JSONObject, where: Where) -> tuple[Repo, str]:
        """Where the checkpoint's record is read: the vault; for a checkpoint from before the vault, the
        repository (whose objects an agent could have rewritten: every path is checked all the same)."""
        held = self.vault.holds(checkpoint_id)
        if held is not None:
            return self.vault.repo, held
        commit = row["detail"].get("commit")
        if row["kind"] == "git" and commit and where.repository is not None:
            repository = Repo(where.root)
            if repository.run("cat-file", "-t", commit, check=False).strip() == "commit":
                return repository, commit
        raise RollbackRefused(f"rollback of {checkpoint_id} refused: neither the vault nor the repository holds it")

    def _untracked(self, git: Repo, record: dict[str, tuple[int, str]]) -> list[str]:
        """The files git does not ignore that exist now and the record does not have: listed by git behind
        the wall, against an index made from the record (never the user's)."""
        assert git.gitdir is not None
        scratch = git.gitdir.parent
        env = {"GIT_INDEX_FILE": str(scratch / "record.index")}
        entries = "".join(f"{mode:o} {object_id}\t{rel}\0" for rel, (mode, object_id) in record.items())
        git.run("update-index", "-z", "--index-info", input=entries, env=env, errors="surrogateescape")
        walled = Repo(git.root, wall=self.sandbox.git_wall(git.root, writes=[scratch]), gitdir=git.gitdir)
        out = walled.run("ls-files", "-z", "--others", "--exclude-standard", env=env, errors="surrogateescape")
        return [p for p in out.split("\0") if p]

    @contextlib.contextmanager
    def _git(self, where: Where) -> Iterator[Repo]:
        """git for a rollback's reads: through a shadow git dir when there is a repository."""
        if where.repository is None:
            yield Repo(where.root)
            return
        with shadow(where.root, where.repository) as git:
            yield git

    def _record(self, checkpoint_id: str, outcome: str, detail: JSONObject) -> None:
        if self.ledger is not None:
            self.ledger.append(
                {"kind": "rollback", "outcome": outcome, "detail": {"checkpoint": checkpoint_id, **detail}}
            )


def _relative(path: str) -> str:
    """A call's workspace-relative path as the record keys it ("" for the workspace itself)."""
    parts = [p for p in path.split("/") if p not in ("", ".")]
    return "/".join(parts)


def _present(tree: WorkTree, rel: str) -> list[str]:
    """What exists now at a path a copy checkpoint named, and below it."""
    found = tree.look(rel) if rel else None
    if found is not None and found.kind == "missing":
        return []
    below = [sub for sub, _ in tree.walk(rel)] if found is None or found.kind == "dir" else []
    return ([rel] if rel else []) + below


def _worktree_gitdir(root: Path) -> Path | None:
    try:
        text = (root / ".git").read_text()
    except (OSError, UnicodeDecodeError):
        return None
    return (root / text.removeprefix("gitdir: ").strip()).resolve() if text.startswith("gitdir: ") else None


def _lstat_mode(path: Path) -> int:
    try:
        return os.lstat(path).st_mode
    except OSError:
        return 0
