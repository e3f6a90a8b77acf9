"""Budgets: how much a role, an agent and a task may do, charged in the store once per authorised call.

gateway.yaml sets them (``budgets:``: per role, each agent's, each task's; a task manifest's ``budget``
overrides the task's field by field):

    budgets:
      window_s: 86400                      # counts start again every window (from the first charge)
      roles: {worker: {calls: 5000}}       # every agent of the role together
      agent: {calls: 1000, tier2: 200, tier3: 20, egress_bytes: 50000000, wall_s: 3600,
              rate: {per_s: 2, burst: 20}}  # each agent: a token bucket besides the counts
      task: {calls: 500}                   # each task

A call is charged after the policy authorised it (allowed, or asked of a person): one call, a tier-2 change
when its tier is 2, a tier-3 request when it asks a person, one token of each rate. Egress bytes and wall time
are measured after the call ran and added then; a scope already at its limit refuses the next call. Charges
are one store transaction for every scope the call falls under, so replicas and workers share them; an
exhausted scope refuses the call (nothing is charged, nothing runs) saying what ran out and when it resets;
a store that cannot be reached refuses it too (fail closed).

    budgets = Budgets(store, config.budgets)
    charged = budgets.charge(scopes, Usage(calls=1, tier2=1))   # or BudgetExhausted
    budgets.settle(charged, Usage(egress_bytes=1200, wall_ms=35))
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from gateway.errors import Denied
from gateway.ledger.store import Store
from gateway.types import JSONObject

__all__ = ["BUDGET_META", "Budget", "BudgetExhausted", "BudgetUnavailable", "Budgets", "BudgetsConfig", "Rate", "Usage"]

BUDGET_META = "io.github.mcp-policy-gateway/budget"
COUNTS = ("calls", "tier2", "tier3", "egress_bytes", "wall_ms")
MEASURED = ("egress_bytes", "wall_ms")  # known after a call ran: spent, they stop the next call


class Rate(BaseModel):
    """A token bucket: ``burst`` calls at once, refilled at ``per_s`` a second."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    per_s: Annotated[float, Field(gt=0, le=1_000_000)]
    burst: Annotated[int, Field(ge=1, le=1_000_000)]


class Budget(BaseModel):
    """The limits of one scope within a window; a limit left out is no limit."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    calls: Annotated[int, Field(gt=0)] | None = None
    tier2: Annotated[int, Field(gt=0)] | None = None  # tier-2 changes (each takes a checkpoint)
    tier3: Annotated[int, Field(gt=0)] | None = None  # tier-3 requests to a person
    egress_bytes: Annotated[int, Field(gt=0)] | None = None  # through the egress proxy, both ways
    wall_s: Annotated[float, Field(gt=0)] | None = None  # time spent running calls
    rate: Rate | None = None

    @model_validator(mode="after")
    def _limits_something(self) -> Budget:
        if all(getattr(self, name) is None for name in type(self).model_fields):
            raise ValueError(
                "a budget with no limit limits nothing: give calls, tier2, tier3, egress_bytes, wall_s or rate"
            )
        return self

    def tightened(self, manifest: Budget | None) -> Budget:
        """This budget with a manifest's limits where they are tighter (a planner never loosens the operator's)."""
        if manifest is None:
            return self
        update: dict[str, Any] = {}
        for name in ("calls", "tier2", "tier3", "egress_bytes", "wall_s"):
            mine, theirs = getattr(self, name), getattr(manifest, name)
            if theirs is not None:
                update[name] = theirs if mine is None else min(mine, theirs)
        if manifest.rate is not None:
            rate = self.rate
            update["rate"] = (
                manifest.rate
                if rate is None
                else Rate(per_s=min(rate.per_s, manifest.rate.per_s), burst=min(rate.burst, manifest.rate.burst))
            )
        return self.model_copy(update=update)

    def limit(self, count: str) -> float | None:
        if count == "wall_ms":
            return self.wall_s * 1000 if self.wall_s is not None else None
        value = getattr(self, count)
        return float(value) if value is not None else None


class BudgetsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    window_s: Annotated[int, Field(gt=0, le=366 * 86400)] = 86400
    roles: dict[str, Budget] = Field(default_factory=dict)
    agent: Budget | None = None
    task: Budget | None = None

    @property
    def any(self) -> bool:
        return bool(self.roles) or self.agent is not None or self.task is not None


class BudgetExhausted(Denied):
    code = "budget_exhausted"


class BudgetUnavailable(Denied):
    """The store could not be asked: no call runs uncharged."""

    code = "budget_unavailable"


@dataclass
class Usage:
    calls: int = 0
    tier2: int = 0
    tier3: int = 0
    egress_bytes: int = 0
    wall_ms: int = 0

    def __bool__(self) -> bool:
        return any(getattr(self, f.name) for f in fields(self))


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

    def settle(self, scopes: Sequence[tuple[str, Budget]], usage: Usage) -> None:
        """Add what a call used while it ran (egress bytes, wall time) to the scopes that limit it."""
        limited = [(s, b) for s, b in scopes if b.egress_bytes is not None or b.wall_s is not None]
        if not limited or not usage:
            return
        now = self.clock()
        with self.store.transaction() as tx:
            for scope, budget in limited:
                row = _row(tx, scope, now, self.config.window_s, budget)
                row["egress_bytes"] += usage.egress_bytes
                row["wall_ms"] += usage.wall_ms
                _write(tx, scope, row)

    def show(self) -> list[JSONObject]:
        return [dict(r) for r in self.store.query("SELECT * FROM budgets ORDER BY scope")]


def _row(tx: Any, scope: str, now: float, window_s: int, budget: Budget) -> dict[str, Any]:
    """The scope's counts in the current window (a new window starts at zero), its bucket refilled to now."""
    found = tx.execute(
        "SELECT window_start, calls, tier2, tier3, egress_bytes, wall_ms, tokens, refilled FROM budgets "
        "WHERE scope = ?",
        (scope,),
    ).fetchone()
    row: dict[str, Any] = (
        {k: found[k] for k in ("window_start", *COUNTS, "tokens", "refilled")}
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


def _write(tx: Any, scope: str, row: dict[str, Any]) -> None:
    tx.execute(
        "INSERT INTO budgets (scope, window_start, calls, tier2, tier3, egress_bytes, wall_ms, tokens, refilled) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (scope) DO UPDATE SET window_start = excluded.window_start, "
        "calls = excluded.calls, tier2 = excluded.tier2, tier3 = excluded.tier3, "
        "egress_bytes = excluded.egress_bytes, wall_ms = excluded.wall_ms, tokens = excluded.tokens, "
        "refilled = excluded.refilled",
        (scope, row["window_start"], *(row[c] for c in COUNTS), row["tokens"], row["refilled"]),
    )


def _left(budget: Budget, row: dict[str, Any], window_s: int) -> JSONObject:
    left: JSONObject = {"resets_at": _iso(row["window_start"] + window_s)}
    for count in COUNTS:
        limit = budget.limit(count)
        if limit is not None:
            left[count] = max(0, round(limit - row[count]))
    if budget.rate is not None:
        left["rate_tokens"] = round(row["tokens"], 2)
    return left
