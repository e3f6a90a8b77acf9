"""Budget: what a call costs its role, its agent and its task (gateway/budgets.py), charged once, after the policy
authorised it.

    ChargeBudget  after decide: the call, its tier-2 change or tier-3 request and a token of each rate are
                  charged in one store transaction for every scope it falls under; an exhausted scope (or a
                  store that cannot be charged) refuses it, saying what ran out and when it resets
    SettleBudget  a finish stage, before record: the egress bytes and wall time the call used are added, in the
                  transaction of the call's ledger row; what is left is in the result's ``_meta``
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Collection

from gateway.approvals import Approvals, RequestStateSeal
from gateway.budgets import BUDGET_META, Budget, Usage
from gateway.egress import EGRESS_BYTES
from gateway.judge.approval import Asking
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

    def __init__(
        self, budgets: Budgets, approvals: Approvals, seal: RequestStateSeal, interactive_roles: Collection[str]
    ) -> None:
        self.budgets = budgets
        self.approvals = approvals
        self.seal = seal
        self.interactive_roles = interactive_roles

    def _answered(self, call: Call) -> bool:
        """Whether this asked call is the retry a person answered (out of band, or at the client): it was
        charged when it asked, and is not charged again (what it uses while it runs still is)."""
        assert call.principal is not None
        asking = Asking.of(call)
        responses = call.origin.input_responses
        if responses and "approval" in responses:
            # an answer at the client counts only as ActOnTier takes it: a person's client (an interactive role)
            # answering the request this call was given; any other is the agent's own word, charged (and held)
            interactive = call.principal.role in self.interactive_roles
            return interactive and self.seal.opens(asking.key, call.origin.request_state)
        return self.approvals.answered(asking.key, asking.site)

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
        if not (decision.action == "ask" and self._answered(call)):
            usage = Usage(calls=1, tier2=int(decision.tier == 2), tier3=int(decision.action == "ask"))
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
