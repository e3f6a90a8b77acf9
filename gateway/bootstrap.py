"""``gateway init DIR``: make DIR a gateway workspace.

Writes DIR/gateway.yaml and the state dir: a signing key, copies of the default roles and policies, and
the store. The state dir lies outside the workspace (by default ``$XDG_STATE_HOME/mcp-gateway/<name>-<hash>/
state``, owner-only), so no command an agent runs in the workspace can read or write it; task worktrees go
beside it. ``migrate_state`` moves the state dir of a workspace made by an older version (``DIR/.gateway``)
out of the workspace; ``upgrade_policies`` replaces a policy bundle an older version laid out flat.

    config = init_workspace(Path("repo"))
    moved = migrate_state(GatewayConfig.load("repo/gateway.yaml"))
    upgraded = upgrade_policies(config)   # a state dir's flat policy bundle replaced by this version's
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from datetime import UTC, datetime
from pathlib import Path

import yaml

from gateway.checkpoints import record_layout
from gateway.config import CONFIG_FILE, GatewayConfig
from gateway.errors import ConfigError
from gateway.identity.keys import KeyRing
from gateway.locations import default_state_root
from gateway.policy.lint import flat_layout, policy_sources, rule_ids
from gateway.repo import Repo
from gateway.store import open_store
from gateway.store.repositories import state_layout
from gateway.types import JSONObject
from gateway.yaml_text import safe_load

CONFIG_TEMPLATE = """\
# gateway.yaml: see the README for every field. Relative paths are relative to this file.
version: 1
workspace: .                 # the directory agents work in
# The gateway's own state (keys, store, approvals, checkpoints, roles, policies, decision log) lives outside
# the workspace, where no command an agent runs can read or write it; task worktrees live beside it.
state_dir: {state_dir}
worktrees_dir: {worktrees_dir}
listen: 127.0.0.1:8787       # gateway serve --http
# roles: <state_dir>/roles   one YAML file per role (the default)
policy:
  engine: embedded           # embedded (regorus, in-process) or opa (a real OPA server)
  # path: <state_dir>/policies   the Rego bundle (the default); edits are picked up while the gateway runs
  opa_url: http://127.0.0.1:8181
upstreams: {{}}
# upstreams:
#   git:
#     command: mcp-server-git
#     args: [--repository, .]
#     arguments: {{"*": {{repo_path: read}}}}
#   fs:
#     command: npx
#     args: [-y, "@modelcontextprotocol/server-filesystem", "."]
#     arguments:
#       "read_*": {{path: read, paths: read}}
#       "write_file": {{path: write}}
#       "edit_file": {{path: write}}
#   remote:
#     url: https://example.com/mcp
#     headers: {{Authorization: "Bearer ${{REMOTE_TOKEN}}"}}
"""


# Where a regular (non-editable) install puts roles/ and policies/: pyproject's data-files, under sys.prefix.
INSTALLED_DEFAULTS = Path(sys.prefix) / "share" / "mcp-policy-gateway"


def defaults_dir() -> Path:
    """Where the default roles/ and policies/ live: $GATEWAY_DEFAULTS, else the source tree (an editable
    install or a checkout), else what ``pip install .`` put under sys.prefix."""
    env = os.environ.get("GATEWAY_DEFAULTS")
    candidates = [Path(env)] if env else [Path(__file__).resolve().parent.parent, INSTALLED_DEFAULTS]
    for root in candidates:
        if (root / "roles").is_dir() and (root / "policies").is_dir():
            return root
    raise ConfigError(f"default roles/ and policies/ not found under {candidates[0]}; set GATEWAY_DEFAULTS")


def init_workspace(directory: Path, force: bool = False, state_dir: Path | None = None) -> GatewayConfig:
    """Make ``directory`` a workspace; ``state_dir`` overrides where the state goes (outside the workspace)."""
    directory.mkdir(parents=True, exist_ok=True)
    directory = directory.resolve()
    config_path = directory / CONFIG_FILE
    if config_path.exists() and not force:
        raise ConfigError(f"{config_path} already exists (pass --force to start over)")
    if state_dir is None:
        root = default_state_root(directory)
        state, worktrees = root / "state", root / "worktrees"
    else:
        state = state_dir.expanduser().resolve()
        worktrees = state.with_name(f"{state.name}-worktrees")
    config_path.write_text(CONFIG_TEMPLATE.format(state_dir=state, worktrees_dir=worktrees))
    config = GatewayConfig.load(config_path)
    try:
        config.check_layout()
    except ConfigError:
        config_path.unlink()
        raise
    _private_dir(config.state)
    defaults = defaults_dir()
    for name in ("roles", "policies"):
        target = config.state / name
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(defaults / name, target)
    keys = KeyRing(config.keys_dir)
    if not keys.kids():
        keys.create()
    open_store(config).close()
    record_layout(config.checkpoints_dir, config.workspace)  # which kind its checkpoints are, decided now
    return config


def migrate_state(config: GatewayConfig, state_dir: Path | None = None) -> JSONObject:
    """Move a state dir (and its task worktrees) that lies inside the workspace to a private dir outside it.

    The store's worktree and checkpoint paths follow the move, git's worktree links are repaired, and
    gateway.yaml is rewritten to name the new places (the old file is kept beside it). Stop the gateway
    first: its store is moved from under it.
    """
    old = config.state
    if not old.is_relative_to(config.workspace):
        raise ConfigError(f"the state dir {old} is already outside the workspace; nothing to migrate")
    if state_dir is None:
        root = default_state_root(config.workspace)
        state, worktrees = root / "state", root / "worktrees"
    else:
        state = state_dir.expanduser().resolve()
        worktrees = state.with_name(f"{state.name}-worktrees")
    for target in (state, worktrees):
        if target.is_relative_to(config.workspace):
            raise ConfigError(f"{target} is inside the workspace; choose a place outside it")
        if target.exists() and any(target.iterdir()):
            raise ConfigError(f"{target} already exists and is not empty; choose another with --state-dir")
    _private_dir(state)
    worktrees.mkdir(parents=True, exist_ok=True)
    repo = Repo(config.workspace)
    moved_trees = []
    old_trees = config.worktrees if config.worktrees.is_relative_to(old) else old / "worktrees"
    for tree in sorted(old_trees.iterdir()) if old_trees.is_dir() else []:
        if (tree / ".git").exists() and repo.is_repo():
            repo.run("worktree", "move", str(tree), str(worktrees / tree.name))
        else:
            shutil.move(str(tree), str(worktrees / tree.name))
        moved_trees.append(tree.name)
    if old_trees.is_dir():
        shutil.rmtree(old_trees)
    for entry in sorted(old.iterdir()):
        if entry.name != ".gitignore":
            shutil.move(str(entry), str(state / entry.name))
    shutil.rmtree(old)
    db = open_store(config.model_copy(update={"state_dir": state}))
    with db.transaction() as tx:
        state_layout.move_worktrees(tx, str(old_trees), str(worktrees))
    db.close()
    assert config.source is not None
    raw = safe_load(config.source.read_text(encoding="utf-8")) or {}
    shutil.copy2(config.source, config.source.with_name(f"{config.source.name}.before-migrate"))
    raw["state_dir"], raw["worktrees_dir"] = str(state), str(worktrees)
    for key in ("roles",):
        if raw.get(key) and config.roles_dir.is_relative_to(old):
            raw.pop(key)
    if isinstance(raw.get("policy"), dict) and raw["policy"].get("path") and config.policy_dir.is_relative_to(old):
        raw["policy"].pop("path")
    header = "# gateway.yaml (migrated: the state dir moved out of the workspace; the old file is *.before-migrate)\n"
    config.source.write_text(header + yaml.safe_dump(raw, sort_keys=False))
    GatewayConfig.load(config.source).check_layout()
    return {"from": str(old), "state_dir": str(state), "worktrees_dir": str(worktrees), "worktrees": moved_trees}


def upgrade_policies(config: GatewayConfig, now: datetime | None = None) -> JSONObject:
    """``gateway policy upgrade``: put this version's policy bundle in place of one an older version laid out
    flat (gateway/policy/lint.py ``flat_layout``). The old bundle is kept beside it, and the rule ids it gives
    that this version's does not are listed: edits of your own to port into a concern's directory."""
    directory = config.policy_dir
    if flat_layout(directory) is None:
        raise ConfigError(f"the policy bundle {directory} is already laid out by concern; nothing to upgrade")
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%S")
    kept = directory.with_name(f"{directory.name}.flat-{stamp}")
    old_ids = {i for _, text in policy_sources(directory) for i in re.findall(r'"rule":\s*"([a-z_]+\.[a-z_]+)"', text)}
    shutil.copytree(defaults_dir() / "policies", directory.with_name(f"{directory.name}.new-{stamp}"))
    directory.rename(kept)  # the new bundle takes its place in one rename: the gateway never reads half of one
    directory.with_name(f"{directory.name}.new-{stamp}").rename(directory)
    only_old = sorted(old_ids - rule_ids(policy_sources(directory)))
    return {"policies": str(directory), "old_bundle": str(kept), "rules_only_in_the_old_bundle": only_old}


def _private_dir(path: Path) -> None:
    """A directory only its owner can enter."""
    path.mkdir(parents=True, exist_ok=True)
    os.chmod(path, 0o700)
