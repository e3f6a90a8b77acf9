"""``POST /local/check`` and ``POST /local/hooks/claude-code``: the running gateway answers ``gateway check`` and
the command hook for a command on this machine (the client is gateway/fast.py, which says who may ask).

A request must carry the MAC of the local secret (``<state>/keys/local.secret``) over its path, time, nonce
and body, within ``WINDOW_S`` seconds; every answer carries a MAC too. A request without a good one is 403,
recorded (kind "auth"), and unanswered in the client's eyes: it decides in-process.

    /local/check                {"role", "agent", "task", "tool", "arguments", "explain"}
                                -> 200 the decision report (as `gateway check --json` prints it)
                                -> 400 {"error": "unknown tool 'x' (did you mean ...?)"}   (the command's exit 2)
    /local/hooks/claude-code    {"event": "<the hook input as Claude Code wrote it>", "token", "role", "agent"}
                                -> 200 Claude Code's hook output, as `gateway hook claude-code` prints it

Each is judged as the command would judge it: the check as kind "check", the hook event as the command hook
(its approvals bind to the channel ``hook:command``), as GATEWAY_TOKEN's principal when the command had one
(verified here), else as the ``--role`` and ``--agent`` it was given.
"""

from __future__ import annotations

import hmac
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from gateway.dry_run import dry_run
from gateway.errors import GatewayError
from gateway.fast import ANSWER_HEADER, REQUEST_HEADER, SECRET_NAME, WINDOW_S, answer_mac, request_mac
from gateway.hook import answer_for, could_not_decide, judge_command_hook
from gateway.runtime import Gateway
from gateway.types import JSONObject, Principal

__all__ = ["local_routes"]

MAX_BODY = 8 * 1024 * 1024  # a hook event or a check: far below; refused unread above
Handler = Callable[[Gateway, JSONObject], Awaitable[tuple[int, Any]]]


async def check(gateway: Gateway, payload: JSONObject) -> tuple[int, Any]:
    arguments = payload.get("arguments")
    if not isinstance(arguments, dict):
        return 400, {"error": "--args must be a JSON object"}
    try:
        agent, role, task = payload.get("agent") or "cli", str(payload.get("role")), payload.get("task")
        principal = Principal(agent=agent, role=role, task=task)
        report = await dry_run(gateway, principal, str(payload.get("tool")), arguments, bool(payload.get("explain")))
    except GatewayError as exc:
        return 400, {"error": exc.message}
    except ValueError as exc:  # a principal that does not validate: said as the command would say it
        return 400, {"error": " ".join(str(exc).split())[:300]}
    return 200, report


async def claude_code_hook(gateway: Gateway, payload: JSONObject) -> tuple[int, Any]:
    """The command hook's answer; like the command, any failure at all is a deny (never an error status:
    the client would then decide again in-process and record the call twice)."""
    token = payload.get("token") if isinstance(payload.get("token"), str) else None
    role, agent = str(payload.get("role") or "worker"), str(payload.get("agent") or "claude-code")
    raw = str(payload.get("event", ""))
    try:
        call = await judge_command_hook(gateway.stacks.hook, raw, token, role, agent)
    except Exception as exc:  # as the command's own decide_or_deny
        return 200, could_not_decide(exc)
    return 200, answer_for(call)


class LocalEndpoint:
    """One /local route: the request's MAC checked, the payload handled, the answer MAC'd."""

    def __init__(self, gateway: Gateway, handler: Handler) -> None:
        self.gateway = gateway
        self.handler = handler
        self.secret = gateway.keys.secret(SECRET_NAME)  # made now, so it exists while the gateway serves

    async def answer(self, request: Request) -> Response:
        proof = request.headers.get(REQUEST_HEADER, "").split()
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > MAX_BODY:
            return self.refuse(request, f"a request over {MAX_BODY} bytes")
        body = await request.body()
        refusal = self.refusal(request.url.path, proof, body)
        if refusal is not None:
            return self.refuse(request, refusal)
        try:
            payload = json.loads(body)
        except ValueError:
            payload = None
        if isinstance(payload, dict):
            status, answer = await self.handler(self.gateway, payload)
        else:
            status, answer = 400, {"error": "the request body is not a JSON object"}
        content = json.dumps(answer).encode()
        mac = answer_mac(self.secret, proof[2], status, content)
        return Response(content, status, {ANSWER_HEADER: mac}, media_type="application/json")

    def refusal(self, path: str, proof: list[str], body: bytes) -> str | None:
        if len(proof) != 4 or proof[0] != "v1" or not proof[1].isdigit():
            return f"no '{REQUEST_HEADER}: v1 STAMP NONCE MAC' header"
        if abs(time.time() - int(proof[1])) > WINDOW_S:
            return f"the request's time is more than {WINDOW_S} s from the gateway's"
        if not hmac.compare_digest(proof[3], request_mac(self.secret, path, proof[1], proof[2], body)):
            return "the request's MAC is not the local secret's"
        return None

    def refuse(self, request: Request, reason: str) -> Response:
        error = {"code": "unauthenticated", "message": reason}
        self.gateway.ledger.append(
            {"kind": "auth", "outcome": "denied", "detail": {"where": request.url.path, "error": error}}
        )
        return Response(json.dumps({"error": reason}), 403, media_type="application/json")


def local_routes(gateway: Gateway) -> list[Route]:
    return [
        Route("/local/check", LocalEndpoint(gateway, check).answer, methods=["POST"]),
        Route("/local/hooks/claude-code", LocalEndpoint(gateway, claude_code_hook).answer, methods=["POST"]),
    ]
