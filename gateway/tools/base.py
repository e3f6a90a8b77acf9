"""How a built-in tool is declared: an argument model, a description and an async function.

    class ReadArgs(Arguments):
        path: str = Field(description="File to read, relative to the workspace")

    async def fs_read(args: ReadArgs, inv: ToolInvocation) -> mt.CallToolResult: ...

    spec = builtin("fs_read", "Read a text file.", ReadArgs, fs_read, roles={"path": "read"})

The argument model gives the JSON schema the client sees and the validation the gateway applies
(strict: no coercion, unknown fields refused).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ConfigDict

from gateway.tools.spec import BUILTIN, Provider, ToolInvocation, ToolSpec
from gateway.types import JSONObject

if TYPE_CHECKING:
    import mcp_types as mt

ArgsT = TypeVar("ArgsT", bound="Arguments")


class Arguments(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


def builtin(
    name: str,
    description: str,
    model: type[ArgsT],
    fn: Callable[[ArgsT, ToolInvocation], Awaitable[mt.CallToolResult]],
    *,
    roles: dict[str, str] | None = None,
    read_only: bool = False,
    destructive: bool = False,
    provider: Provider = BUILTIN,
) -> ToolSpec:
    async def handler(inv: ToolInvocation) -> mt.CallToolResult:
        return await fn(model.model_validate(inv.arguments), inv)

    return ToolSpec(
        name=name,
        provider=provider,
        description=description,
        input_schema=json.loads(schema_text(model)),  # a copy of its own: a caller may change it
        handler=handler,
        annotations={"readOnlyHint": read_only, "destructiveHint": destructive, "openWorldHint": False},
        argument_roles=roles or {},
        read_only=read_only,
        arguments_model=model,
    )


@functools.cache
def schema_text(model: type[Arguments]) -> str:
    """The JSON schema of an argument model, as JSON text: pydantic builds it in ~0.5 ms a model, and every
    Gateway declares every tool (the suite builds thousands of gateways in a process)."""
    schema = model.model_json_schema()
    schema.pop("title", None)
    return json.dumps(schema)


def text_result(text: str, structured: JSONObject | None = None, is_error: bool = False) -> mt.CallToolResult:
    import mcp_types as mt  # on first use: `gateway check` and the hook declare tools but never run one

    return mt.CallToolResult(
        content=[mt.TextContent(type="text", text=text)], structured_content=structured, is_error=is_error
    )


def json_result(value: Any, is_error: bool = False) -> mt.CallToolResult:
    """The same facts as JSON text and as structuredContent (clients show one or the other)."""
    structured = value if isinstance(value, dict) else {"result": value}
    return text_result(json.dumps(value, indent=2, default=str), structured, is_error)
