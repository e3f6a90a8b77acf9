"""``gateway demo``: the four-role workflow against a scratch repository, end to end.

A real ``gateway serve --http`` subprocess and four real MCP clients, each with its own credential:

    planner    submits a task manifest (fix calc.add, may touch calc.py and tests/)
    worker     claims it, reads and fixes calc.py; a write outside the manifest is denied; a command that
               reads outside the workspace waits for a human, who approves it with `gateway approvals`
    verifier   runs the manifest's verification in the task's worktree, approves the merge intent
    committer  commits the intent once; a replay returns the recorded outcome and merges nothing more

Every step is checked; the demo exits non-zero if the gateway did not behave as described. At the end it
prints the task's trace, from the manifest to the merge commit. The scratch directory is kept so you can
look around (``gateway --config DIR/gateway.yaml trace show TRACE``).

    gateway demo                  # in a new temporary directory
    gateway demo --dir /tmp/d     # in /tmp/d (must not exist or be empty)
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from gateway.bootstrap import init_workspace
from gateway.cli.commands import issue_token
from gateway.cli.output import gateway_command
from gateway.config import GatewayConfig
from gateway.errors import GatewayError, InvalidRequest
from gateway.process import free_port, gateway_cli, server_process
from gateway.repo import Repo

TASK_ID = "fix-add"
NOTE = "notes/calc.md"  # a shared artifact: the planner writes it, the worker revises it within the task
MANIFEST = {
    "task_id": TASK_ID,
    "objective": "calc.add subtracts instead of adding: make it add, and keep the tests green",
    "allowed_paths": ["calc.py", "tests/**"],
    "constraints": ["do not change the function's signature"],
    "verification": ["python3 -m unittest discover -s tests -q"],
    "acceptance": ["tests/**"],  # the tests grade the work: the worker cannot weaken them
    "frozen": ["calc.py:add"],
    "handoff_notes": ["the bug is on the line `return a - b`"],
    "max_attempts": 2,
}
# A check that already passes without the work: it cannot tell whether the work is done (no red phase)
DOC_TASK: dict[str, Any] = {
    "task_id": "doc-add",
    "objective": "give calc.add a docstring",
    "allowed_paths": ["calc.py"],
    "verification": ["python3 -m unittest discover -s tests -q"],
}
PROJECT = {
    "calc.py": "def add(a: int, b: int) -> int:\n    return a - b\n",
    "tests/__init__.py": "",
    "tests/test_calc.py": (
        "import unittest\n\nfrom calc import add\n\n\n"
        "class AddTest(unittest.TestCase):\n"
        "    def test_add(self) -> None:\n"
        "        self.assertEqual(add(2, 3), 5)\n"
    ),
    "README.md": "# calc\n\nA tiny project the gateway demo works on.\n",
}
ROLES = ("planner", "worker", "verifier", "committer")
# Reads a file outside the workspace: tier 3, so a human is asked; harmless to run once approved.
TIER3_COMMAND = "cat /etc/os-release"


class DemoFailed(GatewayError):
    """The gateway did not behave as the demo says it does: the demo's answer is "no" (exit 1)."""

    code = "demo_failed"


def expect(condition: bool, what: str) -> None:
    if not condition:
        raise DemoFailed(f"demo: expected {what}")


def say(actor: str, action: str, outcome: str) -> None:
    print(f"{actor:<10}{action:<46}-> {outcome}", flush=True)


def structured(result: Any) -> dict[str, Any]:
    if result.structured_content is not None:
        return dict(result.structured_content)
    text = "\n".join(getattr(block, "text", "") for block in result.content)
    try:
        return dict(json.loads(text))
    except (ValueError, TypeError):
        return {"text": text}


def text_of(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


def scratch_repository(directory: Path) -> None:
    for name, content in PROJECT.items():
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    repo = Repo(directory)
    repo.run("init", "-q", "-b", "main")
    repo.run("add", "-A")
    repo.run("-c", "user.name=demo", "-c", "user.email=demo@example.invalid", "commit", "-q", "-m", "calc: first cut")


@contextmanager
def serving(config: GatewayConfig) -> Iterator[str]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    argv = [sys.executable, "-m", "gateway", "--config", str(config.source), "serve", "--http", f"127.0.0.1:{port}"]
    try:
        with server_process(argv, f"{url}/healthz", "the gateway", log=config.state / "demo-server.log"):
            yield url
    except RuntimeError as exc:
        raise DemoFailed(f"demo: {exc}") from None


@asynccontextmanager
async def agent(url: str, bearer: str) -> AsyncIterator[Client]:
    async with (
        create_mcp_http_client(headers={"Authorization": f"Bearer {bearer}"}) as http,
        Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client,
    ):
        yield client


async def workflow(config: GatewayConfig, url: str, bearers: dict[str, str]) -> str:
    """The four roles in turn; returns the task's trace id."""
    async with agent(url, bearers["planner"]) as planner:
        names = [tool.name for tool in (await planner.list_tools()).tools]
        say("planner", "tools/list", f"{len(names)} tools: {', '.join(names)}")
        expect("fs_write" not in names, "the planner not to see fs_write")
        submitted = structured(await planner.call_tool("task_submit", {"manifest": MANIFEST}))
        expect(submitted.get("state") == "open", f"the task to open, got {submitted}")
        trace_id = str(submitted["trace_id"])
        say("planner", f"task_submit {TASK_ID}", f"open, trace {trace_id[:12]}")
        note = {"key": NOTE, "content": "add() subtracts; tests/test_calc.py shows it", "base": 0}
        shared = structured(await planner.call_tool("artifact_put", note))
        expect(shared.get("revision") == 1, f"the shared note to be revision 1, got {shared}")
        say("planner", f"artifact_put {NOTE}", f"revision 1 ({shared['digest'][:19]}…)")

    async with agent(url, bearers["worker"]) as worker:
        claim = structured(await worker.call_tool("task_claim", {"task_id": TASK_ID}))
        expect("worktree" in claim, f"a claim with a worktree, got {claim}")
        say("worker", f"task_claim {TASK_ID}", f"claimed until {claim['claim']['expires_at'][11:19]} UTC")
        read = structured(await worker.call_tool("artifact_get", {"key": NOTE, "at_least": 1}))
        expect(read.get("revision") == 1, f"the worker to read the planner's note, got {read}")
        update = {"key": NOTE, "content": read["content"] + "\nfixed: return a + b", "base": 1}
        staged = structured(await worker.call_tool("artifact_put", update))
        expect(staged.get("staged") is True, f"the worker's put to stay on its task, got {staged}")
        say("worker", f"artifact_put {NOTE} (base 1)", "staged on the task until its merge commits")
        fixed = await worker.call_tool(
            "fs_edit", {"path": "calc.py", "old_string": "return a - b", "new_string": "return a + b"}
        )
        expect(not fixed.is_error, f"the fix to be allowed: {text_of(fixed)}")
        say("worker", "fs_edit calc.py (a - b -> a + b)", "allowed (tier 2: checkpoint first)")
        stray = await worker.call_tool("fs_write", {"path": "README.md", "content": "# calc, rewritten\n"})
        expect(stray.is_error, "the out-of-scope write to be denied")
        say("worker", "fs_write README.md (not in allowed_paths)", "DENIED: " + text_of(stray).splitlines()[0][:70])

        asked = structured(await worker.call_tool("shell_run", {"command": TIER3_COMMAND}))
        expect(asked.get("status") == "approval_pending", f"the tier-3 command to wait for a human, got {asked}")
        approval_id = str(asked["approval_id"])
        say("worker", f"shell_run {TIER3_COMMAND!r}", f"tier 3: waits for approval {approval_id[:12]}")
        approved = gateway_cli(config, "approvals", "approve", approval_id, "--by", "demo-human", timeout=120)
        expect(approved.returncode == 0, f"the approval to be recorded: {approved.stderr.strip()}")
        say("human", f"gateway approvals approve {approval_id[:12]}", "approved")
        ran = structured(await worker.call_tool("shell_run", {"command": TIER3_COMMAND}))
        expect(ran.get("exit_code") == 0, f"the approved command to run, got {ran}")
        say("worker", f"shell_run {TIER3_COMMAND!r} (retry)", "ran once, exit 0")

        record = {
            "task_id": TASK_ID,
            "status": "done",
            "files_changed": ["calc.py"],
            "commands_run": [TIER3_COMMAND],
            "next_step": "verify",
        }
        reported = structured(await worker.call_tool("task_report", {"record": record}))
        expect(reported.get("scope_violations") == [], f"a clean report, got {reported}")
        say("worker", "task_report", f"{reported['state']}, scope violations: none")

    async with agent(url, bearers["verifier"]) as verifier:
        result = structured(await verifier.call_tool("verify_run", {"task_id": TASK_ID}))
        expect(result.get("passed") is True, f"verification to pass, got {result}")
        say("verifier", f"verify_run {TASK_ID}", "red on the base (the test fails), green on the task branch")

    async with agent(url, bearers["planner"]) as planner:
        proposal = {"task_id": TASK_ID, "action": "merge", "arguments": {}}
        proposed = structured(await planner.call_tool("intent_propose", proposal))
        intent_id = str(proposed["intent_id"])
        say("planner", "intent_propose merge", f"intent {intent_id[:12]} {proposed['state']}")

    async with agent(url, bearers["verifier"]) as verifier:
        approved_intent = structured(await verifier.call_tool("intent_approve", {"intent_id": intent_id}))
        expect(approved_intent.get("state") == "approved", f"the intent to be approved, got {approved_intent}")
        say("verifier", f"intent_approve {intent_id[:12]}", "approved")

    async with agent(url, bearers["committer"]) as committer:
        first = structured(await committer.call_tool("intent_commit", {"intent_id": intent_id}))
        expect(first.get("state") == "committed", f"the commit to succeed, got {first}")
        merge = str(first["outcome"]["merge_commit"])
        say("committer", f"intent_commit {intent_id[:12]}", f"committed: merge {merge[:12]}")
        replay = structured(await committer.call_tool("intent_commit", {"intent_id": intent_id}))
        expect(replay.get("replayed") is True and replay["outcome"] == first["outcome"], "the replay to change nothing")
        merges = Repo(config.workspace).run("log", "--merges", "--format=%H", "main").split()
        expect(merges == [merge], f"exactly one merge commit on main, got {merges}")
        say("committer", f"intent_commit {intent_id[:12]} (replay)", "recorded outcome returned; merges on main: 1")

    await red_phase_missing(url, bearers)
    return trace_id


async def red_phase_missing(url: str, bearers: dict[str, str]) -> None:
    """A task whose check passes before any work: not verified; the gateway blocks it with a blocker report."""
    async with agent(url, bearers["planner"]) as planner:
        await planner.call_tool("task_submit", {"manifest": DOC_TASK})
    async with agent(url, bearers["worker"]) as worker:
        await worker.call_tool("task_claim", {"task_id": DOC_TASK["task_id"]})
        await worker.call_tool(
            "fs_edit",
            {"path": "calc.py", "old_string": "-> int:\n", "new_string": '-> int:\n    """a + b"""\n'},
        )
        await worker.call_tool("task_report", {"record": {"task_id": DOC_TASK["task_id"], "status": "done"}})
    async with agent(url, bearers["verifier"]) as verifier:
        result = structured(await verifier.call_tool("verify_run", {"task_id": DOC_TASK["task_id"]}))
    expect(result.get("passed") is False, f"a check that passes on the base not to verify, got {result}")
    say("verifier", f"verify_run {DOC_TASK['task_id']}", "NOT VERIFIED: the check passes without the work")


def show_attestation(config: GatewayConfig) -> None:
    """The merge's signed attestation, verified against the gateway's published keys: who did each step."""
    attested = gateway_cli(config, "attest", "verify", "main", "--json", timeout=120)
    expect(attested.returncode == 0, f"the merge's attestation to verify: {attested.stderr.strip()}")
    result = json.loads(attested.stdout)
    say("attest", "gateway attest verify main", f"verified, signed by {result['kid']}")
    predicate = result["statement"]["predicate"]
    print(f"  policy revision {predicate['policy']['revision'][:19]}…, ledger head #{predicate['ledger']['seq']}")
    for step in predicate["steps"]:
        who = f"{step.get('agent') or '-'} ({step.get('role') or '-'})"
        print(f"  {step['step']:<20} {who:<28} credential {str(step.get('credential') or '-')[:12]}")
    for approval in predicate["approvals"]:
        print(f"  tier-3 approval {approval['id']} of {approval['tool']}, approved by {approval['approved_by']}")


def run_demo(directory: Path | None = None) -> int:
    root = Path(directory) if directory else Path(tempfile.mkdtemp(prefix="gateway-demo-"))
    root.mkdir(parents=True, exist_ok=True)
    if any(root.iterdir()):
        raise InvalidRequest(f"demo: {root} is not empty; name a new directory with --dir")
    scratch_repository(root)
    config = init_workspace(root)
    from gateway.runtime import Gateway

    gateway = Gateway(config)
    bearers = {role: issue_token(gateway, role, f"{role}-1", None, 8 * 3600)[0] for role in ROLES}
    print(f"scratch repository  {root}")
    print(f"gateway config      {config.source}\n")
    with serving(config) as url:
        print(f"gateway             {url}/mcp (embedded Rego policy, ledger in {config.state})\n")
        trace_id = anyio.run(workflow, config, url, bearers)
    verified = gateway_cli(config, "ledger", "verify", timeout=120)
    expect(verified.returncode == 0, f"the ledger chain to verify: {verified.stderr.strip()}")
    say("ledger", "gateway ledger verify", f"ok, {json.loads(verified.stdout)['checked']} events chained")
    show_attestation(config)
    history = json.loads(gateway_cli(config, "artifacts", "log", NOTE, "--json", timeout=120).stdout)
    expect([r["revision"] for r in history["revisions"]] == [2, 1], f"two revisions of {NOTE}, got {history}")
    say("artifacts", f"gateway artifacts log {NOTE}", "revision 2 became canonical with the merge")
    for revision in history["revisions"]:
        who = revision["provenance"]
        via = f", intent {who['intent'][:12]}" if who.get("intent") else ""
        print(f"  r{revision['revision']} on r{revision['base']} by {who['agent']} ({who['role']}){via}")
    print(f"\ntrace {trace_id}: from the manifest to the merge commit\n", flush=True)
    shown = gateway_cli(config, "trace", "show", trace_id, timeout=120)
    print(shown.stdout or shown.stderr, end="")
    blocked = json.loads(gateway_cli(config, "task", "show", DOC_TASK["task_id"], timeout=120).stdout)
    report = blocked["blocker"]
    print(f"\nblocker report of {DOC_TASK['task_id']} (written by the {report['written_by']}): {report['why']}")
    for attempt in report["attempts"]:
        print(f"  attempt {attempt['attempt']} ({attempt['strategy']}, {attempt['owner']}): {attempt['outcome']}")
    print(f"  next: {report['unblock_with']}")
    print(f"\nlook around: cd {root} && {gateway_command()} trace list --denied")
    return 0 if shown.returncode == 0 else 1


def main(directory: str | None = None) -> int:
    os.environ.setdefault("GIT_TERMINAL_PROMPT", "0")
    try:
        return run_demo(Path(directory) if directory else None)
    except DemoFailed as failed:  # done, and the answer is no
        print(f"gateway: {failed.message}", file=sys.stderr)
        return 1
