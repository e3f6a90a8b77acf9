"""``gateway policy test``: run the bundle's Rego unit tests (rules named ``test_*`` in ``*_test.rego``) and
every concern's cases (``<concern>/cases.yaml``: gateway/policy/cases.py).

A test passes when its rule evaluates to true, as ``opa test`` does; false or undefined fails it, and
an evaluation error is reported as an error. The tests run in the embedded engine with the roles as
data, so ``with data.roles as {...}`` in a test overrides them.

    results = run_policy_tests(Path("policies"), {"roles": roles.as_data()})
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import regorus

from gateway.errors import ConfigError
from gateway.policy.bundle import QUERY, engine_message
from gateway.policy.cases import load_cases
from gateway.types import JSONObject

PACKAGE_LINE = re.compile(r"^package\s+([A-Za-z0-9_.]+)", re.MULTILINE)
TEST_RULE = re.compile(r"^(test_[A-Za-z0-9_]+)\s+if\b", re.MULTILINE)


@dataclass(frozen=True)
class PolicyTestResult:
    package: str
    name: str
    status: Literal["pass", "fail", "error"]
    message: str = ""


def run_policy_tests(directory: Path, data: JSONObject) -> list[PolicyTestResult]:
    files = sorted(directory.rglob("*.rego"))
    tests = [p for p in files if p.name.endswith("_test.rego")]
    if not tests:
        raise ConfigError(f"no *_test.rego files in {directory}")
    engine = regorus.Engine()
    try:
        for path in files:
            engine.add_policy(str(path.relative_to(directory)), path.read_text(encoding="utf-8"))
    except Exception as exc:
        raise ConfigError(f"the bundle does not compile: {engine_message(exc)}") from None
    engine.add_data(data)
    engine.set_input({})
    results: list[PolicyTestResult] = []
    for path in tests:
        text = path.read_text(encoding="utf-8")
        package = PACKAGE_LINE.search(text)
        if package is None:
            raise ConfigError(f"{path.name} has no package line")
        for name in dict.fromkeys(TEST_RULE.findall(text)):  # a rule with several bodies is one test
            try:
                value = engine.eval_rule(f"data.{package.group(1)}.{name}")
            except Exception as exc:
                results.append(PolicyTestResult(package.group(1), name, "error", engine_message(exc)))
                continue
            status: Literal["pass", "fail"] = "pass" if value is True else "fail"
            results.append(PolicyTestResult(package.group(1), name, status, failure_message(value)))
    for case in load_cases(directory):
        engine.set_input(case.document)
        try:
            problem = case.problem(engine.eval_rule(QUERY))
        except Exception as exc:
            results.append(PolicyTestResult(f"{case.concern}/cases.yaml", case.name, "error", engine_message(exc)))
            continue
        outcome: Literal["pass", "fail"] = "fail" if problem else "pass"
        results.append(PolicyTestResult(f"{case.concern}/cases.yaml", case.name, outcome, problem or ""))
    return results


def failure_message(value: object) -> str:
    """Why a test rule did not pass: opa test counts only ``true``."""
    if value is True:
        return ""
    if value is None:
        return "undefined: an expression in its body was false or undefined"
    return f"evaluated to {value!r}, not true"
