"""The catalog: every tool the gateway can expose, by exposed name.

Built-in and gateway tools are fixed at start; upstream tools are read from the pool on each lookup,
so a restarted upstream's tools appear as soon as it is back.

    catalog = Catalog(builtins, lambda: pool)
    catalog.get("fs_read")       # ToolSpec | None
    catalog.all()                # every ToolSpec, built-ins first
    catalog.find("resources/read", "test://static-text")   # what a resources/read or prompts/get names
    catalog.pin(spec)            # an upstream definition's PinStatus (quarantined unless pinned as listed)

The pool is made on first use: it brings the MCP SDK, which would cost a command-line check (``gateway
check``, the Claude Code hook) most of its start-up; a name without ``__`` is an upstream tool only when
an upstream is unprefixed (``prefixed: false``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING

from gateway.types import ToolSpec

if TYPE_CHECKING:
    from gateway.tools.pins import PinStatus
    from gateway.tools.upstream import Upstream, UpstreamPool

UPSTREAM_SEPARATOR = "__"  # upstream tools are exposed as <prefix>__<name>; prefixes never hold "__"


class Catalog:
    def __init__(
        self, local: list[ToolSpec], pool: Callable[[], UpstreamPool] | None = None, unprefixed: bool = False
    ) -> None:
        self.local = {spec.name: spec for spec in local}
        self._make_pool = pool
        self.unprefixed = unprefixed  # some upstream exposes its names without a prefix

    @functools.cached_property
    def pool(self) -> UpstreamPool:
        if self._make_pool is not None:
            return self._make_pool()
        from gateway.tools.upstream import UpstreamPool

        return UpstreamPool({})

    def add(self, specs: list[ToolSpec]) -> None:
        for spec in specs:
            if spec.name in self.local:
                raise ValueError(f"tool {spec.name!r} is defined twice")
            self.local[spec.name] = spec

    def all(self) -> list[ToolSpec]:
        # an unprefixed upstream tool never shadows a gateway tool of the same name
        return [*self.local.values(), *(spec for spec in self.pool.specs() if spec.name not in self.local)]

    def get(self, name: str) -> ToolSpec | None:
        spec = self.local.get(name)
        if spec is not None:
            return spec
        upstream = self.upstream_of(name)
        return upstream.by_name.get(name) if upstream is not None else None

    def find(self, method: str, name: str) -> ToolSpec | None:
        """The spec a request names: a tool (tools/call), a resource by URI (resources/read) or a prompt
        (prompts/get); each kind only by its own requests, so a resource is never called as a tool."""
        if method == "resources/read":
            return self.pool.resource(name)
        if method == "prompts/get":
            return self.pool.prompt(name)
        return self.get(name)

    def pin(self, spec: ToolSpec) -> PinStatus | None:
        """An upstream definition's pin status (gateway/tools/pins.py); None for the gateway's own tools."""
        if spec.pin_key is None:
            return None
        upstream = self.pool.upstream_of(spec)
        return upstream.pin(spec) if upstream is not None else None

    def upstream_of(self, name: str) -> Upstream | None:
        """The upstream whose prefix the name carries (or, unprefixed, that lists it), up or down, or None."""
        if UPSTREAM_SEPARATOR in name or self.unprefixed:
            return self.pool.owner(name)
        return None
