"""The stage stacks: every way a call is judged, declared in one place (as Starlette declares its middleware
stack). Each stack is a list of stages run in order and its finish, which runs whatever happened; a
stage is one module of this package.

    tools/call          authenticate -> resolve -> valid text -> validate -> describe -> read flow -> decide
                        -> charge budget -> act on tier -> record intent -> execute;
                                                  finish: keep dead letters, label result, settle budget, record
    resources/read,     authenticate -> resolve -> valid text -> validate -> describe -> read flow -> decide
    prompts/get         -> charge budget -> act on tier -> record intent -> execute;
                                                  finish: label result, settle budget, record
    relay               resolve -> valid text -> describe -> decide -> ask client;   finish: record
                        (an upstream's question or sampling request for the calling client, during a call)
    check (dry run)     resolve -> valid text -> validate -> describe -> read flow -> decide -> judged;
                                                                     finish: record
    verify              the same, for the commands the gateway runs itself (verify_run's, a merge's checks)
                        and the merge ceremony's merges (kind ceremony_check)
    hook                read hook event -> [resolve -> valid text -> validate -> describe -> read flow -> decide]
                        -> charge budget -> hook verdict;  finish: label result, settle budget, record
    scope               scope (which of a task's files lie outside its allowed paths or acceptance files);
                                                              finish: record

    stacks = Stacks(gateway)
    result = await stacks.call(call)          # a tools/call's answer; stacks.call.run(call) gives the Call
"""

from __future__ import annotations

from typing import Protocol

from gateway.approvals import Approvals, RequestStateSeal
from gateway.checkpoints import Checkpoints
from gateway.config import GatewayConfig
from gateway.effects.paths import Workspace
from gateway.identity.roles import LiveRoles
from gateway.identity.tokens import Tokens
from gateway.judge.act_on_tier import ActOnTier
from gateway.judge.approval import Enforcement
from gateway.judge.authenticate import Authenticate
from gateway.judge.budget import ChargeBudget, SettleBudget
from gateway.judge.call import Stage
from gateway.judge.decide import Decide
from gateway.judge.describe import Describe
from gateway.judge.execute import Execute
from gateway.judge.flow import LabelResult, ReadFlow
from gateway.judge.hook_event import ReadHookEvent, UnlessDecided
from gateway.judge.hook_verdict import HookVerdict
from gateway.judge.judged import Judged
from gateway.judge.keep_deadletters import KeepDeadLetters
from gateway.judge.pipeline import Pipeline
from gateway.judge.record import Record
from gateway.judge.record_intent import RecordIntent
from gateway.judge.relay import AskClient
from gateway.judge.resolve import Resolve
from gateway.judge.scope import Scope
from gateway.judge.situate import Situate
from gateway.judge.valid_text import ValidText
from gateway.judge.validate import Validate
from gateway.labels import FlowLabels
from gateway.ledger.budgets import Budgets
from gateway.ledger.chain import Ledger
from gateway.policy.engine import PolicyEngine
from gateway.session_joins import SessionJoins
from gateway.tasks.board import TaskBoard
from gateway.tasks.deadletters import DeadLetters
from gateway.telemetry import Telemetry
from gateway.tools.catalog import Catalog

__all__ = ["Services", "Stacks"]


class Services(Protocol):
    """What the stages run on: the gateway's services (gateway/runtime.py)."""

    @property
    def config(self) -> GatewayConfig: ...
    @property
    def ledger(self) -> Ledger: ...
    @property
    def telemetry(self) -> Telemetry: ...
    @property
    def tokens(self) -> Tokens: ...
    @property
    def roles(self) -> LiveRoles: ...
    @property
    def catalog(self) -> Catalog: ...
    @property
    def engine(self) -> PolicyEngine: ...
    @property
    def approvals(self) -> Approvals: ...
    @property
    def checkpoints(self) -> Checkpoints: ...
    @property
    def board(self) -> TaskBoard: ...
    @property
    def deadletters(self) -> DeadLetters: ...
    @property
    def workspace(self) -> Workspace: ...
    @property
    def situate(self) -> Situate: ...
    @property
    def request_state_seal(self) -> RequestStateSeal: ...
    @property
    def labels(self) -> FlowLabels: ...
    @property
    def budgets(self) -> Budgets: ...
    @property
    def joins(self) -> SessionJoins: ...


class Stacks:
    """The gateway's stacks, built once from its services."""

    def __init__(self, services: Services) -> None:
        config = services.config
        record = Record(services.ledger, services.telemetry)
        enforcement = Enforcement(services.approvals, services.checkpoints, services.budgets)
        resolve, valid_text = Resolve(services.catalog, services.roles), ValidText()
        describe, decide = Describe(services.situate, config.policy.deadline_s), Decide(services.engine)
        describing: list[Stage] = [resolve, valid_text, Validate(config.limits), describe]
        deciding: list[Stage] = [*describing, ReadFlow(services.labels), decide]
        label = LabelResult(services.labels, config.upstreams)
        charge = ChargeBudget(services.budgets)
        settle = SettleBudget(services.budgets)
        # what an upstream asks of the calling client during a call: judged as a request to a person, sent
        # only if allowed (never held for approval), recorded (its arguments are no tool's: not validated)
        self.relay = Pipeline(
            [resolve, valid_text, describe, decide, AskClient(config.approvals.elicit_timeout_s)], finish=[record]
        )
        self.running: list[Stage] = [
            *deciding,
            charge,
            ActOnTier(enforcement, services.roles, services.request_state_seal, config.approvals),
            RecordIntent(services.ledger),
            Execute(self.relay.run),
        ]
        self.call_finish: list[Stage] = [
            KeepDeadLetters(services.deadletters, services.situate),
            label,
            settle,
            record,
        ]
        # a tools/call: judged, run and recorded (a malformed handoff kept as a dead letter)
        self.call = Pipeline([Authenticate(services.tokens), *self.running], finish=self.call_finish)
        # an upstream's resource read or prompt get: judged as a read of that upstream, run and recorded
        self.read = Pipeline([Authenticate(services.tokens), *self.running], finish=[label, settle, record])
        # a dry run (`gateway check`): decided and recorded, never run; the caller names the principal
        self.check = Pipeline([*deciding, Judged()], finish=[record])
        # the gateway's own commands and merges, decided for the principal that asked for them before they run
        self.verify = Pipeline([*deciding, Judged()], finish=[record])
        # a Claude Code hook event: judged as the gateway tool with the same effects; Claude Code runs it
        self.hook = Pipeline(
            [
                ReadHookEvent(
                    services.tokens,
                    services.board,
                    services.workspace,
                    services.joins,
                    services.catalog,
                    config.claude_code.mcp_servers,
                ),
                UnlessDecided(deciding),
                charge,
                HookVerdict(enforcement),
            ],
            finish=[label, settle, record],
        )
        # the task board's scope questions: a manifest's allowed paths, a report's diff (fail closed)
        self.scope = Pipeline([Scope(services.engine)], finish=[record])
        # describes (for `gateway check --explain` and benchmarks) without deciding
        self.describing = describing

    def replay(self, authenticate: Stage) -> Pipeline:
        """The tools/call stack with ``authenticate`` in place of its own (a dead letter replayed as the
        principal it recorded)."""
        return Pipeline([authenticate, *self.running], finish=self.call_finish)
