"""Where a gateway.yaml's state dir is: the rules ``GatewayConfig`` resolves it by, in the standard library.

``gateway check`` and ``gateway hook claude-code`` look for a running gateway through its state dir (its
``serving.json`` and the local secret, gateway/fast.py) before loading anything heavy: this module is what
they share with the config, so both always name the same directory.

    state_dir(raw.get("workspace", "."), raw.get("state_dir"), base=config_file.parent)
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

__all__ = ["absolute", "default_state_root", "state_dir"]


def default_state_root(workspace: Path, environ: dict[str, str] | None = None) -> Path:
    """Where a workspace's gateway keeps its state unless gateway.yaml says otherwise:
    ``$XDG_STATE_HOME/mcp-gateway/<name>-<hash of the workspace path>`` (``~/.local/state`` by default)."""
    env = os.environ if environ is None else environ
    base = Path(env.get("XDG_STATE_HOME") or Path(env.get("HOME") or Path.home()) / ".local" / "state")
    tag = hashlib.sha256(str(workspace).encode()).hexdigest()[:10]
    return base / "mcp-gateway" / f"{workspace.name or 'root'}-{tag}"


def absolute(base: Path, path: Path | str) -> Path:
    """A gateway.yaml path: relative to the file's directory, ``~`` expanded."""
    return (base / Path(os.path.expanduser(path))).resolve()


def state_dir(workspace: Path | str, configured: Path | str | None, base: Path) -> Path:
    """The state dir of a gateway.yaml in ``base`` whose ``workspace`` and ``state_dir`` are as given."""
    if configured is None:
        return default_state_root((base / workspace).resolve()) / "state"
    return absolute(base, configured)
