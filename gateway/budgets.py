"""Budgets: how much a role, an agent and a task may do (the limits; gateway/ledger/budgets.py charges them).

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

    Budget(calls=100, rate=Rate(per_s=1, burst=5)).tightened(manifest_budget)
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from gateway.errors import Denied

__all__ = [
    "BUDGET_META",
    "COUNTS",
    "MEASURED",
    "Budget",
    "BudgetExhausted",
    "BudgetUnavailable",
    "BudgetsConfig",
    "Rate",
    "Usage",
]

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
        # a new model, not model_copy: a copy would keep the cached limits of this one
        return type(self)(**{**{name: getattr(self, name) for name in type(self).model_fields}, **update})

    @cached_property
    def limits(self) -> tuple[tuple[str, float], ...]:
        """(count, limit) for each count this budget limits: worked out once, read on every call."""
        return tuple((count, limit) for count in COUNTS if (limit := self.limit(count)) is not None)

    @cached_property
    def measures(self) -> bool:
        """Whether it limits what is known only after a call ran (egress bytes, wall time)."""
        return self.egress_bytes is not None or self.wall_s is not None

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

    def __bool__(self) -> bool:  # on every call: plain attributes, not dataclasses.fields
        return bool(self.calls or self.tier2 or self.tier3 or self.egress_bytes or self.wall_ms)
