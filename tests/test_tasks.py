"""Tasks with real git repositories: manifests, claims with a TTL, worktrees, scope checks, verification."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import client_of, http_client, http_gateway, ledger_rows, text_of, token

from gateway.repo import Repo
from gateway.runtime import Gateway

pytestmark = [pytest.mark.anyio, pytest.mark.both_stores]


def manifest(task_id: str = "T1", **changes: Any) -> dict[str, Any]:
    base = {
        "task_id": task_id,
        "objective": "Make answer() return 42",
        "allowed_paths": ["src/**", "tests/test_app.py"],
        "constraints": ["do not touch docs"],
        "verification": ["grep -q 'return 42' src/app.py"],
        "handoff_notes": "one-line change",
        "depends_on": [],
        "max_attempts": 2,
    }
    return {**base, **changes}


def record(task_id: str = "T1", **changes: Any) -> dict[str, Any]:
    base = {
        "task_id": task_id,
        "status": "done",
        "files_changed": ["src/app.py"],
        "commands_run": [],
        "risks": [],
        "next_step": "verify",
    }
    return {**base, **changes}


async def call(gateway: Gateway, bearer: str, tool: str, arguments: dict[str, Any]) -> Any:
    async with client_of(gateway, bearer) as client:
        return await client.call_tool(tool, arguments)


async def submit(gateway: Gateway, config: Any, **changes: Any) -> Any:
    result = await call(
        gateway, token(config, "planner", agent="planner-1"), "task_submit", {"manifest": manifest(**changes)}
    )
    assert not result.is_error, text_of(result)
    return result


async def test_claim_gives_a_worktree_and_scoped_writes(gateway: Gateway, config: Any, repo: Path) -> None:
    async with gateway.running():
        await submit(gateway, config)
        worker = token(config, "worker", agent="w1")
        async with client_of(gateway, worker) as client:
            claimed = (await client.call_tool("task_claim", {"task_id": "T1"})).structured_content
            tree = Path(claimed["worktree"])
            assert claimed["claim"]["owner"] == "w1" and claimed["claim"]["attempt"] == 1
            assert tree.is_dir() and Repo(tree).run("branch", "--show-current").strip() == "task/T1"

            edit = await client.call_tool("fs_edit", {"path": "src/app.py", "old_string": "41", "new_string": "42"})
            assert not edit.is_error, text_of(edit)
            assert "42" in (tree / "src" / "app.py").read_text()
            assert "41" in (repo / "src" / "app.py").read_text(), "the main workspace must not change"

            outside = await client.call_tool("fs_write", {"path": "docs/notes.md", "content": "x"})
            assert outside.is_error and "allows only" in text_of(outside)
            assert outside.structured_content["decision"]["rules"] == ["paths.out_of_scope"]
            assert not (tree / "docs" / "notes.md").exists()

            reported = (await client.call_tool("task_report", {"record": record()})).structured_content
        assert reported["state"] == "reported" and reported["scope_violations"] == []
        message = Repo(tree).run("log", "-1", "--format=%B")
        assert "Gateway-Task: T1" in message and json.loads(message.split("Gateway-Record: ")[1])["status"] == "done"
        denied = [r for r in ledger_rows(gateway) if r.tool == "fs_write" and r.outcome == "denied"]
        assert denied and denied[-1].trace_id == gateway.board.get("T1")["trace_id"]


async def test_twenty_concurrent_claims_give_one_owner(config: Any) -> None:
    gateway = Gateway(config)
    await submit(gateway, config)
    tokens = [token(config, "worker", agent=f"w{i}") for i in range(20)]
    outcomes: list[bool] = []
    with http_gateway(config.source) as url:

        async def claim(bearer: str) -> None:
            async with http_client(url, bearer) as client:
                result = await client.call_tool("task_claim", {"task_id": "T1"})
                outcomes.append(not result.is_error)

        async with anyio.create_task_group() as tg:
            for bearer in tokens:
                tg.start_soon(claim, bearer)
    assert outcomes.count(True) == 1 and len(outcomes) == 20
    task = Gateway(config).board.get("T1")
    assert task["state"] == "claimed" and task["attempt"] == 1


def test_claims_from_many_processes_give_one_owner(config: Any) -> None:
    """Threads with their own store connections stand in for gateway replicas sharing one database."""
    import threading

    from gateway.types import Principal

    anyio.run(submit, Gateway(config), config)
    winners: list[str] = []

    def claim(i: int) -> None:
        board = Gateway(config).board
        try:
            anyio.run(board.claim, "T1", Principal(agent=f"w{i}", role="worker"))
            winners.append(f"w{i}")
        except Exception:
            pass

    threads = [threading.Thread(target=claim, args=(i,)) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(winners) == 1


async def test_write_after_the_claim_expired_is_denied(config: Any) -> None:
    gateway = Gateway(config)
    async with gateway.running():
        await submit(gateway, config)
        async with client_of(gateway, token(config, "worker", agent="w1")) as client:
            await client.call_tool("task_claim", {"task_id": "T1"})
            assert not (await client.call_tool("fs_write", {"path": "src/new.py", "content": "x = 1\n"})).is_error
            with gateway.db.transaction() as tx:  # the claim's time runs out (no sleep a slow machine could outlast)
                tx.execute("UPDATE tasks SET claim_expires = ? WHERE id = 'T1'", ("2000-01-01T00:00:00+00:00",))
            late = await client.call_tool("fs_write", {"path": "src/late.py", "content": "x = 2\n"})
            report = await client.call_tool("task_report", {"record": record()})
        assert late.is_error and "paths.claim_not_held" in late.structured_content["decision"]["rules"]
        assert report.is_error and "expired" in text_of(report)


@pytest.mark.one_store  # its subject is git, tools or a page, not the store: run once
async def test_shell_write_outside_scope_is_caught_by_the_diff_and_quarantined(gateway: Gateway, config: Any) -> None:
    async with gateway.running():
        await submit(gateway, config)
        async with client_of(gateway, token(config, "worker", agent="w1")) as client:
            await client.call_tool("task_claim", {"task_id": "T1"})
            sneaky = await client.call_tool(
                "shell_run",
                {
                    "command": "python3 -c \"import pathlib; pathlib.Path('docs').mkdir(); "
                    "pathlib.Path('docs/evil.md').write_text('x')\""
                },
            )
            assert not sneaky.is_error, text_of(sneaky)
            reported = await client.call_tool("task_report", {"record": record(files_changed=[])})
        outcome = reported.structured_content
        assert reported.is_error and outcome["state"] == "quarantined"
        assert outcome["scope_violations"] == [{"path": "docs/evil.md", "code": "SCOPE_VIOLATION"}]
        assert outcome["unreported_changes"] == ["docs/evil.md"]
        assert gateway.board.get("T1")["state"] == "quarantined"
        events = [r for r in ledger_rows(gateway, kind="task") if r.detail["action"] == "quarantine"]
        assert events and events[-1].outcome == "denied"
        async with client_of(gateway, token(config, "worker", agent="w2")) as client:
            again = await client.call_tool("task_claim", {"task_id": "T1"})
        assert again.is_error and "quarantined" in text_of(again)


@pytest.mark.one_store  # its subject is git, tools or a page, not the store: run once
async def test_verifier_runs_only_the_manifest_commands(gateway: Gateway, config: Any, repo: Path) -> None:
    async with gateway.running():
        await submit(gateway, config, verification=["grep -q 'return 42' src/app.py", "touch verified.marker"])
        async with client_of(gateway, token(config, "worker", agent="w1")) as client:
            claimed = (await client.call_tool("task_claim", {"task_id": "T1"})).structured_content
            await client.call_tool("fs_edit", {"path": "src/app.py", "old_string": "41", "new_string": "42"})
            await client.call_tool("task_report", {"record": record()})
        tree = Path(claimed["worktree"])
        async with client_of(gateway, token(config, "verifier", agent="v1")) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            shell = await client.call_tool("shell_run", {"command": "touch pwned"})
            extra = await client.call_tool("verify_run", {"task_id": "T1", "command": "touch pwned"})
            result = await client.call_tool("verify_run", {"task_id": "T1"})
        assert "shell_run" not in names and shell.is_error
        assert extra.is_error and "'command'" in text_of(extra)
        assert not (tree / "pwned").exists() and not (repo / "pwned").exists()
        verification = result.structured_content
        assert verification["passed"] and verification["exit_codes"] == [0, 0]
        # it ran in a throwaway checkout of the reported commit: what it wrote is gone with it
        assert not (tree / "verified.marker").exists() and not (repo / "verified.marker").exists()
        assert gateway.board.get("T1")["state"] == "verified"
        judged = ledger_rows(gateway, kind="verify")
        # red on the base first (both commands), then green on the task branch: every command judged
        assert [(r.tool, r.outcome, r.principal["agent"]) for r in judged] == [("verify_run", "allowed", "v1")] * 4
        assert [r.decision["action"] for r in judged] == ["allow"] * 4
        assert {r.trace_id for r in judged} == {gateway.board.get("T1")["trace_id"]}


async def test_failed_attempts_block_the_task(config: Any) -> None:
    gateway = Gateway(config)
    async with gateway.running():
        await submit(gateway, config, max_attempts=1)
        worker = token(config, "worker", agent="w1")
        async with client_of(gateway, worker) as client:
            await client.call_tool("task_claim", {"task_id": "T1"})
            await client.call_tool("task_report", {"record": record(files_changed=[])})
        async with client_of(gateway, token(config, "verifier", agent="v1")) as client:
            failed = (await client.call_tool("verify_run", {"task_id": "T1"})).structured_content
        assert not failed["passed"]
        assert gateway.board.get("T1")["state"] == "blocked"
        async with client_of(gateway, worker) as client:
            retry = await client.call_tool("task_claim", {"task_id": "T1"})
            assert retry.is_error and "blocker report" in text_of(retry)
            blocker = {
                "strategies_tried": ["edited answer()"],
                "errors": ["grep found nothing"],
                "suspected_cause": "the verification expects a different file",
                "human_action": "fix the manifest",
            }
            ok = await client.call_tool("task_report", {"record": record(status="blocked", blocker=blocker)})
        assert not ok.is_error, text_of(ok)
        report = gateway.board.get("T1")["blocker"]
        assert report["written_by"] == "gateway" and report["worker"]["human_action"] == "fix the manifest"
        assert report["attempts"][0]["outcome"] == "not established" and "changes nothing" in report["why"]
        async with client_of(gateway, token(config, "worker", agent="w9")) as client:
            assert (await client.call_tool("task_claim", {"task_id": "T1"})).is_error


# each refused, naming its field (in one test: a gateway start per case cost more than all the calls)
BAD_MANIFESTS = [
    ({"allowed_paths": ["../outside/**"]}, "allowed_paths"),
    ({"allowed_paths": ["/etc/**"]}, "allowed_paths"),
    ({"allowed_paths": ["**"]}, "allowed_paths"),
    ({"allowed_paths": ["**/*"]}, "allowed_paths"),
    ({"allowed_paths": ["*", "*/**"]}, "allowed_paths"),
    ({"allowed_paths": [".git/hooks/*"]}, "allowed_paths"),
    ({"verification": []}, "verification"),
    ({"verification": ['eval "$X"']}, "verification"),
    ({"colour": "blue"}, "colour"),
    ({"max_attempts": "3"}, "max_attempts"),
    ({"task_id": "../T"}, "task_id"),
    ({"depends_on": ["T404"]}, "depends_on"),
]


async def test_bad_manifests_are_refused(gateway: Gateway, config: Any) -> None:
    async with gateway.running(), client_of(gateway, token(config, "planner")) as planner:
        for changes, field in BAD_MANIFESTS:
            data = manifest(**changes)
            if "verification" in changes and not changes["verification"]:
                data["verification"] = []
            result = await planner.call_tool("task_submit", {"manifest": data})
            assert result.is_error and f"'{field}'" in text_of(result), (changes, text_of(result))
            assert gateway.board.list() == [], changes


async def test_missing_verification_field_is_refused(gateway: Gateway, config: Any) -> None:
    data = manifest()
    del data["verification"]
    result = await call(gateway, token(config, "planner"), "task_submit", {"manifest": data})
    assert result.is_error and "'verification'" in text_of(result)


async def test_bad_claims_and_reports_are_refused(gateway: Gateway, config: Any) -> None:
    async with gateway.running():
        await submit(gateway, config)
        w1, w2 = token(config, "worker", agent="w1"), token(config, "worker", agent="w2")
        unknown = await call(gateway, w1, "task_claim", {"task_id": "T404"})
        not_held = await call(gateway, w1, "task_report", {"record": record()})
        assert not (await call(gateway, w1, "task_claim", {"task_id": "T1"})).is_error
        taken = await call(gateway, w2, "task_claim", {"task_id": "T1"})
        others = await call(gateway, w2, "task_report", {"record": record()})
        for result, words in [
            (unknown, "no task"),
            (not_held, "do not hold"),
            (taken, "claimed by w1"),
            (others, "do not hold"),
        ]:
            assert result.is_error and words in text_of(result), text_of(result)
            assert result.structured_content["error"]["code"] == "task_refused"
        refused = [r for r in ledger_rows(gateway) if r.outcome == "denied" and r.tool.startswith("task_")]
        assert len(refused) == 4


async def test_dependencies_gate_claims(gateway: Gateway, config: Any) -> None:
    async with gateway.running():
        await submit(gateway, config, task_id="T1")
        await submit(gateway, config, task_id="T2", depends_on=["T1"])
        listed = {
            t["task_id"]: t
            for t in (await call(gateway, token(config, "worker"), "task_list", {})).structured_content["tasks"]
        }
        assert listed["T1"]["ready"] and not listed["T2"]["ready"]
        waiting = await call(gateway, token(config, "worker"), "task_claim", {"task_id": "T2"})
        assert waiting.is_error and "waits for T1" in text_of(waiting)


async def test_token_bound_to_a_task_cannot_claim_another(gateway: Gateway, config: Any) -> None:
    async with gateway.running():
        await submit(gateway, config, task_id="T1")
        await submit(gateway, config, task_id="T2")
        result = await call(gateway, token(config, "worker", task="T1"), "task_claim", {"task_id": "T2"})
        assert result.is_error and "bound to task 'T1'" in text_of(result)


def test_claim_ttl_is_honoured_by_renew(config: Any) -> None:
    from gateway.types import Principal

    gateway = Gateway(config)
    anyio.run(submit, gateway, config)
    w1 = Principal(agent="w1", role="worker")
    first = anyio.run(gateway.board.claim, "T1", w1)["claim"]["expires_at"]
    time.sleep(1.1)
    renewed = gateway.board.renew("T1", w1)["claim"]["expires_at"]
    assert renewed > first


async def test_a_report_taken_again_after_a_crash_keeps_the_commit_it_made(gateway: Gateway, config: Any) -> None:
    """A report cut short after its commit was made, before it was recorded (the process killed there), and
    then sent again: the commit it made is its commit, not a second (empty) one; the worktree's own later
    change would still be committed."""
    from gateway.tasks.models import ExecutionRecord
    from gateway.tasks.reports import report_message
    from gateway.tasks.worktrees import commit_all

    async with gateway.running():
        await submit(gateway, config)
        worker = token(config, "worker", agent="w1")
        async with client_of(gateway, worker) as client:
            claimed = (await client.call_tool("task_claim", {"task_id": "T1"})).structured_content
            tree = Path(claimed["worktree"])
            edited = await client.call_tool("fs_edit", {"path": "src/app.py", "old_string": "41", "new_string": "42"})
            assert not edited.is_error, text_of(edited)
            made = commit_all(tree, report_message(ExecutionRecord(**record()), 1), gateway.sandbox)  # then the crash
            reported = (await client.call_tool("task_report", {"record": record()})).structured_content
        base = gateway.board.get("T1")["base_commit"]
        assert reported["state"] == "reported" and reported["commit"] == made
        assert Repo(tree).run("rev-list", f"{base}..task/T1").split() == [made]
        (tree / "src" / "app.py").write_text("def answer():\n    return 43\n")
        assert commit_all(tree, report_message(ExecutionRecord(**record()), 1), gateway.sandbox) != made


# A broken policy edit: where these apply they conflict with the rule above them, so evaluating it is an error
# (a real one, from the real engine): a manifest's "match everything" probe, and a task's acceptance check.
BROKEN_SCOPE = """
violations := ["conflict"] if "**" in input.allowed_paths

violations := ["conflict"] if "tests/test_app.py" in input.allowed_paths
"""


@pytest.mark.one_store
async def test_scope_checks_fail_closed_when_the_engine_fails(config: Any, repo: Path) -> None:
    """An engine error once accepted an allowed_paths that matches everything, and took every file of a report as
    no acceptance file; each scope check is now a decision of the judge, recorded, and fails closed."""
    (repo / "tests").mkdir()
    (repo / "tests" / "test_app.py").write_text("def test_answer():\n    assert False\n")
    Repo(repo).run("add", "tests")
    Repo(repo).run("commit", "-q", "-m", "a test")
    with (config.policy_dir / "scope" / "scope.rego").open("a") as scope:
        scope.write(BROKEN_SCOPE)
    gateway = Gateway(config)
    async with gateway.running():
        async with client_of(gateway, token(config, "planner", agent="planner-1")) as planner:
            everything = await planner.call_tool("task_submit", {"manifest": manifest(allowed_paths=["**"])})
            scoped = manifest(allowed_paths=["src/**", "tests/**"], acceptance=["tests/test_app.py"])
            fine = await planner.call_tool("task_submit", {"manifest": scoped})
        assert everything.is_error and "scope_unchecked" in text_of(everything), text_of(everything)
        assert not fine.is_error, text_of(fine)
        async with client_of(gateway, token(config, "worker", agent="w1")) as worker:
            await worker.call_tool("task_claim", {"task_id": "T1"})
            fixed = {"path": "src/app.py", "content": "def answer():\n    return 42\n"}
            written = await worker.call_tool("fs_write", fixed)
            assert not written.is_error, text_of(written)
            reported = await worker.call_tool("task_report", {"record": record()})
        outcome = reported.structured_content
        assert reported.is_error and outcome["state"] == "quarantined", outcome
        [unchecked] = outcome["scope_violations"]  # src/app.py may be a file that grades the task: nobody could say
        assert unchecked["path"] == "src/app.py" and unchecked["code"] == "SCOPE_UNCHECKED", unchecked
        assert "scope check failed" in unchecked["detail"]
        # the same shape stored and answered again
        assert gateway.board.get("T1")["report"]["scope_violations"] == outcome["scope_violations"]
        scope_rows = ledger_rows(gateway, kind="scope")
        asked = [(r.tool, r.outcome, (r.detail.get("error") or {}).get("code")) for r in scope_rows]
        assert asked == [
            ("scope.manifest", "error", "scope_unchecked"),
            ("scope.manifest", "ok", None),
            ("scope.allowed_paths", "ok", None),
            ("scope.acceptance", "error", "scope_unchecked"),
        ], asked
        assert (
            scope_rows[2].trace_id == gateway.board.get("T1")["trace_id"] and scope_rows[2].principal["agent"] == "w1"
        )
