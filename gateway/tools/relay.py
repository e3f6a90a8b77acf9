"""What an upstream asks of the calling client during a call: the interface between the upstream channel
(gateway/tools/jsonrpc.py, gateway/tools/upstream.py) and the judge (gateway/judge/relay.py).

An upstream may, while it runs a call, ask the client's person a question (``elicitation/create``), ask the
client's model for a completion (``sampling/createMessage``) or send a log message
(``notifications/message``). The channel hands each to the call's ``ClientRelay``: a request is judged and
recorded before it reaches the client (a refusal is ``RelayRefused``), a log message is bounded and
masked. A call without a client to relay to gets ``NO_RELAY``, which refuses every request and drops logs.

    answer = await relay.ask("elicitation/create", {"message": "Name?", "requestedSchema": {...}})
    await relay.log({"level": "info", "data": "started"})
"""

from __future__ import annotations

from typing import Protocol

from gateway.types import JSONObject

__all__ = ["ASKS", "ELICIT", "NO_RELAY", "SAMPLE", "ClientRelay", "RelayRefused", "refusal_answer"]

ELICIT = "elicitation/create"
SAMPLE = "sampling/createMessage"
ASKS = frozenset({ELICIT, SAMPLE})  # the requests an upstream may have relayed to the client


class RelayRefused(Exception):
    """The request is not relayed (the policy refused it, or the client cannot be asked); says why."""


class ClientRelay(Protocol):
    """The calling client, as an upstream may reach it during one call."""

    @property
    def log_level(self) -> str | None:
        """The lowest log level to ask a 2026-07-28 upstream for (its logs are opt-in per request); None: none."""
        ...

    async def ask(self, method: str, params: JSONObject) -> JSONObject:
        """The client's answer (the result object), once the request is judged; ``RelayRefused`` otherwise."""
        ...

    async def log(self, params: JSONObject) -> None:
        """Pass a ``notifications/message``'s params on to the client, within bounds."""
        ...


class _NoRelay:
    log_level = None

    async def ask(self, method: str, params: JSONObject) -> JSONObject:
        raise RelayRefused("this call has no client to relay the request to")

    async def log(self, params: JSONObject) -> None:
        return None


NO_RELAY: ClientRelay = _NoRelay()


def refusal_answer(method: str, why: str) -> tuple[JSONObject | None, JSONObject | None]:
    """What the upstream is told when its request is refused: (result, error). A question is declined (the
    upstream carries on as if the person said no); anything else is a JSON-RPC error saying why."""
    if method == ELICIT:
        return {"action": "decline"}, None
    return None, {"code": -32600, "message": f"the gateway refused {method!r}: {why}"[:500]}
