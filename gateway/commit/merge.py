"""The merge queue: every merge into a base branch, one at a time, away from the user's checkout.

A merge is made in a worktree the gateway owns (``<worktrees_dir>/_integration``, detached), never in the
user's checkout, under a lease in the store that serialises merges across every gateway process. The merge
commit is verified there first (the manifest's commands, judged and confined like any; see
gateway/tasks/verification.py), and only then is the base branch moved to it, by compare-and-swap on the
ref: a failing verification means "not published", never "merged, then reverted", and a base branch that
moved meanwhile (someone committed outside the gateway) is merged again on its new tip. The user's
checkout, if it has the base branch checked out, is brought up to date with a two-tree merge that never
touches conflicting local changes; when it cannot be, the outcome says it is behind and how to catch up.
Nothing is ever left mid-merge in a checkout the user works in.

Before every merge (and when the gateway starts), the integration worktree is recovered: a merge a crash
cut short is aborted, lock files in it are removed (only a gateway holding the lease uses it), and it is
reset; a ref lock on the base branch older than this process is a crash's leftover and goes too. What was
cleaned is recorded.

    queue = MergeQueue(config, ledger, leases, verification)
    state, outcome = await queue.merge(intent, task, principal, progress)   # "committed" | "failed"
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import anyio
import structlog

from gateway.config import GatewayConfig
from gateway.ledger.chain import Ledger
from gateway.ledger.leases import Leases
from gateway.repo import GitError, Repo
from gateway.tasks.verification import Verification
from gateway.types import JSONObject, Principal, ProgressFn

log = structlog.get_logger("gateway.merge")

LEASE = "merge queue"
INTEGRATION = "_integration"
MAX_RETARGETS = 3  # the base branch moved under a merge this many times: give up, cleanly
PROCESS_STARTED = time.time()


class MergeQueue:
    def __init__(self, config: GatewayConfig, ledger: Ledger, leases: Leases, verification: Verification) -> None:
        self.config = config
        self.ledger = ledger
        self.leases = leases
        self.verification = verification
        self.repo = Repo(config.workspace)
        self.path = config.worktrees / INTEGRATION

    async def merge(
        self, intent: JSONObject, task: JSONObject, principal: Principal, progress: ProgressFn
    ) -> tuple[str, JSONObject]:
        """Merge the task's verified commit into its base branch; ("committed" | "failed", outcome)."""
        async with self.leases.hold(LEASE, progress):
            await anyio.to_thread.run_sync(self.recover)
            commit = task["verification"]["commit"]
            ref = f"refs/heads/{task['base_branch']}"
            message = (
                f"Merge task {task['id']}: {task['manifest']['objective'][:200]}\n\n"
                f"Gateway-Intent: {intent['id']}\nGateway-Task: {task['id']}\n"
            )
            moved: list[str] = []
            for _ in range(MAX_RETARGETS):
                base = (await self.repo.arun("rev-parse", "--verify", ref)).strip()
                merged = await anyio.to_thread.run_sync(self._merge_commit, base, commit, message)
                if "conflicts" in merged:
                    return "failed", {"published": False, "base": base, **merged}
                merge_commit = merged["merge_commit"]
                failed = await self._verify(intent, task, merge_commit, principal, progress)
                if failed is not None:
                    return "failed", {"published": False, "base": base, "merge_commit": merge_commit, **failed}
                published = await anyio.to_thread.run_sync(self._publish, ref, merge_commit, base)
                if published:
                    workspace = await anyio.to_thread.run_sync(self._catch_up, ref, base, merge_commit)
                    outcome: JSONObject = {"merge_commit": merge_commit, "base": base, "workspace": workspace}
                    outcome["verification"] = task["manifest"]["verification"]
                    if moved:
                        outcome["base_moved"] = moved
                    return "committed", outcome
                moved.append(base)  # someone moved the base branch meanwhile: merge again on its new tip
            return "failed", {
                "published": False,
                "error": f"{ref} kept moving during the merge ({len(moved)} times); try again",
                "base_moved": moved,
            }

    def recover(self) -> list[str]:
        """Clear what a crash left in the gateway's own merge worktree (and a stale lock on a base branch)."""
        cleaned: list[str] = []
        git_dir = self._git_dir()
        if git_dir is not None:
            for lock in sorted(git_dir.glob("*.lock")):
                lock.unlink(missing_ok=True)  # only a gateway holding the lease uses this worktree
                cleaned.append(f"removed {lock.name} in the integration worktree")
            if (git_dir / "MERGE_HEAD").exists():
                Repo(self.path).run("merge", "--abort", check=False)
                cleaned.append("aborted a merge left in progress")
            try:
                tree = Repo(self.path)
                tree.run("reset", "-q", "--hard")
                tree.run("clean", "-q", "-fdx")
            except GitError as exc:
                cleaned.append(f"rebuilt the integration worktree ({exc.message[:200]})")
                self._remove()
        common = Path(self.repo.run("rev-parse", "--path-format=absolute", "--git-common-dir").strip())
        for lock in [*common.glob("refs/heads/**/*.lock"), common / "packed-refs.lock"]:
            if lock.exists() and lock.stat().st_mtime < PROCESS_STARTED:
                lock.unlink(missing_ok=True)  # git holds a ref lock for milliseconds: this one outlived its process
                cleaned.append(f"removed a stale {lock.relative_to(common)}")
        self.repo.run("worktree", "prune")
        if not (self.path / ".git").exists():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            shutil.rmtree(self.path, ignore_errors=True)
            self.repo.run("worktree", "add", "--detach", "-q", str(self.path), "HEAD")
        if cleaned:
            log.warning("merge queue recovered leftovers", cleaned=cleaned)
            detail = {"what": "merge queue", "cleaned": cleaned}
            self.ledger.append({"kind": "recovery", "outcome": "ok", "detail": detail})
        return cleaned

    def _merge_commit(self, base: str, commit: str, message: str) -> JSONObject:
        """The merge commit of ``commit`` onto ``base``, made in the integration worktree (published nowhere)."""
        tree = Repo(self.path)
        tree.run("checkout", "-q", "--detach", "--force", base)
        tree.run("clean", "-q", "-fdx")
        try:
            tree.run("merge", "--no-ff", "--no-edit", "-m", message, commit)
        except GitError as exc:
            conflicts = tree.run("diff", "--name-only", "--diff-filter=U", check=False).split()
            tree.run("merge", "--abort", check=False)
            tree.run("reset", "-q", "--hard", base, check=False)
            return {"conflicts": conflicts, "error": f"the merge does not apply cleanly: {exc.message[:500]}"}
        return {"merge_commit": tree.run("rev-parse", "HEAD").strip()}

    async def _verify(
        self, intent: JSONObject, task: JSONObject, merge_commit: str, principal: Principal, progress: ProgressFn
    ) -> JSONObject | None:
        """The manifest's verification on the merge commit; what failed, or None."""
        runs = await self.verification.run(
            task["manifest"]["verification"],
            merge_commit,
            principal=principal,
            tool="intent_commit",
            arguments={"intent_id": intent["id"]},
            trace_id=task["trace_id"],
            progress=progress,
            task=None,
            intent={k: intent[k] for k in ("id", "task_id", "action", "approved_by")} | {"state": "executing"},
            label="post-merge ",
            stop_on_failure=True,
        )
        failed = next((run for run in runs if run.exit_code != 0), None)
        if failed is None:
            return None
        return {"failed_command": failed.command, "exit_code": failed.exit_code, "output": failed.note[-2000:]}

    def _publish(self, ref: str, merge_commit: str, base: str) -> bool:
        """Move the base branch to the merge commit only if it still points where the merge started."""
        try:
            self.repo.run("update-ref", "-m", "gateway merge queue", ref, merge_commit, base)
        except GitError as exc:
            log.warning("the base branch moved during a merge; merging again", ref=ref, error=exc.message[:200])
            return False
        return True

    def _catch_up(self, ref: str, old: str, new: str) -> JSONObject:
        """Bring the user's checkout along if it has the base branch checked out; never touch their changes."""
        head = self.repo.run("symbolic-ref", "-q", "HEAD", check=False).strip()
        if head != ref:
            return {"state": "not checked out", "head": head or "detached"}
        try:
            # a two-tree merge: files the merge changed are updated unless the user changed them too
            self.repo.run("read-tree", "-m", "-u", old, new)
        except GitError as exc:
            return {
                "state": "behind",
                "why": exc.message[:300],
                "catch_up": f"commit or stash the conflicting changes, then: git read-tree -m -u {old} HEAD",
            }
        return {"state": "updated"}

    def _git_dir(self) -> Path | None:
        try:
            text = (self.path / ".git").read_text()
        except OSError:
            return None
        gitdir = Path(text.removeprefix("gitdir:").strip())
        return gitdir if gitdir.is_absolute() and gitdir.is_dir() else None

    def _remove(self) -> None:
        self.repo.run("worktree", "remove", "--force", str(self.path), check=False)
        shutil.rmtree(self.path, ignore_errors=True)
        self.repo.run("worktree", "prune", check=False)
