"""Acting on a tier, in one place for every stack that acts on one (ActOnTier for calls the gateway runs,
HookVerdict for calls Claude Code runs): a tier-3 call runs only with a person's approval bound to the exact
call and where it runs (its channel and confinement, gateway/approvals.py); a tier-2 call gets its safeguard
(a checkpoint, gateway/checkpoints.py) before it runs. A tier-3 call's budget charge (``call.budget_owed``, left by
ChargeBudget) is paid here as the call asks a person, and forgiven when it takes a person's answer to its earlier
asking: decided by the take itself, so a twin with the same key that takes the answer first leaves this call to
ask again, charged.

    enforcement = Enforcement(approvals, checkpoints, budgets)
    await enforcement.settle(call, unanswered=hold)   # approved, held for a person, or safeguarded
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import anyio

from gateway.approvals import Approvals, CallSite, call_key
from gateway.checkpoints import Checkpoints
from gateway.errors import Denied
from gateway.judge.call import Call, CallKind
from gateway.ledger.budgets import Budgets
from gateway.types import JSONObject

if TYPE_CHECKING:
    import mcp_types as mt

    from gateway.sandbox import Confinement

__all__ = [
    "Asking",
    "Enforcement",
    "approval_message",
    "call_site",
    "granted_confinement",
    "not_used_note",
    "pending_result",
]


@dataclass(frozen=True)
class Asking:
    """What a person's approval of a call binds to: where it runs, and the key of the call there."""

    site: CallSite
    key: str

    @classmethod
    def of(cls, call: Call) -> Asking:
        """The call, where it runs, and for an upstream tool the definition it was judged on (its pin digest),
        so an approval given before the upstream changed the tool never runs the changed one."""
        assert call.principal is not None
        site = call_site(call)
        definition = call.pin.digest if call.pin is not None else None
        return cls(site, call_key(call.principal, call.tool, call.arguments, site, definition))


class Enforcement:
    """A decided call's tier acted on: tier 3 with a person's answer, tier 2 with its safeguard first."""

    def __init__(self, approvals: Approvals, checkpoints: Checkpoints, budgets: Budgets) -> None:
        self.approvals = approvals
        self.checkpoints = checkpoints
        self.budgets = budgets

    async def settle(self, call: Call, unanswered: Callable[[Call, Asking], Awaitable[None]]) -> None:
        """A call the policy asks about runs once a person approved exactly it (the approval is used up); a
        person's denial stops it; with no answer yet, ``unanswered`` asks (and may settle the call: held for a
        person). A tier-2 call that goes on gets its safeguard."""
        assert call.decision is not None
        if call.decision.action == "ask":
            asking = Asking.of(call)
            if not self.take(call, asking):
                await unanswered(call, asking)
                if call.settled:
                    return
        if call.decision.tier >= 2 and call.effects is not None:
            call.safeguard = await take_safeguard(self.checkpoints, call)

    def take(self, call: Call, asking: Asking) -> bool:
        """True when a person approved exactly this call where it runs (the approval is used up); Denied when a
        person denied it; False when no answer waits. An approval of the same call for another channel or
        confinement is not used: it is named, with the reason, in the call's ledger row."""
        assert call.principal is not None
        settled = self.approvals.consume(asking.key, call.call_id, asking.site)
        if settled is None:
            elsewhere = self.approvals.elsewhere(call.principal, call.tool, call.arguments, asking.key)
            if elsewhere:
                call.detail["approvals_not_used"] = [
                    {**other, "why": f"approved for {other['where']}; this call: {asking.site.summary()}"}
                    for other in elsewhere
                ]
            return False
        answer, approval_id = settled
        call.budget_owed = None  # the person answered its earlier asking, which was charged: not charged again
        call.detail["approval"] = {"id": approval_id, "answer": answer}
        if answer == "denied":
            raise Denied(f"a person denied this call (approval {approval_id})", approval_id=approval_id)
        return True

    def pay(self, call: Call) -> None:
        """The call asks a person (or answers for one it may not): its owed charge is paid first, in one store
        transaction; an exhausted budget or a store that cannot be charged refuses it (fail closed)."""
        owed, call.budget_owed = call.budget_owed, None
        if owed is not None:
            assert call.budget_scopes is not None
            call.budget_left = self.budgets.charge(call.budget_scopes, owed)

    def hold(self, call: Call, asking: Asking) -> JSONObject:
        """A pending approval for the call (an open one for the same key is reused), charged first; the call
        is "asked"."""
        assert call.principal is not None and call.decision is not None
        self.pay(call)
        about: JSONObject = {
            "call_id": call.call_id,
            "trace_id": call.trace_id,
            "decision": call.decision.model_dump(),
            "effects": call.effects.model_dump() if call.effects else None,
            "definition": call.pin.digest if call.pin is not None else None,
        }
        if call.detail.get("approvals_not_used"):
            about["approvals_not_used"] = call.detail["approvals_not_used"]
        pending = self.approvals.request(asking.key, call.principal, call.tool, call.arguments, about, asking.site)
        call.detail["approval"] = {
            "id": pending["id"],
            "answer": "pending",
            "expires": pending["expires"],
            "channel": asking.site.channel,
        }
        call.outcome = "asked"
        return pending

    def record_answer(self, call: Call, asking: Asking, approve: bool, by: str) -> None:
        """A person's answer given on the client (an elicitation): recorded; a denial stops the call. An answer
        on the retry (input_required) answers an asking that was charged: the retry is not charged again."""
        assert call.principal is not None
        call.budget_owed = None
        approval_id = self.approvals.record_answer(
            asking.key, call.principal, call.tool, call.arguments, asking.site, (approve, by), call.call_id
        )
        call.detail["approval"] = {"id": approval_id, "answer": "approved" if approve else "denied", "by": by}
        if not approve:
            raise Denied(f"the user declined this call (approval {approval_id})", approval_id=approval_id)


def call_site(call: Call) -> CallSite:
    """Where a call runs, as an approval binds to it: the channel it came by and the confinement it runs in
    (with the egress its decision grants). Claude Code runs a hooked call itself, outside any sandbox."""
    if call.kind == CallKind.HOOK:
        channel = "hook:http" if call.origin.transport == "http" else "hook:command"
        return CallSite(channel, {"runs": "claude-code", "confined": False})
    channel = f"mcp:{call.method}" if call.kind == CallKind.CALL else str(call.kind)
    confinement = granted_confinement(call)
    upstream = call.spec is not None and call.spec.provider.upstream
    if confinement is None:
        return CallSite(channel, {"runs": "upstream" if upstream else "gateway", "confined": False})
    return CallSite(channel, {"runs": "upstream-sandbox" if upstream else "sandbox", **confinement.binding()})


def granted_confinement(call: Call) -> Confinement | None:
    """The call's confinement with the network egress its decision (or the person who approved it) allowed:
    the hosts its effects name, with the port a URL named (see gateway/hosts.py), and only those."""
    confinement = call.confinement
    if confinement is not None and call.effects is not None and call.effects.network:
        # "listen:PORT" says the command serves; it names no host to reach
        return confinement.allowing(n.endpoint for n in call.effects.network if not n.host.startswith("listen:"))
    return confinement


async def take_safeguard(checkpoints: Checkpoints, call: Call) -> JSONObject:
    """Tier 2's safeguard: a checkpoint of what the call may change, taken before it runs."""
    assert call.effects is not None and call.workspace is not None
    paths = [*call.effects.writes, *call.effects.creates, *call.effects.deletes, *call.effects.recursive_deletes]
    workspace = call.workspace
    own = [workspace.display(p) for p in workspace.protected if workspace.contains(p)]
    return await anyio.to_thread.run_sync(lambda: checkpoints.take(workspace.root, call.call_id, paths, exclude=own))


def not_used_note(call: Call) -> str:
    """What the agent is told about approvals of this call given for another channel or confinement."""
    unused = call.detail.get("approvals_not_used") or []
    return "".join(f" Approval {u['id']} does not apply here: {u['why']}." for u in unused)


def approval_message(call: Call) -> str:
    assert call.principal is not None and call.decision is not None
    reasons = "; ".join(call.decision.reasons) or "the policy asks for a human"
    arguments = json.dumps(call.arguments, default=str)
    if len(arguments) > 600:
        arguments = arguments[:600] + "..."
    return (
        f"Approve tier-{call.decision.tier} call {call.tool} by {call.principal.agent} ({call.principal.role})?\n"
        f"Why it needs you: {reasons}\nArguments: {arguments}"
    )


def pending_result(call: Call, pending: JSONObject) -> mt.CallToolResult:
    """Not an error (so clients do not count it as a failure), but unmistakably not run."""
    import mcp_types as mt

    assert call.decision is not None
    approval_id = pending["id"]
    structured = {
        "status": "approval_pending",
        "approval_id": approval_id,
        "tier": call.decision.tier,
        "reasons": call.decision.reasons,
        "rules": call.decision.rules,
        "expires": pending["expires"],
        "next_step": f"a person runs 'gateway approvals approve {approval_id}' (or uses the review page); "
        "then retry exactly the same call with the same arguments",
        "call_id": call.call_id,
    }
    if call.detail.get("approvals_not_used"):
        structured["approvals_not_used"] = call.detail["approvals_not_used"]
    text = (
        f"NOT RUN: this call needs a human's approval (tier {call.decision.tier}).\n"
        f"Reasons: {'; '.join(call.decision.reasons)}\n"
        f"Approval id: {approval_id} (expires {pending['expires']}).{not_used_note(call)}\n"
        f"Next step: {structured['next_step']}."
    )
    return mt.CallToolResult(content=[mt.TextContent(type="text", text=text)], structured_content=structured)
