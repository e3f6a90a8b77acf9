"""The review pages at /ui, served by ``gateway serve --http`` next to /mcp.

Only an approver role (``approver: true`` in its role file; ``admin`` by default) may look: no credential
gets a sign-in form (401), a valid credential of another role gets 403. The credential comes from an
``Authorization: Bearer`` header or from the HttpOnly, SameSite=Strict cookie the sign-in form sets; it is
verified on every request, so expiry and revocation apply at once. Every POST must come from this origin
(Origin / Sec-Fetch-Site) and carry a CSRF token derived from the credential (HMAC over its jti with a
secret of the gateway's key ring). Approving or denying here is exactly ``gateway approvals approve|deny``:
the same ``Approvals.settle`` call, the same ledger row, settled by the reviewer's agent name.

    routes = ui_routes(gateway)      # mounted into the HTTP app by gateway.server.http_app

GET  /ui                  calls, one table row each, newest first, paginated; the filters of gateway/web/query.py
GET  /ui/call/{id}        one call: decision, rule, reasons, arguments (masked), effects, approval, trace
GET  /ui/export.jsonl     what /ui shows with the same query, as decision-log-shaped JSON lines (gateway/web/export.py)
GET  /ui/export.csv       the same as CSV; over limits.export_rows calls: 413, narrow the range
GET  /ui/traces           one row per trace: task or session, agents, roles, tools
GET  /ui/trace/{id}       one trace: calls with their decisions, task / intent / approval steps
GET  /ui/approvals        pending tier-3 approvals; the list updates itself from /ui/approvals.json
GET  /ui/approvals/{id}   ?answer=approve|deny: the confirmation step, the exact bound call and a comment field
GET  /ui/tasks            the task board; /ui/tasks/{id}: a task, its attempts and its blocker report
GET  /ui/deadletters      handoffs refused as malformed, kept whole (gateway/tasks/deadletters.py)
GET  /ui/deadletters/{id} one dead letter: who, why, its trace, and its payload (secrets masked)
GET  /ui/upstreams        upstream definitions held back (changed, new, renamed) with their diffs; pins; states
POST /ui/upstreams        upstream, name, digest (the definition shown), comment, csrf: pins it (gateway/tools/pins.py)
POST /ui/approvals        id, answer=approve|deny, binding (the call key shown on confirmation), comment, csrf
POST /ui/login            token (and next); POST /ui/logout (csrf)

Bad query strings, refused exports and exports are recorded in the ledger (kind "review").
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
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from gateway import __version__
from gateway.errors import ConfigError, InvalidRequest, Unauthenticated
from gateway.runtime import Gateway
from gateway.tasks.deadletters import DeadLetterRefused
from gateway.traces import Filters, Step, Traces, UnknownTrace, clean
from gateway.types import JSONObject, Principal
from gateway.web import render
from gateway.web.export import as_csv, as_jsonl, decision_entry
from gateway.web.query import BadQuery, CallQuery

COOKIE = "gateway_ui"
SAFE_NEXT = re.compile(r"^/ui(/[A-Za-z0-9_.\-/]*)?(\?[A-Za-z0-9_.\-=&%+]*)?$")
Handler = Callable[[Request, Principal], Awaitable[Response]]
FORBIDDEN = (
    "role {role!r} may not review calls or settle approvals; sign in with a credential of an approver role (e.g. admin)"
)

# The review forms are a token or a few ids: anything bigger, or of another type, is refused unread.
MAX_FORM_BYTES = 16_384
MAX_BULK = 100  # approvals one bulk answer settles (each id and binding digest fit the form's 16 KB)
TRACES_SHOWN = 500  # the traces page's rows: refused first, then asked, then the newest
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

    async def check(self, token: str) -> Principal:
        """The principal of a valid credential (Unauthenticated otherwise), whatever its role."""
        await self.gateway.tokens.fetch_keys_for(token)
        return self.gateway.tokens.verify(token)

    def may_review(self, principal: Principal) -> bool:
        return self.gateway.roles[principal.role].approver

    def record(self, principal: Principal, action: str, outcome: str, **detail: object) -> None:
        """A reviewer's act worth keeping: an export, or a request refused as bad."""
        self.gateway.ledger.append(
            {
                "kind": "review",
                "outcome": outcome,
                "principal": principal.model_dump(),
                "detail": {"where": "ui", "action": action, **detail},
            }
        )

    def refused(self, reason: str, code: str, principal: Principal | None = None) -> None:
        self.gateway.ledger.append(
            {
                "kind": "auth",
                "outcome": "denied",
                "principal": principal.model_dump() if principal else None,
                "detail": {"where": "ui", "error": {"code": code, "message": reason}},
            }
        )


def secured(response: Response, nonce: str, script: bool = False) -> Response:
    """Headers that keep the pages inert even if escaping ever failed: no framing, and no script runs but the
    page's own (``script``: the one nonce-tagged script, which may fetch from this origin only)."""
    scripts = f"script-src 'nonce-{nonce}'; connect-src 'self'; " if script else ""
    response.headers["content-security-policy"] = (
        f"default-src 'none'; style-src 'nonce-{nonce}'; {scripts}form-action 'self'; frame-ancestors 'none'; "
        "base-uri 'none'"
    )
    response.headers["x-content-type-options"] = "nosniff"
    response.headers["x-frame-options"] = "DENY"
    response.headers["referrer-policy"] = "same-origin"  # no-referrer would make Chromium send Origin: null
    response.headers["cache-control"] = "no-store"
    return response


def html_page(
    title: str,
    body: str | Callable[[str], str],
    status: int = 200,
    principal: Principal | None = None,
    csrf: str = "",
    wide: bool = False,
) -> Response:
    """A page; ``body`` is HTML, or a function of the page's nonce that returns it (a page with a script)."""
    nonce = secrets.token_urlsafe(16)
    who = f"{principal.agent} ({principal.role})" if principal else None
    html = body(nonce) if callable(body) else body
    page = render.page(title, html, nonce, who=who, csrf=csrf, wide=wide)
    return secured(HTMLResponse(page, status_code=status), nonce, script=callable(body))


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
                principal = await reviewers.check(token)
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

    def roles() -> list[str]:
        """The roles as configured now: a role file added while the server runs is a filter at once."""
        return sorted(gateway.roles.roles)

    export_rows = gateway.config.limits.export_rows
    labels = {"app": "mcp-gateway", "version": __version__, "source": "/ui export"}

    def bad_query(request: Request, principal: Principal, exc: BadQuery) -> Response:
        reviewers.record(principal, "query", "invalid", path=request.url.path, error=exc.as_dict())
        body = render.message_body("Bad request", exc.message)
        return html_page("Bad request", body, 400, principal, reviewers.csrf(principal))

    async def calls_page(request: Request, principal: Principal) -> Response:
        try:
            query = CallQuery.parse(request.query_params, roles())
            page = await anyio.to_thread.run_sync(
                lambda: traces.page(query.filters, query.offset, query.size, query.at, query.before)
            )
            query.at = page.at
            query.check_page(page.total)
        except BadQuery as exc:
            return bad_query(request, principal, exc)
        refused = await anyio.to_thread.run_sync(lambda: traces.refused_credentials(20))
        body = render.calls_body(page, query, roles(), refused)
        return html_page("Calls", body, principal=principal, csrf=reviewers.csrf(principal), wide=True)

    async def call_page(request: Request, principal: Principal) -> Response:
        try:
            call = await anyio.to_thread.run_sync(traces.call, request.path_params["call_id"])
        except UnknownTrace as exc:
            body = render.message_body("Unknown call", exc.message)
            return html_page("Unknown call", body, 404, principal, reviewers.csrf(principal))
        return html_page(f"Call {call.call_id[:12]}", render.call_body(call), 200, principal, reviewers.csrf(principal))

    def exporter(kind: str) -> Handler:
        async def export(request: Request, principal: Principal) -> Response:
            try:
                query = CallQuery.parse(request.query_params, roles())
            except BadQuery as exc:
                return bad_query(request, principal, exc)
            at, total, _ = await anyio.to_thread.run_sync(lambda: traces.count(query.filters, query.at))
            if total > export_rows:
                message = (
                    f"{total} calls match and an export holds at most {export_rows} (limits.export_rows): "
                    "narrow the time range (from, to) or add a filter"
                )
                reviewers.record(
                    principal,
                    "export",
                    "denied",
                    format=kind,
                    rows=total,
                    query=query.raw,
                    error={"code": "too_many_rows", "message": message},
                )
                body = render.message_body("Too many calls to export", message)
                return html_page("Too many calls", body, 413, principal, reviewers.csrf(principal))
            page = await anyio.to_thread.run_sync(lambda: traces.page(query.filters, 0, export_rows, at))
            entries = [decision_entry(call, labels) for call in page.calls]
            reviewers.record(principal, "export", "ok", format=kind, rows=len(entries), at=page.at, query=query.raw)
            text, media = (
                (as_jsonl(entries), "application/x-ndjson") if kind == "jsonl" else (as_csv(entries), "text/csv")
            )
            stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
            response = Response(text, media_type=f"{media}; charset=utf-8")
            response.headers["content-disposition"] = f'attachment; filename="gateway-calls-{stamp}.{kind}"'
            response.headers["x-content-type-options"] = "nosniff"
            response.headers["cache-control"] = "no-store"
            return response

        return export

    async def traces_page(request: Request, principal: Principal) -> Response:
        checks = request.query_params.get("checks") == "1"  # dry runs (gateway check) only when asked for
        found = await anyio.to_thread.run_sync(lambda: traces.list(Filters(checks=checks), TRACES_SHOWN))
        noise = await anyio.to_thread.run_sync(traces.noise, checks)
        body = render.traces_body(found, checks, noise)
        return html_page("Traces", body, principal=principal, csrf=reviewers.csrf(principal))

    async def trace_page(request: Request, principal: Principal) -> Response:
        try:
            trace = await anyio.to_thread.run_sync(traces.get, request.path_params["trace_id"])
        except UnknownTrace as exc:
            body = render.message_body("Unknown trace", exc.message)
            return html_page("Unknown trace", body, 404, principal, reviewers.csrf(principal))
        body = render.trace_body(trace)
        return html_page(f"Trace {trace.trace_id[:12]}", body, principal=principal, csrf=reviewers.csrf(principal))

    def pending_now() -> tuple[list[JSONObject], str]:
        return gateway.approvals.list(state="pending"), datetime.now(UTC).isoformat()

    async def approvals_page(
        request: Request, principal: Principal, flash: str | None = None, bad: bool = False, status: int = 200
    ) -> Response:
        pending, now = await anyio.to_thread.run_sync(pending_now)
        settled, answer = request.query_params.get("settled"), request.query_params.get("answer")
        if flash is None and settled and answer in ("approved", "denied"):
            flash = f"{settled} {answer}" + (
                ": the agent's retry of exactly the same call runs once" if answer == "approved" else ""
            )
            refused = request.query_params.get("refused")
            bad = bool(refused)
            flash += f"; not settled: {refused}" if refused else ""
        csrf = reviewers.csrf(principal)
        return html_page(
            "Approvals",
            lambda nonce: render.approvals_body(pending, now, flash, bad, nonce),
            status,
            principal,
            csrf,
        )

    async def approvals_json(request: Request, principal: Principal) -> Response:
        pending, now = await anyio.to_thread.run_sync(pending_now)
        answer = {"ids": [a["id"] for a in pending], "html": render.pending_list(pending, now), "now": now[11:19]}
        return secured(JSONResponse(answer), secrets.token_urlsafe(16))

    async def confirm_page(request: Request, principal: Principal) -> Response:
        answer = request.query_params.get("answer")
        csrf = reviewers.csrf(principal)
        if answer not in ("approve", "deny"):
            body = render.message_body("Bad request", "answer must be approve or deny", back="/ui/approvals")
            return html_page("Bad request", body, 400, principal, csrf)
        try:
            approval = await anyio.to_thread.run_sync(gateway.approvals.get, request.path_params["approval_id"])
        except ConfigError as exc:
            body = render.message_body("Unknown approval", exc.message, back="/ui/approvals")
            return html_page("Unknown approval", body, 404, principal, csrf)
        if approval["state"] != "pending":
            message = f"approval {approval['id']} is already {approval['state']}"
            return html_page(
                "Settled", render.message_body("Settled", message, back="/ui/approvals"), 409, principal, csrf
            )
        now = datetime.now(UTC).isoformat()
        body = render.confirm_body(approval, answer, csrf, now)
        return html_page(f"{answer.title()} {approval['id']}", body, principal=principal, csrf=csrf)

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

    async def confirm_many_page(request: Request, principal: Principal) -> Response:
        """The bulk answer's confirmation: the ticked approvals, each call shown with its binding digest."""
        answer, ids = request.query_params.get("answer"), list(dict.fromkeys(request.query_params.getlist("id")))
        csrf = reviewers.csrf(principal)
        if answer not in ("approve", "deny") or not ids or len(ids) > MAX_BULK:
            message = f"tick from 1 to {MAX_BULK} approvals, then Approve selected or Deny selected"
            return html_page("Bad request", render.message_body("Bad request", message, back="/ui/approvals"), 400,
                             principal, csrf)  # fmt: skip
        try:
            chosen = await anyio.to_thread.run_sync(lambda: [gateway.approvals.get(i) for i in ids])
        except ConfigError as exc:
            body = render.message_body("Unknown approval", exc.message, back="/ui/approvals")
            return html_page("Unknown approval", body, 404, principal, csrf)
        settled = [a for a in chosen if a["state"] != "pending"]
        if settled:
            message = ", ".join(f"{a['id']} is already {a['state']}" for a in settled)
            return html_page(
                "Settled", render.message_body("Settled", message, back="/ui/approvals"), 409, principal, csrf
            )
        now = datetime.now(UTC).isoformat()
        body = render.confirm_many_body(chosen, answer, csrf, now)
        return html_page(f"{answer.title()} {len(chosen)} calls", body, principal=principal, csrf=csrf, wide=True)

    async def settle(request: Request, principal: Principal) -> Response:
        form = await request.form()
        ids, bindings = [str(i) for i in form.getlist("id")], [str(b) for b in form.getlist("binding")]
        answer, comment = str(form.get("answer") or ""), str(form.get("comment") or "")
        if answer not in ("approve", "deny") or not ids or not all(ids) or len(ids) > MAX_BULK:
            return await approvals_page(request, principal, "answer must be approve or deny", True, 400)
        try:
            chosen = await anyio.to_thread.run_sync(lambda: [gateway.approvals.get(i) for i in ids])
        except ConfigError as exc:
            return await approvals_page(request, principal, exc.message, True, 409)
        bindings = (bindings + [""] * len(ids))[: len(ids)]  # a missing binding is refused below, as a wrong one
        for approval, binding in zip(chosen, bindings, strict=True):
            # each answer binds to the call the reviewer confirmed: its key must be the one the confirmation showed
            if not hmac.compare_digest(binding.encode(), str(approval["call_key"]).encode()):
                message = (
                    f"confirm {approval['id']} first: the form must carry the binding digest the confirmation shows"
                )
                return await approvals_page(request, principal, message, True, 400)

        def settle_each() -> tuple[list[JSONObject], list[str]]:
            done, refused = [], []
            for approval in chosen:
                try:
                    done.append(
                        gateway.approvals.settle(
                            approval["id"], approve=answer == "approve", by=principal.agent, comment=comment
                        )
                    )
                except ConfigError as exc:  # settled, used or expired since it was shown: the others still go
                    refused.append(exc.message)
            return done, refused

        done, refused = await anyio.to_thread.run_sync(settle_each)
        if not done:
            return await approvals_page(request, principal, "; ".join(refused), True, 409)
        state = "approved" if answer == "approve" else "denied"
        target = "/ui/approvals?" + render.query_string(
            settled=", ".join(a["id"] for a in done), answer=state, refused="; ".join(refused) or None
        )
        return RedirectResponse(target, status_code=303)

    def upstream_view() -> tuple[list[JSONObject], list[JSONObject], JSONObject, set[str]]:
        return gateway.pins.changes(), gateway.pins.list(), gateway.pool.status(), set(gateway.pins.read_lock())

    async def upstreams_page(
        request: Request, principal: Principal, flash: str | None = None, status: int = 200
    ) -> Response:
        changes, pins, states, locked = await anyio.to_thread.run_sync(upstream_view)
        approved = request.query_params.get("approved")
        flash = flash or (f"approved {approved}: agents see it again" if approved else None)
        csrf = reviewers.csrf(principal)
        body = render.upstreams_body(changes, pins, states, locked, csrf, flash)
        return html_page("Upstreams", body, status, principal, csrf, wide=True)

    async def approve_definition(request: Request, principal: Principal) -> Response:
        form = await request.form()
        upstream, name = str(form.get("upstream") or ""), str(form.get("name") or "")
        digest, comment = str(form.get("digest") or ""), str(form.get("comment") or "")
        if not (upstream and name and digest.startswith("sha256:")):
            return await upstreams_page(
                request, principal, "the form must name the upstream, the definition and its digest", 400
            )
        try:
            # bound to the digest the page showed: a definition seen since under another digest is not approved
            approved = await anyio.to_thread.run_sync(
                lambda: gateway.pins.approve(principal.agent, name, upstream, digest, comment=comment)
            )
        except ConfigError as exc:
            return await upstreams_page(request, principal, exc.message, 409)
        target = "/ui/upstreams?" + render.query_string(approved=", ".join(a["exposed"] for a in approved))
        return RedirectResponse(target, status_code=303)

    async def flow_page(
        request: Request, principal: Principal, flash: str | None = None, status: int = 200
    ) -> Response:
        flows = await anyio.to_thread.run_sync(lambda: [f.as_input() for f in gateway.labels.sessions()])
        csrf = reviewers.csrf(principal)
        lowered = request.query_params.get("lowered")
        flash = flash or (f"lowered the labels of {lowered}" if lowered else None)
        return html_page("Flow labels", render.flow_body(flows, csrf, flash), status, principal, csrf, wide=True)

    async def lower_labels(request: Request, principal: Principal) -> Response:
        form = await request.form()
        session, reason = str(form.get("session") or ""), str(form.get("reason") or "")
        try:
            await anyio.to_thread.run_sync(lambda: gateway.labels.lower(session, by=principal.agent, reason=reason))
        except InvalidRequest as exc:
            return await flow_page(request, principal, exc.message, 400)
        return RedirectResponse("/ui/flow?" + render.query_string(lowered=session), status_code=303)

    async def tasks_page(request: Request, principal: Principal) -> Response:
        tasks = await anyio.to_thread.run_sync(gateway.board.list)
        return html_page(
            "Tasks", render.tasks_body(tasks), principal=principal, csrf=reviewers.csrf(principal), wide=True
        )

    async def task_page(request: Request, principal: Principal) -> Response:
        task = await anyio.to_thread.run_sync(gateway.board.find, request.path_params["task_id"])
        csrf = reviewers.csrf(principal)
        if task is None:
            message = f"no task {clean(request.path_params['task_id'], 80)!r}"
            return html_page(
                "Unknown task", render.message_body("Unknown task", message, back="/ui/tasks"), 404, principal, csrf
            )
        try:
            trace = await anyio.to_thread.run_sync(traces.get, task["trace_id"])
            steps = [s for e in trace.entries for s in ([e] if isinstance(e, Step) else e.steps) if s.kind == "task"]
        except UnknownTrace:
            steps = []
        return html_page(f"Task {task['id']}", render.task_body(task, steps), principal=principal, csrf=csrf)

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
            principal = await reviewers.check(token)
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
        Route("/ui/call/{call_id}", guarded(call_page), methods=["GET"]),
        Route("/ui/export.jsonl", guarded(exporter("jsonl")), methods=["GET"]),
        Route("/ui/export.csv", guarded(exporter("csv")), methods=["GET"]),
        Route("/ui/traces", guarded(traces_page), methods=["GET"]),
        Route("/ui/trace/{trace_id}", guarded(trace_page), methods=["GET"]),
        Route("/ui/approvals", guarded(approvals_page), methods=["GET"]),
        Route("/ui/approvals.json", guarded(approvals_json), methods=["GET"]),
        Route("/ui/approvals/confirm", guarded(confirm_many_page), methods=["GET"]),
        Route("/ui/approvals/{approval_id}", guarded(confirm_page), methods=["GET"]),
        Route("/ui/approvals", guarded(settle, post=True), methods=["POST"]),
        Route("/ui/tasks", guarded(tasks_page), methods=["GET"]),
        Route("/ui/tasks/{task_id}", guarded(task_page), methods=["GET"]),
        Route("/ui/deadletters", guarded(deadletters_page), methods=["GET"]),
        Route("/ui/deadletters/{deadletter_id}", guarded(deadletter_page), methods=["GET"]),
        Route("/ui/upstreams", guarded(upstreams_page), methods=["GET"]),
        Route("/ui/upstreams", guarded(approve_definition, post=True), methods=["POST"]),
        Route("/ui/flow", guarded(flow_page), methods=["GET"]),
        Route("/ui/flow", guarded(lower_labels, post=True), methods=["POST"]),
        Route("/ui/login", login, methods=["POST"]),
        Route("/ui/logout", guarded(logout, post=True), methods=["POST"]),
    ]
