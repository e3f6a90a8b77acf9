"""The policy engine interface: an input document in, a Decision out. Fail closed.

Three implementations: ``IsolatedEngine`` (regorus in worker processes, with a deadline: what a running
gateway uses by default), ``EmbeddedEngine`` (regorus in this process: single commands such as ``gateway
check``) and ``OpaEngine`` (a real OPA server over its REST API). All evaluate ``data.gateway.decision``;
anything else that comes back, or any engine error, becomes a deny that says why.

    engine = EmbeddedEngine(policy_dir, data={"roles": roles.as_data()})
    async with engine_running(engine):      # a running gateway's engine: started, and closed however it ends
        decision = await engine.decide(input_doc)
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Protocol

import anyio
from pydantic import ValidationError

from gateway.policy.bundle import QUERY
from gateway.types import Decision, JSONObject


class PolicyEngine(Protocol):
    name: str

    async def decide(self, input_doc: JSONObject) -> Decision: ...

    async def query(self, rule: str, input_doc: JSONObject) -> Any:
        """The value of ``data.<rule>`` (dotted, e.g. ``gateway.scope.violations``); raises on engine errors."""
        ...

    def status(self) -> JSONObject: ...

    def revision(self) -> str:
        """The policy revision in force; a decision made after this answered R was made by R (or newer)."""
        ...

    def start(self) -> None:
        """Get ready to decide (a running gateway starts its decision workers)."""
        ...

    async def aclose(self) -> None: ...


@asynccontextmanager
async def engine_running(engine: PolicyEngine) -> AsyncIterator[PolicyEngine]:
    """The engine ready to decide (its decision workers started, off the event loop) while the body runs, and
    closed however it ends (the workers stopped, also when starting them failed part-way): the one owner of
    an engine's worker processes.

        async with engine_running(engine):
            decision = await engine.decide(input_doc)
    """
    try:
        await anyio.to_thread.run_sync(engine.start)
        yield engine
    finally:
        with anyio.CancelScope(shield=True):
            await engine.aclose()


async def fired_rules(engine: PolicyEngine, input_doc: JSONObject) -> list[JSONObject] | None:
    """Every rule the input fires, not only those the decision names: the denials
    (``{"effect": "deny", "rule", "reason"}``), then the findings, highest tier first (``"effect": "tier 3"``).
    From ``data.gateway.fired`` (decision.rego); None for a bundle without it (copied before it existed)."""
    fired = await engine.query("gateway.fired", input_doc)
    if not isinstance(fired, dict):
        return None
    rules = [{"effect": "deny", "rule": d.get("rule"), "reason": d.get("reason")} for d in fired["denials"]]
    findings = sorted(fired["findings"], key=lambda f: (-int(f.get("tier") or 0), str(f.get("rule"))))
    rules += [{"effect": f"tier {f.get('tier')}", "rule": f.get("rule"), "reason": f.get("reason")} for f in findings]
    return rules


def engine_error(reason: str) -> Decision:
    return Decision(action="deny", tier=3, reasons=[f"policy engine error: {reason}"], rules=["engine.error"])


def to_decision(raw: Any) -> Decision:
    """The engine's answer as a Decision, or a deny when it is missing or malformed."""
    if raw is None:
        return engine_error(f"{QUERY} is undefined")
    try:
        return Decision.model_validate(raw)
    except ValidationError as exc:
        return engine_error(f"{QUERY} is malformed: {exc.errors()[0]['msg']}")
