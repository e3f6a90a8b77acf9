"""Verification commands the gateway runs itself: verify_run's, and the post-merge check of intent_commit.

Each command is a call like any other: judged by the gateway's own stages (described, decided by the
policy, recorded in the ledger as kind "verify" and in the decision log) on behalf of the principal that
asked for it, then, if allowed, run inside the sandbox. It runs in a throwaway checkout of exactly the
commit under test, never in a worker's worktree or the user's checkout, so leftovers the worker did not
commit cannot sway it and what the commands write is thrown away with the checkout.

    verification = Verification(judge=gateway.stacks.verify.run, sandbox=gateway.sandbox, config=config)
    runs = await verification.run(manifest["verification"], commit, principal=verifier, tool="verify_run",
                                  arguments={"task_id": "T1"}, task=section, trace_id=trace, progress=p)
    [(r.command, r.exit_code) for r in runs]      # exit_code None: not run (r.note says why)
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import structlog

from gateway.config import GatewayConfig
from gateway.decision_log import mask_text
from gateway.digests import digest
from gateway.effects.paths import Workspace
from gateway.errors import ToolFailed
from gateway.judge.call import Call, CallKind, Judge
from gateway.locks import async_file_lock, try_file_lock
from gateway.origin import Origin, ProgressFn
from gateway.repo import Repo
from gateway.sandbox import Sandbox
from gateway.tasks.worktrees import discard_worktree, make_worktree
from gateway.tools.shell import MemoryLimit, run_confined, sandbox_env
from gateway.tools.spec import GATEWAY, ToolInvocation, ToolSpec
from gateway.types import JSONObject, Principal

if TYPE_CHECKING:
    import mcp_types as mt

SCRATCH_PREFIX = "_scratch-"
log = structlog.get_logger("gateway.verification")


async def _never(inv: ToolInvocation) -> mt.CallToolResult:
    raise ToolFailed("a verification command is judged by the pipeline and run by Verification, never called")


def command_spec(tool: str) -> ToolSpec:
    """How a verification command looks to the judge: a call of ``tool`` whose ``command`` is a shell command."""
    return ToolSpec(
        name=tool,
        provider=GATEWAY,
        description="a verification command the gateway runs for this call",
        input_schema={
            "type": "object",
            "properties": {"command": {"type": "string", "minLength": 1, "maxLength": 4096}},
            "required": ["command"],
        },
        handler=_never,
        argument_roles={"command": "command"},
    )


@dataclass(frozen=True)
class CommandRun:
    command: str
    exit_code: int | None  # None: not run (refused by the policy), or killed on timeout or for its memory
    timed_out: bool
    output_digest: str
    output_tail: str
    note: str
    refused: bool = False  # not run: the judge did not allow it (the note says why)


@asynccontextmanager
async def scratch_checkout(repo: Repo, commit: str, parent: Path, locks: Path) -> AsyncIterator[Path]:
    """A complete detached worktree of ``commit`` under ``parent`` (the gateway's worktrees dir), removed
    afterwards. Its lock in ``locks`` (held by this process and the gits it runs) tells a starting gateway
    whether its owner is alive: one a crash left behind is removed on start (``clear_scratch``)."""
    name = f"{SCRATCH_PREFIX}{secrets.token_hex(6)}"
    path = parent / name
    lock = locks / f"{name}.lock"
    async with async_file_lock(lock, f"the verification checkout {name}"):
        try:
            await anyio.to_thread.run_sync(lambda: make_worktree(repo, path, commit, locks))
            yield path
        finally:
            with anyio.CancelScope(shield=True):
                try:
                    await anyio.to_thread.run_sync(lambda: discard_worktree(repo, path, locks))
                    lock.unlink(missing_ok=True)
                except (OSError, ToolFailed) as exc:  # left for the next start to clear; the run's result stands
                    log.warning("a verification checkout could not be removed", path=str(path), error=str(exc))


def clear_scratch(repo: Repo, parent: Path, locks: Path) -> list[str]:
    """Verification checkouts a crash cut short (their owner's lock is free: it is gone, with every git it
    started): removed. Answers what was removed."""
    removed = []
    for path in sorted(parent.glob(f"{SCRATCH_PREFIX}*")):
        lock = locks / f"{path.name}.lock"
        with try_file_lock(lock, f"clearing the verification checkout {path.name}") as mine:
            if not mine:
                continue  # a live verification's
            try:
                if discard_worktree(repo, path, locks):
                    removed.append(f"removed the verification checkout {path.name} a crash left")
                lock.unlink(missing_ok=True)
            except (OSError, ToolFailed) as exc:
                removed.append(f"could not remove the verification checkout {path.name}: {str(exc)[:200]}")
    return removed


class Verification:
    def __init__(self, judge: Judge, sandbox: Sandbox, config: GatewayConfig) -> None:
        self.judge = judge
        self.sandbox = sandbox
        self.config = config
        self.repo = Repo(config.workspace)

    async def run(
        self,
        commands: list[str],
        commit: str,
        *,
        principal: Principal,
        tool: str,
        arguments: JSONObject,
        trace_id: str,
        progress: ProgressFn,
        task: JSONObject | None = None,
        intent: JSONObject | None = None,
        label: str = "",
        stop_on_failure: bool = False,
    ) -> list[CommandRun]:
        """Judge and run each command in a checkout of ``commit``; later ones are skipped after a failure
        when ``stop_on_failure``."""
        runs: list[CommandRun] = []
        async with scratch_checkout(self.repo, commit, self.config.worktrees, self.config.state / "locks") as root:
            workspace = Workspace(root, self.config.protected_paths())
            env = sandbox_env(self.config.shell, root)
            for index, command in enumerate(commands, start=1):
                where = f"{label}[{index}/{len(commands)}]"
                if stop_on_failure and runs and runs[-1].exit_code != 0:
                    runs.append(CommandRun(command, None, False, "", "", f"{where} not run: an earlier command failed"))
                    continue
                call = Call(
                    tool=tool,
                    arguments={**arguments, "command": command},
                    origin=Origin(transport="inprocess", protocol_version="verify"),
                    kind=CallKind.VERIFY,
                    spec=command_spec(tool),
                    workspace=workspace,
                    task=task,
                    intent=intent,
                    trace_id=trace_id,
                    principal=principal,
                )
                judged = await self.judge(call)
                decision = judged.decision
                if decision is None or decision.action != "allow" or judged.confinement is None:
                    why = judged.error.message if judged.error else f"the policy says {decision and decision.action}"
                    runs.append(CommandRun(command, None, False, "", "", f"{where} not run: {why}", refused=True))
                    continue
                await progress(index - 1, len(commands), f"{where} {command}")
                try:
                    result = await run_confined(
                        self.sandbox,
                        judged.confinement,
                        command,
                        env,
                        self.config.tasks.verification_timeout_s,
                        self.config.limits.shell_output_bytes,
                        progress,
                        label=f"{where} ",
                    )
                except MemoryLimit as exc:  # killed by the kernel: a failed command, not a failed verification
                    runs.append(CommandRun(command, None, False, "", "", exc.message))
                    continue
                # what is kept of the output (the verification result, the ledger, an intent's outcome) is masked
                tail = mask_text((result.stdout + result.stderr)[-1500:])
                note = f"{where} {command} -> exit {result.exit_code}" + (" (timed out)" if result.timed_out else "")
                note += f" ({result.limits})" if result.limits else ""
                runs.append(
                    CommandRun(
                        command,
                        result.exit_code,
                        result.timed_out,
                        digest({"stdout": result.stdout, "stderr": result.stderr}),
                        tail,
                        note + (f"\n{tail}" if result.exit_code != 0 else ""),
                    )
                )
        return runs
