"""Judged: the last stage of a decision without a run."""

from __future__ import annotations

from gateway.judge.call import Call

__all__ = ["Judged"]


class Judged:
    """The last stage of a decision without a run (``gateway check``, verification commands, the merge
    ceremony's merges): the call is recorded as allowed or asked about; a denial stopped it at Decide."""

    async def __call__(self, call: Call) -> None:
        assert call.decision is not None
        call.outcome = "allowed" if call.decision.action == "allow" else "asked"
