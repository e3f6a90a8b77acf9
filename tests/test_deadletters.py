"""Dead letters with real MCP clients, a real git repository and the real `gateway` command: malformed
handoffs (an execution record, a manifest, an intent proposal, calls that fail the tool's schema) are kept
whole and named in the refusal; `gateway deadletters replay` runs a fixed one through the pipeline as the
agent that sent it; an unfixed replay fails clearly and loses nothing; traces and /ui show them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import pytest
from conftest import client_of, http_gateway, ledger_rows, text_of, token

from gateway.digests import digest
from gateway.process import gateway_cli as cli
from gateway.runtime import Gateway

pytestmark = [pytest.mark.anyio, pytest.mark.both_stores]

MANIFEST = {
    "task_id": "T1",
    "objective": "Make answer() return 42",
    "allowed_paths": ["src/**"],
    "verification": ["grep -q 'return 42' src/app.py"],
}
MARKER = "API_TOKEN=hunter2hunter2"  # in every bad record: must never reach the ledger, masked on the page


def record(**changes: Any) -> dict[str, Any]:
    return {"task_id": "T1", "status": "done", "files_changed": ["src/app.py"], "next_step": MARKER, **changes}


async def claimed_with_a_change(gateway: Gateway, config: Any) -> None:
    """T1 submitted by a planner, claimed by w1, with src/app.py changed in its worktree."""
    async with client_of(gateway, token(config, "planner", agent="planner")) as client:
        assert not (await client.call_tool("task_submit", {"manifest": MANIFEST})).is_error
    async with client_of(gateway, token(config, "worker", agent="w1")) as client:
        assert not (await client.call_tool("task_claim", {"task_id": "T1"})).is_error
        edit = await client.call_tool("fs_edit", {"path": "src/app.py", "old_string": "41", "new_string": "42"})
        assert not edit.is_error, text_of(edit)


async def report(gateway: Gateway, config: Any, arguments: dict[str, Any]) -> tuple[Any, str]:
    """w1's task_report with ``arguments``: refused, naming its dead letter. Answers (result, dead letter id)."""
    async with client_of(gateway, token(config, "worker", agent="w1")) as client:
        result = await client.call_tool("task_report", arguments)
    assert result.is_error, text_of(result)
    error = result.structured_content["error"]
    assert error["code"] == "invalid_arguments"
    deadletter_id = error["deadletter_id"]
    assert f"kept as dead letter {deadletter_id}" in text_of(result)
    assert f"gateway deadletters replay {deadletter_id}" in text_of(result)
    return result, deadletter_id


def ledger_text(gateway: Gateway) -> str:
    return "\n".join(r["body"] for r in gateway.db.query("SELECT body FROM ledger"))


async def test_a_malformed_record_is_kept_whole_and_a_fixed_replay_reports_it(
    gateway: Gateway, config: Any, tmp_path: Path
) -> None:
    async with gateway.running():
        await claimed_with_a_change(gateway, config)
        sent = {"record": record(status="finished")}
        result, deadletter_id = await report(gateway, config, sent)
        assert "field 'status'" in text_of(result)

        letter = gateway.deadletters.get(deadletter_id)
        trace_id = gateway.board.get("T1")["trace_id"]
        assert letter["payload"] == sent, "kept whole, exactly as sent"
        assert (letter["kind"], letter["tool"], letter["task_id"], letter["state"]) == (
            "record",
            "task_report",
            "T1",
            "dead",
        )
        assert letter["principal"]["agent"] == "w1" and letter["principal"]["role"] == "worker"
        assert letter["trace_id"] == trace_id and "field 'status'" in letter["error"]
        assert gateway.board.get("T1")["state"] == "claimed", "nothing was reported"

        kept = [r for r in ledger_rows(gateway, kind="deadletter")]
        assert len(kept) == 1 and kept[0].outcome == "invalid" and kept[0].trace_id == trace_id
        assert kept[0].detail["deadletter_id"] == deadletter_id and kept[0].detail["kind"] == "record"
        assert kept[0].detail["task_id"] == "T1" and kept[0].arguments_digest == digest(sent)
        assert MARKER not in ledger_text(gateway) and "hunter2" not in ledger_text(gateway), "the ledger keeps a digest"
        refused = [r for r in ledger_rows(gateway) if r.tool == "task_report"]
        assert refused[-1].outcome == "invalid" and refused[-1].trace_id == trace_id

        fixed = tmp_path / "fixed.json"
        fixed.write_text(json.dumps({"record": record()}))
        done = cli(config, "deadletters", "replay", deadletter_id, "--payload", str(fixed))
        assert done.returncode == 0, done.stderr
        answer = json.loads(done.stdout)
        assert answer["deadletter_id"] == deadletter_id and answer["state"] == "replayed"
        assert answer["outcome"] == "ok" and answer["result"]["state"] == "reported"
        assert gateway.board.get("T1")["state"] == "reported"
        letter = gateway.deadletters.get(deadletter_id)
        assert letter["state"] == "replayed" and letter["replay_result"]["call_id"] == answer["call_id"]
        assert letter["payload"] == sent, "the dead letter keeps what was sent"
        replayed = [r for r in ledger_rows(gateway) if r.call_id == answer["call_id"]]
        assert replayed[-1].principal["agent"] == "w1" and replayed[-1].detail["replay_of"] == deadletter_id

        again = cli(config, "deadletters", "replay", deadletter_id)
        assert again.returncode != 0 and "already replayed" in again.stderr

        shown = cli(config, "trace", "show", "T1")
        assert shown.returncode == 0, shown.stderr
        assert f"dead letter {deadletter_id} kept: record refused: argument 'record': field 'status'" in shown.stdout
        assert "deadletter.kept" in shown.stdout and "deadletter.replayed" in shown.stdout
        assert f"dead letter {deadletter_id} replayed by" in shown.stdout
        assert "hunter2" not in shown.stdout


async def test_replaying_an_unfixed_dead_letter_fails_clearly_and_keeps_both(gateway: Gateway, config: Any) -> None:
    async with gateway.running():
        await claimed_with_a_change(gateway, config)
        sent = {"record": record(files_changed="src/app.py")}
        _, first = await report(gateway, config, sent)

        failed = cli(config, "deadletters", "replay", first)
        assert failed.returncode == 1 and failed.stdout == ""
        assert f"replay of {first} did not go through; it stays dead" in failed.stderr
        assert "field 'files_changed'" in failed.stderr and "kept as dead letter DL-" in failed.stderr

        letters = json.loads(cli(config, "deadletters", "list", "--json").stdout)["deadletters"]
        assert [d["state"] for d in letters] == ["dead", "dead"] and all("payload" not in d for d in letters)
        second = next(d["id"] for d in letters if d["id"] != first)
        assert second in failed.stderr
        assert gateway.deadletters.get(first)["payload"] == sent and gateway.deadletters.get(second)["payload"] == sent
        assert gateway.deadletters.get(first)["state"] == "dead", "nothing lost"
        again = [r for r in ledger_rows(gateway, kind="deadletter") if r.detail["deadletter_id"] == second]
        assert again[0].detail["replay_of"] == first
        assert gateway.board.get("T1")["state"] == "claimed"

        shown = cli(config, "deadletters", "show", first)
        assert shown.returncode == 0 and '"files_changed": "src/app.py"' in shown.stdout and MARKER in shown.stdout
        listed = cli(config, "deadletters", "list")
        assert first in listed.stdout and second in listed.stdout and "task_report" in listed.stdout
        unknown = cli(config, "deadletters", "show", "DL-nope")
        assert unknown.returncode == 2 and "no dead letter 'DL-nope'" in unknown.stderr


async def test_manifests_intents_and_schema_failures_are_kept(gateway: Gateway, config: Any) -> None:
    async with gateway.running():
        planner = token(config, "planner", agent="planner")
        bad_manifest = {**MANIFEST, "task_id": "T9", "handoff_notes": 5}
        async with client_of(gateway, planner) as client:
            refused = await client.call_tool("task_submit", {"manifest": bad_manifest})
            assert not (await client.call_tool("task_submit", {"manifest": MANIFEST})).is_error
            other = await client.call_tool("task_submit", {"manifest": {**MANIFEST, "objective": "something else"}})
            deploy = await client.call_tool("intent_propose", {"task_id": "T1", "action": "deploy", "arguments": {}})
            unrelated = await client.call_tool("fs_read", {"path": 5})
        assert refused.is_error and "field 'handoff_notes" in text_of(refused)
        assert other.is_error and "already exists with another manifest" in text_of(other)
        assert deploy.is_error and "'deploy'" in text_of(deploy)
        assert unrelated.is_error and "deadletter_id" not in unrelated.structured_content["error"]

        async with client_of(gateway, token(config, "worker", agent="w1")) as client:
            assert not (await client.call_tool("task_claim", {"task_id": "T1"})).is_error
            missing = await client.call_tool("task_report", {})  # fails the tool's schema: refused before it runs
        async with client_of(gateway, token(config, "verifier", agent="v1")) as client:
            extra = await client.call_tool("verify_run", {"task_id": "T1", "command": "touch pwned"})
        assert missing.is_error and "argument 'record'" in text_of(missing)
        assert extra.is_error and "'command'" in text_of(extra)

        named = {
            r.structured_content["error"]["deadletter_id"]: arguments
            for r, arguments in (
                (refused, {"manifest": bad_manifest}),
                (other, {"manifest": {**MANIFEST, "objective": "something else"}}),
                (deploy, {"task_id": "T1", "action": "deploy", "arguments": {}}),
                (missing, {}),
                (extra, {"task_id": "T1", "command": "touch pwned"}),
            )
        }
        letters = {d["id"]: d for d in gateway.deadletters.list()}
        assert set(letters) == set(named)
        for deadletter_id, arguments in named.items():
            assert gateway.deadletters.get(deadletter_id)["payload"] == arguments
        found = sorted((d["tool"], d["kind"], d["task_id"]) for d in letters.values())
        assert found == [
            ("intent_propose", "intent", "T1"),
            ("task_report", "record", "T1"),
            ("task_submit", "manifest", "T1"),
            ("task_submit", "manifest", "T9"),
            ("verify_run", "verification", "T1"),
        ]
        trace_id = gateway.board.get("T1")["trace_id"]
        by_tool = {d["tool"]: d for d in letters.values()}
        # a record refused by the schema check still joins its task's trace: the worker holds T1
        assert by_tool["task_report"]["trace_id"] == trace_id
        assert by_tool["verify_run"]["trace_id"] == trace_id


@pytest.mark.one_store  # its subject is git, tools or a page, not the store: run once
def test_the_review_page_lists_dead_letters(config: Any) -> None:
    import anyio

    gateway = Gateway(config)

    async def refused_record() -> str:
        async with gateway.running():
            await claimed_with_a_change(gateway, config)
            return (await report(gateway, config, {"record": record(status="finished")}))[1]

    deadletter_id = anyio.run(refused_record)
    admin = token(config, "admin", agent="alice")
    with (
        http_gateway(config.source) as url,
        httpx2.Client(base_url=url, headers={"Authorization": f"Bearer {admin}"}, timeout=15.0) as http,
    ):
        assert 'href="/ui/deadletters"' in http.get("/ui").text
        listing = http.get("/ui/deadletters")
        assert listing.status_code == 200
        row = listing.text.split(f"data-deadletter-id='{deadletter_id}'")[1].split("</tr>")[0]
        for shown in ("record", "task_report", "T1", "w1", "field &#x27;status&#x27;", "dead"):
            assert shown in row, shown
        assert f"/ui/deadletters/{deadletter_id}" in row
        page = http.get(f"/ui/deadletters/{deadletter_id}")
        assert page.status_code == 200
        assert "finished" in page.text and "hunter2" not in page.text, "the payload is shown, secrets masked"
        assert f"gateway deadletters replay {deadletter_id}" in page.text
        assert http.get("/ui/deadletters/DL-000000000000").status_code == 404
        assert httpx2.get(f"{url}/ui/deadletters", timeout=15.0).status_code == 401
        trace = http.get(f"/ui/trace/{gateway.board.get('T1')['trace_id']}").text
        assert "deadletter.kept" in trace and f"dead letter {deadletter_id} kept" in trace


async def test_a_dead_letter_being_replayed_elsewhere_is_not_replayed_twice(
    gateway: Gateway, config: Any, tmp_path: Path
) -> None:
    from gateway.ledger.leases import Leases, new_holder

    async with gateway.running():
        await claimed_with_a_change(gateway, config)
        _, deadletter_id = await report(gateway, config, {"record": record(status="finished")})
        fixed = tmp_path / "fixed.json"
        fixed.write_text(json.dumps({"record": record()}))
        leases, other = Leases(gateway.db), new_holder()  # another live replay of the same letter holds it
        assert leases.try_acquire(f"replay of {deadletter_id}", other)
        busy = cli(config, "deadletters", "replay", deadletter_id, "--payload", str(fixed))
        assert busy.returncode != 0 and f"dead letter {deadletter_id} is being replayed right now" in busy.stderr
        assert gateway.deadletters.get(deadletter_id)["state"] == "dead"
        leases.release(f"replay of {deadletter_id}", other)
        done = cli(config, "deadletters", "replay", deadletter_id, "--payload", str(fixed))
        assert done.returncode == 0, done.stderr
        assert gateway.deadletters.get(deadletter_id)["state"] == "replayed"
