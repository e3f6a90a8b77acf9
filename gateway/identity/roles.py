"""Roles: one YAML file per role in the roles directory; add a role by adding a file.

    roles = RoleSet.load(Path(".gateway/roles"))
    roles.grants(principal, "fs_write")        # does the role's tool list cover this exposed name?
    roles["worker"].max_tier                   # highest tier it may run without a human's approval

A running gateway holds ``LiveRoles``: the same questions, answered from the directory as it is now.
Role files are looked at no more than once a second (as policy files are); an edit, an added or a
removed role takes effect in every process within that second, and a role file that does not load
keeps the last good role set in force (logged; ``last_error`` says why). The roles are the policy's
``data.roles`` too, so the policy engines take a RoleSet as their data and reload with it.

    roles = LiveRoles(Path(".gateway/roles"))  # ConfigError when the directory never loads
    roles.revision()                           # names the roles in force: part of the policy revision

A role file:

    name: worker
    description: Applies one claimed task inside its allowed paths.
    tools: [fs_*, shell_run, git_*, task_*]    # globs over exposed names, upstream ones included
    max_tier: 2
    commit: false                             # may run commit-class tools (through intent_commit)
    requires_claim: true                      # writes need a live claim on a task
"""

from __future__ import annotations

import fnmatch
from pathlib import Path
from typing import Annotated, Literal

import structlog
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gateway.digests import short_digest
from gateway.errors import ConfigError, UnknownRole
from gateway.policy.reload import Reloading, fingerprint
from gateway.types import Principal
from gateway.yaml_text import safe_load

log = structlog.get_logger("gateway.roles")

ROLE_NAME = r"^[a-z][a-z0-9_-]{0,31}$"


class Role(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: Annotated[str, Field(pattern=ROLE_NAME)]
    description: str
    tools: list[str] = Field(default_factory=list)
    max_tier: Literal[1, 2, 3] = 1
    commit: bool = False
    requires_claim: bool = False
    approver: bool = False  # may settle tier-3 approvals (the web page, the CLI)
    # how tier-3 calls ask: "elicit" (ask the client, fall back to pending), or "pending" straight away
    # (headless agents: Hermes without a terminal declines, claude -p cancels every elicitation)
    approvals: Literal["elicit", "pending"] = "elicit"
    # how a policy denial is answered: a tool error (isError), or a plain result saying "denied" for
    # clients that stop calling a server after a few errors in a row (Hermes: three, then 60 s of nothing)
    denials: Literal["error", "result"] = "error"

    def grants(self, tool: str) -> bool:
        return any(fnmatch.fnmatchcase(tool, pattern) for pattern in self.tools)


class RoleSet:
    """A fixed set of roles (``load`` reads a directory once)."""

    def __init__(self, roles: dict[str, Role]) -> None:
        self._roles = roles
        self._revision = short_digest(self.document())

    @property
    def roles(self) -> dict[str, Role]:
        return self._roles

    def revision(self, force: bool = False) -> str:
        """Names this set by its content: the same roles give the same revision in every process."""
        return self._revision

    @classmethod
    def load(cls, directory: Path) -> RoleSet:
        if not directory.is_dir():
            raise ConfigError(f"roles directory {directory} does not exist: run 'gateway init' or fix 'roles'")
        roles: dict[str, Role] = {}
        for path in sorted(directory.glob("*.yaml")):
            try:
                role = Role.model_validate(safe_load(path.read_text(encoding="utf-8")))
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first["loc"]) or "(top level)"
                raise ConfigError(f"role file {path.name}: {where}: {first['msg']}") from None
            except yaml.YAMLError as exc:
                raise ConfigError(f"role file {path.name} is not valid YAML: {exc}") from None
            if role.name != path.stem:
                raise ConfigError(f"role file {path.name} names role {role.name!r}; the file must be {role.name}.yaml")
            roles[role.name] = role
        if not roles:
            raise ConfigError(f"no role files (*.yaml) in {directory}")
        return cls(roles)

    def require(self, name: str) -> Role:
        """The role named, or an error that lists the known ones (a mistyped ``--role`` reads as such).

        >>> RoleSet({"worker": Role(name="worker", description="applies a task")}).require("nosuch")
        Traceback (most recent call last):
        gateway.errors.UnknownRole: unknown role 'nosuch' (known: worker)
        """
        role = self.roles.get(name)
        if role is None:
            raise UnknownRole(f"unknown role {name[:32]!r} (known: {', '.join(sorted(self.roles))})")
        return role

    def __getitem__(self, name: str) -> Role:
        return self.roles[name]

    def __contains__(self, name: object) -> bool:
        return name in self.roles

    def grants(self, principal: Principal, tool: str) -> bool:
        role = self.roles.get(principal.role)
        return role is not None and role.grants(tool)

    def denials_as_errors(self, principal: Principal) -> bool:
        role = self.roles.get(principal.role)
        return role is None or role.denials == "error"

    def as_data(self) -> dict[str, dict[str, object]]:
        """The roles as the policy sees them (``data.roles``)."""
        return {name: role.model_dump() for name, role in self.roles.items()}

    def document(self) -> dict[str, object]:
        """The policy's data document (a RoleSet is the policy engines' PolicyData)."""
        return {"roles": self.as_data()}


class LiveRoles(RoleSet):
    """The roles of a directory as it is now: re-read when its files change, the last good set kept."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.live = Reloading(
            lambda: fingerprint(directory.glob("*.yaml")),
            lambda _seen: RoleSet.load(directory),
            (ConfigError, OSError, UnicodeDecodeError),
            self._reloaded,
        )

    def _reloaded(self, error: str | None) -> None:
        if error is None:
            log.info("roles reloaded", directory=str(self.directory), roles=sorted(self.live.value.roles))
        else:
            log.error("roles reload failed; keeping the last good roles", error=error)

    @property
    def roles(self) -> dict[str, Role]:
        return self.live.current().roles

    @property
    def last_error(self) -> str | None:
        """Why the role files as they are now do not load (the last good roles are in force), or None."""
        self.live.current()
        return self.live.last_error

    def revision(self, force: bool = False) -> str:
        return self.live.current(force).revision()

    def document(self) -> dict[str, object]:
        return self.live.current().document()
