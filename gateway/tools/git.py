"""Built-in read-only git tools: git_status, git_diff, git_log, for the workspace's repository.

git reads the agent's files (status and diff compare them) behind the sandbox's wall, read-only: a
directory the agent swaps for a symlink to the gateway's state leads nowhere in there.

specs = git_tools(sandbox, config.limits)

What git prints for an agent is bounded like a command's output (limits.shell_output_bytes kept, the rest
counted and dropped, undecodable bytes replaced), and so is its time: an agent's tree can make a diff of
gigabytes, in any encoding.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from pydantic import Field

from gateway.config import LimitsConfig
from gateway.errors import InvalidArguments
from gateway.repo import GitError, Repo
from gateway.sandbox import Sandbox
from gateway.tools.base import Arguments, builtin, text_result
from gateway.tools.shell import run_command
from gateway.types import ToolInvocation, ToolSpec

if TYPE_CHECKING:
    import mcp_types as mt

# A revision as an agent may name it; never an option (a leading '-' would be parsed as one by git).
REVISION = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_./~^@{}:-]{0,199}$")


class StatusArgs(Arguments):
    pass


class DiffArgs(Arguments):
    staged: bool = Field(False, description="Show staged changes (the index) instead of unstaged ones")
    ref: str | None = Field(None, description="Compare the working tree with this revision, e.g. 'HEAD~1' or 'main'")
    paths: list[str] = Field(default_factory=list, description="Limit the diff to these paths")


class LogArgs(Arguments):
    max_count: int = Field(20, gt=0, le=500, description="How many commits to show")
    path: str | None = Field(None, description="Only commits that touch this path")


def _revision(value: str) -> str:
    if not REVISION.match(value):
        raise InvalidArguments(f"argument 'ref': {value!r} is not a plain revision name")
    return value


GIT_TIMEOUT_S = 120.0


def git_tools(sandbox: Sandbox, limits: LimitsConfig) -> list[ToolSpec]:
    async def git(inv: ToolInvocation, *args: str) -> str:
        """``git args`` in the workspace, walled, its output bounded."""
        repo = Repo(inv.workspace.root, wall=sandbox.git_wall(inv.workspace.root))
        argv, env = repo.invocation(*args)
        timeout = min(GIT_TIMEOUT_S, limits.shell_timeout_s)
        done = await run_command(argv, inv.workspace.root, env, timeout, limits.shell_output_bytes, inv.progress)
        if done.timed_out:
            raise GitError(f"git {args[0]} took longer than {timeout:g} s and was stopped")
        if done.exit_code != 0:
            raise GitError(f"git {args[0]} failed: {done.stderr.strip()[:2000] or done.stdout.strip()[:2000]}")
        return done.stdout

    async def git_status(args: StatusArgs, inv: ToolInvocation) -> mt.CallToolResult:
        out = await git(inv, "status", "--porcelain=v1", "--branch", "--untracked-files=all")
        return text_result(out or "clean")

    async def git_diff(args: DiffArgs, inv: ToolInvocation) -> mt.CallToolResult:
        argv = ["diff", "--no-ext-diff", "--no-textconv", "--no-color"]
        if args.staged:
            argv.append("--cached")
        if args.ref:
            argv.append(_revision(args.ref))
        argv.append("--")
        argv += [inv.workspace.display(inv.workspace.resolve(p)) for p in args.paths]
        out = await git(inv, *argv)
        return text_result(out or "no differences")

    async def git_log(args: LogArgs, inv: ToolInvocation) -> mt.CallToolResult:
        argv = ["log", f"--max-count={args.max_count}", "--no-color", "--format=%H %ad %an%n    %s", "--date=iso"]
        if args.path:
            argv += ["--", inv.workspace.display(inv.workspace.resolve(args.path))]
        out = await git(inv, *argv)
        return text_result(out or "no commits")

    return [
        builtin(
            "git_status",
            "Show the workspace repository's branch and changed, staged and untracked files (porcelain format).",
            StatusArgs,
            git_status,
            read_only=True,
        ),
        builtin(
            "git_diff",
            "Show the workspace repository's diff: unstaged changes by default, staged=true for the index, "
            "or against a revision with ref.",
            DiffArgs,
            git_diff,
            roles={"paths": "read"},
            read_only=True,
        ),
        builtin(
            "git_log",
            "Show recent commits of the workspace repository (hash, date, author, subject).",
            LogArgs,
            git_log,
            roles={"path": "read"},
            read_only=True,
        ),
    ]
