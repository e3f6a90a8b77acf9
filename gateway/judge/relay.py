"""Relay: what an upstream asks of the calling client during a call, judged and recorded before it reaches
the client (gateway/tools/relay.py says what may be asked).

An upstream's question to the person (``elicitation/create``) or request for the client's model
(``sampling/createMessage``) is a call of its own (kind ``relay``), in the calling call's trace, judged by
the ``relay`` stack as a request to a person: the policy sees ``input.kind`` ``"elicitation"`` or
``"sampling"``, the tool whose call it came from, and the request as ``arguments`` (policies/relay/relay.rego
refuses a question that asks for a secret). Only an allowed one reaches the client; one the policy would ask a
person about is refused (nobody holds a relayed request for approval). The ledger row records the answer's
shape, never its values: for a question, the action and the fields answered; for sampling, the model, the
size and digest of its text, marked untrusted (it is the client's model following the upstream's prompt).

At most ``ASKS_PER_CALL`` requests per call are judged and relayed; the rest are refused unjudged (a question
declined) and the call's ledger row counts both (``upstream_asks``). An upstream's log messages reach the client with
their secrets masked, at most ``LOG_MESSAGES`` per call of at most ``LOG_BYTES`` each, at or above the level
the client asked for; the call's ledger row counts the relayed and dropped ones.

    relay = RelayToClient(call, stacks.relay.run)     # what Execute gives an upstream's handler
    answer = await relay.ask("elicitation/create", params)
"""

from __future__ import annotations

import json
from typing import Any

import anyio

from gateway.decision_log import redact
from gateway.digests import digest
from gateway.errors import Denied, NotRelayed, ToolFailed
from gateway.judge.call import Call, CallKind, Judge
from gateway.tools.relay import ELICIT, RelayRefused
from gateway.types import JSONObject

__all__ = ["ASKS_PER_CALL", "LOG_BYTES", "LOG_LEVELS", "LOG_MESSAGES", "AskClient", "RelayToClient"]

ASKS_PER_CALL = 10  # questions and sampling requests one call may make of its client; more are refused
LOG_MESSAGES = 100  # log messages relayed per call; the rest are dropped (and counted)
LOG_BYTES = 4096  # a message's data larger than this as JSON is cut to a string of this length
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


class RelayToClient:
    """The calling client as an upstream reaches it during one call (gateway/tools/relay.py's ClientRelay)."""

    def __init__(self, call: Call, judge: Judge) -> None:
        self.call = call
        self.judge = judge
        self.logs = {"relayed": 0, "dropped": 0}
        self.asked = 0

    @property
    def log_level(self) -> str | None:
        return self.call.origin.log_level if self.call.origin.log is not None else None

    async def ask(self, method: str, params: JSONObject) -> JSONObject:
        parent = self.call
        self.asked += 1
        # each judged request has a ledger row of its own; the calling call's row counts them and the refused rest
        parent.detail["upstream_asks"] = {
            "judged": min(self.asked, ASKS_PER_CALL),
            "over_limit": max(0, self.asked - ASKS_PER_CALL),
        }
        if self.asked > ASKS_PER_CALL:  # an upstream that keeps asking is not let to wear the person down
            raise RelayRefused(f"the upstream made more than {ASKS_PER_CALL} requests of the client in one call")
        asked = Call(
            tool=parent.tool,
            arguments=params,
            origin=parent.origin,
            kind=CallKind.RELAY,
            method=method,
            trace_id=parent.trace_id,
            principal=parent.principal,
            spec=parent.spec,
            detail={"relayed_for": parent.call_id},
        )
        done = await self.judge(asked)
        if done.error is not None or done.relayed is None:
            raise RelayRefused(done.error.message if done.error is not None else "not answered")
        return done.relayed

    async def log(self, params: JSONObject) -> None:
        origin = self.call.origin
        level = params.get("level")
        wanted = self.log_level
        if origin.log is None or wanted is None or level not in LOG_LEVELS:
            return
        if LOG_LEVELS.index(level) < LOG_LEVELS.index(wanted):
            return
        if self.logs["relayed"] >= LOG_MESSAGES:
            self.logs["dropped"] += 1
            self.call.detail["upstream_logs"] = dict(self.logs)
            return
        data, _ = redact(params.get("data"))
        text = json.dumps(data, default=str)
        if len(text) > LOG_BYTES:
            data = text[: LOG_BYTES - 20] + "... (cut by the gateway)"
        logger = params.get("logger")
        message: JSONObject = {"level": level, "data": data}
        if isinstance(logger, str):
            message["logger"] = logger[:200]
        await origin.log(message)
        self.logs["relayed"] += 1
        self.call.detail["upstream_logs"] = dict(self.logs)


class AskClient:
    """The last stage of the relay stack: an allowed request goes to the client; its answer's shape is recorded."""

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s

    async def __call__(self, call: Call) -> None:
        assert call.decision is not None
        if call.decision.action != "allow":
            raise Denied(
                "the policy would ask a person about this request ("
                + "; ".join(call.decision.reasons)
                + "); a request an upstream makes during a call is not held for approval",
                rules=call.decision.rules,
            )
        origin = call.origin
        able = origin.elicitation == "push" if call.method == ELICIT else origin.sampling
        if origin.ask is None or not able:
            raise NotRelayed(
                f"the calling client cannot be sent {call.method!r} now (it did not declare it, or "
                "its protocol era has no way to push it); the upstream is told no"
            )
        with anyio.move_on_after(self.timeout_s) as waited:
            answer = await origin.ask(call.method, call.arguments)
        if waited.cancelled_caught:
            raise ToolFailed(f"the client did not answer {call.method!r} within {self.timeout_s:g} s")
        call.relayed = answer
        call.detail["answer"] = _shape(call.method, answer)
        call.outcome = "ok"


def _shape(method: str, answer: JSONObject) -> JSONObject:
    """What the ledger keeps of an answer: never the values the person typed or the text the model wrote."""
    content: Any = answer.get("content")
    if method == ELICIT:
        return {"action": answer.get("action"), "fields": sorted(content) if isinstance(content, dict) else []}
    return {
        "model": str(answer.get("model", ""))[:200],
        "stop_reason": answer.get("stopReason"),
        "content_digest": digest(content),
        "bytes": len(json.dumps(content, default=str)),
        "untrusted": True,  # the client's model, steered by the upstream's prompt: its words are the upstream's
    }
