"""Errors the gateway answers with.

A ``GatewayError`` stops a call: the pipeline turns it into a tool error the model can read
(``code`` and ``message``) and records it with its ``outcome``. Messages must never carry secrets.

    >>> error = UnknownTool("no tool named 'fs_raed'")
    >>> error.as_dict(), error.outcome
    ({'code': 'unknown_tool', 'message': "no tool named 'fs_raed'"}, 'invalid')
"""

from __future__ import annotations

from typing import Any, ClassVar

from gateway.types import Outcome


class GatewayError(Exception):
    code: ClassVar[str] = "gateway_error"
    outcome: ClassVar[Outcome] = "error"

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = details

    def as_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, **self.details}


class ConfigError(GatewayError):
    code = "config_error"


class CannotListen(ConfigError):
    """``gateway serve --http``: the address cannot be bound (in use, not this machine's, privileged)."""

    code = "cannot_listen"


# The store could not be used: whatever depended on it was neither done nor acknowledged.
class StoreError(GatewayError):
    code = "store_error"


class StoreUnavailable(StoreError):
    """The database cannot be reached, or was lost mid-call. Messages name it with its password masked."""

    code = "store_unavailable"


# Refused before anything ran: the call was malformed.
class InvalidRequest(GatewayError):
    code = "invalid_request"
    outcome = "invalid"


class UnknownTool(InvalidRequest):
    code = "unknown_tool"


class UnknownRole(InvalidRequest):
    code = "unknown_role"


class InvalidArguments(InvalidRequest):
    code = "invalid_arguments"


class MalformedRequest(InvalidRequest):
    """A request the MCP SDK refuses before the pipeline sees it (gateway/server.py)."""

    code = "malformed_request"


class InvalidUnicode(InvalidRequest):
    """Text that is not valid Unicode (a lone UTF-16 surrogate): gateway/unicode.py."""

    code = "invalid_unicode"


class ArgumentsTooLarge(InvalidRequest):
    code = "arguments_too_large"


class PathOutsideWorkspace(InvalidRequest):
    code = "path_outside_workspace"


# Refused before anything ran: identity, scope or policy said no.
class Denied(GatewayError):
    code = "denied"
    outcome = "denied"


class NotRelayed(Denied):
    """An upstream's request for the client (a question, sampling) that the client cannot be sent."""

    code = "not_relayed"


class Unauthenticated(Denied):
    code = "unauthenticated"


class DecisionDeadline(Denied):
    """Describing or deciding the call took longer than policy.deadline_s: refused, and nobody waits on it."""

    code = "decision_deadline"


class Quarantined(Denied):
    """An upstream definition that is not its pin (changed, new, renamed): held until a person approves it."""

    code = "quarantined"


class ToolNotGranted(Denied):
    """A tool the caller's role may not see: answered exactly like a tool that does not exist."""

    code = "unknown_tool"


# Ran, or tried to, and failed.
class ToolFailed(GatewayError):
    code = "tool_failed"


class PathChanged(ToolFailed):
    """A checked path held a symbolic link when the tool opened it: it changed after the check (an agent
    swapping it), so nothing was read or written through it."""

    code = "path_changed"


class ResultTooLarge(ToolFailed):
    code = "result_too_large"


class UpstreamUnavailable(ToolFailed):
    code = "upstream_unavailable"


class UpstreamMalformed(ToolFailed):
    """An upstream's answer no client could read (not JSON-RPC, or not the result its method has)."""

    code = "upstream_malformed"


# Neither refused nor run to its end.
class CallCancelled(GatewayError):
    """A call cancelled before it ended: its client cancelled it or went away, its request timed out, or the
    gateway was shutting down. What it had started may have partly happened (``cancelled_in`` names the stage)."""

    code = "cancelled"
    outcome = "cancelled"

    def __init__(self, cancelled_in: str | None = None) -> None:
        where = f" (in {cancelled_in})" if cancelled_in else ""
        super().__init__(
            f"the call was cancelled before it ended{where}: its client cancelled it or went away, or the gateway "
            "stopped",
            **({"cancelled_in": cancelled_in} if cancelled_in else {}),
        )
