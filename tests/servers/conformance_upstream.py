"""An upstream server with everything the @modelcontextprotocol/conformance server scenarios ask for:
their test_* tools, the test:// resources and template, the test_* prompts and completion. The gateway
federates it unprefixed (``prefixed: false``) because the suite calls these exact names.

python conformance_upstream.py        # stdio
"""

from __future__ import annotations

import base64
import json
from typing import Annotated, Any

import mcp_types as types
from mcp.server.mcpserver import Context, Elicit, MCPServer, Resolve
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel

server = MCPServer("conformance-upstream", version="1.0.0")
PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
    )
).decode()
WAV = base64.b64encode(b"RIFF$\x00\x00\x00WAVEfmt ").decode()


# --- tools ----------------------------------------------------------------------------------------


@server.tool()
def test_simple_text() -> str:
    """Conformance tool: one text block."""
    return "This is a simple text response for testing."


@server.tool()
def test_image_content() -> list[types.ContentBlock]:
    """Conformance tool: one image block."""
    return [types.ImageContent(type="image", data=PNG, mime_type="image/png")]


@server.tool()
def test_audio_content() -> list[types.ContentBlock]:
    """Conformance tool: one audio block."""
    return [types.AudioContent(type="audio", data=WAV, mime_type="audio/wav")]


@server.tool()
def test_embedded_resource() -> list[types.ContentBlock]:
    """Conformance tool: one embedded resource."""
    resource = types.TextResourceContents(
        uri="test://embedded-resource", mime_type="text/plain", text="This is an embedded resource content."
    )
    return [types.EmbeddedResource(type="resource", resource=resource)]


@server.tool()
def test_multiple_content_types() -> list[types.ContentBlock]:
    """Conformance tool: text, image and an embedded resource."""
    resource = types.TextResourceContents(
        uri="test://mixed-content-resource", mime_type="application/json", text='{"test":"data","value":123}'
    )
    return [
        types.TextContent(type="text", text="Multiple content types test:"),
        types.ImageContent(type="image", data=PNG, mime_type="image/png"),
        types.EmbeddedResource(type="resource", resource=resource),
    ]


@server.tool()
def test_error_handling() -> str:
    """Conformance tool: always a tool error."""
    raise ToolError("This tool intentionally returns an error for testing")


@server.tool()
async def test_tool_with_progress(ctx: Context) -> str:
    """Conformance tool: three progress notifications."""
    for value in (0, 50, 100):
        await ctx.report_progress(value, 100, f"at {value}")
    return "Progress test completed"


@server.tool()
async def test_tool_with_logging(ctx: Context) -> str:
    """Conformance tool: three log messages."""
    for message in ("Tool execution started", "Tool processing data", "Tool execution completed"):
        await ctx.info(message)
    return "Logging test completed"


class Username(BaseModel):
    username: str = ""


def ask_username(message: str) -> Elicit[Username]:
    return Elicit(message, Username)


@server.tool()
async def test_elicitation(message: str, answer: Annotated[Username, Resolve(ask_username)]) -> str:
    """Conformance tool: asks the client for a username."""
    return f"User provided: {answer.model_dump()}"


async def ask(ctx: Context, method: str, params: dict[str, Any]) -> dict[str, Any] | types.InputRequiredResult:
    """The client's answer to one request, in either era: pushed (handshake era) or asked for in an
    InputRequiredResult and read from the retry's input responses (2026-07-28)."""
    model, result = {
        "elicitation/create": (types.ElicitRequest, types.ElicitResult),
        "sampling/createMessage": (types.CreateMessageRequest, types.CreateMessageResult),
    }[method]
    request = model.model_validate({"method": method, "params": params})
    if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        answer = await ctx.session.send_request(request, result)
        return answer.model_dump(by_alias=True, exclude_none=True)
    if ctx.input_responses and "q" in ctx.input_responses:
        return ctx.input_responses["q"].model_dump(by_alias=True, exclude_none=True)
    return types.InputRequiredResult(input_requests={"q": request}, request_state="asked")


@server.tool()
async def test_sampling(prompt: str, ctx: Context) -> str | types.InputRequiredResult:
    """Conformance tool: asks the client's model for a completion."""
    message = {"role": "user", "content": {"type": "text", "text": prompt}}
    answer = await ask(ctx, "sampling/createMessage", {"messages": [message], "maxTokens": 100})
    if isinstance(answer, types.InputRequiredResult):
        return answer
    return f"LLM response: {answer.get('content', {}).get('text', '')}"


DEFAULTS_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "default": "John Doe"},
        "age": {"type": "integer", "default": 30},
        "score": {"type": "number", "default": 95.5},
        "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
        "verified": {"type": "boolean", "default": True},
    },
}
ENUMS_SCHEMA = {
    "type": "object",
    "properties": {
        "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
        "titledSingle": {
            "type": "string",
            "oneOf": [{"const": "value1", "title": "First"}, {"const": "value2", "title": "Second"}],
        },
        "legacyEnum": {"type": "string", "enum": ["opt1", "opt2"], "enumNames": ["Option 1", "Option 2"]},
        "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
        "titledMulti": {
            "type": "array",
            "items": {"anyOf": [{"const": "value1", "title": "First"}, {"const": "value2", "title": "Second"}]},
        },
    },
}


async def elicited(ctx: Context, schema: dict[str, Any]) -> str | types.InputRequiredResult:
    answer = await ask(ctx, "elicitation/create", {"message": "Please review", "requestedSchema": schema})
    if isinstance(answer, types.InputRequiredResult):
        return answer
    return f"Elicitation completed: action={answer['action']}, content={json.dumps(answer.get('content'))}"


@server.tool()
async def test_elicitation_sep1034_defaults(ctx: Context) -> str | types.InputRequiredResult:
    """Conformance tool: an elicitation whose fields have defaults."""
    return await elicited(ctx, DEFAULTS_SCHEMA)


@server.tool()
async def test_elicitation_sep1330_enums(ctx: Context) -> str | types.InputRequiredResult:
    """Conformance tool: an elicitation with every kind of enum."""
    return await elicited(ctx, ENUMS_SCHEMA)


@server.tool()
def test_reconnection() -> str:
    """Conformance tool (SEP-1699): the suite wants its server to close the SSE stream mid-call; behind the
    gateway only the gateway owns that stream, so this answers on it, with the gateway's priming event first."""
    return "Reconnection test completed"


@server.tool()
def json_schema_2020_12_tool(name: str = "", address: dict[str, Any] | None = None) -> str:
    """Tool with JSON Schema 2020-12 features"""
    return json.dumps({"name": name, "address": address})


# the suite checks that $schema, $defs and additionalProperties reach the client as written
_schema_tool = server._tool_manager.get_tool("json_schema_2020_12_tool")
assert _schema_tool is not None
_schema_tool.parameters = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {"address": {"type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
    "additionalProperties": False,
}


# --- resources ------------------------------------------------------------------------------------


@server.resource("test://static-text", name="static-text", description="A static text resource", mime_type="text/plain")
def static_text() -> str:
    return "This is the content of the static text resource."


@server.resource("test://static-binary", name="static-binary", description="A static PNG", mime_type="image/png")
def static_binary() -> bytes:
    return base64.b64decode(PNG)


@server.resource(
    "test://watched-resource", name="watched", description="A resource to subscribe to", mime_type="text/plain"
)
def watched() -> str:
    return "Watched resource content."


@server.resource(
    "test://template/{id}/data", name="template-data", description="Data for an id", mime_type="application/json"
)
def template_data(id: str) -> str:
    return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})


@server.resource("test://large", name="large", description="Bigger than a small read limit", mime_type="text/plain")
def large() -> str:
    return "x" * 4096


# --- prompts and completion -----------------------------------------------------------------------


def user(content: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "content": content}


@server.prompt(description="A simple prompt without arguments")
def test_simple_prompt() -> list[dict[str, Any]]:
    return [user({"type": "text", "text": "This is a simple prompt for testing."})]


@server.prompt(description="A prompt with two required arguments")
def test_prompt_with_arguments(arg1: str, arg2: str) -> list[dict[str, Any]]:
    return [user({"type": "text", "text": f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"})]


@server.prompt(description="A prompt embedding a resource")
def test_prompt_with_embedded_resource(resourceUri: str) -> list[dict[str, Any]]:
    resource = {"uri": resourceUri, "mimeType": "text/plain", "text": "Embedded resource content for testing."}
    return [
        user({"type": "resource", "resource": resource}),
        user({"type": "text", "text": "Please process the embedded resource above."}),
    ]


@server.prompt(description="A prompt with an image")
def test_prompt_with_image() -> list[dict[str, Any]]:
    return [
        user({"type": "image", "data": PNG, "mimeType": "image/png"}),
        user({"type": "text", "text": "Please analyze the image above."}),
    ]


@server.completion()
async def complete(
    ref: types.PromptReference | types.ResourceTemplateReference,
    argument: types.CompletionArgument,
    context: types.CompletionContext | None,
) -> types.Completion:
    words = ["paris", "park", "party"] if argument.name == "arg1" else ["123", "124"]
    found = [w for w in words if w.startswith(argument.value)]
    return types.Completion(values=found, total=len(found), has_more=False)


if __name__ == "__main__":
    server.run("stdio")
