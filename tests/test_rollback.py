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

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import make_repo, text_of, workspace_for_tests
from test_hostile_agents import Live

from gateway.config import GatewayConfig
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
    guard = Untouched(live.config, elsewhere)
    done = rollback(live.config, checkpoint["id"])
    guard.check()
    assert done.returncode == 0, done.stderr
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
    guard = Untouched(live.config, live.outside)
    done = rollback(live.config, checkpoint["id"])
    guard.check()
    assert done.returncode == 0, done.stderr
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
    guard = Untouched(live.config, live.outside)
    done = rollback(live.config, checkpoint["id"])
    guard.check()
    assert done.returncode == 0, done.stderr
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
    guard = Untouched(live.config, live.outside)
    done = rollback(live.config, checkpoint["id"])
    guard.check()
    assert done.returncode == 0, done.stderr
    assert (live.repo / "d" / "developer.yaml").read_text() == evil
    done = rollback(live.config, broke["id"])
    assert done.returncode == 0, done.stderr
    repository_sane(live)
    assert json.loads(done.stdout)["checkpoint"] == broke["id"]
