"""Act on tier: what the decision's tier asks for before the gateway runs a call (gateway/judge/approval.py)."""

from __future__ import annotations

import fnmatch
from typing import TYPE_CHECKING

import anyio

from gateway.approvals import APPROVAL_SCHEMA, RequestStateSeal
from gateway.config import ApprovalsConfig
from gateway.errors import Denied
from gateway.identity.roles import RoleSet
from gateway.judge.approval import Asking, Enforcement, approval_message, pending_result
from gateway.judge.call import Call
from gateway.origin import no_progress

if TYPE_CHECKING:
    import mcp_types as mt

__all__ = ["ActOnTier", "unanswered"]


class ActOnTier:
    """Tier 1 runs; tier 2 takes a rollback point first; a call the policy asks about waits for a human.

    The asking is ``Approvals``' business (see gateway/approvals.py for the three ways to ask); this
    stage picks the way for the call at hand and acts on the answer.
    """

    def __init__(
        self, enforcement: Enforcement, roles: RoleSet, seal: RequestStateSeal, config: ApprovalsConfig
    ) -> None:
        self.enforcement = enforcement
        self.roles = roles
        self.seal = seal
        self.config = config

    async def __call__(self, call: Call) -> None:
        assert call.decision is not None and call.principal is not None and call.workspace is not None
        await self.enforcement.settle(call, self._ask)

    async def _ask(self, call: Call, asking: Asking) -> None:
        """No answer waits: ask the person at the client (an elicitation, pushed or answered on the retry), or
        hold the call for a person out of band."""
        import mcp_types as mt  # here, not at the top: a command-line check never asks anyone

        assert call.principal is not None and call.decision is not None
        origin = call.origin
        answer: mt.ElicitResult | None = None
        interactive = self._interactive(call)
        responses = origin.input_responses or {}
        in_band = interactive and "approval" in responses
        sealed = in_band and self.seal.opens(asking.key, origin.request_state)
        if not sealed:  # it asks a person now (or brings an answer not sealed to it): charged as it asks
            self.enforcement.pay(call)
        if in_band:
            if not sealed:
                raise Denied("the approval answer does not belong to this call (request_state mismatch)")
            answer = mt.ElicitResult.model_validate(responses["approval"])
        elif interactive and self._elicits(call):
            if origin.elicitation == "input_required":
                request = mt.ElicitRequest(
                    params=mt.ElicitRequestFormParams(message=approval_message(call), requested_schema=APPROVAL_SCHEMA)
                )
                call.result = mt.InputRequiredResult(
                    input_requests={"approval": request}, request_state=self.seal.seal(asking.key)
                )
                call.outcome = "asked"
                return
            answer = await self._push(call)
        if answer is not None and answer.action != "cancel" and not unanswered(answer):
            approve = answer.action == "accept" and (answer.content or {}).get("approve") is True
            self.enforcement.record_answer(call, asking, approve, by=f"elicitation:{origin.client_name or 'client'}")
            return
        # no elicitation, a headless client, a cancelled or unanswered one: wait for a person out of band
        pending = self.enforcement.hold(call, asking)
        call.result = pending_result(call, pending)

    def _interactive(self, call: Call) -> bool:
        """Whether the caller's client is a person (gateway.yaml says so): else its answers approve nothing."""
        assert call.principal is not None
        return call.principal.role in self.config.interactive_roles

    def _elicits(self, call: Call) -> bool:
        assert call.principal is not None
        origin = call.origin
        if origin.elicitation == "none" or self.roles[call.principal.role].approvals == "pending":
            return False
        client = origin.client_name or ""
        return not any(fnmatch.fnmatchcase(client, pattern) for pattern in self.config.pending_clients)

    async def _push(self, call: Call) -> mt.ElicitResult | None:
        """Push the question and keep the call alive with progress until the person answers."""
        assert call.origin.elicit is not None
        progress = call.origin.progress or no_progress
        answer: mt.ElicitResult | None = None

        async def keepalive() -> None:
            waited = 0.0
            while True:
                await anyio.sleep(self.config.keepalive_s)
                waited += self.config.keepalive_s
                await progress(waited, None, f"waiting for a human to approve ({waited:.0f}s)")

        async with anyio.create_task_group() as tg:
            tg.start_soon(keepalive)
            with anyio.move_on_after(self.config.elicit_timeout_s):
                answer = await call.origin.elicit(approval_message(call), APPROVAL_SCHEMA)
            tg.cancel_scope.cancel()
        return answer


def unanswered(answer: mt.ElicitResult) -> bool:
    """An "accept" that does not say yes or no to the form (Hermes Agent accepts with empty content): not a
    denial, which the person did not say, nor an approval, which they did not give in the form's terms."""
    return answer.action == "accept" and not isinstance((answer.content or {}).get("approve"), bool)
