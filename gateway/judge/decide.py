"""Decide: the policy engine judges the call's input document; a deny stops the call here.

Acting on the tier is the next stage's business: deciding is kept apart from enforcing."""

from __future__ import annotations

from gateway.effects.git_hooks import hooks_path
from gateway.errors import Denied
from gateway.judge.call import Call
from gateway.policy.engine import PolicyEngine
from gateway.policy.input import INPUT_KINDS, input_document, tool_facts
from gateway.types import JSONObject

__all__ = ["Decide", "policy_input"]


class Decide:
    """Asks the policy about the call's input document; a deny stops the call here."""

    def __init__(self, engine: PolicyEngine) -> None:
        self.engine = engine

    async def __call__(self, call: Call) -> None:
        call.policy_input = policy_input(call)
        revision = self.engine.revision()  # looked at before deciding: the decision is made by it (or newer)
        decision = await self.engine.decide(call.policy_input)
        call.decision = decision.model_copy(update={"revision": revision})
        if call.decision.action == "deny":
            raise Denied("; ".join(call.decision.reasons) or "the policy denied this call", rules=call.decision.rules)


def policy_input(call: Call) -> JSONObject:
    """The policy input document (docs/architecture.md) of a described call."""
    assert call.principal is not None and call.effects is not None and call.workspace is not None
    return input_document(
        kind=INPUT_KINDS[call.method],
        principal=call.principal,
        tool=tool_facts(call.spec, call.tool, call.pin_facts),
        arguments=call.arguments,
        effects=call.effects,
        workspace=str(call.workspace.root),
        trace_id=call.trace_id,
        task=call.task,
        intent=call.intent,
        sandbox=call.confinement.describe() if call.confinement is not None else None,
        git_hooks=hooks_path(call.workspace.root),
        flow=call.flow.as_input() if call.flow is not None else None,
    )
