"""The gateway runtime: every service the pipeline runs on, assembled from one config.

gateway = Gateway(GatewayConfig.load("gateway.yaml"))
async with gateway.running():          # upstream servers connected, concurrently
    result = await gateway.pipeline(call)
"""

from __future__ import annotations

import functools
import hashlib
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import structlog

from gateway.addresses import AddressGuard, listening_ports
from gateway.approvals import Approvals, RequestStateSeal
from gateway.checkpoints import Checkpoints
from gateway.commit.intents import Intents
from gateway.commit.tools import ceremony_tools, intent_tools
from gateway.config import GatewayConfig, PolicyConfig, UpstreamConfig, parse_listen
from gateway.effects.paths import Workspace
from gateway.egress import Egress
from gateway.identity.keys import KeyRing
from gateway.identity.revocations import Revocations
from gateway.identity.roles import LiveRoles
from gateway.identity.tokens import Tokens
from gateway.ledger.chain import Ledger
from gateway.ledger.leases import Leases
from gateway.ledger.store import open_store
from gateway.locks import alive
from gateway.notify import Notifier
from gateway.pipeline import (
    ActOnTier,
    Authenticate,
    Call,
    Decide,
    Describe,
    Execute,
    HookVerdict,
    Judged,
    Pipeline,
    Record,
    RecordIntent,
    Resolve,
    Stage,
    Validate,
    ValidText,
)
from gateway.policy.cache import DecisionCache
from gateway.policy.checked import CheckedSources
from gateway.policy.embedded import EmbeddedEngine
from gateway.policy.engine import PolicyEngine, fired_rules
from gateway.policy.isolated import IsolatedEngine
from gateway.policy.lint import flat_layout
from gateway.policy.reload import PolicyData, WithSettings, policy_data
from gateway.repo import Repo, common_dir
from gateway.sandbox import ANY_HOST, Confinement, Profile, Sandbox
from gateway.tasks.board import TaskBoard, acceptance_files
from gateway.tasks.deadletters import DeadLetters, KeepDeadLetters
from gateway.tasks.tools import task_tools
from gateway.tasks.verification import Verification, clear_scratch
from gateway.telemetry import Telemetry
from gateway.tools.catalog import Catalog
from gateway.tools.files import file_tools
from gateway.tools.git import git_tools
from gateway.tools.pins import Pins
from gateway.tools.shell import shell_tools
from gateway.types import Decision, JSONObject, Origin, Principal, ToolSpec

if TYPE_CHECKING:
    from gateway.commit.ceremony import Ceremony
    from gateway.commit.executor import Committer
    from gateway.commit.merge import MergeQueue
    from gateway.identity.external import ExternalIssuer
    from gateway.tools.upstream import UpstreamPool

log = structlog.get_logger("gateway.runtime")
RECOVERY = "recovery"  # the lease a starting gateway process holds while it clears what a crash left


def session_trace(session_id: str) -> str:
    """The trace of a session without a task: stable for the session, unlinkable to its id."""
    return hashlib.sha256(f"session:{session_id}".encode()).hexdigest()[:32]


def decision_report(call: Call) -> JSONObject:
    """What ``gateway check`` prints for a judged call: the Decision and the effects it was made on. A call
    refused before the policy saw it (an unknown tool, bad arguments) is a deny naming the refusal."""
    decision = call.decision
    if decision is None:
        assert call.error is not None
        decision = Decision(action="deny", tier=3, reasons=[call.error.message], rules=[f"gateway.{call.error.code}"])
    return {**decision.model_dump(), "effects": call.effects.model_dump() if call.effects else None}


def make_engine(
    config: PolicyConfig,
    data: JSONObject | PolicyData,
    isolated: bool = True,
    checked: CheckedSources | None = None,
) -> PolicyEngine:
    """The configured engine, behind the decision cache; the embedded one in worker processes with a deadline
    unless ``isolated`` is False (a single command that decides once: nothing else waits on it). ``data`` is
    the policy's data: the gateway's live roles (a role edit reloads the engine like a policy edit), or a
    fixed document; gateway.yaml's ``policy.settings`` join it as ``data.settings``. ``checked`` remembers the
    policy sources that passed the load's check (the state dir's)."""
    assert config.path is not None
    old_layout = flat_layout(config.path)
    if old_layout:
        log.warning("policy bundle laid out by an older version", detail=old_layout)
    if config.settings:
        data = WithSettings(policy_data(data), config.settings)
    engine: PolicyEngine
    if config.engine == "opa":
        from gateway.policy.opa import OpaEngine

        engine = OpaEngine(config.path, data, url=config.opa_url, token=config.opa_token, timeout=config.deadline_s)
    elif isolated:
        engine = IsolatedEngine(config.path, data, config.workers, config.deadline_s, checked)
    else:
        return EmbeddedEngine(config.path, data, checked)
    if config.cache_ttl_s > 0:
        engine = DecisionCache(engine, ttl_s=config.cache_ttl_s, size=config.cache_size)
    return engine


class Gateway:
    def __init__(self, config: GatewayConfig, isolated: bool = True) -> None:
        config.check_layout()
        self.config = config
        self.telemetry = Telemetry.from_config(config)
        self.db = open_store(config)  # reachable and at our schema version, or nothing starts
        self.ledger = Ledger.for_config(config, self.db)
        self.roles = LiveRoles(config.roles_dir)  # role edits reach every use below within a second
        self.keys = KeyRing(config.keys_dir)
        self.revocations = Revocations(self.db)
        self.tokens = Tokens(
            self.keys,
            self.roles,
            self.revocations,
            config.identity.issuer,
            config.identity.audience,
            external=self._external_issuer(),
        )
        self.engine = make_engine(config.policy, self.roles, isolated, CheckedSources(config.policy_checks_dir))
        self.workspace = Workspace(config.workspace, config.protected_paths())
        # every command run for an agent is confined; none may see the state, other worktrees or credentials
        self.sandbox = Sandbox(config.sandbox, hidden=[*config.secret_paths(), config.worktrees])
        # the way out for a command whose decision allowed egress; never to the gateway's own ports
        listen_port = parse_listen(config.listen)[1]
        guard = AddressGuard(config.egress.allow_addresses, own_ports=lambda: listening_ports() | {listen_port})
        self.egress = Egress(self.ledger, guard)
        self.approvals = Approvals(self.db, self.ledger, ttl_s=config.approvals.ttl_s)
        # upstream definitions as pinned (first use, the operator's lockfile, a person's approval)
        self.pins = Pins(self.db, self.ledger, config.upstream_lockfile)
        self.checkpoints = Checkpoints(self.db, self.sandbox, config, self.ledger)
        self.checkpoints.layout()  # an older state dir gets its workspace's layout recorded now, not at a call
        # the verification commands the gateway runs itself are judged by self.judge (built below) when run
        self.verification = Verification(self.judge_call, self.sandbox, config)
        self.board = TaskBoard(self.db, self.ledger, self.engine, config, self.verification)
        local = [
            *file_tools(config.limits),
            *shell_tools(config.limits, config.shell, self.sandbox, self.egress),
            *git_tools(self.sandbox, config.limits),
            *task_tools(self.board),
        ]
        unprefixed = any(not upstream.prefixed for upstream in config.upstreams.values())
        self.catalog = Catalog(local, lambda: self.pool, unprefixed)
        self.intents = Intents(self.db, self.ledger)
        self.leases = Leases(self.db)  # named locks in the store: one holder across every gateway process
        # the committer, merge queue and ceremony are made on first use (below): a decision needs none of them
        self.catalog.add(intent_tools(self.intents, lambda: self.committer, self.board, self.catalog))
        self.catalog.add(ceremony_tools(lambda: self.ceremony))
        self.deadletters = DeadLetters(self.db, self.ledger)  # handoffs refused as malformed, kept whole
        # escalations pushed to people (gateway.yaml notify); one pass at a time across processes
        self.notifier = Notifier(config.notify, self.ledger, self.leases)
        # One judge: a tools/call, `gateway check`, the Claude Code hook and the verification commands the
        # gateway runs itself are described and decided by the same stages, and recorded the same way.
        recording = Record(self.ledger, self.telemetry)
        self.describing: list[Stage] = [
            Resolve(self.catalog, self.roles),
            ValidText(),
            Validate(config.limits),
            Describe(self.situate, config.policy.deadline_s),
        ]
        deciding: list[Stage] = [*self.describing, Decide(self.engine)]
        self.judge = Pipeline([*deciding, Judged()], finish=recording)
        self.hook_verdict = HookVerdict(self.approvals, self.checkpoints)
        self.hook_judge = Pipeline([*deciding, self.hook_verdict], finish=recording)
        self.pipeline = Pipeline(
            [
                Authenticate(self.tokens),
                *deciding,
                ActOnTier(
                    self.approvals,
                    self.checkpoints,
                    self.roles,
                    RequestStateSeal(self.keys.secret("request-state")),
                    config.approvals,
                ),
                RecordIntent(self.ledger),
                Execute(),
            ],
            finish=KeepDeadLetters(self.deadletters, self.situate, recording),
        )

    def _external_issuer(self) -> ExternalIssuer | None:
        """The team's identity provider, when gateway.yaml names one (PyJWT and its crypto load only then)."""
        if self.config.identity.external_issuer is None:
            return None
        from gateway.identity.external import ExternalIssuer

        return ExternalIssuer(self.config.identity.external_issuer, self.roles, self.revocations)

    @functools.cached_property
    def pool(self) -> UpstreamPool:
        """The upstream servers, made on first use: the MCP SDK they bring would cost a command-line check
        most of its start-up."""
        from gateway.tools.upstream import UpstreamPool

        return UpstreamPool(
            self.config.upstreams,
            self.sandbox,
            self.upstream_confinement,
            max_read_bytes=self.config.limits.max_read_bytes,
            pins=self.pins,
            listing=self.config.limits.upstream_listing,
        )

    @functools.cached_property
    def queue(self) -> MergeQueue:
        from gateway.commit.merge import MergeQueue

        return MergeQueue(self.config, self.ledger, self.leases, self.verification, self.intents)

    @functools.cached_property
    def committer(self) -> Committer:
        from gateway.commit.executor import Committer

        return Committer(self.intents, self.board, self.catalog, self.config, self.queue)

    @functools.cached_property
    def ceremony(self) -> Ceremony:
        from gateway.commit.ceremony import Ceremony

        return Ceremony(self.board, self.intents, self.committer, self.ledger, self.judge_call)

    async def judge_call(self, call: Call) -> Call:
        """A call decided, not run, and recorded (the verification commands use it before they run)."""
        return await self.judge.run(call)

    async def check(self, principal: Principal, tool: str, arguments: JSONObject, explain: bool = False) -> JSONObject:
        """The decision for one call, without running it (``gateway check``); recorded like any call.

        ``explain`` adds the input document the policy judged (``input``; None when the call was refused
        before it reached the policy) and every rule it fired (``fired``: denials, then findings)."""
        call = Call(
            tool=tool, arguments=arguments, origin=Origin(transport="inprocess", protocol_version="check"), kind="check"
        )
        call.principal = principal
        call.trace_id = session_trace(f"check:{principal.agent}")
        report = decision_report(await self.judge.run(call))
        if explain:
            document = call.policy_input
            report["input"] = document
            report["fired"] = await fired_rules(self.engine, document) if document is not None else []
        return report

    def situate(self, call: Call) -> None:
        """Where a call happens: a worker's task worktree, the task and intent the policy sees, the trace,
        and the sandbox its commands will run in. Calls the gateway makes itself (verification commands)
        arrive with their workspace set."""
        if call.workspace is None:
            self._locate(call)
        # a hooked call runs in Claude Code, outside any sandbox of the gateway's: it has none to describe
        call.confinement = None if call.kind == "hook" else self.confinement_for(call)

    def _locate(self, call: Call) -> None:
        assert call.principal is not None
        task = self.board.task_for(call.principal)
        named = call.arguments.get("task_id")
        intent_ref = call.arguments.get("intent_id")
        if isinstance(intent_ref, str) and call.tool.startswith("intent_"):
            intent = self.intents.find(intent_ref)
            if intent is not None:
                keys = ("id", "task_id", "action", "state", "proposed_by", "approved_by", "attempt")
                call.intent = {k: intent[k] for k in keys}
                if intent["action"] == "merge":  # the merge's shape: the policy holds a mass deletion
                    call.intent["diff"] = self.board.merge_shape(intent["task_id"])
                named = intent["task_id"]
        if task is None and isinstance(named, str) and call.spec is not None and call.spec.provider == "gateway":
            task = self.board.find(named)
        call.workspace = (self.board.workspace(task) if task else None) or self.workspace
        call.task = self.board.policy_section(task) if task else None
        if task is not None:
            call.trace_id = task["trace_id"]
        elif call.origin.session_id:
            call.trace_id = session_trace(call.origin.session_id)

    def confinement_for(self, call: Call) -> Confinement | None:
        """The sandbox of a call that runs commands: its worktree (or the workspace, for roles that work
        without tasks) writable; for a role that needs a claim and has no worktree, nothing writable.
        An upstream tool runs inside its server's sandbox; tools that run no command have none."""
        assert call.spec is not None and call.principal is not None and call.workspace is not None
        if call.spec.provider.startswith("upstream:"):
            upstream = self.pool.upstream_of(call.spec)
            return upstream.confinement if upstream is not None else None
        if "command" not in call.spec.argument_roles.values():
            return None
        role = self.roles.roles.get(call.principal.role)
        graded = acceptance_files(call.workspace.root, (call.task or {}).get("acceptance") or [])
        profile: Profile = "verify" if call.kind == "verify" else "command"  # test suites get more memory
        return self._command_confinement(call.workspace.root, role is None or role.requires_claim, graded, profile)

    @functools.lru_cache(maxsize=256)  # noqa: B019 (one Gateway per process; a few roots each)
    def _command_confinement(
        self, root: Path, needs_worktree: bool, graded: tuple[Path, ...] = (), profile: Profile = "command"
    ) -> Confinement:
        writable = [] if needs_worktree and root == self.workspace.root else [root]
        # a worktree's repository stays visible, read-only, wherever it lives
        repository = common_dir(root)
        visible = [self.config.workspace, *([repository] if repository and repository.parent != root else [])]
        # a task's acceptance files (the tests that grade it) stay read-only for the commands its worker runs
        protect = [*self.protected_in(root), *graded]
        pinned = self.pinned_in(root)
        return self.sandbox.confine(
            writable, cwd=root, protect=protect, pinned=pinned, visible=visible, profile=profile
        )

    def protected_in(self, root: Path) -> list[Path]:
        """What stays read-only inside a writable directory: what would run outside the sandbox later
        (git's hooks and config, a worktree's link to its repository) and gateway.yaml."""
        git = root / ".git"
        protect = [git / "hooks", git / "config", git / "modules"] if git.is_dir() else [git]
        own = [self.config.source, self.config.upstream_lockfile] if self.config.source else []
        return [*protect, *own]

    def pinned_in(self, root: Path) -> list[Path]:
        """What stays in place inside a writable directory, writable: a repository's ``.git`` directory is
        a mount point, so it cannot be renamed, removed or swapped for one of the command's making (the
        read-only hooks and config inside it would move with it, and the gateway's own git reads it)."""
        git = root / ".git"
        return [git] if git.is_dir() and not git.is_symlink() else []

    def upstream_confinement(self, config: UpstreamConfig) -> Confinement | None:
        """A stdio upstream server runs confined for its whole life; an HTTP one is someone else's process."""
        if config.command is None:
            return None
        root = self.config.workspace
        writable = [(root / p).resolve() for p in config.sandbox.writable]
        cwd = Path(config.cwd) if config.cwd else root
        named = [Path(p) for p in (config.command, *config.args) if p and os.path.isabs(p) and os.path.exists(p)]
        visible = [root, *(p if p.is_dir() else p.parent for p in named), *map(Path, config.sandbox.visible)]
        protect, pinned = self.protected_in(root), self.pinned_in(root)
        confinement = self.sandbox.confine(
            writable, cwd, protect=protect, pinned=pinned, profile="server", visible=visible
        )
        return confinement.allowing([ANY_HOST]) if config.sandbox.network else confinement

    def recover(self) -> None:
        """What a crash may have left: calls recorded as started that never ended, the merge queue's
        worktree, verification checkouts, task worktrees half-made or missing and git locks in them."""
        for call_id in self.ledger.close_interrupted(alive):
            log.warning("closed a call a stopped gateway left running", call_id=call_id)
        self.queue.recover_if_idle()
        scratch = clear_scratch(Repo(self.config.workspace), self.config.worktrees, self.config.state / "locks")
        if scratch:
            log.warning("removed verification checkouts a crash left", cleaned=scratch)
            detail = {"what": "verification checkouts", "cleaned": scratch}
            self.ledger.append({"kind": "recovery", "outcome": "ok", "detail": detail})
        for cleaned in self.board.recover_worktrees():
            log.warning("recovered a task worktree", cleaned=cleaned)

    def visible_tools(self, principal: Principal) -> list[ToolSpec]:
        return [spec for spec in self.catalog.all() if self.roles.grants(principal, spec.name)]

    async def notify_escalations(self) -> None:
        """Push escalations to gateway.yaml's webhooks (notify), every notify.interval_s."""
        while True:
            await anyio.sleep(self.config.notify.interval_s)
            try:
                await self.notifier.deliver()
            except Exception:  # a notifier fault must never stop the gateway; the cursor keeps the place
                log.exception("escalation notifier failed")

    async def sweep_claims(self) -> None:
        """Record expired claims when they expire (every tasks.sweep_s), not at the next claim."""
        while True:
            await anyio.sleep(self.config.tasks.sweep_s)
            await anyio.to_thread.run_sync(self.board.sweep)

    def load_pins(self) -> None:
        """The operator's lockfile into the store (a bad one stops the start, naming the entry). With upstreams
        configured and no lockfile yet, an empty one is made, which the sandbox then mounts read-only."""
        if self.config.upstreams:
            try:
                if self.pins.ensure_lockfile():
                    log.info("made an empty upstream lockfile", path=str(self.config.upstream_lockfile))
            except OSError as exc:  # a read-only config dir: no agent can write there either
                log.info("no upstream lockfile made", path=str(self.config.upstream_lockfile), error=str(exc))
        for upstream in self.pins.import_lock():
            log.info("upstream pins taken from the lockfile", upstream=upstream)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Gateway]:
        await anyio.to_thread.run_sync(self.engine.start)  # its decision workers up before any call
        await anyio.to_thread.run_sync(self.load_pins)
        async with anyio.create_task_group() as tg:
            await self.pool.start(tg)
            # Several processes may serve one store (serve --workers, replicas): one recovers at a time,
            # and each finds only what a dead process left (a live one's calls, merge and intents keep
            # their leases and are left alone).
            async with self.leases.hold(RECOVERY):
                await anyio.to_thread.run_sync(self.recover)
                for settled in await self.committer.reconcile():
                    log.warning("reconciled an intent a crash left executing", **settled)
            tg.start_soon(self.sweep_claims)
            if self.notifier.enabled:
                self.notifier.start()
                tg.start_soon(self.notify_escalations)
            try:
                yield self
            finally:
                tg.cancel_scope.cancel()
                self.telemetry.flush()
                with anyio.CancelScope(shield=True):
                    await self.engine.aclose()
