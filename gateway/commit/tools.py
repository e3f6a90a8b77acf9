"""The commit-protocol tools of ARCHITECTURE.md section 5: intent_propose, intent_approve, intent_commit.

The committer and the ceremony are reached through a function, called when a tool runs: a process that
only decides (``gateway check``, the command hook) never builds them nor imports their modules.

specs = intent_tools(intents, lambda: gateway.committer, board, catalog)
specs = ceremony_tools(lambda: gateway.ceremony)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pydantic import Field

from gateway.commit.intents import Intents
from gateway.tasks.board import TaskBoard
from gateway.tasks.models import TaskId
from gateway.tasks.records import bound_to
from gateway.tools.base import Arguments, builtin, json_result
from gateway.tools.catalog import Catalog
from gateway.tools.spec import GATEWAY, ToolInvocation, ToolSpec

if TYPE_CHECKING:
    import mcp_types as mt

    from gateway.commit.ceremony import Ceremony
    from gateway.commit.executor import Committer


class ProposeArgs(Arguments):
    task_id: TaskId
    action: str = Field(description="merge | tag | push | upstream")
    arguments: dict[str, Any] = Field(
        default_factory=dict,
        description="merge: {}; tag: {name, ref?}; push: {remote, ref}; upstream: {tool, arguments}",
    )


class IntentArgs(Arguments):
    intent_id: str = Field(pattern=r"^[0-9a-f]{64}$", description="The id intent_propose answered")


def intent_tools(
    intents: Intents, committer: Callable[[], Committer], board: TaskBoard, catalog: Catalog
) -> list[ToolSpec]:
    async def intent_propose(args: ProposeArgs, inv: ToolInvocation) -> mt.CallToolResult:
        from gateway.commit.executor import check_arguments

        bound_to(inv.principal, args.task_id)
        task = board.get(args.task_id)
        check_arguments(args.action, args.arguments, catalog)
        intent = intents.propose(
            args.task_id, args.action, args.arguments, inv.principal, inv.trace_id, attempt=task["attempt"]
        )
        return json_result({"intent_id": intent["id"], "state": intent["state"]})

    async def intent_approve(args: IntentArgs, inv: ToolInvocation) -> mt.CallToolResult:
        intent = intents.get(args.intent_id)
        bound_to(inv.principal, intent["task_id"])
        approved = intents.approve(args.intent_id, inv.principal, board.get(intent["task_id"]))
        return json_result({"intent_id": approved["id"], "state": approved["state"]})

    async def intent_commit(args: IntentArgs, inv: ToolInvocation) -> mt.CallToolResult:
        bound_to(inv.principal, intents.get(args.intent_id)["task_id"])
        outcome = await committer().commit(args.intent_id, inv.principal, inv.progress)
        return json_result(outcome, is_error=outcome["state"] != "committed")

    def tool(name: str, description: str, model: type[Any], fn: Any) -> ToolSpec:
        return builtin(name, description, model, fn, provider=GATEWAY)

    return [
        tool(
            "intent_propose",
            "Propose an irreversible action for a task (merge, tag, push, or a commit-class upstream tool). "
            "Answers a deterministic intent id: proposing the same thing twice for the same attempt of the task "
            "gives the same intent; a new attempt (after a merge that failed) gets a new one.",
            ProposeArgs,
            intent_propose,
        ),
        tool(
            "intent_approve",
            "Approve a proposed intent (verifier): only when the task's latest verification passed and the task "
            "is not quarantined.",
            IntentArgs,
            intent_approve,
        ),
        tool(
            "intent_commit",
            "Execute an approved intent exactly once (committer). A replay or a concurrent duplicate answers the "
            "recorded outcome and changes nothing.",
            IntentArgs,
            intent_commit,
        ),
    ]


class CeremonyArgs(Arguments):
    pass


def ceremony_tools(ceremony: Callable[[], Ceremony]) -> list[ToolSpec]:
    async def merge_ceremony(args: CeremonyArgs, inv: ToolInvocation) -> mt.CallToolResult:
        report = await ceremony().run(inv.principal, inv.progress)
        return json_result(report, is_error=bool(report["left_out"]))

    return [
        builtin(
            "merge_ceremony",
            "Triage every task and merge the verified ones that have an approved merge intent, in dependency "
            "order, through the merge queue (committer). A task whose merge fails its checks is left out and its "
            "dependents are blocked; the others still merge. Answers the ceremony report.",
            CeremonyArgs,
            merge_ceremony,
            provider=GATEWAY,
        )
    ]
