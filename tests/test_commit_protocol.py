"""The commit protocol: intents executed exactly once, across replays, concurrency and a SIGKILL."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import (
    add_role,
    client_of,
    commit_then_kill,
    http_client,
    http_gateway,
    killable_gateway,
    ledger_rows,
    reconfigure,
    text_of,
    token,
)

from gateway.process import gateway_cli
from gateway.repo import Repo
from gateway.runtime import Gateway
from gateway.store import open_store

pytestmark = [pytest.mark.anyio, pytest.mark.both_stores]


def merges(repo: Path) -> list[str]:
    return Repo(repo).run("log", "--merges", "--format=%H %s", "main").splitlines()


async def verify_task(gateway: Gateway, verification: list[str] | None = None) -> None:
    """In the running ``gateway``: planner submits T1, a worker makes answer() return 42 and reports, the
    verifier passes it."""
    config = gateway.config
    checks = verification or ["grep -q 'return 42' src/app.py"]
    manifest = {"task_id": "T1", "objective": "answer 42", "allowed_paths": ["src/**"], "verification": checks}
    async with client_of(gateway, token(config, "planner", agent="planner")) as client:
        assert not (await client.call_tool("task_submit", {"manifest": manifest})).is_error
    async with client_of(gateway, token(config, "worker", agent="worker")) as client:
        await client.call_tool("task_claim", {"task_id": "T1"})
        await client.call_tool("fs_edit", {"path": "src/app.py", "old_string": "41", "new_string": "42"})
        record = {"task_id": "T1", "status": "done", "files_changed": ["src/app.py"]}
        assert not (await client.call_tool("task_report", {"record": record})).is_error
    async with client_of(gateway, token(config, "verifier", agent="verifier")) as client:
        assert (await client.call_tool("verify_run", {"task_id": "T1"})).structured_content["passed"]


def post_merge_verifying(config: Any) -> Callable[[], bool]:
    """Whether a merge's post-merge command was judged (recorded): it is about to run or running."""
    store = open_store(config)
    query = "SELECT 1 FROM ledger WHERE json_extract(body, '$.kind') = 'verify' AND json_extract(body, '$.tool') = ?"
    return lambda: bool(store.query(query, ("intent_commit",)))


async def approve_merge(gateway: Gateway, **kwargs: Any) -> str:
    """In the running ``gateway``: T1 verified (verify_task), its merge proposed (twice: one intent) and
    approved; the intent's id."""
    config = gateway.config
    await verify_task(gateway, **kwargs)
    async with client_of(gateway, token(config, "planner", agent="planner")) as client:
        proposed = await client.call_tool("intent_propose", {"task_id": "T1", "action": "merge", "arguments": {}})
        again = await client.call_tool("intent_propose", {"task_id": "T1", "action": "merge", "arguments": {}})
    intent_id = proposed.structured_content["intent_id"]
    assert again.structured_content["intent_id"] == intent_id and len(intent_id) == 64
    async with client_of(gateway, token(config, "verifier", agent="verifier")) as client:
        approved = await client.call_tool("intent_approve", {"intent_id": intent_id})
    assert approved.structured_content["state"] == "approved", text_of(approved)
    return intent_id


async def approved_merge(config: Any, **kwargs: Any) -> tuple[Gateway, str]:
    """approve_merge on a gateway started for it alone (stopped again when this returns)."""
    gateway = Gateway(config)
    async with gateway.running():
        return gateway, await approve_merge(gateway, **kwargs)


async def test_commit_twice_in_a_row_gives_one_merge(config: Any, repo: Path) -> None:
    gateway = Gateway(config)
    async with gateway.running():
        intent_id = await approve_merge(gateway)
        async with client_of(gateway, token(config, "committer", agent="committer")) as client:
            first = await client.call_tool("intent_commit", {"intent_id": intent_id})
            second = await client.call_tool("intent_commit", {"intent_id": intent_id})
    assert first.structured_content["state"] == "committed", text_of(first)
    # the first took a tier-2 checkpoint of the workspace before merging; the replay changed nothing
    recorded = {k: v for k, v in first.structured_content.items() if k != "checkpoint"}
    assert first.structured_content["checkpoint"]["id"] in text_of(first)
    assert second.structured_content == {**recorded, "replayed": True}
    assert len(merges(repo)) == 1
    merge = first.structured_content["outcome"]["merge_commit"]
    assert f"Gateway-Intent: {intent_id}" in Repo(repo).run("log", "-1", "--format=%B", merge)
    assert "return 42" in (repo / "src" / "app.py").read_text()
    assert gateway.board.get("T1")["state"] == "committed"
    steps = [r.detail["step"] for r in ledger_rows(gateway, kind="intent")]
    assert steps == ["propose", "approve", "execute", "catch_up_planned", "committed"]  # planned before publishing


async def test_twenty_concurrent_commits_give_one_merge(config: Any, repo: Path) -> None:
    _, intent_id = await approved_merge(config)
    bearers = [token(config, "committer", agent=f"committer-{i}") for i in range(20)]
    outcomes: list[dict[str, Any]] = []
    with http_gateway(config.source) as url:

        async def commit(bearer: str) -> None:
            async with http_client(url, bearer) as client:
                outcomes.append((await client.call_tool("intent_commit", {"intent_id": intent_id})).structured_content)

        async with anyio.create_task_group() as tg:
            for bearer in bearers:
                tg.start_soon(commit, bearer)
    assert len(outcomes) == 20 and all(o["state"] == "committed" for o in outcomes)
    assert len({o["outcome"]["merge_commit"] for o in outcomes}) == 1
    assert sum(1 for o in outcomes if not o.get("replayed")) == 1
    assert len(merges(repo)) == 1


async def test_a_commit_waits_for_the_peer_holding_the_intent_even_before_it_begins(config: Any, repo: Path) -> None:
    """A peer that has taken the intent's lease but not yet moved it to "executing" is still its executor: a
    concurrent commit waits for it (here it lets go without running), never answers the unchanged "approved"."""
    from gateway.commit.executor import intent_lease
    from gateway.ledger.leases import new_holder
    from gateway.types import Principal

    gateway = Gateway(config)
    answers: list[dict[str, Any]] = []

    async def no_progress(progress: float, total: float | None, message: str | None) -> None:
        return None

    async with gateway.running(), anyio.create_task_group() as tg:
        intent_id = await approve_merge(gateway)
        leases, peer = gateway.committer.queue.leases, new_holder()
        assert leases.try_acquire(intent_lease(intent_id), peer)

        async def commit() -> None:
            principal = Principal(agent="committer", role="committer")
            answers.append(await gateway.committer.commit(intent_id, principal, no_progress))

        tg.start_soon(commit)
        with anyio.move_on_after(1):  # long enough for a wrong early answer to arrive (a right one never does)
            while not answers:
                await anyio.sleep(0.01)
        assert answers == [], "answered while the peer still held the intent"
        leases.release(intent_lease(intent_id), peer)
    assert answers[0]["state"] == "committed" and not answers[0].get("replayed"), answers
    assert len(merges(repo)) == 1


@pytest.mark.slow
async def test_gateway_killed_mid_commit_reconciles_to_one_merge(config: Any, repo: Path) -> None:
    """SIGKILL while the post-merge verification runs (after the merge commit, before "committed")."""
    check = "grep -q 'return 42' src/app.py && sleep 5"
    _, intent_id = await approved_merge(config, verification=[check])
    with killable_gateway(config.source) as (url, kill):
        await commit_then_kill(config, url, kill, intent_id, post_merge_verifying(config))
    killed = Gateway(config)
    assert killed.intents.get(intent_id)["state"] == "executing"
    assert merges(repo) == [], "a merge is published only after its verification passed"
    with http_gateway(config.source) as restarted:  # a fresh gateway recovers and reconciles on start
        async with http_client(restarted, token(config, "committer")) as client:
            replay = (await client.call_tool("intent_commit", {"intent_id": intent_id})).structured_content
    assert replay["state"] == "committed", replay
    assert len(merges(repo)) == 1
    assert Gateway(config).board.get("T1")["state"] == "committed"
    assert Gateway(config).ledger.verify().ok


async def test_failing_post_merge_verification_is_never_published(config: Any, repo: Path) -> None:
    gateway = Gateway(config)
    async with gateway.running():
        intent_id = await approve_merge(gateway, verification=["grep -q 'return 42' src/app.py", "test ! -f STOP"])
        (repo / "STOP").write_text("main moved on after the task was verified\n")
        Repo(repo).run("add", "STOP")
        Repo(repo).run("commit", "-q", "-m", "main moves on")
        before = Repo(repo).run("rev-parse", "main").strip()
        async with client_of(gateway, token(config, "committer")) as client:
            result = await client.call_tool("intent_commit", {"intent_id": intent_id})
    outcome = result.structured_content
    assert result.is_error and outcome["state"] == "failed"
    assert outcome["outcome"]["failed_command"] == "test ! -f STOP" and outcome["outcome"]["published"] is False
    assert Repo(repo).run("rev-parse", "main").strip() == before, "main never moved"
    assert merges(repo) == [] and "return 41" in (repo / "src" / "app.py").read_text()
    assert [r.detail["step"] for r in ledger_rows(gateway, kind="intent")][-1] == "failed"
    task = gateway.board.get("T1")
    assert task["state"] == "open" and "not merged" in task["note"], "back to a worker, for a new attempt"
    assert not (repo / ".git" / "MERGE_HEAD").exists()
    assert Repo(repo).run("status", "--porcelain") == "?? gateway.yaml\n"


async def test_protocol_refusals(config: Any, repo: Path) -> None:
    gateway = Gateway(config)
    async with gateway.running():
        await verify_task(gateway)
        planner, verifier = token(config, "planner"), token(config, "verifier")
        worker, committer = token(config, "worker", agent="worker"), token(config, "committer")
        async with client_of(gateway, planner) as client:
            proposed = await client.call_tool("intent_propose", {"task_id": "T1", "action": "merge", "arguments": {}})
            bad_action = await client.call_tool(
                "intent_propose", {"task_id": "T1", "action": "deploy", "arguments": {}}
            )
            bad_tag = await client.call_tool(
                "intent_propose", {"task_id": "T1", "action": "tag", "arguments": {"name": "--force"}}
            )
            planner_approves = await client.call_tool(
                "intent_approve", {"intent_id": proposed.structured_content["intent_id"]}
            )
        intent_id = proposed.structured_content["intent_id"]
        assert bad_action.is_error and "'action'" in text_of(bad_action)
        assert bad_tag.is_error and "name" in text_of(bad_tag)
        assert planner_approves.is_error and planner_approves.structured_content["error"]["code"] == "unknown_tool"
        async with client_of(gateway, committer) as client:
            unapproved = await client.call_tool("intent_commit", {"intent_id": intent_id})
            unknown = await client.call_tool("intent_commit", {"intent_id": "0" * 64})
        assert unapproved.is_error and "commit.not_approved" in unapproved.structured_content["decision"]["rules"]
        assert unknown.is_error and "missing" in text_of(unknown)
        async with client_of(gateway, verifier) as client:
            await client.call_tool("intent_approve", {"intent_id": intent_id})
        async with client_of(gateway, worker) as client:
            not_committer = await client.call_tool("intent_commit", {"intent_id": intent_id})
        assert not_committer.is_error and not_committer.structured_content["error"]["code"] == "unknown_tool"
        assert merges(repo) == []
        denied = [
            r for r in ledger_rows(gateway) if r.tool.startswith("intent_") and r.outcome in ("denied", "invalid")
        ]
        assert len(denied) >= 6


async def test_quarantined_task_cannot_be_approved(config: Any) -> None:
    gateway = Gateway(config)
    async with gateway.running():
        manifest = {"task_id": "T1", "objective": "x", "allowed_paths": ["src/**"], "verification": ["true"]}
        async with client_of(gateway, token(config, "planner")) as client:
            await client.call_tool("task_submit", {"manifest": manifest})
            proposed = await client.call_tool("intent_propose", {"task_id": "T1", "action": "merge", "arguments": {}})
        async with client_of(gateway, token(config, "worker", agent="w")) as client:
            await client.call_tool("task_claim", {"task_id": "T1"})
            ran = await client.call_tool(
                "shell_run", {"command": "python3 -c \"import os; os.mkdir('docs'); open('docs/x','w').write('x')\""}
            )
            assert not ran.is_error, text_of(ran)
            await client.call_tool("task_report", {"record": {"task_id": "T1", "status": "done"}})
        async with client_of(gateway, token(config, "verifier")) as client:
            refused = await client.call_tool("intent_approve", {"intent_id": proposed.structured_content["intent_id"]})
        assert refused.is_error and "quarantined" in text_of(refused)


@pytest.mark.one_store  # its subject is git, tools or a page, not the store: run once
async def test_commit_class_upstream_tool_runs_only_through_intent_commit(config: Any, repo: Path) -> None:
    echo = str(Path(__file__).parent / "servers" / "echo_server.py")
    add_role(config, "operator", ["*"], max_tier=2, commit=True)
    config = reconfigure(
        config, upstreams={"deploy": {"command": sys.executable, "args": [echo], "commit_class": ["echo"]}}
    )
    gateway = Gateway(config)
    async with gateway.running():
        await verify_task(gateway)
        async with client_of(gateway, token(config, "operator")) as client:
            direct = await client.call_tool("deploy__echo", {"text": "ship it"})
            proposed = await client.call_tool(
                "intent_propose",
                {
                    "task_id": "T1",
                    "action": "upstream",
                    "arguments": {"tool": "deploy__echo", "arguments": {"text": "ship"}},
                },
            )
        assert direct.is_error and direct.structured_content["decision"]["rules"] == ["commit.direct_call"]
        intent_id = proposed.structured_content["intent_id"]
        async with client_of(gateway, token(config, "verifier")) as client:
            await client.call_tool("intent_approve", {"intent_id": intent_id})
        async with client_of(gateway, token(config, "committer")) as client:
            first = await client.call_tool("intent_commit", {"intent_id": intent_id})
            again = await client.call_tool("intent_commit", {"intent_id": intent_id})
        assert first.structured_content["outcome"]["result"] == "ship"
        assert again.structured_content["replayed"]


def test_ledger_verify_names_the_edited_row(config: Any) -> None:
    gateway = Gateway(config)
    for outcome in ["ok", "denied", "ok"]:
        gateway.ledger.append({"outcome": outcome})
    assert gateway_cli(config, "ledger", "verify", timeout=30).returncode == 0
    body = json.loads(gateway.db.query("SELECT body FROM ledger WHERE seq = 2")[0]["body"])
    body["outcome"] = "ok"
    with gateway.db.transaction() as tx:
        tx.execute(
            "UPDATE ledger SET body = ? WHERE seq = 2", (json.dumps(body, sort_keys=True, separators=(",", ":")),)
        )
    broken = gateway_cli(config, "ledger", "verify", timeout=30)
    assert broken.returncode == 1
    assert json.loads(broken.stdout)["first_bad"] == 2 and "seq 2" in broken.stderr
