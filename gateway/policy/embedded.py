"""The embedded Rego engine (gordon-to-regorus), the default.

regorus engines are bound to the thread that made them, so each thread gets its own, built from the
same sources. The policy directory is re-read when its files change (checked at most once a second);
a bundle that fails to compile keeps the last good one in force and reports why in ``status()``.

    engine = EmbeddedEngine(Path("policies"), data={"roles": {...}})
    decision = await engine.decide(input_doc)
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
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
        undefined = undefined_calls(json.loads(engine.get_ast_as_json()))
        if undefined:  # OPA refuses such a module when it is loaded; regorus only when a call reaches it
            raise ConfigError("; ".join(undefined[:3]))
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


def _dotted(node: Any) -> list[str] | None:
    """A reference made only of names (``a.b.c``) in regorus's AST, as a list; None for anything else."""
    if not isinstance(node, dict):
        return None
    if "Var" in node:
        return [node["Var"]["value"]]
    if "RefDot" in node:
        head = _dotted(node["RefDot"]["refr"])
        return None if head is None else [*head, node["RefDot"]["field"][1]]
    return None


def _calls(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        call = node.get("Call")
        if isinstance(call, dict) and "fcn" in call:
            yield call
        for value in node.values():
            yield from _calls(value)
    elif isinstance(node, list):
        for value in node:
            yield from _calls(value)


def undefined_calls(modules: list[dict[str, Any]]) -> list[str]:
    """``file:line:col: undefined function data.x.f`` for every call through an import or ``data`` to a
    function no module defines (OPA's type check does the same when a module is loaded)."""
    defined: set[str] = set()
    for module in modules:
        package = ".".join(_dotted(module["ast"]["package"]["refr"]) or [])
        for rule in module["ast"]["rules"]:
            head = rule.get("Spec", {}).get("head", {}) if isinstance(rule, dict) else {}
            if "Func" in head:
                defined.add(".".join(["data", package, *(_dotted(head["Func"]["refr"]) or [])]))
    problems = []
    for module in modules:
        source = module["source"]["contents"]
        aliases: dict[str, str] = {}
        for imported in module["ast"]["imports"]:
            path = _dotted(imported["refr"]) or []
            if path[:1] == ["data"]:
                alias = imported.get("as")
                aliases[source[alias["start"] : alias["end"]] if alias else path[-1]] = ".".join(path)
        for call in _calls(module["ast"]["rules"]):
            name = _dotted(call["fcn"])
            if not name or (name[0] != "data" and name[0] not in aliases):
                continue  # a builtin or a function of the same package: regorus checks those
            full = ".".join([aliases.get(name[0], "data"), *name[1:]])
            if full not in defined:
                span = call["span"]
                problems.append(f"{module['source']['file']}:{span['line']}:{span['col']}: undefined function {full}")
    return problems


def engine_message(exc: BaseException) -> str:
    """regorus errors carry a location, a caret snippet and a Rust backtrace; keep the first two."""
    text = str(exc).split("Stack backtrace:")[0].strip() or type(exc).__name__
    return " ".join(line.strip() for line in text.splitlines() if line.strip())[:600]
