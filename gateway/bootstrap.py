"""``gateway init DIR``: make DIR a gateway workspace.

Writes DIR/gateway.yaml and the state dir DIR/.gateway: a signing key, copies of the default roles
and policies, and the store. The state dir ignores itself (a ``.gitignore`` of ``*``), so nothing in
it ever shows in a diff, and the gateway refuses every agent path that reaches into it.

    config = init_workspace(Path("repo"))
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from gateway.config import CONFIG_FILE, GatewayConfig
from gateway.errors import ConfigError
from gateway.identity.keys import KeyRing
from gateway.ledger.store import Database

STATE_DIR = ".gateway"

CONFIG_TEMPLATE = """\
# gateway.yaml: see the README for every field.
version: 1
workspace: .                 # the directory agents work in (relative to this file)
state_dir: .gateway          # store, keys, checkpoints, worktrees (relative to the workspace)
listen: 127.0.0.1:8787       # gateway serve --http
roles: .gateway/roles        # one YAML file per role
policy:
  engine: embedded           # embedded (regorus, in-process) or opa (a real OPA server)
  path: .gateway/policies    # Rego bundle; edits are picked up while the gateway runs
  opa_url: http://127.0.0.1:8181
upstreams: {}
# upstreams:
#   git:
#     command: mcp-server-git
#     args: [--repository, .]
#     arguments: {"*": {repo_path: read}}
#   fs:
#     command: npx
#     args: [-y, "@modelcontextprotocol/server-filesystem", "."]
#     arguments:
#       "read_*": {path: read, paths: read}
#       "write_file": {path: write}
#       "edit_file": {path: write}
#   remote:
#     url: https://example.com/mcp
#     headers: {Authorization: "Bearer ${REMOTE_TOKEN}"}
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


def init_workspace(directory: Path, force: bool = False) -> GatewayConfig:
    directory.mkdir(parents=True, exist_ok=True)
    config_path = directory / CONFIG_FILE
    state = directory / STATE_DIR
    if config_path.exists() and not force:
        raise ConfigError(f"{config_path} already exists (pass --force to start over)")
    state.mkdir(exist_ok=True)
    os.chmod(state, 0o700)
    (state / ".gitignore").write_text("# the gateway's state never belongs in a diff\n*\n")
    defaults = defaults_dir()
    for name in ("roles", "policies"):
        target = state / name
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(defaults / name, target)
    config_path.write_text(CONFIG_TEMPLATE)
    config = GatewayConfig.load(config_path)
    keys = KeyRing(config.keys_dir)
    if not keys.kids():
        keys.create()
    Database.open(config.store_path).close()
    return config
