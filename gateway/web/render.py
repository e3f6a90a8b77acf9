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

from gateway.approval_summary import command_of, reason_of
from gateway.approvals import MAX_COMMENT
from gateway.decision_log import redact
from gateway.traces import (
    BAD_STEPS,
    CallPage,
    CallView,
    Step,
    Trace,
    TraceSummary,
    clean,
    day_time,
    effects_summary,
    listed_names,
    noise_words,
    outcome_is,
    short_time,
)
from gateway.types import FILTER_OUTCOMES, JSONObject
from gateway.web.query import PAGE_SIZES, CallQuery

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
dl{display:grid;grid-template-columns:10em 1fr;gap:.2em .8em;margin:.5em 0 0}
dt{font-weight:600;color:#555}
dd{margin:0}
dd ul{margin:0;padding-left:1.1em}
.badge{display:inline-block;padding:0 .45em;border-radius:3px;font-weight:700;font-size:.85em;color:#fff;
background:#6b7580}
.badge.denied,.badge.invalid{background:#c62828}
.badge.asked,.badge.pending{background:#b58100}
.badge.ok{background:#2e7d32}
.badge.error{background:#ef6c00}
.badge.dry-run{background:#1565c0}
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
.flash{padding:.5em .8em;border-radius:5px;background:#e8f5e9;border:1px solid #a5d6a7}
.flash.bad{background:#ffebee;border-color:#ef9a9a}
.login{max-width:36em;margin:3em auto;background:#fff;padding:1.2em 1.5em;border-radius:8px;border:1px solid #d8dce1}
.login textarea{width:100%;font:12px ui-monospace,monospace}
main.wide{max-width:none}
table.calls{table-layout:auto;font-size:13px}
table.calls td,table.calls th{padding:2px 6px;line-height:20px;white-space:nowrap;overflow:hidden;
text-overflow:ellipsis;max-width:16em;vertical-align:middle}
table.calls td.reason{max-width:34em}
table.calls th{position:sticky;top:0;background:#eef0f3;z-index:1}
table.calls tr:hover td{background:#f3f6fb}
table.calls tr.denied td:first-child,table.calls tr.invalid td:first-child{box-shadow:inset 4px 0 #c62828}
table.calls tr.asked td:first-child{box-shadow:inset 4px 0 #e0a100}
table.calls tr.error td:first-child{box-shadow:inset 4px 0 #ef6c00}
table.calls a.tool{text-decoration:none}
td.when{font-variant-numeric:tabular-nums;color:#444}
nav.tabs{display:flex;flex-wrap:wrap;gap:.3em;margin:.6em 0 .3em}
nav.tabs a{padding:.1em .6em;border:1px solid #d8dce1;border-radius:12px;background:#fff;text-decoration:none;
color:#1b1f24}
nav.tabs a.here{background:#1b1f24;color:#fff}
.pager{display:flex;gap:1em;align-items:center;margin:.4em 0;font-size:13px}
.pager .exports{margin-left:auto}
a.button{display:inline-block;padding:.25em .9em;border-radius:4px;text-decoration:none;font-weight:600}
a.button.approve,button.approve{background:#2e7d32;color:#fff;border-color:#2e7d32}
a.button.deny,button.deny{background:#c62828;color:#fff;border-color:#c62828}
form.settle textarea{width:100%;font:inherit;margin:.3em 0}
form.settle label{font-weight:600;color:#555}
code.digest{word-break:break-all}
pre.arguments{max-height:30em;overflow:auto}
table.approvals{font-size:13px}
table.approvals td.command{max-width:28em;word-break:break-all}
table.approvals td.reason{max-width:28em}
.bulk{margin:.5em 0;display:flex;gap:.6em;align-items:center}
table.attempts td:nth-child(-n+4){white-space:nowrap}
table.attempts pre{max-height:12em;overflow:auto;max-width:40em}
h3{font-size:1em;margin:1em 0 .4em}
pre.diff{max-height:30em;overflow:auto}
pre.diff .add{background:#e6ffec;display:block}
pre.diff .del{background:#ffebe9;display:block}
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
<main class="$main">
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
<a href="/ui/tasks">Tasks</a>
<a href="/ui/deadletters">Dead letters</a>
<a href="/ui/upstreams">Upstreams</a>
<a href="/ui/flow">Flow labels</a>
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

CONFIRM_FORM = Template(
    """<form method="post" action="/ui/approvals" class="settle">
<input type="hidden" name="csrf" value="$csrf">
<input type="hidden" name="answer" value="$answer">
$bound
<label for="comment">Comment (kept in the ledger and shown in the trace)</label>
<textarea id="comment" name="comment" rows="3" maxlength="$max"></textarea>
<p><button class="$cls" type="submit">Confirm: $verb</button> <a href="/ui/approvals">cancel</a></p>
</form>"""
)

# The approvals list asks /ui/approvals.json every few seconds and swaps the list when its ids change (the
# JSON's html is the same escaped markup the page renders; no value is ever inserted as markup here).
POLL_SCRIPT = """
(function () {
  var list = document.getElementById("pending"), polled = document.getElementById("polled");
  function poll() {
    fetch("/ui/approvals.json", {cache: "no-store", credentials: "same-origin"}).then(function (r) {
      if (!r.ok) { polled.textContent = "not updating: " + r.status + ", reload to sign in"; return null; }
      return r.json();
    }).then(function (d) {
      if (!d) return;
      if (d.ids.join(" ") !== list.dataset.ids) { list.innerHTML = d.html; list.dataset.ids = d.ids.join(" "); }
      polled.textContent = "updated " + d.now + " UTC";
      setTimeout(poll, 3000);
    }).catch(function () { polled.textContent = "not updating: the gateway did not answer"; setTimeout(poll, 10000); });
  }
  setTimeout(poll, 3000);
})();
"""


def esc(value: Any, limit: int | None = None) -> str:
    """Escape for HTML text and quoted attributes, after making control characters visible."""
    if value is None:
        return ""
    return html.escape(clean(value, limit), quote=True)


def trace_href(trace_id: str) -> str:
    return "/ui/trace/" + quote(trace_id, safe="")


def call_href(call_id: str) -> str:
    return "/ui/call/" + quote(call_id, safe="")


def page(title: str, body: str, nonce: str, who: str | None = None, csrf: str = "", wide: bool = False) -> str:
    """The layout around a page body; ``wide``: the full window width (the tables)."""
    header = HEADER.substitute(who=esc(who), csrf=esc(csrf)) if who else ""
    main = "wide" if wide else ""
    return LAYOUT.substitute(title=esc(title), nonce=esc(nonce), css=CSS, header=header, body=body, main=main)


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
    if call.decision and call.decision.get("revision"):
        rows.append(("Policy revision", f"<code>{esc(call.decision['revision'])}</code>"))
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
        f"<header>{_dry_run(call)}{_badge(call.outcome)} <code class='tool'>{esc(call.tool or '?')}</code> "
        f"by {who} · {decision} · "
        f"<time datetime='{esc(call.time)}'>{esc(day_time(call.time))} UTC</time> {link}</header>"
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


def filters_form(query: CallQuery, roles: list[str]) -> str:
    raw = query.raw

    def select(name: str, options: list[str], label: str = "") -> str:
        current = raw.get(name, "")
        opts = "<option value=''>any</option>" + "".join(
            f"<option value='{esc(o)}'{' selected' if current == o else ''}>{esc(o)}</option>" for o in options
        )
        return f"<label>{label or name}<select name='{name}'>{opts}</select></label>"

    def text(name: str, label: str = "", size: int = 12, hint: str = "") -> str:
        placeholder = f" placeholder='{esc(hint)}'" if hint else ""
        return (
            f"<label>{label or name}<input name='{name}' value='{esc(raw.get(name, ''))}' size='{size}'"
            f"{placeholder}></label>"
        )

    sizes = "".join(
        f"<option{' selected' if query.size == n else ''}>{n}</option>" for n in sorted({*PAGE_SIZES, query.size})
    )
    return (
        "<form class='filters' method='get' action='/ui'>"
        + text("from", size=16, hint="2026-11-23T09:00")
        + text("to", size=16, hint="2026-11-23")
        + text("tz", "zone", 10, "UTC")
        + text("agent")
        + select("role", roles)
        + text("tool")
        + text("task", size=8)
        + select("tier", ["1", "2", "3"])
        + text("rule")
        + select("outcome", list(FILTER_OUTCOMES))
        + f"<label>rows<select name='size'>{sizes}</select></label>"
        + f"<label><input type='checkbox' name='checks' value='1'{' checked' if query.filters.checks else ''}>"
        + " dry runs</label>"
        + "<button type='submit'>Filter</button> <a href='/ui'>clear</a></form>"
    )


def _dry_run(call: CallView) -> str:
    """The mark of a `gateway check` call: decided and recorded, never run, nobody's real call."""
    return (
        "<span class='badge dry-run' title='gateway check: decided, never run'>dry run</span> " if call.dry_run else ""
    )


def call_row(call: CallView, query: CallQuery) -> str:
    rule = call.rules[0] if call.rules else ""
    more = f" +{len(call.rules) - 1}" if len(call.rules) > 1 else ""
    reason = call.reasons[0] if call.reasons else ""
    trace = (
        f"<a href='{esc(trace_href(call.trace_id))}' title='trace {esc(call.trace_id)}'>trace</a>"
        if call.trace_id
        else ""
    )
    approval = " <span class='muted'>approved</span>" if outcome_is(call, "approved") else ""
    return (
        f"<tr class='call {esc(call.outcome)}' data-call-id='{esc(call.call_id)}'>"
        f"<td class='when'><time datetime='{esc(call.time)}'>{esc(query.shown(call.time))}</time></td>"
        f"<td>{_dry_run(call)}{_badge(call.outcome)}{approval}</td>"
        f"<td><a class='tool' href='{esc(call_href(call.call_id))}'><code>{esc(call.tool or '?', 64)}</code></a></td>"
        f"<td title='{esc(call.agent)}'>{esc(call.agent or '?', 40)}</td><td>{esc(call.role or '?', 24)}</td>"
        f"<td>{esc(call.task or '', 24)}</td><td>{esc(call.tier if call.tier is not None else '')}</td>"
        f"<td><code class='rule' title='{esc(' '.join(call.rules))}'>{esc(rule, 60)}</code>{more}</td>"
        f"<td class='reason' title='{esc(reason, 600)}'>{esc(reason, 160)}</td><td>{trace}</td></tr>"
    )


def outcome_tabs(page: CallPage, query: CallQuery) -> str:
    current = query.raw.get("outcome")
    # "any" is the calls matching every other filter: the rows the table shows under it (one count everywhere)
    tabs: list[tuple[str, str | None, int]] = [("any", None, page.outcomes.get("any", 0))]
    tabs += [(o, o, page.outcomes.get(o, 0)) for o in FILTER_OUTCOMES if page.outcomes.get(o) or o == current]
    links = []
    for label, value, count in tabs:
        here = " class='here'" if value == current else ""
        href = query.link(outcome=value, page=None)
        links.append(f"<a{here} href='{esc(href)}'>{esc(label)} <b>{count}</b></a>")
    return "<nav class='tabs'>" + "".join(links) + "</nav>"


def pager(page: CallPage, query: CallQuery) -> str:
    last = max(1, -(-page.total // page.size))
    first_row = page.offset + 1 if page.total else 0
    newer = (
        f"<a rel='prev' href='{esc(query.link(page=query.page - 1, before=None))}'>← newer</a>"
        if query.page > 1
        else "<span class='muted'>← newer</span>"
    )
    older = (
        # keyset: the next page starts below the last row shown, found by index however deep it is
        f"<a rel='next' href='{esc(query.link(page=query.page + 1, before=page.calls[-1].seq))}'>older →</a>"
        if query.page < last and page.calls
        else "<span class='muted'>older →</span>"
    )
    exports = (
        f"<a class='export' href='{esc(query.link('/ui/export.jsonl', page=None))}'>export JSON lines</a> "
        f"<a class='export' href='{esc(query.link('/ui/export.csv', page=None))}'>export CSV</a>"
    )
    shown = f"calls <b>{first_row}-{page.offset + len(page.calls)}</b> of <b>{page.total}</b>, newest first"
    return (
        f"<div class='pager'><span>{shown} · page {query.page} of {last}</span> {newer} {older} "
        f"<span class='exports'>{exports}</span></div>"
    )


def calls_body(page: CallPage, query: CallQuery, roles: list[str], refused_auth: list[JSONObject]) -> str:
    head = (
        f"<tr><th>time ({esc(query.zone_name)})</th><th>outcome</th><th>tool</th><th>agent</th><th>role</th>"
        "<th>task</th><th>tier</th><th>rule</th><th>reason</th><th></th></tr>"
    )
    rows = "".join(call_row(c, query) for c in page.calls) or "<tr><td colspan='10' class='muted'>no calls</td></tr>"
    parts = [
        "<h1>Calls</h1>",
        filters_form(query, roles),
        outcome_tabs(page, query),
        pager(page, query),
        f"<table class='calls'><thead>{head}</thead><tbody>{rows}</tbody></table>",
        pager(page, query) if len(page.calls) > 30 else "",
    ]
    if refused_auth and not query.filters.active() and query.page == 1:
        rows = "".join(
            f"<tr><td class='when'>{esc(query.shown(r.get('time', '')))}</td>"
            f"<td>{esc(((r.get('detail') or {}).get('error') or {}).get('message'), 300)}</td></tr>"
            for r in refused_auth
        )
        parts.append(
            "<section id='credentials'><h2>Refused credentials (latest)</h2>"
            f"<table><tr><th>time ({esc(query.zone_name)})</th><th>reason</th></tr>{rows}</table></section>"
        )
    return "\n".join(parts)


def call_body(call: CallView) -> str:
    return f"<h1>Call <code>{esc(call.call_id)}</code></h1>{call_card(call)}<p><a href='/ui'>all calls</a></p>"


def trace_summary_line(s: TraceSummary) -> str:
    what = f"task <b>{esc(s.task_id)}</b>" if s.task_id else esc(s.kind)
    effects = esc(", ".join(s.side_effects)) if s.side_effects else "<span class='muted'>-</span>"
    return (
        f"<tr class='trace-row'><td><a href='{esc(trace_href(s.trace_id))}'><code>{esc(s.trace_id)}</code></a></td>"
        f"<td>{what}</td><td>{esc(listed_names(s.agents, 40))}</td><td>{esc(listed_names(s.roles, 30))}</td>"
        f"<td>{esc(listed_names(s.tools, 48))}</td>"
        f"<td>{esc(day_time(s.first))}</td><td>{esc(day_time(s.last))}</td><td>{s.calls}</td>"
        f"<td>{s.denied}</td><td>{s.asked}</td><td>{effects}</td></tr>"
    )


def traces_body(summaries: list[TraceSummary], checks: bool = False, noise: tuple[int, int] = (0, 0)) -> str:
    head = (
        "<tr><th>trace</th><th>task / session</th><th>agent</th><th>role</th><th>tool</th><th>first (UTC)</th>"
        "<th>last (UTC)</th><th>calls</th><th>denied</th><th>asked</th><th>side effects</th></tr>"
    )
    rows = "".join(trace_summary_line(s) for s in summaries) or "<tr><td colspan='11'>no traces yet</td></tr>"
    toggle = (
        "<a class='toggle' href='/ui/traces'>hide dry runs</a>"
        if checks
        else "<a class='toggle' href='/ui/traces?checks=1'>show dry runs (gateway check)</a>"
    )
    grouped = (
        f"<p class='noise'>{esc(noise_words(noise))}: <a href='/ui?rule=gateway.unknown_tool'>the calls</a></p>"
        if noise[0]
        else ""
    )
    return f"<h1>Traces</h1><p>{toggle}</p>{grouped}<table>{head}{rows}</table>"


def trace_body(trace: Trace) -> str:
    s = trace.summary
    what = (
        f"task <b>{esc(s.task_id)}</b>"
        if s.task_id
        else "dry runs (gateway check)"
        if s.kind == "dry run"
        else "a session"
    )
    effects = f" · side effects: {esc(', '.join(s.side_effects))}" if s.side_effects else ""
    head = (
        f"<h1>Trace <code>{esc(s.trace_id)}</code></h1>"
        f"<p>{what} · {esc(day_time(s.first))} → {esc(day_time(s.last))} UTC · {s.calls} calls · {s.denied} denied · "
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


def pretty_json(value: Any) -> str:
    """A document as indented JSON, masked (``redact``) and escaped one line at a time: the only raw newlines
    are the indentation's."""
    masked = redact(value)[0]
    return "\n".join(esc(line) for line in json.dumps(masked, indent=2, ensure_ascii=False).splitlines())


def approval_href(approval_id: str, answer: str) -> str:
    return "/ui/approvals/" + quote(approval_id, safe="") + "?" + urlencode({"answer": answer})


def _approval_rows(approval: JSONObject, now: str) -> list[tuple[str, str]]:
    request = approval.get("request") or {}
    decision = request.get("decision") or {}
    arguments = request.get("arguments")
    channel = approval.get("channel")
    rows = [
        (
            "Channel",
            f"<code>{esc(channel)}</code>"
            if channel
            else "<b class='unconfined'>none recorded: authorises no call</b>",
        ),
        ("Runs", _where(approval)),
        ("Rule", " ".join(f"<code class='rule'>{esc(r)}</code>" for r in decision.get("rules") or []) or "-"),
        ("Reasons", _items(decision.get("reasons") or []) if decision.get("reasons") else "-"),
        (
            "Arguments",
            f"<pre>{esc(redact(arguments)[0], 4000)}</pre><small class='muted'>secrets masked</small>"
            if isinstance(arguments, dict)
            else "<span class='muted'>not stored</span>",
        ),
        ("Effects", _items(effects_summary({k: v for k, v in (request.get("effects") or {}).items() if v}))),
        (
            "Expires",
            esc(day_time(approval["expires"])) + " UTC" + (" <b>(expired)</b>" if approval["expires"] <= now else ""),
        ),
    ]
    unused = request.get("approvals_not_used") or []
    if unused:
        rows.append(("Not used", _items([f"{u.get('id')}: {u.get('why')}" for u in unused])))
    if request.get("trace_id"):
        rows.append(("Trace", f'<a href="{esc(trace_href(request["trace_id"]))}">{esc(request["trace_id"])}</a>'))
    return rows


def _where(approval: JSONObject) -> str:
    """Where the approved call runs, in words; unconfined in bold, as the trace page marks it."""
    where = esc(approval.get("where"))
    confinement = approval.get("confinement") or {}
    return f"<strong class='unconfined'>{where}</strong>" if not confinement.get("confined") else where


def _approval_header(approval: JSONObject) -> str:
    principal = approval.get("principal") or {}
    decision = (approval.get("request") or {}).get("decision") or {}
    task = f" on task <b>{esc(principal['task'])}</b>" if principal.get("task") else ""
    return (
        f"<header>{_badge('pending')} <code>{esc(approval['id'])}</code> "
        f"<code class='tool'>{esc(approval.get('tool'))}</code> by <b>{esc(principal.get('agent'))}</b> "
        f"({esc(principal.get('role'))}){task} · tier {esc(decision.get('tier'))} · asked "
        f"{esc(day_time(approval.get('created', '')))} UTC</header>"
    )


def _dl(rows: list[tuple[str, str]]) -> str:
    return "<dl>" + "".join(f"<dt>{label}</dt><dd>{value}</dd>" for label, value in rows) + "</dl>"


def pending_list(pending: list[JSONObject], now: str) -> str:
    """The pending approvals as a compact table, one call a row: what it runs, why it asks, the channel and where
    it runs, the agent; tick rows to approve or deny them together (a confirmation page first). This is the part
    /ui/approvals.json sends again when it changes."""
    if not pending:
        return "<p class='muted'>nothing waits for a person</p>"
    rows = []
    for approval in pending:
        principal = approval.get("principal") or {}
        expired = approval["expires"] <= now
        ident = esc(approval["id"])
        pick = "" if expired else f"<input type='checkbox' name='id' value='{ident}' aria-label='select {ident}'>"
        actions = (
            "<span class='muted'>expired: the agent must call again</span>"
            if expired
            else f"<a class='button approve' href='{esc(approval_href(approval['id'], 'approve'))}'>Approve…</a> "
            f"<a class='button deny' href='{esc(approval_href(approval['id'], 'deny'))}'>Deny…</a>"
        )
        task = f" · task {esc(principal['task'])}" if principal.get("task") else ""
        rows.append(
            f"<tr class='pending' id='approval-{ident}' data-approval-id='{ident}'><td>{pick}</td>"
            f"<td class='when'>{esc(day_time(approval.get('created', '')))}</td>"
            f"<td>{_who(approval)}{task}</td>"
            + _call_cells(approval)
            + f"<td class='when'>{esc(day_time(approval['expires']))}</td><td class='settle'>{actions}</td></tr>"
        )
    head = (
        "<tr><th></th><th>asked (UTC)</th><th>agent (role)</th><th>tool</th><th>command</th><th>reason</th>"
        "<th>channel · runs</th><th>expires (UTC)</th><th></th></tr>"
    )
    buttons = (
        "<p class='bulk'><button class='approve' type='submit' name='answer' value='approve'>Approve selected…</button>"
        "<button class='deny' type='submit' name='answer' value='deny'>Deny selected…</button>"
        "<span class='muted'>the next page shows each call and asks you to confirm</span></p>"
    )
    return (
        "<form method='get' action='/ui/approvals/confirm' class='bulk'>"
        f"<table class='approvals'>{head}{''.join(rows)}</table>{buttons}</form>"
    )


def _who(approval: JSONObject) -> str:
    principal = approval.get("principal") or {}
    return f"<b>{esc(principal.get('agent'))}</b> ({esc(principal.get('role'))})"


def _call_cells(approval: JSONObject) -> str:
    """An approval's tool, command, reason, and channel with where it runs, as table cells."""
    channel = approval.get("channel")
    where = (
        f"<code>{esc(channel)}</code><br>{_where(approval)}"
        if channel
        else "<b class='unconfined'>none recorded: authorises no call</b>"
    )
    return (
        f"<td><code class='tool'>{esc(approval.get('tool'))}</code></td>"
        f"<td class='command'><code>{esc(command_of(approval))}</code></td>"
        f"<td class='reason'>{esc(reason_of(approval))}</td><td>{where}</td>"
    )


def confirm_form(approvals: list[JSONObject], answer: str, csrf: str) -> str:
    """The POST that settles these approvals: each id with the binding digest its confirmation showed."""
    bound = "\n".join(
        f'<input type="hidden" name="id" value="{esc(a["id"])}">'
        f'<input type="hidden" name="binding" value="{esc(a.get("call_key"))}">'
        for a in approvals
    )
    verb = "Approve" if answer == "approve" else "Deny"
    count = f" {len(approvals)} calls" if len(approvals) > 1 else ""
    return CONFIRM_FORM.substitute(
        csrf=esc(csrf), answer=esc(answer), bound=bound, verb=verb + count, cls=esc(answer), max=MAX_COMMENT
    )


def confirm_many_body(approvals: list[JSONObject], answer: str, csrf: str, now: str) -> str:
    """The confirmation of a bulk answer: every call it binds to, one a row, with its binding digest."""
    verb = "Approve" if answer == "approve" else "Deny"
    rows = "".join(
        f"<tr data-approval-id='{esc(a['id'])}'><td><code>{esc(a['id'])}</code></td><td>{_who(a)}</td>"
        + _call_cells(a)
        + f"<td><code class='digest binding'>{esc(a.get('call_key'))}</code></td></tr>"
        for a in approvals
    )
    head = (
        "<tr><th>approval</th><th>agent (role)</th><th>tool</th><th>command</th><th>reason</th>"
        "<th>channel · runs</th><th>binding digest</th></tr>"
    )
    return (
        f"<h1>{verb} {len(approvals)} call{'s' if len(approvals) != 1 else ''}?</h1>"
        f"<p class='flash{'' if answer == 'approve' else ' bad'}'>{verb} binds to each call below, as it was asked: "
        "the same agent, role, task, tool and arguments, on the same channel, in the same confinement.</p>"
        f"<article class='pending confirm'><table class='approvals'>{head}{rows}</table>"
        + confirm_form(approvals, answer, csrf)
        + "</article>"
    )


def approvals_body(pending: list[JSONObject], now: str, flash: str | None, flash_bad: bool, nonce: str) -> str:
    parts = ["<h1>Pending approvals</h1>"]
    if flash:
        parts.append(f"<p class='flash{' bad' if flash_bad else ''}'>{esc(flash)}</p>")
    ids = " ".join(a["id"] for a in pending)
    parts.append(
        "<p class='muted'>This list updates by itself (<span id='polled'>every few seconds</span>). "
        "Approve or deny shows the exact call first.</p>"
        f"<div id='pending' data-ids='{esc(ids)}'>{pending_list(pending, now)}</div>"
        f"<script nonce='{esc(nonce)}'>{POLL_SCRIPT}</script>"
    )
    return "\n".join(parts)


def confirm_body(approval: JSONObject, answer: str, csrf: str, now: str) -> str:
    """The confirmation step: the exact call the answer binds to, its digests, and a comment field."""
    request = approval.get("request") or {}
    principal = approval.get("principal") or {}
    arguments = request.get("arguments")
    verb = "Approve" if answer == "approve" else "Deny"
    effect = (
        "the agent's retry of exactly this call (same agent, role, task, tool and arguments, on the same channel, "
        "in the same confinement) runs once"
        if answer == "approve"
        else "the agent's retry of this call is refused"
    )
    shown = (
        f"<pre class='arguments'>{pretty_json(arguments)}</pre><small class='muted'>as recorded with the request; "
        "secrets masked</small>"
        if isinstance(arguments, dict)
        else "<span class='muted'>not stored with the request</span>"
    )
    bound = [
        ("Tool", f"<code class='tool'>{esc(approval.get('tool'))}</code>"),
        ("Agent", f"<b>{esc(principal.get('agent'))}</b> ({esc(principal.get('role'))})"),
        ("Task", esc(principal.get("task") or "-")),
        ("Arguments", shown),
        ("Arguments digest", f"<code class='digest'>{esc(approval.get('arguments_digest'))}</code>"),
        ("Binding digest", f"<code class='digest binding'>{esc(approval.get('call_key'))}</code>"),
    ]
    form = confirm_form([approval], answer, csrf)
    return (
        f"<h1>{verb} this call?</h1>"
        f"<p class='flash{'' if answer == 'approve' else ' bad'}'>{verb} binds to the call below: {esc(effect)}.</p>"
        f"<article class='pending confirm' data-approval-id='{esc(approval['id'])}'>"
        + _approval_header(approval)
        + _dl(bound + [row for row in _approval_rows(approval, now) if row[0] != "Arguments"])
        + form
        + "</article>"
    )


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
    payload = pretty_json(letter["payload"])
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


def task_href(task_id: str) -> str:
    return "/ui/tasks/" + quote(task_id, safe="")


def _state_of_task(state: str) -> str:
    kind = {"blocked": "denied", "quarantined": "denied", "abandoned": "invalid", "committed": "ok"}.get(state, state)
    return f'<span class="badge {esc(kind)}">{esc(state)}</span>'


def tasks_body(tasks: list[JSONObject]) -> str:
    head = (
        "<tr><th>task</th><th>state</th><th>attempt</th><th>failures</th><th>owner</th><th>waiting for</th>"
        "<th>objective</th><th>note</th></tr>"
    )
    rows = "".join(
        f"<tr class='task {esc(t['state'])}' data-task-id='{esc(t['task_id'])}'>"
        f"<td><a href='{esc(task_href(t['task_id']))}'><code>{esc(t['task_id'], 64)}</code></a></td>"
        f"<td>{_state_of_task(t['state'])}</td><td>{esc(t['attempt'])}</td>"
        f"<td>{esc(t['failures'])} / {esc(t['max_attempts'])}</td><td>{esc(t.get('owner') or '-', 40)}</td>"
        f"<td>{esc(', '.join(f'{d} ({s})' for d, s in (t.get('waiting_for') or {}).items()) or '-', 200)}</td>"
        f"<td class='reason'>{esc(t['objective'], 160)}</td><td class='reason'>{esc(t.get('note') or '', 200)}</td>"
        "</tr>"
        for t in tasks
    )
    rows = rows or "<tr><td colspan='8' class='muted'>no tasks</td></tr>"
    return (
        "<h1>Tasks</h1><p class='muted'>The task board: a blocked task has a blocker report the gateway wrote; "
        "unblock it with <code>gateway task requeue|amend|abandon ID</code>.</p>"
        f"<table class='calls'><thead>{head}</thead><tbody>{rows}</tbody></table>"
    )


def _attempts_table(attempts: list[JSONObject]) -> str:
    head = (
        "<tr><th>attempt</th><th>strategy</th><th>owner</th><th>outcome</th><th>why</th><th>verification</th>"
        "<th>diff</th><th>violations</th></tr>"
    )
    rows = []
    for a in attempts:
        verification = a.get("verification") or {}
        checked = (
            f"{'passed' if verification.get('passed') else 'failed'} (exit codes "
            f"{esc(verification.get('exit_codes'))})"
            + (f"<pre>{esc(verification.get('output'), 2000)}</pre>" if verification.get("output") else "")
            if verification
            else "-"
        )
        diff = a.get("diff") or {}
        changed = esc(", ".join(map(str, diff.get("paths") or [])), 300) if diff else "-"
        violations = ", ".join(str(v.get("detail") or v) for v in a.get("violations") or []) or "-"
        rows.append(
            f"<tr class='attempt'><td>{esc(a.get('attempt'))}</td><td>{esc(a.get('strategy'), 80)}</td>"
            f"<td>{esc(a.get('owner'), 40)}</td><td>{esc(a.get('outcome', 'running'))}</td>"
            f"<td class='reason'>{esc(a.get('why') or '-', 300)}</td><td>{checked}</td><td>{changed}</td>"
            f"<td>{esc(violations, 300)}</td></tr>"
        )
    body = "".join(rows) or "<tr><td colspan='8' class='muted'>no attempts yet</td></tr>"
    return f"<table class='attempts'><thead>{head}</thead><tbody>{body}</tbody></table>"


def blocker_section(report: JSONObject) -> str:
    worker = report.get("worker") or {}
    rows = [
        ("Why", f"<b>{esc(report.get('why'), 1000)}</b>"),
        ("Written by", f"{esc(report.get('written_by'))} at {esc(day_time(report.get('time') or ''))} UTC"),
        ("Strategies tried", esc(", ".join(map(str, report.get("strategies_tried") or []))) or "-"),
        ("Failures", esc(report.get("failures"))),
        ("Time spent", f"{esc(report.get('time_spent_s'))} s"),
    ]
    if worker:
        rows += [
            ("Worker", esc(worker.get("by"))),
            ("Suspected cause", esc(worker.get("suspected_cause") or "-", 1000)),
            ("Asks a person to", esc(worker.get("human_action") or "-", 1000)),
        ]
    rows.append(("Unblock with", f"<code>{esc(report.get('unblock_with'))}</code>"))
    return (
        "<section id='blocker' class='blocker'><h2>Blocker report</h2>"
        f"<article class='denied'>{_dl(rows)}</article>"
        f"<h3>Every attempt</h3>{_attempts_table(report.get('attempts') or [])}</section>"
    )


def task_body(task: JSONObject, steps: list[Step]) -> str:
    manifest = task["manifest"]
    rows = [
        ("State", _state_of_task(task["state"]) + (f" <span class='muted'>{esc(task.get('note'), 300)}</span>")),
        ("Objective", esc(manifest.get("objective"), 2000)),
        ("Allowed paths", esc(", ".join(manifest.get("allowed_paths") or []), 1000)),
        ("Acceptance", esc(", ".join(manifest.get("acceptance") or []), 1000) or "-"),
        ("Verification", _items(manifest.get("verification") or []) or "-"),
        ("Depends on", esc(", ".join(manifest.get("depends_on") or [])) or "-"),
        (
            "Attempts",
            f"{esc(task['attempt'])} (failures {esc(task['failures'])} of {esc(manifest.get('max_attempts'))}); "
            f"strategy {esc(task.get('strategy') or 'initial')}",
        ),
        ("Owner", esc(task.get("owner") or "-")),
        ("Submitted", f"by {esc(task.get('submitted_by'))} at {esc(day_time(task.get('created') or ''))} UTC"),
        ("Trace", f"<a href='{esc(trace_href(task['trace_id']))}'>{esc(task['trace_id'])}</a>"),
    ]
    blocker = blocker_section(task["blocker"]) if task.get("blocker") else ""
    history = "<ul class='steps'>" + "".join(step_item(s) for s in steps) + "</ul>" if steps else ""
    return (
        f"<h1>Task <code>{esc(task['id'])}</code></h1>"
        f"<article class='{'denied' if task['state'] == 'blocked' else 'ok'}'>{_dl(rows)}</article>"
        + (blocker or f"<h2>Attempt history</h2>{_attempts_table(task.get('history') or [])}")
        + (f"<h2>Steps</h2>{history}" if history else "")
        + "<p><a href='/ui/tasks'>all tasks</a></p>"
    )


UPSTREAM_APPROVE_FORM = Template(
    """<form method="post" action="/ui/upstreams" class="settle">
<input type="hidden" name="csrf" value="$csrf">
<input type="hidden" name="upstream" value="$upstream">
<input type="hidden" name="name" value="$name">
<input type="hidden" name="digest" value="$digest">
<label for="comment-$n">Comment (kept in the ledger)</label>
<textarea id="comment-$n" name="comment" rows="2" maxlength="$max"></textarea>
<p><button class="approve" type="submit">Approve this definition</button></p>
</form>"""
)


FLOW_LOWER_FORM = Template(
    """<form method="post" action="/ui/flow" class="settle">
<input type="hidden" name="csrf" value="$csrf">
<input type="hidden" name="session" value="$session">
<label for="reason-$n">Why they can be lowered (kept in the ledger)</label>
<textarea id="reason-$n" name="reason" rows="2" maxlength="2000" required></textarea>
<p><button class="approve" type="submit">Lower this session's labels</button></p>
</form>"""
)


def flow_body(flows: list[JSONObject], csrf: str, flash: str | None) -> str:
    """Every labelled session with what raised its labels, and a form to lower them (a person's act, recorded)."""
    parts = ["<h1>Flow labels</h1>"]
    if flash:
        parts.append(f"<p class='flash'>{esc(flash)}</p>")
    labelled = [f for f in flows if f["untrusted"] or f["confidential"]]
    if not labelled:
        parts.append("<p class='muted'>no session has labels: every one is trusted and public</p>")
    for n, flow in enumerate(labelled):
        rows = "".join(
            f"<tr><td>{esc(s['label'])}</td><td>{esc(s['what'], 300)}</td><td>{esc(s['tool'])}</td>"
            f"<td><a href='/ui/call/{esc(s['call_id'])}'>{esc(s['call_id'][:12])}</a></td></tr>"
            for s in [*flow["untrusted"], *flow["confidential"]]
        )
        parts.append(
            f"<h2>{esc(flow['session'])}: {esc(flow['integrity'])}, {esc(flow['confidentiality'])}</h2>"
            f"<table><tr><th>label</th><th>raised by</th><th>tool</th><th>call</th></tr>{rows}</table>"
            + FLOW_LOWER_FORM.substitute(csrf=esc(csrf), session=esc(flow["session"]), n=n)
        )
    return "\n".join(parts)


def diff_html(diff: str) -> str:
    """A unified diff, every line escaped, additions and removals marked."""
    lines = []
    for line in diff.splitlines():
        kind = "add" if line.startswith("+") and not line.startswith("+++") else ""
        kind = "del" if line.startswith("-") and not line.startswith("---") else kind
        lines.append(f"<span class='{kind}'>{esc(line, 2000)}</span>" if kind else esc(line, 2000))
    return "<pre class='diff'>" + "\n".join(lines) + "</pre>"


def upstreams_body(
    changes: list[JSONObject],
    pins: list[JSONObject],
    status: JSONObject,
    locked: set[str],
    csrf: str,
    flash: str | None,
) -> str:
    """Held-back upstream definitions, each with its diff and an approve form bound to its digest; the pins;
    each upstream's state (a listing over its bounds shows here as its error)."""
    parts = ["<h1>Upstream definitions</h1>"]
    if flash:
        parts.append(f"<p class='flash'>{esc(flash)}</p>")
    parts.append(
        "<p class='muted'>A definition an upstream changed, added or renamed since it was pinned is held back: "
        "agents do not see it and its calls are refused until it is approved here or with "
        "<code>gateway upstreams approve</code>. Approving pins the definition shown, by its digest.</p>"
    )
    parts.append(f"<h2>Held back ({len(changes)})</h2>")
    if not changes:
        parts.append("<p class='muted'>nothing: every listed definition is pinned</p>")
    for n, change in enumerate(changes):
        renamed = f" (renamed from <code>{esc(change['renamed_from'])}</code>)" if change.get("renamed_from") else ""
        note = (
            f"<p class='muted'>gateway-upstreams.lock lists {esc(change['upstream'])}: after approving, run "
            "<code>gateway upstreams lock</code> and commit it (the CLI's approve does both)</p>"
            if change["upstream"] in locked
            else ""
        )
        rows = [
            ("Upstream", esc(change["upstream"])),
            ("Kind", esc(change["kind"])),
            ("Digest", f"<code class='digest'>{esc(change['digest'])}</code>"),
            ("Pinned", f"<code class='digest'>{esc(change.get('pinned_digest') or '-')}</code>"),
            ("Seen", f"{esc(day_time(change['first_seen']))} .. {esc(day_time(change['last_seen']))}"),
            ("Change", diff_html(change["diff"])),
        ]
        form = UPSTREAM_APPROVE_FORM.substitute(
            csrf=esc(csrf),
            upstream=esc(change["upstream"]),
            name=esc(change["name"]),
            digest=esc(change["digest"]),
            n=n,
            max=MAX_COMMENT,
        )
        parts.append(
            f"<article class='pending' data-definition='{esc(change['exposed'])}'>"
            f"<header>{_badge(change['status'])} <code class='tool'>{esc(change['exposed'])}</code>{renamed}</header>"
            + _dl(rows)
            + note
            + form
            + "</article>"
        )
    parts.append(
        "<h2>Upstreams</h2><table><tr><th>upstream</th><th>state</th><th>tools</th><th>held back</th>"
        "<th>error</th></tr>"
    )
    for name, state in sorted(status.items()):
        parts.append(
            f"<tr><td>{esc(name)}</td><td>{esc(state['state'])}</td><td>{esc(state['tools'])}</td>"
            f"<td>{esc(state['quarantined'])}</td><td>{esc(state['error'] or '-', 500)}</td></tr>"
        )
    parts.append("</table><h2>Pinned</h2>")
    head = "<tr><th>upstream</th><th>kind</th><th>name</th><th>digest</th><th>from</th><th>by</th><th>at</th></tr>"
    rows_html = "".join(
        f"<tr><td>{esc(p['upstream'])}</td><td>{esc(p['kind'])}</td><td><code>{esc(p['exposed'])}</code></td>"
        f"<td><code>{esc(p['digest'][:23])}</code></td><td>{esc(p['source'])}</td><td>{esc(p['pinned_by'])}</td>"
        f"<td>{esc(day_time(p['pinned_at']))}</td></tr>"
        for p in pins
    )
    parts.append(f"<table>{head}{rows_html or '<tr><td colspan=7 class=muted>nothing pinned yet</td></tr>'}</table>")
    return "\n".join(parts)


def message_body(title: str, message: str, back: str = "/ui") -> str:
    return f"<h1>{esc(title)}</h1><p class='flash bad'>{esc(message)}</p><p><a href='{esc(back)}'>back</a></p>"


def query_string(**params: Any) -> str:
    return urlencode({k: v for k, v in params.items() if v not in (None, "")})
