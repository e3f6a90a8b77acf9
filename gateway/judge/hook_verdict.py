"""Hook verdict: the last stage of the Claude Code hook's stack (gateway/hook.py), acting on the tier before
Claude Code runs the call itself (gateway/judge/approval.py)."""

from __future__ import annotations

from gateway.judge.approval import Asking, Enforcement
from gateway.judge.call import Call

__all__ = ["HookVerdict"]


class HookVerdict:
    """The last stage of the Claude Code hook's stack. Claude Code runs the tool itself after the answer,
    so what ActOnTier does before a run happens here, before answering.

    A call the policy asks about is held for a person as a pending gateway approval (the hook answers
    "deny" naming it): Claude Code's own "ask" would let whoever holds its keyboard, or a permissive
    permission mode, run the call unrecorded. Once a person approves, the same call (same agent, role,
    tool, arguments, on the same hook) is allowed once; an approval given to the call on MCP, where the
    gateway runs it in its sandbox, is not (Claude Code runs it unconfined). An allowed tier-2 call gets its
    checkpoint first."""

    def __init__(self, enforcement: Enforcement) -> None:
        self.enforcement = enforcement

    async def __call__(self, call: Call) -> None:
        assert call.decision is not None and call.principal is not None
        await self.enforcement.settle(call, self._hold)
        if not call.settled:
            call.outcome = "allowed"

    async def _hold(self, call: Call, asking: Asking) -> None:
        self.enforcement.hold(call, asking)
