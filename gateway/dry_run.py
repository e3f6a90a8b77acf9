"""``gateway check``: the decision for one call without running it, the same whether the command decides in
its own process or a running gateway answers it for the command (gateway/local_http.py).

    report = await dry_run(gateway, Principal(agent="cli", role="worker"), "fs_read", {"path": "README.md"})
    report["action"]          # "allow" | "ask" | "deny"; recorded in the ledger as kind "check"
"""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING

from gateway.errors import UnknownTool
from gateway.types import JSONObject, Principal

if TYPE_CHECKING:
    from gateway.runtime import Gateway

__all__ = ["dry_run", "unknown_tool"]


async def dry_run(
    gateway: Gateway, principal: Principal, tool: str, arguments: JSONObject, explain: bool = False
) -> JSONObject:
    """The decision report (``Gateway.check``). An unknown role or tool is an error naming what is known: the
    call is recorded all the same, and a person is told plainly rather than shown a deny."""
    gateway.roles.require(principal.role)
    report = await gateway.check(principal, tool, arguments, explain=explain)
    if report["rules"] == ["gateway.unknown_tool"] and gateway.catalog.get(tool) is None:
        raise unknown_tool(tool, [spec.name for spec in gateway.catalog.all()])
    return report


def unknown_tool(name: str, known: list[str]) -> UnknownTool:
    close = difflib.get_close_matches(name, known, n=3)
    hint = f"did you mean {', '.join(close)}?" if close else f"known: {', '.join(sorted(known)[:12])}, ..."
    return UnknownTool(f"unknown tool {name[:64]!r} ({hint})")
