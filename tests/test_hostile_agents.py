"""Hostile agents against a live gateway: each class of attack that once got out, and more.

One `gateway serve --http` subprocess; real SDK clients over streamable HTTP whose elicitation handler
answers "approve" to everything (an agent approving itself); real git, real sandboxed commands. After
every attempt: nothing landed outside the worktree, no byte of a key or of the store came back, no ref
but the task's moved, the network stayed unreachable, and the ledger holds the attempt.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as mt
import pytest
from conftest import http_client, http_gateway, make_repo, text_of, workspace_for_tests

from gateway.config import GatewayConfig
from gateway.ledger.chain import Ledger
from gateway.repo import Repo
from gateway.runtime import Gateway

pytestmark = pytest.mark.anyio

ALLOWED = ["src/**", "probe.sh", "probe.py", "check.sh"]


async def approve_everything(context: Any, params: mt.ElicitRequestParams) -> mt.ElicitResult:
    return mt.ElicitResult(action="accept", content={"approve": True})


class Live:
    """The live gateway, its workspace, and what no agent may ever see or change."""

    def __init__(self, config: GatewayConfig, url: str, outside: Path) -> None:
        self.config = config
        self.url = url
        self.outside = outside
        self.repo = config.workspace
        gateway = Gateway(config, isolated=False)
        self.tokens = {
            role: gateway.tokens.issue(role=role, agent=f"{role}-1", ttl_s=3600)[0]
            for role in ("planner", "worker", "verifier", "committer", "developer")
        }
        self.secrets = [p.read_bytes() for p in config.keys_dir.iterdir() if p.is_file()]
        self.main = Repo(self.repo).run("rev-parse", "refs/heads/main").strip()
        self.answers: list[str] = []

    @asynccontextmanager
    async def client(self, role: str) -> AsyncIterator[Any]:
        async with http_client(self.url, self.tokens[role], elicitation_callback=approve_everything) as client:
            yield client

    async def call(self, client: Any, tool: str, arguments: dict[str, Any]) -> Any:
        result = await client.call_tool(tool, arguments)
        self.answers.append(text_of(result) + json.dumps(result.structured_content or {}, default=str))
        return result

    def assert_contained(self) -> None:
        """The walls held: nothing outside, no secret back, main unmoved, the state untouched."""
        assert list(self.outside.iterdir()) == [], "something landed outside the workspace"
        everything = "\n".join(self.answers)
        for secret in self.secrets:
            for line in secret.decode(errors="replace").splitlines():
                if len(line) >= 16 and "BEGIN" not in line and "END" not in line:
                    assert line not in everything, "a key came back"
            assert secret.hex() not in everything
        assert "SQLite format 3" not in everything, "bytes of the store came back"
        assert Repo(self.repo).run("rev-parse", "refs/heads/main").strip() == self.main, "main moved"
        policy = (self.config.policy_dir / "decision.rego").read_text()
        assert "allow_everything" not in policy
        with sqlite3.connect(self.config.store_path) as db:
            assert db.execute("SELECT count(*) FROM approvals WHERE settled_by = 'agent'").fetchone()[0] == 0
        assert Ledger.for_config(self.config).verify().ok


@pytest.fixture
def live(tmp_path: Path) -> Iterator[Live]:
    repo = make_repo(tmp_path / "repo")
    outside = tmp_path / "outside"
    outside.mkdir()
    config = workspace_for_tests(repo)
    with http_gateway(config.source) as url:
        yield Live(config, url, outside)


@pytest.fixture
async def worker(live: Live) -> Path:
    """A task T1 claimed by the worker; its worktree."""
    manifest = {
        "task_id": "T1",
        "objective": "make answer() return 42",
        "allowed_paths": ALLOWED,
        "verification": ["sh check.sh"],
    }
    async with live.client("planner") as planner:
        submitted = await live.call(planner, "task_submit", {"manifest": manifest})
        assert not submitted.is_error, text_of(submitted)
    async with live.client("worker") as client:
        claimed = await live.call(client, "task_claim", {"task_id": "T1"})
    return Path(claimed.structured_content["worktree"])


def attacks(live: Live) -> list[str]:
    """Commands that once got out, and more of the same classes."""
    state, keys, out = live.config.state, live.config.keys_dir, live.outside
    policy = live.config.policy_dir / "decision.rego"
    return [
        f"echo x > /dev/fd/../../..{out}/stream-write",
        f"cat /dev/fd/../../..{keys}/active",
        f"cat {keys}/*",
        f"sed -i 's/deny/allow_everything/' {policy}",
        f"sqlite3 {state}/gateway.db \"update approvals set state = 'approved', settled_by = 'agent'\"",
        f"sed '1etouch {out}/sed-e' src/app.py",
        f"sed -n 'w {out}/sed-w' src/app.py",
        f"sed 's/a/b/w {out}/sed-s-w' src/app.py",
        f"""awk '{{print "}}" > "{out}/awk-brace"}}' src/app.py""",
        f"git grep -Otouch\\ {out}/grep-O answer",
        f"GIT_EXTERNAL_DIFF={out}/x git diff HEAD~0",
        f"git log --output={out}/git-log -1",
        f'python3 -W ignore -c \'open("{out}/py-W", "w").write("x")\'',
        f"python3 <<'EOF'\nopen('{out}/heredoc', 'w').write('x')\nEOF",
        f'node <<< \'require("fs").writeFileSync("{out}/herestring", "x")\'',
        "git update-ref refs/heads/main HEAD",
        "git branch -f main HEAD",
        f"ln -s {keys} k && cat k/*",
        f"cp -r {state} stolen && ls stolen",
        f"tar cf - {keys} | base64",
        f"dd if={state}/gateway.db bs=64 count=1",
        "cat ~/.ssh/* ~/.aws/credentials ~/.netrc",
        f"curl -s http://127.0.0.1:1/ -o {out}/curl",
        f"bash -c 'echo x > {out}/bash-c'",
        f"find / -maxdepth 0 -exec touch {out}/find-exec \\;",
        "kill -9 1; pkill -f gateway; echo done",
    ]


async def test_shell_attacks_are_contained(live: Live, worker: Path) -> None:
    attempts = attacks(live)
    async with live.client("worker") as client:
        for command in attempts:
            with anyio.fail_after(60):
                await live.call(client, "shell_run", {"command": command})
    live.assert_contained()
    calls = Gateway(live.config, isolated=False).ledger.events("json_extract(body, '$.tool') = 'shell_run'", limit=5000)
    recorded = {json.dumps(e.effects or {}) for e in calls if e.outcome != "started"}
    assert len([e for e in calls if e.outcome != "started"]) >= len(attempts), "every attempt is in the ledger"
    assert recorded


async def test_scripts_the_analysis_cannot_see_into_are_contained(live: Live, worker: Path) -> None:
    """The same attacks from a script file: tier 2 (an unknown program), so only the sandbox stands in the way."""
    script = "\n".join(f"( {command}\n) 2>&1 || true" for command in attacks(live)) + "\necho finished\n"
    async with live.client("worker") as client:
        await live.call(client, "fs_write", {"path": "probe.sh", "content": script})
        ran = await live.call(client, "shell_run", {"command": "bash probe.sh"})
    assert not ran.is_error and "finished" in ran.structured_content["stdout"], text_of(ran)
    live.assert_contained()
    # the gateway is alive and answers
    async with live.client("worker") as client:
        assert not (await live.call(client, "fs_read", {"path": "src/app.py"})).is_error


async def test_a_self_approving_client_gets_nothing_run(live: Live, worker: Path) -> None:
    marker = live.outside / "approved-by-myself"
    async with live.client("developer") as client:
        result = await live.call(client, "shell_run", {"command": f"cat /etc/hostname > {marker}"})
        forged = await client.session.call_tool(
            "shell_run",
            {"command": f"cat /etc/hostname > {marker}"},
            input_responses={"approval": mt.ElicitResult(action="accept", content={"approve": True})},
            request_state="00.ff",
            allow_input_required=True,
        )
    assert result.structured_content["status"] == "approval_pending"
    assert forged.structured_content["status"] == "approval_pending" or forged.is_error
    live.assert_contained()


async def test_network_is_unreachable_without_approval(live: Live, worker: Path) -> None:
    probe = (
        "import socket\n"
        "for host in ('127.0.0.1', '1.1.1.1', 'pypi.org'):\n"
        "    try:\n"
        "        socket.create_connection((host, 80), timeout=3)\n"
        "        print('REACHED', host)\n"
        "    except OSError as exc:\n"
        "        print('no route to', host, exc)\n"
    )
    async with live.client("worker") as client:
        await live.call(client, "fs_write", {"path": "probe.py", "content": probe})
        ran = await live.call(client, "shell_run", {"command": "python3 probe.py"})
    assert "REACHED" not in ran.structured_content["stdout"], ran.structured_content
    assert ran.structured_content["stdout"].count("no route to") == 3


async def test_post_merge_verification_returns_no_secret(live: Live, worker: Path) -> None:
    """The manifest's check runs again after the merge; it tries to print the signing key into the outcome."""
    check = f"cat {live.config.keys_dir}/* 2>&1; cat $HOME/.ssh/* 2>&1; grep -q 'return 42' src/app.py\n"
    async with live.client("worker") as client:
        await live.call(client, "fs_write", {"path": "check.sh", "content": check})
        await live.call(client, "fs_edit", {"path": "src/app.py", "old_string": "41", "new_string": "42"})
        record = {"task_id": "T1", "status": "done", "files_changed": ["check.sh", "src/app.py"]}
        reported = await live.call(client, "task_report", {"record": record})
        assert not reported.is_error, text_of(reported)
    async with live.client("verifier") as client:
        verified = await live.call(client, "verify_run", {"task_id": "T1"})
        assert verified.structured_content["passed"], text_of(verified)
    async with live.client("planner") as client:
        intent = await live.call(client, "intent_propose", {"task_id": "T1", "action": "merge", "arguments": {}})
    intent_id = intent.structured_content["intent_id"]
    async with live.client("verifier") as client:
        await live.call(client, "intent_approve", {"intent_id": intent_id})
    async with live.client("committer") as client:
        committed = await live.call(client, "intent_commit", {"intent_id": intent_id})
    assert committed.structured_content["state"] == "committed", text_of(committed)
    live.main = Repo(live.repo).run("rev-parse", "refs/heads/main").strip()  # the one legitimate move
    live.assert_contained()


async def test_a_huge_command_does_not_stall_the_others(live: Live, worker: Path) -> None:
    big = ";".join(["cd src", "cd .."] * 900)  # ~9 KB: once minutes of policy time
    done: list[str] = []
    async with live.client("worker") as slow, live.client("worker") as fast:

        async def huge() -> None:
            await live.call(slow, "shell_run", {"command": big})
            done.append("huge")

        async def small() -> None:
            for _ in range(5):
                assert not (await live.call(fast, "fs_read", {"path": "src/app.py"})).is_error
            done.append("small")

        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                tg.start_soon(huge)
                tg.start_soon(small)
    assert sorted(done) == ["huge", "small"]


def developer_attacks(live: Live) -> dict[str, str]:
    """A developer works in the workspace itself, .git included: ways to make the gateway's own git (its
    next checkpoint, `git add -A` outside the sandbox) run a clean filter of the agent's making."""
    ran = live.outside / "filter-ran"
    evil = f"git config -f {{config}} filter.evil.clean 'touch {ran}; cat' && echo '* filter=evil' > .gitattributes"
    return {
        # the audit's reproduction: the read-only config would move with a renamed .git
        "rename": "mv .git .git-moved && cp -r .git-moved .git && " + evil.format(config=".git/config"),
        # a commondir file sends git to a repository directory of the agent's making
        "commondir": f"cp -r .git evil && {evil.format(config='evil/config')} && echo $PWD/evil > .git/commondir",
        # a repository nested in the work tree has its own config; status would look inside it
        "nested": (
            "git init -q nested && cd nested && echo a > f && git add f && git -c user.name=a -c user.email=a@b "
            f"commit -qm x && {evil.format(config='.git/config')} && echo b > f && cd .. && git add nested"
        ),
    }


@pytest.mark.parametrize("attack", ["rename", "commondir", "nested"])
async def test_a_developer_cannot_get_its_git_config_run_outside(live: Live, attack: str) -> None:
    """A script (tier 2: only the sandbox stands in the way) plants the config; the gateway's next
    checkpoint, git_status and git_diff must not run it."""
    script = developer_attacks(live)[attack]
    async with live.client("developer") as client:
        await live.call(client, "fs_write", {"path": "probe.sh", "content": script + "\n"})
        planted = await live.call(client, "shell_run", {"command": "bash probe.sh"})
        assert "checkpoint" in planted.structured_content, text_of(planted)
        (live.repo / "two.txt").write_text("x")
        after = await live.call(client, "shell_run", {"command": "rm -f two.txt"})
        assert not after.is_error and "checkpoint" in after.structured_content, text_of(after)
        await live.call(client, "git_status", {})
        await live.call(client, "git_diff", {})
    assert not (live.outside / "filter-ran").exists(), "the agent's filter ran outside the sandbox"
    if attack == "commondir":  # the gateway's git refuses to run on it (the user's own git would follow it)
        assert "git_refused" in live.answers[-1] and ".git/commondir" in live.answers[-1]
        (live.repo / ".git" / "commondir").unlink()  # as the operator does, told so
    live.assert_contained()
    assert (live.repo / ".git" / "config").is_file() and Repo(live.repo).is_repo()


def planted_structure(live: Live, elsewhere: Path, target: Path) -> dict[str, tuple[str, str]]:
    """What a developer can write in .git that git would follow out of the repository: (plant, undo)."""
    return {
        "commondir": (f"echo {elsewhere}/.git > .git/commondir", "rm .git/commondir"),
        "a link in refs": (f"ln -s {target} .git/refs/heads/task", "rm .git/refs/heads/task"),
        "a link in logs": (
            f"mkdir -p .git/logs/refs/heads && ln -s {target} .git/logs/refs/heads/task",
            "rm .git/logs/refs/heads/task",
        ),
        "packed-refs a link": (f"ln -s {elsewhere}/.git/packed-refs .git/packed-refs", "rm .git/packed-refs"),
        "alternates": (
            f"echo {elsewhere}/.git/objects > .git/objects/info/alternates",
            "rm .git/objects/info/alternates",
        ),
        "an objects dir a link": (f"ln -s {target} .git/objects/zz", "rm .git/objects/zz"),
        "HEAD a link": (
            f"ln -s {elsewhere}/.git/HEAD .git/HEAD.new && mv .git/HEAD.new .git/HEAD",
            "rm .git/HEAD && echo 'ref: refs/heads/main' > .git/HEAD",
        ),
    }


async def test_a_developer_cannot_send_the_gateways_git_out_of_the_repository(live: Live, tmp_path: Path) -> None:
    """A developer plants, in its own .git, what git would follow elsewhere (for refs, reflogs, objects, HEAD);
    the gateway's git (git_status, git_log, a worker's claim: worktree prune and add, the task branch and its
    reflog) refuses to run, names what it found, and writes nothing there. The worktrees admin dir, where a
    link would have `git worktree prune` empty the directory it names, is read-only to the developer."""
    elsewhere = make_repo(tmp_path / "elsewhere")
    target = tmp_path / "target"
    target.mkdir()
    refs = Repo(elsewhere).run("for-each-ref")

    async def script(client: Any, command: str) -> Any:
        """Run from a Python script that names .git only once it runs (tier 2: the analysis reads scripts, so
        only the sandbox stands in the way of what this one writes)."""
        hidden = command.replace(".git/", "$G/")
        program = (
            "import os, subprocess, sys\nos.environ['G'] = '.g' + 'it'\n"
            f"sys.exit(subprocess.run({hidden!r}, shell=True).returncode)\n"
        )
        await live.call(client, "fs_write", {"path": "probe.py", "content": program})
        return await live.call(client, "shell_run", {"command": "python3 probe.py"})

    async with live.client("planner") as planner, live.client("developer") as developer:
        sealed = await script(developer, f"mkdir -p .git/worktrees/x; ln -s {target} .git/worktrees/evil")
        assert "Read-only file system" in text_of(sealed), text_of(sealed)
        for n, (what, (plant, undo)) in enumerate(planted_structure(live, elsewhere, target).items()):
            manifest = {"task_id": f"P{n}", "objective": "x", "allowed_paths": ALLOWED, "verification": ["true"]}
            submitted = await live.call(planner, "task_submit", {"manifest": manifest})
            assert not submitted.is_error, (what, live.answers[-1])
            planted = await script(developer, plant)
            assert planted.structured_content.get("exit_code") == 0, (what, text_of(planted))
            for tool, arguments in (("git_status", {}), ("git_log", {}), ("task_submit", {"manifest": manifest})):
                answer = await live.call(developer if tool != "task_submit" else planner, tool, arguments)
                assert answer.is_error and "git_refused" in live.answers[-1], (what, tool, live.answers[-1])
            async with live.client("worker") as worker:
                claimed = await live.call(worker, "task_claim", {"task_id": f"P{n}"})
            assert claimed.is_error and "git_refused" in live.answers[-1], (what, live.answers[-1])
            assert list(target.iterdir()) == [], (what, "the gateway's git wrote through the link")
            assert Repo(elsewhere).run("for-each-ref") == refs
            undone = await script(developer, undo)
            assert undone.structured_content.get("exit_code") == 0, (what, text_of(undone))
        assert not (await live.call(developer, "git_status", {})).is_error
    assert not (live.repo / ".git" / "worktrees" / "evil").exists()
    live.assert_contained()


def test_a_rewritten_ledger_is_found(live: Live) -> None:
    """Someone with write access to the store (never an agent: the state dir is out of their reach) deletes
    a denial and recomputes the chain: `gateway ledger verify` still finds it."""
    from gateway.digests import canonical_json
    from gateway.ledger.chain import GENESIS, chain_hash

    Gateway(live.config, isolated=False).ledger.append({"tool": "shell_run", "outcome": "denied"})
    db = sqlite3.connect(live.config.store_path)
    rows = [json.loads(r[0]) for r in db.execute("SELECT body FROM ledger ORDER BY seq")]
    kept = [r for r in rows if r.get("outcome") != "denied"]
    db.execute("DELETE FROM ledger")
    prev = GENESIS
    for seq, body in enumerate(kept, start=1):
        body.update(seq=seq, prev_hash=prev)
        prev = chain_hash(body)
        db.execute(
            "INSERT INTO ledger (seq, body, prev_hash, hash) VALUES (?, ?, ?, ?)",
            (seq, canonical_json(body), body["prev_hash"], prev),
        )
    db.commit()
    db.close()
    verified = subprocess.run(
        [sys.executable, "-m", "gateway", "--config", str(live.config.source), "ledger", "verify"],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=60,
    )
    assert (verified.returncode == 1 and "HMAC" in verified.stderr) or "cut off" in verified.stderr, verified.stderr
