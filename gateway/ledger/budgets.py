"""Budgets charged in the store (the limits are gateway/budgets.py's): one row per scope, its counts in the current
window and its token bucket. A call is charged in one transaction for every scope it falls under, or not at all.

    budgets = Budgets(store, config.budgets)
    scopes = budgets.scopes("worker", "w1", "T1", manifest_budget)
    left = budgets.charge(scopes, Usage(calls=1, tier2=1))      # or BudgetExhausted / BudgetUnavailable
    budgets.settle(scopes, Usage(egress_bytes=1200, wall_ms=35))
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any

from gateway.budgets import COUNTS, MEASURED, Budget, BudgetExhausted, BudgetsConfig, BudgetUnavailable, Usage
from gateway.store import Store, Transaction
from gateway.store.repositories import budgets
from gateway.types import JSONObject

__all__ = ["Budgets"]


@functools.lru_cache(maxsize=256)  # a window's reset time, the same on every call of the window
def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="seconds")


class Budgets:
    """The ``budgets`` table: one row per scope (``role:worker``, ``agent:w1``, ``task:T1``)."""

    def __init__(self, store: Store, config: BudgetsConfig, clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.config = config
        self.clock = clock

    def scopes(self, role: str, agent: str, task: str | None, manifest: Budget | None) -> list[tuple[str, Budget]]:
        """The scopes a call falls under and their budgets (none configured: nothing is charged)."""
        found: list[tuple[str, Budget]] = []
        if role in self.config.roles:
            found.append((f"role:{role}", self.config.roles[role]))
        if self.config.agent is not None:
            found.append((f"agent:{agent}", self.config.agent))
        if task is not None and (self.config.task is not None or manifest is not None):
            base = self.config.task
            found.append((f"task:{task}", base.tightened(manifest) if base is not None else manifest))  # type: ignore[arg-type]
        return found

    def charge(self, scopes: Sequence[tuple[str, Budget]], usage: Usage) -> JSONObject:
        """Charge every scope in one transaction, or none: answers what is left of each (the result's _meta)."""
        now = self.clock()
        window_s = self.config.window_s
        charged = (usage.calls, usage.tier2, usage.tier3, usage.egress_bytes, usage.wall_ms)
        left: JSONObject = {}
        try:
            with self.store.transaction() as tx:
                for scope, budget in scopes:
                    row = _refilled(budgets.charged_in(tx, scope), now, window_s, budget)
                    _check(scope, budget, row, charged, now, window_s)
                    for at, amount in enumerate(charged, _CALLS):
                        row[at] += amount
                    if budget.rate is not None:
                        row[_TOKENS] -= 1
                    budgets.write(tx, scope, row)
                    left[scope] = _left(budget, row, window_s)
        except (BudgetExhausted, BudgetUnavailable):
            raise
        except Exception as exc:
            raise BudgetUnavailable(
                f"the budget store could not be charged ({type(exc).__name__}); nothing was run"
            ) from None
        return left

    def measures(self, scopes: Sequence[tuple[str, Budget]]) -> bool:
        """Whether any of the scopes limits what is measured after a call (egress bytes, wall time)."""
        return any(b.measures for _, b in scopes)

    def settle(self, scopes: Sequence[tuple[str, Budget]], usage: Usage) -> None:
        """Add what a call used while it ran (egress bytes, wall time) to the scopes that limit it."""
        with self.store.transaction() as tx:
            self.settle_in(tx, scopes, usage)

    def settle_in(self, tx: Transaction, scopes: Sequence[tuple[str, Budget]], usage: Usage) -> None:
        """``settle`` inside a caller's transaction (the call's ledger row): one UPDATE a scope, to the window
        it is in now (a call that ran across the end of a window counts in the next)."""
        if not usage:
            return
        for scope, budget in scopes:
            if budget.measures:
                budgets.add_measured(tx, scope, usage.egress_bytes, usage.wall_ms)

    def show(self) -> list[JSONObject]:
        return [asdict(row) for row in budgets.charged(self.store)]


# where each value is in a charged row (budgets.COUNTED): the window's start, the counts (COUNTS, in order), the bucket
_WINDOW, _CALLS, _TOKENS, _REFILLED = 0, 1, 6, 7
_AT = {count: at for at, count in enumerate(COUNTS, _CALLS)}
_MEASURED_AT = frozenset(_AT[count] for count in MEASURED)


def _refilled(found: list[Any] | None, now: float, window_s: int, budget: Budget) -> list[Any]:
    """The scope's row in the current window (a new window starts at zero), its bucket refilled to now."""
    row: list[Any] = found if found is not None else [now, *(0,) * len(COUNTS), None, now]
    if now >= row[_WINDOW] + window_s:
        row[_WINDOW : _CALLS + len(COUNTS)] = [now, *(0,) * len(COUNTS)]
    rate = budget.rate
    if rate is not None:
        tokens = row[_TOKENS]
        tokens = rate.burst if tokens is None else tokens + max(0.0, now - row[_REFILLED]) * rate.per_s
        row[_TOKENS] = min(float(rate.burst), tokens)
        row[_REFILLED] = now
    return row


def _check(scope: str, budget: Budget, row: list[Any], charged: tuple[int, ...], now: float, window_s: int) -> None:
    for count, limit in budget.limits:
        at = _AT[count]
        amount = charged[at - _CALLS]
        # counts charged up front must fit; measured ones (egress, wall time) stop the next call once spent
        if (amount and row[at] + amount > limit) or (at in _MEASURED_AT and row[at] >= limit):
            resets = _iso(row[_WINDOW] + window_s)
            raise BudgetExhausted(
                f"budget exhausted: {scope} has used {row[at]:g} of {limit:g} {count.replace('_', ' ')} "
                f"in this window; it resets at {resets}",
                scope=scope,
                budget=count,
                resets_at=resets,
            )
    if budget.rate is not None and row[_TOKENS] < 1:
        possible = _iso(now + (1 - row[_TOKENS]) / budget.rate.per_s)
        raise BudgetExhausted(
            f"rate exceeded: {scope} may make {budget.rate.per_s:g} calls a second (burst {budget.rate.burst}); "
            f"the next call is possible at {possible}",
            scope=scope,
            budget="rate",
            resets_at=possible,
        )


def _left(budget: Budget, row: list[Any], window_s: int) -> JSONObject:
    left: JSONObject = {"resets_at": _iso(row[_WINDOW] + window_s)}
    for count, limit in budget.limits:
        left[count] = max(0, round(limit - row[_AT[count]]))
    if budget.rate is not None:
        left["rate_tokens"] = round(row[_TOKENS], 2)
    return left
