"""Convergence, with real git and real MCP clients: red then green, read-only acceptance files, clean
attempts, strategy limits and gateway-written blocker reports, escalation, separation of duty, the handoff
shapes of notes/handoff-artifacts.md, frozen interfaces, the merge ceremony, claims expiring on time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from conftest import ledger_rows, reconfigure, text_of, token
from test_merge_queue import approve, call, client, commit, started, submit, work

from gateway.process import gateway_cli
from gateway.repo import Repo

pytestmark = pytest.mark.anyio

FIX = {"src/app.py": "def answer():\n    return 42\n"}
CHECK = ["grep -q 'return 42' src/app.py"]


async def test_a_check_that_passes_on_the_base_is_not_verified(config: Any, repo: Path) -> None:
    async with started(config) as gateway:
        await submit(gateway, "T1", ["src/**"], ["test -f src/app.py"])  # true before any work: no red phase
        await work(gateway, "T1", FIX)
        result = await call(gateway, token(config, "verifier", agent="v"), "verify_run", {"task_id": "T1"})
        assert not result.structured_content["passed"] and "red phase missing" in text_of(result)
        task = gateway.board.get("T1")
        assert task["state"] == "blocked" and task["blocker"]["written_by"] == "gateway"
        assert "red phase missing" in task["blocker"]["why"]
        # the planner states why no red phase applies: recorded, and then green alone verifies
        await call(
            gateway,
            token(config, "planner", agent="planner"),
            "task_amend",
            {
                "manifest": {
                    "task_id": "T1",
                    "objective": "do T1",
                    "allowed_paths": ["src/**"],
                    "verification": ["test -f src/app.py"],
                    "no_red_phase": "a refactoring: behaviour must not change",
                },
                "why": "no red phase for a refactoring",
            },
        )
        await work(gateway, "T1", FIX, agent="worker-2")
        green = await call(gateway, token(config, "verifier", agent="v"), "verify_run", {"task_id": "T1"})
        assert green.structured_content["passed"], text_of(green)
        verified = [r for r in ledger_rows(gateway, kind="task") if r.detail["action"] == "verify"][-1]
        assert verified.detail["red"] == "skipped: a refactoring: behaviour must not change"


async def test_red_then_green_and_an_empty_diff_is_never_verified(config: Any, repo: Path) -> None:
    async with started(config) as gateway:
        await submit(gateway, "T1", ["src/**"], CHECK)
        await work(gateway, "T1", FIX)
        green = await call(gateway, token(config, "verifier", agent="v"), "verify_run", {"task_id": "T1"})
        assert green.structured_content["passed"]
        red = [r for r in ledger_rows(gateway, kind="task") if r.detail["action"] == "red_phase"]
        assert len(red) == 1 and red[0].detail["failed"] and red[0].detail["exit_codes"] == [1]
        await submit(gateway, "T2", ["src/**"], CHECK)
        await work(gateway, "T2", {})
        empty = await call(gateway, token(config, "verifier", agent="v"), "verify_run", {"task_id": "T2"})
        assert not empty.structured_content["passed"] and "changes nothing" in text_of(empty)


async def test_a_worker_cannot_edit_its_acceptance_files(config: Any, repo: Path) -> None:
    (repo / "tests").mkdir()
    (repo / "tests" / "test_app.py").write_text("def test_answer():\n    assert True\n")
    Repo(repo).run("add", "tests")
    Repo(repo).run("commit", "-q", "-m", "a test")
    async with started(config) as gateway:
        await submit(gateway, "T1", ["src/**", "tests/**"], CHECK, acceptance=["tests/test_app.py"])
        async with client(gateway, token(config, "worker", agent="w")) as worker:
            await worker.call_tool("task_claim", {"task_id": "T1"})
            written = await worker.call_tool("fs_write", {"path": "tests/test_app.py", "content": "# weakened\n"})
            shell = await worker.call_tool("shell_run", {"command": "echo 'pass' > tests/test_app.py"})
            other = await worker.call_tool("fs_write", {"path": "tests/test_more.py", "content": "x = 1\n"})
        assert written.is_error and "paths.acceptance" in written.structured_content["decision"]["rules"]
        assert shell.is_error and "paths.acceptance" in shell.structured_content["decision"]["rules"]
        assert not other.is_error, text_of(other)
        worktree = Path(gateway.board.get("T1")["worktree"])
        assert (worktree / "tests" / "test_app.py").read_text().startswith("def test_answer")


async def test_attempt_two_starts_without_attempt_one_changes(config: Any, repo: Path) -> None:
    async with started(config) as gateway:
        await submit(gateway, "T1", ["src/**"], CHECK)
        async with client(gateway, token(config, "worker", agent="w")) as worker:
            await worker.call_tool("task_claim", {"task_id": "T1"})
            await worker.call_tool("fs_write", {"path": "src/half.py", "content": "half = 'finished'\n"})
            await worker.call_tool("task_release", {"task_id": "T1"})
            again = await worker.call_tool("task_claim", {"task_id": "T1"})
        worktree = Path(again.structured_content["worktree"])
        assert again.structured_content["claim"]["attempt"] == 2
        assert not (worktree / "src" / "half.py").exists(), "attempt 2 starts clean"
        assert Repo(repo).run("show", "refs/gateway/attempts/T1/1:src/half.py") == "half = 'finished'\n"


async def test_exhausted_limits_block_with_a_gateway_blocker_report(config: Any, repo: Path) -> None:
    async with started(config) as gateway:
        limits = {"max_attempts_per_strategy": 1, "max_strategy_shifts": 1}
        await submit(gateway, "T1", ["src/**"], CHECK, **limits)
        verifier = token(config, "verifier", agent="v")
        await work(gateway, "T1", {"src/app.py": "def answer():\n    return 40\n"}, agent="w")
        first = await call(gateway, verifier, "verify_run", {"task_id": "T1"})
        assert not first.structured_content["passed"]
        async with client(gateway, token(config, "worker", agent="w")) as worker:
            same = await worker.call_tool("task_claim", {"task_id": "T1"})
            assert same.is_error and "strategy_shift" in text_of(same)
            no_reason = await worker.call_tool(
                "task_claim", {"task_id": "T1", "strategy_shift": {"approach": "rewrite", "reason": ""}}
            )
            assert no_reason.is_error and "'strategy_shift'" in text_of(no_reason)
            shifted = await worker.call_tool(
                "task_claim",
                {"task_id": "T1", "strategy_shift": {"approach": "rewrite answer()", "reason": "editing failed"}},
            )
            assert shifted.structured_content["strategy"] == "rewrite answer()", text_of(shifted)
            await worker.call_tool("fs_write", {"path": "src/app.py", "content": "def answer():\n    return 43\n"})
            await worker.call_tool("task_report", {"record": {"task_id": "T1", "status": "done"}})
        second = await call(gateway, verifier, "verify_run", {"task_id": "T1"})
        assert not second.structured_content["passed"]
        task = gateway.board.get("T1")
        assert task["state"] == "blocked"
        report = task["blocker"]
        assert report["written_by"] == "gateway" and report["strategies_tried"] == ["initial", "rewrite answer()"]
        assert [a["outcome"] for a in report["attempts"]] == ["failed", "failed"]
        assert [a["verification"]["exit_codes"] for a in report["attempts"]] == [[1], [1]]
        assert all(a["verification"]["output"] and a["diff"]["paths"] == ["src/app.py"] for a in report["attempts"])
        steps = [r.detail["action"] for r in ledger_rows(gateway, kind="task")]
        assert "strategy_shift" in steps and "blocker_report" in steps
        shown = gateway_cli(config, "task", "show", "T1")
        assert shown.returncode == 0 and "rewrite answer()" in shown.stdout
        trace = gateway_cli(config, "trace", "show", task["trace_id"])
        assert "STRATEGY SHIFT: rewrite answer()" in trace.stdout, trace.stdout[-2000:]
        # the planner reads the same blocker report and attempts over MCP (task_show, read-only, tier 1)
        read = await call(gateway, token(config, "planner", agent="planner"), "task_show", {"task_id": "T1"})
        shown_task = read.structured_content
        assert not read.is_error and shown_task["blocker"] == report and shown_task["state"] == "blocked"
        assert [a["outcome"] for a in shown_task["history"]] == ["failed", "failed"] and "worktree" not in shown_task
        [row] = [r for r in ledger_rows(gateway) if r.tool == "task_show"]
        assert (row.outcome, row.decision["tier"]) == ("ok", 1)
        hidden = await call(gateway, token(config, "worker", agent="w"), "task_show", {"task_id": "T1"})
        assert hidden.is_error and "no tool named 'task_show'" in text_of(hidden)


async def test_requeue_amend_and_abandon(config: Any, repo: Path) -> None:
    async with started(config) as gateway:
        await submit(gateway, "T1", ["src/**"], CHECK, max_attempts=1)
        await submit(gateway, "T2", ["docs/**"], ["test -f docs/x"], depends_on=["T1"])
        await work(gateway, "T1", {"src/app.py": "def answer():\n    return 40\n"}, agent="w")
        await call(gateway, token(config, "verifier", agent="v"), "verify_run", {"task_id": "T1"})
        assert gateway.board.get("T1")["state"] == "blocked"
    requeued = gateway_cli(config, "task", "requeue", "T1", "--why", "the check was flaky")
    assert requeued.returncode == 0, requeued.stderr
    async with started(config) as gateway:
        task = gateway.board.get("T1")
        assert task["state"] == "open" and task["failures"] == 0 and len(task["history"]) == 1
        await call(gateway, token(config, "worker", agent="w"), "task_claim", {"task_id": "T1"})
    held = gateway_cli(config, "task", "requeue", "T1")
    assert held.returncode == 2 and "live claim" in held.stderr
    (config.workspace.parent / "v2.yaml").write_text(
        "task_id: T1\nobjective: answer 43\nallowed_paths: ['src/**']\n"
        "verification: [\"grep -q 'return 43' src/app.py\"]\n"
    )
    under_claim = gateway_cli(config, "task", "amend", "T1", str(config.workspace.parent / "v2.yaml"))
    assert under_claim.returncode == 2 and "live claim" in under_claim.stderr
    async with started(config) as gateway:
        await call(gateway, token(config, "worker", agent="w"), "task_release", {"task_id": "T1"})
    amended = gateway_cli(config, "task", "amend", "T1", str(config.workspace.parent / "v2.yaml"), "--why", "43 now")
    assert amended.returncode == 0, amended.stderr
    async with started(config) as gateway:
        task = gateway.board.get("T1")
        assert task["manifest_version"] == 2 and task["manifest"]["objective"] == "answer 43"
        versions = gateway.db.query("SELECT version FROM task_manifests WHERE task_id = 'T1' ORDER BY version")
        assert [v["version"] for v in versions] == [1, 2]
    abandoned = gateway_cli(config, "task", "abandon", "T1", "--why", "not needed")
    assert abandoned.returncode == 0 and '"T2"' in abandoned.stdout
    async with started(config) as gateway:
        dependent = gateway.board.get("T2")
        assert dependent["state"] == "blocked" and "abandoned" in dependent["blocker"]["why"]
    again = gateway_cli(config, "task", "amend", "T1", str(config.workspace.parent / "v2.yaml"))
    assert again.returncode == 2 and "abandoned" in again.stderr
    # each refused escalation is one ledger row in the task's trace, saying who asked and why it was refused
    async with started(config) as gateway:
        refused = [r for r in ledger_rows(gateway, kind="task") if r.detail["action"] == "escalation_refused"]
        assert [(r.detail["asked"], r.outcome) for r in refused] == [("requeue", "denied"), ("amend", "denied"),
                                                                     ("amend", "denied")]  # fmt: skip
        assert "live claim" in refused[0].detail["error"]["message"] and refused[0].detail["by"]
        assert {r.trace_id for r in refused} == {gateway.board.get("T1")["trace_id"]}
        trace = gateway_cli(config, "trace", "show", gateway.board.get("T1")["trace_id"])
    assert "amend by" in trace.stdout and "REFUSED: task 'T1' is abandoned" in trace.stdout, trace.stdout


async def test_the_agent_that_worked_a_task_cannot_verify_approve_or_commit_it(config: Any, repo: Path) -> None:
    async with started(config) as gateway:
        await submit(gateway, "T1", ["src/**"], CHECK)
        await work(gateway, "T1", FIX, agent="solo")
        own = await call(gateway, token(config, "verifier", agent="solo"), "verify_run", {"task_id": "T1"})
        assert own.is_error and own.structured_content["decision"]["rules"] == ["duty.worker_grades_own_work"]
        verified = await call(gateway, token(config, "verifier", agent="verifier"), "verify_run", {"task_id": "T1"})
        assert verified.structured_content["passed"], text_of(verified)
        proposed = await call(
            gateway,
            token(config, "planner", agent="planner"),
            "intent_propose",
            {"task_id": "T1", "action": "merge", "arguments": {}},
        )
        intent_id = proposed.structured_content["intent_id"]
        solo = token(config, "verifier", agent="solo")
        own_approval = await call(gateway, solo, "intent_approve", {"intent_id": intent_id})
        assert own_approval.is_error
        assert own_approval.structured_content["decision"]["rules"] == ["duty.worker_grades_own_work"]
        assert "may not approve a merge of it" in text_of(own_approval)
        assert gateway.intents.get(intent_id)["state"] == "proposed"
        verifier = token(config, "verifier", agent="verifier")
        approved = await call(gateway, verifier, "intent_approve", {"intent_id": intent_id})
        assert approved.structured_content["state"] == "approved", text_of(approved)
        own_commit = await call(
            gateway, token(config, "committer", agent="solo"), "intent_commit", {"intent_id": intent_id}
        )
        assert (
            own_commit.is_error and "duty.worker_grades_own_work" in own_commit.structured_content["decision"]["rules"]
        )
        assert (await commit(gateway, intent_id)).structured_content["state"] == "committed"


async def test_duty_judges_the_task_a_call_names_whatever_task_its_token_is_bound_to(config: Any, repo: Path) -> None:
    """The red team's probe: an agent that worked T2, holding a credential bound to T1, verified T2 (the call
    was judged against T1, which it never worked). Now a call is judged against the task it names: a token
    bound to another task is refused, saying so, and one bound to the task itself meets the duty rule."""
    async with started(config) as gateway:
        await submit(gateway, "T1", ["src/a.py"], ["test -f src/a.py"])
        await work(gateway, "T1", {"src/a.py": "A = 1\n"})
        await submit(gateway, "T2", ["src/b.py"], ["test -f src/b.py"])
        await work(gateway, "T2", {"src/b.py": "B = 1\n"}, agent="solo")

        async def as_solo(role: str, bound: str, tool: str, arguments: dict[str, Any]) -> Any:
            return await call(gateway, token(config, role, agent="solo", task=bound), tool, arguments)

        elsewhere = await as_solo("verifier", "T1", "verify_run", {"task_id": "T2"})
        assert elsewhere.is_error and "bound to task 'T1', not 'T2'" in text_of(elsewhere), text_of(elsewhere)
        own = await as_solo("verifier", "T2", "verify_run", {"task_id": "T2"})
        assert own.structured_content["decision"]["rules"] == ["duty.worker_grades_own_work"], text_of(own)
        assert gateway.board.get("T2")["state"] == "reported", "nothing was verified"
        intent_id = await approve(gateway, "T2")  # verified, proposed and approved by others
        for role, tool in (("verifier", "intent_approve"), ("committer", "intent_commit")):
            elsewhere = await as_solo(role, "T1", tool, {"intent_id": intent_id})
            assert elsewhere.is_error and "bound to task 'T1', not 'T2'" in text_of(elsewhere), text_of(elsewhere)
            own = await as_solo(role, "T2", tool, {"intent_id": intent_id})
            assert "duty.worker_grades_own_work" in own.structured_content["decision"]["rules"], text_of(own)
        for bound, why in (("T1", "bound to task 'T1', not 'T2'"), ("T2", "solo worked task 'T2'")):
            report = (await as_solo("committer", bound, "merge_ceremony", {})).structured_content
            assert report["merged"] == [] and report["tasks"]["T2"]["status"] == "REFUSED", report
            assert why in report["tasks"]["T2"]["why"], report
        assert gateway.intents.get(intent_id)["state"] == "approved" and not (repo / "src" / "b.py").exists()
        # each refusal is recorded in T2's trace, judged against T2
        solo = [r for r in ledger_rows(gateway) if (r.principal or {}).get("agent") == "solo" and r.outcome == "denied"]
        assert len(solo) == 6 and {r.trace_id for r in solo} == {gateway.board.get("T2")["trace_id"]}


async def test_a_red_phase_that_did_not_run_blocks_with_the_true_reason(config: Any, repo: Path) -> None:
    """A verification command the policy does not let run (here it reaches the network: a person decides) has
    no exit code on the base: that is not "passes on the base", and the blocker report says what happened."""
    async with started(config) as gateway:
        await submit(gateway, "T1", ["src/**"], ["curl -fsS https://example.com/ok"])
        await work(gateway, "T1", FIX)
        result = await call(gateway, token(config, "verifier", agent="v"), "verify_run", {"task_id": "T1"})
        assert not result.structured_content["passed"]
        task = gateway.board.get("T1")
        assert task["state"] == "blocked" and "red phase missing" not in task["blocker"]["why"]
        assert task["blocker"]["why"].startswith("red phase not established: the verification did not run"), task
        assert "not run: the policy says ask" in task["blocker"]["why"], task["blocker"]["why"]
        assert task["red"] is None and task["failures"] == 0, "nothing was learnt about the base, nor the work"
        [red] = [r for r in ledger_rows(gateway, kind="task") if r.detail["action"] == "red_phase"]
        assert red.outcome == "error" and red.detail["not_run"], red.detail


async def test_the_handoff_shapes_of_the_source_material_are_accepted(config: Any, repo: Path) -> None:
    async with started(config) as gateway:
        await submit(
            gateway,
            "T1",
            ["src/**"],
            CHECK,
            constraints=["do not change API response schemas"],
            handoff_notes=["answer() is used by the CLI", "keep it pure"],
            schema_version="1",
            preconditions=["src/app.py exists"],
            deadline=(datetime.now(UTC) + timedelta(hours=1)).isoformat(),
            expected_artifact="ExecutionRecord",
        )
        async with client(gateway, token(config, "worker", agent="w")) as worker:
            claim = await worker.call_tool("task_claim", {"task_id": "T1"})
            assert set(claim.structured_content["claim"]) == {"task_id", "owner", "expires_at", "attempt"}
            await worker.call_tool("fs_write", {"path": "src/app.py", "content": FIX["src/app.py"]})
            record = {
                "task_id": "T1",
                "status": "needs_review",
                "files_changed": ["src/app.py"],
                "commands_run": ["python -m pytest -q"],
                "risks": ["none known"],
                "next_step": "verify",
            }
            reported = await worker.call_tool("task_report", {"record": record})
        assert not reported.is_error and reported.structured_content["state"] == "reported", text_of(reported)


async def test_a_frozen_signature_change_is_caught(config: Any, repo: Path) -> None:
    async with started(config) as gateway:
        refused = await call(
            gateway,
            token(config, "planner", agent="planner"),
            "task_submit",
            {"manifest": {"task_id": "T0", "objective": "x", "allowed_paths": ["src/**"], "verification": CHECK,
                          "frozen": ["src/app.py:nosuch"]}},
        )  # fmt: skip
        assert refused.is_error and "'frozen'" in text_of(refused) and "nosuch" in text_of(refused)
        await submit(gateway, "T1", ["src/**"], CHECK, frozen=["src/app.py:answer"])
        async with client(gateway, token(config, "worker", agent="w")) as worker:
            await worker.call_tool("task_claim", {"task_id": "T1"})
            await worker.call_tool("fs_write", {"path": "src/app.py", "content": "def answer(x):\n    return 42\n"})
            sneaky = "python3 -c \"import pathlib; p = pathlib.Path('docs'); p.mkdir(); (p / 'x.md').write_text('x')\""
            await worker.call_tool("shell_run", {"command": sneaky})
            reported = await worker.call_tool("task_report", {"record": {"task_id": "T1", "status": "done"}})
        violations = reported.structured_content["scope_violations"]
        assert reported.is_error and [v["code"] for v in violations] == ["SCOPE_VIOLATION", "FROZEN_SIGNATURE"]
        assert gateway.board.get("T1")["state"] == "quarantined"
        await submit(gateway, "T2", ["src/b.py"], ["test -f src/b.py"])
        await work(gateway, "T2", {"src/b.py": "def b():\n    return 7\n"})
        # the trace says what each violation was, in words, and each attempt's drift figures
        quarantined = gateway_cli(config, "trace", "show", gateway.board.get("T1")["trace_id"]).stdout
        clean_report = gateway_cli(config, "trace", "show", gateway.board.get("T2")["trace_id"]).stdout
    [line] = [line for line in quarantined.splitlines() if "task.quarantine" in line]
    assert "QUARANTINED (FROZEN_SIGNATURE, SCOPE_VIOLATION)" in line and '{"' not in line, line
    assert "changed docs/x.md outside the allowed paths" in line, line
    assert "FROZEN_SIGNATURE src/app.py:answer: () became (x)" in line, line
    assert "drift: 2 files (+3 -2), 1 outside the allowed paths" in line, line
    [line] = [line for line in clean_report.splitlines() if "task.report" in line]
    assert "drift: 1 files (+2 -0)" in line, line


async def test_ceremony_merges_three_leaves_one_out_and_its_dependents_wait(config: Any, repo: Path) -> None:
    config = reconfigure(config, integration={"verification": ["test ! -f src/broken.py"]})
    async with started(config) as gateway:
        for name, files in [("T1", {"src/a.py": "A = 1\n"}), ("T2", {"src/b.py": "B = 1\n"}),
                            ("T3", {"src/c.py": "C = 1\n"}), ("T4", {"src/broken.py": "X = 1\n"})]:  # fmt: skip
            path = next(iter(files))
            await submit(gateway, name, [path], [f"test -f {path}"])
            await work(gateway, name, files)
            await approve(gateway, name)
        await submit(gateway, "T5", ["src/e.py"], ["test -f src/e.py"], depends_on=["T4"])
        result = await call(gateway, token(config, "committer", agent="committer"), "merge_ceremony", {})
        report = result.structured_content
        assert report["merged"] == ["T1", "T2", "T3"], report
        assert [o["task_id"] for o in report["left_out"]] == ["T4"]
        assert "test ! -f src/broken.py" in report["left_out"][0]["why"]
        assert report["left_out"][0]["dependents_waiting"] == ["T5"]
        assert gateway.board.get("T4")["state"] == "open", "back for a new attempt"
        assert gateway.board.get("T5")["state"] == "open", "it waits for T4; only an abandoned dependency blocks"
        assert not (repo / "src" / "broken.py").exists() and (repo / "src" / "c.py").exists()
        ceremonies = ledger_rows(gateway, kind="ceremony")
        assert len(ceremonies) == 1 and ceremonies[0].detail["merged"] == ["T1", "T2", "T3"]
        steps = [r.detail for r in ledger_rows(gateway, kind="task") if r.detail["action"] == "ceremony"]
        assert {d["task_id"]: d["status"] for d in steps}["T4"] == "LEFT_OUT"


async def test_a_ceremonys_dependents_land_after_a_deferred_and_a_retried_dependency(config: Any, repo: Path) -> None:
    """T1's merge is deferred (the user's uncommitted edit is in the way), T2's fails its integration check on
    the merge commit (back for a new attempt): their dependents T3 and T4 wait, not blocked. Once the edit is
    out of the way and T2 is redone, the next ceremonies land T1 and T2, then T3 and T4."""
    config = reconfigure(config, integration={"verification": ["! grep -rq BROKEN src"]})
    committer = token(config, "committer", agent="committer")
    async with started(config) as gateway:
        await submit(gateway, "T1", ["src/app.py"], CHECK)
        await work(gateway, "T1", FIX)
        await approve(gateway, "T1")
        await submit(gateway, "T2", ["src/b.py"], ["test -f src/b.py"])
        await work(gateway, "T2", {"src/b.py": "B = 'BROKEN'\n"})
        await approve(gateway, "T2")
        await submit(gateway, "T3", ["src/c.py"], ["test -f src/c.py"], depends_on=["T1"])
        await submit(gateway, "T4", ["src/d.py"], ["test -f src/d.py"], depends_on=["T2"])
        (repo / "src" / "app.py").write_text("def answer():\n    return 41  # mine\n")

        first = (await call(gateway, committer, "merge_ceremony", {})).structured_content
        assert first["merged"] == [], first
        outcomes = {o["task_id"]: o for o in first["left_out"]}
        assert first["tasks"]["T1"]["status"] == "DEFERRED" and outcomes["T1"]["state"] == "verified"
        assert outcomes["T1"]["dependents_waiting"] == ["T3"] and "src/app.py" in outcomes["T1"]["why"]
        assert first["tasks"]["T2"]["status"] == "LEFT_OUT" and outcomes["T2"]["state"] == "open"
        assert outcomes["T2"]["dependents_waiting"] == ["T4"]
        assert {gateway.board.get(t)["state"] for t in ("T3", "T4")} == {"open"}, "they wait"

        Repo(repo).run("checkout", "-q", "--", "src/app.py")  # the user's edit out of the way
        await work(gateway, "T2", {"src/b.py": "B = 'fine'\n"})  # attempt 2
        await approve(gateway, "T2")
        second = (await call(gateway, committer, "merge_ceremony", {})).structured_content
        assert second["merged"] == ["T1", "T2"] and second["left_out"] == [], second
        for task_id, path in (("T3", "src/c.py"), ("T4", "src/d.py")):
            await work(gateway, task_id, {path: "X = 1\n"})
            await approve(gateway, task_id)
        third = (await call(gateway, committer, "merge_ceremony", {})).structured_content
    assert third["merged"] == ["T3", "T4"], third
    assert all((repo / "src" / name).exists() for name in ("b.py", "c.py", "d.py"))


async def test_the_ceremony_does_not_merge_the_work_of_the_agent_that_runs_it(config: Any, repo: Path) -> None:
    async with started(config) as gateway:
        await submit(gateway, "T1", ["src/a.py"], ["test -f src/a.py"])
        await work(gateway, "T1", {"src/a.py": "A = 1\n"}, agent="solo")
        await approve(gateway, "T1")  # verified and approved by others
        await submit(gateway, "T2", ["src/b.py"], ["test -f src/b.py"])
        await work(gateway, "T2", {"src/b.py": "B = 1\n"})
        await approve(gateway, "T2")
        result = await call(gateway, token(config, "committer", agent="solo"), "merge_ceremony", {})
        report = result.structured_content
        assert result.is_error and report["merged"] == ["T2"], report
        [refused] = report["left_out"]
        assert refused["task_id"] == "T1" and refused["rules"] == ["duty.worker_grades_own_work"]
        assert "solo worked task 'T1' and may not commit it" in refused["why"]
        assert report["tasks"]["T1"]["status"] == "REFUSED" and refused["dependents_waiting"] == []
        assert gateway.board.get("T1")["state"] == "verified" and not (repo / "src" / "a.py").exists()
        # the refusal is a judged intent_commit in T1's trace, and the ceremony step there says why
        [judged] = [r for r in ledger_rows(gateway, kind="ceremony_check") if r.outcome == "denied"]
        assert judged.trace_id == gateway.board.get("T1")["trace_id"] and judged.tool == "intent_commit"
        trace = gateway_cli(config, "trace", "show", gateway.board.get("T1")["trace_id"])
        assert "REFUSED" in trace.stdout and "may not commit it" in trace.stdout, trace.stdout
        # another committer merges it
        again = await call(gateway, token(config, "committer", agent="committer"), "merge_ceremony", {})
        assert again.structured_content["merged"] == ["T1"], again.structured_content


async def test_an_expired_claim_is_recorded_when_it_expires(config: Any, repo: Path) -> None:
    async with started(config) as gateway:
        await submit(gateway, "T1", ["src/**"], CHECK)
        await call(gateway, token(config, "worker", agent="w"), "task_claim", {"task_id": "T1"})
        assert gateway.board.sweep() == []  # the clock is injected: nothing has expired yet
        later = datetime.now(UTC) + timedelta(seconds=config.tasks.claim_ttl_s + 1)
        assert gateway.board.sweep(now=later) == ["T1"]
        task = gateway.board.get("T1")
        assert task["state"] == "open" and task["failures"] == 1
        expired = [r for r in ledger_rows(gateway, kind="task") if r.detail["action"] == "claim_expired"]
        assert len(expired) == 1 and expired[0].detail["owner"] == "w"
