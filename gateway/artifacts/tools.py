"""The artifact tools (gateway/artifacts/store.py): artifact_put, artifact_get, artifact_log, artifact_resolve.

A put or get made by an agent holding a task (its token's task, or its claim) is that task's: the put is staged
on it until its merge commits, and the task's gets read it back first."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from gateway.artifacts.store import Artifacts
from gateway.tasks.board import TaskBoard
from gateway.tools.base import Arguments, builtin, json_result
from gateway.tools.spec import GATEWAY, ToolInvocation, ToolSpec
from gateway.types import JSONObject

if TYPE_CHECKING:
    import mcp_types as mt

__all__ = ["artifact_tools"]

KEY_HELP = "NAMESPACE/NAME, e.g. notes/api-sketch.md"


class PutArgs(Arguments):
    key: str = Field(max_length=200, description=KEY_HELP)
    content: str = Field(description="the new revision's text")
    base: int = Field(ge=0, description="the revision you read and changed (0: a new key); a stale base fails")


class GetArgs(Arguments):
    key: str = Field(max_length=200, description=KEY_HELP)
    revision: int | None = Field(default=None, ge=1, description="exactly this revision")
    at_least: int | None = Field(default=None, ge=1, description="the latest, but never older than this one")


class LogArgs(Arguments):
    key: str = Field(max_length=200, description=KEY_HELP)


class ResolveArgs(Arguments):
    conflict_id: str = Field(max_length=64, description="the conflict (artifact_log lists them)")
    content: str | None = Field(default=None, description="the resolved text; omit to see the conflict")


def artifact_tools(artifacts: Artifacts, board: TaskBoard) -> list[ToolSpec]:
    def provenance(inv: ToolInvocation) -> JSONObject:
        # a worker's puts after its report stay on its task too: only the task's merge makes them canonical
        task = board.task_for(inv.principal) or board.unfinished_work_of(inv.principal.agent)
        return {
            "agent": inv.principal.agent,
            "role": inv.principal.role,
            "task": task["id"] if task else None,
            "trace": inv.trace_id or None,
            # what the session had read when it wrote this: a reader can tell content an injection may have shaped
            **({"flow": inv.flow.as_input()} if inv.flow is not None else {}),
        }

    async def artifact_put(args: PutArgs, inv: ToolInvocation) -> mt.CallToolResult:
        return json_result(artifacts.put(args.key, args.content, args.base, provenance(inv)))

    async def artifact_get(args: GetArgs, inv: ToolInvocation) -> mt.CallToolResult:
        task = provenance(inv)["task"]
        return json_result(artifacts.get(args.key, args.revision, args.at_least, task=task))

    async def artifact_log(args: LogArgs, inv: ToolInvocation) -> mt.CallToolResult:
        return json_result(artifacts.log(args.key))

    async def artifact_resolve(args: ResolveArgs, inv: ToolInvocation) -> mt.CallToolResult:
        if args.content is None:
            return json_result(artifacts.conflict(args.conflict_id))
        return json_result(artifacts.resolve(args.conflict_id, args.content, provenance(inv)))

    def tool(name: str, description: str, model: type[Arguments], fn: object, read_only: bool = False) -> ToolSpec:
        return builtin(name, description, model, fn, provider=GATEWAY, read_only=read_only)  # type: ignore[arg-type]

    return [
        tool(
            "artifact_put",
            "Put a new revision of a shared artifact (notes, decisions, sketches) on the revision you read "
            "(base; 0 for a new key). Within a task it stays yours until the task's merge commits.",
            PutArgs,
            artifact_put,
        ),
        tool(
            "artifact_get",
            "Get a shared artifact: the latest revision, exactly one (revision), or the latest but never older "
            "than at_least (read your writes). Your task's own puts come first.",
            GetArgs,
            artifact_get,
            read_only=True,
        ),
        tool(
            "artifact_log",
            "A shared artifact's revisions with provenance, and its conflicts.",
            LogArgs,
            artifact_log,
            read_only=True,
        ),
        tool(
            "artifact_resolve",
            "Resolve an artifact conflict (arbiter): without content, see only the conflict (both revisions, "
            "their base, provenance); with content, it becomes the key's next revision.",
            ResolveArgs,
            artifact_resolve,
        ),
    ]
