"""The embedded Rego engine (gordon-to-regorus), the default.

regorus engines are bound to the thread that made them, so each thread gets its own, built from the
same sources. The policy directory is re-read when its files change (checked at most once a second);
a bundle that fails to compile keeps the last good one in force and reports why in ``status()``.

    engine = EmbeddedEngine(Path("policies"), data={"roles": {...}})
    decision = await engine.decide(input_doc)
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import regorus
import structlog

from gateway.errors import ConfigError
from gateway.policy.engine import QUERY, engine_error, policy_files, to_decision
from gateway.types import Decision, JSONObject

log = structlog.get_logger("gateway.policy")
RELOAD_CHECK_S = 1.0


class Bundle:
    """Policy sources and data, compiled once to prove they load."""

    def __init__(self, directory: Path, data: JSONObject) -> None:
        self.directory = directory
        self.data = data
        self.files = policy_files(directory)
        if not self.files:
            raise ConfigError(f"no policy files (*.rego) in {directory}")
        self.sources = [(str(p.relative_to(directory)), p.read_text(encoding="utf-8")) for p in self.files]
        self.fingerprint = fingerprint(directory)
        engine = self.engine()
        engine.set_input({})
        engine.eval_rule(QUERY)  # unsafe variables and unknown functions only surface at evaluation

    def engine(self) -> regorus.Engine:
        engine = regorus.Engine()
        for name, text in self.sources:
            engine.add_policy(name, text)
        engine.add_data(self.data)
        return engine


def fingerprint(directory: Path) -> tuple[tuple[str, int, int], ...]:
    return tuple((str(p), p.stat().st_mtime_ns, p.stat().st_size) for p in sorted(directory.rglob("*.rego")))


class EmbeddedEngine:
    name = "embedded"

    def __init__(self, directory: Path, data: JSONObject) -> None:
        try:
            self.bundle = Bundle(directory, data)
        except Exception as exc:
            raise ConfigError(f"policy bundle {directory} does not load: {engine_message(exc)}") from None
        self.last_error: str | None = None
        self._failed_fingerprint: tuple[tuple[str, int, int], ...] | None = None
        self._checked = time.monotonic()
        self._local = threading.local()

    async def decide(self, input_doc: JSONObject) -> Decision:
        return self.decide_sync(input_doc)

    def decide_sync(self, input_doc: JSONObject) -> Decision:
        self._maybe_reload()
        try:
            engine = self._engine()
            engine.set_input(input_doc)
            return to_decision(engine.eval_rule(QUERY))
        except Exception as exc:  # any engine failure is a deny, never an allow
            return engine_error(engine_message(exc))

    async def query(self, rule: str, input_doc: JSONObject) -> Any:
        self._maybe_reload()
        engine = self._engine()
        engine.set_input(input_doc)
        return engine.eval_rule(f"data.{rule}")

    def status(self) -> JSONObject:
        return {
            "engine": self.name,
            "directory": str(self.bundle.directory),
            "files": [name for name, _ in self.bundle.sources],
            "last_error": self.last_error,
        }

    def _engine(self) -> regorus.Engine:
        local = self._local
        if getattr(local, "bundle", None) is not self.bundle:
            local.engine, local.bundle = self.bundle.engine(), self.bundle
        return local.engine

    def _maybe_reload(self) -> None:
        now = time.monotonic()
        if now - self._checked < RELOAD_CHECK_S:
            return
        self._checked = now
        try:
            current = fingerprint(self.bundle.directory)
        except OSError:
            return
        if current == self.bundle.fingerprint or current == self._failed_fingerprint:
            return
        try:
            self.bundle = Bundle(self.bundle.directory, self.bundle.data)
            self.last_error = None
            log.info("policy reloaded", directory=str(self.bundle.directory))
        except Exception as exc:
            self._failed_fingerprint = current
            self.last_error = engine_message(exc)
            log.error("policy reload failed; keeping the last good bundle", error=self.last_error)


def engine_message(exc: BaseException) -> str:
    """regorus errors carry a location, a caret snippet and a Rust backtrace; keep the first two."""
    text = str(exc).split("Stack backtrace:")[0].strip() or type(exc).__name__
    return " ".join(line.strip() for line in text.splitlines() if line.strip())[:600]
