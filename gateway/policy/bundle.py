"""A Rego bundle in regorus: the sources, compiled and checked, re-read when the files change.

This module imports nothing heavier than regorus, so the decision workers (gateway/policy/worker.py)
start fast; the embedded engine and the workers both evaluate through ``LiveBundle``.

regorus engines are bound to the thread that made them, so each thread gets its own, built from the
same sources. The directory is re-read when its files change (checked at most once a second); a bundle
that fails to compile keeps the last good one in force and ``last_error`` says why.

    live = LiveBundle(Path("policies"), data={"roles": {...}})       # raises BundleError if it never loads
    value = live.evaluate("data.gateway.decision", input_doc)         # a dict, or None when undefined
    value = live.evaluate_json("data.gateway.decision", input_json)   # the same, the input as JSON text
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import regorus

RELOAD_CHECK_S = 1.0
PACKAGE = "gateway"
RULE = "decision"
QUERY = f"data.{PACKAGE}.{RULE}"

Fingerprint = tuple[tuple[str, int, int], ...]


class BundleError(Exception):
    """The bundle does not load: no modules, a syntax error, an unsafe variable, an undefined function."""


def policy_files(directory: Path) -> list[Path]:
    """The policy modules of a bundle; unit tests (``*_test.rego``) are not part of the decision."""
    return sorted(p for p in directory.rglob("*.rego") if not p.name.endswith("_test.rego"))


def fingerprint(directory: Path) -> Fingerprint:
    return tuple((str(p), p.stat().st_mtime_ns, p.stat().st_size) for p in sorted(directory.rglob("*.rego")))


def revision_of(files: Fingerprint) -> str:
    return hashlib.sha256(repr(files).encode()).hexdigest()[:16]


class Bundle:
    """Policy sources and data, compiled once to prove they load."""

    def __init__(self, directory: Path, data: dict[str, Any]) -> None:
        self.directory = directory
        self.data = data
        # the fingerprint before the text: a file changed while it is read is read again at the next check
        self.fingerprint = fingerprint(directory)
        self.files = policy_files(directory)
        if not self.files:
            raise BundleError(f"no policy files (*.rego) in {directory}")
        self.sources = [(str(p.relative_to(directory)), p.read_text(encoding="utf-8")) for p in self.files]
        # names this bundle in force: decisions are cached per revision (gateway/policy/cache.py)
        self.revision = revision_of(self.fingerprint)
        try:
            engine = self.engine()
            undefined = undefined_calls(json.loads(engine.get_ast_as_json()))
            if undefined:  # OPA refuses such a module when it is loaded; regorus only when a call reaches it
                raise BundleError("; ".join(undefined[:3]))
            engine.set_input({})
            engine.eval_rule(QUERY)  # unsafe variables and unknown functions only surface at evaluation
        except BundleError:
            raise
        except Exception as exc:
            raise BundleError(engine_message(exc)) from None

    def engine(self) -> regorus.Engine:
        engine = regorus.Engine()
        for name, text in self.sources:
            engine.add_policy(name, text)
        engine.add_data(self.data)
        return engine


class LiveBundle:
    """The bundle in force, re-read when its files change; one regorus engine per thread.

    ``on_change(error)`` hears of each reload: None when a new bundle is in force, else why the files do
    not load (the last good bundle stays in force)."""

    def __init__(
        self, directory: Path, data: dict[str, Any], on_change: Callable[[str | None], None] | None = None
    ) -> None:
        self.bundle = Bundle(directory, data)
        self.last_error: str | None = None
        self.on_change = on_change
        self._failed: Fingerprint | None = None
        self._checked = time.monotonic()
        self._local = threading.local()

    def evaluate(self, rule: str, input_doc: Any) -> Any:
        engine = self._engine()
        engine.set_input(input_doc)
        return engine.eval_rule(rule)

    def evaluate_json(self, rule: str, input_json: str) -> Any:
        engine = self._engine()
        engine.set_input_json(input_json)
        return engine.eval_rule(rule)

    def _engine(self) -> regorus.Engine:
        self.refresh()
        local = self._local
        if getattr(local, "bundle", None) is not self.bundle:
            local.engine, local.bundle = self.bundle.engine(), self.bundle
        return local.engine

    def revision(self) -> str:
        """The revision in force, after looking for changed files (at most once a second)."""
        self.refresh()
        return self.bundle.revision

    def refresh(self, force: bool = False) -> None:
        """Re-read the bundle if its files changed (looked at no more than once a second unless ``force``)."""
        now = time.monotonic()
        if now - self._checked < RELOAD_CHECK_S and not force:
            return
        self._checked = now
        try:
            current = fingerprint(self.bundle.directory)
        except OSError:
            return
        if current == self.bundle.fingerprint or current == self._failed:
            return
        try:
            self.bundle = Bundle(self.bundle.directory, self.bundle.data)
            self.last_error = None
        except (BundleError, OSError) as exc:
            self._failed = current
            self.last_error = str(exc)
        if self.on_change is not None:
            self.on_change(self.last_error)


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
