"""The catalog: every tool the gateway can expose, by exposed name.

Built-in and gateway tools are fixed at start; upstream tools are read from the pool on each lookup,
so a restarted upstream's tools appear as soon as it is back.

    catalog = Catalog(builtins, lambda: pool)
    catalog.get("fs_read")       # ToolSpec | None
    catalog.all()                # every ToolSpec, built-ins first

The pool is made on first use: it brings the MCP SDK, which would cost a command-line check (``gateway
check``, the Claude Code hook) most of its start-up; a name without ``__`` is never an upstream tool.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING

from gateway.types import ToolSpec

if TYPE_CHECKING:
    from gateway.tools.upstream import Upstream, UpstreamPool

UPSTREAM_SEPARATOR = "__"  # upstream tools are exposed as <prefix>__<name>; prefixes never hold "__"


class Catalog:
    def __init__(self, local: list[ToolSpec], pool: Callable[[], UpstreamPool] | None = None) -> None:
        self.local = {spec.name: spec for spec in local}
        self._make_pool = pool

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
        return [*self.local.values(), *self.pool.specs()]

    def get(self, name: str) -> ToolSpec | None:
        spec = self.local.get(name)
        if spec is not None:
            return spec
        upstream = self.upstream_of(name)
        return upstream.by_name.get(name) if upstream is not None else None

    def upstream_of(self, name: str) -> Upstream | None:
        """The upstream whose prefix the name carries (up or down), or None."""
        return self.pool.owner(name) if UPSTREAM_SEPARATOR in name else None
