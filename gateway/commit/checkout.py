"""The user's checkout after a merge: brought up to date with the base branch, or told exactly why not.

When the user's checkout has the base branch checked out, moving the branch moves its HEAD: the index and
the files must follow (a two-tree merge, ``git read-tree -m -u OLD NEW``, which refuses to touch a file the
user changed). So the merge queue asks first whether that can succeed and does not publish when it cannot,
as git's ``receive.denyCurrentBranch=updateInstead`` refuses a push into a dirty checkout. Only a user
editing between the check and the catch-up leaves the checkout "behind" (HEAD at the merge, index and files
where they were), and the advice for it never reverts the merged work.

A catch-up cut short by a crash is finished on recovery from the plan the queue recorded before publishing:
the gateway's own ``index.lock`` (made after the plan, and open in no process: gateway/locks.py) is removed,
files the cut-short ``read-tree`` had already written are put back as they were, and the catch-up is redone.

    checkout = Checkout(Repo(workspace))
    blocked = checkout.blocks("refs/heads/main", old, new)   # None, or {"why": ..., "in_the_way": [...]}
    workspace = checkout.catch_up("refs/heads/main", old, new)   # {"state": "updated" | "behind" | ...}
    workspace, cleaned = checkout.resume(plan)                # after a crash, from the recorded plan
"""

from __future__ import annotations

from pathlib import Path

import structlog

from gateway.locks import abandoned
from gateway.repo import GitError, Repo
from gateway.types import JSONObject

log = structlog.get_logger("gateway.checkout")

SHOWN = 20  # files named in a message; the outcome lists them all


def advice(old: str, branch: str) -> str:
    """How to catch up a checkout left behind (HEAD at the merge, index and files at ``old``) without
    reverting the merge: put HEAD back where the files are (detached; the branch stays at the merge), then
    switch to the branch carrying the local changes with a three-way merge. A plain ``git commit -a`` here
    would revert the merge instead."""
    return f"git update-ref --no-deref HEAD {old} && git checkout -m {branch}"


class Checkout:
    def __init__(self, repo: Repo) -> None:
        self.repo = repo

    def on(self, ref: str) -> bool:
        """Whether the checkout has ``ref`` checked out (so moving the ref moves its HEAD)."""
        return self.repo.run("symbolic-ref", "-q", "HEAD", check=False).strip() == ref

    @property
    def lock(self) -> Path:
        return Path(self.repo.run("rev-parse", "--absolute-git-dir").strip()) / "index.lock"

    def blocks(self, ref: str, old: str, new: str) -> JSONObject | None:
        """Why the checkout could not follow ``ref`` from ``old`` to ``new`` now (its index is locked, or the
        user changed files the merge changes), or None when it can (or does not have ``ref`` checked out)."""
        if not self.on(ref):
            return None
        if self.lock.exists():
            why = f"your checkout's {self.lock} exists (a git command is running, or one crashed: remove the file)"
            return {"why": why, "in_the_way": []}
        try:
            self.repo.run("read-tree", "-m", "-u", "-n", old, new)  # a dry run: git's own verdict
        except GitError as exc:
            files = self._in_the_way(old, new)
            named = ", ".join(files[:SHOWN]) + (f" and {len(files) - SHOWN} more" if len(files) > SHOWN else "")
            why = (
                f"your checkout has uncommitted changes to files this merge changes ({named}): commit or stash "
                "them, then commit the intent again"
                if files
                else f"your checkout cannot be brought up to date: {exc.message[:300]}"
            )
            return {"why": why, "in_the_way": files}
        return None

    def catch_up(self, ref: str, old: str, new: str) -> JSONObject:
        """Bring the checkout along (it was checked a moment ago); never touch the user's changes."""
        if not self.on(ref):
            head = self.repo.run("symbolic-ref", "-q", "HEAD", check=False).strip()
            return {"state": "not checked out", "head": head or "detached"}
        try:
            self.repo.run("read-tree", "-m", "-u", old, new)
        except GitError as exc:  # the user changed a file, or took the index lock, since the check
            log.warning("the user's checkout is behind the base branch", ref=ref, why=exc.message[:300])
            return {"state": "behind", "at": old, "why": exc.message[:300], "catch_up": advice(old, _branch(ref))}
        return {"state": "updated"}

    def resume(self, plan: JSONObject) -> tuple[JSONObject, list[str]]:
        """Finish a catch-up a crash cut short (``plan``: ref, old, new, at): the checkout's state, and what
        was cleaned. Only the gateway's own leftovers go: a lock made after the plan that no process has open
        (called under the merge queue's worktree lock, which the catch-up's git held), files holding exactly
        what the merge would write."""
        ref, old, new = plan["ref"], plan["old"], plan["new"]
        cleaned: list[str] = []
        lock = self.lock
        try:
            made = lock.stat().st_mtime
        except FileNotFoundError:
            made = None
        if made is not None:
            if made < float(plan["at"]) - 1 or not abandoned(lock):  # older than the plan, or a live git's
                why = f"{lock} exists and is not a leftover of the gateway's catch-up"
                return {"state": "behind", "at": old, "why": why, "catch_up": advice(old, _branch(ref))}, cleaned
            lock.unlink(missing_ok=True)
            cleaned.append(f"removed the index.lock a catch-up cut short left in your checkout ({lock})")
        current = self.repo.run("rev-parse", "--verify", ref).strip()
        if current == old:
            return {"state": "not published"}, cleaned  # the crash came before the branch moved
        if not self.on(ref):
            return {"state": "not checked out"}, cleaned
        if current != new:  # merges published since could not bring it along either: it is where it was
            return {"state": "behind", "at": old, "catch_up": advice(old, _branch(ref))}, cleaned
        if self.repo.run("write-tree", check=False).strip() == self.repo.run("rev-parse", f"{new}^{{tree}}").strip():
            return {"state": "updated"}, cleaned  # the catch-up had finished: the index is the merge's
        put_back = self._undo_partial(old, new)
        if put_back:
            cleaned.append(f"put back {len(put_back)} files a cut-short catch-up had written, to redo it")
        return self.catch_up(ref, old, new), cleaned

    def _undo_partial(self, old: str, new: str) -> list[str]:
        """Files of the merge that a cut-short ``read-tree -u`` already wrote (their content is the merge's,
        or they are gone where the merge rewrites or removes them: git removes a file before writing it): back
        as in ``old``, so that the catch-up can be redone. A file with any other content is the user's: kept."""
        root = self.repo.root
        fields = self.repo.run("diff", "--raw", "--no-renames", "-z", "--no-abbrev", old, new).split("\0")
        changes = [(meta.split()[2:4], path) for meta, path in zip(fields[0::2], fields[1::2], strict=False) if path]
        present = [(blobs, path) for blobs, path in changes if (root / path).is_file()]
        hashes = self.repo.run("hash-object", "--stdin-paths", input="\n".join(p for _, p in present)).split()
        written = [path for (blobs, path), sha in zip(present, hashes, strict=True) if sha == blobs[1]]
        written += [path for blobs, path in changes if not (root / path).exists() and not _absent(blobs[0])]
        added = [path for blobs, path in changes if _absent(blobs[0]) and path in written]
        for path in added:
            (root / path).unlink()  # the merge adds it: it was not there before
        restore = sorted(set(written) - set(added))
        if restore:
            self.repo.run("checkout", old, "--pathspec-from-file=-", "--pathspec-file-nul", input="\0".join(restore))
        return sorted(written)

    def _in_the_way(self, old: str, new: str) -> list[str]:
        """Files the merge changes that the user changed, staged or not, or made untracked."""
        merged = set(self.repo.run("diff", "--name-only", "-z", "--no-renames", old, new).split("\0"))
        local = self.repo.run("--no-optional-locks", "diff", "--name-only", "-z", "HEAD", check=False).split("\0")
        untracked = self.repo.run("--no-optional-locks", "ls-files", "--others", "-z", check=False).split("\0")
        return sorted((merged & {*local, *untracked}) - {""})


def _absent(blob: str) -> bool:
    return set(blob) == {"0"}


def _branch(ref: str) -> str:
    return ref.removeprefix("refs/heads/")
