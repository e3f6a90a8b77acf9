"""Upstreams' resources, templates and prompts through the gateway: a real SDK client, the gateway's MCP
server and pipeline, and tests/servers/conformance_upstream.py as a real (sandboxed) upstream."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import mcp_types as mt
import pytest
from conftest import add_role, inproc_client, ledger_rows, reconfigure, text_of, token
from mcp import MCPError

from gateway.runtime import Gateway

pytestmark = pytest.mark.anyio

UPSTREAM = str(Path(__file__).parent / "servers" / "conformance_upstream.py")
FILES = str(Path(__file__).parent / "servers" / "file_resources.py")


@pytest.fixture
def federated(config: Any) -> tuple[Gateway, Any]:
    add_role(config, "reader", ["conf__*"], max_tier=1)
    config = reconfigure(
        config,
        upstreams={"conf": {"command": sys.executable, "args": [UPSTREAM], "read_only": ["*"]}},
        limits={"max_read_bytes": 2048},
    )
    return Gateway(config), config


def rows_for(gateway: Gateway, method: str) -> list[Any]:
    return [r for r in ledger_rows(gateway) if (r.detail or {}).get("method") == method]


async def test_listed_with_prefixes_for_the_roles_that_may_read_them(federated: tuple[Gateway, Any]) -> None:
    gateway, config = federated
    async with inproc_client(gateway, token(config, "reader")) as client:
        resources = {r.name: r.uri for r in (await client.list_resources()).resources}
        templates = {t.name: t.uri_template for t in (await client.list_resource_templates()).resource_templates}
        prompts = {p.name for p in (await client.list_prompts()).prompts}
    assert resources["conf__static-text"] == "test://static-text"  # the upstream's URI, a prefixed name
    assert templates == {"conf__template-data": "test://template/{id}/data"}
    assert {"conf__test_simple_prompt", "conf__test_prompt_with_arguments"} <= prompts
    async with inproc_client(gateway, token(config, "planner")) as client:  # its globs grant none of them
        assert (await client.list_resources()).resources == []
        assert (await client.list_resource_templates()).resource_templates == []
        assert (await client.list_prompts()).prompts == []


async def test_reads_and_prompts_are_judged_as_reads_and_recorded(federated: tuple[Gateway, Any]) -> None:
    gateway, config = federated
    async with inproc_client(gateway, token(config, "reader", agent="r1")) as client:
        text = await client.read_resource("test://static-text")
        templated = await client.read_resource("test://template/7/data")
        prompt = await client.get_prompt("conf__test_prompt_with_arguments", {"arg1": "a", "arg2": "b"})
        completion = await client.complete(
            mt.PromptReference(name="conf__test_prompt_with_arguments"), {"name": "arg1", "value": "par"}
        )
        as_tool = await client.call_tool("conf__static-text", {"uri": "test://static-text"})
    assert text.contents[0].text == "This is the content of the static text resource."
    assert '"id": "7"' in templated.contents[0].text
    assert prompt.messages[0].content.text == "Prompt with arguments: arg1='a', arg2='b'"
    assert completion.completion.values == ["paris", "park", "party"]  # the upstream's own suggestions
    assert as_tool.is_error and "no tool named" in text_of(as_tool)  # a resource is never called as a tool
    reads = rows_for(gateway, "resources/read")
    assert [(r.tool, r.outcome) for r in reads if r.outcome != "started"] == [
        ("conf__static-text", "ok"),
        ("conf__template-data", "ok"),
    ]
    assert reads[-1].principal["agent"] == "r1" and reads[-1].principal["role"] == "reader"
    assert reads[-1].decision["action"] == "allow" and reads[-1].decision["tier"] == 1
    gets = [r for r in rows_for(gateway, "prompts/get") if r.outcome != "started"]
    assert [(r.tool, r.outcome) for r in gets] == [("conf__test_prompt_with_arguments", "ok")]


async def test_the_policy_input_says_what_kind_of_call_it_judges(federated: tuple[Gateway, Any]) -> None:
    from gateway.judge.call import Call
    from gateway.judge.decide import policy_input
    from gateway.origin import Origin

    gateway, config = federated
    seen: list[dict[str, Any]] = []
    decide = gateway.engine.decide

    async def spy(document: dict[str, Any]) -> Any:
        seen.append(document)
        return await decide(document)

    gateway.engine.decide = spy  # type: ignore[method-assign]
    async with inproc_client(gateway, token(config, "reader")) as client:
        await client.read_resource("test://static-text")
        await client.get_prompt("conf__test_simple_prompt")
        await client.call_tool("conf__test_simple_text", {})
    assert [(d["kind"], d["tool"]["name"], d["tool"]["read_only"]) for d in seen] == [
        ("resource_read", "conf__static-text", True),
        ("prompt_get", "conf__test_simple_prompt", True),
        ("tool_call", "conf__test_simple_text", True),
    ]
    assert seen[0]["arguments"] == {"uri": "test://static-text"} and seen[0]["version"] == 2
    assert Call and policy_input and Origin  # the same document a tools/call gets


async def test_a_role_that_may_not_read_is_refused_and_recorded(federated: tuple[Gateway, Any]) -> None:
    gateway, config = federated
    async with inproc_client(gateway, token(config, "planner", agent="p1")) as client:
        with pytest.raises(MCPError) as read:
            await client.read_resource("test://static-text")
        with pytest.raises(MCPError) as got:
            await client.get_prompt("conf__test_simple_prompt")
        with pytest.raises(MCPError) as missing:
            await client.get_prompt("conf__no_such_prompt")
        completion = await client.complete(
            mt.PromptReference(name="conf__test_prompt_with_arguments"), {"name": "arg1", "value": "par"}
        )
    # the same answer as for a URI or prompt that does not exist: a role cannot probe for them
    assert "no resource named 'test://static-text' is available to role 'planner'" in read.value.error.message
    assert "no prompt named 'conf__test_simple_prompt' is available to role 'planner'" in got.value.error.message
    assert read.value.error.code == -32002 and got.value.error.code == missing.value.error.code  # no probing
    assert completion.completion.values == []  # nothing about what the role may not read
    refused = [r for r in ledger_rows(gateway) if r.principal and r.principal["agent"] == "p1"]
    assert [(r.tool, r.outcome, r.detail["tool_exists"]) for r in refused] == [
        ("conf__static-text", "denied", True),
        ("conf__test_simple_prompt", "denied", True),
        ("conf__no_such_prompt", "invalid", False),
    ]


async def test_oversized_contents_are_refused_whole(federated: tuple[Gateway, Any]) -> None:
    gateway, config = federated
    async with inproc_client(gateway, token(config, "reader")) as client:
        with pytest.raises(MCPError) as large:
            await client.read_resource("test://large")  # 4096 bytes; the limit is 2048
    assert "result_too_large" in large.value.error.message and "2048" in large.value.error.message
    row = [r for r in rows_for(gateway, "resources/read") if r.outcome != "started"][-1]
    assert row.tool == "conf__large" and row.outcome == "error"
    assert row.detail["error"]["code"] == "result_too_large"


@pytest.mark.parametrize(
    "uri",
    [
        "test://nowhere",
        "file:///etc/passwd",
        "test://template/../data",
        "test://template/%2e%2e/data",
        "test://template/a%2Fb/data",
        "test://static-text/../static-binary",
    ],
)
async def test_uris_no_upstream_listed_are_refused_and_recorded(federated: tuple[Gateway, Any], uri: str) -> None:
    gateway, config = federated
    async with inproc_client(gateway, token(config, "reader")) as client:
        with pytest.raises(MCPError) as refused:
            await client.read_resource(uri)
    assert refused.value.error.code == -32002  # the specification's "resource not found"
    assert f"no resource named {uri!r}" in refused.value.error.message
    rows = rows_for(gateway, "resources/read")
    assert [(r.tool, r.outcome) for r in rows] == [(uri, "invalid")]  # refused before anything ran


async def test_prompt_arguments_are_validated(federated: tuple[Gateway, Any]) -> None:
    gateway, config = federated
    async with inproc_client(gateway, token(config, "reader")) as client:
        with pytest.raises(MCPError) as missing:
            await client.get_prompt("conf__test_prompt_with_arguments", {"arg1": "a"})
        with pytest.raises(MCPError) as unknown:
            await client.get_prompt("conf__nope")
    assert "invalid_arguments" in missing.value.error.message and "arg2" in missing.value.error.message
    assert "no prompt named 'conf__nope'" in unknown.value.error.message


async def test_file_resources_are_judged_as_reads_of_their_paths(config: Any) -> None:
    add_role(config, "reader", ["files__*"], max_tier=1)
    config = reconfigure(
        config,
        upstreams={"files": {"command": sys.executable, "args": [FILES, str(config.workspace)], "read_only": ["*"]}},
    )
    gateway = Gateway(config)
    readme = (config.workspace / "README.md").resolve().as_uri()
    async with inproc_client(gateway, token(config, "reader")) as client:
        assert "contents of README.md" in str(await client.read_resource(readme))
        for uri in (Path("/etc/hostname").as_uri(), (config.workspace / ".env").resolve().as_uri()):
            with pytest.raises(MCPError):
                await client.read_resource(uri)
    finals = [r for r in rows_for(gateway, "resources/read") if r.outcome != "started"]
    assert [(r.tool, r.outcome, r.effects["reads"]) for r in finals] == [
        ("files__readme", "ok", ["README.md"]),
        ("files__hostname", "asked", ["/etc/hostname"]),  # tier 3, above the role's max_tier: as fs_read is
        ("files__env", "asked", [".env"]),
    ]
    assert [(r.decision["tier"], r.decision["rules"]) for r in finals] == [
        (1, ["roles.granted", "tiers.read"]),
        (3, ["paths.outside_workspace"]),
        (3, ["secrets.access"]),
    ]
