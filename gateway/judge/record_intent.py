"""Record intent: the write-ahead ledger row, committed before anything with a side effect runs."""

from __future__ import annotations

from gateway.judge.call import Call
from gateway.judge.record import ledger_fields
from gateway.ledger.chain import Ledger

__all__ = ["RecordIntent"]


class RecordIntent:
    """The write-ahead record: committed before the side effect, or the call does not run.

    A tier-1 call of a read-only tool (declared so by the gateway or the operator) has no side effect to
    explain after a crash, so its one row is the final one, still committed before the answer is sent."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger

    async def __call__(self, call: Call) -> None:
        if call.spec is not None and call.spec.read_only and call.decision is not None and call.decision.tier == 1:
            return
        self.ledger.append(ledger_fields(call, "started"))
        call.intent_recorded = True
