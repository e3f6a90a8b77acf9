"""Budgets charged in the store (the limits are gateway/budgets.py's): one row per scope, its counts in the current
window and its token bucket. A call is charged in one transaction for every scope it falls under, or not at all.

    budgets = Budgets(store, config.budgets)
    scopes = budgets.scopes("worker", "w1", "T1", manifest_budget)
    left = budgets.charge(scopes, Usage(calls=1, tier2=1))      # or BudgetExhausted / BudgetUnavailable
    budgets.settle(scopes, Usage(egress_bytes=1200, wall_ms=35))
"""

from __future__ import annotations

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
        left: JSONObject = {}
        try:
            with self.store.transaction() as tx:
                for scope, budget in scopes:
                    row = _row(tx, scope, now, self.config.window_s, budget)
                    _check(scope, budget, row, usage, now, self.config.window_s)
                    for count in COUNTS:
                        row[count] += getattr(usage, count)
                    if budget.rate is not None:
                        row["tokens"] -= 1
                    _write(tx, scope, row)
                    left[scope] = _left(budget, row, self.config.window_s)
        except (BudgetExhausted, BudgetUnavailable):
            raise
        except Exception as exc:
            raise BudgetUnavailable(
                f"the budget store could not be charged ({type(exc).__name__}); nothing was run"
            ) from None
        return left

    def measures(self, scopes: Sequence[tuple[str, Budget]]) -> bool:
        """Whether any of the scopes limits what is measured after a call (egress bytes, wall time)."""
        return any(b.egress_bytes is not None or b.wall_s is not None for _, b in scopes)

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
            if budget.egress_bytes is not None or budget.wall_s is not None:
                budgets.add_measured(tx, scope, usage.egress_bytes, usage.wall_ms)

    def show(self) -> list[JSONObject]:
        return [asdict(row) for row in budgets.charged(self.store)]


def _row(tx: Transaction, scope: str, now: float, window_s: int, budget: Budget) -> dict[str, Any]:
    """The scope's counts in the current window (a new window starts at zero), its bucket refilled to now."""
    found = budgets.charged_in(tx, scope)
    row: dict[str, Any] = (
        {k: getattr(found, k) for k in ("window_start", *COUNTS, "tokens", "refilled")}
        if found is not None
        else {"window_start": now, **dict.fromkeys(COUNTS, 0), "tokens": None, "refilled": now}
    )
    if now >= row["window_start"] + window_s:
        row.update({"window_start": now, **dict.fromkeys(COUNTS, 0)})
    rate = budget.rate
    if rate is not None:
        tokens = rate.burst if row["tokens"] is None else row["tokens"]
        row["tokens"] = min(float(rate.burst), tokens + max(0.0, now - row["refilled"]) * rate.per_s)
        row["refilled"] = now
    return row


def _check(scope: str, budget: Budget, row: dict[str, Any], usage: Usage, now: float, window_s: int) -> None:
    resets = row["window_start"] + window_s
    for count in COUNTS:
        limit = budget.limit(count)
        if limit is None:
            continue
        charged = getattr(usage, count)
        # counts charged up front must fit; measured ones (egress, wall time) stop the next call once spent
        if (charged and row[count] + charged > limit) or (count in MEASURED and row[count] >= limit):
            raise BudgetExhausted(
                f"budget exhausted: {scope} has used {row[count]:g} of {limit:g} {count.replace('_', ' ')} "
                f"in this window; it resets at {_iso(resets)}",
                scope=scope,
                budget=count,
                resets_at=_iso(resets),
            )
    if budget.rate is not None and row["tokens"] < 1:
        at = now + (1 - row["tokens"]) / budget.rate.per_s
        raise BudgetExhausted(
            f"rate exceeded: {scope} may make {budget.rate.per_s:g} calls a second (burst {budget.rate.burst}); "
            f"the next call is possible at {_iso(at)}",
            scope=scope,
            budget="rate",
            resets_at=_iso(at),
        )


def _write(tx: Transaction, scope: str, row: dict[str, Any]) -> None:
    budgets.write(tx, budgets.Charged(scope, **row))


def _left(budget: Budget, row: dict[str, Any], window_s: int) -> JSONObject:
    left: JSONObject = {"resets_at": _iso(row["window_start"] + window_s)}
    for count in COUNTS:
        limit = budget.limit(count)
        if limit is not None:
            left[count] = max(0, round(limit - row[count]))
    if budget.rate is not None:
        left["rate_tokens"] = round(row["tokens"], 2)
    return left
