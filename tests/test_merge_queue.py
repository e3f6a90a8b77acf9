"""The merge queue and recovery, with real git and real gateway processes: merges one at a time in the
gateway's own worktree, published by compare-and-swap; leftovers of a crash cleared; failed merges retried
as new attempts; dependents built on their dependencies' merged work."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import (
    commit_then_kill,
    http_client,
    http_gateway,
    inproc_client,
    kill_when,
    killable_gateway,
    ledger_rows,
    make_repo,
    text_of,
    token,
)
from mcp import Client
from test_locks import hold_open, release

from gateway.commit.checkout import Checkout
from gateway.ledger.leases import Leases
from gateway.locks import HOST
from gateway.notify import notice
from gateway.process import gateway_cli
from gateway.repo import Repo
from gateway.runtime import Gateway
from gateway.server import build_server
from gateway.store import open_store
from gateway.tasks.worktrees import git_dir

pytestmark = [pytest.mark.anyio, pytest.mark.both_stores]


@asynccontextmanager
async def started(config: Any) -> AsyncIterator[Gateway]:
    gateway = Gateway(config)
    async with gateway.running():
        yield gateway


def client(gateway: Gateway, bearer: str) -> Client:
    """A real SDK client of a gateway the test keeps running (``async with gateway.running()``): one start of
    its decision workers for the whole test, not one per client."""
    return Client(build_server(gateway, token=bearer))


async def call(gateway: Gateway, bearer: str, tool: str, arguments: dict[str, Any]) -> Any:
    async with client(gateway, bearer) as session:
        return await session.call_tool(tool, arguments)


async def submit(gateway: Gateway, task_id: str, paths: list[str], checks: list[str], **extra: Any) -> Any:
    manifest = {"task_id": task_id, "objective": f"do {task_id}", "allowed_paths": paths, "verification": checks}
    result = await call(
        gateway, token(gateway.config, "planner", agent="planner"), "task_submit", {"manifest": {**manifest, **extra}}
    )
    assert not result.is_error, text_of(result)
    return result.structured_content


async def work(gateway: Gateway, task_id: str, files: dict[str, str], agent: str | None = None) -> dict[str, Any]:
    """A worker claims the task, writes the files and reports done; answers the claim."""
    async with client(gateway, token(gateway.config, "worker", agent=agent or f"worker-{task_id}")) as worker:
        claim = await worker.call_tool("task_claim", {"task_id": task_id})
        assert not claim.is_error, text_of(claim)
        for path, content in files.items():
            written = await worker.call_tool("fs_write", {"path": path, "content": content})
            assert not written.is_error, text_of(written)
        record = {"task_id": task_id, "status": "done", "files_changed": sorted(files)}
        reported = await worker.call_tool("task_report", {"record": record})
        assert not reported.is_error, text_of(reported)
    return claim.structured_content


async def approve(gateway: Gateway, task_id: str) -> str:
    """The verifier passes the task, the planner proposes its merge, the verifier approves it: the intent id."""
    verifier = token(gateway.config, "verifier", agent="verifier")
    verified = await call(gateway, verifier, "verify_run", {"task_id": task_id})
    assert verified.structured_content["passed"], text_of(verified)
    proposed = await call(
        gateway,
        token(gateway.config, "planner", agent="planner"),
        "intent_propose",
        {"task_id": task_id, "action": "merge", "arguments": {}},
    )
    intent_id = proposed.structured_content["intent_id"]
    approved = await call(gateway, verifier, "intent_approve", {"intent_id": intent_id})
    assert approved.structured_content["state"] == "approved", text_of(approved)
    return intent_id


async def commit(gateway: Gateway, intent_id: str) -> Any:
    committer = token(gateway.config, "committer", agent="committer")
    return await call(gateway, committer, "intent_commit", {"intent_id": intent_id})


def commit_outside(repo: Path, name: str) -> None:
    """A person commits a new file to main, in their checkout, outside the gateway."""
    (repo / name).write_text("a person's commit\n")
    Repo(repo).run("add", name)
    Repo(repo).run("commit", "-q", "-m", f"add {name}")


def merges(repo: Path) -> list[str]:
    return Repo(repo).run("log", "--merges", "--format=%H", "main").split()


def assert_usable(repo: Path) -> None:
    """Nothing half-done in the user's checkout: no merge in progress, no lock, nothing but gateway.yaml new."""
    git = repo / ".git"
    assert not (git / "MERGE_HEAD").exists() and not (git / "index.lock").exists()
    assert Repo(repo).run("status", "--porcelain") == "?? gateway.yaml\n"


@pytest.mark.slow
async def test_twenty_different_intents_committed_at_once_from_two_processes_all_land(config: Any, repo: Path) -> None:
    async with started(config) as gateway:
        names = [f"T{i:02d}" for i in range(20)]
        intents = []
        for i, name in enumerate(names):
            await submit(gateway, name, [f"src/f{i}.py"], [f"test -f src/f{i}.py"])
            await work(gateway, name, {f"src/f{i}.py": f"VALUE = {i}\n"})
            intents.append(await approve(gateway, name))
        outcomes: list[dict[str, Any]] = []
        with http_gateway(config.source) as first, http_gateway(config.source) as second:

            async def run(url: str, intent_id: str, agent: str) -> None:
                async with http_client(url, token(config, "committer", agent=agent)) as session:
                    result = await session.call_tool("intent_commit", {"intent_id": intent_id})
                    outcomes.append(result.structured_content)

            async with anyio.create_task_group() as tg:
                for i, intent_id in enumerate(intents):
                    tg.start_soon(run, (first, second)[i % 2], intent_id, f"committer-{i}")
        assert len(outcomes) == 20
        unsettled = [o for o in outcomes if o.get("state") != "committed"]  # an error result has no state
        assert unsettled == []
        assert len(merges(repo)) == 20
        # one at a time: every merge's first parent is the one before it, main is never rewound
        first_parents = Repo(repo).run("rev-list", "--first-parent", "--merges", "main").split()
        assert len(first_parents) == 20
        assert all((repo / "src" / f"f{i}.py").read_text() == f"VALUE = {i}\n" for i in range(20)), "checkout caught up"
        assert_usable(repo)
        assert {o["outcome"]["workspace"]["state"] for o in outcomes} == {"updated"}
        assert open_store(config).query("SELECT * FROM leases") == []
        assert Gateway(config).ledger.verify().ok


async def test_conflicting_intent_is_retried_as_a_new_attempt_and_lands(config: Any, repo: Path) -> None:
    async with started(config) as gateway:
        await submit(gateway, "T1", ["src/app.py"], ["grep -q 'return 42' src/app.py"])
        await submit(gateway, "T2", ["src/app.py"], ["grep -q 'return 43' src/app.py"], max_attempts=3)
        await work(gateway, "T1", {"src/app.py": "def answer():\n    return 42\n"})
        await work(gateway, "T2", {"src/app.py": "def answer():\n    return 43\n"})
        first, second = await approve(gateway, "T1"), await approve(gateway, "T2")
        assert (await commit(gateway, first)).structured_content["state"] == "committed"
        main = Repo(repo).run("rev-parse", "main").strip()

        conflicted = await commit(gateway, second)
        outcome = conflicted.structured_content
        assert conflicted.is_error and outcome["state"] == "failed", outcome
        assert outcome["outcome"]["conflicts"] == ["src/app.py"] and outcome["outcome"]["published"] is False
        assert Repo(repo).run("rev-parse", "main").strip() == main, "a conflict publishes nothing"
        assert_usable(repo)
        task = gateway.board.get("T2")
        assert task["state"] == "open" and task["failures"] == 1 and "not merged" in task["note"]
        assert (await commit(gateway, second)).structured_content["replayed"], "the failed intent stays failed"

        # attempt 2 starts clean from main as it is now (with T1's merge); attempt 1 is kept under a ref
        redo = {"src/app.py": "def answer():\n    return 43  # after T1\n"}
        claim = await work(gateway, "T2", redo, agent="worker-b")
        assert claim["claim"]["attempt"] == 2
        saved = Repo(repo).run("show", "refs/gateway/attempts/T2/1:src/app.py")
        assert "return 43\n" in saved
        assert main in Repo(repo).run("rev-list", "task/T2").split(), "attempt 2 is built on T1's merge"
        retry = await approve(gateway, "T2")
        assert retry != second, "a new attempt, a new intent id"
        landed = await commit(gateway, retry)
        assert landed.structured_content["state"] == "committed", text_of(landed)
        assert "return 43  # after T1" in (repo / "src" / "app.py").read_text()
        assert len(merges(repo)) == 2
        assert_usable(repo)
        steps = [r.detail["action"] for r in ledger_rows(gateway, kind="task") if r.detail["task_id"] == "T2"]
        assert "merge_failed" in steps and "attempt_saved" in steps


async def test_an_intent_of_an_earlier_attempt_cannot_be_approved(config: Any, repo: Path) -> None:
    async with started(config) as gateway:
        await submit(gateway, "T1", ["src/app.py"], ["grep -q 'return 42' src/app.py", "test ! -f STOP"])
        await work(gateway, "T1", {"src/app.py": "def answer():\n    return 42\n"})
        stale = await approve(gateway, "T1")
        commit_outside(repo, "STOP")
        assert (await commit(gateway, stale)).structured_content["state"] == "failed"
        (repo / "STOP").unlink()
        Repo(repo).run("commit", "-qam", "main moves back")
        await work(gateway, "T1", {"src/app.py": "def answer():\n    return 42\n"}, agent="worker-b")
        await call(gateway, token(config, "verifier"), "verify_run", {"task_id": "T1"})
        again = await call(gateway, token(config, "verifier"), "intent_approve", {"intent_id": stale})
        assert again.is_error and "failed" in text_of(again)


async def test_dependent_task_starts_from_its_dependency_merged_work(config: Any, repo: Path) -> None:
    async with started(config) as gateway:
        await submit(gateway, "T1", ["src/lib.py"], ["test -f src/lib.py"])
        # submitted before T1 merged: its base then lacked src/lib.py
        await submit(gateway, "T2", ["src/use.py"], ["test -f src/lib.py", "test -f src/use.py"], depends_on=["T1"])
        listed = await call(gateway, token(config, "planner"), "task_list", {})
        waiting = {t["task_id"]: t["waiting_for"] for t in listed.structured_content["tasks"]}
        assert waiting["T2"] == {"T1": "open"}
        await work(gateway, "T1", {"src/lib.py": "LIB = 1\n"})
        assert (await commit(gateway, await approve(gateway, "T1"))).structured_content["state"] == "committed"
        await work(gateway, "T2", {"src/use.py": "from lib import LIB\n"})
        worktree = Path(gateway.board.get("T2")["worktree"])
        assert (worktree / "src" / "lib.py").read_text() == "LIB = 1\n", "the dependency's merged work is there"
        assert (await commit(gateway, await approve(gateway, "T2"))).structured_content["state"] == "committed"
        assert (repo / "src" / "use.py").exists() and (repo / "src" / "lib.py").exists()


async def test_dependents_learn_that_their_dependency_failed_to_merge(config: Any, repo: Path) -> None:
    async with started(config) as gateway:
        await submit(gateway, "T1", ["src/lib.py"], ["test -f src/lib.py", "test ! -f STOP"], max_attempts=1)
        await submit(gateway, "T2", ["src/use.py"], ["true"], depends_on=["T1"])
        await work(gateway, "T1", {"src/lib.py": "LIB = 1\n"})
        intent_id = await approve(gateway, "T1")
        commit_outside(repo, "STOP")
        assert (await commit(gateway, intent_id)).structured_content["state"] == "failed"
        assert gateway.board.get("T1")["state"] == "blocked"
        told = [r for r in ledger_rows(gateway, kind="task") if r.detail["action"] == "dependency_failed"]
        assert [(r.detail["task_id"], r.detail["dependency"], r.detail["state"]) for r in told] == [
            ("T2", "T1", "blocked")
        ]
        listed = await call(gateway, token(config, "planner"), "task_list", {})
        waiting = {t["task_id"]: t["waiting_for"] for t in listed.structured_content["tasks"]}
        assert waiting["T2"] == {"T1": "blocked"}


@pytest.mark.one_store  # its subject is git, tools or a page, not the store: run once
async def test_stale_locks_do_not_wedge_anything(config: Any, repo: Path) -> None:
    """A stale index.lock in the user's checkout is the user's: left alone, and the merge is deferred (moving
    main under a checkout that cannot follow would leave it behind); once it is gone the merge lands. Stale
    locks in the gateway's own worktree and on main are crash leftovers: cleared."""
    async with started(config) as gateway:
        await submit(gateway, "T1", ["src/app.py"], ["grep -q 'return 42' src/app.py"])
        await work(gateway, "T1", {"src/app.py": "def answer():\n    return 42\n"})
        intent_id = await approve(gateway, "T1")
        old = time.time() - 3600
        user_lock = repo / ".git" / "index.lock"
        user_lock.write_text("")
        integration = git_dir(config.worktrees / "_integration")
        assert integration is not None
        for lock in (integration / "index.lock", repo / ".git" / "refs" / "heads" / "main.lock"):
            lock.write_text("")
            os.utime(lock, (old, old))
        result = await commit(gateway, intent_id)
        assert result.structured_content["state"] == "approved", text_of(result)
        assert "index.lock" in result.structured_content["outcome"]["deferred"] and merges(repo) == []
        assert user_lock.exists(), "the user's lock is not the gateway's to remove"
        cleaned = [c for r in ledger_rows(gateway, kind="recovery") for c in r.detail["cleaned"]]
        assert any("index.lock" in c for c in cleaned) and any("main.lock" in c for c in cleaned)
        user_lock.unlink()
        landed = await commit(gateway, intent_id)
        assert landed.structured_content["outcome"]["workspace"] == {"state": "updated"}, text_of(landed)
        assert "return 42" in (repo / "src" / "app.py").read_text()
        assert_usable(repo)


@pytest.mark.one_store  # its subject is git, tools or a page, not the store: run once
async def test_a_ref_lock_held_by_a_live_git_defers_the_intent(config: Any, repo: Path) -> None:
    """A lock on main that a live git holds open (it is updating it): the lock stays, the merge is not
    published, the intent stays approved (not the work's fault) and a later commit lands it."""
    async with started(config) as gateway:
        await submit(gateway, "T1", ["src/app.py"], ["grep -q 'return 42' src/app.py"])
        await work(gateway, "T1", {"src/app.py": "def answer():\n    return 42\n"})
        intent_id = await approve(gateway, "T1")
        lock = repo / ".git" / "refs" / "heads" / "main.lock"
        holder = hold_open(lock)
        try:
            deferred = await commit(gateway, intent_id)
        finally:
            release(holder)
        assert deferred.is_error and deferred.structured_content["state"] == "approved"
        assert "could not be updated" in deferred.structured_content["outcome"]["deferred"]
        assert merges(repo) == [] and gateway.board.get("T1")["state"] == "verified"
        assert lock.exists(), "a live git's lock is never removed"
        lock.unlink()
        assert (await commit(gateway, intent_id)).structured_content["state"] == "committed"
        assert len(merges(repo)) == 1


def big_repo(repo: Path, files: int) -> None:
    """Thousands of files, so that a merge takes long enough to be killed inside."""
    for i in range(files):
        path = repo / "gen" / f"d{i // 500}" / f"m{i}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"X = {i}\n")
    Repo(repo).run("add", "gen")
    Repo(repo).run("commit", "-q", "-m", "generated")


@pytest.mark.one_store  # its subject is git, tools or a page, not the store: run once
@pytest.mark.slow
async def test_kill_during_a_merge_of_a_large_repo_recovers_on_restart(config: Any, repo: Path) -> None:
    async with started(config) as gateway:
        await submit(gateway, "T1", ["src/app.py"], ["grep -q 'return 42' src/app.py"])
        await submit(gateway, "T2", ["src/new.py"], ["test -f src/new.py"])
        await work(gateway, "T1", {"src/app.py": "def answer():\n    return 42\n"})
        await work(gateway, "T2", {"src/new.py": "NEW = 1\n"})
        first, second = await approve(gateway, "T1"), await approve(gateway, "T2")
        # meanwhile someone commits thousands of files to main outside the gateway: the merge queue's worktree
        # has all of them to write before it can merge
        big_repo(repo, 4000)

        integration = config.worktrees / "_integration"

        def merging() -> bool:  # git is writing the integration worktree: its index is locked
            private = git_dir(integration)
            return private is not None and (private / "index.lock").exists()

        with killable_gateway(config.source) as (url, kill):
            await commit_then_kill(config, url, kill, first, merging)
        private = git_dir(integration)
        # what the kill left (almost always the index lock; on a loaded machine git may just have finished)
        left = [name for name in ("index.lock", "MERGE_HEAD") if (private / name).exists()]
        assert Gateway(config).intents.get(first)["state"] == "executing"
        assert merges(repo) == []

        with http_gateway(config.source) as restarted:  # recovers its worktree and reconciles the intent on start
            async with http_client(restarted, token(config, "committer")) as session:
                replay = (await session.call_tool("intent_commit", {"intent_id": first})).structured_content
                after = (await session.call_tool("intent_commit", {"intent_id": second})).structured_content
        assert replay["state"] == "committed", replay
        assert after["state"] == "committed", after
        assert len(merges(repo)) == 2
        assert (repo / "gen" / "d7" / "m3999.py").read_text() == "X = 3999\n"
        assert "return 42" in (repo / "src" / "app.py").read_text() and (repo / "src" / "new.py").exists()
        assert_usable(repo)
        assert not (private / "index.lock").exists() and not (private / "MERGE_HEAD").exists()
        restarted_gateway = Gateway(config)
        cleaned = " ".join(c for r in ledger_rows(restarted_gateway, kind="recovery") for c in r.detail["cleaned"])
        assert ("index.lock" in left) <= ("index.lock" in cleaned), cleaned
        assert ("MERGE_HEAD" in left) <= ("aborted a merge" in cleaned), cleaned
        interrupted = [r for r in ledger_rows(restarted_gateway) if r.outcome == "interrupted"]
        assert [r.tool for r in interrupted] == ["intent_commit"], "the call the kill cut short is closed"
        assert restarted_gateway.ledger.verify().ok


async def test_kill_right_after_a_claim_leaves_a_claim_with_its_worktree(config: Any, repo: Path) -> None:
    big_repo(repo, 2000)  # so that making the worktree takes a while after the claim is committed
    async with started(config) as gateway:
        await submit(gateway, "T1", ["src/app.py"], ["grep -q 'return 42' src/app.py"])
        store = open_store(config)

        def claimed() -> bool:
            return bool(store.query("SELECT 1 FROM tasks WHERE id = 'T1' AND state = 'claimed'"))

        with killable_gateway(config.source) as (url, kill):

            async def claim() -> None:
                async with http_client(url, token(config, "worker", agent="w1")) as session:
                    await session.call_tool("task_claim", {"task_id": "T1"})

            await kill_when(kill, claimed, claim)

        restarted = Gateway(config)
        async with inproc_client(restarted, token(config, "worker", agent="w1")) as client:
            task = restarted.board.get("T1")  # started: recovered
            assert task["state"] == "claimed" and (Path(task["worktree"]) / ".git").exists()
            written = await client.call_tool("fs_write", {"path": "src/app.py", "content": "return 42\n"})
            assert not written.is_error, text_of(written)
            reported = await client.call_tool("task_report", {"record": {"task_id": "T1", "status": "done"}})
            assert not reported.is_error, text_of(reported)
        assert "return 41" in (repo / "src" / "app.py").read_text(), "the worker's write never reached the checkout"
        assert "return 42" in (Path(task["worktree"]) / "src" / "app.py").read_text()


@pytest.mark.one_store  # its subject is git, tools or a page, not the store: run once
async def test_a_worktree_deleted_by_hand_is_made_again_never_the_main_checkout(config: Any, repo: Path) -> None:
    async with started(config) as gateway:
        await submit(gateway, "T1", ["src/app.py"], ["grep -q 'return 42' src/app.py"])
        async with client(gateway, token(config, "worker", agent="w1")) as worker:
            claim = await worker.call_tool("task_claim", {"task_id": "T1"})
            worktree = Path(claim.structured_content["worktree"])
            await worker.call_tool("fs_write", {"path": "src/app.py", "content": "return 40\n"})
            subprocess.run(["rm", "-rf", str(worktree)], check=True)
            written = await worker.call_tool("fs_write", {"path": "src/app.py", "content": "return 42\n"})
            assert not written.is_error, text_of(written)
        assert "return 41" in (repo / "src" / "app.py").read_text()
        assert "return 42" in (worktree / "src" / "app.py").read_text()
        repaired = [r for r in ledger_rows(gateway, kind="task") if r.detail["action"] == "worktree_repaired"]
        assert len(repaired) == 1 and repaired[0].detail["worktree"] == str(worktree)


async def test_repeated_submit_and_report_answer_the_recorded_result(config: Any, repo: Path) -> None:
    async with started(config) as gateway:
        first = await submit(gateway, "T1", ["src/app.py"], ["grep -q 'return 42' src/app.py"])
        again = await submit(gateway, "T1", ["src/app.py"], ["grep -q 'return 42' src/app.py"])
        assert again == {**first, "replayed": True}
        changed = await call(
            gateway,
            token(config, "planner", agent="planner"),
            "task_submit",
            {"manifest": {"task_id": "T1", "objective": "other", "allowed_paths": ["src/**"], "verification": ["ls"]}},
        )
        assert changed.is_error and "another manifest" in text_of(changed)
        record = {"task_id": "T1", "status": "done", "files_changed": ["src/app.py"]}
        async with client(gateway, token(config, "worker", agent="w1")) as worker:
            await worker.call_tool("task_claim", {"task_id": "T1"})
            await worker.call_tool("fs_write", {"path": "src/app.py", "content": "def answer():\n    return 42\n"})
            reported = await worker.call_tool("task_report", {"record": record})
            replayed = await worker.call_tool("task_report", {"record": record})
            different = await worker.call_tool("task_report", {"record": {**record, "risks": ["none"]}})
        assert not reported.is_error and not replayed.is_error, text_of(replayed)
        assert replayed.structured_content == {**reported.structured_content, "replayed": True}
        assert different.is_error
        reports = [r for r in ledger_rows(gateway, kind="task") if r.detail["action"] == "report"]
        assert len(reports) == 1, "a replay records nothing new"


@pytest.mark.one_store  # its subject is the HTTP layer's answer to a malformed call, not the store: run once
def test_malformed_tools_call_is_answered_and_recorded(config: Any) -> None:
    import httpx2

    bearer = token(config, "worker", agent="w1")
    headers = {
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "Authorization": f"Bearer {bearer}",
    }
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
    }
    answers = []
    with http_gateway(config.source) as url:
        opened = httpx2.post(f"{url}/mcp", json=initialize, headers=headers)
        session = {**headers, "mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
        httpx2.post(f"{url}/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session)
        for params in ({"name": "fs_read", "arguments": ["src/app.py"]}, {"arguments": {"path": "x"}}):
            body = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params}
            answers.append(httpx2.post(f"{url}/mcp", json=body, headers=session).text)
    assert '"code":-32602' in answers[0] and "params.arguments" in answers[0]
    assert '"code":-32602' in answers[1] and "params.name: Field required" in answers[1]
    rows = [r for r in ledger_rows(Gateway(config)) if r.outcome == "invalid"]
    assert [(r.tool, r.detail["error"]["code"]) for r in rows] == [
        ("fs_read", "malformed_request"),
        (None, "malformed_request"),
    ]
    assert all(r.principal and r.principal["agent"] == "w1" for r in rows)
    assert "src/app.py" not in str([r.detail for r in rows]), "argument values are not recorded"


def test_a_lease_has_one_holder_and_a_dead_holder_loses_it(config: Any) -> None:
    leases = Leases(open_store(config))
    me = f"{HOST}|{os.getpid()}|a"
    assert leases.try_acquire("merge queue", me)
    assert not leases.try_acquire("merge queue", f"{HOST}|{os.getpid()}|b"), "a live holder keeps it"
    assert leases.try_acquire("merge queue", me), "its holder may take it again"
    leases.release("merge queue", me)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    assert leases.try_acquire("merge queue", f"{HOST}|{dead.stdout.strip()}|c")
    assert leases.try_acquire("merge queue", me), "a holder on this host whose process is gone loses it at once"
    assert leases.try_acquire("other", "elsewhere|1|d", ttl_s=-1)
    assert leases.try_acquire("other", me), "a holder on another host loses it when its lease expires"
    assert not leases.try_acquire("merge queue", "elsewhere|1|e")


@pytest.mark.one_store  # its subject is git, tools or a page, not the store: run once
async def test_base_branch_moved_during_the_merge_is_merged_again_on_its_new_tip(config: Any, repo: Path) -> None:
    """Someone commits to main while the merge commit is being verified: the compare-and-swap refuses, the
    merge is made and verified again on the new tip, and nothing of theirs is lost."""
    async with started(config) as gateway:
        await submit(gateway, "T1", ["src/app.py"], ["grep -q 'return 42' src/app.py && sleep 1"])
        await work(gateway, "T1", {"src/app.py": "def answer():\n    return 42\n"})
        intent_id = await approve(gateway, "T1")

        def verifying() -> int:
            return sum(1 for r in ledger_rows(gateway, kind="verify") if r.tool == "intent_commit")

        outcome: dict[str, Any] = {}

        async def run() -> None:
            outcome.update((await commit(gateway, intent_id)).structured_content)

        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            with anyio.fail_after(60):
                while not verifying():
                    await anyio.sleep(0.02)
            commit_outside(repo, "NOTES.md")
            theirs = Repo(repo).run("rev-parse", "HEAD").strip()
    assert outcome["state"] == "committed", outcome
    assert outcome["outcome"]["base_moved"] and outcome["outcome"]["base"] == theirs
    assert theirs in Repo(repo).run("rev-list", "main").split()
    assert "return 42" in (repo / "src" / "app.py").read_text() and (repo / "NOTES.md").exists()
    assert_usable(repo)


@pytest.mark.one_store  # its subject is git, tools or a page, not the store: run once
async def test_a_checkout_with_changes_in_the_way_defers_the_merge(config: Any, repo: Path) -> None:
    """The user edits a file the merge changes, uncommitted: nothing is published (moving main under their
    checkout would leave it behind), the intent stays approved with the file named, people are told; once the
    edit is out of the way the same intent lands and the checkout is brought along."""
    async with started(config) as gateway:
        await submit(gateway, "T1", ["src/app.py"], ["grep -q 'return 42' src/app.py"])
        await work(gateway, "T1", {"src/app.py": "def answer():\n    return 42\n"})
        intent_id = await approve(gateway, "T1")
        mine = "def answer():\n    return 41  # mine\n"
        (repo / "src" / "app.py").write_text(mine)
        main = Repo(repo).run("rev-parse", "main").strip()

        deferred = await commit(gateway, intent_id)
        outcome = deferred.structured_content
        assert deferred.is_error and outcome["state"] == "approved", outcome
        assert outcome["outcome"]["in_the_way"] == ["src/app.py"] and "src/app.py" in outcome["outcome"]["deferred"]
        assert Repo(repo).run("rev-parse", "main").strip() == main and merges(repo) == []
        assert (repo / "src" / "app.py").read_text() == mine, "the user's edit is untouched"
        assert gateway.board.get("T1")["state"] == "verified"
        told = [r for r in ledger_rows(gateway, kind="task") if r.detail["action"] == "merge_deferred"]
        assert len(told) == 1 and told[0].detail["in_the_way"] == ["src/app.py"]
        assert notice(told[0])["event"] == "merge_deferred", "people are told"

        Repo(repo).run("stash", "-q")
        landed = await commit(gateway, intent_id)
        assert landed.structured_content["state"] == "committed", text_of(landed)
        assert landed.structured_content["outcome"]["workspace"] == {"state": "updated"}
        assert "return 42" in (repo / "src" / "app.py").read_text()
        assert_usable(repo)


def test_the_advice_for_a_checkout_left_behind_never_reverts_the_merge(tmp_path: Path) -> None:
    """The race the check cannot close: the user edits a file the merge changes after the check. The checkout
    is left behind (HEAD at the merge, files where they were); the advice brings it to the merge with the
    user's edit on top, so a commit after it keeps the merged work (a plain `git commit -a` would revert it)."""
    repo = make_repo(tmp_path / "repo")
    git = Repo(repo)
    (repo / "notes.txt").write_text("one\ntwo\nthree\nfour\nfive\n")
    git.run("add", "-A")
    git.run("commit", "-q", "-m", "notes")
    old = git.run("rev-parse", "HEAD").strip()
    git.run("checkout", "-q", "-b", "work")
    (repo / "notes.txt").write_text("ONE (merged)\ntwo\nthree\nfour\nfive\n")
    (repo / "src" / "added.py").write_text("ADDED = 1\n")
    git.run("add", "-A")
    git.run("commit", "-q", "-m", "the merged work")
    new = git.run("rev-parse", "HEAD").strip()
    git.run("checkout", "-q", "main")
    checkout = Checkout(git)
    assert checkout.blocks("refs/heads/main", old, new) is None

    (repo / "notes.txt").write_text("one\ntwo\nthree\nfour\nfive (mine)\n")  # the user, between check and publish
    git.run("update-ref", "refs/heads/main", new, old)
    behind = checkout.catch_up("refs/heads/main", old, new)
    assert behind["state"] == "behind" and behind["at"] == old

    subprocess.run(behind["catch_up"], shell=True, cwd=repo, check=True, capture_output=True)
    assert git.run("symbolic-ref", "HEAD").strip() == "refs/heads/main"
    assert git.run("rev-parse", "HEAD").strip() == new
    assert (repo / "notes.txt").read_text() == "ONE (merged)\ntwo\nthree\nfour\nfive (mine)\n"
    assert (repo / "src" / "added.py").exists()
    git.run("commit", "-q", "-am", "my edit")
    assert git.run("show", "HEAD:src/added.py") == "ADDED = 1\n", "the merged work is kept"
    assert git.run("diff", "--name-only", new, "HEAD").split() == ["notes.txt"]


@pytest.mark.one_store  # its subject is git, tools or a page, not the store: run once
@pytest.mark.slow
async def test_kill_during_the_catch_up_of_the_checkout_is_finished_on_restart(config: Any, repo: Path) -> None:
    """The merge rewrites thousands of files; the gateway is killed while it brings the user's checkout along
    (main moved, the checkout's index locked). On restart the catch-up planned on the intent is finished: the
    gateway's lock goes, the files it had written are put back and the catch-up redone, and it is recorded."""
    files = 2000
    big_repo(repo, files)
    async with started(config) as gateway:
        await submit(gateway, "T1", ["gen/**"], ["grep -q changed gen/d0/m0.py"])
        async with client(gateway, token(config, "worker", agent="w1")) as worker:
            claim = await worker.call_tool("task_claim", {"task_id": "T1"})
            worktree = Path(claim.structured_content["worktree"])
            for i in range(files):  # written in the worktree directly: thousands of fs_write calls are slow
                (worktree / "gen" / f"d{i // 500}" / f"m{i}.py").write_text(f"X = {i}  # changed\n")
            record = {
                "task_id": "T1",
                "status": "done",
                "files_changed": [f"gen/d{i // 500}/m{i}.py" for i in range(files)],
            }
            reported = await worker.call_tool("task_report", {"record": record})
            assert not reported.is_error, text_of(reported)
        intent_id = await approve(gateway, "T1")
    base = Repo(repo).run("rev-parse", "main").strip()
    lock = repo / ".git" / "index.lock"
    branch = repo / ".git" / "refs" / "heads" / "main"

    def catching_up() -> bool:  # main moved and git is writing the user's checkout
        return lock.exists() and branch.read_text().strip() != base

    with killable_gateway(config.source) as (url, kill):
        await commit_then_kill(config, url, kill, intent_id, catching_up)
    assert Repo(repo).run("rev-parse", "main").strip() != base
    left = lock.exists()  # almost always; on a loaded machine git may just have finished

    with http_gateway(config.source) as restarted:  # reconciles the intent on start, finishing its catch-up
        async with http_client(restarted, token(config, "committer")) as session:
            replay = (await session.call_tool("intent_commit", {"intent_id": intent_id})).structured_content
    assert replay["state"] == "committed", replay
    assert replay["outcome"]["reconciled"] and replay["outcome"]["workspace"] == {"state": "updated"}, replay
    assert not lock.exists()
    assert (repo / "gen" / "d0" / "m0.py").read_text() == "X = 0  # changed\n"
    assert (repo / "gen" / "d3" / "m1999.py").read_text() == "X = 1999  # changed\n"
    assert_usable(repo)
    rows = [r.detail for r in ledger_rows(Gateway(config), kind="recovery") if r.detail["what"] == "your checkout"]
    assert len(rows) == 1 and rows[0]["workspace"] == {"state": "updated"}
    assert left <= any("index.lock" in c for c in rows[0]["cleaned"]), rows
    # killed after its attestation was recorded and the branch moved: recovery publishes the attestation
    merge = Repo(repo).run("rev-parse", "main").strip()
    assert Gateway(config).attestations.get(merge)["state"] == "published"
    assert gateway_cli(config, "attest", "verify", merge).returncode == 0


@pytest.mark.one_store  # its subject is git, tools or a page, not the store: run once
async def test_verify_rebuilds_a_worktree_deleted_after_the_report(config: Any, repo: Path) -> None:
    async with started(config) as gateway:
        await submit(gateway, "T1", ["src/app.py"], ["grep -q 'return 42' src/app.py"])
        await work(gateway, "T1", {"src/app.py": "def answer():\n    return 42\n"})
        worktree = Path(gateway.board.get("T1")["worktree"])
        subprocess.run(["rm", "-rf", str(worktree)], check=True)
        verified = await call(gateway, token(config, "verifier", agent="verifier"), "verify_run", {"task_id": "T1"})
        assert not verified.is_error and verified.structured_content["passed"], text_of(verified)
        assert gateway.board.get("T1")["state"] == "verified"
        assert "return 42" in (worktree / "src" / "app.py").read_text(), "made again from the task branch"
        repaired = [r.detail for r in ledger_rows(gateway, kind="task") if r.detail["action"] == "worktree_repaired"]
        assert [r["worktree"] for r in repaired] == [str(worktree)]


async def test_a_repeated_blocked_report_answers_the_recorded_result(config: Any, repo: Path) -> None:
    async with started(config) as gateway:
        await submit(gateway, "T1", ["src/app.py"], ["grep -q 'return 42' src/app.py"])
        blocker = {"suspected_cause": "the spec contradicts itself", "human_action": "amend it"}
        record = {"task_id": "T1", "status": "blocked", "blocker": blocker}
        async with client(gateway, token(config, "worker", agent="w1")) as worker:
            await worker.call_tool("task_claim", {"task_id": "T1"})
            first = await worker.call_tool("task_report", {"record": record})
            again = await worker.call_tool("task_report", {"record": record})
        assert not first.is_error and not again.is_error, text_of(again)
        assert again.structured_content == {**first.structured_content, "replayed": True}
        reports = [r for r in ledger_rows(gateway, kind="task") if r.detail["action"] == "blocker_report"]
        assert len(reports) == 1, "a replay records nothing new"


@pytest.mark.one_store  # its subject is the policy's hold on a merge, not the store: run once
async def test_a_merge_deleting_most_of_the_repository_is_held_for_a_person(config: Any, repo: Path) -> None:
    """Defence in depth behind the scope check: a task whose report deleted most of the repository (as a
    worktree a crash left half-made once did), verified and approved, is not merged by intent_commit nor by
    the ceremony: a person is asked, with the numbers. An ordinary merge still runs; once a person approves,
    the held one lands."""
    (repo / "data").mkdir()
    for i in range(120):
        (repo / "data" / f"f{i:03d}.txt").write_text(f"record {i}\n")
    Repo(repo).run("add", "data")
    Repo(repo).run("commit", "-q", "-m", "120 data files")
    committer = token(config, "committer", agent="committer")
    async with started(config) as gateway:
        await submit(gateway, "T1", ["data/**"], ["test ! -f data/f000.txt"])
        await submit(gateway, "T2", ["src/app.py"], ["grep -q 'return 42' src/app.py"])
        async with client(gateway, token(config, "worker", agent="w1")) as worker:
            tree = Path((await worker.call_tool("task_claim", {"task_id": "T1"})).structured_content["worktree"])
            gone = [f"data/f{i:03d}.txt" for i in range(100)]
            for name in gone:  # what a half-made worktree looked like: the files never written
                (tree / name).unlink()
            record = {"task_id": "T1", "status": "done", "files_changed": gone}
            reported = await worker.call_tool("task_report", {"record": record})
            assert not reported.is_error, text_of(reported)
        await work(gateway, "T2", {"src/app.py": "def answer():\n    return 42\n"})
        held_intent, ordinary_intent = await approve(gateway, "T1"), await approve(gateway, "T2")

        held = await call(gateway, committer, "intent_commit", {"intent_id": held_intent})
        pending = held.structured_content
        assert pending["status"] == "approval_pending", text_of(held)
        assert "commit.mass_deletion" in pending["rules"]
        assert any("deletes 100 of the 122 files tracked where task 'T1' forked (82%" in r for r in pending["reasons"])
        ceremony = (await call(gateway, committer, "merge_ceremony", {})).structured_content
        assert ceremony["merged"] == ["T2"], ceremony
        assert ceremony["tasks"]["T1"]["status"] == "REFUSED" and ceremony["tasks"]["T1"]["rules"], ceremony
        assert (repo / "data" / "f000.txt").exists() and "return 42" in (repo / "src" / "app.py").read_text()
        again = (await commit(gateway, ordinary_intent)).structured_content
        assert again["state"] == "committed" and again["replayed"], "T2 is merged once"

        approved = gateway_cli(config, "approvals", "approve", pending["approval_id"], "--by", "alice")
        assert approved.returncode == 0, approved.stderr
        landed = await call(gateway, committer, "intent_commit", {"intent_id": held_intent})
    assert landed.structured_content["state"] == "committed", text_of(landed)
    assert not (repo / "data" / "f000.txt").exists() and (repo / "data" / "f100.txt").exists()
    assert len(merges(repo)) == 2
    # every merge, the ceremony's too, carries its attestation; the held one names who approved it
    for merge in merges(repo):
        assert gateway_cli(config, "attest", "verify", merge).returncode == 0, merge
    statement = Gateway(config).attestations.verify("main")["statement"]
    assert [a["approved_by"] for a in statement["predicate"]["approvals"]] == ["alice"]


@pytest.mark.one_store
async def test_the_merge_deletion_thresholds_are_policy_data_from_gateway_yaml(config: Any) -> None:
    from conftest import reconfigure

    config = reconfigure(
        config, policy={"engine": "embedded", "deadline_s": 10.0, "settings": {"merge_deletions": {"files": 3}}}
    )
    async with started(config) as gateway:
        thresholds = await gateway.engine.query("gateway.concerns.commit.merge_deletions", {})
    assert thresholds == {"files": 3, "share": 0.2, "files_always": 500}
