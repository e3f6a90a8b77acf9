"""The task tools of ARCHITECTURE.md section 5, each granted by role files:
task_submit, task_list, task_claim, task_renew, task_release, task_report, verify_run.

Results are JSON text plus structuredContent. Artifacts are validated strictly; the error names the field.

    specs = task_tools(board)
"""

from __future__ import annotations

from typing import Any

import mcp_types as mt
from pydantic import Field, ValidationError

from gateway.errors import InvalidArguments
from gateway.tasks.board import TaskBoard
from gateway.tasks.models import ExecutionRecord, TaskId, TaskManifest
from gateway.tools.base import Arguments, builtin, json_result
from gateway.types import ToolInvocation, ToolSpec


class SubmitArgs(Arguments):
    manifest: dict[str, Any] = Field(
        description="TaskManifest: task_id, objective, allowed_paths (globs), constraints, verification "
        "(shell commands), handoff_notes, depends_on, max_attempts"
    )


class NoArgs(Arguments):
    pass


class TaskArgs(Arguments):
    task_id: TaskId


class ReportArgs(Arguments):
    record: dict[str, Any] = Field(
        description="ExecutionRecord: task_id, status (done | failed | blocked), files_changed, commands_run, "
        "risks, next_step, and blocker (strategies_tried, errors, suspected_cause, human_action) when blocked"
    )


def parse_artifact(model: type[Any], value: dict[str, Any], argument: str) -> Any:
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        message = "unknown field" if first["type"] == "extra_forbidden" else first["msg"]
        raise InvalidArguments(f"argument '{argument}': field '{where}': {message}") from None


def task_tools(board: TaskBoard) -> list[ToolSpec]:
    async def task_submit(args: SubmitArgs, inv: ToolInvocation) -> mt.CallToolResult:
        manifest = parse_artifact(TaskManifest, args.manifest, "manifest")
        return json_result(await board.submit(manifest, by=inv.principal.agent, trace_id=inv.trace_id))

    async def task_list(args: NoArgs, inv: ToolInvocation) -> mt.CallToolResult:
        return json_result({"tasks": board.list()})

    async def task_claim(args: TaskArgs, inv: ToolInvocation) -> mt.CallToolResult:
        return json_result(await board.claim(args.task_id, inv.principal))

    async def task_renew(args: TaskArgs, inv: ToolInvocation) -> mt.CallToolResult:
        return json_result(board.renew(args.task_id, inv.principal))

    async def task_release(args: TaskArgs, inv: ToolInvocation) -> mt.CallToolResult:
        return json_result(board.release(args.task_id, inv.principal))

    async def task_report(args: ReportArgs, inv: ToolInvocation) -> mt.CallToolResult:
        record = parse_artifact(ExecutionRecord, args.record, "record")
        outcome = await board.report(record, inv.principal)
        return json_result(outcome, is_error=bool(outcome["scope_violations"]))

    async def verify_run(args: TaskArgs, inv: ToolInvocation) -> mt.CallToolResult:
        result = await board.verify(args.task_id, inv.principal, inv.progress)
        return json_result(result.model_dump())

    def tool(name: str, description: str, model: type[Any], fn: Any, read_only: bool = False) -> ToolSpec:
        return builtin(name, description, model, fn, provider="gateway", read_only=read_only)

    return [
        tool(
            "task_submit",
            "Submit a task manifest (planner): the bounded contract a worker will apply.",
            SubmitArgs,
            task_submit,
        ),
        tool(
            "task_list",
            "List tasks with their state, owner and whether they are ready to claim.",
            NoArgs,
            task_list,
            read_only=True,
        ),
        tool(
            "task_claim",
            "Claim a ready task (worker): one owner at a time, for a limited time. Answers the claim "
            "and the task's own git worktree, where your file and shell tools then operate.",
            TaskArgs,
            task_claim,
        ),
        tool("task_renew", "Extend your claim on a task before it expires.", TaskArgs, task_renew),
        tool("task_release", "Give a claimed task back; the attempt counts as failed.", TaskArgs, task_release),
        tool(
            "task_report",
            "Report your work on the task you hold (worker). The gateway commits the worktree to the "
            "task branch and checks the real diff against allowed_paths; never run git commit yourself.",
            ReportArgs,
            task_report,
        ),
        tool(
            "verify_run",
            "Run the task manifest's verification commands in the task's worktree (verifier) and "
            "record the VerificationResult. Only the manifest's commands can run.",
            TaskArgs,
            verify_run,
        ),
    ]
