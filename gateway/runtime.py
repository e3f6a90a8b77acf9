"""The gateway runtime: every service the pipeline runs on, assembled from one config.

gateway = Gateway(GatewayConfig.load("gateway.yaml"))
async with gateway.running():          # upstream servers connected, concurrently
    result = await gateway.pipeline(call)
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio

from gateway.approvals import Approvals, RequestStateSeal
from gateway.checkpoints import Checkpoints
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
from gateway.tools.catalog import Catalog
from gateway.tools.files import file_tools
from gateway.tools.git import git_tools
from gateway.tools.shell import shell_tools
from gateway.tools.upstream import UpstreamPool
from gateway.types import Decision, JSONObject, Origin, Principal, ToolSpec


def make_engine(config: PolicyConfig, data: JSONObject) -> PolicyEngine:
    if config.engine == "opa":
        from gateway.policy.opa import OpaEngine

        return OpaEngine(config.path, data, url=config.opa_url, token=config.opa_token)
    return EmbeddedEngine(config.path, data)


class Gateway:
    def __init__(self, config: GatewayConfig) -> None:
        self.config = config
        self.db = Database.open(config.store_path)
        self.ledger = Ledger(self.db)
        self.roles = RoleSet.load(config.roles)
        self.keys = KeyRing(config.keys_dir)
        self.revocations = Revocations(self.db)
        self.tokens = Tokens(self.keys, self.roles, self.revocations, config.identity.issuer, config.identity.audience)
        self.engine = make_engine(config.policy, {"roles": self.roles.as_data()})
        self.workspace = Workspace(config.workspace, config.protected_paths())
        self.approvals = Approvals(self.db, self.ledger, ttl_s=config.approvals.ttl_s)
        self.checkpoints = Checkpoints(self.db, config.checkpoints_dir)
        self.pool = UpstreamPool(config.upstreams)
        builtins = [*file_tools(config.limits), *shell_tools(config.limits, config.shell), *git_tools()]
        self.catalog = Catalog(builtins, self.pool)
        # the stages that describe a call, shared by the pipeline and by `gateway check`
        self.describing: list[Stage] = [
            Resolve(self.catalog, self.roles),
            Validate(config.limits),
            Describe(self.workspace_for),
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
            finish=Record(self.ledger),
        )

    async def check(self, principal: Principal, tool: str, arguments: JSONObject) -> JSONObject:
        """The decision for one call, without running it (``gateway check``)."""
        call = Call(tool=tool, arguments=arguments, origin=Origin(transport="inprocess", protocol_version="check"))
        call.principal = principal
        try:
            for stage in self.describing:
                await stage(call)
        except GatewayError as exc:
            decision = Decision(action="deny", tier=3, reasons=[exc.message], rules=[f"gateway.{exc.code}"])
            return {**decision.model_dump(), "effects": call.effects.model_dump() if call.effects else None}
        decision = await self.engine.decide(policy_input(call))
        return {**decision.model_dump(), "effects": call.effects.model_dump() if call.effects else None}

    def workspace_for(self, principal: Principal) -> Workspace:
        return self.workspace

    def visible_tools(self, principal: Principal) -> list[ToolSpec]:
        return [spec for spec in self.catalog.all() if self.roles.grants(principal, spec.name)]

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Gateway]:
        async with anyio.create_task_group() as tg:
            await self.pool.start(tg)
            try:
                yield self
            finally:
                tg.cancel_scope.cancel()
