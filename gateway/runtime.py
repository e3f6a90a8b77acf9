"""The gateway runtime: every service the stage stacks (gateway/judge/stacks.py) run on, assembled from one config.

gateway = Gateway(GatewayConfig.load("gateway.yaml"))
async with gateway.running():          # upstream servers connected, concurrently
    result = await gateway.stacks.call(call)
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import anyio
import structlog
from anyio.abc import TaskGroup

from gateway.addresses import AddressGuard, listening_ports
from gateway.approvals import Approvals, RequestStateSeal
from gateway.call_tasks import CallTasks
from gateway.checkpoints import Checkpoints
from gateway.commit.intents import Intents
from gateway.config import GatewayConfig, PolicyConfig, parse_listen
from gateway.effects.paths import Workspace
from gateway.egress import Egress
from gateway.identity.keys import KeyRing
from gateway.identity.revocations import Revocations
from gateway.identity.roles import LiveRoles
from gateway.identity.tokens import Tokens
from gateway.judge.call import Call, CallKind, verdict
from gateway.judge.confine import Confinements
from gateway.judge.scope import ScopeQuestion, ask_scope
from gateway.judge.situate import Situate, session_trace
from gateway.judge.stacks import Stacks
from gateway.labels import FlowLabels
from gateway.ledger.budgets import Budgets
from gateway.ledger.chain import Ledger
from gateway.ledger.leases import Leases
from gateway.locks import alive
from gateway.notify import Notifier
from gateway.origin import Origin
from gateway.policy.cache import DecisionCache
from gateway.policy.checked import CheckedSources
from gateway.policy.embedded import EmbeddedEngine
from gateway.policy.engine import PolicyEngine, engine_running, fired_rules
from gateway.policy.isolated import IsolatedEngine
from gateway.policy.lint import flat_layout
from gateway.policy.reload import PolicyData, WithSettings, policy_data
from gateway.repo import Repo
from gateway.sandbox import Sandbox
from gateway.session_joins import SessionJoins
from gateway.store import open_store
from gateway.store.repositories.review_index import catch_up
from gateway.supervise import Supervised
from gateway.tasks.board import TaskBoard
from gateway.tasks.deadletters import DeadLetters
from gateway.tasks.verification import Verification, clear_scratch
from gateway.telemetry import Telemetry
from gateway.tools import gateway_tools
from gateway.tools.catalog import Catalog
from gateway.tools.pins import Pins
from gateway.tools.spec import ToolSpec
from gateway.types import JSONObject, Principal

if TYPE_CHECKING:
    from gateway.artifacts.store import Artifacts
    from gateway.attest.attestations import Attestations
    from gateway.commit.ceremony import Ceremony
    from gateway.commit.executor import Committer
    from gateway.commit.merge import MergeQueue
    from gateway.identity.external import ExternalIssuer
    from gateway.tools.upstream import UpstreamPool

log = structlog.get_logger("gateway.runtime")
RECOVERY = "recovery"  # the lease a starting gateway process holds while it clears what a crash left


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
        catch_up(self.db)  # a ledger from before the review index is indexed once, a batch per transaction
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
        # information-flow labels of each session, in the store: shared by every process and replica
        self.labels = FlowLabels(self.db, self.ledger)
        # budgets of roles, agents and tasks, charged in the store (gateway.yaml budgets, manifests' budget)
        self.budgets = Budgets(self.db, config.budgets)
        self.call_tasks = CallTasks(self.db)
        self.task_runner: TaskGroup | None = None  # where calls run as tasks run, while the gateway runs
        # upstream definitions as pinned (first use, the operator's lockfile, a person's approval)
        self.pins = Pins(self.db, self.ledger, config.upstream_lockfile)
        self.checkpoints = Checkpoints(self.db, self.sandbox, config, self.ledger)
        self.checkpoints.layout()  # an older state dir gets its workspace's layout recorded now, not at a call
        # the verification commands the gateway runs itself are judged by the verify stack (built below)
        self.verification = Verification(self.judge_call, self.sandbox, config)
        # scope questions are the judge's too: asked through the scope stack (built below), and recorded
        self.board = TaskBoard(self.db, self.ledger, self.ask_scope, config, self.verification)
        unprefixed = any(not upstream.prefixed for upstream in config.upstreams.values())
        self.catalog = Catalog([], lambda: self.pool, unprefixed)
        self.intents = Intents(self.db, self.ledger)
        self.leases = Leases(self.db)  # named locks in the store: one holder across every gateway process
        # every toolset (gateway/tools/__init__.py); the committer, merge queue and ceremony are made on first
        # use (below): a decision needs none of them
        self.catalog.add(gateway_tools(self))
        self.deadletters = DeadLetters(self.db, self.ledger)  # handoffs refused as malformed, kept whole
        # escalations pushed to people (gateway.yaml notify); one pass at a time across processes
        self.notifier = Notifier(config.notify, self.ledger, self.leases)
        self.request_state_seal = RequestStateSeal(self.keys.secret("request-state"))
        self.confinements = Confinements(config, self.workspace, self.sandbox, self.roles, lambda: self.pool)
        # which Claude Code session an MCP call belongs to, as the hook said (in the store: every process's hooks)
        self.joins = SessionJoins(self.db)
        self.situate = Situate(self.board, self.intents, self.workspace, self.confinements, self.joins)
        # One judge: a tools/call, `gateway check`, the Claude Code hook and the commands the gateway runs
        # itself are described and decided by the same stages, and recorded the same way (gateway/judge/)
        self.stacks = Stacks(self)

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
            self.confinements.for_upstream,
            max_read_bytes=self.config.limits.max_read_bytes,
            pins=self.pins,
            listing=self.config.limits.upstream_listing,
        )

    @functools.cached_property
    def queue(self) -> MergeQueue:
        from gateway.commit.merge import MergeQueue

        return MergeQueue(self.config, self.ledger, self.leases, self.verification, self.intents, self.attestations)

    @functools.cached_property
    def artifacts(self) -> Artifacts:
        from gateway.artifacts.store import Artifacts

        return Artifacts(self.db, self.ledger, self.config.limits.max_artifact_bytes)

    @functools.cached_property
    def attestations(self) -> Attestations:
        from gateway.attest.attestations import Attestations
        from gateway.repo import Repo

        ring = KeyRing(self.config.keys_dir / "attestations")  # kept apart from the token keys: never removed
        return Attestations(self.db, self.ledger, Repo(self.config.workspace), ring, self.pins, self.engine.revision)

    @functools.cached_property
    def committer(self) -> Committer:
        from gateway.commit.executor import Committer

        return Committer(self.intents, self.board, self.catalog, self.config, self.queue, self.artifacts)

    @functools.cached_property
    def ceremony(self) -> Ceremony:
        from gateway.commit.ceremony import Ceremony

        return Ceremony(self.board, self.intents, self.committer, self.ledger, self.judge_call)

    async def judge_call(self, call: Call) -> Call:
        """A call decided, not run, and recorded (the verification commands and the merge ceremony's merges,
        before they run): the verify stack, reached through here because it is built after its users."""
        return await self.stacks.verify.run(call)

    async def ask_scope(self, question: ScopeQuestion) -> list[str]:
        """Which files lie outside some globs (the task board's scope checks), through the scope stack."""
        return await ask_scope(self.stacks.scope, question)

    async def check(self, principal: Principal, tool: str, arguments: JSONObject, explain: bool = False) -> JSONObject:
        """The decision for one call, without running it (``gateway check``); recorded like any call.

        ``explain`` adds the input document the policy judged (``input``; None when the call was refused
        before it reached the policy) and every rule it fired (``fired``: denials, then findings)."""
        origin = Origin(transport="inprocess", protocol_version="check")
        call = Call(tool=tool, arguments=arguments, origin=origin, kind=CallKind.CHECK, principal=principal)
        call.trace_id = session_trace(f"check:{principal.agent}")
        decision = verdict(await self.stacks.check.run(call))
        assert decision is not None  # a call the check stack did not decide was refused, and says why
        report = {**decision.model_dump(), "effects": call.effects.model_dump() if call.effects else None}
        if explain:
            document = call.policy_input
            report["input"] = document
            report["fired"] = await fired_rules(self.engine, document) if document is not None else []
        return report

    def recover(self) -> None:
        """What a crash may have left: calls recorded as started that never ended, the merge queue's
        worktree, verification checkouts, task worktrees half-made or missing and git locks in them."""
        for call_id in self.ledger.close_interrupted(alive):
            log.warning("closed a call a stopped gateway left running", call_id=call_id)
        for task_id in self.call_tasks.recover(alive):
            log.warning("failed a task a stopped gateway left working", task_id=task_id)
            self.ledger.append({"kind": "recovery", "outcome": "ok", "detail": {"what": "task", "task_id": task_id}})
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

    @functools.cached_property
    def background(self) -> list[Supervised]:
        """The loops a running gateway keeps going, each surviving its own failures (gateway/supervise.py):
        expired claims recorded when they expire (every tasks.sweep_s), not at the next claim; escalations
        pushed to gateway.yaml's webhooks (notify, every notify.interval_s; the cursor keeps the place)."""
        loops = [Supervised("claim sweep", self._sweep, self.config.tasks.sweep_s, self.ledger)]
        if self.notifier.enabled:
            loops.append(
                Supervised("escalation notifier", self.notifier.deliver, self.config.notify.interval_s, self.ledger)
            )
        return loops

    async def _sweep(self) -> None:
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
        # the engine's decision workers are up before any call, and stopped however the start or the run ends
        async with engine_running(self.engine):
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
                if self.notifier.enabled:
                    self.notifier.start()
                for loop in self.background:
                    tg.start_soon(loop.run, name=loop.name)
                self.task_runner = tg
                try:
                    yield self
                finally:
                    self.task_runner = None
                    tg.cancel_scope.cancel()
                    self.telemetry.flush()
