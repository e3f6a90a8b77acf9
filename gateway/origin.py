"""How a call reached the gateway: the server's transport facts, free of SDK types.

The server (gateway/server.py) fills one in for every request; the judge reads it (the credential, how the
client can be asked a question, where progress goes) and a tool gets its progress function.

    origin = Origin(transport="stdio", protocol_version="2025-11-25", token=token)
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from gateway.types import JSONObject

if TYPE_CHECKING:
    import mcp_types as mt

__all__ = ["Elicitation", "Origin", "ProgressFn", "Transport", "no_progress"]

ProgressFn = Callable[[float, float | None, str | None], Awaitable[None]]
"""``async (progress, total, message)``: reports progress to the caller; a no-op without a progress token."""


async def no_progress(progress: float, total: float | None, message: str | None) -> None:
    """Where progress goes when the caller asked for none."""
    return None


Transport = Literal["stdio", "http", "inprocess"]
Elicitation = Literal["push", "input_required", "none"]


@dataclass
class Origin:
    """How a call reached the gateway: transport facts the judge needs.

    ``elicitation`` says how this client can be asked a question: ``push`` (2025-11-25 era, ``elicit``
    sends the request and returns the answer), ``input_required`` (2026-07-28 era: answer an
    InputRequiredResult, the client retries with ``input_responses``), or ``none``.
    """

    transport: Transport
    protocol_version: str
    token: str | None = None
    client_name: str | None = None
    session_id: str | None = None
    progress: ProgressFn | None = None
    elicitation: Elicitation = "none"
    elicit: Callable[[str, JSONObject], Awaitable[mt.ElicitResult]] | None = None
    input_responses: JSONObject | None = None
    request_state: str | None = None
    meta: JSONObject | None = None  # the request's own _meta, as sent (a claim of labels in it is refused)
    # what an upstream may ask of this client during a call (gateway/judge/relay.py): ``ask`` pushes a request
    # (handshake era) and returns the client's answer, ``sampling`` says the client declared it, ``log`` sends
    # a log message about the call at or above ``log_level`` (None: the client asked for none)
    ask: Callable[[str, JSONObject], Awaitable[JSONObject]] | None = None
    sampling: bool = False
    log: Callable[[JSONObject], Awaitable[None]] | None = None
    log_level: str | None = None

    @property
    def modern(self) -> bool:
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        return self.protocol_version in MODERN_PROTOCOL_VERSIONS
