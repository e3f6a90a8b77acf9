"""The gateway runtime: every service the pipeline runs on, assembled from one config.

gateway = Gateway(GatewayConfig.load("gateway.yaml"))
async with gateway.running():          # upstream servers connected, concurrently
    result = await gateway.pipeline(call)
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import structlog

from gateway.approvals import Approvals, RequestStateSeal
from gateway.checkpoints import Checkpoints
from gateway.commit.executor import Committer
from gateway.commit.intents import Intents
from gateway.commit.tools import intent_tools
from gateway.config import GatewayConfig, PolicyConfig
from gateway.effects.paths import Workspace
from gateway.errors import GatewayError
from gateway.identity.keys import KeyRing
from gateway.identity.revocations import Revocations
from gateway.identity.roles import RoleSet
from gateway.identity.tokens import Tokens
from gateway.ledger.chain import Ledger
from gateway.ledger.store import Database
from gateway.pipeline import (
    ActOnTier,
    Authenticate,
    Call,
    Decide,
    Describe,
    Execute,
    Pipeline,
    Record,
    RecordIntent,
    Resolve,
    Stage,
    Validate,
    policy_input,
)
from gateway.policy.embedded import EmbeddedEngine
from gateway.policy.engine import PolicyEngine
from gateway.tasks.board import TaskBoard
from gateway.tasks.tools import task_tools
from gateway.telemetry import Telemetry
from gateway.tools.catalog import Catalog
from gateway.tools.files import file_tools
from gateway.tools.git import git_tools
from gateway.tools.shell import shell_tools
from gateway.tools.upstream import UpstreamPool
from gateway.types import Decision, JSONObject, Origin, Principal, ToolSpec

log = structlog.get_logger("gateway.runtime")


def session_trace(session_id: str) -> str:
    """The trace of a session without a task: stable for the session, unlinkable to its id."""
    return hashlib.sha256(f"session:{session_id}".encode()).hexdigest()[:32]


def decision_report(call: Call) -> JSONObject:
    """What ``gateway check`` prints for a checked call: the Decision and the effects it was made on."""
    assert call.decision is not None
    return {**call.decision.model_dump(), "effects": call.effects.model_dump() if call.effects else None}


def make_engine(config: PolicyConfig, data: JSONObject) -> PolicyEngine:
    if config.engine == "opa":
        from gateway.policy.opa import OpaEngine

        return OpaEngine(config.path, data, url=config.opa_url, token=config.opa_token)
    return EmbeddedEngine(config.path, data)


class Gateway:
    def __init__(self, config: GatewayConfig) -> None:
        config.check_layout()
        self.config = config
        self.telemetry = Telemetry.from_config(config)
        self.db = Database.open(config.store_path)
        self.ledger = Ledger(self.db)
        self.roles = RoleSet.load(config.roles_dir)
        self.keys = KeyRing(config.keys_dir)
        self.revocations = Revocations(self.db)
        self.tokens = Tokens(self.keys, self.roles, self.revocations, config.identity.issuer, config.identity.audience)
        self.engine = make_engine(config.policy, {"roles": self.roles.as_data()})
        self.workspace = Workspace(config.workspace, config.protected_paths())
        self.approvals = Approvals(self.db, self.ledger, ttl_s=config.approvals.ttl_s)
        self.checkpoints = Checkpoints(self.db, config.checkpoints_dir)
        self.pool = UpstreamPool(config.upstreams)
        self.board = TaskBoard(self.db, self.ledger, self.engine, config)
        local = [
            *file_tools(config.limits),
            *shell_tools(config.limits, config.shell),
            *git_tools(),
            *task_tools(self.board),
        ]
        self.catalog = Catalog(local, self.pool)
        self.intents = Intents(self.db, self.ledger)
        self.committer = Committer(self.intents, self.board, self.catalog, config)
        self.catalog.add(intent_tools(self.intents, self.committer, self.board, self.catalog))
        # the stages that describe a call, shared by the pipeline and by `gateway check`
        self.describing: list[Stage] = [
            Resolve(self.catalog, self.roles),
            Validate(config.limits),
            Describe(self.situate),
        ]
        self.pipeline = Pipeline(
            [
                Authenticate(self.tokens),
                *self.describing,
                Decide(self.engine),
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
            finish=Record(self.ledger, self.telemetry),
        )

    async def check(self, principal: Principal, tool: str, arguments: JSONObject) -> JSONObject:
        """The decision for one call, without running it (``gateway check``)."""
        return decision_report(await self.checked_call(principal, tool, arguments))

    async def checked_call(self, principal: Principal, tool: str, arguments: JSONObject) -> Call:
        """A call taken through describe and decide only; a refusal on the way becomes a deny decision."""
        call = Call(tool=tool, arguments=arguments, origin=Origin(transport="inprocess", protocol_version="check"))
        call.principal = principal
        try:
            for stage in self.describing:
                await stage(call)
        except GatewayError as exc:
            call.decision = Decision(action="deny", tier=3, reasons=[exc.message], rules=[f"gateway.{exc.code}"])
            return call
        call.decision = await self.engine.decide(policy_input(call))
        return call

    def situate(self, call: Call) -> None:
        """Where a call happens: a worker's task worktree, the task and intent the policy sees, the trace."""
        assert call.principal is not None
        task = self.board.task_for(call.principal)
        named = call.arguments.get("task_id")
        intent_ref = call.arguments.get("intent_id")
        if isinstance(intent_ref, str) and call.tool.startswith("intent_"):
            intent = self.intents.find(intent_ref)
            if intent is not None:
                call.intent = {k: intent[k] for k in ("id", "task_id", "action", "state", "approved_by")}
                named = intent["task_id"]
        if task is None and isinstance(named, str) and call.spec is not None and call.spec.provider == "gateway":
            task = self.board.find(named)
        call.workspace = (self.board.workspace(task) if task else None) or self.workspace
        call.task = self.board.policy_section(task) if task else None
        if task is not None:
            call.trace_id = task["trace_id"]
        elif call.origin.session_id:
            call.trace_id = session_trace(call.origin.session_id)

    def visible_tools(self, principal: Principal) -> list[ToolSpec]:
        return [spec for spec in self.catalog.all() if self.roles.grants(principal, spec.name)]

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Gateway]:
        async with anyio.create_task_group() as tg:
            await self.pool.start(tg)
            for settled in await self.committer.reconcile():
                log.warning("reconciled an intent a crash left executing", **settled)
            try:
                yield self
            finally:
                tg.cancel_scope.cancel()
                self.telemetry.flush()
