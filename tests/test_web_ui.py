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
import time
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
from gateway.process import gateway_cli
from gateway.runtime import Gateway
from gateway.traces import Traces

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
        assert "<code>mcp:tools/call</code>" in page.text and "MCP tools/call; sandboxed (bubblewrap)" in page.text
        assert f"/ui/approvals/{approval_id}?answer=approve" in page.text, "Approve leads to a confirmation first"
        confirm = http.get(f"/ui/approvals/{approval_id}", params={"answer": "approve"})
        assert confirm.status_code == 200 and "Approve this call?" in confirm.text
        assert "on the same channel, in the same confinement" in confirm.text and "mcp:tools/call" in confirm.text
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
        "channel": "mcp:tools/call",
    }, "as the CLI records it, with the comment"


def test_bulk_answers_need_confirmation_csrf_and_each_binding(site: dict[str, Any]) -> None:
    """Tick several approvals, answer once: the confirmation shows each call with its binding digest, and the POST
    needs the CSRF token and every binding (a missing or foreign one settles nothing)."""
    bot = token(site["config"], "headless", agent="bulk-bot")
    ids = [anyio.run(ask, site["url"], bot, f"cat /etc/hostname # bulk {i}")["approval_id"] for i in range(3)]
    gateway = Gateway(site["config"])
    with client(site, site["admin"]) as http:
        listed = http.get("/ui/approvals")
        for i in range(3):
            assert f"cat /etc/hostname # bulk {i}" in listed.text, "the command, not a digest"
        assert "name='id' value='" + ids[0] in listed.text and "Deny selected" in listed.text
        confirm = http.get("/ui/approvals/confirm", params=[("answer", "deny"), *[("id", i) for i in ids[:2]]])
        assert confirm.status_code == 200 and "Deny 2 calls?" in confirm.text
        bindings = re.findall(r'name="binding" value="(sha256:[0-9a-f]{64})"', confirm.text)
        assert bindings == [gateway.approvals.get(i)["call_key"] for i in ids[:2]]
        csrf = csrf_of(confirm.text)
        form = {"answer": "deny", "comment": "bulk", "id": ids[:2], "binding": bindings}
        assert http.post("/ui/approvals", data=form).status_code == 403, "no CSRF token"
        short = {**form, "binding": bindings[:1], "csrf": csrf}
        assert http.post("/ui/approvals", data=short).status_code == 400, "a binding missing"
        foreign = {**form, "binding": [bindings[0], "sha256:" + "0" * 64], "csrf": csrf}
        assert http.post("/ui/approvals", data=foreign).status_code == 400
        assert {gateway.approvals.get(i)["state"] for i in ids} == {"pending"}, "nothing settled so far"
        done = http.post("/ui/approvals", data={**form, "csrf": csrf})
        assert done.status_code == 303 and "answer=denied" in done.headers["location"]
        assert [gateway.approvals.get(i)["state"] for i in ids] == ["denied", "denied", "pending"]
        assert http.get("/ui/approvals/confirm", params={"answer": "deny", "id": ids[0]}).status_code == 409
        assert http.get("/ui/approvals/confirm", params={"answer": "deny"}).status_code == 400


def test_a_role_added_while_the_server_runs_is_a_filter_at_once(site: dict[str, Any]) -> None:
    with client(site, site["admin"]) as http:
        assert http.get("/ui", params={"role": "late-role"}).status_code == 400
        add_role(site["config"], "late-role", ["fs_read"], max_tier=1)
        deadline = time.monotonic() + 30  # the server looks at the role files at most once a second
        while (
            page := http.get("/ui", params={"role": "late-role"})
        ).status_code == 400 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert page.status_code == 200 and "<option value='late-role' selected>" in page.text


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

            denied = page.locator("table.calls tr.call.denied", has_text="fs_write").first
            assert site["rules"][0] in denied.inner_text() and "worker" in denied.inner_text()
            denied.locator("a.tool").click()  # the row opens the call's detail
            page.wait_for_url(re.compile(r".*/ui/call/[0-9a-f]+"))
            text = page.locator("article.call.denied").inner_text()
            assert site["rules"][0] in text and site["reasons"][0] in text
            assert HOSTILE in text, "the hostile path is shown as text"
            page.locator("a.trace-link").click()
            page.wait_for_url(f"{site['url']}/ui/trace/{site['trace_id']}")
            assert site["trace_id"] in page.locator("h1").inner_text()
            assert "task T1" in page.locator("main > p").first.inner_text()
            assert page.locator("li[data-step='task.submit']").count() == 1
            assert page.locator("article.call.denied", has_text=HOSTILE).count() == 1

            page.click("header.top a[href='/ui/approvals']")
            card = page.locator(f"tr[data-approval-id='{approval_id}']")
            assert command in card.inner_text() and "browser-bot" in card.inner_text()
            assert "mcp:tools/call" in card.inner_text(), "a compact row: command, reason, channel, agent"
            # a call asked after the page loaded appears without a reload
            later = "cat /etc/hostname /etc/hostname /etc/hostname"
            asker = threading.Thread(target=lambda: asked.append(anyio.run(ask, site["url"], bot, later)))
            asked: list[dict[str, Any]] = []
            asker.start()
            asker.join()
            page.locator("tr.pending", has_text=later).wait_for()
            assert "updated" in page.locator("#polled").inner_text()
            # bulk: tick the later call, Deny selected, confirm on the page that shows it
            page.locator("tr.pending", has_text=later).locator("input[type=checkbox]").check()
            page.click("button.deny[value=deny]")
            page.wait_for_url(re.compile(r".*/ui/approvals/confirm\?.*answer=deny"))
            assert later in page.locator("article.confirm").inner_text() and "Deny 1 call?" in page.content()
            page.click("form.settle button.deny")
            page.wait_for_url(re.compile(r".*/ui/approvals\?settled="))
            assert f"{asked[0]['approval_id']} denied" in page.locator("p.flash").inner_text()

            card = page.locator(f"tr[data-approval-id='{approval_id}']")
            card.locator("a.button.approve").click()
            page.wait_for_url(re.compile(rf".*/ui/approvals/{approval_id}\?answer=approve"))
            stored = Gateway(site["config"]).approvals.get(approval_id)
            confirm = page.locator("article.confirm").inner_text()
            assert command in confirm and "shell_run" in confirm
            assert stored["call_key"] in confirm and stored["arguments_digest"] in confirm
            page.fill("#comment", "hostname only; fine")
            SHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SHOTS / "approval-confirmation.png"), full_page=True)
            page.click("form.settle button.approve")
            page.wait_for_url(re.compile(r".*/ui/approvals\?settled="))
            assert f"{approval_id} approved" in page.locator("p.flash").inner_text()
            assert page.locator(f"tr[data-approval-id='{approval_id}']").count() == 0

            page.click("header.top a[href='/ui/tasks']")
            row = page.locator("tr[data-task-id='T9']")
            assert "blocked" in row.inner_text()
            row.locator("a").click()
            page.wait_for_url(f"{site['url']}/ui/tasks/T9")
            report = page.locator("#blocker").inner_text()
            assert "red phase missing" in report and "gateway" in report and "requeue" in report
            assert page.locator("#blocker tr.attempt").count() >= 1
            page.screenshot(path=str(SHOTS / "task-page.png"), full_page=True)
        finally:
            browser.close()
    assert dialogs == [], "no script from an agent ever ran"
    retried = anyio.run(ask, site["url"], bot, command)
    assert retried.get("exit_code") == 0, retried
    assert Gateway(site["config"]).approvals.get(approval_id)["state"] == "used"
    settled = [r for r in ledger_rows(Gateway(site["config"]), kind="approval") if r.detail.get("action") == "approved"]
    assert settled[-1].detail["comment"] == "hostname only; fine"


@pytest.mark.slow
def test_500_calls_in_a_browser(triage: dict[str, Any]) -> None:
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is not installed: the browser test needs Debian's chromium")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(
                viewport={"width": 1600, "height": 1000},
                extra_http_headers={"Authorization": f"Bearer {triage['admin']}"},
            )
            page = context.new_page()
            page.set_default_timeout(15_000)
            page.goto(f"{triage['url']}/ui?size=500")
            rows = page.locator("table.calls tbody tr")
            assert rows.count() >= 500
            heights = [rows.nth(i).bounding_box()["height"] for i in (0, 100, 499)]
            assert all(20 <= h <= 30 for h in heights), heights
            SHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SHOTS / "calls-500.png"), full_page=False)
            page.screenshot(path=str(SHOTS / "calls-500-full.png"), full_page=True)
            page.select_option("select[name=outcome]", "invalid")
            page.fill("input[name=agent]", "bot-3")
            page.click("form.filters button[type=submit]")
            page.wait_for_url(re.compile(r".*outcome=invalid.*"))
            assert page.locator("table.calls tbody tr").count() == 25
            assert "agent=bot-3" in page.url, "the view is in the query string"
            page.screenshot(path=str(SHOTS / "calls-filtered.png"))
            page.locator("table.calls tbody tr a.tool").first.click()
            page.wait_for_url(re.compile(r".*/ui/call/[0-9a-f]+"))
            assert "/etc/shadow" in page.locator("article.call").inner_text()
        finally:
            browser.close()


def test_oversized_or_foreign_forms_are_refused_unread(site: dict[str, Any]) -> None:
    with client(site) as http:
        big = http.post("/ui/login", data={"token": "x" * 20_000})
        assert big.status_code == 413
        as_json = http.post("/ui/login", json={"token": "x"})
        assert as_json.status_code == 413


# --- triage: 500 calls recorded through the real pipeline -----------------------------------------

TRIAGE_CALLS = [  # (tool, arguments, outcome): 125 of each across five agents
    ("fs_read", {"path": "README.md"}, "ok"),
    ("fs_list", {"path": "."}, "ok"),
    ("fs_read", {"path": "/etc/shadow"}, "invalid"),
    ("fs_read", {"path": ".env"}, "asked"),
]
SECRET = "hunter2hunter2"


async def record_triage_calls(config: Any) -> None:
    gateway = Gateway(config)
    for agent in range(5):
        async with inproc_client(gateway, token(config, "headless", agent=f"bot-{agent}")) as client:
            for i in range(100):
                tool, arguments, _ = TRIAGE_CALLS[i % len(TRIAGE_CALLS)]
                await client.call_tool(tool, arguments)
    async with inproc_client(gateway, token(config, "auditor", agent="masker")) as client:
        await client.call_tool("shell_run", {"command": f"DB_PASS={SECRET} cat .env"})
        await client.call_tool("fs_write", {"path": ".env", "content": f"API_KEY={SECRET}\n"})


@pytest.fixture(scope="module")
def triage(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    config = workspace_for_tests(make_repo(tmp_path_factory.mktemp("triage") / "repo"))
    config = reconfigure(config, limits={"export_rows": 500})
    add_role(config, "headless", ["fs_*", "shell_run"], max_tier=2, approvals="pending")
    add_role(config, "auditor", ["fs_*", "shell_run"], max_tier=2, approvals="pending")
    anyio.run(record_triage_calls, config)
    with http_gateway(config.source) as url:
        yield {"config": config, "url": url, "admin": token(config, "admin", agent="alice")}


def rows_of(page: str) -> list[str]:
    """The call ids of the table's rows, top to bottom."""
    return re.findall(r"<tr class='call [a-z]+' data-call-id='([0-9a-f]+)'>", page)


def test_500_calls_page_by_page_newest_first(triage: dict[str, Any]) -> None:
    with client(triage, triage["admin"]) as http:
        first = http.get("/ui", params={"size": 100})
        assert first.status_code == 200
        assert len(rows_of(first.text)) == 100 and "of <b>502</b>" in first.text and "page 1 of 6" in first.text
        assert "<th>time (UTC)</th>" in first.text
        at = re.search(r"[?&;]at=(\d+)", first.text.replace("&amp;", "&"))
        assert at, "the page links carry the ledger row they count from"
        seen = list(rows_of(first.text))
        for number in range(2, 7):
            page = http.get("/ui", params={"size": 100, "page": number, "at": at.group(1)})
            assert page.status_code == 200
            seen += rows_of(page.text)
        assert len(seen) == len(set(seen)) == 502, "every call once, on exactly one page"
        times = [c.time for c in Traces.for_config(triage["config"]).page(size=600).calls]
        assert times == sorted(times, reverse=True), "newest first"
        past = http.get("/ui", params={"size": 100, "page": 7})
        assert past.status_code == 400 and "past the last page (6)" in past.text
        # a call made after the first page was read does not shift the pages that count from its `at`
        anyio.run(ask, triage["url"], token(triage["config"], "auditor", agent="late"), "true")
        again = http.get("/ui", params={"size": 100, "page": 1, "at": at.group(1)})
        assert rows_of(again.text) == rows_of(first.text)
        fresh = http.get("/ui", params={"size": 100})
        assert "of <b>503</b>" in fresh.text and rows_of(fresh.text)[0] not in seen


@pytest.mark.parametrize(
    ("params", "total"),
    [
        ({"agent": "bot-1"}, 100),
        ({"outcome": "invalid"}, 125),
        ({"outcome": "asked", "agent": "bot-2"}, 25),
        ({"outcome": "allowed", "role": "headless"}, 250),
        ({"tool": "fs_list"}, 125),
        ({"tool": "fs_read", "tier": "3", "role": "headless"}, 125),
        ({"rule": "secrets"}, 127),
        ({"from": "2000-01-01", "to": "2000-01-02"}, 0),
        ({"from": "2999-01-01T00:00", "tz": "Europe/Berlin"}, 0),
        ({"from": "2000-01-01T00:00:00+00:00", "agent": "masker"}, 2),
    ],
)
def test_filters(triage: dict[str, Any], params: dict[str, str], total: int) -> None:
    with client(triage, triage["admin"]) as http:
        page = http.get("/ui", params={**params, "size": 500})
    assert page.status_code == 200, page.text[-500:]
    assert f"of <b>{total}</b>" in page.text and len(rows_of(page.text)) == total
    for name, value in params.items():
        assert f"name='{name}' value='{value}'" in page.text or f"value='{value}' selected" in page.text, name
    if "tz" in params:
        assert "<th>time (Europe/Berlin)</th>" in page.text


@pytest.mark.parametrize(
    ("params", "says"),
    [
        ({"from": "yesterday"}, "not a date or time"),
        ({"to": "2026-13-45"}, "not a date or time"),
        ({"to": "9999-12-31"}, "past the last date"),
        ({"from": "2026-11-24", "to": "2026-11-23"}, "must be earlier"),
        ({"page": "99999999999"}, "page must be a whole number"),
        ({"page": "0"}, "page must be a whole number"),
        ({"page": "5000"}, "past the last page"),
        ({"size": "-1"}, "size must be"),
        ({"size": "100000"}, "size must be"),
        ({"tier": "4"}, "unknown tier"),
        ({"outcome": "exploded"}, "unknown outcome"),
        ({"role": "nosuch"}, "unknown role"),
        ({"tz": "Mars/Olympus"}, "unknown time zone"),
        ({"agnet": "bot-1"}, "unknown parameter"),
        ({"agent": "x" * 300}, "longer than 200"),
    ],
)
def test_junk_queries_are_a_clear_400_and_recorded(triage: dict[str, Any], params: dict[str, str], says: str) -> None:
    with client(triage, triage["admin"]) as http:
        for path in ("/ui", "/ui/export.csv") if "page" not in params else ("/ui",):  # an export has no pages
            answer = http.get(path, params=params)
            assert answer.status_code == 400 and says in answer.text, (path, answer.text[-400:])
    rows = [r for r in ledger_rows(Gateway(triage["config"]), kind="review") if r.outcome == "invalid"]
    assert rows and says in rows[-1].detail["error"]["message"] and rows[-1].principal["agent"] == "alice"


def test_export_holds_exactly_what_the_page_shows(triage: dict[str, Any]) -> None:
    with client(triage, triage["admin"]) as http:
        lines = http.get("/ui/export.jsonl", params={"role": "headless"})
        table = http.get("/ui/export.csv", params={"role": "headless"})
        denied = http.get("/ui/export.csv", params={"outcome": "invalid", "agent": "bot-3"})
    assert lines.status_code == table.status_code == 200
    assert lines.headers["content-type"].startswith("application/x-ndjson")
    assert "attachment" in lines.headers["content-disposition"]
    entries = [json.loads(line) for line in lines.text.splitlines()]
    assert len(entries) == 500, "all 500 calls"
    assert len({e["call_id"] for e in entries}) == 500
    for entry in entries:  # the decision log's shape
        assert entry["path"] == "gateway/decision" and entry["timestamp"].endswith("Z")
        assert set(entry) >= {"decision_id", "input", "result", "labels", "trace_id", "span_id", "call_id"}
        assert entry["input"]["principal"]["role"] == "headless"
    by_outcome: dict[str, int] = {}
    for entry in entries:
        by_outcome[entry["outcome"]] = by_outcome.get(entry["outcome"], 0) + 1
    assert by_outcome == {"ok": 250, "invalid": 125, "asked": 125}
    asked = next(e for e in entries if e["outcome"] == "asked")
    assert asked["result"]["rules"] and asked["result"]["tier"] == 3 and asked["input"]["arguments"] == {"path": ".env"}
    rows = list(csv.DictReader(io.StringIO(table.text)))
    assert len(rows) == 500 and [r["call_id"] for r in rows] == [e["call_id"] for e in entries]
    assert {r["agent"] for r in rows} == {f"bot-{i}" for i in range(5)}
    assert len(list(csv.DictReader(io.StringIO(denied.text)))) == 25
    exports = [r for r in ledger_rows(Gateway(triage["config"]), kind="review") if r.detail["action"] == "export"]
    assert any(r.outcome == "ok" and r.detail["rows"] == 500 and r.detail["format"] == "jsonl" for r in exports)


def test_an_export_over_the_limit_is_refused_and_recorded(triage: dict[str, Any]) -> None:
    with client(triage, triage["admin"]) as http:
        for path in ("/ui/export.jsonl", "/ui/export.csv"):
            answer = http.get(path)
            assert answer.status_code == 413, path
            assert "at most 500" in answer.text and "narrow the time range" in answer.text
        worker = token(triage["config"], "worker", agent="w")
    with client(triage, worker) as http:
        assert http.get("/ui/export.jsonl", params={"agent": "bot-1"}).status_code == 403, "same auth as the page"
    with client(triage) as http:
        assert http.get("/ui/export.csv").status_code == 401
    refused = [r for r in ledger_rows(Gateway(triage["config"]), kind="review") if r.outcome == "denied"]
    assert refused and refused[-1].detail["error"]["code"] == "too_many_rows" and refused[-1].detail["rows"] > 500


def test_one_masking_everywhere(triage: dict[str, Any]) -> None:
    # prose that lists kinds of secrets is not a NAME: value pair; an env name is masked as NAME=value is
    reason = "touches secrets or credentials: .env"
    assert mask_text(reason) == reason and mask_text("password: hunter2") == "password: ***"
    assert mask_text(f"DB_PASS={SECRET} cat .env") == "DB_PASS=*** cat .env"
    assert redact({"env": {"DB_PASS": SECRET, "HOME": "/root"}})[0] == {"env": {"DB_PASS": "***", "HOME": "/root"}}
    with client(triage, triage["admin"]) as http:
        listed = http.get("/ui", params={"agent": "masker"})
        ids = rows_of(listed.text)
        detail = [http.get(f"/ui/call/{i}") for i in ids]
        exports = [http.get(p, params={"agent": "masker"}) for p in ("/ui/export.jsonl", "/ui/export.csv")]
        traces = http.get("/ui/traces")
    shown = [listed, *detail, *exports, traces]
    assert all(a.status_code == 200 for a in shown) and len(ids) == 2
    for answer in shown:
        assert SECRET not in answer.text, answer.url
        assert "credentials: ***" not in answer.text, "a reason naming .env keeps its .env"
    card = next(d.text for d in detail if "shell_run" in d.text)
    assert "DB_PASS=***" in card and "touches secrets or credentials: .env" in card and "reads .env" in card
    entry = next(json.loads(x) for x in exports[0].text.splitlines() if "shell_run" in x)
    assert entry["input"]["arguments"]["command"] == "DB_PASS=*** cat .env"
    assert entry["input"]["effects"]["commands"][0]["env"] == {"DB_PASS": "***"}, "the same secret, the same mask"
    assert reason in entry["result"]["reasons"]
    assert "masker" in traces.text and "auditor" in traces.text and "shell_run" in traces.text


def test_traces_list_agent_role_and_tool(triage: dict[str, Any]) -> None:
    result = gateway_cli(triage["config"], "trace", "list", "--tool", "fs_write")
    assert result.returncode == 0, result.stderr
    head, *lines = result.stdout.splitlines()
    assert "AGENT" in head and "ROLE" in head and "TOOL" in head
    assert len(lines) == 1 and "masker" in lines[0] and "auditor" in lines[0] and "shell_run,fs_write" in lines[0]


def test_a_person_lowers_flow_labels_on_the_review_page(site: dict[str, Any]) -> None:
    from gateway.labels import Source

    gateway = Gateway(site["config"])
    gateway.labels.raise_("task:WEB-1", [Source("untrusted", "upstream:web <b>page</b>", "web__fetch", "c1")])
    assert client(site, site["worker"]).get("/ui/flow").status_code == 403  # an agent never lowers its labels
    with client(site, site["admin"]) as http:
        page = http.get("/ui/flow")
        assert page.status_code == 200 and "task:WEB-1" in page.text and "&lt;b&gt;page" in page.text
        form = {"session": "task:WEB-1", "reason": "our own docs"}
        assert http.post("/ui/flow", data=form).status_code == 403  # no CSRF token
        assert http.post("/ui/flow", data={**form, "reason": " ", "csrf": csrf_of(page.text)}).status_code == 400
        lowered = http.post("/ui/flow", data={**form, "csrf": csrf_of(page.text)})
        assert lowered.status_code == 303
    assert gateway.labels.read("task:WEB-1").integrity == "trusted"
    row = ledger_rows(gateway, kind="flow_lowered")[-1]
    assert row.detail["by"] == "alice" and row.detail["reason"] == "our own docs"
