"""``POST /hooks/claude-code``: Claude Code's HTTP hook, answered by the running gateway.

The request is authenticated like /mcp (the auth middleware and ``RequireCredential``: a missing, forged,
expired or revoked Bearer token is a 401 with the reason, recorded); the hook decides as that token's
principal. The body is Claude Code's hook input, judged by the hook's stack (gateway/judge/stacks.py: the
same stages as the command hook and a tools/call) and answered with Claude Code's hook output:

    200  {"hookSpecificOutput": {"permissionDecision": "allow" | "deny", ...}}  a PreToolUse decision
    200  {}                                                                      a PostToolUse, recorded
    200  {"hookSpecificOutput": {"permissionDecision": "deny", ...}}  a tool the gateway does not know
    400  {"error": "invalid_request", "error_description": ...}  not JSON, not a hook event, a field
         missing: recorded, never "allow"
    413  a body over the limit (limits.max_argument_bytes plus room for the event's own fields)

Claude Code treats an HTTP hook's non-2xx answer as a failure; with ``"onFailure": "block"`` in the hook's
settings a failure blocks the tool call, so a bad credential or a broken request never lets a call through.

    Route("/hooks/claude-code", endpoint=RequireCredential(ClaudeCodeHook(gateway), gateway), methods=["POST"])
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import Receive, Scope, Send

from gateway.errors import ArgumentsTooLarge, GatewayError, InvalidRequest, Unauthenticated, UnknownTool
from gateway.hook import answer_for, hook_call
from gateway.judge.call import Call
from gateway.runtime import Gateway

ENVELOPE_BYTES = 64 * 1024  # session_id, transcript_path, cwd, ...: the event around tool_input


class ClaudeCodeHook:
    """ASGI endpoint for Claude Code's HTTP hook; mounted behind RequireCredential."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self.max_body = gateway.config.limits.max_argument_bytes + ENVELOPE_BYTES

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        token = request.user.access_token.token  # verified by the auth middleware (and again by the stack)
        call = hook_call("http", token=token)
        try:
            call.event = await self.body(request)
        except ArgumentsTooLarge as exc:
            await self.gateway.stacks.hook.refused(call, exc)
        else:
            await self.gateway.stacks.hook.run(call)
        await respond(call)(scope, receive, send)

    async def body(self, request: Request) -> bytes:
        """The request body, refused as soon as it is known to be over the limit."""
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_body:
            raise ArgumentsTooLarge(f"the hook input is {declared} bytes; the limit is {self.max_body}")
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > self.max_body:
                raise ArgumentsTooLarge(f"the hook input is over the limit of {self.max_body} bytes")
            chunks.append(chunk)
        return b"".join(chunks)


def respond(call: Call) -> JSONResponse:
    """A judged call as Claude Code's hook output; input the judge could not read as an HTTP error."""
    error = call.error
    if call.outcome == "ok":  # a PostToolUse, recorded
        return JSONResponse({})
    if isinstance(error, Unauthenticated):  # revoked or expired since the middleware saw the token
        return refused(401, "invalid_token", error, call)
    if isinstance(error, ArgumentsTooLarge) and call.spec is None:
        return refused(413, error.code, error, call)
    # refused before the judge resolved a tool: not a hook event Claude Code would send. A well-formed event
    # for a tool the gateway does not know is denied in a 200 answer: a non-2xx answer blocks the call only
    # where the hook's settings say onFailure: block, and the tool must not run where they do not.
    if (
        isinstance(error, InvalidRequest)
        and not isinstance(error, UnknownTool)
        and call.spec is None
        and call.decision is None
    ):
        return refused(400, error.code, error, call)
    return JSONResponse(answer_for(call))


def refused(status: int, code: str, error: GatewayError, call: Call) -> JSONResponse:
    body = {"error": code, "error_description": error.message, "call_id": call.call_id}
    return JSONResponse(body, status_code=status)
