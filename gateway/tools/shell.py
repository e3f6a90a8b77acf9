"""The shell_run tool: one bash command in the workspace, with a timeout, an output cap and progress.

The command runs inside the OS sandbox (gateway/sandbox.py) that the pipeline chose for the call, in its
own process group so a timeout kills everything it started. It gets a minimal environment
(``shell.pass_env`` in gateway.yaml): the gateway's tokens and keys never reach it.

    specs = shell_tools(config.limits, config.shell, sandbox)
    result = await run_confined(sandbox, confinement, "pytest -q", env, timeout=60, cap=65536, progress=p)
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
from anyio.abc import ByteReceiveStream
from pydantic import Field

from gateway.config import LimitsConfig, ShellConfig
from gateway.decision_log import mask_text
from gateway.egress import Egress
from gateway.errors import ToolFailed
from gateway.sandbox import Confinement, Sandbox, SandboxUnavailable
from gateway.tools.base import Arguments, builtin, json_result
from gateway.types import JSONObject, ProgressFn, ToolInvocation, ToolSpec

if TYPE_CHECKING:
    import mcp_types as mt

PROGRESS_INTERVAL_S = 1.0
DRAIN_GRACE_S = 2.0


class ShellArgs(Arguments):
    command: str = Field(min_length=1, description="A bash command line, e.g. 'pytest -q tests/test_a.py'")
    cwd: str = Field(".", description="Working directory, relative to the workspace root")
    timeout_s: float | None = Field(None, gt=0, description="Kill the command after this many seconds")
    max_output_bytes: int | None = Field(None, gt=0, description="Keep at most this many bytes of stdout and stderr")


class Capture:
    """Keeps the first ``cap`` bytes of a stream and counts the rest, draining it so the child never blocks."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.data = bytearray()
        self.total = 0

    async def drain(self, stream: ByteReceiveStream) -> None:
        async for chunk in stream:
            self.total += len(chunk)
            room = self.cap - len(self.data)
            if room > 0:
                self.data += chunk[:room]

    def text(self) -> str:
        text = self.data.decode("utf-8", errors="replace")
        if self.total > len(self.data):
            text += f"\n[truncated: {self.total - len(self.data)} more bytes]"
        return text


@dataclass(frozen=True)
class CommandResult:
    exit_code: int | None
    stdout: str
    stderr: str
    timed_out: bool
    duration_s: float
    limits: str | None = None  # a sandbox limit its failure looks like (limits_note)

    def as_dict(self) -> JSONObject:
        found: JSONObject = {
            "exit_code": self.exit_code,
            "stdout": self.stdout,
            "stderr": self.stderr,
            "timed_out": self.timed_out,
            "duration_s": self.duration_s,
        }
        return found | ({"sandbox_limits": self.limits} if self.limits else {})


class MemoryLimit(ToolFailed):
    """The kernel killed a confined command for its memory cgroup's limit."""

    code = "memory_limit"


# What a program says when an allocation or a write fails: an address-space limit (RLIMIT_AS) and a full
# tmpfs are counted nowhere the gateway can read, so the program's own words are the evidence.
_OUT_OF_ROOM = re.compile(
    r"MemoryError|Cannot allocate memory|std::bad_alloc|[Oo]ut of memory|No space left on device|"
    r"File size limit exceeded"
)


def limits_note(result: CommandResult, limits: JSONObject) -> str | None:
    """For a command whose errors read as running out of memory or room: the sandbox's limits."""
    if not _OUT_OF_ROOM.search(result.stderr[-4096:]):
        return None
    total = " (and all its processes and tmpfs files together)" if limits.get("memory_cgroup") else ""
    return (
        f"the sandbox gives each process {limits.get('memory_mb')} MB of address space{total} (sandbox.memory_mb), "
        f"/tmp and each scratch dir {limits.get('tmpfs_mb')} MB of memory (sandbox.tmpfs_mb), and files "
        f"{limits.get('file_size_mb')} MB (sandbox.file_size_mb): the failure may be one of these limits"
    )


def sandbox_env(shell: ShellConfig, workspace: Path) -> dict[str, str]:
    """The environment a command gets: only the pass-through variables, never the gateway's secrets."""
    env = {name: os.environ[name] for name in shell.pass_env if name in os.environ}
    env["GATEWAY_WORKSPACE"] = str(workspace)
    env["TMPDIR"] = "/tmp"  # the sandbox's private /tmp
    return env


async def run_confined(
    sandbox: Sandbox,
    confinement: Confinement,
    command: str,
    env: dict[str, str],
    timeout: float,
    cap: int,
    progress: ProgressFn,
    label: str = "",
    egress: Egress | None = None,
    trace_id: str | None = None,
) -> CommandResult:
    """One bash command inside ``confinement``; raises SandboxUnavailable when the sandbox did not start.
    The hosts the confinement allows are reached through an egress proxy served for this command alone."""
    async with contextlib.AsyncExitStack() as stack:
        socket = None
        if confinement.proxied and egress is not None:
            socket = await stack.enter_async_context(egress.serving(confinement.network, trace_id))
        group = await stack.enter_async_context(sandbox.memory_group(confinement))
        argv = sandbox.command(confinement, ["/bin/bash", "-c", command], egress=socket, group=group)
        result = await run_command(argv, confinement.cwd, env, timeout, cap, progress, label)
        killed = group.oom_kills() if group is not None else 0
    why = sandbox.failure(result.exit_code, result.stderr)
    if why is not None:
        raise SandboxUnavailable(f"the command was not run: the sandbox did not start ({why})")
    if killed:
        tail = mask_text((result.stdout + result.stderr)[-1000:])
        raise MemoryLimit(
            f"{label}the kernel killed {killed} of the command's processes: it ran out of the "
            f"{confinement.limits['memory_mb']} MB of memory the sandbox gives all its processes and tmpfs files "
            f"together (sandbox.memory_mb); it exited {result.exit_code}."
            + (f" Its output ended:\n{tail}" if tail.strip() else "")
        )
    return replace(result, limits=limits_note(result, confinement.limits))


async def run_command(
    argv: Sequence[str], cwd: Path, env: dict[str, str], timeout: float, cap: int, progress: ProgressFn, label: str = ""
) -> CommandResult:
    """Run one program in its own process group; kill the group on timeout or cancellation."""
    stdout, stderr = Capture(cap), Capture(cap)
    started = time.monotonic()
    timed_out = False
    process = await anyio.open_process(list(argv), cwd=cwd, env=env, stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        async with anyio.create_task_group() as tg:
            assert process.stdout is not None and process.stderr is not None
            tg.start_soon(stdout.drain, process.stdout)
            tg.start_soon(stderr.drain, process.stderr)
            with anyio.move_on_after(timeout) as scope:
                while process.returncode is None:
                    with anyio.move_on_after(PROGRESS_INTERVAL_S):
                        await process.wait()
                    if process.returncode is None:
                        elapsed = time.monotonic() - started
                        message = f"{label}running {elapsed:.0f}s, {stdout.total + stderr.total} bytes"
                        await progress(round(elapsed, 1), timeout, message)
            if scope.cancelled_caught:
                timed_out = True
                _kill_group(process.pid)
                await process.wait()
            # a daemonised grandchild may hold the pipes open: stop reading shortly after the exit
            tg.cancel_scope.deadline = anyio.current_time() + DRAIN_GRACE_S
    finally:
        if process.returncode is None:  # cancelled by the client: leave nothing running
            _kill_group(process.pid)
            with anyio.CancelScope(shield=True):
                await process.wait()
    return CommandResult(
        exit_code=process.returncode,
        stdout=stdout.text(),
        stderr=stderr.text(),
        timed_out=timed_out,
        duration_s=round(time.monotonic() - started, 3),
    )


def shell_tools(limits: LimitsConfig, shell: ShellConfig, sandbox: Sandbox, egress: Egress) -> list[ToolSpec]:
    async def shell_run(args: ShellArgs, inv: ToolInvocation) -> mt.CallToolResult:
        cwd = inv.workspace.resolve(args.cwd)
        if not cwd.is_dir():
            raise ToolFailed(f"cwd {args.cwd!r} is not a directory")
        if inv.confinement is None:  # the pipeline gives every command call one; never run without
            raise SandboxUnavailable("the command was not run: the call has no sandbox profile")
        timeout = min(args.timeout_s or limits.shell_timeout_s, limits.shell_timeout_s)
        cap = min(args.max_output_bytes or limits.shell_output_bytes, limits.shell_output_bytes)
        env = sandbox_env(shell, inv.workspace.root)
        confinement = replace(inv.confinement, cwd=cwd)
        outcome = await run_confined(
            sandbox, confinement, args.command, env, timeout, cap, inv.progress, egress=egress, trace_id=inv.trace_id
        )
        result = outcome.as_dict()
        if outcome.timed_out:
            result["error"] = f"command timed out after {timeout:g}s and was killed"
        return json_result(result, is_error=outcome.timed_out)

    return [
        builtin(
            "shell_run",
            "Run a bash command in the workspace (or a subdirectory via cwd). Answers the exit code, stdout and "
            "stderr; long output is truncated, and the command is killed after timeout_s.",
            ShellArgs,
            shell_run,
            roles={"command": "command", "cwd": "read"},
        )
    ]


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)
