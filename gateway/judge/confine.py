"""Where a call's commands run: the sandbox of a call that runs commands, and of a stdio upstream server.

confine = Confinements(config, workspace, sandbox, roles, pool=lambda: gateway.pool)
call.confinement = confine.for_call(call)      # None for tools that run no command
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from gateway.config import GatewayConfig, UpstreamConfig
from gateway.effects.paths import Workspace
from gateway.identity.roles import RoleSet
from gateway.judge.call import Call, CallKind
from gateway.repo import common_dir
from gateway.sandbox import ANY_HOST, Confinement, Profile, Sandbox
from gateway.tasks.verifying import acceptance_files

if TYPE_CHECKING:
    from gateway.tools.upstream import UpstreamPool

__all__ = ["Confinements"]


class Confinements:
    """The sandboxes calls and upstream servers run in. Every command run for an agent is confined; none may
    see the state dir, other worktrees or credentials (the sandbox hides them)."""

    def __init__(
        self,
        config: GatewayConfig,
        workspace: Workspace,
        sandbox: Sandbox,
        roles: RoleSet,
        pool: Callable[[], UpstreamPool],
    ) -> None:
        self.config = config
        self.workspace = workspace
        self.sandbox = sandbox
        self.roles = roles
        self.pool = pool  # made on first use (gateway/runtime.py): a command-line check never needs it

    def for_call(self, call: Call) -> Confinement | None:
        """The sandbox of a call that runs commands: its worktree (or the workspace, for roles that work
        without tasks) writable; for a role that needs a claim and has no worktree, nothing writable.
        An upstream tool runs inside its server's sandbox; tools that run no command have none."""
        assert call.spec is not None and call.principal is not None and call.workspace is not None
        if call.spec.provider.upstream:
            upstream = self.pool().upstream_of(call.spec)
            return upstream.confinement if upstream is not None else None
        if "command" not in call.spec.argument_roles.values():
            return None
        role = self.roles.roles.get(call.principal.role)
        graded = acceptance_files(call.workspace.root, (call.task or {}).get("acceptance") or [])
        profile: Profile = "verify" if call.kind == CallKind.VERIFY else "command"  # test suites get more memory
        return self._command(call.workspace.root, role is None or role.requires_claim, graded, profile)

    @functools.lru_cache(maxsize=256)  # noqa: B019 (one per Gateway, one Gateway per process; a few roots each)
    def _command(
        self, root: Path, needs_worktree: bool, graded: tuple[Path, ...] = (), profile: Profile = "command"
    ) -> Confinement:
        writable = [] if needs_worktree and root == self.workspace.root else [root]
        # a worktree's repository stays visible, read-only, wherever it lives
        repository = common_dir(root)
        visible = [self.config.workspace, *([repository] if repository and repository.parent != root else [])]
        # a task's acceptance files (the tests that grade it) stay read-only for the commands its worker runs
        protect = [*self.protected_in(root), *graded]
        pinned, sealed = self.pinned_in(root), self.sealed_in(root)
        return self.sandbox.confine(
            writable, cwd=root, protect=protect, pinned=pinned, sealed=sealed, visible=visible, profile=profile
        )

    def protected_in(self, root: Path) -> list[Path]:
        """What stays read-only inside a writable directory: what would run outside the sandbox later
        (git's hooks and config, a worktree's link to its repository) and gateway.yaml."""
        git = root / ".git"
        protect = [git / "hooks", git / "config", git / "modules"] if git.is_dir() else [git]
        own = [p for p in (self.config.source, self.config.upstream_lockfile) if p is not None]
        return [*protect, *own]

    def pinned_in(self, root: Path) -> list[Path]:
        """What stays in place inside a writable directory, writable: a repository's ``.git`` directory is
        a mount point, so it cannot be renamed, removed or swapped for one of the command's making (the
        read-only hooks and config inside it would move with it, and the gateway's own git reads it)."""
        git = root / ".git"
        return [git] if git.is_dir() and not git.is_symlink() else []

    def sealed_in(self, root: Path) -> list[Path]:
        """What stays read-only inside a writable directory even before git makes it: a repository's worktrees
        admin dir, where the gateway's own git would follow a link an agent planted (``git worktree prune``
        deletes what a link to a directory leads to) and keeps each task worktree's HEAD and index."""
        git = root / ".git"
        return [git / "worktrees"] if git.is_dir() and not git.is_symlink() else []

    def for_upstream(self, config: UpstreamConfig) -> Confinement | None:
        """A stdio upstream server runs confined for its whole life; an HTTP one is someone else's process."""
        if config.command is None:
            return None
        root = self.config.workspace
        writable = [(root / p).resolve() for p in config.sandbox.writable]
        cwd = Path(config.cwd) if config.cwd else root
        named = [Path(p) for p in (config.command, *config.args) if p and os.path.isabs(p) and os.path.exists(p)]
        visible = [root, *(p if p.is_dir() else p.parent for p in named), *map(Path, config.sandbox.visible)]
        protect, pinned, sealed = self.protected_in(root), self.pinned_in(root), self.sealed_in(root)
        confinement = self.sandbox.confine(
            writable, cwd, protect=protect, pinned=pinned, sealed=sealed, profile="server", visible=visible
        )
        return confinement.allowing([ANY_HOST]) if config.sandbox.network else confinement
