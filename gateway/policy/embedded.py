"""The embedded Rego engine (gordon-to-regorus), evaluated in this process.

What a single command uses (``gateway check``, the hook, ``policy eval``); a running gateway decides in
worker processes instead (gateway/policy/isolated.py), which bound each decision by a deadline. The
policy directory is re-read when its files change; a bundle that fails to compile keeps the last good
one in force and reports why in ``status()``. So are the roles when ``data`` is the gateway's live RoleSet.

    engine = EmbeddedEngine(Path("policies"), gateway.roles)       # or a fixed {"roles": {...}}
    decision = await engine.decide(input_doc)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import structlog

from gateway.errors import ConfigError
from gateway.policy.bundle import QUERY, BundleError, LiveBundle, engine_message
from gateway.policy.checked import CheckedSources
from gateway.policy.engine import engine_error, to_decision
from gateway.policy.reload import PolicyData
from gateway.types import Decision, JSONObject

log = structlog.get_logger("gateway.policy")


def load_bundle(directory: Path, data: JSONObject | PolicyData, checked: CheckedSources | None = None) -> LiveBundle:
    """The bundle in force for an engine of this process; reloads are logged."""

    def reloaded(error: str | None) -> None:
        if error is None:
            log.info("policy reloaded", directory=str(directory))
        else:
            log.error("policy reload failed; keeping the last good bundle", error=error)

    try:
        return LiveBundle(directory, data, on_change=reloaded, checked=checked)
    except BundleError as exc:
        raise ConfigError(f"policy bundle {directory} does not load: {exc}") from None


class EmbeddedEngine:
    name = "embedded"

    def __init__(self, directory: Path, data: JSONObject | PolicyData, checked: CheckedSources | None = None) -> None:
        self.live = load_bundle(directory, data, checked)

    @property
    def last_error(self) -> str | None:
        return self.live.last_error

    def revision(self) -> str:
        return self.live.revision()

    async def decide(self, input_doc: JSONObject) -> Decision:
        return self.decide_sync(input_doc)

    def decide_sync(self, input_doc: JSONObject) -> Decision:
        try:
            return to_decision(self.live.evaluate(QUERY, input_doc))
        except Exception as exc:  # any engine failure is a deny, never an allow
            return engine_error(engine_message(exc))

    async def query(self, rule: str, input_doc: JSONObject) -> Any:
        return self.live.evaluate(f"data.{rule}", input_doc)

    def status(self) -> JSONObject:
        bundle = self.live.current()
        return {
            "engine": self.name,
            "directory": str(bundle.directory),
            "files": [name for name, _ in bundle.sources],
            "last_error": self.live.last_error,
        }

    def start(self) -> None:
        return None

    async def aclose(self) -> None:
        return None
