"""Record: the call's final ledger row, for every call that started, refused or not."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import structlog

from gateway.digests import digest
from gateway.errors import ToolFailed
from gateway.judge.call import Call, CallKind
from gateway.ledger.chain import Ledger
from gateway.locks import this_process
from gateway.types import JSONObject, Outcome

if TYPE_CHECKING:
    from gateway.telemetry import Telemetry

__all__ = ["Record", "ledger_fields"]

log = structlog.get_logger("gateway.judge")


def ledger_fields(call: Call, outcome: Outcome) -> JSONObject:
    """The call's ledger row: who, what, the effects and decision, how it ended (``outcome``)."""
    detail = dict(call.detail)
    if call.error is not None:
        detail["error"] = call.error.as_dict()
    if call.safeguard is not None:
        detail["safeguard"] = call.safeguard
    if call.confinement is not None:
        c = call.confinement
        detail["sandbox"] = {"mode": c.mode, "writable": [str(p) for p in c.writable]}
    if call.method != "tools/call":
        detail["method"] = call.method
    if outcome == "started":
        detail["process"] = this_process()  # whose call it is, if the process dies before the call ends
    else:
        detail["duration_ms"] = round((time.perf_counter() - call.started) * 1000, 3)
    return {
        "kind": str(call.kind),
        "call_id": call.call_id,
        "trace_id": call.trace_id,
        "span_id": call.span_id,
        "principal": call.principal.model_dump() if call.principal else None,
        "tool": call.tool,
        "arguments_digest": digest(call.arguments),
        "effects": call.effects.model_dump() if call.effects else None,
        "decision": call.decision.model_dump() if call.decision else None,
        "outcome": outcome,
        "intent_id": call.intent["id"] if call.intent else None,
        "detail": detail,
    }


class Record:
    """The final ledger event of a call; runs for every call, refused or not.

    With ``telemetry``, the same call also gets its decision log entry (``detail.decision_id`` in the
    ledger event) and its OpenTelemetry span (the event's ``span_id``); a PostToolUse event has neither."""

    def __init__(self, ledger: Ledger, telemetry: Telemetry | None = None) -> None:
        self.ledger = ledger
        self.telemetry = telemetry

    async def __call__(self, call: Call) -> None:
        if call.kind == CallKind.HOOK_JOIN:  # not a decision: the MCP call it announces is recorded
            return
        if self.telemetry is None or call.kind == CallKind.HOOK_RESULT:  # a report of a run, not a decision
            self._append(call)
            return
        with self.telemetry.recording(call):
            self._append(call)

    def _append(self, call: Call) -> None:
        outcome: Outcome = call.outcome or ("error" if call.error else "ok")
        fields = ledger_fields(call, outcome)
        try:
            if call.recorded_with:
                self._append_with(call, fields)
            else:
                self.ledger.append(fields)
        except Exception:
            log.exception("could not record the outcome", call_id=call.call_id, outcome=outcome)
            if not call.intent_recorded:
                # nothing ran, but the refusal is not recorded: say so rather than pretend
                call.stop(ToolFailed("the gateway could not record this call; nothing was run"))

    def _append_with(self, call: Call, fields: JSONObject) -> None:
        """The row and the writes that commit with it (a budget's usage) in one transaction; if those writes
        fail, the row alone: the call is recorded whatever its usage."""
        try:
            with self.ledger.db.transaction() as tx:
                for write in call.recorded_with:
                    write(tx)
                self.ledger.append_in(tx, fields)
        except Exception:
            log.exception("could not record what the call used; recording the call alone", call_id=call.call_id)
            self.ledger.append(fields)
