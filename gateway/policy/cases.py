"""A concern's cases, as data: ``policies/<concern>/cases.yaml``, checked by ``gateway policy test``.

Each case is a name, an ``input`` laid over ``BASE`` (objects merged, anything else replaced) and an
``expect``: the decision's ``action``, its ``tier`` when given, and ``rules`` it must name (at least those).
They say what a concern decides in the words of whole decisions, beside the concern's Rego unit tests, and run
on any engine that answers ``data.gateway.decision`` (tests/test_policy_layout.py runs them on regorus and
on the real OPA).

    for case in load_cases(Path("policies")):
        problem = case.problem(engine_decision(case.document))   # None when the decision is as expected
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from gateway.errors import ConfigError
from gateway.types import JSONObject
from gateway.yaml_text import safe_load

__all__ = ["BASE", "Case", "load_cases"]

# A developer's fs_read with no effects, on the shape of gateway/pipeline.py ``policy_input``.
BASE: JSONObject = {
    "version": 2,
    "principal": {"agent": "dev-1", "role": "developer", "task": None, "jti": "j", "exp": 0},
    "tool": {
        "name": "fs_read",
        "provider": "builtin",
        "annotations": None,
        "commit_class": False,
        "read_only": False,
        "analysed": True,
    },
    "arguments": {},
    "effects": {
        **{key: [] for key in ("reads", "writes", "creates", "deletes", "recursive_deletes", "commands")},
        **{key: [] for key in ("network", "packages", "opaque")},
        "privileged": False,
    },
    "task": None,
    "intent": None,
    "context": {"workspace": "/repo", "trace_id": "t", "time": "2026-11-22T10:00:00Z"},
}


def laid_over(base: Any, change: Any) -> Any:
    if isinstance(base, dict) and isinstance(change, dict):
        return {**base, **{key: laid_over(base.get(key), value) for key, value in change.items()}}
    return copy.deepcopy(change)


@dataclass(frozen=True)
class Case:
    concern: str
    name: str
    document: JSONObject
    expect: JSONObject

    def problem(self, decision: JSONObject | None) -> str | None:
        """Why ``decision`` is not what the case expects, or None."""
        if not isinstance(decision, dict):
            return f"no decision ({decision!r})"
        wrong = [
            f"{key} {decision.get(key)!r}, not {self.expect[key]!r}"
            for key in ("action", "tier")
            if key in self.expect and decision.get(key) != self.expect[key]
        ]
        missing = sorted(set(self.expect.get("rules", [])) - set(decision.get("rules", [])))
        if missing:
            wrong.append(f"rules {decision.get('rules')} lack {missing}")
        return "; ".join(wrong) or None


def load_cases(directory: Path) -> list[Case]:
    """Every ``cases.yaml`` of the bundle's concern directories."""
    cases = []
    for path in sorted(directory.glob("*/cases.yaml")):
        try:
            rows = safe_load(path.read_text(encoding="utf-8")) or []
        except yaml.YAMLError as exc:
            raise ConfigError(f"{path}: not YAML: {exc}") from None
        for row in rows:
            if not isinstance(row, dict) or not {"name", "expect"} <= row.keys():
                raise ConfigError(f"{path}: each case needs a name, an input and an expect: {row!r}")
            cases.append(Case(path.parent.name, row["name"], laid_over(BASE, row.get("input") or {}), row["expect"]))
    return cases
