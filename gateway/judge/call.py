"""The call: one request on its way through a stack of stages, each stage filling in its part.

call = Call(tool="fs_read", arguments={"path": "README.md"}, origin=origin)
call.kind            # CallKind.CALL: what the ledger records it as
await stacks.call.run(call)
call.response()      # the result, or the tool error the model reads
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from gateway.errors import GatewayError
from gateway.types import Decision, Effects, JSONObject, Outcome, Principal

if TYPE_CHECKING:
    import mcp_types as mt

    from gateway.budgets import Budget, Usage
    from gateway.effects.paths import Workspace
    from gateway.labels import Flow
    from gateway.origin import Origin
    from gateway.sandbox import Confinement
    from gateway.tools.pins import PinStatus
    from gateway.tools.spec import CallResult, ToolSpec

__all__ = ["Call", "CallKind", "Judge", "Stage", "error_result", "new_id", "verdict"]


def new_id(nbytes: int = 16) -> str:
    return secrets.token_hex(nbytes)


class CallKind(StrEnum):
    """What the ledger records a call as: one the gateway runs, or a decision without a run."""

    CALL = "call"  # a tools/call, resources/read or prompts/get, run by the gateway
    CHECK = "check"  # a dry run: `gateway check`, decided and recorded, never run, kept apart in traces
    HOOK = "hook"  # one of Claude Code's own tools (the PreToolUse hook): Claude Code runs it
    HOOK_RESULT = "hook_result"  # a PostToolUse event: what the tool returned (its size and digest)
    # a PreToolUse event of one of the gateway's own MCP tools: never recorded (the MCP call is, judged there),
    # it only tells which Claude Code session the MCP call belongs to (gateway/session_joins.py)
    HOOK_JOIN = "hook_join"
    VERIFY = "verify"  # a verification command the gateway runs itself, judged before it runs
    CEREMONY_CHECK = "ceremony_check"  # a merge the merge ceremony is about to make, judged as its intent_commit
    SCOPE = "scope"  # a task's files against its allowed paths (or its acceptance files), asked of the policy
    RELAY = "relay"  # an upstream's request for the calling client (a question, sampling), judged before it goes


@dataclass
class Call:
    """One call on its way through the stages; each stage fills in its part."""

    tool: str
    arguments: JSONObject
    origin: Origin
    kind: CallKind = CallKind.CALL
    # the MCP request: a tool call, or a read of an upstream's resource (``tool`` is then its URI until
    # Resolve names it) or prompt; the last two are judged as reads of that upstream
    method: str = "tools/call"
    call_id: str = field(default_factory=new_id)
    trace_id: str = field(default_factory=new_id)
    span_id: str = field(default_factory=lambda: new_id(8))
    started: float = field(default_factory=time.perf_counter)
    principal: Principal | None = None
    spec: ToolSpec | None = None
    pin: PinStatus | None = None  # an upstream definition's pin status: input.tool.pin, part of the approval key
    workspace: Workspace | None = None
    task: JSONObject | None = None  # input.task: the task the call is judged against, as the policy sees it
    intent: JSONObject | None = None  # input.intent: the intent a commit-protocol call names
    confinement: Confinement | None = None  # the sandbox its commands (or its upstream) run in: context.sandbox
    effects: Effects | None = None
    flow: Flow | None = None  # the session's information-flow labels (gateway/labels.py): input.flow
    budget_scopes: list[tuple[str, Budget]] | None = None  # the budgets it was charged to (gateway/budgets.py)
    egress_bytes: list[int] | None = None  # what its egress carried, counted by the proxy
    running_since: float | None = None  # when it was charged: its wall time runs from there
    budget_left: JSONObject | None = None  # what is left of each budget it was charged to: the result's _meta
    # an asked call's charge, left to the stage that acts on its tier: paid as it asks a person, forgiven when it
    # takes a person's answer to its earlier asking (which paid it then); gateway/judge/approval.py
    budget_owed: Usage | None = None
    # writes that commit in the transaction of the call's final ledger row (a budget's measured usage)
    recorded_with: list[Callable[[Any], None]] = field(default_factory=list)
    decision: Decision | None = None
    policy_input: JSONObject | None = None  # the input document the policy judged (gateway check --explain)
    safeguard: JSONObject | None = None
    result: CallResult | None = None
    error: GatewayError | None = None
    outcome: Outcome | None = None
    detail: JSONObject = field(default_factory=dict)
    intent_recorded: bool = False
    denials_as_errors: bool = True  # the role's choice; see Role.denials
    event: str | bytes | None = None  # a hook call: Claude Code's hook input, as it was sent
    answer: list[str] | None = None  # a scope call: the files outside the globs
    relayed: JSONObject | None = None  # a relay call: the client's answer, for the upstream

    def stop(self, error: GatewayError) -> None:
        self.error, self.outcome = error, error.outcome

    @property
    def settled(self) -> bool:
        """Whether a stage has answered the call (a result, or an outcome such as "asked"): the rest is skipped."""
        return self.result is not None or self.outcome is not None

    @property
    def pin_facts(self) -> JSONObject | None:
        """``input.tool.pin``: the upstream definition's pin status, None for the gateway's own tools."""
        return self.pin.as_input() if self.pin is not None else None

    def response(self) -> CallResult:
        if self.error is not None:
            return error_result(self.error, self.decision, self.call_id, self.denials_as_errors)
        assert self.result is not None
        return self.result


Stage = Callable[[Call], Awaitable[None]]
# a call decided, not run, and recorded: what the gateway asks before it acts itself (verification commands,
# the merge ceremony's merges)
Judge = Callable[[Call], Awaitable[Call]]


def verdict(call: Call) -> Decision | None:
    """The decision a call was judged on: the policy's or, for a call the gateway refused before the policy saw
    it (no valid credential, a tool the role may not see, invalid arguments, a path outside the workspace), the
    deny that names the refusal (an upstream that is down, a fault, too). None when nothing stopped it (or it
    was cancelled) and nothing was decided."""
    if call.decision is not None:
        return call.decision
    error = call.error
    if error is None or error.outcome == "cancelled":
        return None
    return Decision(action="deny", tier=3, reasons=[error.message], rules=[f"gateway.{error.code}"])


def error_result(
    error: GatewayError, decision: Decision | None, call_id: str, denials_as_errors: bool = True
) -> mt.CallToolResult:
    """A tool error the model can act on: the same facts as text and as structuredContent.

    A denial is a plain result (isError false, ``"status": "denied"``) for roles that ask for it; the
    model reads the same reasons either way, and nothing ran either way.
    """
    import mcp_types as mt  # here, not at the top: a command-line check never builds a result

    structured: JSONObject = {"error": error.as_dict(), "call_id": call_id}
    text = f"{error.code}: {error.message}"
    if decision is not None and decision.action == "deny":
        structured["decision"] = decision.model_dump()
        text += f"\n(policy rules: {', '.join(decision.rules)}; nothing was run)"
    is_error = denials_as_errors or error.outcome != "denied"
    if not is_error:
        structured["status"] = "denied"
    return mt.CallToolResult(
        content=[mt.TextContent(type="text", text=text)], structured_content=structured, is_error=is_error
    )
