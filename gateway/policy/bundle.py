"""A Rego bundle in regorus: the sources and data, compiled and checked, re-read when either changes.

This module imports nothing heavier than regorus, so the decision workers (gateway/policy/worker.py)
start fast; the embedded engine and the workers both evaluate through ``LiveBundle``.

regorus engines are bound to the thread that made them, so each thread gets its own, built from the
same sources. The bundle is loaded again when its files change or its data does (the roles: a role
edit reaches the policy's ``data.roles`` like a policy edit), looked at no more than once a second
(gateway/policy/reload.py); a bundle that fails to compile keeps the last good one in force and
``last_error`` says why.

    live = LiveBundle(Path("policies"), roles)            # roles: a RoleSet, or a plain {"roles": {...}}
    value = live.evaluate("data.gateway.decision", input_doc)         # a dict, or None when undefined
    value = live.evaluate_json("data.gateway.decision", input_json)   # the same, the input as JSON text
    live.revision()                                       # names the policy files and the data in force
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Hashable, Iterator
from pathlib import Path
from typing import Any, cast

import regorus

from gateway.digests import digest
from gateway.policy.checked import CheckedSources
from gateway.policy.lint import layout_problems
from gateway.policy.reload import (
    RELOAD_CHECK_S,
    Fingerprint,
    PolicyData,
    Reloading,
    fingerprint,
    policy_data,
)

PACKAGE = "gateway"
RULE = "decision"
QUERY = f"data.{PACKAGE}.{RULE}"


class BundleError(Exception):
    """The bundle does not load: no modules, a syntax error, an unsafe variable, an undefined function."""


def policy_files(directory: Path) -> list[Path]:
    """The policy modules of a bundle; unit tests (``*_test.rego``) are not part of the decision."""
    return sorted(p for p in directory.rglob("*.rego") if not p.name.endswith("_test.rego"))


def policy_fingerprint(directory: Path) -> Fingerprint:
    return fingerprint(directory.rglob("*.rego"))


def bundle_look(directory: Path, data: PolicyData) -> Callable[[], Hashable]:
    """What names a bundle: its files and the revision of its data. The data is looked at whenever the
    files are, so a role edit is seen within the same second as a policy edit."""
    return lambda: (policy_fingerprint(directory), data.revision(force=True))


# Digests of the sources and data of every bundle that passed its checks in this process. The checks (the
# layout, the undefined-function walk, a trial evaluation) depend on that content alone, and cost ~0.15 s: a
# process that builds many gateways on the same policies (the test suite does) runs them once. Only passes are
# kept, named by content (never by mtimes), so an edited file is a new digest and is checked again. A decision
# worker is told the digest its gateway checked (``passed``): it reads the files itself, and skips the checks
# only when what it read is that same content.
_LOADED: set[str] = set()


def passed(content: str) -> None:
    """Take a bundle's content digest (``Bundle.content``) as having passed its checks in this process."""
    _LOADED.add(content)


class Bundle:
    """Policy sources and data, compiled once to prove they load.

    ``seen`` is what ``bundle_look`` saw before the files and data were read: it names the bundle
    (``revision``), and a file or role changed while they are read is read again at the next look.
    ``checked`` remembers sources that passed the undefined-function check (a command that decides once
    would spend a tenth of its start-up on it)."""

    def __init__(
        self, directory: Path, data: dict[str, Any], seen: Hashable, checked: CheckedSources | None = None
    ) -> None:
        _, data_revision = cast(tuple[Fingerprint, str], seen)
        self.directory = directory
        self.data = data
        self.files = policy_files(directory)
        if not self.files:
            raise BundleError(f"no policy files (*.rego) in {directory}")
        self.sources = [(str(p.relative_to(directory)), p.read_text(encoding="utf-8")) for p in self.files]
        # names this bundle by its content, as OPA's bundle revision does: every decision records it, an
        # attestation names it, and decisions are cached per revision (gateway/policy/cache.py)
        self.revision = digest([self.sources, data_revision])
        self.data_revision = data_revision  # what a decision worker must hold to decide as this bundle does
        # the data's content, not its revision (which may name mtimes)
        self.content = content = digest([self.sources, data])
        if content in _LOADED:
            if checked is not None and not checked.passed(self.sources):
                checked.remember(self.sources)
            return
        self._check(checked)
        _LOADED.add(content)

    def _check(self, checked: CheckedSources | None) -> None:
        unreached = layout_problems(self.sources)
        if unreached:  # a concern decision.rego does not combine would silently decide nothing
            raise BundleError("; ".join(str(problem) for problem in unreached[:3]))
        try:
            engine = self.engine()
            if checked is None or not checked.passed(self.sources):
                undefined = undefined_calls(json.loads(engine.get_ast_as_json()))
                if undefined:  # OPA refuses such a module when it is loaded; regorus only when a call reaches it
                    raise BundleError("; ".join(undefined[:3]))
                if checked is not None:
                    checked.remember(self.sources)
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
    """The bundle in force, re-read when its files or its data change; one regorus engine per thread.

    ``on_change(error)`` hears of each reload: None when a new bundle is in force, else why the files do
    not load (the last good bundle stays in force)."""

    def __init__(
        self,
        directory: Path,
        data: dict[str, Any] | PolicyData,
        on_change: Callable[[str | None], None] | None = None,
        checked: CheckedSources | None = None,
    ) -> None:
        self.directory = directory
        self.data = policy_data(data)
        self.live = Reloading(
            bundle_look(directory, self.data),
            lambda seen: Bundle(directory, self.data.document(), seen, checked),
            (BundleError, OSError),
            on_change,
            interval=RELOAD_CHECK_S,  # read here, so a test may shorten it
        )
        self._local = threading.local()

    @property
    def bundle(self) -> Bundle:
        """The bundle in force, as last looked at."""
        return self.live.value

    @property
    def last_error(self) -> str | None:
        return self.live.last_error

    def evaluate(self, rule: str, input_doc: Any) -> Any:
        engine = self._engine()
        engine.set_input(input_doc)
        return engine.eval_rule(rule)

    def evaluate_json(self, rule: str, input_json: str) -> Any:
        engine = self._engine()
        engine.set_input_json(input_json)
        return engine.eval_rule(rule)

    def _engine(self) -> regorus.Engine:
        bundle = self.current()
        local = self._local
        if getattr(local, "bundle", None) is not bundle:
            local.engine, local.bundle = bundle.engine(), bundle
        return local.engine

    def current(self, force: bool = False) -> Bundle:
        """The bundle in force, after looking for changed files or data (at most once a second unless ``force``)."""
        return self.live.current(force)

    def revision(self) -> str:
        """The revision in force, after looking for changed files or data (at most once a second)."""
        return self.current().revision


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
