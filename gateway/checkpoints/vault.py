"""The vault: a bare repository in the state dir holding every checkpoint a rollback can still restore.

No sandbox shows the state dir, so nothing an agent does reaches it: a git checkpoint is pushed in right
after it is taken (before the call runs), a copy checkpoint is written straight into it, and a rollback
reads the record it restores from here, never from the workspace's repository. Its config and hooks are
the gateway's. It is kept bounded: ``forget`` drops the refs of checkpoints past the retention, and git's
own ``gc --auto`` (detached, thresholds set below) packs loose objects and prunes what no ref reaches
once it is five minutes old (the grace keeps a push still landing from losing its objects).

    vault = Vault(state_dir / "checkpoints" / "vault.git")
    vault.keep(Repo(workspace), "cp-1a2b3c", keep_commit)   # push: the checkpoint and what it reaches
    vault.holds("cp-1a2b3c")                                 # the commit, or None once pruned
    vault.entries(commit)                                    # {"src/a.py": (0o100644, blob id), ...}
    vault.forget(["cp-0f0f0f"]); vault.maintain()
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

from gateway.repo import GitError, Repo

__all__ = ["Vault", "quote_path"]

# git's own maintenance stays out of the gateway's fetches: no automatic gc, no background process
QUIET_FETCH = ("-c", "gc.auto=0", "-c", "maintenance.auto=false", "fetch", "--quiet", "--no-tags")
# gc --auto thresholds: a few hundred checkpoints' loose objects make a pack; many packs make one (what no
# checkpoint reaches then goes into a cruft pack). What no checkpoint reaches is pruned five minutes on: the
# grace covers a push whose objects have landed and whose ref is not yet written (milliseconds). A gc that
# stopped with a message (gc.log: a race with a push's incoming dir, too many unreachable loose objects)
# keeps gc --auto away for gc.logExpiry only.
SETTINGS = (
    ("gc.auto", "1000"),
    ("gc.autoPackLimit", "16"),
    ("gc.autoDetach", "true"),
    ("gc.cruftPacks", "true"),
    ("gc.pruneExpire", "5.minutes.ago"),
    ("gc.logExpiry", "5.minutes"),
    ("gc.reflogExpire", "now"),
    ("gc.reflogExpireUnreachable", "now"),
    ("receive.autogc", "false"),
    ("core.logAllRefUpdates", "false"),
    ("gateway.settings", "3"),  # bumped when the above change: a vault with older ones is given these
)
STALE_S = 3600  # a lock or an incoming-objects dir this old was left by a process killed mid-way


class Vault:
    PREFIX = "refs/checkpoints/"

    def __init__(self, path: Path) -> None:
        self.path = path
        self.repo = Repo(path)
        self._configured = False

    def keep(self, workspace: Repo, checkpoint_id: str, commit: str) -> None:
        """Copy the checkpoint (``commit`` and everything it reaches) in from the workspace's repository."""
        self.ensure()
        workspace.run("push", "--quiet", "--no-verify", str(self.path), f"+{commit}:{self.PREFIX}{checkpoint_id}")

    def holds(self, checkpoint_id: str) -> str | None:
        """The checkpoint's commit, or None when the vault has no ref for it (pruned, or taken without one)."""
        if not (self.path / "HEAD").exists():
            return None
        found = self.repo.run("rev-parse", "--verify", "-q", f"{self.PREFIX}{checkpoint_id}^{{commit}}", check=False)
        return found.strip() or None

    def entries(self, commit: str) -> dict[str, tuple[int, str]]:
        """Every path the commit's tree records, with git's mode and the object id."""
        return tree_entries(self.repo, commit)

    def import_files(self, checkpoint_id: str, files: Iterable[tuple[str, int, bytes]], message: str) -> str:
        """Write ``files`` (path, git mode, bytes) as one commit under the checkpoint's ref, in one
        ``git fast-import`` (packed, not loose); its id."""
        self.ensure()
        ref = f"{self.PREFIX}{checkpoint_id}"
        with self.repo.process("fast-import", "--quiet", "--done") as proc:
            assert proc.stdin is not None
            out = proc.stdin
            listed: list[bytes] = []
            for mark, (rel, mode, data) in enumerate(files, start=1):
                out.write(b"blob\nmark :%d\ndata %d\n" % (mark, len(data)) + data + b"\n")
                listed.append(b"M %o :%d %s\n" % (mode, mark, quote_path(rel)))
            text = message.encode()
            out.write(b"commit %s\n" % ref.encode())
            out.write(b"committer mcp-gateway <gateway@localhost> %d +0000\n" % int(time.time()))
            out.write(b"data %d\n%s\n" % (len(text), text))
            out.writelines(listed)
            out.write(b"\ndone\n")
        commit = self.holds(checkpoint_id)
        if commit is None:
            raise GitError(f"the checkpoint {checkpoint_id} did not reach the vault {self.path}")
        return commit

    def checkpoints(self) -> dict[str, int]:
        """Each checkpoint the vault holds a ref for, with its commit's time (unix seconds)."""
        if not (self.path / "HEAD").exists():
            return {}
        out = self.repo.run("for-each-ref", "--format=%(refname:lstrip=2) %(committerdate:unix)", self.PREFIX)
        return {name: int(when or 0) for name, _, when in (line.partition(" ") for line in out.splitlines())}

    def forget(self, checkpoint_ids: Iterable[str]) -> None:
        """Drop the refs of checkpoints past the retention; their objects go at a gc five minutes on."""
        commands = "".join(f"delete {self.PREFIX}{cp}\n" for cp in checkpoint_ids)
        if commands:
            self.repo.run("update-ref", "--stdin", input=commands)

    def maintain(self) -> None:
        """Clear what a killed process left (stale locks, incoming-object dirs) and let ``git gc --auto``
        pack and prune when its thresholds say so (it detaches; the call that started it does not wait)."""
        stale = time.time() - STALE_S
        for leftover in (self.path / "packed-refs.lock", *self.path.glob("objects/tmp_objdir-incoming-*")):
            with contextlib.suppress(OSError):
                if leftover.lstat().st_mtime < stale:
                    shutil.rmtree(leftover) if leftover.is_dir() else leftover.unlink()
        self.repo.run("gc", "--auto", "--quiet", check=False)

    def pack(self) -> None:
        """Pack everything and prune what no checkpoint reaches, now (a person's command, or a test's)."""
        self.ensure()
        self.repo.run("gc", "--quiet", "--prune=now")

    def ensure(self) -> None:
        """The vault exists and has the gateway's settings (a vault made by an older version kept
        everything: it is given them once)."""
        if self._configured:
            return
        if not (self.path / "HEAD").exists():
            self._create()
        if self.repo.run("config", "--get", "gateway.settings", check=False).strip() != SETTINGS[-1][1]:
            configure(self.repo)
        self._configured = True

    def _create(self) -> None:
        """Made aside and renamed into place: several gateway processes (serve --workers, replicas) may take
        their first checkpoint at once, and two `git init` in one directory collide."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        aside = Path(tempfile.mkdtemp(prefix=".vault-", dir=self.path.parent))
        try:
            repo = Repo(aside)
            repo.run("init", "--bare", "--quiet")
            configure(repo)
            os.rename(aside, self.path)  # onto nothing (or an empty dir); another process's vault stays
        except OSError:
            if not (self.path / "HEAD").exists():
                raise
        finally:
            shutil.rmtree(aside, ignore_errors=True)


def configure(repo: Repo) -> None:
    for key, value in SETTINGS:
        repo.run("config", key, value)


def tree_entries(repo: Repo, commit: str) -> dict[str, tuple[int, str]]:
    """Every path ``commit``'s tree records in ``repo``, with git's mode and the object id."""
    out = repo.run("ls-tree", "-r", "-z", "--full-tree", commit, errors="surrogateescape")
    found: dict[str, tuple[int, str]] = {}
    for line in out.split("\0"):
        if line:
            meta, _, path = line.partition("\t")
            mode, _, object_id = meta.split(" ", 2)
            found[path] = (int(mode, 8), object_id)
    return found


def quote_path(rel: str) -> bytes:
    """``rel`` as git's C-style quoted path (fast-import reads any byte in it this way)."""
    out = bytearray(b'"')
    for byte in os.fsencode(rel):
        if byte in (0x22, 0x5C):
            out += b"\\" + bytes([byte])
        elif byte < 0x20 or byte >= 0x7F:
            out += b"\\%03o" % byte
        else:
            out.append(byte)
    return bytes(out + b'"')
