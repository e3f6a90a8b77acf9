"""`gateway trace list|show` on a real workspace: a task taken from its manifest to its merge commit, with a
call the policy denies, one refused as malformed, one waiting for a person, and a session approved and retried."""

from __future__ import annotations

import io
import json
import sqlite3
from collections import Counter
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import add_role, inproc_client, make_repo, token, workspace_for_tests
from rich.console import Console

import gateway.store.repositories.review_index as review_index
import gateway.traces as traces_module
from gateway.process import gateway_cli as cli
from gateway.repo import Repo
from gateway.runtime import Gateway
from gateway.store import SqliteStore
from gateway.store.repositories import traces as trace_rows
from gateway.traces import Filters, Traces, listed_names, render_trace

HOSTILE = "docs/<script>alert(1)</script>.md"
TIER3 = {"command": "cat /etc/hostname"}


async def workflow(config: Any) -> dict[str, Any]:
    gateway = Gateway(config)
    manifest = {
        "task_id": "T1",
        "objective": "answer 42",
        "allowed_paths": ["src/**"],
        "verification": ["grep -q 'return 42' src/app.py"],
    }
    facts: dict[str, Any] = {}
    async with inproc_client(gateway, token(config, "planner", agent="planner")) as client:
        assert not (await client.call_tool("task_submit", {"manifest": manifest})).is_error
    async with inproc_client(gateway, token(config, "worker", agent="worker")) as client:
        await client.call_tool("task_claim", {"task_id": "T1"})
        edited = await client.call_tool("fs_edit", {"path": "src/app.py", "old_string": "41", "new_string": "42"})
        assert not edited.is_error
        denied = await client.call_tool("fs_write", {"path": HOSTILE, "content": "x"})
        assert denied.is_error and denied.structured_content["decision"]["action"] == "deny"
        facts["denied_rules"] = denied.structured_content["decision"]["rules"]
        invalid = await client.call_tool("fs_read", {"path": "../../etc/\x1b[2Jpasswd"})
        assert invalid.is_error
        secret = await client.call_tool("shell_run", {"command": "API_TOKEN=hunter2hunter2 true"})
        assert not secret.is_error
        asked = await client.call_tool("shell_run", {"command": "rm -rf /"})
        facts["asked_approval"] = asked.structured_content["approval_id"]
        record = {"task_id": "T1", "status": "done", "files_changed": ["src/app.py"]}
        assert not (await client.call_tool("task_report", {"record": record})).is_error
    async with inproc_client(gateway, token(config, "verifier", agent="verifier")) as client:
        assert (await client.call_tool("verify_run", {"task_id": "T1"})).structured_content["passed"]
    async with inproc_client(gateway, token(config, "planner", agent="planner")) as client:
        proposed = await client.call_tool("intent_propose", {"task_id": "T1", "action": "merge", "arguments": {}})
    intent_id = proposed.structured_content["intent_id"]
    async with inproc_client(gateway, token(config, "verifier", agent="verifier")) as client:
        await client.call_tool("intent_approve", {"intent_id": intent_id})
    async with inproc_client(gateway, token(config, "committer", agent="committer")) as client:
        committed = await client.call_tool("intent_commit", {"intent_id": intent_id})
    facts["merge"] = committed.structured_content["outcome"]["merge_commit"]
    bot = token(config, "headless", agent="bot")
    async with inproc_client(gateway, bot) as client:
        pending = (await client.call_tool("shell_run", TIER3)).structured_content
        facts["approval"] = pending["approval_id"]
        gateway.approvals.settle(pending["approval_id"], approve=True, by="alice")
        ran = await client.call_tool("shell_run", TIER3)  # the same session: the retry lands in the same trace
        assert ran.structured_content["exit_code"] == 0
    facts["intent_id"] = intent_id
    return facts


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, dict[str, Any]]:
    config = workspace_for_tests(make_repo(tmp_path_factory.mktemp("traces") / "repo"))
    add_role(config, "headless", ["fs_*", "shell_run"], max_tier=2, approvals="pending")
    facts = anyio.run(workflow, config)
    return config, facts


def test_list_shows_one_line_per_trace_refused_first(workspace: tuple[Any, dict[str, Any]]) -> None:
    config, facts = workspace
    result = cli(config, "trace", "list")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split()[:5] == ["TRACE", "TASK/SESSION", "AGENT", "ROLE", "TOOL"]
    task_line = lines[1]  # the task's trace has the refused calls: it comes first
    columns = task_line.split()
    assert columns[1] == "T1"
    summary = Traces.for_config(config).list()[0]
    assert "worker" in summary.agents and "planner" in summary.roles and "fs_write" in summary.tools
    # as many names as fit the column, then +N
    assert columns[2:5] == [
        listed_names(summary.agents, 16),
        listed_names(summary.roles, 12),
        listed_names(summary.tools, 24),
    ]
    calls, denied, asked = (int(c) for c in columns[9:12])
    assert calls >= 10 and denied == 2 and asked == 1
    assert f"merge {facts['merge'][:12]}" in task_line
    assert Repo(config.workspace).run("log", "-1", "--merges", "--format=%H", "main").strip() == facts["merge"]
    assert any(line.split()[1] == "session" for line in lines[2:]), "calls outside a task have session traces"


def test_list_json_and_filters(workspace: tuple[Any, dict[str, Any]]) -> None:
    config, facts = workspace
    result = cli(config, "trace", "list", "--json")
    assert result.returncode == 0, result.stderr
    traces = json.loads(result.stdout)["traces"]
    task = traces[0]
    assert task["kind"] == "task" and task["task_id"] == "T1" and task["denied"] == 2 and task["asked"] == 1
    assert task["side_effects"] == [f"merge {facts['merge'][:12]}"]
    assert {"planner", "worker", "verifier", "committer"} <= set(task["roles"])
    denied = json.loads(cli(config, "trace", "list", "--denied", "--json").stdout)["traces"]
    assert [t["trace_id"] for t in denied] == [task["trace_id"]]
    headless = json.loads(cli(config, "trace", "list", "--role", "headless", "--json").stdout)["traces"]
    assert len(headless) == 1 and headless[0]["kind"] == "session" and headless[0]["calls"] == 2
    # the same filters, through the read model the web pages use
    traces_model = Traces.for_config(config)
    assert [t.trace_id for t in traces_model.list(Filters(tier=3))] == [task["trace_id"], headless[0]["trace_id"]]
    rule = facts["denied_rules"][0]
    assert [c.tool for c in traces_model.page(Filters(rule=rule)).calls] == ["fs_write"]
    assert "fs_write" in [c.tool for c in traces_model.page(Filters(rule=rule.split(".")[0])).calls]
    assert {c.agent for c in traces_model.page(Filters(agent="bot")).calls} == {"bot"}
    outcomes = [c.outcome for c in traces_model.page(Filters(task="T1", denied=True)).calls]
    assert outcomes == ["invalid", "denied"], "newest first"


def test_show_prints_the_task_story_as_a_tree(workspace: tuple[Any, dict[str, Any]]) -> None:
    config, facts = workspace
    result = cli(config, "trace", "show", "T1")  # a task id names its trace
    assert result.returncode == 0, result.stderr
    out = result.stdout
    order = [
        "task.submit",
        "task_claim  worker (worker)",
        "task.claim",
        "fs_edit  worker (worker)  allow tier 2",
        "fs_write  worker (worker)  deny tier",
        "shell_run  worker (worker)  ask tier 3",
        "task.report",
        "task.verify  verification passed",
        "intent.propose",
        "intent.approve",
        "intent.execute",
        f"intent.committed  intent {facts['intent_id'][:12]} committed: merge commit {facts['merge']}",
        f"task.committed  merged into the base branch: merge commit {facts['merge']}",
    ]
    positions = [out.index(marker) for marker in order]
    assert positions == sorted(positions), "the tree follows the ledger's order"
    assert f"[{', '.join(facts['denied_rules'])}]  → denied" in out
    assert f"arguments: {json.dumps({'path': HOSTILE, 'content': 'x'})}" in out
    assert "checkpoint cp-" in out and "(undo: gateway rollback cp-" in out
    assert f"approval {facts['asked_approval']}: pending" in out
    assert "\x1b" not in out and "\\x1b[2Jpasswd" in out, "a terminal escape in an argument is shown, not sent"
    assert "hunter2hunter2" not in out and "API_TOKEN=***" in out, "credential-looking values are masked"


def test_show_session_trace_with_its_approval(workspace: tuple[Any, dict[str, Any]]) -> None:
    config, facts = workspace
    summaries = Traces.for_config(config).list(Filters(agent="bot"))
    result = cli(config, "trace", "show", summaries[0].trace_id[:10])  # a unique prefix is enough
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "session" in out.splitlines()[0]
    assert out.index(f"approval.request  approval {facts['approval']} requested") < out.index(
        f"approval.approved  approval {facts['approval']} approved by alice"
    )
    assert f"approval {facts['approval']}: approved" in out, "the retry names the approval it used"
    assert f"approval {facts['approval']}: pending (now used)" in out, "the asking call shows what became of it"


def test_show_json(workspace: tuple[Any, dict[str, Any]]) -> None:
    config, facts = workspace
    result = cli(config, "trace", "show", "T1", "--json")
    assert result.returncode == 0, result.stderr
    trace = json.loads(result.stdout)
    assert trace["task_id"] == "T1" and trace["kind"] == "task"
    calls = [e for e in trace["entries"] if e["type"] == "call"]
    refused = next(c for c in calls if c["tool"] == "fs_write")
    assert refused["outcome"] == "denied" and refused["rules"] == facts["denied_rules"]
    assert refused["principal"]["role"] == "worker" and refused["reasons"]
    assert refused["arguments"] == {"path": HOSTILE, "content": "x"}
    assert "matches the recorded digest" in refused["arguments_source"]
    commit = next(c for c in calls if c["tool"] == "intent_commit")
    steps = {s["name"]: s for s in commit["steps"]}
    assert steps["intent.committed"]["detail"]["outcome"]["merge_commit"] == facts["merge"]
    submit = next(e for e in trace["entries"] if e["type"] == "step" and e["name"] == "task.submit")
    assert submit["detail"]["manifest"]["allowed_paths"] == ["src/**"]


def test_unknown_trace_is_one_clear_error(workspace: tuple[Any, dict[str, Any]]) -> None:
    config, _ = workspace
    result = cli(config, "trace", "show", "no-such-trace")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.strip().splitlines() == [
        "gateway: no trace 'no-such-trace': give a trace id (or a unique prefix) or a task id"
    ]


def test_render_trace_for_the_demo(workspace: tuple[Any, dict[str, Any]]) -> None:
    config, facts = workspace
    buffer = io.StringIO()
    render_trace(Traces.for_config(config).get("T1"), Console(file=buffer, width=240))
    text = buffer.getvalue()
    assert text.startswith("trace ") and "task T1" in text.splitlines()[0]
    assert f"merge commit {facts['merge']}" in text


def test_empty_workspace_lists_nothing(tmp_path: Path) -> None:
    config = workspace_for_tests(make_repo(tmp_path / "empty"))
    result = cli(config, "trace", "list")
    assert result.returncode == 0 and "no traces match" in result.stdout
    listed = json.loads(cli(config, "trace", "list", "--json").stdout)
    assert listed == {"traces": [], "unknown_tool_only": {"traces": 0, "calls": 0}}


def big_copy(config: Any, path: Path, copies: int) -> SqliteStore:
    """The workspace's store copied to ``path`` with ``copies`` more calls: copies of its own call rows, with new
    seq, call ids and a new trace per 50 (not chained: the review pages read, they do not verify)."""
    with sqlite3.connect(config.store_path) as source, sqlite3.connect(path) as target:
        source.backup(target)
    db = SqliteStore(path)
    append_copies(db, copies)
    return db


def append_copies(db: SqliteStore, copies: int) -> None:
    rows = [json.loads(r["body"]) for r in db.query("SELECT body FROM ledger ORDER BY seq")]
    calls = [r for r in rows if r.get("kind") == "call" and r.get("outcome") != "started"]
    seq = rows[-1]["seq"]
    batch = []
    for i in range(copies):
        seq += 1
        row = {**calls[i % len(calls)], "seq": seq, "call_id": f"copy-{seq}", "trace_id": f"copies-{seq // 50}"}
        batch.append((seq, json.dumps(row), "x", "x", None))
    with db.transaction() as tx:
        tx.executemany("INSERT INTO ledger (seq, body, prev_hash, hash, mac) VALUES (?, ?, ?, ?, ?)", batch)


def counting(monkeypatch: pytest.MonkeyPatch, name: str) -> Counter[str]:
    """Count the calls of gateway.traces.<name>."""
    counts: Counter[str] = Counter()
    real = getattr(traces_module, name)

    def counted(*args: Any) -> Any:
        counts[name] += 1
        return real(*args)

    monkeypatch.setattr(traces_module, name, counted)
    return counts


FILTERS = [
    Filters(),
    Filters(outcome="denied"),
    Filters(outcome="allowed", role="worker"),
    Filters(agent="worker", tool="shell_run"),
    Filters(rule="paths"),
    Filters(tier=3),
    Filters(task="T1", outcome="ok"),
]


def every_call(db: SqliteStore) -> list[Any]:
    """Every call the slow way, the oracle the index must agree with: the whole ledger folded in memory."""
    rows = [json.loads(r["body"]) for r in db.query("SELECT body FROM ledger ORDER BY seq")]
    tasks = {r["id"]: r["trace_id"] for r in db.query("SELECT id, trace_id FROM tasks")}
    return sorted(traces_module._Index.build(rows, tasks).calls.values(), key=lambda c: c.seq, reverse=True)


def test_a_page_of_a_big_ledger_reads_and_masks_only_what_it_shows(
    workspace: tuple[Any, dict[str, Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config, _ = workspace
    db = big_copy(config, tmp_path / "big.db", 5_000)  # rows written past the index: caught up on first read
    traces = Traces(db, config.decision_log_path)
    first = traces.page(size=100)
    shown, decoded = counting(monkeypatch, "_shown"), counting(monkeypatch, "_decode")
    traces = Traces(db, config.decision_log_path)  # a new process: it reads no more than the one before
    first = traces.page(size=100)
    assert first.total > 5_000 and len(first.calls) == 100
    assert shown["_shown"] == 100 and decoded["_decode"] <= 200  # a call's first and final row, nothing else
    again = traces.page(Filters(outcome="denied"), offset=100, size=25)
    assert shown["_shown"] == 125 and decoded["_decode"] <= 250
    append_copies(db, 30)
    after = traces.page(size=50)
    assert shown["_shown"] == 175 and decoded["_decode"] <= 350
    rows = db.query("SELECT max(seq) AS n FROM ledger")[0]["n"]
    assert after.total == first.total + 30 and after.calls[0].call_id == f"copy-{rows}"
    assert again.total > 100 and all(c.outcome == "denied" for c in again.calls)
    keyset = traces.page(size=25, at=after.at, before=after.calls[24].seq)
    assert [c.call_id for c in keyset.calls] == [c.call_id for c in traces.page(size=25, offset=25, at=after.at).calls]

    # the same answers as the whole ledger folded in memory, for every filter and page; one count everywhere
    everything = every_call(db)
    mid = sorted(c.started for c in everything)[len(everything) // 2]
    day = mid.replace(hour=0, minute=0, second=0, microsecond=0)
    ranges = [  # whole days from the count groups, part-days call by call
        Filters(since=mid),
        Filters(until=mid, outcome="denied"),
        Filters(since=mid - timedelta(days=2), until=mid + timedelta(hours=1)),
        Filters(agent="worker", since=day, until=day + timedelta(days=1)),
    ]
    for filters in [*FILTERS, *ranges]:
        matching = [c for c in everything if filters.matches(c)]
        others = [c for c in everything if replace(filters, outcome=None).matches(c)]
        for offset, size in ((0, 25), (4_000, 100)):
            ours = traces.page(filters, offset, size)
            assert [c.call_id for c in ours.calls] == [c.call_id for c in matching[offset : offset + size]], filters
            assert ours.total == len(matching) and ours.outcomes.get("any", 0) == len(others), filters
            if filters.outcome:
                assert ours.outcomes.get(filters.outcome, 0) == ours.total, "the tab counts the rows it shows"
    older = after.at - 1_000  # a view that counts from an older ledger row: the calls after it are taken away
    assert traces.page(at=older).total == len([c for c in everything if c.seq <= older and not c.dry_run])
    listed = {s.trace_id: s for s in traces.list()}
    assert sum(s.calls for s in listed.values()) == len([c for c in everything if not c.dry_run])
    assert traces.get("T1").as_dict() == Traces(db, config.decision_log_path).get("T1").as_dict()
    assert listed[traces.get("T1").trace_id].as_dict() == traces.get("T1").summary.as_dict()


def test_the_index_catches_up_a_batch_at_a_time_and_resumes_after_a_crash(
    workspace: tuple[Any, dict[str, Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ledger from before the index (or rows a tool wrote directly) is indexed a batch per transaction: a crash
    mid-way keeps the batches committed, and the next start finishes from the cursor with the same answers."""
    config, _ = workspace
    db = big_copy(config, tmp_path / "big.db", 3_000)
    indexed = db.query("SELECT seq FROM cursors WHERE name = 'review-index'")[0]["seq"]  # at append time
    real, seen = review_index.index_row, Counter[str]()

    def crashing(tx: Any, row: Any, advance: bool = True) -> None:
        seen["rows"] += 1
        if seen["rows"] == 2_500:
            raise RuntimeError("the process died here")
        real(tx, row, advance)

    monkeypatch.setattr(review_index, "index_row", crashing)
    with pytest.raises(RuntimeError):
        review_index.catch_up(db, batch=1_000)
    assert db.query("SELECT seq FROM cursors WHERE name = 'review-index'")[0]["seq"] == indexed + 2_000
    monkeypatch.setattr(review_index, "index_row", real)
    newest = db.query("SELECT max(seq) AS s FROM ledger")[0]["s"]
    assert review_index.catch_up(db, batch=1_000) == newest - indexed - 2_000
    assert review_index.catch_up(db) == 0
    assert Traces(db).page().total == len([c for c in every_call(db) if not c.dry_run])


def test_pages_are_found_by_index_not_by_scanning_the_ledger(
    workspace: tuple[Any, dict[str, Any]], tmp_path: Path
) -> None:
    """The plans of a page's queries: each filter narrows by an index of the review tables."""
    config, _ = workspace
    db = big_copy(config, tmp_path / "big.db", 1_000)
    Traces(db).page()
    for filters in FILTERS[1:]:
        where, params = trace_rows.call_where(filters, 10**9)
        sql = f"SELECT call_id FROM calls WHERE {where} ORDER BY seq DESC LIMIT 25"
        plan = " ".join(str(r["detail"]) for r in db.query(f"EXPLAIN QUERY PLAN {sql}", params))
        assert "USING" in plan and "ledger" not in plan, (filters, plan)


def test_shown_calls_are_masked_and_carry_their_arguments(workspace: tuple[Any, dict[str, Any]]) -> None:
    config, _ = workspace
    page = Traces.for_config(config).page(Filters(agent="worker", tool="shell_run"), size=500)
    secret = next(c for c in page.calls if "API_TOKEN" in json.dumps(c.arguments))
    assert "hunter2" not in json.dumps(secret.as_dict()) and secret.effects_summary
    assert secret.arguments_source and "decision log" in secret.arguments_source


@pytest.mark.anyio
async def test_dry_runs_are_kept_apart_from_an_agents_real_calls(tmp_path: Path) -> None:
    """`gateway check --agent w1` is a dry run: recorded (kind "check") in a trace of its own, never in w1's task
    trace as one of w1's denied calls; listings hide dry runs unless asked for, and mark them where shown."""
    config = workspace_for_tests(make_repo(tmp_path / "repo"))
    gateway = Gateway(config)
    manifest = {"task_id": "T1", "objective": "o", "allowed_paths": ["src/**"], "verification": ["true"]}
    async with inproc_client(gateway, token(config, "planner", agent="planner")) as client:
        assert not (await client.call_tool("task_submit", {"manifest": manifest})).is_error
    async with inproc_client(gateway, token(config, "worker", agent="w1")) as client:
        assert not (await client.call_tool("task_claim", {"task_id": "T1"})).is_error
    checked = cli(config, "check", "--role", "worker", "--agent", "w1", "--tool", "fs_write", "--args",
                  json.dumps({"path": "docs/x.md", "content": "x"}))  # fmt: skip
    assert checked.returncode == 4, checked.stderr  # denied: outside the task's allowed paths
    traces = Traces.for_config(config)
    task_trace = traces.get("T1")
    assert [c.tool for c in task_trace.calls()] == ["task_claim"], "the dry run is not w1's call in T1's trace"
    assert all(s.kind != "dry run" for s in traces.list()), "hidden by default"
    [dry] = [s for s in traces.list(Filters(checks=True)) if s.kind == "dry run"]
    [call] = traces.get(dry.trace_id).calls()
    assert call.dry_run and call.kind == "check" and call.agent == "w1" and call.outcome == "denied"
    assert not any(c.dry_run for c in traces.page(Filters(agent="w1")).calls)
    assert [c.call_id for c in traces.page(Filters(agent="w1", checks=True)).calls if c.dry_run] == [call.call_id]
    assert traces.page(Filters(agent="w1")).outcomes.get("denied") is None, "a dry run counts in no tab"
    listed = cli(config, "trace", "list", "--checks")
    shown = cli(config, "trace", "show", dry.trace_id)
    assert "dry run" in listed.stdout and "dry run" not in cli(config, "trace", "list").stdout
    assert "DRY RUN fs_write" in shown.stdout, shown.stdout


def synthetic_calls(store: Any, calls: int) -> None:
    """``calls`` calls appended to a store's ledger through the review index as an append writes them (not chained:
    the review reads, it does not verify): every 7th a dry run, every 3rd with a started row first, rules that
    share prefixes (a call with two ``tiers.`` rules counts once under ``tiers``)."""
    mix = [
        ("fs_read", "allow", 1, "ok", ["roles.granted", "tiers.read"]),
        ("shell_run", "allow", 1, "ok", ["tiers.create", "tiers.read_only_command"]),
        ("fs_write", "deny", 3, "denied", ["paths.out_of_scope"]),
        ("shell_run", "ask", 3, "asked", ["tiers.network", "paths.outside_workspace"]),
    ]
    seq = int(store.query("SELECT COALESCE(max(seq), 0) AS s FROM ledger")[0]["s"])
    with store.transaction() as tx:
        for i in range(calls):
            tool, action, tier, outcome, rules = mix[i % len(mix)]
            final = {
                "time": f"2026-10-{1 + i // 200:02d}T{(i // 10) % 20:02d}:{i % 60:02d}:00.000000+00:00",
                "kind": "check" if i % 7 == 3 else "call",
                "call_id": f"syn-{i}",
                "trace_id": f"syn-trace-{i // 20}",
                "principal": {"agent": f"a{i % 3}", "role": "developer", "task": None},
                "tool": tool,
                "decision": {"action": action, "tier": tier, "rules": rules, "reasons": ["r"] * len(rules)},
                "outcome": outcome,
                "detail": {},
            }
            for row in ([{**final, "outcome": "started"}] if i % 3 == 0 else []) + [final]:
                seq += 1
                row = {**row, "seq": seq}
                tx.execute(
                    "INSERT INTO ledger (seq, body, prev_hash, hash, mac) VALUES (?, ?, ?, ?, ?)",
                    (seq, json.dumps(row), "x", "x", None),
                )
                review_index.index_row(tx, row)


@pytest.mark.both_stores
def test_deep_pages_and_rule_counts_agree_with_the_calls_one_by_one(
    config: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A page by number deeper than a block (found through ``call_blocks``) holds the calls the whole ledger
    folded in memory gives at that offset, with and without dry runs, at an older ``at`` and past the end; the
    rule filter's counts (sums over ``rule_counts``) equal the calls counted one by one, on either store."""
    shift = 7  # blocks of 128 ledger rows (not 4,096), so a few hundred calls span several on either store
    monkeypatch.setattr(review_index, "BLOCK_SHIFT", shift)
    monkeypatch.setattr(trace_rows, "BLOCK_SHIFT", shift)
    monkeypatch.setattr(trace_rows, "SEEK_FROM", 1 << shift)
    gateway = Gateway(config)
    synthetic_calls(gateway.db, 600)  # 800 ledger rows: seven blocks
    traces = Traces(gateway.db)
    everything = every_call(gateway.db)  # the oracle: the whole ledger folded in memory, newest first
    newest = traces.page(size=1).at
    for checks, at in ((False, newest), (True, newest), (False, newest - 170)):
        shown = [c for c in everything if c.seq <= at and (checks or not c.dry_run)]
        for offset in (1 << shift, 300, 444, len(shown) - 10, len(shown) + 5):
            page = traces.page(Filters(checks=checks), offset=offset, size=30, at=at)
            assert [c.call_id for c in page.calls] == [c.call_id for c in shown[offset : offset + 30]], (checks, at)
            assert page.total == len(shown)
    for rule in ("tiers", "tiers.create", "paths", "roles", "tiers.", "tier"):
        for filters in (
            Filters(rule=rule),
            Filters(rule=rule, agent="a1", outcome="ok"),
            Filters(rule=rule, checks=True),
        ):
            matching = [c for c in everything if filters.matches(c)]
            others = [c for c in everything if replace(filters, outcome=None).matches(c)]
            page = traces.page(filters, size=20)
            assert page.total == len(matching) and page.outcomes.get("any", 0) == len(others), filters
            assert [c.call_id for c in page.calls] == [c.call_id for c in matching[:20]], filters
    commands = [c for c in everything if c.tool == "shell_run" and not c.dry_run]  # two tiers.* rules each
    assert traces.page(Filters(rule="tiers", tool="shell_run")).total == len(commands), "a call counts once"
