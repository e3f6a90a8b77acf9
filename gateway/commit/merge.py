"""The merge queue: every merge into a base branch, one at a time, away from the user's checkout.

A merge is made in a worktree the gateway owns (``<worktrees_dir>/_integration``, detached), never in the
user's checkout, under a lease in the store that serialises merges across every gateway process. The merge
commit is verified there first (the manifest's commands, judged and confined like any; see
gateway/tasks/verification.py), and only then is the base branch moved to it, by compare-and-swap on the
ref: a failing verification means "not published", never "merged, then reverted", and a base branch that
moved meanwhile (someone committed outside the gateway) is merged again on its new tip. The user's
checkout, if it has the base branch checked out, must be able to follow (gateway/commit/checkout.py): when
the user's changes or index lock are in the way, nothing is published and the intent is deferred; the
planned catch-up is recorded on the intent before the branch moves, so that a crash inside it is finished on
recovery. Nothing is ever left mid-merge in a checkout the user works in.

Before every merge (and when the gateway starts), the integration worktree is recovered: a merge a crash
cut short is aborted, git's lock files in it that a process now gone left are removed, and it is reset (or
made again when that fails); a ref lock on a branch that no process has open goes too (gateway/locks.py: never
judged by its age). Only a gateway holding the lease uses the worktree, and it holds the worktree's file lock
too, which the gits it starts inherit: a gateway killed alone keeps it until its git has finished, so
recovery never works beside a git still running there. What was cleaned is recorded.

    queue = MergeQueue(config, ledger, leases, verification)
    state, outcome = await queue.merge(intent, task, principal, progress)   # "committed" | "failed" | "busy"
"""

from __future__ import annotations

import time

import anyio
import structlog

from gateway.commit.checkout import Checkout
from gateway.commit.intents import Intents
from gateway.config import GatewayConfig
from gateway.ledger.chain import Ledger
from gateway.ledger.leases import Leases, LeaseTimeout, new_holder
from gateway.locks import abandoned, async_file_lock, file_lock
from gateway.origin import ProgressFn
from gateway.repo import GitError, Repo, common_dir
from gateway.tasks.verification import Verification
from gateway.tasks.worktrees import clear_abandoned_locks, discard_worktree, git_dir, make_worktree
from gateway.types import JSONObject, Principal

log = structlog.get_logger("gateway.merge")

LEASE = "merge queue"
INTEGRATION = "_integration"
MAX_RETARGETS = 3  # the base branch moved under a merge this many times: give up, cleanly
PUBLISH_TRIES = 20
PUBLISH_WAIT_S = 0.1


class MergeQueue:
    def __init__(
        self, config: GatewayConfig, ledger: Ledger, leases: Leases, verification: Verification, intents: Intents
    ) -> None:
        self.config = config
        self.ledger = ledger
        self.leases = leases
        self.verification = verification
        self.intents = intents
        self.repo = Repo(config.workspace)
        self.checkout = Checkout(self.repo)
        self.path = config.worktrees / INTEGRATION
        self.locks = config.state / "locks"
        self.lock = self.locks / f"worktree-{INTEGRATION}.lock"

    async def merge(
        self, intent: JSONObject, task: JSONObject, principal: Principal, progress: ProgressFn
    ) -> tuple[str, JSONObject]:
        """Merge the task's verified commit into its base branch: ("committed", outcome), ("failed", why) when
        the work does not merge or pass its verification on the base, ("busy", why) when the base branch could
        not be moved for a reason that is not the work's (a live git holding its lock; it kept moving)."""
        try:
            async with self.leases.hold(LEASE, progress), async_file_lock(self.lock, "merging"):
                return await self._merge(intent, task, principal, progress)
        except LeaseTimeout as exc:
            return "busy", {"published": False, "error": str(exc)}

    async def _merge(
        self, intent: JSONObject, task: JSONObject, principal: Principal, progress: ProgressFn
    ) -> tuple[str, JSONObject]:
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
            # the catch-up it will take is on the intent before the branch moves (a crash inside it is finished
            # on recovery); a checkout that cannot follow means nothing is published
            plan = {"ref": ref, "old": base, "new": merge_commit, "at": time.time()}
            await anyio.to_thread.run_sync(self.intents.plan_catch_up, intent["id"], plan)
            blocked = await anyio.to_thread.run_sync(self.checkout.blocks, ref, base, merge_commit)
            if blocked is not None:
                log.warning("the user's checkout cannot follow the merge: deferred", why=blocked["why"])
                error = f"not published: {blocked['why']}"
                facts = {"base": base, "merge_commit": merge_commit, "in_the_way": blocked["in_the_way"]}
                return "busy", {"published": False, **facts, "error": error}
            refused = await self._publish(ref, merge_commit, base)
            if refused == "moved":
                moved.append(base)  # someone moved the base branch meanwhile: merge again on its new tip
                continue
            if refused is not None:
                return "busy", {"published": False, "base": base, "merge_commit": merge_commit, "error": refused}
            workspace = await anyio.to_thread.run_sync(self.checkout.catch_up, ref, base, merge_commit)
            outcome: JSONObject = {"merge_commit": merge_commit, "base": base, "workspace": workspace}
            outcome["verification"] = task["manifest"]["verification"]
            if moved:
                outcome["base_moved"] = moved
            return "committed", outcome
        return "busy", {
            "published": False,
            "error": f"{ref} kept moving during the merge ({len(moved)} times); commit the intent again",
            "base_moved": moved,
        }

    async def resume_catch_up(self, plan: JSONObject) -> JSONObject:
        """Finish the catch-up of the user's checkout that a crash cut short (``plan``, recorded on the intent
        before publishing), under the queue's lease: the checkout's state. A ledger row says what was done."""
        async with self.leases.hold(LEASE), async_file_lock(self.lock, "finishing a catch-up"):
            workspace, cleaned = await anyio.to_thread.run_sync(self.checkout.resume, plan)
        if workspace["state"] != "not published" or cleaned:
            log.warning("resumed a catch-up a crash cut short", workspace=workspace, cleaned=cleaned)
            detail = {"what": "your checkout", "plan": plan, "cleaned": cleaned, "workspace": workspace}
            self.ledger.append({"kind": "recovery", "outcome": "ok", "detail": detail})
        return workspace

    def recover_if_idle(self) -> list[str]:
        """On start: recover, unless another gateway process is merging right now (it recovers first)."""
        holder = new_holder()
        if not self.leases.try_acquire(LEASE, holder):
            return []
        try:
            with file_lock(self.lock, "recovering the merge queue's worktree"):
                return self.recover()
        finally:
            self.leases.release(LEASE, holder)

    def recover(self) -> list[str]:
        """Clear what a crash left in the gateway's own merge worktree, and abandoned locks on branches.
        Called with the lease and the worktree's lock held: nobody else uses the integration worktree, and no
        git a gateway started there still runs."""
        cleaned: list[str] = []
        private = git_dir(self.path)
        if private is not None:
            locks = clear_abandoned_locks(self.repo, self.path)
            cleaned += [f"removed {name} in the integration worktree" for name in locks]
            if (private / "MERGE_HEAD").exists():
                Repo(self.path).run("merge", "--abort", check=False)
                cleaned.append("aborted a merge left in progress")
            try:
                tree = Repo(self.path)
                tree.run("reset", "-q", "--hard")
                tree.run("clean", "-q", "-fdx")
            except GitError as exc:
                cleaned.append(f"rebuilt the integration worktree ({exc.message[:200]})")
                self._remove()
        common = common_dir(self.repo.root)
        if common is not None:
            for lock in [*common.glob("refs/heads/**/*.lock"), common / "packed-refs.lock"]:
                if abandoned(lock):
                    lock.unlink(missing_ok=True)
                    cleaned.append(f"removed a stale {lock.relative_to(common)}")
        if not (self.path / ".git").exists():
            make_worktree(self.repo, self.path, "HEAD", self.locks)
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
        """The manifest's verification, then the workspace's integration checks, on the merge commit; what
        failed, or None."""
        runs = await self.verification.run(
            [*task["manifest"]["verification"], *self.config.integration.verification],
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

    async def _publish(self, ref: str, merge_commit: str, base: str) -> str | None:
        """Move the base branch to the merge commit only if it still points where the merge started: None
        when it moved, "moved" when someone moved it meanwhile, or why it could not be moved (a ref lock a live
        git process keeps holding)."""
        error = ""
        for _ in range(PUBLISH_TRIES):
            try:
                await self.repo.arun("update-ref", "-m", "gateway merge queue", ref, merge_commit, base)
                return None
            except GitError as exc:
                error = exc.message
            if (await self.repo.arun("rev-parse", "--verify", ref)).strip() != base:
                log.warning("the base branch moved during a merge; merging again", ref=ref)
                return "moved"
            await anyio.sleep(PUBLISH_WAIT_S)  # a ref lock is held for milliseconds by a live git
        return f"{ref} could not be updated (is another git process holding it?): {error[:300]}"

    def _remove(self) -> None:
        discard_worktree(self.repo, self.path, self.locks)
