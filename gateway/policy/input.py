"""The policy input document (version 2): one call described as plain facts.

This is the contract between the gateway and every policy (docs/architecture.md). Add fields
freely; renaming or removing one is a new version.

    doc = input_document(call, task=..., intent=..., workspace="/repo")
"""

from __future__ import annotations

import functools
from datetime import UTC, datetime

from gateway.tools.spec import ToolSpec
from gateway.types import Effects, JSONObject, Principal

INPUT_VERSION = 2
# input.kind: what the call asks for. A resource read or a prompt get is judged as a read of its upstream
# (tool.read_only is true, tool.name is the resource's or prompt's exposed name)
# An upstream's request for the calling client during a tool call is judged as "elicitation" (a question to
# the person) or "sampling" (a completion by the client's model): tool is the tool whose call it came
# from, arguments the request's params (policies/relay/relay.rego)
INPUT_KINDS = {
    "tools/call": "tool_call",
    "resources/read": "resource_read",
    "prompts/get": "prompt_get",
    "elicitation/create": "elicitation",
    "sampling/createMessage": "sampling",
}


def tool_facts(spec: ToolSpec | None, name: str, pin: JSONObject | None = None) -> JSONObject:
    return {
        "name": name,
        "provider": str(spec.provider) if spec else None,
        "annotations": spec.annotations if spec else None,  # untrusted hints from upstreams
        "commit_class": spec.commit_class if spec else False,
        "read_only": spec.read_only if spec else False,  # declared by the gateway or the operator
        "analysed": analysed(spec),
        # an upstream definition against its pin (gateway/tools/pins.py): {"status": "pinned" | "changed" |
        # "new" | "renamed", "digest", "pinned", "renamed_from", "instructions"}; None for the gateway's own
        "pin": pin,
    }


def input_document(
    *,
    principal: Principal,
    tool: JSONObject,
    arguments: JSONObject,
    effects: Effects,
    workspace: str,
    trace_id: str | None = None,
    task: JSONObject | None = None,
    intent: JSONObject | None = None,
    sandbox: JSONObject | None = None,
    kind: str = "tool_call",
    git_hooks: str | None = None,
    flow: JSONObject | None = None,
) -> JSONObject:
    return {
        "version": INPUT_VERSION,
        "kind": kind,
        "principal": principal.model_dump(),
        "tool": tool,
        "arguments": arguments,
        "effects": effects.model_dump(),
        "task": task,
        "intent": intent,
        # the session's information-flow labels and their sources (gateway/labels.py); None outside a session
        "flow": flow,
        "context": {
            "workspace": workspace,
            "trace_id": trace_id,
            "time": datetime.now(UTC).isoformat(timespec="seconds"),
            # what confines the call's commands (or its upstream server); None for calls that run none
            "sandbox": sandbox,
            # core.hooksPath inside the workspace (gateway/effects/git_hooks.py): a protected path, like .git/hooks
            "git_hooks": git_hooks,
        },
    }


def analysed(spec: ToolSpec | None) -> bool:
    """Whether the gateway can describe a call's effects: its own tools, or upstream tools the operator
    described in gateway.yaml (argument roles or a read-only declaration)."""
    if spec is None:
        return False
    if not spec.provider.upstream:
        return True
    return bool(spec.argument_roles) or spec.read_only


# Keys whose values the decision log masks whatever they hold (gateway.decision_log.redact).
_SECRET_KEY_WORDS = (
    "token",
    "secret",
    "password",
    "passwd",
    "authorization",
    "api_key",
    "api-key",
    "apikey",
    "access_key",
    "private_key",
    "credential",
    "cookie",
)


@functools.lru_cache(maxsize=4096)
def secret_key(key: str) -> bool:
    # cached: the decision log masks every key of every input document, and the keys repeat call after call
    lowered = key.lower()
    return any(word in lowered for word in _SECRET_KEY_WORDS)
