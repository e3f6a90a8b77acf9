"""Where the gateway keeps its state: outside the workspace, out of every agent's reach, and how an older
workspace (state in DIR/.gateway) is refused until `gateway migrate` moves it out."""

from __future__ import annotations

import json
import shutil
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
import yaml
from conftest import make_repo

from gateway.bootstrap import init_workspace
from gateway.config import GatewayConfig
from gateway.errors import ConfigError
from gateway.repo import Repo
from gateway.tasks.models import TaskManifest
from gateway.types import Principal


def cli(config_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gateway", *args], cwd=config_dir, capture_output=True, text=True, timeout=60
    )


def test_init_puts_the_state_outside_the_workspace_and_says_where(tmp_path: Path, private_state_home: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    made = cli(tmp_path, "init", "repo")
    assert made.returncode == 0, made.stderr
    config = GatewayConfig.load(repo / "gateway.yaml")
    assert config.state.is_relative_to(private_state_home / "mcp-gateway")
    assert not config.state.is_relative_to(repo) and not (repo / ".gateway").exists()
    assert f"state dir  {config.state}" in made.stderr and f"worktrees  {config.worktrees}" in made.stderr
    assert stat.S_IMODE(config.state.stat().st_mode) == 0o700
    assert (config.keys_dir / "active").is_file() and config.store_path.is_file()
    assert (config.roles_dir / "worker.yaml").is_file() and (config.policy_dir / "decision.rego").is_file()
    assert not config.worktrees.is_relative_to(config.state) and not config.state.is_relative_to(config.worktrees)
    raw = yaml.safe_load((repo / "gateway.yaml").read_text())
    assert raw["state_dir"] == str(config.state) and raw["worktrees_dir"] == str(config.worktrees)
    assert Repo(repo).run("status", "--porcelain").strip() == "?? gateway.yaml"


def test_init_refuses_a_state_dir_inside_the_workspace(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    with pytest.raises(ConfigError, match="inside the workspace"):
        init_workspace(repo, state_dir=repo / "state")
    assert not (repo / "gateway.yaml").exists()
    elsewhere = init_workspace(repo, state_dir=tmp_path / "gw-state")
    assert elsewhere.state == (tmp_path / "gw-state").resolve()
    assert elsewhere.worktrees == (tmp_path / "gw-state-worktrees").resolve()


def legacy_workspace(tmp_path: Path) -> Path:
    """A workspace as an older version made it: state, roles, policies and task worktrees in DIR/.gateway,
    with a claimed task whose worktree lives there."""
    from gateway.runtime import Gateway

    repo = make_repo(tmp_path / "repo")
    config = init_workspace(repo)
    gateway = Gateway(config)
    manifest = TaskManifest(task_id="T1", objective="o", allowed_paths=["src/**"], verification=["true"])
    worker = Principal(agent="w1", role="worker")

    async def work() -> None:
        await gateway.board.submit(manifest, by="planner", trace_id=None)
        await gateway.board.claim("T1", worker)

    anyio.run(work)
    gateway.db.close()
    old = repo / ".gateway"
    shutil.move(str(config.state), str(old))
    (old / "worktrees").mkdir()
    Repo(repo).run("worktree", "move", str(config.worktrees / "T1"), str(old / "worktrees" / "T1"))
    (old / "worktrees" / "T1" / "src" / "work.py").write_text("x = 1\n")
    db = sqlite3.connect(old / "gateway.db")
    db.execute("UPDATE tasks SET worktree = ?", (str(old / "worktrees" / "T1"),))
    db.commit()
    db.close()
    legacy = {"version": 1, "workspace": ".", "state_dir": ".gateway", "roles": ".gateway/roles"}
    legacy["policy"] = {"engine": "embedded", "path": ".gateway/policies"}
    (repo / "gateway.yaml").write_text(yaml.safe_dump(legacy))
    return repo


def test_an_older_workspace_is_refused_until_migrated_then_works(tmp_path: Path) -> None:
    repo = legacy_workspace(tmp_path)
    refused = cli(repo, "check", "--role", "worker", "--tool", "fs_read", "--args", '{"path": "README.md"}')
    assert refused.returncode == 2 and refused.stdout == ""
    assert "inside the workspace" in refused.stderr and "gateway migrate" in refused.stderr

    moved = cli(repo, "migrate")
    assert moved.returncode == 0, moved.stderr
    report = json.loads(moved.stdout)
    assert report["worktrees"] == ["T1"] and not (repo / ".gateway").exists()
    config = GatewayConfig.load(repo / "gateway.yaml")
    config.check_layout()
    assert str(config.state) == report["state_dir"] and (config.keys_dir / "active").is_file()
    assert (repo / "gateway.yaml.before-migrate").is_file()

    shown = json.loads(cli(repo, "task", "show", "T1").stdout)
    tree = Path(shown["worktree"])
    assert tree == config.worktrees / "T1" and (tree / "src" / "work.py").read_text() == "x = 1\n"
    assert "?? src/work.py" in Repo(tree).run("status", "--porcelain")
    assert Repo(repo).run("worktree", "list").count(str(tree)) == 1
    assert cli(repo, "ledger", "verify").returncode == 0
    checked = cli(repo, "check", "--role", "planner", "--tool", "fs_read", "--args", '{"path": "README.md"}')
    assert checked.returncode == 0 and json.loads(checked.stdout)["action"] == "allow"
    again = cli(repo, "migrate")
    assert again.returncode == 2 and "already outside the workspace" in again.stderr
