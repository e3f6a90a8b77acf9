"""Budget: what a call costs its role, its agent and its task (gateway/budgets.py), charged once, after the policy
authorised it.

    ChargeBudget  after decide: the call, its tier-2 change or tier-3 request and a token of each rate are
                  charged in one store transaction for every scope it falls under; an exhausted scope (or a
                  store that cannot be charged) refuses it, saying what ran out and when it resets. A call the
                  policy asks about owes its charge instead (``call.budget_owed``): whether it asks a person or
                  takes an answer to its earlier asking is known only as the answer is taken, so the stage that
                  takes it pays or forgives the charge (``Enforcement``, gateway/judge/approval.py)
    SettleBudget  a finish stage, before record: the egress bytes and wall time the call used are added, in the
                  transaction of the call's ledger row; what is left is in the result's ``_meta``
"""

from __future__ import annotations

import functools
import json
import time

from gateway.budgets import BUDGET_META, Budget, Usage
from gateway.egress import EGRESS_BYTES
from gateway.judge.call import Call
from gateway.judge.execute import with_meta
from gateway.ledger.budgets import Budgets

__all__ = ["ChargeBudget", "SettleBudget", "manifest_budget"]


@functools.lru_cache(maxsize=256)
def manifest_budget(manifest_json: str) -> Budget:
    """A task manifest's budget, validated once rather than on every call of the task (a Budget is frozen)."""
    return Budget.model_validate_json(manifest_json)


class ChargeBudget:
    """Charges an authorised call to every budget it falls under; refuses it when one is spent."""

    def __init__(self, budgets: Budgets) -> None:
        self.budgets = budgets

    async def __call__(self, call: Call) -> None:
        if not self.budgets.config.any:
            return
        assert call.principal is not None and call.decision is not None
        task = call.task or {}
        manifest = task.get("budget")
        scopes = self.budgets.scopes(
            call.principal.role,
            call.principal.agent,
            task.get("id"),
            manifest_budget(json.dumps(manifest, sort_keys=True)) if isinstance(manifest, dict) else None,
        )
        if not scopes:
            return
        decision = call.decision
        call.budget_scopes = scopes
        usage = Usage(calls=1, tier2=int(decision.tier == 2), tier3=int(decision.action == "ask"))
        if decision.action == "ask":
            # a retry a person answered was charged when it asked; only taking the answer tells it is one (a
            # twin with the same key may take it first): the taking stage pays or forgives, before any effect
            call.budget_owed = usage
        else:
            call.budget_left = self.budgets.charge(scopes, usage)
        call.egress_bytes = [0]
        EGRESS_BYTES.set(call.egress_bytes)  # this call's task: the egress proxy it starts counts into it
        call.running_since = time.perf_counter()


class SettleBudget:
    """Adds what a call used while it ran and tells the agent what is left (a finish stage, before record)."""

    def __init__(self, budgets: Budgets) -> None:
        self.budgets = budgets

    async def __call__(self, call: Call) -> None:
        if call.budget_scopes is None:
            return
        if call.outcome in ("ok", "error", "allowed"):
            ran_ms = int((time.perf_counter() - (call.running_since or call.started)) * 1000)
            egress = call.egress_bytes[0] if call.egress_bytes else 0
            scopes, usage = call.budget_scopes, Usage(egress_bytes=egress, wall_ms=ran_ms)
            if self.budgets.measures(scopes):  # with the call's ledger row: one transaction, not two
                call.recorded_with.append(lambda tx: self.budgets.settle_in(tx, scopes, usage))
        if call.result is not None and call.budget_left is not None:
            call.result = with_meta(call.result, BUDGET_META, call.budget_left)
