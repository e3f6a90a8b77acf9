"""The /ui review pages on a real `gateway serve --http` subprocess: a headless Chromium signs in with an admin
token, reads a denied call, follows it to its trace, watches a new approval appear without a reload, confirms an
approval that an agent's retry then uses, and reads a blocked task's blocker report; plain HTTP checks 401/403,
the cookie's flags, CSRF and same-origin refusals, HTML escaping, and triage of 500 calls recorded through the
real pipeline (pages, filters, junk queries, exports in JSON lines and CSV, the export limit) with one masking
everywhere. Screenshots go to /tmp/ui-shots/."""

from __future__ import annotations

import csv
import io
import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from conftest import (
    add_role,
    http_client,
    http_gateway,
    inproc_client,
    ledger_rows,
    make_repo,
    reconfigure,
    token,
    workspace_for_tests,
)
from test_merge_queue import call, started, submit, work

from gateway.decision_log import mask_text, redact
from gateway.runtime import Gateway

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
HOSTILE = "docs/<script>alert(1)</script>.md"
SHOTS = Path("/tmp/ui-shots")


async def denied_call(config: Any) -> dict[str, Any]:
    """A worker on task T1 writes outside the task's allowed paths, with a script tag in the path."""
    gateway = Gateway(config)
    manifest = {"task_id": "T1", "objective": "answer 42", "allowed_paths": ["src/**"], "verification": ["true"]}
    async with inproc_client(gateway, token(config, "planner", agent="planner")) as client:
        await client.call_tool("task_submit", {"manifest": manifest})
    async with inproc_client(gateway, token(config, "worker", agent="worker")) as client:
        await client.call_tool("task_claim", {"task_id": "T1"})
        refused = await client.call_tool("fs_write", {"path": HOSTILE, "content": "x"})
    assert refused.is_error
    decision = refused.structured_content["decision"]
    return {"rules": decision["rules"], "reasons": decision["reasons"], "trace_id": gateway.board.get("T1")["trace_id"]}


async def ask(url: str, bearer: str, command: str) -> dict[str, Any]:
    async with http_client(url, bearer) as client:
        result = await client.call_tool("shell_run", {"command": command})
    return dict(result.structured_content or {})


async def blocked_task(config: Any) -> None:
    """T9 is blocked at once: its check passes on the base without the work (no red phase), so the gateway
    writes its blocker report."""
    async with started(config) as gateway:
        await submit(gateway, "T9", ["src/**"], ["test -f src/app.py"])
        await work(gateway, "T9", {"src/app.py": "def answer():\n    return 42\n"})
        verified = await call(gateway, token(config, "verifier", agent="v"), "verify_run", {"task_id": "T9"})
        assert not verified.structured_content["passed"]
    assert Gateway(config).board.get("T9")["state"] == "blocked"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    config = workspace_for_tests(make_repo(tmp_path_factory.mktemp("web") / "repo"))
    add_role(config, "headless", ["fs_*", "shell_run"], max_tier=2, approvals="pending")
    denied = anyio.run(denied_call, config)
    anyio.run(blocked_task, config)
    with http_gateway(config.source) as url:
        yield {
            "config": config,
            "url": url,
            "admin": token(config, "admin", agent="alice"),
            "worker": token(config, "worker", agent="worker"),
            **denied,
        }


def client(site: dict[str, Any], bearer: str | None = None) -> httpx2.Client:
    headers = {"Authorization": f"Bearer {bearer}"} if bearer else None
    return httpx2.Client(base_url=site["url"], headers=headers, timeout=15.0)


def csrf_of(page: str) -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]{64})"', page)
    assert found, "every page a reviewer sees carries the CSRF token"
    return found.group(1)


# --- plain HTTP -----------------------------------------------------------------------------------


def test_no_credential_gets_the_sign_in_form(site: dict[str, Any]) -> None:
    with client(site) as http:
        for path in ("/ui", "/ui/approvals", "/ui/traces", f"/ui/trace/{site['trace_id']}"):
            answer = http.get(path)
            assert answer.status_code == 401, path
            assert 'action="/ui/login"' in answer.text and "Bearer" in answer.headers["www-authenticate"]
            assert site["trace_id"] not in answer.text.replace(f"/ui/trace/{site['trace_id']}", ""), "nothing leaks"
        assert http.post("/ui/approvals", data={"id": "ap-x", "answer": "approve"}).status_code == 401


def test_non_admin_and_bad_credentials_are_refused(site: dict[str, Any]) -> None:
    with client(site, site["worker"]) as http:
        answer = http.get("/ui")
        assert answer.status_code == 403 and "may not review" in answer.text
    with client(site) as http:
        http.cookies.set("gateway_ui", site["worker"], domain="127.0.0.1", path="/ui")
        assert http.get("/ui").status_code == 403, "a non-admin credential in the cookie is refused too"
    with client(site) as http:
        login = http.post("/ui/login", data={"token": site["worker"]})
        assert login.status_code == 403 and "gateway_ui=ey" not in login.headers.get("set-cookie", "")
    with client(site, "not-a-jwt") as http:
        answer = http.get("/ui")
        assert answer.status_code == 401 and "credential refused: malformed token" in answer.text
    refusals = [r for r in ledger_rows(Gateway(site["config"]), kind="auth") if r.detail.get("where") == "ui"]
    assert {r.detail["error"]["code"] for r in refusals} >= {"forbidden", "unauthenticated"}


def test_sign_in_sets_a_strict_httponly_cookie(site: dict[str, Any]) -> None:
    with client(site) as http:
        login = http.post("/ui/login", data={"token": site["admin"], "next": "/ui/approvals"})
        assert login.status_code == 303 and login.headers["location"] == "/ui/approvals"
        cookie = login.headers["set-cookie"]
        assert cookie.startswith("gateway_ui=") and "HttpOnly" in cookie and "SameSite=strict" in cookie
        assert "Path=/ui" in cookie and "Max-Age=" in cookie
        assert http.get("/ui").status_code == 200, "the cookie alone signs the reviewer in"
        redirected = http.post("/ui/login", data={"token": site["admin"], "next": "//evil.example/x"})
        assert redirected.headers["location"] == "/ui", "no open redirect"


def binding_of(page: str) -> str:
    found = re.search(r'name="binding" value="(sha256:[0-9a-f]{64})"', page)
    assert found, "the confirmation carries the binding digest it shows"
    return found.group(1)


def test_settling_needs_confirmation_the_csrf_token_and_the_same_origin(site: dict[str, Any]) -> None:
    pending = anyio.run(ask, site["url"], token(site["config"], "headless", agent="csrf-bot"), "cat /etc/hostname")
    assert "approval_id" in pending, pending
    approval_id = pending["approval_id"]
    gateway = Gateway(site["config"])
    stored = gateway.approvals.get(approval_id)
    with client(site) as http:
        http.post("/ui/login", data={"token": site["admin"]})
        page = http.get("/ui/approvals")
        assert page.status_code == 200 and approval_id in page.text
        assert f"/ui/approvals/{approval_id}?answer=approve" in page.text, "Approve leads to a confirmation first"
        confirm = http.get(f"/ui/approvals/{approval_id}", params={"answer": "approve"})
        assert confirm.status_code == 200 and "Approve this call?" in confirm.text
        assert stored["call_key"] in confirm.text and stored["arguments_digest"] in confirm.text
        assert "cat /etc/hostname" in confirm.text and "shell_run" in confirm.text
        assert http.get(f"/ui/approvals/{approval_id}", params={"answer": "maybe"}).status_code == 400
        assert http.get("/ui/approvals/ap-nosuch", params={"answer": "deny"}).status_code == 404
        csrf, binding = csrf_of(confirm.text), binding_of(confirm.text)
        form = {"id": approval_id, "answer": "approve", "binding": binding, "comment": "checked: reads a hostname"}
        assert http.post("/ui/approvals", data={k: v for k, v in form.items() if k != "csrf"}).status_code == 403
        assert http.post("/ui/approvals", data={**form, "csrf": "0" * 64}).status_code == 403, "a wrong one"
        assert http.post("/ui/approvals", data={**form, "csrf": "\u00e9" * 64}).status_code == 403, "non-ASCII"
        unconfirmed = http.post("/ui/approvals", data={**form, "binding": "", "csrf": csrf})
        assert unconfirmed.status_code == 400 and "confirm" in unconfirmed.text, "one click without the binding"
        other_call = http.post("/ui/approvals", data={**form, "binding": "sha256:" + "0" * 64, "csrf": csrf})
        assert other_call.status_code == 400
        long = http.post("/ui/approvals", data={**form, "comment": "x" * 2001, "csrf": csrf})
        assert long.status_code == 409 and "at most 2000" in long.text
        other = token(site["config"], "admin", agent="mallory")
        with client(site, other) as elsewhere:  # a token derived from another credential does not fit this one
            assert elsewhere.post("/ui/approvals", data={**form, "csrf": csrf}).status_code == 403
        cross = http.post("/ui/approvals", data={**form, "csrf": csrf}, headers={"Origin": "http://evil.example"})
        assert cross.status_code == 403 and "cross-site" in cross.text
        site_hdr = http.post("/ui/approvals", data={**form, "csrf": csrf}, headers={"Sec-Fetch-Site": "cross-site"})
        assert site_hdr.status_code == 403
        assert gateway.approvals.get(approval_id)["state"] == "pending", "nothing refused changed anything"
        settled = http.post("/ui/approvals", data={**form, "csrf": csrf})
        assert settled.status_code == 303 and "answer=approved" in settled.headers["location"]
        again = http.post("/ui/approvals", data={**form, "csrf": csrf})
        assert again.status_code == 409 and "already approved" in again.text
        assert http.get(f"/ui/approvals/{approval_id}", params={"answer": "deny"}).status_code == 409
        trace = http.get(f"/ui/trace/{stored['request']['trace_id']}")
        assert trace.status_code == 200 and "approved by alice: &quot;checked: reads a hostname&quot;" in trace.text
        logout = http.post("/ui/logout", data={"csrf": csrf})
        assert logout.status_code == 303 and 'gateway_ui=""' in logout.headers["set-cookie"]
    approval = gateway.approvals.get(approval_id)
    assert approval["state"] == "approved" and approval["settled_by"] == "alice"
    row = [r for r in ledger_rows(gateway, kind="approval") if r.detail.get("approval_id") == approval_id][-1]
    assert row.detail == {
        "action": "approved",
        "approval_id": approval_id,
        "by": "alice",
        "comment": "checked: reads a hostname",
    }, "as the CLI records it, with the comment"


def test_agent_strings_are_escaped(site: dict[str, Any]) -> None:
    with client(site, site["admin"]) as http:
        calls = http.get("/ui", params={"agent": "<script>alert(2)</script>"})
        everything = http.get("/ui")
        trace = http.get(f"/ui/trace/{site['trace_id']}")
    assert calls.status_code == everything.status_code == trace.status_code == 200
    for page in (calls, everything, trace):
        assert "<script" not in page.text.lower()
        csp = page.headers["content-security-policy"]
        assert "default-src 'none'" in csp and "script-src" not in csp and "unsafe-inline" not in csp
    assert "value='&lt;script&gt;alert(2)&lt;/script&gt;'" in calls.text
    for page in (everything, trace):
        assert "docs/&lt;script&gt;alert(1)&lt;/script&gt;.md" in page.text
        assert site["rules"][0] in page.text


def test_unknown_trace_is_404(site: dict[str, Any]) -> None:
    with client(site, site["admin"]) as http:
        answer = http.get("/ui/trace/%3Cb%3Enope")
    assert answer.status_code == 404 and "no trace &#x27;&lt;b&gt;nope&#x27;" in answer.text


# --- a real browser -------------------------------------------------------------------------------


def test_review_in_a_browser(site: dict[str, Any]) -> None:
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is not installed: the browser test needs Debian's chromium")
    from playwright.sync_api import sync_playwright

    bot = token(site["config"], "headless", agent="browser-bot")
    command = "cat /etc/hostname /etc/hostname"
    pending = anyio.run(ask, site["url"], bot, command)
    assert pending["status"] == "approval_pending"
    approval_id = pending["approval_id"]
    dialogs: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            context = browser.new_context()
            page = context.new_page()
            page.set_default_timeout(15_000)
            page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))

            page.goto(f"{site['url']}/ui")
            assert page.locator("h1").inner_text() == "Gateway review"
            page.fill("#token", site["admin"])
            page.click("button[type=submit]")
            page.wait_for_url(f"{site['url']}/ui")
            assert page.locator("header.top .who").inner_text() == "signed in as alice (admin)"
            cookie = next(c for c in context.cookies() if c["name"] == "gateway_ui")
            assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["path"] == "/ui"

            denied = page.locator("#refused article.call.denied", has_text="fs_write").first
            text = denied.inner_text()
            assert site["rules"][0] in text and site["reasons"][0] in text
            assert HOSTILE in text, "the hostile path is shown as text"
            denied.locator("a.trace-link").click()
            page.wait_for_url(f"{site['url']}/ui/trace/{site['trace_id']}")
            assert site["trace_id"] in page.locator("h1").inner_text()
            assert "task T1" in page.locator("main > p").first.inner_text()
            assert page.locator("li[data-step='task.submit']").count() == 1
            assert page.locator("article.call.denied", has_text=HOSTILE).count() == 1

            page.click("header.top a[href='/ui/approvals']")
            card = page.locator(f"article[data-approval-id='{approval_id}']")
            assert command in card.inner_text() and "browser-bot" in card.inner_text()
            card.locator("button.approve").click()
            page.wait_for_url(re.compile(r".*/ui/approvals\?settled="))
            assert f"{approval_id} approved" in page.locator("p.flash").inner_text()
            assert page.locator(f"article[data-approval-id='{approval_id}']").count() == 0
        finally:
            browser.close()
    assert dialogs == [], "no script from an agent ever ran"
    retried = anyio.run(ask, site["url"], bot, command)
    assert retried.get("exit_code") == 0, retried
    assert Gateway(site["config"]).approvals.get(approval_id)["state"] == "used"


def test_oversized_or_foreign_forms_are_refused_unread(site: dict[str, Any]) -> None:
    with client(site) as http:
        big = http.post("/ui/login", data={"token": "x" * 20_000})
        assert big.status_code == 413
        as_json = http.post("/ui/login", json={"token": "x"})
        assert as_json.status_code == 413
