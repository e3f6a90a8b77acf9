"""Resolve: the tool name becomes a ToolSpec from the role's catalog (gateway/tools/catalog.py)."""

from __future__ import annotations

from typing import Protocol

from gateway.errors import Quarantined, ToolNotGranted, UnknownTool, UpstreamUnavailable
from gateway.judge.call import Call
from gateway.tools.catalog import Catalog
from gateway.types import Principal

__all__ = ["Resolve", "ToolGrants"]


class ToolGrants(Protocol):
    def grants(self, principal: Principal, tool: str) -> bool: ...
    def denials_as_errors(self, principal: Principal) -> bool: ...


class Resolve:
    """The tool name becomes a ToolSpec, if the caller's role may see it.

    A tool the role is not granted gets the same answer as a tool that does not exist, so a role
    cannot probe for tools; the ledger still tells the two apart. An upstream definition that is not pinned
    as listed (changed, new, renamed: gateway/tools/pins.py) is quarantined: refused with the reason.
    """

    def __init__(self, catalog: Catalog, grants: ToolGrants) -> None:
        self.catalog = catalog
        self.grants = grants

    async def __call__(self, call: Call) -> None:
        assert call.principal is not None
        call.denials_as_errors = self.grants.denials_as_errors(call.principal)
        # the gateway's own calls (a verification command) bring the spec that describes them
        spec = call.spec or self.catalog.find(call.method, call.tool)
        if spec is not None and call.method == "resources/read":
            call.tool = spec.name  # what roles grant and the ledger records; the URI is the argument
        granted = self.grants.grants(call.principal, call.tool)
        if spec is None or not granted:
            upstream = self.catalog.upstream_of(call.tool)
            if granted and upstream is not None and upstream.state != "up":
                raise UpstreamUnavailable(f"upstream {upstream.prefix!r} is down: {upstream.error or 'not connected'}")
            call.detail["tool_exists"] = spec is not None
            what = {"resources/read": "resource", "prompts/get": "prompt"}.get(call.method, "tool")
            asked = (
                call.arguments.get("uri") if call.method == "resources/read" else call.tool
            )  # as the caller named it
            message = f"no {what} named {asked!r} is available to role {call.principal.role!r}"
            raise ToolNotGranted(message) if spec is not None else UnknownTool(message)
        call.spec = spec
        call.pin = self.catalog.pin(spec)
        if call.pin is not None and call.pin.quarantined:
            raise Quarantined(call.pin.reason(spec.name, spec.provider.prefix or ""), pin=call.pin_facts)
