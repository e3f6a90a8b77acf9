"""Roles: one YAML file per role in the roles directory; add a role by adding a file.

    roles = RoleSet.load(Path(".gateway/roles"))
    roles.grants(principal, "fs_write")        # does the role's tool list cover this exposed name?
    roles["worker"].max_tier                   # highest tier it may run without a human's approval

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

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gateway.errors import ConfigError, UnknownRole
from gateway.types import Principal

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
    def __init__(self, roles: dict[str, Role]) -> None:
        self.roles = roles

    @classmethod
    def load(cls, directory: Path) -> RoleSet:
        if not directory.is_dir():
            raise ConfigError(f"roles directory {directory} does not exist: run 'gateway init' or fix 'roles'")
        roles: dict[str, Role] = {}
        for path in sorted(directory.glob("*.yaml")):
            try:
                role = Role.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))
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

        >>> roles.require("nosuch")   # UnknownRole: unknown role 'nosuch' (known: admin, developer, ...)
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
