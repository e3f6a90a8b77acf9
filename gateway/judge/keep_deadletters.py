"""Keep dead letters: a finish stage of the tools/call stack. A handoff refused as malformed is kept whole
(gateway/tasks/deadletters.py), and its refusal names the dead letter; the record stage then records the call
as it records every call."""

from __future__ import annotations

import structlog

from gateway.errors import ArgumentsTooLarge, InvalidRequest
from gateway.judge.call import Call, CallKind
from gateway.judge.describe import Situating
from gateway.judge.situate import named_task
from gateway.tasks.deadletters import HANDOFF_TOOLS, DeadLetters, Kind

__all__ = ["KeepDeadLetters", "handoff_kind"]

log = structlog.get_logger("gateway.deadletters")


def handoff_kind(call: Call) -> Kind | None:
    """What a tools/call refused as malformed handed off, or None when it is not a dead letter: another tool,
    a refusal for who sent it rather than what (denied), an unknown tool, or arguments over the size limit
    (kept nowhere: the limit is what keeps the store bounded)."""
    kind = HANDOFF_TOOLS.get(call.tool)
    error = call.error
    if kind is None or call.kind != CallKind.CALL or call.principal is None or call.spec is None:
        return None
    if not isinstance(error, InvalidRequest) or isinstance(error, ArgumentsTooLarge):
        return None
    return kind


class KeepDeadLetters:
    """A handoff refused as malformed is kept whole, and its refusal names the dead letter.

    A call refused by Validate was not situated yet; it is situated here, so the dead letter and the refused
    call join the task's trace (a worker's record belongs with its task, not with a fresh trace)."""

    def __init__(self, deadletters: DeadLetters, situate: Situating) -> None:
        self.deadletters = deadletters
        self.situate = situate

    async def __call__(self, call: Call) -> None:
        kind = handoff_kind(call)
        if kind is not None:
            try:
                self._keep(call, kind)
            except Exception:
                # the refusal stands and is recorded either way; only the copy is missing
                log.exception("could not keep a dead letter", tool=call.tool, call_id=call.call_id)

    def _keep(self, call: Call, kind: Kind) -> None:
        assert call.principal is not None and call.error is not None
        if call.workspace is None:
            self.situate(call)
        error = call.error
        replay_of = call.detail.get("replay_of")
        deadletter_id = self.deadletters.keep(
            kind,
            call.tool,
            call.arguments,
            error.message,
            call.principal,
            str(call.task["id"]) if call.task is not None else named_task(call.tool, call.arguments),
            call.trace_id,
            call_id=call.call_id,
            replay_of=replay_of if isinstance(replay_of, str) else None,
        )
        # the agent reads this; a person replays it
        error.message = (
            f"{error.message} (kept as dead letter {deadletter_id}; fix it and "
            f"`gateway deadletters replay {deadletter_id}`, or send the corrected call again)"
        )
        error.args = (error.message,)
        error.details["deadletter_id"] = deadletter_id
