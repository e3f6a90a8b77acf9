"""A stack of stages run in order, and its finish, which runs whatever happened.

    stack = Pipeline([Authenticate(tokens), Resolve(catalog, roles), ..., Execute()], finish=[Record(ledger)])
    result = await stack(call)           # the call's answer (its result, or the tool error the model reads)
    call = await stack.run(call)         # the call itself, judged (and run) and recorded

A stage is a plain async callable ``(call) -> None`` that reads and fills the ``Call`` (the spirit of
structlog's processors). A stage stops the call by raising a ``GatewayError``, or settles it early by
setting ``call.result`` or ``call.outcome`` (a tier-3 call waiting for a person); the finish stages (the
record stage last) run in every case, so a refused call is recorded exactly like an allowed one. They run
in ``finally``, shielded from cancellation: a call cancelled part-way (its client cancelled it or went away,
a timeout, the gateway shutting down) still gets its final ledger row, outcome "cancelled", naming the
stage it was cancelled in. The stacks the gateway runs are declared in gateway/judge/stacks.py.
"""

from __future__ import annotations

from collections.abc import Sequence

import anyio
import structlog

from gateway.errors import CallCancelled, GatewayError, ToolFailed
from gateway.judge.call import Call, Stage
from gateway.tools.spec import CallResult

__all__ = ["Pipeline"]

log = structlog.get_logger("gateway.judge")


class Pipeline:
    """Runs the stages in order until one settles the call; then ``finish``, whatever happened."""

    def __init__(self, stages: Sequence[Stage], finish: Sequence[Stage]) -> None:
        self.stages = list(stages)
        self.finish = list(finish)

    async def __call__(self, call: Call) -> CallResult:
        return (await self.run(call)).response()

    async def run(self, call: Call) -> Call:
        """The call through every stage, recorded; answers the call with its decision, result or error."""
        # every log line written during the call names it; the trace is rebound once situate picks it
        names = {"trace_id": call.trace_id, "span_id": call.span_id, "call_id": call.call_id}
        with structlog.contextvars.bound_contextvars(**names):
            trace_id = call.trace_id
            stage: Stage | None = None
            try:
                for stage in self.stages:
                    await stage(call)
                    if call.trace_id != trace_id:
                        trace_id = call.trace_id
                        structlog.contextvars.bind_contextvars(trace_id=trace_id)
                    if call.settled:
                        break
            except GatewayError as error:
                call.stop(error)
            except Exception:
                # a bug, not a refusal: the caller learns nothing internal, the log gets the traceback
                log.exception("stage failed", tool=call.tool, call_id=call.call_id)
                call.stop(ToolFailed(f"internal gateway error (call {call.call_id}); see the gateway log"))
            except BaseException:
                # cancelled (or the process is going down): the call ends here, and says where
                call.stop(CallCancelled(cancelled_in=type(stage).__name__ if stage is not None else None))
                raise
            finally:
                if call.trace_id != trace_id:
                    structlog.contextvars.bind_contextvars(trace_id=call.trace_id)
                with anyio.CancelScope(shield=True):
                    await self.finished(call)
            return call

    async def refused(self, call: Call, error: GatewayError) -> Call:
        """A call refused before its stages could start (a request body over the limit): recorded all the same."""
        call.stop(error)
        await self.finished(call)
        return call

    async def finished(self, call: Call) -> None:
        for stage in self.finish:
            await stage(call)
