"""What a tool is to the gateway: its spec (where it comes from, its schema, how its arguments map to
effects), what its handler is given, and what a call answers.

    spec = ToolSpec(name="fs_read", provider=BUILTIN, description=..., input_schema=..., handler=fs_read)
    spec.provider.upstream          # False: the gateway's own
    str(Provider.of_upstream("git"))   # "upstream:git", as the policy input names it
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, TypeAlias

from pydantic import BaseModel

from gateway.tools.relay import NO_RELAY, ClientRelay
from gateway.types import JSONObject, Principal

if TYPE_CHECKING:
    import mcp_types as mt

    from gateway.effects.paths import Workspace
    from gateway.labels import Flow
    from gateway.origin import ProgressFn
    from gateway.sandbox import Confinement
    from gateway.tools.forwarded import Forwarded

__all__ = ["BUILTIN", "GATEWAY", "CallResult", "Provider", "ToolHandler", "ToolInvocation", "ToolSpec"]


@dataclass(frozen=True)
class Provider:
    """Who provides a tool: a built-in tool (files, shell, git), one of the gateway's own (tasks, intents, the
    merge ceremony), or an upstream MCP server, by its prefix in gateway.yaml.

    >>> str(Provider.of_upstream("git")), Provider.of_upstream("git").upstream, str(GATEWAY)
    ('upstream:git', True, 'gateway')
    """

    kind: Literal["builtin", "gateway", "upstream"]
    prefix: str | None = None  # an upstream's

    @classmethod
    def of_upstream(cls, prefix: str) -> Provider:
        return cls("upstream", prefix)

    @property
    def upstream(self) -> bool:
        return self.kind == "upstream"

    def __str__(self) -> str:
        """As the policy input, the ledger and traces name it: ``builtin``, ``gateway`` or ``upstream:<prefix>``."""
        return f"upstream:{self.prefix}" if self.kind == "upstream" else self.kind


BUILTIN = Provider("builtin")
GATEWAY = Provider("gateway")

# what a call answers: a tool's result (or a question for the client), a resource's contents, a prompt,
# or an upstream's answer to one of those, passed on as the JSON it sent
CallResult: TypeAlias = (
    "mt.CallToolResult | mt.InputRequiredResult | mt.ReadResourceResult | mt.GetPromptResult | Forwarded"
)
ToolHandler = Callable[["ToolInvocation"], Awaitable[CallResult]]


@dataclass(frozen=True)
class ToolSpec:
    """A tool the gateway exposes: where it comes from, its schema, and how its arguments map to effects.
    An upstream's resources and prompts are judged as calls too, each with a read-only ToolSpec of its own.

    ``argument_roles`` maps an argument name to what it means for effects: ``read``, ``write``,
    ``delete`` (paths), ``command`` (a shell string), ``url``, ``resource`` (a resource URI; ``file://``
    is a path read) or ``data`` (plain data, no effect). Built-in tools declare theirs; for upstream
    tools they come from gateway.yaml, since upstream annotations are untrusted hints (an upstream tool's
    argument with no role is opaque).
    """

    name: str
    provider: Provider
    description: str
    input_schema: JSONObject
    handler: ToolHandler
    annotations: JSONObject | None = None
    argument_roles: dict[str, str] = field(default_factory=dict)
    commit_class: bool = False
    read_only: bool = False  # declared by the gateway or the operator (gateway.yaml), never by an upstream
    upstream_name: str | None = None
    arguments_model: type[BaseModel] | None = None  # built-ins validate with it; others with input_schema
    # an upstream definition's (kind, name) among its upstream's pins (gateway/tools/pins.py)
    pin_key: tuple[str, str] | None = None

    def as_mcp_tool(self) -> mt.Tool:
        import mcp_types as mt  # the SDK's types load with the server, not with every command

        annotations = mt.ToolAnnotations.model_validate(self.annotations) if self.annotations else None
        return mt.Tool(
            name=self.name, description=self.description, input_schema=self.input_schema, annotations=annotations
        )


@dataclass
class ToolInvocation:
    """What a tool handler gets: validated arguments and the place it may act in."""

    arguments: JSONObject
    workspace: Workspace
    progress: ProgressFn
    principal: Principal
    trace_id: str = ""
    input_responses: JSONObject | None = None
    request_state: str | None = None
    confinement: Confinement | None = None  # the sandbox its commands (or its upstream server) run in
    flow: Flow | None = None  # the session's flow labels as the call was judged
    relay: ClientRelay = NO_RELAY  # the calling client, as an upstream may ask it things during the call
