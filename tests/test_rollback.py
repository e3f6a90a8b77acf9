"""`gateway rollback` on a tree a hostile agent prepared, through a live gateway.

A developer agent (tier 2 runs after a checkpoint; its client approves its own elicitations) plants things
with a script the analysis cannot see into (tier 2: only the sandbox stands in its way): index entries
that leave the worktree, symlinks at a checkpoint's targets and in their parents, directories swapped
for symlinks between the checkpoint and the rollback, a corrupted HEAD. Then a person runs
`gateway rollback` (a real CLI process). Whatever the agent did: the state dir's keys, roles and
policies are byte-for-byte as they were, the ledger and the store are whole, nothing outside the
workspace changed, and what the checkpoint recorded is back.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import make_repo, reconfigure, text_of, workspace_for_tests
from test_fs_race import swapping  # noqa: F401 (a fixture)
from test_hostile_agents import Live

from gateway.config import GatewayConfig
from gateway.errors import GatewayError
from gateway.ledger.chain import Ledger
from gateway.process import gateway_cli
from gateway.repo import Repo

pytestmark = pytest.mark.anyio

INDEX_WRITER = '''
import hashlib, struct
def plant_index(names, path=".git/index"):
    """An index of the agent's making: git's own commands refuse such paths, a file written by hand does not."""
    body = b"DIRC" + struct.pack(">LL", 2, len(names))
    for name in sorted(n.encode() for n in names):
        entry = struct.pack(">10L", 0, 0, 0, 0, 0, 0, 0o100644, 0, 0, 1) + bytes(20) + struct.pack(">H", len(name))
        entry += name
        body += entry + b"\\0" * (8 - len(entry) % 8)
    open(path, "wb").write(body + hashlib.sha1(body).digest())
'''


def manifest(root: Path) -> dict[str, str]:
    """Every file under ``root`` (symlinks not followed) and a digest of its bytes."""
    found = {}
    for path in sorted(root.rglob("*")):
        if path.is_symlink():
            found[str(path.relative_to(root))] = "link:" + str(path.readlink())
        elif path.is_file():
            found[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


class Untouched:
    """What no rollback may change, however the tree was prepared: taken before, checked after."""

    # what a running gateway and a rollback change in the state dir by themselves
    CHANGING = ("gateway.db", "ledger.head", "decisions.jsonl", "checkpoints/", "gateway-")

    def __init__(self, config: GatewayConfig, elsewhere: Path) -> None:
        self.config = config
        self.elsewhere = elsewhere
        self.state = manifest(config.state)
        self.outside = manifest(elsewhere)
        self.rows = {e.seq: e.hash for e in Ledger.for_config(config).events("1 = 1", limit=100000)}

    def check(self) -> None:
        state = manifest(self.config.state)
        for name, digest in self.state.items():
            if not name.startswith(self.CHANGING):
                assert state.get(name) == digest, f"{name} in the state dir changed"
            elif not name.endswith(("-wal", "-shm")) and "checkpoints/" not in name:
                assert name in state, f"{name} in the state dir is gone"
        assert manifest(self.elsewhere) == self.outside, "something outside the workspace changed"
        ledger = Ledger.for_config(self.config)
        assert ledger.verify().ok
        rows = {e.seq: e.hash for e in ledger.events("1 = 1", limit=100000)}
        assert {seq: rows.get(seq) for seq in self.rows} == self.rows, "the ledger lost or changed rows"


@pytest.fixture
def live(tmp_path: Path) -> Iterator[Live]:
    from conftest import http_gateway

    repo = make_repo(tmp_path / "repo")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "victim.txt").write_text("a file of the user's, outside the workspace\n")
    (elsewhere / "dir").mkdir()
    (elsewhere / "dir" / "inner.txt").write_text("inner\n")
    config = workspace_for_tests(repo)
    with http_gateway(config.source) as url:
        yield Live(config, url, elsewhere)


def rollback(config: GatewayConfig, checkpoint: str, *extra: str) -> Any:
    done = gateway_cli(config, "rollback", checkpoint, "--json", *extra)
    return done


async def run_script(live: Live, client: Any, script: str) -> dict[str, Any]:
    """The agent writes a Python script and runs it: tier 2, so the gateway takes a checkpoint first."""
    written = await live.call(client, "fs_write", {"path": "probe.py", "content": script})
    assert not written.is_error, text_of(written)
    ran = await live.call(client, "shell_run", {"command": "python3 probe.py"})
    assert not ran.is_error and ran.structured_content["exit_code"] == 0, text_of(ran)
    return ran.structured_content["checkpoint"]


def rolled_back_untouched(live: Live, checkpoint: str) -> None:
    """A person rolls the checkpoint back: it works, and the state dir and the world outside are as they were."""
    guard = Untouched(live.config, live.outside)
    done = rollback(live.config, checkpoint)
    guard.check()
    assert done.returncode == 0, done.stderr


def repository_sane(live: Live) -> None:
    git = Repo(live.repo)
    assert git.run("symbolic-ref", "HEAD").strip() == "refs/heads/main"
    assert git.run("rev-parse", "refs/heads/main").strip() == live.main


async def test_planted_index_entries_remove_nothing_outside(live: Live) -> None:
    """Index entries with '..', absolute paths, paths into .git and through symlinked dirs into the state dir:
    the files to remove come from the gateway's own record, never from an index the agent wrote."""
    state, keys, elsewhere = live.config.state, live.config.keys_dir, live.outside
    planted = [
        "../elsewhere/victim.txt",
        str(elsewhere / "dir" / "inner.txt"),
        ".git/HEAD",
        ".git/config",
        "st/gateway.db",
        "st/ledger.head",
        "st/roles/developer.yaml",
        *(f"ky/{p.name}" for p in keys.iterdir()),
        "src/app.py",
    ]
    script = INDEX_WRITER + (
        f"import os\nos.symlink({str(state)!r}, 'st')\nos.symlink({str(keys)!r}, 'ky')\n"
        f"os.symlink({str(elsewhere)!r}, 'out')\nplant_index({planted!r})\n"
        "open('src/new.py', 'w').write('x = 1\\n')\n"
        "open('.gitignore', 'w').write('st\\nky\\nout\\n')\n"  # ignored: no listing of untracked files has them
    )
    async with live.client("developer") as client:
        checkpoint = await run_script(live, client, script)
    rolled_back_untouched(live, checkpoint["id"])
    assert not (live.repo / "src" / "new.py").exists()
    repository_sane(live)
    assert (live.repo / ".git" / "config").is_file()


@pytest.mark.parametrize("where", ["target", "parent"])
async def test_a_symlink_at_a_target_or_in_a_parent_is_replaced_not_followed(live: Live, where: str) -> None:
    """src/app.py (or src) becomes a symlink into the state dir's roles: rollback puts the file back in the
    workspace and writes nothing through the link."""
    roles = live.config.roles_dir
    swap = (
        f"os.remove('src/app.py')\nos.symlink({str(roles / 'developer.yaml')!r}, 'src/app.py')\n"
        if where == "target"
        else f"import shutil\nshutil.rmtree('src')\nos.symlink({str(roles)!r}, 'src')\n"
    )
    async with live.client("developer") as client:
        checkpoint = await run_script(live, client, "import os\n" + swap)
    rolled_back_untouched(live, checkpoint["id"])
    assert not (live.repo / "src").is_symlink() and not (live.repo / "src" / "app.py").is_symlink()
    assert "return 41" in (live.repo / "src" / "app.py").read_text()


async def test_a_directory_swapped_for_a_symlink_after_the_checkpoint(live: Live) -> None:
    """The checkpoint saved d/developer.yaml (a role of the agent's making); a later call swaps d for a link
    to the roles dir. Rolling back the checkpoint restores the file in the workspace, not in the roles."""
    evil = "name: developer\ndescription: x\ntools: ['*']\nmax_tier: 3\napprover: true\n"
    roles = live.config.roles_dir
    async with live.client("developer") as client:
        await live.call(client, "fs_write", {"path": "d/developer.yaml", "content": evil})
        checkpoint = await run_script(live, client, "open('d/developer.yaml', 'a').write('# more\\n')\n")
        await run_script(live, client, f"import os, shutil\nshutil.rmtree('d')\nos.symlink({str(roles)!r}, 'd')\n")
    rolled_back_untouched(live, checkpoint["id"])
    assert not (live.repo / "d").is_symlink()
    assert (live.repo / "d" / "developer.yaml").read_text() == evil


async def test_a_corrupted_head_does_not_turn_the_checkpoint_into_copies(live: Live) -> None:
    """HEAD corrupted by one call; the next calls' checkpoints are still the git checkpoints the gateway
    chose when the workspace was set up, and rolling back through a swapped directory writes nothing
    into the state dir."""
    evil = "name: developer\ndescription: x\ntools: ['*']\nmax_tier: 3\napprover: true\n"
    roles = live.config.roles_dir
    async with live.client("developer") as client:
        await live.call(client, "fs_write", {"path": "d/developer.yaml", "content": evil})
        broke = await run_script(live, client, "open('.git/HEAD', 'w').write('garbage\\n')\n")
        checkpoint = await run_script(live, client, "open('d/developer.yaml', 'a').write('# more\\n')\n")
        assert checkpoint["kind"] == "git", checkpoint
        await run_script(live, client, f"import os, shutil\nshutil.rmtree('d')\nos.symlink({str(roles)!r}, 'd')\n")
    rolled_back_untouched(live, checkpoint["id"])
    assert (live.repo / "d" / "developer.yaml").read_text() == evil
    done = rollback(live.config, broke["id"])
    assert done.returncode == 0, done.stderr
    repository_sane(live)
    assert json.loads(done.stdout)["checkpoint"] == broke["id"]


@pytest.mark.parametrize("where", ["HEAD", "refs dir"])
async def test_links_in_the_repository_lead_nowhere(live: Live, where: str) -> None:
    """.git/HEAD made a link to the ledger's head, or .git/refs/tags a link to the state dir: restoring HEAD
    replaces the link itself, and git moving refs behind the wall finds no state dir there."""
    state = live.config.state
    plant = (
        f"os.remove('.git/HEAD')\nos.symlink({str(state / 'ledger.head')!r}, '.git/HEAD')\n"
        if where == "HEAD"
        else f"import shutil\nshutil.rmtree('.git/refs/tags')\nos.symlink({str(state)!r}, '.git/refs/tags')\n"
    )
    async with live.client("developer") as client:
        checkpoint = await run_script(live, client, "import os\n" + plant + "open('made.txt', 'w').write('x')\n")
    rolled_back_untouched(live, checkpoint["id"])
    assert not (live.repo / "made.txt").exists()
    if where == "HEAD":
        assert not (live.repo / ".git" / "HEAD").is_symlink()
        repository_sane(live)


async def test_a_fifo_and_a_directory_in_files_places(live: Live) -> None:
    """Variants: a FIFO where a file was (the rollback must not hang reading it) and a directory with an
    ignored file where a file was: both replaced, the plan says so first."""
    script = (
        "import os\nos.remove('README.md')\nos.mkfifo('README.md')\n"
        "os.remove('src/app.py')\nos.makedirs('src/app.py/deep')\nopen('src/app.py/deep/x.pyc', 'w').write('x')\n"
        "open('.gitignore', 'w').write('*.pyc\\n')\n"
    )
    async with live.client("developer") as client:
        checkpoint = await run_script(live, client, script)
    plan = json.loads(rollback(live.config, checkpoint["id"], "--dry-run").stdout)
    assert set(plan["write"]) == {"README.md", "src/app.py"} and "src/app.py" in plan["remove"]
    assert ".gitignore" in plan["remove"]
    done = rollback(live.config, checkpoint["id"])
    assert done.returncode == 0, done.stderr
    assert (live.repo / "README.md").read_text() == "# demo repo\n"
    assert "return 41" in (live.repo / "src" / "app.py").read_text()


async def test_a_task_worktree_rolls_back_through_a_swapped_parent(live: Live) -> None:
    """A worker's checkpoint is of its own worktree (the kind: git, as the gateway made it): a directory
    swapped for a link to the keys dir is replaced, and the keys stay where they are."""
    from test_hostile_agents import ALLOWED

    manifest_ = {"task_id": "T1", "objective": "x", "allowed_paths": ALLOWED, "verification": ["true"]}
    async with live.client("planner") as planner:
        assert not (await live.call(planner, "task_submit", {"manifest": manifest_})).is_error
    async with live.client("worker") as client:
        claimed = await live.call(client, "task_claim", {"task_id": "T1"})
        worktree = Path(claimed.structured_content["worktree"])
        keys = live.config.keys_dir
        script = f"import os, shutil\nshutil.rmtree('src')\nos.symlink({str(keys)!r}, 'src')\n"
        checkpoint = await run_script(live, client, script)
    assert checkpoint["kind"] == "git" and "refs" not in checkpoint["restores"]
    rolled_back_untouched(live, checkpoint["id"])
    assert (worktree / "src").is_dir() and not (worktree / "src").is_symlink()
    assert "return 41" in (worktree / "src" / "app.py").read_text()
    assert not any(p.name == "active" for p in worktree.rglob("*"))


# --- the plan, refusals and retention (an in-process gateway; the rollback is the CLI a person runs) ------


def test_a_dry_run_shows_the_plan_and_changes_nothing(gateway: Any, config: GatewayConfig, repo: Path) -> None:
    from gateway.cli.commands import rollback_lines

    checkpoint = gateway.checkpoints.take(repo, "call-1", paths=[])
    (repo / "src" / "app.py").write_text("changed\n")
    (repo / "new.txt").write_text("new\n")
    Repo(repo).run("branch", "feature")
    before = manifest(repo)
    done = rollback(config, checkpoint["id"], "--dry-run")
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    assert plan["dry_run"] and plan["write"] == ["src/app.py"] and plan["remove"] == ["new.txt"]
    assert plan["refs"]["delete"] == ["refs/heads/feature"] and plan["refs"]["move"] == {}
    assert manifest(repo) == before, "a dry run changes nothing"
    assert not [e for e in Ledger.for_config(config).events("json_extract(body, '$.kind') = 'rollback'")]
    lines = rollback_lines(plan)
    assert lines["would write"] == "1: src/app.py" and lines["would remove"] == "1: new.txt"
    assert lines["would move refs"] == "delete refs/heads/feature"


def forge_record(vault: Path, checkpoint: str, names: list[bytes]) -> None:
    """What only someone who can write the state dir could do: the vault's record of a checkpoint made to
    hold paths that leave the worktree or reach into .git (git's own commands never make such a tree)."""
    git = Repo(vault)
    blob = git.run("hash-object", "-w", "--stdin", input="forged\n").strip()

    def tree(entries: bytes) -> str:
        done = subprocess.run(
            ["git", "-C", str(vault), "hash-object", "-t", "tree", "-w", "--literally", "--stdin"],
            input=entries,
            capture_output=True,
            check=True,
        )
        return done.stdout.decode().strip()

    inner = tree(b"100644 x\0" + bytes.fromhex(blob))
    root = tree(b"".join(b"40000 " + n + b"\0" + bytes.fromhex(inner) for n in sorted(names)))
    commit = git.run("commit-tree", root, "-m", "forged").strip()
    git.run("update-ref", f"refs/checkpoints/{checkpoint}", commit)


def test_a_record_that_would_leave_the_worktree_is_refused_and_recorded(
    gateway: Any, config: GatewayConfig, repo: Path
) -> None:
    checkpoint = gateway.checkpoints.take(repo, "call-1", paths=[])
    forge_record(gateway.checkpoints.vault.path, checkpoint["id"], [b"..", b".git", b"ok"])
    (repo / "new.txt").write_text("new\n")
    before = manifest(repo)
    done = rollback(config, checkpoint["id"])
    assert done.returncode == 2 and "refused, nothing was changed" in done.stderr, done.stderr
    assert "'../x'" in done.stderr and "'.git/x'" in done.stderr and "into .git" in done.stderr
    assert manifest(repo) == before
    row = Ledger.for_config(config).events("json_extract(body, '$.kind') = 'rollback'")[0]
    assert row.outcome == "refused" and "../x" in row.detail["why"]


def test_a_pruned_checkpoint_says_so(config: GatewayConfig, repo: Path) -> None:
    from gateway.runtime import Gateway

    config = reconfigure(config, checkpoints={"keep": 1})
    gateway = Gateway(config)
    first = gateway.checkpoints.take(repo, "call-1", paths=[])
    (repo / "src" / "app.py").write_text("changed\n")
    second = gateway.checkpoints.take(repo, "call-2", paths=[])  # keep 1: the first is pruned now
    assert set(gateway.checkpoints.vault.checkpoints()) == {second["id"]}
    done = rollback(config, first["id"])
    assert done.returncode == 2 and "was pruned on" in done.stderr and "checkpoints.keep 1" in done.stderr
    assert "nothing was changed" in done.stderr
    assert (repo / "src" / "app.py").read_text() == "changed\n"
    row = Ledger.for_config(config).events("json_extract(body, '$.kind') = 'rollback'")[0]
    assert row.outcome == "refused" and "pruned" in row.detail["why"]
    assert rollback(config, second["id"]).returncode == 0
    gateway.checkpoints.vault.pack()  # what no checkpoint reaches is gone from the vault
    assert Repo(gateway.checkpoints.vault.path).run("count-objects", "-v").count("count: 0") == 1


def test_the_repositorys_checkpoint_refs_stay_bounded(config: GatewayConfig, repo: Path) -> None:
    from gateway.runtime import Gateway

    gateway = Gateway(reconfigure(config, checkpoints={"repository_refs": 2}))
    taken = []
    for n in range(5):
        (repo / "src" / "app.py").write_text(f"x = {n}\n")
        taken.append(gateway.checkpoints.take(repo, f"call-{n}", paths=[])["id"])
    refs = Repo(repo).run("for-each-ref", "--format=%(refname:lstrip=3)", "refs/gateway/checkpoints/").split()
    assert len(refs) == 2 and taken[-1] in refs
    assert set(taken) <= set(gateway.checkpoints.vault.checkpoints()), "the vault has every one"
    assert rollback(config, taken[0]).returncode == 0  # from the vault, its ref long gone from the repository
    assert (repo / "src" / "app.py").read_text() == "x = 0\n"


# --- a workspace without git: copies, read and written without following a link -------------------


@pytest.fixture
def plain(tmp_path: Path) -> GatewayConfig:
    """A workspace that is no repository: its checkpoints are copies of the paths a call names."""
    root = tmp_path / "plain"
    (root / "d").mkdir(parents=True)
    (root / "d" / "notes.txt").write_text("notes\n")
    return workspace_for_tests(root)


def test_a_link_to_the_keys_is_copied_as_a_link(plain: GatewayConfig) -> None:
    """The call names k, a link to the keys dir (swapped in after the decision): the copy records the link,
    never the keys, so a rollback cannot bring them into the workspace."""
    from gateway.runtime import Gateway

    gateway = Gateway(plain)
    root, keys = plain.workspace, plain.keys_dir
    os.symlink(keys, root / "k")
    os.symlink(keys, root / "d" / "k2")
    checkpoint = gateway.checkpoints.take(root, "call-1", paths=["k", "d"])
    assert checkpoint["kind"] == "files"
    objects = subprocess.run(
        ["git", "-C", str(gateway.checkpoints.vault.path), "cat-file", "--batch-all-objects", "--batch"],
        capture_output=True,
        check=True,
    ).stdout
    for key in keys.iterdir():
        assert key.read_bytes() not in objects
    (root / "k").unlink()
    (root / "k").mkdir()
    guard = Untouched(plain, plain.workspace.parent / "elsewhere-none")
    done = rollback(plain, checkpoint["id"])
    assert done.returncode == 0, done.stderr
    guard.check()
    assert (root / "k").is_symlink() and (root / "d" / "k2").is_symlink()
    assert (root / "d" / "notes.txt").read_text() == "notes\n"


def test_a_copy_restores_through_a_swapped_parent_into_the_workspace(plain: GatewayConfig) -> None:
    from gateway.runtime import Gateway

    gateway = Gateway(plain)
    root, roles = plain.workspace, plain.roles_dir
    checkpoint = gateway.checkpoints.take(root, "call-1", paths=["d/notes.txt", "d/new.txt"])
    (root / "d" / "new.txt").write_text("made by the call\n")
    shutil.rmtree(root / "d")
    os.symlink(roles, root / "d")
    guard = Untouched(plain, root.parent / "elsewhere-none")
    plan = json.loads(rollback(plain, checkpoint["id"], "--dry-run").stdout)
    assert plan["remove"] == ["d"] and plan["write"] == ["d/notes.txt"]
    done = rollback(plain, checkpoint["id"])
    assert done.returncode == 0, done.stderr
    guard.check()
    assert (root / "d" / "notes.txt").read_text() == "notes\n" and not (root / "d" / "new.txt").exists()


# --- crashes: a kill anywhere leaves the state dir and the vault whole, and the next one works -----------

TAKING = """
import sys
from gateway.config import GatewayConfig
from gateway.errors import GatewayError
from gateway.runtime import Gateway
gateway = Gateway(GatewayConfig.load(sys.argv[1]), isolated=False)
root = gateway.config.workspace
print("ready", flush=True)
for n in range(10000):
    (root / "src" / "app.py").write_text(f"x = {n}\\n")
    gateway.checkpoints.take(root, f"call-{n}", paths=[])
"""


def whole(config: GatewayConfig) -> None:
    vault = config.checkpoints_dir / "vault.git"
    if vault.exists():  # (killed before the first checkpoint made it)
        fsck = subprocess.run(["git", "-C", str(vault), "fsck", "--no-dangling"], capture_output=True, text=True)
        assert fsck.returncode == 0, fsck.stdout + fsck.stderr
    assert Ledger.for_config(config).verify().ok


def killed_after(argv: list[str], seconds: float, ready: Any) -> None:
    """Run ``argv``, wait until ``ready(proc)`` says it has begun, let it work ``seconds`` more, SIGKILL it.
    Where the kill lands is up to the machine: what is asserted after holds wherever it lands."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        ready(proc)
        time.sleep(seconds)
    finally:
        proc.kill()
        proc.wait(30)


def test_a_kill_while_checkpoints_are_taken_leaves_the_vault_whole(config: GatewayConfig, repo: Path) -> None:
    from gateway.runtime import Gateway

    argv = [sys.executable, "-c", TAKING, str(config.source)]
    for seconds in (0.02, 0.07, 0.15, 0.31):
        killed_after(argv, seconds, lambda proc: proc.stdout.readline())
        whole(config)
    gateway = Gateway(config, isolated=False)
    (repo / "src" / "app.py").write_text("after the kills\n")
    checkpoint = gateway.checkpoints.take(repo, "call-after", paths=[])
    (repo / "src" / "app.py").write_text("changed\n")
    assert rollback(config, checkpoint["id"]).returncode == 0
    assert (repo / "src" / "app.py").read_text() == "after the kills\n"
    whole(config)


def test_a_kill_during_a_rollback_then_the_next_rollback_finishes(
    gateway: Any, config: GatewayConfig, repo: Path
) -> None:
    for n in range(800):
        (repo / "src" / f"m{n % 8}").mkdir(exist_ok=True)
        (repo / "src" / f"m{n % 8}" / f"f{n}.py").write_text(f"x = {n}\n")
    checkpoint = gateway.checkpoints.take(repo, "call-1", paths=[])
    expected = manifest(repo / "src")
    shutil.rmtree(repo / "src")
    for n in range(400):
        (repo / f"junk{n}.txt").write_text("junk\n")
    started = "SELECT count(*) FROM ledger WHERE json_extract(body, '$.outcome') = 'started'"

    def begun(proc: Any) -> None:
        with sqlite3.connect(config.store_path) as db:
            count = db.execute(started).fetchone()[0]
            while db.execute(started).fetchone()[0] == count and proc.poll() is None:
                time.sleep(0.001)  # polling for the row the rollback writes before it changes anything

    argv = [sys.executable, "-m", "gateway", "--config", str(config.source), "rollback", checkpoint["id"]]
    for seconds in (0.0, 0.05):
        killed_after(argv, seconds, begun)
        whole(config)
    done = rollback(config, checkpoint["id"])
    assert done.returncode == 0, done.stderr
    assert manifest(repo / "src") == expected and not list(repo.glob("junk*"))
    assert not list(repo.rglob(".gateway-restore-*")), "a temporary file a killed rollback left is removed too"
    whole(config)


def test_the_gateways_index_follows_head_and_changed_files(gateway: Any, config: GatewayConfig, repo: Path) -> None:
    """The index the gateway keeps between checkpoints: HEAD moved and files changed since the last one, the
    next checkpoint still records the tree as it is (paths unchanged since are not read again)."""
    gateway.checkpoints.take(repo, "call-1", paths=[])
    git = Repo(repo)
    (repo / "src" / "app.py").write_text("committed\n")
    git.run("commit", "-qam", "moved on")
    (repo / "README.md").write_text("changed, not committed\n")
    (repo / "src" / "app.py").write_text("changed again\n")
    second = gateway.checkpoints.take(repo, "call-2", paths=[])
    (repo / "README.md").write_text("later\n")
    (repo / "src" / "app.py").write_text("later\n")
    assert rollback(config, second["id"]).returncode == 0
    assert (repo / "README.md").read_text() == "changed, not committed\n"
    assert (repo / "src" / "app.py").read_text() == "changed again\n"


def test_a_rollback_racing_an_agent_that_swaps_a_directory_for_a_link(
    gateway: Any,
    config: GatewayConfig,
    repo: Path,
    swapping: Any,  # noqa: F811
) -> None:
    """While rollbacks run, src/d is exchanged (renameat2) with src/dl, a link to the keys dir, over and over
    (as an agent's own concurrent call could): whatever a rollback meets, nothing lands in the keys dir."""
    src, keys = repo / "src", config.keys_dir
    (src / "d").mkdir()
    for n in range(20):
        (src / "d" / f"f{n}").write_text("before\n")
    os.symlink(keys, src / "dl")
    checkpoint = gateway.checkpoints.take(repo, "call-1", paths=[])
    for n in range(20):
        (src / "d" / f"f{n}").write_text("after\n")
    keys_before = manifest(keys)
    libc = ctypes.CDLL(None, use_errno=True)

    def swap_once() -> None:  # an exchange that finds one side gone (a rollback removed it) just tries again
        libc.renameat2(-100, bytes(src / "d"), -100, bytes(src / "dl"), 2)  # RENAME_EXCHANGE

    swapping(swap_once)
    for _ in range(10):
        with contextlib.suppress(GatewayError, OSError):
            gateway.checkpoints.rollback(checkpoint["id"])
    assert manifest(keys) == keys_before, "a rollback wrote into the keys dir"
