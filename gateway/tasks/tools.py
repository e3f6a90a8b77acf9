"""The task tools of ARCHITECTURE.md section 5, each granted by role files:
task_submit, task_amend, task_list, task_show, task_claim, task_renew, task_release, task_report, verify_run.

Results are JSON text plus structuredContent. Artifacts are validated strictly; the error names the field.

    specs = task_tools(board)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field, ValidationError

from gateway.errors import InvalidArguments
from gateway.tasks.board import TaskBoard
from gateway.tasks.models import ExecutionRecord, StrategyShift, TaskId, TaskManifest
from gateway.tools.base import Arguments, builtin, json_result
from gateway.tools.spec import GATEWAY, ToolInvocation, ToolSpec

if TYPE_CHECKING:
    import mcp_types as mt


class SubmitArgs(Arguments):
    manifest: dict[str, Any] = Field(
        description="TaskManifest: task_id, objective, allowed_paths (globs), constraints, verification "
        "(shell commands), handoff_notes, depends_on, max_attempts"
    )


class NoArgs(Arguments):
    pass


class TaskArgs(Arguments):
    task_id: TaskId


class ClaimArgs(Arguments):
    task_id: TaskId
    strategy_shift: dict[str, Any] | None = Field(
        default=None,
        description="StrategyShift {approach, reason}: this attempt takes a new approach (required once the "
        "current approach has used max_attempts_per_strategy attempts). The attempt starts clean either way.",
    )


class AmendArgs(Arguments):
    manifest: dict[str, Any] = Field(description="The task's new TaskManifest (same task_id): a new version")
    why: str = Field(default="", max_length=2000, description="Why the manifest changes")


class ReportArgs(Arguments):
    record: dict[str, Any] = Field(
        description="ExecutionRecord: task_id, status (done | needs_review | failed | blocked), files_changed, "
        "commands_run, risks, next_step; when blocked, optionally blocker (strategies_tried, errors, "
        "suspected_cause: your hypothesis, human_action: the intervention you recommend)"
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

    async def task_show(args: TaskArgs, inv: ToolInvocation) -> mt.CallToolResult:
        return json_result(board.show(args.task_id))

    async def task_claim(args: ClaimArgs, inv: ToolInvocation) -> mt.CallToolResult:
        shift = (
            None
            if args.strategy_shift is None
            else parse_artifact(StrategyShift, args.strategy_shift, "strategy_shift")
        )
        return json_result(await board.claim(args.task_id, inv.principal, shift))

    async def task_amend(args: AmendArgs, inv: ToolInvocation) -> mt.CallToolResult:
        manifest = parse_artifact(TaskManifest, args.manifest, "manifest")
        return json_result(await board.amend(manifest, by=inv.principal.agent, why=args.why))

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
        return builtin(name, description, model, fn, provider=GATEWAY, read_only=read_only)

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
            "task_show",
            "One task in full (planner): its manifest, state, attempts with their outcomes, strategy, latest "
            "verification and, when it is blocked, the blocker report the gateway wrote (what each attempt "
            "tried and why it failed, the worker's hypothesis). Read it before amending or re-planning a task.",
            TaskArgs,
            task_show,
            read_only=True,
        ),
        tool(
            "task_claim",
            "Claim a ready task (worker): one owner at a time, for a limited time. Answers the claim "
            "and the task's own git worktree, where your file and shell tools then operate. Every attempt "
            "starts clean from the base branch; declare strategy_shift {approach, reason} to change approach.",
            ClaimArgs,
            task_claim,
        ),
        tool(
            "task_amend",
            "Amend a task's manifest (planner): a new version; the task reopens with a fresh budget of "
            "attempts, earlier versions and attempts kept. Not for a committed task or under a live claim.",
            AmendArgs,
            task_amend,
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
