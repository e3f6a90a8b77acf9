"""``gateway serve --workers N``: several gateway processes on one address and one store, with real MCP
clients over HTTP, a real git repository and real subprocesses. Claims, commits, approvals and the ledger
chain stay exactly-once and ordered across the processes; what must happen once per deployment (recovery,
reconciliation, escalation notices, the claim sweep) does."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml
from conftest import add_role, http_client, http_gateway, text_of, token
from test_merge_queue import approve, merges, started, submit
from test_tiers import TIER3

from gateway.cli.commands import issue_token
from gateway.commit.executor import intent_lease
from gateway.ledger.leases import Leases, new_holder
from gateway.repo import Repo
from gateway.runtime import Gateway
from gateway.store import open_store

pytestmark = [pytest.mark.anyio, pytest.mark.both_stores]  # the races run on SQLite and PostgreSQL

RACERS = 20
ROUNDS = 4  # races repeated until both worker processes served one


def gateway_cli(config: Any, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "gateway", "--config", str(config.source), *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60)


def started_by(config: Any, tool: str) -> list[str]:
    """The processes whose write-ahead ("started") rows record a call of ``tool``: who served it."""
    rows = open_store(config).query("SELECT body FROM ledger ORDER BY seq")
    bodies = [json.loads(r["body"]) for r in rows]
    return [b["detail"]["process"] for b in bodies if b.get("tool") == tool and b.get("outcome") == "started"]


async def race(
    urls: str | list[str], config: Any, role: str, tool: str, arguments: dict[str, Any], tag: str = ""
) -> dict[str, Any]:
    """RACERS agents of ``role`` call ``tool`` at once, each on its own connection, spread over ``urls`` in
    turn (replicas) or all on one (worker processes); answers agent -> result."""
    urls = [urls] if isinstance(urls, str) else urls
    results: dict[str, Any] = {}

    async def one(agent: str, url: str) -> None:
        async with http_client(url, token(config, role, agent=agent)) as session:
            results[agent] = await session.call_tool(tool, arguments)

    async with anyio.create_task_group() as tg:
        for i in range(RACERS):
            tg.start_soon(one, f"{role}-{tag}{i}", urls[i % len(urls)])
    return results


@contextmanager
def serving(config: Any, topology: str) -> Iterator[list[str]]:
    """Two gateway processes on one workspace and one store: ``serve --workers 2`` behind one address, or
    two replicas (two ``gateway serve``) at two addresses, as behind a load balancer; or ``one`` process."""
    if topology == "one":
        with http_gateway(config.source) as url:
            yield [url]
    elif topology == "workers":
        with http_gateway(config.source, workers=2) as url:
            yield [url]
    else:
        with http_gateway(config.source) as first, http_gateway(config.source) as second:
            yield [first, second]


@pytest.mark.parametrize("topology", ["workers", "replicas"])
async def test_twenty_claims_and_twenty_commits_across_two_processes_give_one_owner_and_one_merge(
    config: Any, repo: Path, topology: str
) -> None:
    """Replicas get the racers in turn. Which worker process accepts a connection is the kernel's choice: on a
    busy machine one may take a whole burst, so each race repeats (a new task to claim; the same intent to
    commit again) until both processes have served it, at most ROUNDS times; every round keeps the invariant."""
    async with started(config) as gateway:
        for n in range(1, ROUNDS + 1):
            await submit(gateway, f"T{n}", ["src/app.py"], ["grep -q 'return 42' src/app.py"])
    with serving(config, topology) as urls:
        owners: list[str] = []
        for n in range(1, ROUNDS + 1):
            claims = await race(urls, config, "worker", "task_claim", {"task_id": f"T{n}"}, tag=f"r{n}")
            won = [agent for agent, result in claims.items() if not result.is_error]
            assert len(won) == 1, {a: text_of(r) for a, r in claims.items() if "claimed by" not in text_of(r)}
            others = [text_of(r) for a, r in claims.items() if a != won[0]]
            assert all("claimed by" in text for text in others), others
            owners.append(won[0])
            if len(set(started_by(config, "task_claim"))) == 2:
                break
        assert len(set(started_by(config, "task_claim"))) == 2, "both processes took claims"
        async with http_client(urls[-1], token(config, "worker", agent=owners[0])) as owner:
            written = await owner.call_tool("fs_write", {"path": "src/app.py", "content": "def f():\n    return 42\n"})
            assert not written.is_error, text_of(written)
            record = {"task_id": "T1", "status": "done", "files_changed": ["src/app.py"]}
            reported = await owner.call_tool("task_report", {"record": record})
            assert not reported.is_error, text_of(reported)
        async with started(config) as gateway:  # a third process on the same store: verify, propose, approve
            intent_id = await approve(gateway, "T1")
        outcomes = []
        for n in range(1, ROUNDS + 1):
            commits = await race(urls, config, "committer", "intent_commit", {"intent_id": intent_id}, tag=f"r{n}")
            outcomes += [r.structured_content for r in commits.values()]
            if len(set(started_by(config, "intent_commit"))) == 2:
                break
    assert all(o["state"] == "committed" for o in outcomes), outcomes
    assert len({o["outcome"]["merge_commit"] for o in outcomes}) == 1
    assert sum(1 for o in outcomes if not o.get("replayed")) == 1
    assert len(merges(repo)) == 1
    assert len(set(started_by(config, "intent_commit"))) == 2, "both processes took commits"
    assert open_store(config).query("SELECT * FROM leases") == [], "every lease released"
    assert gateway_cli(config, "ledger", "verify").returncode == 0


async def test_a_replica_killed_mid_commit_is_reconciled_by_the_other(config: Any, repo: Path) -> None:
    """SIGKILL to one replica while its post-merge verification runs; the other replica, running all along
    (it does not restart, so its start-up reconcile never sees this), settles the intent when a committer
    retries there: the merge was not published, so it runs once, there."""
    from conftest import commit_then_kill, killable_gateway
    from test_commit_protocol import approved_merge, post_merge_verifying

    _, intent_id = await approved_merge(config, verification=["grep -q 'return 42' src/app.py && sleep 5"])
    with http_gateway(config.source) as survivor, killable_gateway(config.source) as (doomed, kill):
        await commit_then_kill(config, doomed, kill, intent_id, post_merge_verifying(config))
        assert Gateway(config).intents.get(intent_id)["state"] == "executing"
        assert merges(repo) == [], "a merge is published only after its verification passed"
        async with http_client(survivor, token(config, "committer", agent="retry")) as client:
            retried = (await client.call_tool("intent_commit", {"intent_id": intent_id})).structured_content
    assert retried["state"] == "committed", retried
    assert len(merges(repo)) == 1
    assert Gateway(config).board.get("T1")["state"] == "committed"
    assert gateway_cli(config, "ledger", "verify").returncode == 0


async def test_an_approval_reaches_a_retry_served_by_the_other_worker(config: Any) -> None:
    """The pending call is answered by one worker; a person approves with the CLI (a third process); the
    agent's retry, on a connection another worker serves, runs it. Which worker serves a connection is
    read from the ledger: a write's "started" row names its process."""
    from conftest import add_role

    add_role(config, "headless", ["fs_*", "shell_run"], max_tier=2, approvals="pending")
    bearer = token(config, "headless", agent="bot")
    probes = iter(range(1000))

    async def served_by(session: Any) -> str:
        """The worker serving this session's connection: a write's "started" row names its process."""
        probe = await session.call_tool("fs_write", {"path": f"probe-{next(probes)}.txt", "content": "x"})
        assert not probe.is_error, text_of(probe)
        return started_by(config, "fs_write")[-1]

    with http_gateway(config.source, workers=2) as url:
        async with http_client(url, bearer) as first:
            worker_a = await served_by(first)
            asked = await first.call_tool("shell_run", TIER3)
        pending = asked.structured_content
        assert pending["status"] == "approval_pending", text_of(asked)
        assert gateway_cli(config, "approvals", "approve", pending["approval_id"]).returncode == 0
        for _ in range(100):  # new connections until one reaches the other worker
            async with http_client(url, bearer) as second:
                worker_b = await served_by(second)
                if worker_b != worker_a:
                    ran = await second.call_tool("shell_run", TIER3)
                    break
    assert worker_b != worker_a
    assert ran.structured_content.get("exit_code") == 0, text_of(ran)
    assert started_by(config, "shell_run") == [worker_b], "the approved retry ran once, on the other worker"


async def test_a_revocation_reaches_every_worker(config: Any) -> None:
    """Revocations are read from the store on every call: once `gateway token revoke` returns, every call on
    a fresh connection (whichever worker serves it) is refused."""
    revoked = issue_token(Gateway(config), "planner", "leaver", None, 3600)[0]  # as `gateway token issue` does

    with http_gateway(config.source, workers=2) as url:
        assert not await refused(url, revoked, "revoked")
        assert gateway_cli(config, "token", "revoke", _jti(revoked)).returncode == 0
        assert all([await refused(url, revoked, "revoked") for _ in range(10)])


async def refused(url: str, bearer: str, says: str) -> bool:
    """A tools/list on a new connection each time (so either worker may serve it): a 401 that ``says``?"""
    import httpx2

    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {"Authorization": f"Bearer {bearer}", "Accept": "application/json, text/event-stream"}
    async with httpx2.AsyncClient() as http:
        answer = await http.post(f"{url}/mcp", json=request, headers=headers)
    return answer.status_code == 401 and says in answer.text


async def seen_by_every_worker(probe: Callable[[], Awaitable[bool]], streak: int = 10) -> None:
    """Until ``streak`` probes in a row, each on a fresh connection (either worker may serve it), see the
    change: files are looked at no more than once a second, so a few probes before that may not."""
    with anyio.fail_after(30):
        seen = 0
        while seen < streak:
            seen = seen + 1 if await probe() else 0


@pytest.mark.one_store
async def test_a_role_edit_reaches_every_worker_without_a_restart(config: Any) -> None:
    """Tools removed from a role leave tools/list, a lowered max_tier makes a tier-2 write ask (the policy's
    data.roles, in each process's decision workers, past its decision cache), and a removed role file
    refuses the role's tokens: on both workers, with no restart."""
    add_role(config, "editor", ["fs_*", "shell_run"], max_tier=2, approvals="pending")
    role_file = config.roles / "editor.yaml"
    bearer = token(config, "editor", agent="ed")
    write = {"path": "README.md", "content": "edited\n"}  # modifies a file: tier 2

    async def listed_and_written() -> tuple[set[str], Any]:
        async with http_client(url, bearer) as session:
            tools = {tool.name for tool in (await session.list_tools()).tools}
            return tools, await session.call_tool("fs_write", write)

    async def narrowed() -> bool:
        tools, written = await listed_and_written()
        status = (written.structured_content or {}).get("status")
        return "shell_run" not in tools and status == "approval_pending"

    with http_gateway(config.source, workers=2) as url:
        for _ in range(4):  # both workers decide (and cache) under the old role first
            tools, written = await listed_and_written()
            assert "shell_run" in tools and not written.is_error, text_of(written)
        role = yaml.safe_load(role_file.read_text())
        role_file.write_text(yaml.safe_dump({**role, "tools": ["fs_*"], "max_tier": 1}))
        await seen_by_every_worker(narrowed)
        role_file.unlink()
        await seen_by_every_worker(lambda: refused(url, bearer, "no role file"))


@pytest.mark.one_store
async def test_a_policy_edit_reaches_every_worker(config: Any) -> None:
    rule = (
        'deny contains {"rule": "secrets.frozen", "reason": "task_list is frozen"} '
        'if { input.tool.name == "task_list" }'
    )
    bearer = token(config, "worker", agent="w")

    async def denied() -> bool:
        async with http_client(url, bearer) as session:
            listed = await session.call_tool("task_list", {})
        return listed.is_error and "task_list is frozen" in text_of(listed)

    with http_gateway(config.source, workers=2) as url:
        for _ in range(4):
            assert not await denied()
        secrets = config.policy.path / "secrets" / "secrets.rego"
        secrets.write_text(secrets.read_text() + "\n" + rule + "\n")
        await seen_by_every_worker(denied)


def _jti(bearer: str) -> str:
    import base64

    payload = bearer.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))["jti"]


def test_the_ledger_stays_one_chain_when_two_processes_append_at_once(config: Any) -> None:
    script = (
        "import sys\n"
        "from gateway.config import GatewayConfig\n"
        "from gateway.ledger.chain import Ledger\n"
        "import time\n"
        "ledger = Ledger.for_config(GatewayConfig.load(sys.argv[1]))\n"
        "other = '%\"writer\":\"' + sys.argv[3] + '\"%'\n"
        "for i in range(150):\n"
        "    ledger.append({'kind': 'call', 'tool': 'fs_read', 'outcome': 'ok', 'detail': {'writer': sys.argv[2]}})\n"
        "    deadline = time.monotonic() + 30\n"
        "    while i == 0 and not ledger.db.query('SELECT 1 FROM ledger WHERE body LIKE ?', (other,)):\n"
        "        assert time.monotonic() < deadline, 'the other writer never started'\n"
        "        time.sleep(0.01)\n"
    )
    # after its first row each writer waits for the other's first row: the two runs overlap for certain
    Gateway(config)  # the store and its key exist before the writers race
    writers = [
        subprocess.Popen([sys.executable, "-c", script, str(config.source), name, other], stderr=subprocess.PIPE)
        for name, other in (("a", "b"), ("b", "a"))
    ]
    for writer in writers:
        assert writer.wait(60) == 0, writer.stderr.read() if writer.stderr else ""
    verified = gateway_cli(config, "ledger", "verify")
    assert verified.returncode == 0, verified.stdout + verified.stderr
    rows = [json.loads(r["body"]) for r in open_store(config).query("SELECT body FROM ledger")]
    by_writer = [r["detail"].get("writer") for r in rows if r["tool"] == "fs_read"]
    assert by_writer.count("a") == by_writer.count("b") == 150
    assert by_writer != sorted(by_writer), "the two writers interleaved"


async def test_reconcile_leaves_an_intent_a_live_process_executes_alone(config: Any, repo: Path) -> None:
    """A worker starting (or restarting) beside one that is mid-commit must not settle that commit."""
    async with started(config) as gateway:
        await submit(gateway, "T1", ["src/app.py"], ["grep -q 'return 42' src/app.py"])
        from test_merge_queue import work

        await work(gateway, "T1", {"src/app.py": "def f():\n    return 42\n"})
        intent_id = await approve(gateway, "T1")
        executor = gateway.intents
        principal = gateway.tokens.verify(token(config, "committer", agent="committer"))
        leases = Leases(gateway.db)
        live = new_holder()  # this test process plays the live executor: its pid is alive
        assert leases.try_acquire(intent_lease(intent_id), live)
        assert executor.begin(intent_id, principal)
        assert await gateway.committer.reconcile() == []
        assert executor.get(intent_id)["state"] == "executing", "a live execution is not a leftover"
        dead = live.replace(live.split("|")[1], "999999999")  # the same lease, held by a process that is gone
        with gateway.db.transaction() as tx:
            tx.execute("UPDATE leases SET holder = ? WHERE name = ?", (dead, intent_lease(intent_id)))
        settled = await gateway.committer.reconcile()
        assert [s["intent_id"] for s in settled] == [intent_id]
        assert executor.get(intent_id)["state"] == "approved", "no merge happened: it goes back to approved"


def test_two_claim_sweeps_at_once_expire_a_claim_once(config: Any) -> None:
    first, second = Gateway(config), Gateway(config)
    with first.db.transaction() as tx:
        tx.execute(
            "INSERT INTO tasks (id, manifest, state, base_branch, base_commit, branch, owner, claim_expires, "
            "attempt, trace_id, submitted_by, created, updated) VALUES ('T1', ?, 'claimed', 'main', 'x', "
            "'gateway/T1', 'w1', ?, 1, 't', 'p', 'now', 'now')",
            (json.dumps(_manifest()), (datetime.now(UTC) - timedelta(seconds=1)).isoformat(timespec="seconds")),
        )
    moved: list[list[str]] = []
    sweeps = [threading.Thread(target=lambda g=g: moved.append(g.board.sweep())) for g in (first, second)]
    for sweep in sweeps:
        sweep.start()
    for sweep in sweeps:
        sweep.join(30)
    assert sorted(moved) == [[], ["T1"]]
    expired = [r for r in first.ledger.events("json_extract(body, '$.kind') = 'task'") if r.detail.get("action")]
    assert [r.detail["action"] for r in expired].count("claim_expired") == 1


def _manifest() -> dict[str, Any]:
    from gateway.tasks.models import TaskManifest

    return TaskManifest(task_id="T1", objective="x", allowed_paths=["src/*"], verification=["true"]).model_dump()


async def test_notifier_passes_run_one_at_a_time_across_processes(config: Any) -> None:
    from gateway.notify import CURSOR, LEASE

    gateway = Gateway(config)
    leases = Leases(gateway.db)
    other = new_holder()
    assert leases.try_acquire(LEASE, other)  # another process is in a pass
    gateway.notifier.config.webhooks = [type("Hook", (), {"url": "http://127.0.0.1:9/", "headers": {}})()]
    assert await gateway.notifier.deliver() == []
    mine = gateway.db.query("SELECT * FROM cursors WHERE name = ?", (CURSOR,))
    assert mine == [], "it skipped the pass: it did not even read the cursor"
    leases.release(LEASE, other)


REPORTERS = 5


@pytest.mark.parametrize("topology", ["one", "replicas"])
async def test_five_identical_reports_at_once_make_one_commit_and_all_answer_it(
    config: Any, repo: Path, topology: str
) -> None:
    """A worker's client retries its task_report while the first is still being taken (five at once, each on
    its own connection; spread over two replicas, or all on one gateway): the gateway commits the worktree
    once, and every duplicate answers the recorded result, not an error."""
    async with started(config) as gateway:
        await submit(gateway, "T1", ["src/app.py"], ["grep -q 'return 42' src/app.py"])
    bearer = token(config, "worker", agent="w1")
    record = {"task_id": "T1", "status": "done", "files_changed": ["src/app.py"]}
    with serving(config, topology) as urls:
        async with http_client(urls[0], bearer) as worker:
            claimed = await worker.call_tool("task_claim", {"task_id": "T1"})
            assert not claimed.is_error, text_of(claimed)
            written = await worker.call_tool("fs_write", {"path": "src/app.py", "content": "def f():\n    return 42\n"})
            assert not written.is_error, text_of(written)
        answers: list[Any] = []

        async def report(url: str) -> None:
            async with http_client(url, bearer) as session:
                answers.append(await session.call_tool("task_report", {"record": record}))

        async with anyio.create_task_group() as tg:
            for i in range(REPORTERS):
                tg.start_soon(report, urls[i % len(urls)])
        async with http_client(urls[-1], bearer) as late:  # and once more after all of them: the same answer
            answers.append(await late.call_tool("task_report", {"record": record}))
    assert all(not a.is_error for a in answers), [text_of(a) for a in answers if a.is_error]
    commits = {a.structured_content["commit"] for a in answers}
    assert len(commits) == 1, commits
    base = Gateway(config).board.get("T1")["base_commit"]
    assert Repo(repo).run("rev-list", f"{base}..task/T1").split() == list(commits), "one commit on the branch"
    assert sum(1 for a in answers if not a.structured_content.get("replayed")) == 1
    assert {a.structured_content["state"] for a in answers} == {"reported"}
    events = [r.detail["action"] for r in Gateway(config).ledger.events("json_extract(body, '$.kind') = 'task'")]
    assert events.count("report") == 1
    assert open_store(config).query("SELECT * FROM leases") == [], "every lease released"
