"""The review pages at /ui, served by ``gateway serve --http`` next to /mcp.

Only an approver role (``approver: true`` in its role file; ``admin`` by default) may look: no credential
gets a sign-in form (401), a valid credential of another role gets 403. The credential comes from an
``Authorization: Bearer`` header or from the HttpOnly, SameSite=Strict cookie the sign-in form sets; it is
verified on every request, so expiry and revocation apply at once. Every POST must come from this origin
(Origin / Sec-Fetch-Site) and carry a CSRF token derived from the credential (HMAC over its jti with a
secret of the gateway's key ring). Approving or denying here is exactly ``gateway approvals approve|deny``:
the same ``Approvals.settle`` call, the same ledger row, settled by the reviewer's agent name.

    routes = ui_routes(gateway)      # mounted into the HTTP app by gateway.server.http_app

GET  /ui                  calls: refused first, then asked, then the rest; ?role=&agent=&task=&tier=&rule=&outcome=
GET  /ui/traces           one row per trace
GET  /ui/trace/{id}       one trace: calls with their decisions, task / intent / approval steps
GET  /ui/approvals        pending tier-3 approvals with Approve / Deny
GET  /ui/deadletters      handoffs refused as malformed, kept whole (gateway/tasks/deadletters.py)
GET  /ui/deadletters/{id} one dead letter: who, why, its trace, and its payload (secrets masked)
POST /ui/approvals        id, answer=approve|deny, csrf
POST /ui/login            token (and next); POST /ui/logout (csrf)
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from urllib.parse import urlsplit

import anyio
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from gateway.errors import ConfigError, Unauthenticated
from gateway.runtime import Gateway
from gateway.tasks.deadletters import DeadLetterRefused
from gateway.traces import Filters, Traces, UnknownTrace
from gateway.types import Principal
from gateway.web import render

COOKIE = "gateway_ui"
SAFE_NEXT = re.compile(r"^/ui(/[A-Za-z0-9_.\-/]*)?(\?[A-Za-z0-9_.\-=&%+]*)?$")
Handler = Callable[[Request, Principal], Awaitable[Response]]
FORBIDDEN = (
    "role {role!r} may not review calls or settle approvals; sign in with a credential of an approver role (e.g. admin)"
)

# The review forms are a token or a few ids: anything bigger, or of another type, is refused unread.
MAX_FORM_BYTES = 16_384
TOO_LARGE = "the form must be url-encoded and smaller than 16 KB"


async def small_form(request: Request) -> FormData | None:
    length = request.headers.get("content-length", "")
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/x-www-form-urlencoded" or not length.isdigit() or int(length) > MAX_FORM_BYTES:
        return None
    return await request.form()


class Reviewers:
    """Who may use the pages, and the CSRF token bound to their credential."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self._secret: bytes | None = None

    def csrf(self, principal: Principal) -> str:
        if self._secret is None:
            self._secret = self.gateway.keys.secret("ui-csrf")
        return hmac.new(self._secret, f"csrf|{principal.jti}".encode(), hashlib.sha256).hexdigest()

    def credential(self, request: Request) -> str | None:
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() == "bearer" and token.strip():
            return token.strip()
        return request.cookies.get(COOKIE) or None

    def check(self, token: str) -> Principal:
        """The principal of a valid credential (Unauthenticated otherwise), whatever its role."""
        return self.gateway.tokens.verify(token)

    def may_review(self, principal: Principal) -> bool:
        return self.gateway.roles[principal.role].approver

    def refused(self, reason: str, code: str, principal: Principal | None = None) -> None:
        self.gateway.ledger.append(
            {
                "kind": "auth",
                "outcome": "denied",
                "principal": principal.model_dump() if principal else None,
                "detail": {"where": "ui", "error": {"code": code, "message": reason}},
            }
        )


def secured(response: Response, nonce: str) -> Response:
    """Headers that keep the pages inert even if escaping ever failed: no script runs, no framing."""
    response.headers["content-security-policy"] = (
        f"default-src 'none'; style-src 'nonce-{nonce}'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    )
    response.headers["x-content-type-options"] = "nosniff"
    response.headers["x-frame-options"] = "DENY"
    response.headers["referrer-policy"] = "same-origin"  # no-referrer would make Chromium send Origin: null
    response.headers["cache-control"] = "no-store"
    return response


def html_page(title: str, body: str, status: int = 200, principal: Principal | None = None, csrf: str = "") -> Response:
    nonce = secrets.token_urlsafe(16)
    who = f"{principal.agent} ({principal.role})" if principal else None
    return secured(HTMLResponse(render.page(title, body, nonce, who=who, csrf=csrf), status_code=status), nonce)


def same_origin(request: Request) -> bool:
    site = request.headers.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        return False
    origin = request.headers.get("origin")
    if origin is None:
        return True
    return origin != "null" and urlsplit(origin).netloc == request.url.netloc


def ui_routes(gateway: Gateway) -> list[Route]:
    reviewers = Reviewers(gateway)
    traces = Traces.for_config(gateway.config, gateway.db)

    def login_page(request: Request, message: str | None = None, status: int = 401) -> Response:
        nxt = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        if request.method != "GET" or not SAFE_NEXT.match(nxt):
            nxt = "/ui"
        response = html_page("Sign in", render.login_body(message, nxt), status=status)
        if status == 401:
            response.headers["www-authenticate"] = 'Bearer realm="gateway review"'
        if message:
            response.delete_cookie(COOKIE, path="/ui")
        return response

    def guarded(handler: Handler, post: bool = False) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            if post and not same_origin(request):
                return html_page("Refused", render.message_body("Refused", "cross-site request refused"), 403)
            token = reviewers.credential(request)
            if token is None:
                return login_page(request)
            try:
                principal = reviewers.check(token)
            except Unauthenticated as exc:
                reviewers.refused(exc.message, "unauthenticated")
                return login_page(request, f"credential refused: {exc.message}")
            if not reviewers.may_review(principal):  # 403, with the form to sign in as an approver instead
                reviewers.refused(FORBIDDEN.format(role=principal.role), "forbidden", principal)
                return login_page(request, FORBIDDEN.format(role=principal.role), status=403)
            if post:
                form = await small_form(request)
                if form is None:
                    return html_page("Refused", render.message_body("Refused", TOO_LARGE), 413)
                sent = str(form.get("csrf") or "")
                # bytes: compare_digest refuses non-ASCII str, and a hostile form must get 403, not 500
                if not hmac.compare_digest(sent.encode(), reviewers.csrf(principal).encode()):
                    body = render.message_body("Refused", "missing or wrong CSRF token: reload the page and try again")
                    return html_page("Refused", body, 403, principal, reviewers.csrf(principal))
            return await handler(request, principal)

        return endpoint

    async def calls_page(request: Request, principal: Principal) -> Response:
        q = request.query_params
        tier = q.get("tier")
        filters = Filters(
            role=q.get("role") or None,
            agent=q.get("agent") or None,
            task=q.get("task") or None,
            tier=int(tier) if tier in ("1", "2", "3") else None,
            rule=q.get("rule") or None,
            outcome=q.get("outcome") or None,
        )
        calls = await anyio.to_thread.run_sync(traces.calls, filters)
        refused = await anyio.to_thread.run_sync(lambda: traces.refused_credentials(20))
        body = render.calls_body(calls, filters, sorted(gateway.roles.roles), refused)
        return html_page("Calls", body, principal=principal, csrf=reviewers.csrf(principal))

    async def traces_page(request: Request, principal: Principal) -> Response:
        found = await anyio.to_thread.run_sync(traces.list)
        return html_page("Traces", render.traces_body(found), principal=principal, csrf=reviewers.csrf(principal))

    async def trace_page(request: Request, principal: Principal) -> Response:
        try:
            trace = await anyio.to_thread.run_sync(traces.get, request.path_params["trace_id"])
        except UnknownTrace as exc:
            body = render.message_body("Unknown trace", exc.message)
            return html_page("Unknown trace", body, 404, principal, reviewers.csrf(principal))
        body = render.trace_body(trace)
        return html_page(f"Trace {trace.trace_id[:12]}", body, principal=principal, csrf=reviewers.csrf(principal))

    async def approvals_page(
        request: Request, principal: Principal, flash: str | None = None, bad: bool = False, status: int = 200
    ) -> Response:
        pending = await anyio.to_thread.run_sync(lambda: gateway.approvals.list(state="pending"))
        settled, answer = request.query_params.get("settled"), request.query_params.get("answer")
        if flash is None and settled and answer in ("approved", "denied"):
            flash = f"{settled} {answer}" + (
                ": the agent's retry of exactly the same call runs once" if answer == "approved" else ""
            )
        now = datetime.now(UTC).isoformat()
        csrf = reviewers.csrf(principal)
        body = render.approvals_body(pending, csrf, now, flash, bad)
        return html_page("Approvals", body, status, principal, csrf)

    async def deadletters_page(request: Request, principal: Principal) -> Response:
        letters = await anyio.to_thread.run_sync(gateway.deadletters.list)
        body = render.deadletters_body(letters)
        return html_page("Dead letters", body, principal=principal, csrf=reviewers.csrf(principal))

    async def deadletter_page(request: Request, principal: Principal) -> Response:
        try:
            letter = await anyio.to_thread.run_sync(gateway.deadletters.get, request.path_params["deadletter_id"])
        except DeadLetterRefused as exc:
            body = render.message_body("Unknown dead letter", exc.message, back="/ui/deadletters")
            return html_page("Unknown dead letter", body, 404, principal, reviewers.csrf(principal))
        body = render.deadletter_body(letter)
        return html_page(f"Dead letter {letter['id']}", body, principal=principal, csrf=reviewers.csrf(principal))

    async def settle(request: Request, principal: Principal) -> Response:
        form = await request.form()
        approval_id, answer = str(form.get("id") or ""), str(form.get("answer") or "")
        if answer not in ("approve", "deny") or not approval_id:
            return await approvals_page(request, principal, "answer must be approve or deny", True, 400)
        try:
            settled = await anyio.to_thread.run_sync(
                lambda: gateway.approvals.settle(approval_id, approve=answer == "approve", by=principal.agent)
            )
        except ConfigError as exc:
            return await approvals_page(request, principal, exc.message, True, 409)
        target = "/ui/approvals?" + render.query_string(settled=settled["id"], answer=settled["state"])
        return RedirectResponse(target, status_code=303)

    async def login(request: Request) -> Response:
        if not same_origin(request):
            return html_page("Refused", render.message_body("Refused", "cross-site request refused"), 403)
        form = await small_form(request)
        if form is None:
            return html_page("Refused", render.message_body("Refused", TOO_LARGE), 413)
        token = str(form.get("token") or "").strip()
        nxt = str(form.get("next") or "/ui")
        if not token:
            return login_page(request, "paste a token first")
        try:
            principal = reviewers.check(token)
        except Unauthenticated as exc:
            reviewers.refused(exc.message, "unauthenticated")
            return login_page(request, f"credential refused: {exc.message}")
        if not reviewers.may_review(principal):
            reviewers.refused(FORBIDDEN.format(role=principal.role), "forbidden", principal)
            return login_page(request, FORBIDDEN.format(role=principal.role), status=403)
        response = RedirectResponse(nxt if SAFE_NEXT.match(nxt) else "/ui", status_code=303)
        response.set_cookie(
            COOKIE,
            token,
            max_age=max(0, int((principal.exp or time.time()) - time.time())),
            path="/ui",
            secure=request.url.scheme == "https",
            httponly=True,
            samesite="strict",
        )
        return response

    async def logout(request: Request, principal: Principal) -> Response:
        response = RedirectResponse("/ui", status_code=303)
        response.delete_cookie(COOKIE, path="/ui")
        return response

    return [
        Route("/ui", guarded(calls_page), methods=["GET"]),
        Route("/ui/traces", guarded(traces_page), methods=["GET"]),
        Route("/ui/trace/{trace_id}", guarded(trace_page), methods=["GET"]),
        Route("/ui/approvals", guarded(approvals_page), methods=["GET"]),
        Route("/ui/approvals", guarded(settle, post=True), methods=["POST"]),
        Route("/ui/deadletters", guarded(deadletters_page), methods=["GET"]),
        Route("/ui/deadletters/{deadletter_id}", guarded(deadletter_page), methods=["GET"]),
        Route("/ui/login", login, methods=["POST"]),
        Route("/ui/logout", guarded(logout, post=True), methods=["POST"]),
    ]
