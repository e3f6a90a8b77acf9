"""What each tier does: tier 2 leaves a working rollback point; tier 3 waits for a human, through pushed
elicitation (2025-11-25), InputRequiredResult (2026-07-28), or the pending-approval path."""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path
from typing import Any

import mcp_types as mt
import pytest
from conftest import add_role, client_of, ledger_rows, reconfigure, text_of, token

from gateway.checkpoints import Vault
from gateway.process import gateway_cli as cli
from gateway.repo import Repo
from gateway.runtime import Gateway

pytestmark = [pytest.mark.anyio, pytest.mark.both_stores]

TIER3 = {"command": "cat /etc/hostname"}  # reads outside the workspace: tier 3, and harmless to run


@pytest.fixture
def operator(config: Any) -> str:
    add_role(config, "operator", ["fs_*", "shell_run", "git_*"], max_tier=2)
    return token(config, "operator", agent="op")


@pytest.fixture
def interactive(config: Any) -> str:
    """A role gateway.yaml marks as a person at the keyboard: its client's elicitation answers approve."""
    add_role(config, "operator", ["fs_*", "shell_run", "git_*"], max_tier=2)
    # the file, for gateway processes; the loaded config the tests' in-process gateways use, in place
    config.approvals.interactive_roles[:] = reconfigure(
        config, approvals={"interactive_roles": ["operator"]}
    ).approvals.interactive_roles
    return token(config, "operator", agent="op")


@pytest.fixture
def headless(config: Any) -> str:
    add_role(config, "headless", ["fs_*", "shell_run"], max_tier=2, approvals="pending")
    return token(config, "headless", agent="bot")


def answering(action: str, approve: bool | None = None) -> Any:
    asked: list[str] = []

    async def callback(context: Any, params: mt.ElicitRequestParams) -> mt.ElicitResult:
        asked.append(params.message)
        content = {"approve": approve} if approve is not None else None
        return mt.ElicitResult(action=action, content=content)

    callback.asked = asked  # type: ignore[attr-defined]
    return callback


# --- tier 2 ---------------------------------------------------------------------------------------


@pytest.mark.one_store  # its subject is git, tools or a page, not the store: run once
async def test_tier_2_takes_a_checkpoint_that_rolls_back(operator: str, config: Any, repo: Path) -> None:
    gateway = Gateway(config)
    (repo / "scratch.txt").write_text("untracked before\n")
    async with client_of(gateway, operator) as client:
        edited = await client.call_tool("fs_edit", {"path": "src/app.py", "old_string": "41", "new_string": "0"})
        await client.call_tool("fs_write", {"path": "src/new.py", "content": "x = 1\n"})
    assert not edited.is_error
    decided = [r for r in ledger_rows(gateway) if r.tool == "fs_edit" and r.outcome == "ok"][-1]
    assert decided.decision["tier"] == 2
    checkpoint = decided.detail["safeguard"]["id"]
    assert Repo(repo).run("rev-parse", f"refs/gateway/checkpoints/{checkpoint}").strip()
    (repo / "scratch.txt").write_text("changed after\n")
    (repo / "gateway.yaml").write_text((repo / "gateway.yaml").read_text() + "# edited by the operator\n")
    assert "return 0" in (repo / "src" / "app.py").read_text()
    rolled = cli(config, "rollback", checkpoint)
    assert rolled.returncode == 0, rolled.stderr
    assert "return 41" in (repo / "src" / "app.py").read_text()
    assert not (repo / "src" / "new.py").exists(), "files created after the checkpoint are removed"
    assert (repo / "scratch.txt").read_text() == "untracked before\n", "untracked files are restored too"
    assert "edited by the operator" in (repo / "gateway.yaml").read_text(), "the gateway's own config is left alone"
    assert Repo(repo).run("status", "--porcelain").split() == ["??", "gateway.yaml", "??", "scratch.txt"]


@pytest.mark.one_store
@pytest.mark.parametrize(
    ("ignored", "where"),
    [("gateway.yaml\n", "."), ("*.yaml\n", "."), ("ops/\n", "ops"), ("/*\n!/src/\n", ".")],
    ids=["named", "by-glob", "its-directory", "everything-but-src"],
)
async def test_a_gitignore_covering_the_gateways_config_leaves_tier_2_working(
    config: Any, repo: Path, ignored: str, where: str
) -> None:
    """gateway.yaml (the one protected path that lives in the workspace) listed in .gitignore, by name, by a
    glob, by its directory (a config kept in ops/), or by an ignore-all: tier-2 calls still take their
    checkpoint and run (git add refuses a pathspec naming an ignored file), the rollback restores the work
    and leaves the config alone."""
    if where != ".":
        (repo / where).mkdir()
        moved = repo / where / "gateway.yaml"
        moved.write_text(config.source.read_text().replace("workspace: .", "workspace: .."))
        config.source.unlink()
        config = type(config).load(moved)
    (repo / ".gitignore").write_text(ignored)
    add_role(config, "operator", ["fs_*", "shell_run"], max_tier=2)
    gateway = Gateway(config)
    async with client_of(gateway, token(config, "operator", agent="op")) as client:
        edited = await client.call_tool("fs_edit", {"path": "src/app.py", "old_string": "41", "new_string": "0"})
        ran = await client.call_tool("shell_run", {"command": "echo x > src/new.py"})
    assert not edited.is_error and not ran.is_error, text_of(edited) + text_of(ran)
    checkpoints = [r.detail["safeguard"]["id"] for r in ledger_rows(gateway) if "safeguard" in r.detail]
    assert len(checkpoints) == 2
    assert config.source is not None
    config.source.write_text(config.source.read_text() + "# edited by the operator\n")
    rolled = cli(config, "rollback", checkpoints[0])
    assert rolled.returncode == 0, rolled.stderr
    assert "return 41" in (repo / "src" / "app.py").read_text() and not (repo / "src" / "new.py").exists()
    assert "edited by the operator" in config.source.read_text(), "the gateway's own config is left alone"


@pytest.mark.one_store
def test_a_checkpoint_leaves_out_a_whole_directory_and_an_ignored_file(config: Any, repo: Path) -> None:
    """What a checkpoint leaves out goes from its snapshot whole, tracked or not, ignored or not."""
    from gateway.checkpoints import snapshot

    (repo / "ops").mkdir()
    (repo / "ops" / "tracked.txt").write_text("tracked\n")
    Repo(repo).run("add", "ops/tracked.txt")
    Repo(repo).run("commit", "-q", "-m", "ops")
    (repo / "ops" / "new.txt").write_text("new\n")
    (repo / "secret.env").write_text("X=1\n")
    (repo / ".gitignore").write_text("secret.env\n")
    commit = snapshot(Repo(repo), "cp", ["ops", "secret.env"], Gateway(config).sandbox)
    files = Repo(repo).run("ls-tree", "-r", "--name-only", commit).split()
    assert "src/app.py" in files and ".gitignore" in files
    assert not [f for f in files if f.startswith("ops/") or f == "secret.env"], files


def commit_file(repo: Path, name: str, text: str, message: str) -> str:
    (repo / name).write_text(text)
    git = Repo(repo)
    git.run("add", name)
    git.run("commit", "-q", "-m", message)
    return git.run("rev-parse", "HEAD").strip()


def git_branch_deleted(repo: Path) -> tuple[str, Any]:
    git = Repo(repo)
    git.run("checkout", "-q", "-b", "feature")
    tip = commit_file(repo, "feature.txt", "feature work\n", "feature work")
    git.run("checkout", "-q", "main")

    def check() -> None:
        assert git.run("rev-parse", "-q", "--verify", "refs/heads/feature", check=False).strip() == tip

    return "git branch -D feature", check


def git_reset_hard(repo: Path) -> tuple[str, Any]:
    tip = commit_file(repo, "second.txt", "second\n", "second commit")

    def check() -> None:
        assert Repo(repo).run("rev-parse", "refs/heads/main").strip() == tip
        assert (repo / "second.txt").read_text() == "second\n"

    return "git reset --hard HEAD~1", check


def git_stash_dropped(repo: Path) -> tuple[str, Any]:
    git = Repo(repo)
    (repo / "src" / "app.py").write_text("def answer():\n    return 7\n")
    git.run("stash", "push", "-q", "-m", "older work")
    (repo / "README.md").write_text("# stashed readme\n")
    git.run("stash", "push", "-q", "-m", "newer work")

    def check() -> None:
        listed = git.run("stash", "list", "--format=%gs").splitlines()
        assert [line.split(": ", 1)[-1] for line in listed] == ["newer work", "older work"]
        assert "return 7" in git.run("stash", "show", "-p", "stash@{1}")

    return "git stash drop", check


@pytest.mark.one_store  # its subject is git, tools or a page, not the store: run once
@pytest.mark.parametrize("operation", [git_branch_deleted, git_reset_hard, git_stash_dropped])
async def test_rollback_restores_refs_and_stashes_a_tier_2_git_command_changed(
    operator: str, config: Any, repo: Path, operation: Any
) -> None:
    command, check = operation(repo)
    gateway = Gateway(config)
    async with client_of(gateway, operator) as client:
        result = await client.call_tool("shell_run", {"command": command})
    assert result.structured_content["exit_code"] == 0, text_of(result)
    safeguard = result.meta["io.github.mcp-policy-gateway/checkpoint"]
    assert result.structured_content["checkpoint"] == safeguard and safeguard["id"] in text_of(result)
    assert "refs and stashes" in safeguard["restores"]
    with pytest.raises(AssertionError):
        check()  # the command did what it says
    rolled = cli(config, "rollback", safeguard["id"])
    assert rolled.returncode == 0, rolled.stderr
    check()
    assert Repo(repo).run("symbolic-ref", "HEAD").strip() == "refs/heads/main"


def destroy_checkpoints(repo: Path) -> None:
    """What a tier-2 script can do to the repository's copy of its checkpoints: plain git, as an agent runs it."""
    script = (
        "git for-each-ref --format='%(refname)' refs/gateway/ | xargs -rn1 git update-ref -d\n"
        "git reflog expire --expire=now --all\n"
        "git gc -q --prune=now\n"
    )
    subprocess.run(["bash", "-ec", script], cwd=repo, check=True, capture_output=True)


@pytest.mark.one_store
async def test_rollback_survives_the_agent_destroying_the_checkpoint_in_the_repository(config: Any, repo: Path) -> None:
    branch_deleted, branch_back = git_branch_deleted(repo)
    _, commit_back = git_reset_hard(repo)
    _, stashes_back = git_stash_dropped(repo)
    # (main's old tip stays: the merge queue's worktree, made when the gateway starts, has it checked out)
    gone = Repo(repo).run("rev-parse", "refs/heads/feature", "refs/stash", "refs/stash@{1}").split()
    command = f"{branch_deleted} && git reset --hard HEAD~1 && git stash clear"
    async with client_of(Gateway(config), token(config, "developer")) as client:
        result = await client.call_tool("shell_run", {"command": command})
    assert result.structured_content["exit_code"] == 0, text_of(result)
    checkpoint = result.structured_content["checkpoint"]["id"]
    destroy_checkpoints(repo)
    git = Repo(repo)
    assert not git.run("for-each-ref", "refs/gateway/").strip()
    for sha in gone:  # the workspace's repository no longer has them: only the vault does
        assert not git.run("cat-file", "-t", sha, check=False).strip(), sha
    rolled = cli(config, "rollback", checkpoint)
    assert rolled.returncode == 0, rolled.stderr
    branch_back()
    commit_back()
    stashes_back()
    assert git.run("symbolic-ref", "HEAD").strip() == "refs/heads/main"
    assert git.run("rev-parse", f"refs/gateway/checkpoints/{checkpoint}").strip(), "the checkpoint ref is back"
    assert not git.run("fsck", "--no-dangling", "--connectivity-only", check=False).strip()


@pytest.mark.one_store  # its subject is git, tools or a page, not the store: run once
async def test_tier_1_takes_no_checkpoint(operator: str, config: Any) -> None:
    gateway = Gateway(config)
    async with client_of(gateway, operator) as client:
        await client.call_tool("fs_read", {"path": "README.md"})
    assert "safeguard" not in ledger_rows(gateway)[-1].detail


@pytest.mark.one_store  # its subject is git, tools or a page, not the store: run once
def test_rollback_of_unknown_checkpoint_fails_clearly(config: Any) -> None:
    result = cli(config, "rollback", "cp-nope")
    assert result.returncode == 2 and "no checkpoint" in result.stderr


# --- tier 3: pending approval ---------------------------------------------------------------------


async def test_pending_approval_approved_then_used_once(headless: str, config: Any) -> None:
    gateway = Gateway(config)
    async with gateway.running():
        async with client_of(gateway, headless) as client:
            first = await client.call_tool("shell_run", TIER3)
        pending = first.structured_content
        assert pending["status"] == "approval_pending" and not first.is_error
        assert "NOT RUN" in text_of(first) and pending["approval_id"] in text_of(first)
        listed = json.loads(cli(config, "approvals", "list").stdout)
        assert [a["id"] for a in listed] == [pending["approval_id"]]
        approval_id = pending["approval_id"]
        approved = cli(config, "approvals", "approve", approval_id, "--by", "alice", "--comment", "one-off cleanup")
        assert approved.returncode == 0, approved.stderr
        settled = [r for r in ledger_rows(gateway, kind="approval") if r.detail.get("action") == "approved"]
        assert settled[-1].detail["comment"] == "one-off cleanup" and settled[-1].detail["by"] == "alice"
        async with client_of(gateway, headless) as client:
            ran = await client.call_tool("shell_run", TIER3)
            other = await client.call_tool("shell_run", {"command": "cat /etc/hosts"})
            again = await client.call_tool("shell_run", TIER3)
        assert ran.structured_content["exit_code"] == 0
        assert other.structured_content["status"] == "approval_pending", "an approval binds to the exact call"
        assert again.structured_content["status"] == "approval_pending", "an approval is used once"
        assert json.loads(cli(config, "approvals", "list", "--all").stdout)[-1]["settled_by"] == "alice"


async def test_pending_approval_denied(headless: str, config: Any) -> None:
    gateway = Gateway(config)
    async with client_of(gateway, headless) as client:
        pending = (await client.call_tool("shell_run", TIER3)).structured_content
        assert cli(config, "approvals", "deny", pending["approval_id"]).returncode == 0
        refused = await client.call_tool("shell_run", TIER3)
    assert refused.is_error and "denied" in text_of(refused)
    assert ledger_rows(gateway)[-1].outcome == "denied"
    assert cli(config, "approvals", "approve", pending["approval_id"]).returncode == 2, "settled once only"


async def test_pending_approval_is_bound_to_the_agent(headless: str, config: Any) -> None:
    gateway = Gateway(config)
    async with gateway.running():
        other = token(config, "headless", agent="someone-else")
        async with client_of(gateway, headless) as client:
            pending = (await client.call_tool("shell_run", TIER3)).structured_content
        cli(config, "approvals", "approve", pending["approval_id"])
        async with client_of(gateway, other) as client:
            assert (await client.call_tool("shell_run", TIER3)).structured_content["status"] == "approval_pending"


# --- tier 3: elicitation --------------------------------------------------------------------------


@pytest.mark.one_store  # its subject is the client's elicitation, not the store: run once
@pytest.mark.parametrize("mode", ["legacy", "auto"])  # pushed elicitation; InputRequiredResult
async def test_an_agents_own_client_cannot_approve(operator: str, config: Any, repo: Path, mode: str) -> None:
    """By default no role's client counts as a person: an elicitation handler that always approves gets
    nothing run; the call waits for a person with an admin credential."""
    gateway = Gateway(config)
    callback = answering("accept", approve=True)
    async with client_of(gateway, operator, mode=mode, elicitation_callback=callback) as client:
        result = await client.call_tool("shell_run", {"command": "cat /etc/hostname > self-approved"})
        sneaked = await client.session.call_tool(
            "shell_run",
            {"command": "cat /etc/hostname > self-approved"},
            input_responses={"approval": mt.ElicitResult(action="accept", content={"approve": True})},
            request_state="00.ff",
            allow_input_required=True,
        )
    assert callback.asked == [], "the agent's client is never asked"
    assert result.structured_content["status"] == "approval_pending"
    assert sneaked.structured_content["status"] == "approval_pending"
    assert not (repo / "self-approved").exists()
    assert [r.outcome for r in ledger_rows(gateway)][-2:] == ["asked", "asked"]


@pytest.mark.one_store  # its subject is the client's elicitation, not the store: run once
@pytest.mark.parametrize("mode", ["legacy", "auto"])  # pushed elicitation; InputRequiredResult
async def test_elicitation_approves(interactive: str, config: Any, mode: str) -> None:
    gateway = Gateway(config)
    callback = answering("accept", approve=True)
    async with client_of(gateway, interactive, mode=mode, elicitation_callback=callback) as client:
        result = await client.call_tool("shell_run", TIER3)
    assert result.structured_content["exit_code"] == 0, text_of(result)
    assert len(callback.asked) == 1 and "cat /etc/hostname" in callback.asked[0]
    assert "reaches outside the workspace" in callback.asked[0]
    approval = ledger_rows(gateway)[-1].detail["approval"]
    assert approval["answer"] == "approved" and approval["by"].startswith("elicitation:")


@pytest.mark.one_store  # its subject is the client's elicitation, not the store: run once
@pytest.mark.parametrize("mode", ["legacy", "auto"])
@pytest.mark.parametrize(("action", "approve"), [("decline", None), ("accept", False)])
async def test_elicitation_denies(interactive: str, config: Any, mode: str, action: str, approve: bool | None) -> None:
    gateway = Gateway(config)
    async with client_of(gateway, interactive, mode=mode, elicitation_callback=answering(action, approve)) as client:
        result = await client.call_tool("shell_run", TIER3)
    assert result.is_error and "declined" in text_of(result)
    assert ledger_rows(gateway)[-1].outcome == "denied"


@pytest.mark.one_store  # its subject is the client's elicitation, not the store: run once
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_cancelled_elicitation_falls_back_to_pending(interactive: str, config: Any, mode: str) -> None:
    """Claude Code in -p mode answers every elicitation with cancel: that is not a denial."""
    gateway = Gateway(config)
    async with client_of(gateway, interactive, mode=mode, elicitation_callback=answering("cancel")) as client:
        result = await client.call_tool("shell_run", TIER3)
    assert result.structured_content["status"] == "approval_pending"


@pytest.mark.one_store  # its subject is the client's elicitation, not the store: run once
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_an_accept_that_answers_nothing_falls_back_to_pending(interactive: str, config: Any, mode: str) -> None:
    """Hermes Agent's approval prompt answers "accept" with empty content (tools/mcp_tool.py in hermes-agent
    0.19.0): neither a yes nor a no to the form's question, so a person approves out of band."""

    async def hermes(context: Any, params: mt.ElicitRequestParams) -> mt.ElicitResult:
        return mt.ElicitResult(action="accept", content={})

    gateway = Gateway(config)
    async with client_of(gateway, interactive, mode=mode, elicitation_callback=hermes) as client:
        result = await client.call_tool("shell_run", TIER3)
    assert result.structured_content["status"] == "approval_pending", text_of(result)
    assert ledger_rows(gateway)[-1].outcome == "asked"


@pytest.mark.one_store  # its subject is the client's elicitation, not the store: run once
async def test_client_without_elicitation_gets_pending(interactive: str, config: Any) -> None:
    gateway = Gateway(config)
    async with client_of(gateway, interactive, mode="legacy") as client:
        result = await client.call_tool("shell_run", TIER3)
    assert result.structured_content["status"] == "approval_pending"


@pytest.mark.one_store  # its subject is the client's elicitation, not the store: run once
async def test_forged_request_state_is_refused(interactive: str, config: Any) -> None:
    gateway = Gateway(config)
    async with client_of(gateway, interactive) as client:
        forged = {"approval": mt.ElicitResult(action="accept", content={"approve": True})}
        result = await client.session.call_tool(
            "shell_run", TIER3, input_responses=forged, request_state="00.ff", allow_input_required=True
        )
    assert result.is_error and "does not belong to this call" in text_of(result)


# --- denials as results (clients that lock a server out after errors) -------------------------------


@pytest.mark.one_store  # its subject is the shape of a denial's answer, not the store: run once
async def test_a_role_can_take_denials_as_plain_results(config: Any) -> None:
    """Hermes stops calling a server for 60 s after three errors in a row: its role answers denials as results."""
    add_role(config, "hermes", ["fs_*"], max_tier=2, denials="result", requires_claim=True)
    gateway = Gateway(config)
    async with client_of(gateway, token(config, "hermes", agent="h1")) as client:
        denied = [await client.call_tool("fs_write", {"path": f"n{i}.txt", "content": "x"}) for i in range(3)]
        invalid = await client.call_tool("fs_read", {"path": 7})
        fine = await client.call_tool("fs_read", {"path": "README.md"})
    for result in denied:  # policy denials (no claim held): plain results that say so
        content = result.structured_content
        assert not result.is_error and content["status"] == "denied", text_of(result)
        assert content["decision"]["rules"] == ["paths.no_claim"] and "nothing was run" in text_of(result)
    assert invalid.is_error, "bad input stays an error: it is the caller's bug, not a policy answer"
    assert not fine.is_error
    outcomes = [r.outcome for r in ledger_rows(gateway) if r.outcome != "started"]
    assert outcomes[-5:] == ["denied", "denied", "denied", "invalid", "ok"]


async def test_denials_as_results_still_record_the_denial(config: Any, repo: Path) -> None:
    add_role(config, "hermes", ["fs_read", "fs_list"], max_tier=2, denials="result")
    gateway = Gateway(config)
    async with client_of(gateway, token(config, "hermes", agent="h1")) as client:
        result = await client.call_tool("fs_write", {"path": "x.txt", "content": "x"})
    assert not result.is_error and result.structured_content["status"] == "denied"
    assert not (repo / "x.txt").exists()
    assert ledger_rows(gateway)[-1].outcome == "denied"


def test_gateway_processes_making_the_vault_at_once_share_one(tmp_path: Path) -> None:
    """serve --workers and replicas take their first checkpoints together: every one of them finds the vault
    (a race in `git init` failed a commit in CI before the vault was made aside and renamed into place)."""
    path = tmp_path / "checkpoints" / "vault.git"
    start = threading.Barrier(8)
    failures: list[BaseException] = []

    def make() -> None:
        start.wait()
        try:
            Vault(path)._create()
        except BaseException as exc:  # collected and asserted below
            failures.append(exc)

    threads = [threading.Thread(target=make) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert Repo(path).run("rev-parse", "--is-bare-repository").strip() == "true"
    assert [p.name for p in path.parent.iterdir()] == ["vault.git"]  # nothing left aside
