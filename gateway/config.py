"""gateway.yaml as a pydantic model.

Every relative path in the file is resolved against the directory of the file (``~`` is expanded):
workspace, state_dir, worktrees_dir, roles, policy.path, sandbox.hide, and each upstream's cwd,
sandbox.writable and sandbox.visible. An upstream command runs in its cwd (default: the workspace), so its
own ``args`` are read there. The state dir (keys, store,
approvals, checkpoints, roles, policies, the decision log) lives outside the workspace, where no command an
agent runs can reach it: by default under ``$XDG_STATE_HOME/mcp-gateway/`` (``~/.local/state``), in a
directory named after the workspace; task worktrees live beside it, never inside it. ``${VAR}`` in an
upstream's env and headers, and in ``store``, is taken from the environment when the config is loaded, so
secrets stay out of the file.

    config = GatewayConfig.load("gateway.yaml")
    config.workspace, config.state_dir, config.upstreams["git"].command
    config.check_layout()        # refuses a state dir agents could reach (see `gateway migrate`)
"""

from __future__ import annotations

import ipaddress
import os
import re
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from gateway.budgets import BudgetsConfig
from gateway.errors import ConfigError
from gateway.listen import parse_listen
from gateway.locations import absolute
from gateway.locations import state_dir as locate_state
from gateway.yaml_text import safe_load

CONFIG_FILE = "gateway.yaml"
LOCKFILE = "gateway-upstreams.lock"  # pinned upstream definitions, committed beside gateway.yaml
PREFIX_PATTERN = r"^[A-Za-z0-9_-]{1,32}$"
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")

# what an upstream tool's argument is: a path read, written or deleted, a shell command, a URL, or plain data
# (text, a number, a message: nothing the gateway judges). An argument with no role makes a call opaque.
ArgumentRole = Literal["read", "write", "delete", "command", "url", "data"]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def expand_env(value: str, environ: dict[str, str] | None = None) -> str:
    """Replace ``${VAR}`` and ``${VAR:-default}``; an unset variable without a default is an error."""
    env = os.environ if environ is None else environ

    def sub(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        if name in env:
            return env[name]
        if default is not None:
            return default
        raise ConfigError(f"environment variable {name} is not set (referenced in gateway.yaml)")

    return _ENV_REF.sub(sub, value)


class UpstreamSandbox(Strict):
    """How a stdio upstream server is confined (it runs inside the sandbox like every command)."""

    # network egress for the server's whole life; off unless the operator turns it on
    network: bool = False
    # directories it may write (default: ".", the directory of gateway.yaml, normally the workspace)
    writable: list[str] = Field(default_factory=lambda: ["."])
    # more paths it must see read-only where the sandbox would hide them (its code under /tmp, say); the
    # directories of the absolute paths in command and args are seen without saying so
    visible: list[str] = Field(default_factory=list)


class ListingLimits(Strict):
    """Bounds on each listing an upstream answers (tools/list, resources/list, resources/templates/list,
    prompts/list, every page of it): an upstream over one is marked down with the bound named."""

    pages: Annotated[int, Field(gt=0, le=100_000)] = 100
    items: Annotated[int, Field(gt=0, le=1_000_000)] = 2000  # definitions in one listing
    bytes: Annotated[int, Field(gt=0)] = 4 << 20  # JSON-RPC bytes of all its pages together
    seconds: Annotated[float, Field(gt=0, le=3600)] = 30.0  # all its pages, from the first request
    definition_bytes: Annotated[int, Field(gt=0)] = 64 << 10  # one definition, as canonical JSON


class UpstreamConfig(Strict):
    """An upstream MCP server: a stdio command or a streamable HTTP URL."""

    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    timeout_s: Annotated[float, Field(gt=0, le=3600)] = 120.0
    # tool name (glob) -> {argument name -> role}: which argument is a path, a command, a URL or plain data;
    # a call that passes an argument with no role is opaque (tier 3) unless the tool is declared read-only
    arguments: dict[str, dict[str, ArgumentRole]] = Field(default_factory=dict)
    # tool names (globs) the operator vouches are read-only (upstream annotations are only hints)
    read_only: list[str] = Field(default_factory=list)
    # tool names (globs) that only the committer may run, through intent_commit
    commit_class: list[str] = Field(default_factory=list)
    # false: its tools and prompts keep their own names (no ``prefix__``), for clients that call fixed
    # names (the conformance suite); a name a gateway tool already has is not exposed
    prefixed: bool = True
    sandbox: UpstreamSandbox = Field(default_factory=UpstreamSandbox)
    listing: ListingLimits | None = None  # default: limits.upstream_listing
    # false: its resource list entries (often generated: files, pages) are served without pins; its tools,
    # prompts, resource templates and instructions are pinned whatever this says
    pin_resources: bool = True
    # true: what its tools, resources and prompts return is trusted content (information-flow labels,
    # docs/flow.md); an upstream is untrusted unless the operator vouches for it here
    trusted: bool = False

    @model_validator(mode="after")
    def _one_transport(self) -> UpstreamConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError("give exactly one of 'command' (stdio) or 'url' (streamable HTTP)")
        return self


class LimitsConfig(Strict):
    max_argument_bytes: Annotated[int, Field(gt=0)] = 1_048_576
    max_read_bytes: Annotated[int, Field(gt=0)] = 1_048_576
    shell_timeout_s: Annotated[float, Field(gt=0, le=3600)] = 120.0
    shell_output_bytes: Annotated[int, Field(gt=0)] = 262_144
    search_results: Annotated[int, Field(gt=0)] = 200
    search_timeout_s: Annotated[float, Field(gt=0, le=600)] = 10.0  # fs_search is refused past this
    list_entries: Annotated[int, Field(gt=0)] = 2000
    export_rows: Annotated[int, Field(gt=0, le=1_000_000)] = 10_000  # calls one /ui export may hold
    max_artifact_bytes: Annotated[int, Field(gt=0, le=16_777_216)] = 262_144  # one revision of a shared artifact
    upstream_listing: ListingLimits = Field(default_factory=ListingLimits)  # an upstream's `listing` wins
    # calls in flight when `gateway serve --http` stops get this long to end; then they are cancelled (and
    # recorded as cancelled) so that a call that never ends cannot keep the gateway from stopping
    shutdown_grace_s: Annotated[int, Field(ge=0, le=3600)] = 10


class PolicyConfig(Strict):
    engine: Literal["embedded", "opa"] = "embedded"
    path: Path | None = None  # default: <state_dir>/policies
    # a running gateway decides in this many worker processes (embedded engine); each decision, and each
    # description of a shell command, must finish within deadline_s or the call is denied
    workers: Annotated[int, Field(ge=1, le=64)] = 2
    deadline_s: Annotated[float, Field(gt=0, le=60)] = 0.5
    opa_url: str = "http://127.0.0.1:8181"
    opa_token: str | None = None
    # identical decision inputs answered from memory (gateway/policy/cache.py); 0 turns the cache off
    cache_ttl_s: Annotated[float, Field(ge=0, le=3600)] = 30.0
    cache_size: Annotated[int, Field(ge=1, le=1_000_000)] = 4096
    # what the policy reads as data.settings (thresholds: policies/commit/commit.rego's merge_deletions)
    settings: dict[str, Any] = Field(default_factory=dict)


class ApprovalsConfig(Strict):
    ttl_s: Annotated[int, Field(gt=0)] = 3600  # a pending approval expires after this long
    keepalive_s: Annotated[float, Field(gt=0)] = 10.0  # progress while a pushed elicitation waits
    elicit_timeout_s: Annotated[float, Field(gt=0)] = 600.0
    # clients (globs over clientInfo.name) sent straight to the pending-approval path, skipping elicitation
    pending_clients: list[str] = Field(default_factory=list)
    # Roles whose MCP client is a person at a keyboard: only for these does an elicitation answer (or an
    # InputRequiredResult answer) count as approval. The agent's own client answers elicitations, so for
    # any other role an agent could approve itself; by default approvals come from a person with an admin
    # credential (gateway approvals, /ui). Risk of listing a role: whatever drives its client approves.
    interactive_roles: list[str] = Field(default_factory=list)


class ClaudeCodeConfig(Strict):
    # The names Claude Code's MCP config gives this gateway (.mcp.json, `claude mcp add NAME`): its tools reach the
    # hook as mcp__<name>__<tool>, and their PreToolUse only announces the MCP call (judged when it arrives). Any
    # other server's tool is held for a person by the hook. No "__" in a name: it would hide another server's.
    mcp_servers: list[Annotated[str, Field(pattern=r"^[A-Za-z0-9-]+(_[A-Za-z0-9-]+)*$", max_length=64)]] = Field(
        default_factory=lambda: ["gateway"]
    )


class TasksConfig(Strict):
    claim_ttl_s: Annotated[int, Field(gt=0, le=86400)] = 900
    verification_timeout_s: Annotated[float, Field(gt=0, le=7200)] = 600.0
    sweep_s: Annotated[float, Field(gt=0, le=3600)] = 5.0  # how often expired claims are looked for


class Webhook(Strict):
    url: Annotated[str, Field(pattern=r"^https?://")]
    headers: dict[str, str] = Field(default_factory=dict)  # ${VAR} is taken from the environment


class NotifyConfig(Strict):
    """Escalations (blocked, quarantined, abandoned, timed-out work, dead letters) pushed to people."""

    webhooks: list[Webhook] = Field(default_factory=list)
    events: list[str] | None = None  # default: every escalation (gateway.notify.ESCALATIONS)
    interval_s: Annotated[float, Field(gt=0, le=3600)] = 5.0
    max_tries: Annotated[int, Field(ge=1, le=100)] = 5  # per notice, then it is recorded as undelivered


class IntegrationConfig(Strict):
    # the workspace's own checks, run on every merge commit after the task's verification (the merge
    # queue publishes only when both pass); the merge ceremony leaves out a task that fails them
    verification: list[Annotated[str, Field(min_length=1, max_length=4096)]] = Field(default_factory=list)


Algorithm = Literal["RS256", "ES256", "EdDSA"]
ALGORITHMS: tuple[Algorithm, ...] = ("RS256", "ES256", "EdDSA")


class ExternalIssuerConfig(Strict):
    """Tokens from the team's own identity provider, accepted beside the gateway's own (docs/auth.md)."""

    issuer: Annotated[str, Field(min_length=1)]  # the iss claim, exactly (e.g. https://idp.example.com/realms/dev)
    jwks_url: Annotated[str, Field(pattern=r"^https?://")]  # the issuer's signing keys (JWKS)
    audience: Annotated[str, Field(min_length=1)]  # the aud the IdP puts in tokens meant for this gateway
    algorithms: list[Algorithm] = Field(default_factory=lambda: list(ALGORITHMS))
    agent_claim: str = "sub"  # the claim that names the agent (must match the agent-name pattern)
    roles_claim: str = "groups"  # a string or list of strings, mapped to a gateway role through `roles`
    roles: Annotated[dict[str, str], Field(min_length=1)]  # claim value -> gateway role; exactly one must match
    jwks_ttl_s: Annotated[float, Field(gt=0, le=86400)] = 300.0  # keys are fetched again after this long
    jwks_min_refetch_s: Annotated[float, Field(ge=0, le=3600)] = 30.0  # at most one fetch this often (unknown kids)
    jwks_timeout_s: Annotated[float, Field(gt=0, le=60)] = 5.0
    leeway_s: Annotated[int, Field(ge=0, le=300)] = 30  # clock skew allowed on exp/nbf/iat


class IdentityConfig(Strict):
    issuer: str = "mcp-gateway"
    audience: str = "mcp-gateway"
    external_issuer: ExternalIssuerConfig | None = None
    # resource_documentation in /.well-known/oauth-protected-resource (RFC 9728); default: the gateway's
    # own /auth page, which says which tokens it accepts and how to get one
    documentation: Annotated[str, Field(pattern=r"^https?://")] | None = None

    @model_validator(mode="after")
    def _distinct_issuers(self) -> IdentityConfig:
        if self.external_issuer is not None and self.external_issuer.issuer == self.issuer:
            raise ValueError("external_issuer.issuer must differ from the gateway's own issuer")
        return self


class ShellConfig(Strict):
    # Environment variables passed through to shell_run; everything else (tokens, keys) is withheld.
    pass_env: list[str] = Field(default_factory=lambda: ["PATH", "HOME", "LANG", "LC_ALL", "TZ", "TMPDIR"])


class SandboxConfig(Strict):
    """The OS sandbox around every command the gateway runs for an agent (gateway/sandbox.py)."""

    # bubblewrap, or off: commands run unconfined (explicit opt-out; each call is marked unconfined)
    mode: Literal["bubblewrap", "off"] = "bubblewrap"
    bwrap: str = "bwrap"  # the bubblewrap binary
    hide: list[str] = Field(default_factory=list)  # more paths no command may see (~ is expanded)
    scratch: list[str] = Field(default_factory=lambda: ["~/.cache"])  # throwaway writable dirs (tmpfs)
    file_size_mb: Annotated[int, Field(gt=0)] = 1024  # largest file a command may write
    processes: Annotated[int, Field(gt=0)] = 1024  # RLIMIT_NPROC (Linux does not apply it to root)
    cpu_s: Annotated[int, Field(gt=0)] = 600  # CPU seconds per process (not for upstream servers)
    open_files: Annotated[int, Field(gt=0)] = 4096
    # address space per process (RLIMIT_AS): what it reserves, not only what it uses; node's WebAssembly
    # reserves about 10 GiB. Commands (shell_run, the gateway's git), verification commands (whole test
    # suites), stdio upstream servers.
    memory_mb: Annotated[int, Field(ge=64)] = 8192
    verify_memory_mb: Annotated[int, Field(ge=64)] = 16384
    upstream_memory_mb: Annotated[int, Field(ge=64)] = 4096
    tmpfs_mb: Annotated[int, Field(gt=0)] = 1024  # each writable tmpfs (/tmp, each scratch dir): RAM, not disk
    # a memory cgroup per command (shell_run, verification), limited to its memory_mb for all its processes
    # and tmpfs files together (gateway/memory_cgroup.py): auto uses one where the machine allows it and
    # warns where not, required runs no command without one, off never makes one
    memory_cgroup: Literal["auto", "required", "off"] = "auto"
    cgroup_parent: str | None = None  # where to make them (a delegated cgroup); default: found


class CheckpointsConfig(Strict):
    """Tier-2 checkpoints (gateway/checkpoints/): what kind they are, and how many the vault keeps."""

    # git: a commit of the working tree (and, in a repository's own checkout, refs, index, stashes); files:
    # copies of the paths a call names. auto: what the workspace's layout was when `gateway init` (or this
    # version's first start) recorded it in the state dir, never what the tree says at the time of a call
    kind: Literal["auto", "git", "files"] = "auto"
    keep: Annotated[int, Field(ge=1)] = 200  # the newest checkpoints a rollback can restore (all workspaces)
    max_age_days: Annotated[float, Field(gt=0)] = 30  # older ones are pruned even within keep
    repository_refs: Annotated[int, Field(ge=0)] = 5  # newest checkpoints also kept as refs in the repository
    max_copy_mb: Annotated[int, Field(gt=0)] = 64  # a files checkpoint copies at most this; more: the call fails


class EgressConfig(Strict):
    """What the egress proxy (gateway/egress.py) may connect to besides public internet addresses."""

    # Addresses it refuses by default (loopback, private, link-local, CGNAT, multicast, unspecified, reserved,
    # this host's own, cloud metadata; gateway/addresses.py) that it may reach for a host a call's decision
    # allowed: IP addresses or networks ("127.0.0.1", "10.20.0.0/16", "fd12::/64"). A cloud metadata address
    # only when named exactly. The gateway's own listening ports stay unreachable whatever this says.
    allow_addresses: list[str] = Field(default_factory=list)

    @field_validator("allow_addresses")
    @classmethod
    def _networks(cls, values: list[str]) -> list[str]:
        for value in values:
            try:
                ipaddress.ip_network(value, strict=True)
            except ValueError as exc:
                raise ValueError(f"{value!r} is not an IP address or network (host bits must be zero): {exc}") from None
        return values


class TelemetryConfig(Strict):
    """OpenTelemetry export and the decision log. Spans are exported only when an OTLP endpoint is set here
    or in OTEL_EXPORTER_OTLP_ENDPOINT / OTEL_EXPORTER_OTLP_TRACES_ENDPOINT; otherwise nothing leaves the host."""

    # OTLP/HTTP collector: a base URL (http://collector:4318, "/v1/traces" is appended) or the full traces URL
    otlp_endpoint: str | None = None
    otlp_headers: dict[str, str] = Field(default_factory=dict)  # ${VAR} is taken from the environment
    otlp_timeout_s: Annotated[float, Field(gt=0, le=300)] = 10.0
    service_name: str | None = None  # resource service.name; default OTEL_SERVICE_NAME, else "mcp-gateway"
    decision_log: bool = True  # write <state_dir>/decisions.jsonl, one masked entry per policy decision


class MetricsConfig(Strict):
    """Prometheus metrics (gateway/metrics.py): off unless enabled; prometheus_client is imported only then."""

    enabled: bool = False
    path: Annotated[str, Field(pattern=r"^/[A-Za-z0-9/_.-]*$")] = "/metrics"
    token: str | None = None  # when set, a scrape must send 'Authorization: Bearer TOKEN' (${VAR} taken)

    @field_validator("path")
    @classmethod
    def _path(cls, value: str) -> str:
        taken = ("/mcp", "/healthz", "/readyz", "/ui", "/hooks", "/local", "/auth", "/.well-known")
        if any(value == t or value.startswith(f"{t}/") for t in taken) or value == "/":
            raise ValueError(f"{value!r} is a path the gateway serves already")
        return value


class GatewayConfig(Strict):
    version: Literal[1] = 1
    workspace: Path = Path(".")
    # default: default_state_root(workspace) / "state"; must lie outside the workspace
    state_dir: Path | None = None
    # default: beside the state dir (<root>/worktrees, or <state_dir>-worktrees); never inside it
    worktrees_dir: Path | None = None
    # the store: default the SQLite file <state_dir>/gateway.db; or postgresql://user:${PGPASSWORD}@host:5432/db
    # (docs/store.md). Kept out of the model's repr: it may carry a password.
    store: str | None = Field(default=None, repr=False)
    listen: str = "127.0.0.1:8787"
    workers: Annotated[int, Field(ge=1, le=64)] = 1  # gateway processes serving listen (serve --workers wins)
    # Host header values (host:port, "*" for any port) served over HTTP; empty: loopback names when bound to
    # loopback, any host otherwise (bearer auth is the gate). Set it behind a DNS name or in a container.
    allowed_hosts: list[str] = Field(default_factory=list)
    upstreams: dict[str, UpstreamConfig] = Field(default_factory=dict)
    policy: PolicyConfig = Field(default_factory=PolicyConfig)
    roles: Path | None = None  # default: <state_dir>/roles
    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    shell: ShellConfig = Field(default_factory=ShellConfig)
    identity: IdentityConfig = Field(default_factory=IdentityConfig)
    approvals: ApprovalsConfig = Field(default_factory=ApprovalsConfig)
    claude_code: ClaudeCodeConfig = Field(default_factory=ClaudeCodeConfig)  # its hook (examples/claude-code)
    tasks: TasksConfig = Field(default_factory=TasksConfig)
    integration: IntegrationConfig = Field(default_factory=IntegrationConfig)
    notify: NotifyConfig = Field(default_factory=NotifyConfig)
    telemetry: TelemetryConfig = Field(default_factory=TelemetryConfig)
    metrics: MetricsConfig = Field(default_factory=MetricsConfig)
    sandbox: SandboxConfig = Field(default_factory=SandboxConfig)
    checkpoints: CheckpointsConfig = Field(default_factory=CheckpointsConfig)
    egress: EgressConfig = Field(default_factory=EgressConfig)
    budgets: BudgetsConfig = Field(default_factory=BudgetsConfig)  # docs/flow.md
    source: Path | None = Field(default=None, exclude=True)

    @field_validator("upstreams")
    @classmethod
    def _prefixes(cls, upstreams: dict[str, UpstreamConfig]) -> dict[str, UpstreamConfig]:
        for prefix in upstreams:
            if not re.match(PREFIX_PATTERN, prefix) or "__" in prefix:
                raise ValueError(f"upstream prefix {prefix!r} must match {PREFIX_PATTERN} without '__'")
        return upstreams

    @field_validator("store")
    @classmethod
    def _store(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("postgresql://", "postgres://")):
            # the value is not repeated: it may hold a password
            raise ValueError("must be a postgresql:// URL (leave it out for the SQLite file in the state dir)")
        return value

    @field_validator("listen")
    @classmethod
    def _listen(cls, value: str) -> str:
        parse_listen(value)
        return value

    @classmethod
    def load(cls, path: str | Path = CONFIG_FILE) -> GatewayConfig:
        path = Path(path)
        try:
            raw = safe_load(path.read_text(encoding="utf-8")) or {}
        except FileNotFoundError:
            raise ConfigError(f"no config at {path}: run 'gateway init' or pass --config") from None
        except yaml.YAMLError as exc:
            raise ConfigError(f"{path} is not valid YAML: {exc}") from None
        if not isinstance(raw, dict):
            raise ConfigError(f"{path} must hold a mapping")
        return cls.from_mapping(raw, base=path.resolve().parent, source=path.resolve())

    @classmethod
    def from_mapping(cls, raw: dict[str, Any], base: Path, source: Path | None = None) -> GatewayConfig:
        try:
            config = cls.model_validate(raw)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "(top level)"
            raise ConfigError(f"gateway.yaml: {where}: {first['msg']}") from None
        return config._resolved(base, source)

    def _resolved(self, base: Path, source: Path | None) -> GatewayConfig:
        workspace = (base / self.workspace).resolve()
        state_dir = locate_state(self.workspace, self.state_dir, base)
        if self.state_dir is None:
            worktrees = state_dir.with_name("worktrees")
        else:
            worktrees = state_dir.with_name(f"{state_dir.name}-worktrees")
        if self.worktrees_dir is not None:
            worktrees = absolute(base, self.worktrees_dir)
        upstreams = {
            prefix: up.model_copy(
                update={
                    "env": {k: expand_env(v) for k, v in up.env.items()},
                    "headers": {k: expand_env(v) for k, v in up.headers.items()},
                    "cwd": str((base / up.cwd).resolve()) if up.cwd else None,
                    "sandbox": up.sandbox.model_copy(
                        update={
                            "visible": [str(absolute(base, Path(p))) for p in up.sandbox.visible],
                            "writable": [str(absolute(base, Path(p))) for p in up.sandbox.writable],
                        }
                    ),
                }
            )
            for prefix, up in self.upstreams.items()
        }
        return self.model_copy(
            update={
                "workspace": workspace,
                "state_dir": state_dir,
                "worktrees_dir": worktrees,
                "roles": absolute(base, self.roles) if self.roles else state_dir / "roles",
                "policy": self.policy.model_copy(
                    update={
                        "path": absolute(base, self.policy.path) if self.policy.path else state_dir / "policies",
                        "opa_token": expand_env(self.policy.opa_token) if self.policy.opa_token else None,
                    }
                ),
                "store": expand_env(self.store) if self.store else None,
                "upstreams": upstreams,
                "notify": self.notify.model_copy(
                    update={
                        "webhooks": [
                            hook.model_copy(update={"headers": {k: expand_env(v) for k, v in hook.headers.items()}})
                            for hook in self.notify.webhooks
                        ]
                    }
                ),
                "sandbox": self.sandbox.model_copy(
                    update={"hide": [str(absolute(base, Path(p))) for p in self.sandbox.hide]}
                ),
                "metrics": self.metrics.model_copy(
                    update={"token": expand_env(self.metrics.token) if self.metrics.token else None}
                ),
                "source": source,
            }
        )

    # The properties below are for a loaded config (GatewayConfig.load), whose paths are resolved.

    @property
    def state(self) -> Path:
        assert self.state_dir is not None, "load the config with GatewayConfig.load"
        return self.state_dir

    @property
    def worktrees(self) -> Path:
        assert self.worktrees_dir is not None, "load the config with GatewayConfig.load"
        return self.worktrees_dir

    @property
    def roles_dir(self) -> Path:
        assert self.roles is not None, "load the config with GatewayConfig.load"
        return self.roles

    @property
    def policy_dir(self) -> Path:
        assert self.policy.path is not None, "load the config with GatewayConfig.load"
        return self.policy.path

    @property
    def store_path(self) -> Path:
        return self.state / "gateway.db"

    @property
    def keys_dir(self) -> Path:
        return self.state / "keys"

    @property
    def checkpoints_dir(self) -> Path:
        return self.state / "checkpoints"

    @property
    def policy_checks_dir(self) -> Path:
        """Policy sources that passed the load's check, by digest (gateway/policy/checked.py)."""
        return self.state / "policy-checks"

    @property
    def upstream_lockfile(self) -> Path | None:
        """The operator's committed pins of upstream definitions, beside gateway.yaml (gateway/tools/pins.py)."""
        return self.source.with_name(LOCKFILE) if self.source is not None else None

    @property
    def decision_log_path(self) -> Path:
        return self.state / "decisions.jsonl"

    def protected_paths(self) -> list[Path]:
        """Paths no agent may touch through the gateway: its own state, keys, policies and config (with the
        upstream lockfile beside it)."""
        paths = [self.state, self.roles_dir, self.policy_dir, self.worktrees]
        if self.source is not None:
            paths += [self.source, self.source.with_name(LOCKFILE)]  # the lockfile: pins a start would import
        return paths

    def secret_paths(self) -> list[Path]:
        """What the sandbox hides from every command: the state dir and whatever else holds the gateway's
        secrets or policy (roles and policies may live elsewhere than the state dir)."""
        return [self.state, self.roles_dir, self.policy_dir]

    def check_layout(self) -> None:
        """Refuse a layout that puts the gateway's state within an agent's reach, naming the fix."""
        workspace = self.workspace
        for what, path in (("state dir", self.state), ("roles", self.roles_dir), ("policies", self.policy_dir)):
            if _inside(path, workspace):
                raise ConfigError(
                    f"the {what} {path} is inside the workspace {workspace}, where agents can read and write it; "
                    "run 'gateway migrate' to move the gateway's state out of the workspace"
                )
        if _inside(self.worktrees, self.state) or _inside(self.state, self.worktrees):
            raise ConfigError(f"worktrees_dir {self.worktrees} must not overlap the state dir {self.state}")
        if _inside(self.worktrees, workspace) or _inside(workspace, self.worktrees) or _inside(workspace, self.state):
            raise ConfigError(f"worktrees_dir {self.worktrees} and the state dir must lie outside the workspace")


def _inside(path: Path, parent: Path) -> bool:
    return path == parent or path.is_relative_to(parent)
