"""Exactly-once execution of approved intents, and reconciliation after a crash.

Actions:
- merge: the task's verified commit into its base branch, in dependency order, through the merge queue
  (gateway/commit/merge.py): a merge commit carrying ``Gateway-Intent: <id>``, made and verified in the
  gateway's own worktree, published by compare-and-swap only when its verification passed. One that is not
  published fails the intent and sends the task back for a new attempt (a new intent, a new id);
- tag: an annotated tag whose message names the intent;
- push: ``git push REMOTE REF`` (network egress: the policy makes it tier 3, so a human approves it);
- upstream: one call of an upstream tool that gateway.yaml marks commit-class.

A gateway killed between "executing" and "committed" reconciles on start from what git shows: a merge
or tag that carries the intent id is finished, never redone; one that is missing had not happened, so
the intent goes back to approved. A push or upstream call whose outcome cannot be read back is failed,
not retried.

    committer = Committer(intents, board, catalog, config, queue)
    await committer.reconcile()
    outcome = await committer.commit(intent_id, principal, progress)
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from typing import Annotated, Any

import anyio
import structlog
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from gateway.artifacts.store import Artifacts
from gateway.commit.intents import SETTLED, IntentRefused, Intents
from gateway.commit.merge import MergeQueue
from gateway.config import GatewayConfig
from gateway.effects.paths import Workspace
from gateway.errors import GatewayError, InvalidArguments, ToolFailed
from gateway.origin import ProgressFn
from gateway.repo import Repo
from gateway.tasks.board import TaskBoard
from gateway.tools.catalog import Catalog
from gateway.tools.spec import ToolInvocation
from gateway.types import JSONObject, Principal

log = structlog.get_logger("gateway.commit")


def _no_dot_dot(value: str) -> str:
    if ".." in value:
        raise ValueError("must not contain '..'")
    return value


# a branch, tag or remote name as git accepts it, and never an option (no leading '-')
RefName = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,99}$"), AfterValidator(_no_dot_dot)]
WAIT_FOR_PEER_S = 600.0


def intent_lease(identifier: str) -> str:
    """The lease its executor holds while an intent runs (gateway/ledger/leases.py)."""
    return f"intent {identifier}"


class ActionArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class MergeArgs(ActionArgs):
    pass


class TagArgs(ActionArgs):
    name: RefName
    ref: RefName | None = None


class PushArgs(ActionArgs):
    remote: RefName
    ref: RefName


class UpstreamArgs(ActionArgs):
    tool: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")
    arguments: dict[str, Any] = Field(default_factory=dict)


ACTION_ARGS: dict[str, type[ActionArgs]] = {
    "merge": MergeArgs,
    "tag": TagArgs,
    "push": PushArgs,
    "upstream": UpstreamArgs,
}


def check_arguments(action: str, arguments: JSONObject, catalog: Catalog) -> None:
    model = ACTION_ARGS.get(action)
    if model is None:
        raise InvalidArguments(f"argument 'action': {action!r} is not one of {', '.join(ACTION_ARGS)}")
    try:
        parsed = model.model_validate(arguments)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(arguments)"
        raise InvalidArguments(f"argument 'arguments.{where}': {first['msg']}") from None
    if isinstance(parsed, UpstreamArgs):
        spec = catalog.get(parsed.tool)
        if spec is None or not spec.commit_class:
            raise InvalidArguments(f"argument 'arguments.tool': {parsed.tool!r} is not a commit-class upstream tool")


class Committer:
    def __init__(
        self,
        intents: Intents,
        board: TaskBoard,
        catalog: Catalog,
        config: GatewayConfig,
        queue: MergeQueue,
        artifacts: Artifacts | None = None,
    ) -> None:
        self.artifacts = artifacts
        self.intents = intents
        self.board = board
        self.catalog = catalog
        self.config = config
        self.queue = queue
        self.repo = Repo(config.workspace)

    async def commit(self, identifier: str, principal: Principal, progress: ProgressFn) -> JSONObject:
        # The executor holds the intent's lease from before "executing" until it is settled, so a call that
        # finds it held waits for that peer's outcome, and another gateway process reconciling on its start
        # (or a retry here) tells a live execution from a crash's leftover.
        lease = intent_lease(identifier)
        while True:
            intent = self.intents.get(identifier)
            if intent["state"] in SETTLED:
                return answer(intent, replayed=True)
            async with self.queue.leases.attempt(lease) as held:
                if held is not None:
                    intent = self.intents.get(identifier)  # read again under the lease: no peer moves it now
                    if intent["state"] == "executing":
                        # executing, yet its lease was free: its executor died (another replica, killed
                        # mid-commit). Settle it from git as a restart would; run it only if it had not happened.
                        await self._reconcile(intent)
                    if self.intents.begin(identifier, principal):
                        return await self._execute(intent, principal, progress)
                    continue  # settled meanwhile: answered above
            # a peer holds it: wait until it lets go, then look again (settled, or ours to run: it gave it back)
            await self._wait_for_peer(lease, progress)

    async def _execute(self, intent: JSONObject, principal: Principal, progress: ProgressFn) -> JSONObject:
        identifier = intent["id"]
        try:
            state, outcome = await self._run(intent, principal, progress)
        except GatewayError as exc:
            state, outcome = "failed", {"error": exc.message}
        except Exception as exc:  # a bug must not leave the intent executing forever
            log.exception("intent execution failed", intent=identifier)
            state, outcome = "failed", {"error": f"internal error: {type(exc).__name__}"}
        if state == "busy":  # not the work's fault: the intent stays approved, to be committed again
            why = outcome.pop("error")
            return answer(self.intents.requeue(identifier, why, after=self._deferred(intent, why, outcome), **outcome))
        return answer(
            self.intents.finish(identifier, state, outcome, after=self._settle(intent, state, outcome), by=principal)
        )

    async def reconcile(self) -> list[JSONObject]:
        """Settle every intent a crash left executing, from the evidence in git; never run an effect twice."""
        settled = []
        for intent in self.intents.by_state("executing"):
            async with self.queue.leases.attempt(intent_lease(intent["id"])) as held:
                if held is None:
                    continue  # a live gateway process is executing it: not a leftover
                found = await self._reconcile(self.intents.get(intent["id"]))
                settled += [found] if found is not None else []
        return settled

    async def _reconcile(self, intent: JSONObject) -> JSONObject | None:
        """One intent found executing, with its lease held: settled or requeued from the evidence in git."""
        if intent["state"] != "executing":
            return None  # settled between the listing and the lease
        identifier = intent["id"]
        action = intent["action"]
        if action == "merge":
            result = await self._reconcile_merge(intent)
        elif action == "tag":
            name = intent["arguments"]["name"]
            message = self.repo.run("tag", "-l", "--format=%(contents)", name)
            result = ("committed", {"tag": name, "reconciled": True}) if identifier in message else None
        else:
            why = "the gateway stopped during this call; its outcome is unknown and it is not retried"
            result = ("failed", {"error": why, "reconciled": True})
        if result is None:
            self.intents.requeue(identifier)
            return {"intent_id": identifier, "state": "approved"}
        state, outcome = result
        return answer(self.intents.finish(identifier, state, outcome, after=self._settle(intent, state, outcome)))

    def _settle(self, intent: JSONObject, state: str, outcome: JSONObject) -> Callable[[Any], None] | None:
        """What a merge intent's outcome does to its task, in the same transaction: committed, or back to
        the worker for a new attempt (a merge that was not published), with its dependents told."""
        if intent["action"] != "merge":
            return None
        if state == "committed":
            return lambda tx: self._committed(tx, intent, outcome["merge_commit"])
        why = "; ".join(str(outcome[k]) for k in ("error", "failed_command") if outcome.get(k)) or state
        return lambda tx: self.board.merge_failed(tx, intent["task_id"], f"not merged: {why}", outcome)

    def _push_notes(self, arguments: JSONObject) -> JSONObject:
        """The merges' attestations go where the branch goes: the notes ref is pushed after it (a remote that
        refuses them leaves the branch pushed and says so)."""
        from gateway.attest.attestations import NOTES_REF

        if not self.repo.run("rev-parse", "--verify", "--quiet", NOTES_REF, check=False).strip():
            return {}
        with self.repo.invocation("push", "--", arguments["remote"], f"{NOTES_REF}:{NOTES_REF}") as (argv, env):
            done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
        return {"attestations": "pushed" if done.returncode == 0 else f"not pushed: {done.stderr.strip()[:300]}"}

    def _committed(self, tx: Any, intent: JSONObject, merge_commit: str) -> None:
        """The task is committed, and its artifact puts become canonical, in the one transaction."""
        self.board.mark_committed(tx, intent["task_id"], merge_commit)
        if self.artifacts is not None:
            self.artifacts.promote(tx, intent["task_id"], intent["id"])

    def _deferred(self, intent: JSONObject, why: str, outcome: JSONObject) -> Callable[[Any], None] | None:
        """A merge deferred is a step in its task's trace that people are told of (gateway/notify.py)."""
        if intent["action"] != "merge":
            return None
        facts = {k: outcome[k] for k in ("in_the_way",) if outcome.get(k)}
        return lambda tx: self.board.merge_deferred(tx, intent["task_id"], why, **facts)

    # --- actions ----------------------------------------------------------------------------------

    async def _run(self, intent: JSONObject, principal: Principal, progress: ProgressFn) -> tuple[str, JSONObject]:
        action, arguments = intent["action"], intent["arguments"]
        if action == "merge":
            return await self._merge(intent, principal, progress)
        if action == "tag":
            ref = arguments.get("ref") or "HEAD"
            await self.repo.arun("tag", "-a", arguments["name"], "-m", f"Gateway-Intent: {intent['id']}", ref)
            return "committed", {"tag": arguments["name"], "commit": self.repo.run("rev-parse", ref).strip()}
        if action == "push":
            await self.repo.arun("push", "--", arguments["remote"], arguments["ref"])
            return "committed", {
                "pushed": arguments["ref"],
                "remote": arguments["remote"],
                **self._push_notes(arguments),
            }
        spec = self.catalog.get(arguments["tool"])
        if spec is None or not spec.commit_class:
            raise ToolFailed(f"{arguments['tool']!r} is no longer a commit-class tool")
        result = await spec.handler(
            ToolInvocation(
                arguments=arguments["arguments"],
                workspace=Workspace(self.config.workspace, self.config.protected_paths()),
                progress=progress,
                principal=Principal(agent="gateway", role="committer"),
            )
        )
        from gateway.tools.forwarded import Forwarded  # with the upstream tools (the SDK's types): not for `check`

        if isinstance(result, Forwarded):  # an upstream's answer passed on as sent
            text = result.text
        else:
            text = "\n".join(getattr(block, "text", "") for block in getattr(result, "content", []))
        state = "failed" if getattr(result, "is_error", False) else "committed"
        return state, {"tool": arguments["tool"], "result": text[:4000]}

    async def _merge(self, intent: JSONObject, principal: Principal, progress: ProgressFn) -> tuple[str, JSONObject]:
        task = self.board.get(intent["task_id"])
        states = {t["task_id"]: t["state"] for t in self.board.list()}
        waiting = [d for d in task["manifest"]["depends_on"] if states.get(d) != "committed"]
        if waiting:
            raise ToolFailed(f"merge in dependency order: {', '.join(waiting)} must be committed first")
        verified = (task.get("verification") or {}).get("commit")
        branch_head = self.repo.run("rev-parse", task["branch"]).strip()
        if task["state"] != "verified" or verified != branch_head:
            raise ToolFailed(f"task {task['id']!r} is {task['state']} and its branch is not the verified commit")
        if intent.get("attempt") not in (None, 0, task["attempt"]):
            raise ToolFailed(
                f"intent {intent['id'][:12]} is for attempt {intent['attempt']}; the task is on {task['attempt']}"
            )
        return await self.queue.merge(intent, task, principal, progress)

    async def _reconcile_merge(self, intent: JSONObject) -> tuple[str, JSONObject] | None:
        """A merge is published (the base branch carries its trailer) or it is not (then it runs again:
        the merge queue makes it in its own worktree, which it recovers first)."""
        task = self.board.get(intent["task_id"])
        merged = self._commit_with(f"Gateway-Intent: {intent['id']}", task["base_branch"])
        plan = (intent.get("outcome") or {}).get("catch_up")
        # the user's checkout first: a catch-up the crash cut short is finished (or its lock cleared)
        workspace = await self.queue.resume_catch_up(plan) if plan else None
        if merged is None:
            return None
        outcome: JSONObject = {"merge_commit": merged, "reconciled": True}
        return "committed", outcome if workspace is None else {**outcome, "workspace": workspace}

    def _commit_with(self, trailer: str, branch: str) -> str | None:
        out = self.repo.run("log", "--format=%H", "--fixed-strings", f"--grep={trailer}", branch)
        found = out.split()
        return found[0] if found else None

    async def _wait_for_peer(self, lease: str, progress: ProgressFn) -> None:
        """Another call holds this intent (it is executing it, or about to): wait until it lets go."""
        with anyio.move_on_after(WAIT_FOR_PEER_S):
            waited = 0.0
            while await anyio.to_thread.run_sync(self.queue.leases.held, lease):
                await anyio.sleep(0.1)
                waited += 0.1
                if round(waited, 1) % 5 == 0:
                    await progress(waited, None, "waiting for the concurrent commit of this intent")
            return
        raise IntentRefused(f"{lease} is still executing in another call; try again later")


def answer(intent: JSONObject, replayed: bool = False) -> JSONObject:
    result = {"intent_id": intent["id"], "state": intent["state"], "outcome": intent["outcome"]}
    if replayed:
        result["replayed"] = True
    return result
