"""Shared values: the facts that flow through the judge (who calls, what a call would do, what was decided).

Values only: plain models and aliases that import nothing from the gateway, so every module can use them
(as Starlette keeps its aliases in ``starlette.types``). Contracts live next to their owners: a tool's spec
and invocation in gateway/tools/spec.py, a request's origin in gateway/origin.py, the call in gateway/judge/.

    >>> Principal(agent="w1", role="worker", task="T1")
    Principal(agent='w1', role='worker', task='T1', jti=None, exp=None)
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

JSONObject = dict[str, Any]

Action = Literal["allow", "ask", "deny"]
Tier = Literal[1, 2, 3]

# What happened to a call, as the ledger records it:
#   started   the write-ahead record: decided, safeguarded, about to run
#   ok        ran and succeeded; error: ran and failed (tool error, upstream error, timeout)
#   denied    refused by identity, scope or policy; invalid: refused as malformed; nothing ran
#   asked     waiting for a human (tier 3)
#   allowed   decided, not run by the gateway (gateway check, the Claude Code hook, a verification command
#             before it runs)
#   cancelled    cancelled before it ended: its client cancelled it or went away, a timeout, the gateway shutting
#                down (recorded as it ends; what it started may have partly happened)
#   interrupted  started, then the gateway process died before the call ended (closed on the next start)
Outcome = Literal["started", "ok", "error", "denied", "invalid", "asked", "allowed", "cancelled", "interrupted"]
# what a call ends as
CALL_OUTCOMES = ("ok", "error", "denied", "invalid", "asked", "started", "cancelled", "interrupted")
# What calls are filtered by (gateway trace list, /ui): how they ended, or what was decided of them
# (allowed: the policy allowed it; approved: a person approved it).
FILTER_OUTCOMES = (
    "allowed",
    "denied",
    "asked",
    "approved",
    "error",
    "invalid",
    "ok",
    "started",
    "cancelled",
    "interrupted",
)


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Principal(Frozen):
    """Who is calling: the claims of a verified credential."""

    agent: str
    role: str
    task: str | None = None
    jti: str | None = None
    exp: int | None = None


class Redirect(Frozen):
    op: str  # ">", ">>", "<", "&>", ">|", "<>", "<<", ...
    target: str
    fd: int | None = None


class CommandFacts(BaseModel):
    """One simple command found in a shell string, after unwrapping sudo/env/bash -c and the like.

    ``argv``, ``redirects`` and ``via`` are as the shell sees them (input version 1). The other fields are
    the normalised facts of input version 2, worked out by the shell analysis so that a policy judges
    facts and never parses argv. Paths are shown as Effects shows them: workspace-relative inside,
    absolute outside. Mutable: the shell analysis fills one in as it walks; ``CommandEffect`` is the
    same fields, frozen, as Effects carries them.
    """

    model_config = ConfigDict(extra="forbid")

    argv: list[str]
    redirects: list[Redirect] = Field(default_factory=list)
    via: str = "direct"  # direct | pipe | subst | procsubst | wrapper:<name> | background | heredoc
    program: str = ""  # the program it runs, normalised (/usr/bin/python3.11 -> python); "" when not literal
    # after global options, as the program resolves it (its aliases and abbreviations): `git -C x log` -> log,
    # `npm i` -> install, `npm pub` -> publish, `git co` -> checkout (alias.co), `cargo b` -> build
    subcommand: str | None = None
    subcommand_as_written: str | None = None  # the word given: `npm pub` -> pub
    operation: str | None = None  # the word after the subcommand that says what it does: `git stash drop` -> drop
    cwd: str | None = None  # where it runs after every cd / git -C / env -C before it; None when not known
    inline_code: list[str] = Field(default_factory=list)  # program text given to an interpreter or editor
    reads: list[str] = Field(default_factory=list)  # files its own operands, options and redirections read
    writes: list[str] = Field(default_factory=list)  # ... create or modify
    deletes: list[str] = Field(default_factory=list)  # ... delete
    paths: list[str] = Field(default_factory=list)  # path-like words of a program not analysed: access unknown
    executes: list[str] = Field(default_factory=list)  # programs or text it may run, not listed as commands
    env: dict[str, str] = Field(default_factory=dict)  # NAME=value given to it (`A=1 cmd`, `env A=1 cmd`)
    # what a git command does to the repository; "destroy": it deletes what a rollback restores from (the
    # gateway's refs, reflog entries, unreachable objects)
    access: Literal["read", "write", "remote", "destroy"] | None = None
    recursive: bool = False  # its own recursive option (rm -r, cp -r, chmod -R, grep -r, ...)
    world_writable: bool = False  # chmod gives everyone write access (777, o+w, a+rwx)


class CommandEffect(CommandFacts, Frozen):
    """A command's facts as Effects carries them: ``CommandFacts``, frozen.

    >>> CommandEffect(argv=["git", "-C", "src", "log"], program="git", subcommand="log", cwd="src").access is None
    True
    """


class NetworkEffect(Frozen):
    host: str
    via: str  # the program or tool that contacts it
    # the port a URL named (https://host:8443/); None: none named, and the egress proxy allows 443 and 80
    port: int | None = None

    @model_serializer(mode="wrap")
    def _port_when_named(self, handler: SerializerFunctionWrapHandler) -> JSONObject:
        data: JSONObject = handler(self)
        if data.get("port") is None:
            data.pop("port", None)
        return data

    @property
    def endpoint(self) -> str:
        """What egress to it allows: ``host``, or ``host:port`` (``[v6]:port``) when a port was named."""
        if self.port is None:
            return self.host
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


class PackageEffect(Frozen):
    manager: str  # pip, npm, apt, cargo, ...
    names: list[str] = Field(default_factory=list)
    scope: Literal["local", "global"]


class Effects(Frozen):
    """Plain facts about what a call would do; no judgement.

    Paths inside the workspace are relative to it (``src/a.py``); paths outside it are absolute
    (``/etc/passwd``), after symlinks are followed. ``creates`` are writes to paths that do not exist
    yet; ``writes`` modify existing ones.
    """

    reads: list[str] = Field(default_factory=list)
    writes: list[str] = Field(default_factory=list)
    creates: list[str] = Field(default_factory=list)
    deletes: list[str] = Field(default_factory=list)
    recursive_deletes: list[str] = Field(default_factory=list)
    commands: list[CommandEffect] = Field(default_factory=list)
    network: list[NetworkEffect] = Field(default_factory=list)
    privileged: bool = False
    packages: list[PackageEffect] = Field(default_factory=list)
    opaque: list[str] = Field(default_factory=list)  # what could not be analysed, and why


class Decision(Frozen):
    """What the policy says about one call (OPA's answer, kept apart from enforcement)."""

    action: Action
    tier: Tier
    reasons: list[str] = Field(default_factory=list)
    rules: list[str] = Field(default_factory=list)
    revision: str | None = None  # the policy revision that decided (the bundle's and its data's digest)
