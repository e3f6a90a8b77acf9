"""The tool registry (gateway/tools/__init__.py) against the roles the gateway ships (roles/*.yaml): every tool
a role names exists, and every tool is granted to some role (a tool nobody may call is dead code)."""

from __future__ import annotations

import fnmatch
from pathlib import Path

from gateway.identity.roles import RoleSet
from gateway.runtime import Gateway
from gateway.tools import gateway_tools
from gateway.tools.spec import BUILTIN, GATEWAY

ROLES = Path(__file__).resolve().parent.parent / "roles"


def test_every_tool_a_role_names_exists_and_every_tool_is_granted(gateway: Gateway) -> None:
    tools = [spec.name for spec in gateway_tools(gateway)]
    assert len(tools) == len(set(tools)), "a tool is defined twice"
    assert sorted(tools) == sorted(spec.name for spec in gateway.catalog.all()), "the catalog holds the registry's"
    roles = RoleSet.load(ROLES).roles
    for role in roles.values():
        for pattern in role.tools:
            assert fnmatch.filter(tools, pattern), f"role {role.name!r} names {pattern!r}: no such tool"
    ungranted = [name for name in tools if not any(role.grants(name) for role in roles.values())]
    assert ungranted == [], f"tools no role is granted: {ungranted}"


def test_the_gateways_own_tools_are_builtin_or_the_gateways(gateway: Gateway) -> None:
    providers = {spec.name: spec.provider for spec in gateway_tools(gateway)}
    assert set(providers.values()) == {BUILTIN, GATEWAY}
    assert {name for name, p in providers.items() if p == GATEWAY} == {
        "task_submit", "task_amend", "task_list", "task_show", "task_claim", "task_renew", "task_release",
        "task_report", "verify_run", "intent_propose", "intent_approve", "intent_commit", "merge_ceremony",
        "artifact_put", "artifact_get", "artifact_log", "artifact_resolve",
    }  # fmt: skip
