"""HTML for the review pages: server-rendered, no JavaScript, every value escaped.

Agent-supplied text (paths, commands, arguments, reasons that quote them) is hostile: each value passes
``esc`` (control characters made visible, then ``html.escape`` with quotes) before it reaches a template,
and the pages are served under a Content-Security-Policy that runs no script at all.

    page("Calls", body_html, reviewer)        # the layout around a page body
    call_card(call)                           # one tool call: decision, rule, reasons, arguments, effects
"""

from __future__ import annotations

import html
import json
from string import Template
from typing import Any
from urllib.parse import quote, urlencode

from gateway.decision_log import redact
from gateway.traces import (
    BAD_STEPS,
    REFUSED,
    CallView,
    Filters,
    Step,
    Trace,
    TraceSummary,
    clean,
    day_time,
    effects_summary,
    short_time,
)
from gateway.types import CALL_OUTCOMES, JSONObject

CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1b1f24;background:#f6f7f9}
header.top{display:flex;gap:1.5em;align-items:center;padding:.6em 1.2em;background:#1b1f24;color:#fff}
header.top a{color:#fff;text-decoration:none;font-weight:600}
header.top .who{margin-left:auto;opacity:.85}
header.top form{margin:0}
main{padding:1em 1.2em;max-width:1200px}
h1{font-size:1.3em;margin:.2em 0 .6em}
h2{font-size:1.1em;margin:1.4em 0 .5em}
code,pre{font:12.5px/1.4 ui-monospace,monospace}
pre{white-space:pre-wrap;word-break:break-all;margin:0;background:#f0f1f3;padding:.3em .5em;border-radius:4px}
article{background:#fff;border:1px solid #d8dce1;border-left:5px solid #9aa3ad;border-radius:6px;padding:.6em .9em;
margin:.6em 0}
article.denied,article.invalid{border-left-color:#c62828}
article.asked,article.pending{border-left-color:#e0a100}
article.ok{border-left-color:#2e7d32}
article.error{border-left-color:#ef6c00}
article header{display:flex;flex-wrap:wrap;gap:.5em;align-items:baseline}
dl{display:grid;grid-template-columns:8em 1fr;gap:.2em .8em;margin:.5em 0 0}
dt{font-weight:600;color:#555}
dd{margin:0}
dd ul{margin:0;padding-left:1.1em}
.badge{display:inline-block;padding:0 .45em;border-radius:3px;font-weight:700;font-size:.85em;color:#fff;
background:#6b7580}
.badge.denied,.badge.invalid{background:#c62828}
.badge.asked,.badge.pending{background:#b58100}
.badge.ok{background:#2e7d32}
.badge.error{background:#ef6c00}
.muted{color:#6b7580}
.steps{list-style:none;padding-left:0;margin:.5em 0 0}
.steps li{padding:.15em 0 .15em .6em;border-left:3px solid #90a4d4;margin:.2em 0}
.steps li.bad{border-left-color:#c62828}
form.filters{display:flex;flex-wrap:wrap;gap:.6em;align-items:end;background:#fff;padding:.6em;border-radius:6px;
border:1px solid #d8dce1}
form.filters label{display:flex;flex-direction:column;font-size:.85em;color:#555}
table{border-collapse:collapse;background:#fff;width:100%}
td,th{border-bottom:1px solid #e3e6ea;padding:.3em .5em;text-align:left;vertical-align:top}
button{font:inherit;padding:.25em .9em;border-radius:4px;border:1px solid #888;background:#fff;cursor:pointer}
button.approve{background:#2e7d32;color:#fff;border-color:#2e7d32}
button.deny{background:#c62828;color:#fff;border-color:#c62828}
.flash{padding:.5em .8em;border-radius:5px;background:#e8f5e9;border:1px solid #a5d6a7}
.flash.bad{background:#ffebee;border-color:#ef9a9a}
.login{max-width:36em;margin:3em auto;background:#fff;padding:1.2em 1.5em;border-radius:8px;border:1px solid #d8dce1}
.login textarea{width:100%;font:12px ui-monospace,monospace}
"""

LAYOUT = Template(
    """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>$title · gateway review</title>
<style nonce="$nonce">$css</style>
</head>
<body>
$header
<main>
$body
</main>
</body>
</html>
"""
)

HEADER = Template(
    """<header class="top">
<a href="/ui">Calls</a>
<a href="/ui/traces">Traces</a>
<a href="/ui/approvals">Approvals</a>
<a href="/ui/deadletters">Dead letters</a>
<span class="who">signed in as $who</span>
<form method="post" action="/ui/logout"><input type="hidden" name="csrf" value="$csrf"><button>Sign out</button></form>
</header>"""
)

LOGIN = Template(
    """<div class="login">
<h1>Gateway review</h1>
<p>Paste a credential of an approver role (e.g. <code>gateway token issue --role admin --agent you</code>).
It is kept in an HttpOnly cookie for this page only, until the token expires.</p>
$message
<form method="post" action="/ui/login">
<input type="hidden" name="next" value="$next">
<label for="token">Token</label>
<textarea id="token" name="token" rows="5" required autocomplete="off" spellcheck="false"></textarea>
<p><button type="submit">Sign in</button></p>
</form>
</div>"""
)

APPROVAL_FORM = Template(
    """<form method="post" action="/ui/approvals" class="settle">
<input type="hidden" name="csrf" value="$csrf">
<input type="hidden" name="id" value="$id">
<button class="approve" name="answer" value="approve">Approve</button>
<button class="deny" name="answer" value="deny">Deny</button>
</form>"""
)


def esc(value: Any, limit: int | None = None) -> str:
    """Escape for HTML text and quoted attributes, after making control characters visible."""
    if value is None:
        return ""
    return html.escape(clean(value, limit), quote=True)


def trace_href(trace_id: str) -> str:
    return "/ui/trace/" + quote(trace_id, safe="")


def page(title: str, body: str, nonce: str, who: str | None = None, csrf: str = "") -> str:
    header = HEADER.substitute(who=esc(who), csrf=esc(csrf)) if who else ""
    return LAYOUT.substitute(title=esc(title), nonce=esc(nonce), css=CSS, header=header, body=body)


def login_body(message: str | None = None, next_path: str = "/ui") -> str:
    note = f'<p class="flash bad">{esc(message)}</p>' if message else ""
    return LOGIN.substitute(message=note, next=esc(next_path))


def _items(values: list[Any]) -> str:
    return "<ul>" + "".join(f"<li>{esc(v, 1000)}</li>" for v in values) + "</ul>"


def _badge(outcome: str) -> str:
    return f'<span class="badge {esc(outcome)}">{esc(outcome)}</span>'


def arguments_html(arguments: JSONObject | None, source: str | None, arguments_digest: str | None) -> str:
    if arguments is not None:
        return f"<pre>{esc(arguments, 4000)}</pre><small class='muted'>{esc(source)}; secrets masked</small>"
    return (
        "<span class='muted'>not recorded: the ledger keeps only their digest "
        f"<code>{esc(arguments_digest or '-', 80)}</code>; the effects below are what the gateway derived "
        "from them</span>"
    )


def call_card(call: CallView, with_trace_link: bool = True) -> str:
    who = f"<b>{esc(call.agent or '?')}</b> ({esc(call.role or '?')})"
    decision = (
        f"<span>{esc(call.action)} · tier {esc(call.tier)}</span>"
        if call.decision
        else "<span class='muted'>stopped by the gateway before the policy</span>"
    )
    link = (
        f'<a class="trace-link" href="{esc(trace_href(call.trace_id))}">trace {esc(call.trace_id[:12])}…</a>'
        if with_trace_link and call.trace_id
        else ""
    )
    rows = [
        ("Rule", " ".join(f"<code class='rule'>{esc(r)}</code>" for r in call.rules) or "<span class='muted'>-</span>"),
        ("Reasons", _items(call.reasons) if call.reasons else "<span class='muted'>-</span>"),
        ("Arguments", arguments_html(call.arguments, call.arguments_source, call.arguments_digest)),
        ("Effects", _items(call.effects_summary) if call.effects_summary else "<span class='muted'>none</span>"),
    ]
    if call.error and (call.decided_by == "policy" or call.error.get("message") not in call.reasons):
        rows.append(("Error", f"<code>{esc(call.error.get('code'))}</code> {esc(call.error.get('message'), 2000)}"))
    if call.approval:
        ap = call.approval
        by = f" by {esc(ap['by'])}" if ap.get("by") else ""
        now = ""
        if call.approval_state and call.approval_state != ap.get("answer"):
            now = f" <span class='muted'>(now {esc(call.approval_state)})</span>"
        rows.append(("Approval", f"<code>{esc(ap.get('id'))}</code> {esc(ap.get('answer'))}{by}{now}"))
    if call.safeguard:
        rows.append(
            (
                "Checkpoint",
                f"<code>{esc(call.safeguard.get('id'))}</code> "
                f"<span class='muted'>undo: <code>{esc(call.safeguard.get('rollback'))}</code></span>",
            )
        )
    if call.sandbox:
        where = ", ".join(call.sandbox.get("writable") or []) or "nothing"
        confined = f"bubblewrap, writable: <code>{esc(where)}</code>"
        rows.append(
            ("Sandbox", "<strong class='unconfined'>UNCONFINED (sandbox off)</strong>" if call.unconfined else confined)
        )
    for related in call.links:
        rows.append(("Trace", f'<a href="{esc(trace_href(related["trace_id"]))}">{esc(related["why"])}</a>'))
    steps = ""
    if call.steps:
        steps = "<ul class='steps'>" + "".join(step_item(s) for s in call.steps) + "</ul>"
    return (
        f'<article class="call {esc(call.outcome)}" id="call-{esc(call.call_id)}" data-call-id="{esc(call.call_id)}">'
        f"<header>{_badge(call.outcome)} <code class='tool'>{esc(call.tool or '?')}</code> by {who} · {decision} · "
        f"<time datetime='{esc(call.time)}'>{esc(day_time(call.time))}</time> {link}</header>"
        "<dl>" + "".join(f"<dt>{label}</dt><dd>{value}</dd>" for label, value in rows) + "</dl>" + steps + "</article>"
    )


def step_item(step: Step) -> str:
    links = "".join(f' <a href="{esc(trace_href(link["trace_id"]))}">({esc(link["why"])})</a>' for link in step.links)
    actor = f" <span class='muted'>{esc(step.actor)}</span>" if step.actor and step.kind != "approval" else ""
    bad = " class='bad'" if step.outcome in BAD_STEPS else ""
    return (
        f"<li{bad} data-step='{esc(step.name)}'><time class='muted'>{esc(short_time(step.time))}</time> "
        f"<code>{esc(step.name)}</code> {esc(step.summary, 2000)}{actor}{links}</li>"
    )


def filters_form(filters: Filters, roles: list[str]) -> str:
    def select(name: str, options: list[str], current: Any) -> str:
        opts = "<option value=''>any</option>" + "".join(
            f"<option value='{esc(o)}'{' selected' if str(current) == o else ''}>{esc(o)}</option>" for o in options
        )
        return f"<label>{name}<select name='{name}'>{opts}</select></label>"

    def text(name: str, current: Any) -> str:
        return f"<label>{name}<input name='{name}' value='{esc(current or '')}' size='14'></label>"

    return (
        "<form class='filters' method='get' action='/ui'>"
        + select("role", roles, filters.role)
        + text("agent", filters.agent)
        + text("task", filters.task)
        + select("tier", ["1", "2", "3"], filters.tier)
        + text("rule", filters.rule)
        + select("outcome", list(CALL_OUTCOMES), filters.outcome)
        + "<button type='submit'>Filter</button> <a href='/ui'>clear</a></form>"
    )


def calls_body(calls: list[CallView], filters: Filters, roles: list[str], refused_auth: list[JSONObject]) -> str:
    refused = [c for c in calls if c.outcome in REFUSED]
    asked = [c for c in calls if c.outcome == "asked"]
    others = [c for c in calls if c.outcome not in REFUSED and c.outcome != "asked"]
    limit = 200
    parts = ["<h1>Calls</h1>", filters_form(filters, roles)]
    for title, group, ident in (
        ("Refused (denied or invalid)", refused, "refused"),
        ("Asked a person (tier 3)", asked, "asked"),
        ("Other calls", others, "others"),
    ):
        parts.append(f"<section id='{ident}'><h2>{esc(title)} ({len(group)})</h2>")
        parts.extend(call_card(c) for c in group[:limit])
        if len(group) > limit:
            parts.append(f"<p class='muted'>{len(group) - limit} older calls not shown: filter to narrow.</p>")
        if not group:
            parts.append("<p class='muted'>none</p>")
        parts.append("</section>")
    if refused_auth and not filters.active():
        rows = "".join(
            f"<tr><td>{esc(day_time(r.get('time', '')))}</td>"
            f"<td>{esc(((r.get('detail') or {}).get('error') or {}).get('message'), 300)}</td></tr>"
            for r in refused_auth
        )
        parts.append(
            "<section id='credentials'><h2>Refused credentials (latest)</h2>"
            f"<table><tr><th>time</th><th>reason</th></tr>{rows}</table></section>"
        )
    return "\n".join(parts)


def trace_summary_line(s: TraceSummary) -> str:
    what = f"task <b>{esc(s.task_id)}</b>" if s.task_id else "session"
    effects = esc(", ".join(s.side_effects)) if s.side_effects else "<span class='muted'>-</span>"
    return (
        f"<tr class='trace-row'><td><a href='{esc(trace_href(s.trace_id))}'><code>{esc(s.trace_id)}</code></a></td>"
        f"<td>{what}</td><td>{esc(day_time(s.first))}</td><td>{esc(day_time(s.last))}</td><td>{s.calls}</td>"
        f"<td>{s.denied}</td><td>{s.asked}</td><td>{effects}</td></tr>"
    )


def traces_body(summaries: list[TraceSummary]) -> str:
    head = (
        "<tr><th>trace</th><th>task / session</th><th>first</th><th>last</th><th>calls</th><th>denied</th>"
        "<th>asked</th><th>side effects</th></tr>"
    )
    rows = "".join(trace_summary_line(s) for s in summaries) or "<tr><td colspan='8'>no traces yet</td></tr>"
    return f"<h1>Traces</h1><table>{head}{rows}</table>"


def trace_body(trace: Trace) -> str:
    s = trace.summary
    what = f"task <b>{esc(s.task_id)}</b>" if s.task_id else "a session"
    effects = f" · side effects: {esc(', '.join(s.side_effects))}" if s.side_effects else ""
    head = (
        f"<h1>Trace <code>{esc(s.trace_id)}</code></h1>"
        f"<p>{what} · {esc(day_time(s.first))} → {esc(day_time(s.last))} · {s.calls} calls · {s.denied} denied · "
        f"{s.asked} asked · {s.errors} errors{effects}</p>"
    )
    parts = [head, "<div class='trace'>"]
    for entry in trace.entries:
        if isinstance(entry, CallView):
            parts.append(call_card(entry, with_trace_link=False))
        else:
            parts.append("<ul class='steps'>" + step_item(entry) + "</ul>")
    parts.append("</div>")
    return "\n".join(parts)


def approvals_body(pending: list[JSONObject], csrf: str, now: str, flash: str | None, flash_bad: bool) -> str:
    parts = ["<h1>Pending approvals</h1>"]
    if flash:
        parts.append(f"<p class='flash{' bad' if flash_bad else ''}'>{esc(flash)}</p>")
    if not pending:
        parts.append("<p class='muted'>nothing waits for a person</p>")
    for approval in pending:
        request = approval.get("request") or {}
        decision = request.get("decision") or {}
        principal = approval.get("principal") or {}
        expired = approval["expires"] <= now
        arguments = request.get("arguments")
        rows = [
            ("Rule", " ".join(f"<code class='rule'>{esc(r)}</code>" for r in decision.get("rules") or []) or "-"),
            ("Reasons", _items(decision.get("reasons")) if decision.get("reasons") else "-"),
            (
                "Arguments",
                f"<pre>{esc(redact(arguments)[0], 4000)}</pre><small class='muted'>secrets masked</small>"
                if isinstance(arguments, dict)
                else "<span class='muted'>not stored</span>",
            ),
            ("Effects", _items(effects_summary({k: v for k, v in (request.get("effects") or {}).items() if v}))),
            ("Expires", esc(day_time(approval["expires"])) + (" <b>(expired)</b>" if expired else "")),
        ]
        if request.get("trace_id"):
            rows.append(("Trace", f'<a href="{esc(trace_href(request["trace_id"]))}">{esc(request["trace_id"])}</a>'))
        form = (
            "<p class='muted'>expired: the agent must call again</p>"
            if expired
            else APPROVAL_FORM.substitute(csrf=esc(csrf), id=esc(approval["id"]))
        )
        parts.append(
            f"<article class='pending' id='approval-{esc(approval['id'])}' data-approval-id='{esc(approval['id'])}'>"
            f"<header>{_badge('pending')} <code>{esc(approval['id'])}</code> "
            f"<code class='tool'>{esc(approval.get('tool'))}</code> by <b>{esc(principal.get('agent'))}</b> "
            f"({esc(principal.get('role'))}) · tier {esc(decision.get('tier'))} · asked "
            f"{esc(day_time(approval.get('created', '')))}</header>"
            "<dl>"
            + "".join(f"<dt>{label}</dt><dd>{value}</dd>" for label, value in rows)
            + "</dl>"
            + form
            + "</article>"
        )
    return "\n".join(parts)


def deadletter_href(deadletter_id: str) -> str:
    return "/ui/deadletters/" + quote(deadletter_id, safe="")


def _agent(letter: JSONObject) -> str:
    principal = letter.get("principal") or {}
    return f"<b>{esc(principal.get('agent'))}</b> ({esc(principal.get('role'))})"


def _state_badge(state: str) -> str:
    """A dead letter's state: red while dead, green once replayed."""
    return f'<span class="badge {"invalid" if state == "dead" else "ok"}">{esc(state)}</span>'


def deadletters_body(letters: list[JSONObject]) -> str:
    head = (
        "<tr><th>id</th><th>time</th><th>kind</th><th>tool</th><th>task</th><th>agent</th><th>error</th>"
        "<th>state</th></tr>"
    )
    rows = "".join(
        f"<tr class='deadletter {esc(d['state'])}' data-deadletter-id='{esc(d['id'])}'>"
        f"<td><a href='{esc(deadletter_href(d['id']))}'><code>{esc(d['id'])}</code></a></td>"
        f"<td>{esc(day_time(d['time']))}</td><td>{esc(d['kind'])}</td><td><code>{esc(d['tool'])}</code></td>"
        f"<td>{esc(d.get('task_id') or '-')}</td><td>{_agent(d)}</td><td>{esc(d['error'], 300)}</td>"
        f"<td>{_state_badge(d['state'])}</td></tr>"
        for d in letters
    )
    rows = rows or "<tr><td colspan='8' class='muted'>no dead letters</td></tr>"
    return (
        "<h1>Dead letters</h1><p class='muted'>Handoffs (manifests, execution records, verification runs, intent "
        "proposals) refused as malformed, kept whole. Replay one with "
        "<code>gateway deadletters replay ID [--payload FILE]</code>.</p>"
        f"<table>{head}{rows}</table>"
    )


def deadletter_body(letter: JSONObject) -> str:
    # pretty JSON, one escaped line at a time: the only raw newlines are the indentation's
    masked = redact(letter["payload"])[0]
    payload = "\n".join(esc(line) for line in json.dumps(masked, indent=2).splitlines())
    trace = letter.get("trace_id")
    rows = [
        ("Kind", esc(letter["kind"])),
        ("Tool", f"<code>{esc(letter['tool'])}</code>"),
        ("Task", esc(letter.get("task_id") or "-")),
        ("Agent", _agent(letter)),
        ("Kept", esc(day_time(letter["time"]))),
        ("Trace", f'<a href="{esc(trace_href(trace))}">{esc(trace)}</a>' if trace else "-"),
        ("Error", esc(letter["error"], 2000)),
        ("Payload", f"<pre>{payload}</pre><small class='muted'>as sent; secrets masked</small>"),
    ]
    if letter["state"] == "dead":
        replay = f"gateway deadletters replay {letter['id']} [--payload FIXED.json]"
        rows.append(("Replay", f"<code>{esc(replay)}</code>"))
    else:
        rows.append(("Replayed", f"{esc(day_time(letter.get('replayed_at') or ''))}"))
        rows.append(("Result", f"<pre>{esc(redact(letter.get('replay_result'))[0], 4000)}</pre>"))
    return (
        f"<h1>Dead letter <code>{esc(letter['id'])}</code></h1>"
        f"<article class='{'invalid' if letter['state'] == 'dead' else 'ok'}' data-deadletter-id='{esc(letter['id'])}'>"
        f"<header>{_state_badge(letter['state'])} <code class='tool'>{esc(letter['tool'])}</code></header><dl>"
        + "".join(f"<dt>{label}</dt><dd>{value}</dd>" for label, value in rows)
        + "</dl></article><p><a href='/ui/deadletters'>all dead letters</a></p>"
    )


def message_body(title: str, message: str, back: str = "/ui") -> str:
    return f"<h1>{esc(title)}</h1><p class='flash bad'>{esc(message)}</p><p><a href='{esc(back)}'>back</a></p>"


def query_string(**params: Any) -> str:
    return urlencode({k: v for k, v in params.items() if v not in (None, "")})
