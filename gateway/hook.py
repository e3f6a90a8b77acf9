"""Claude Code's PreToolUse hook, answered by the gateway's own judge: over HTTP or as a command.

For teams that keep Claude Code's built-in tools (Bash, Read, Write, Edit, ...) instead of routing all work
through the gateway's MCP tools. Each built-in call is translated to the gateway tool with the same effects
(Bash -> shell_run, Edit -> fs_edit, ...), described and decided by the same stages as a tools/call,
recorded in the ledger (kind "hook"), and answered in Claude Code's vocabulary:

    allow  the policy allows it (tier 1, or tier 2 after its checkpoint), or a person approved it
    deny   the policy denies it, or it needs a person (tier 3): the answer names the pending approval;
           once a person approves it (gateway approvals approve ID, or /ui/approvals), the same call
           is allowed once, on the same hook (an approval given to the call over MCP, where the gateway
           runs it in its sandbox, does not let Claude Code run it unconfined)

Two ways in: ``POST /hooks/claude-code`` on a running gateway (gateway/hooks_http.py: a few milliseconds,
the credential is the Bearer token) and ``gateway hook claude-code`` (a process per call, for setups
without a server). Both fail closed: unreadable input, an unknown tool, a bad credential or an engine
error is never "allow". PostToolUse events are recorded (kind "hook_result": the size and digest of what
the tool returned, never its content).

The gateway's own MCP tools (``mcp__gateway__*``: the server is named ``gateway`` in .mcp.json, or as gateway.yaml's
``claude_code.mcp_servers`` says) are judged when their tools/call arrives, not here: their PreToolUse event gets
no decision, unrecorded, and only says which Claude Code session the MCP call belongs to
(gateway/session_joins.py), so both channels share one trace.

    echo '{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"cwd":"/repo"}' \\
        | gateway --config /repo/gateway.yaml hook claude-code --role worker
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gateway.errors import GatewayError, InvalidRequest, UnknownTool
from gateway.types import JSONObject, Principal

if TYPE_CHECKING:  # the command hook imports the runtime only once it has input to judge
    from gateway.config import GatewayConfig
    from gateway.judge.call import Call
    from gateway.judge.pipeline import Pipeline
    from gateway.origin import Transport

EVENTS = frozenset({"PreToolUse", "PostToolUse"})
MAX_TOOL_NAME = 200
# Claude Code tools the gateway knows but cannot describe (and every MCP tool): tier 3, a person decides
UNANALYSED = frozenset({"WebFetch", "WebSearch", "Task", "Agent"})


class Untranslatable(InvalidRequest):
    """A tool the hook cannot describe (WebFetch, another MCP server's tool): tier 3, so a person decides."""

    code = "hook_untranslatable"


def parse_event(raw: str | bytes) -> JSONObject:
    """Claude Code's hook input, checked for what the judge needs; anything else is an InvalidRequest."""
    try:
        event = json.loads(raw)
    except ValueError as exc:
        raise InvalidRequest(f"hook input is not JSON: {exc}") from None
    if not isinstance(event, dict):
        raise InvalidRequest("hook input is not a JSON object")
    if event.get("hook_event_name") not in EVENTS:
        raise InvalidRequest(f"'hook_event_name' must be one of {sorted(EVENTS)}")
    name = event.get("tool_name")
    if not isinstance(name, str) or not 0 < len(name) <= MAX_TOOL_NAME:
        raise InvalidRequest(f"'tool_name' is missing, not a string or longer than {MAX_TOOL_NAME} characters")
    if not isinstance(event.get("tool_input"), dict):
        raise InvalidRequest("'tool_input' is missing or not an object")
    return event


def workspace_path(value: Any, workspace: Path, cwd: Path, what: str) -> str:
    """A Claude Code path (absolute, or relative to its cwd) as the gateway's tools take it.

    Inside the workspace it becomes relative; outside it stays absolute, and the gateway refuses it.
    """
    if not isinstance(value, str) or not value:
        raise InvalidRequest(f"{what} is missing or not a string")
    resolved = Path(value) if os.path.isabs(value) else cwd / value
    try:
        return str(resolved.relative_to(workspace)) or "."
    except ValueError:
        return str(resolved)


def translate(tool_name: str, tool_input: JSONObject, workspace: Path, cwd: Path) -> tuple[str, JSONObject]:
    """The gateway tool and arguments with the same effects as a Claude Code built-in call."""

    def path(key: str, default: str | None = None) -> str:
        return workspace_path(tool_input.get(key, default), workspace, cwd, f"{tool_name}: {key!r}")

    if tool_name == "Bash":
        command = tool_input.get("command")
        if not isinstance(command, str):
            raise InvalidRequest("Bash: 'command' is missing or not a string")
        arguments: JSONObject = {"command": command}
        if cwd != workspace:
            arguments["cwd"] = workspace_path(str(cwd), workspace, workspace, "Bash: cwd")
        return "shell_run", arguments
    if tool_name == "Read":
        return "fs_read", {"path": path("file_path")}
    if tool_name == "Edit" and tool_input.get("old_string"):
        edit = {"old_string": str(tool_input["old_string"]), "new_string": str(tool_input.get("new_string", ""))}
        return "fs_edit", {"path": path("file_path"), **edit}
    if tool_name in ("Write", "Edit", "MultiEdit"):
        # MultiEdit, and an Edit that creates a file, have the effects of a write of the whole file
        return "fs_write", {"path": path("file_path"), "content": str(tool_input.get("content", ""))}
    if tool_name == "NotebookEdit":
        return "fs_write", {"path": path("notebook_path"), "content": ""}
    if tool_name == "Glob":
        # the pattern's literal leading directories are where the listing really starts: /etc/** lists /etc
        base = Path(path("path", str(cwd)))
        pattern = tool_input.get("pattern")
        literal = []
        for part in Path(pattern).parts if isinstance(pattern, str) else ():
            if any(c in part for c in "*?[{"):
                break
            literal.append(part)
        start = base.joinpath(*literal) if literal else base
        return "fs_list", {"path": workspace_path(str(start), workspace, workspace, "Glob: 'pattern'")}
    if tool_name == "Grep":
        pattern = tool_input.get("pattern")
        pattern = pattern if isinstance(pattern, str) and pattern else "."
        return "fs_search", {"pattern": pattern, "path": path("path", str(cwd))}
    if tool_name in UNANALYSED or tool_name.startswith("mcp__"):
        raise Untranslatable(f"the gateway cannot analyse Claude Code's {tool_name!r} tool: a person decides (tier 3)")
    raise UnknownTool(f"Claude Code has no tool named {tool_name!r} that the gateway knows")


def answer(decision: str, reason: str) -> JSONObject:
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": decision,
            "permissionDecisionReason": reason,
        }
    }


def hook_trace(task: JSONObject | None, session_id: Any) -> str | None:
    """The task's trace for a worker on a task, else one trace per Claude Code session."""
    from gateway.judge.situate import session_trace

    if task is not None:
        return str(task["trace_id"])
    return session_trace(f"claude-code:{session_id}") if isinstance(session_id, str) and session_id else None


def hook_call(transport: Transport, raw: str | bytes | None = None, token: str | None = None) -> Call:
    """A hook call (kind "hook") for Claude Code's hook input ``raw``, sent with ``token``; the hook's stack
    (gateway/judge/stacks.py) fills it in from the event."""
    from gateway.judge.call import Call, CallKind
    from gateway.origin import Origin

    origin = Origin(transport=transport, protocol_version="hook", token=token)
    return Call(tool="?", arguments={}, origin=origin, kind=CallKind.HOOK, detail={"client": "claude-code"}, event=raw)


def result_of(event: JSONObject) -> JSONObject:
    """What a PostToolUse event says the tool returned: its size and digest, never its content."""
    from gateway.digests import digest

    response = event.get("tool_response")
    size = len(json.dumps(response, default=str).encode())
    return {
        "client": "claude-code",
        "claude_tool": event["tool_name"],
        "tool_use_id": str(event.get("tool_use_id", ""))[:200],
        "response_bytes": size,
        "response_digest": digest(response),
    }


def answer_for(call: Call) -> JSONObject:
    """Claude Code's hook output for a judged call: allow only what the judge allowed."""
    from gateway.judge.approval import not_used_note
    from gateway.judge.call import CallKind, verdict

    if call.kind == CallKind.HOOK_JOIN:
        # no decision at all: Claude Code's own permissions still apply to the tool (a server the client calls
        # "gateway" is whatever its config says, so the hook vouches for nothing); the MCP call is judged
        return {}
    decision = verdict(call)
    reasons, rules, tier = (decision.reasons, decision.rules, decision.tier) if decision else ([], [], None)
    said = f"gateway policy (tier {tier}, {', '.join(rules)}): {'; '.join(reasons) or 'no reason given'}"
    approval = call.detail.get("approval") or {}
    if call.outcome == "allowed":
        checkpoint = (call.safeguard or {}).get("id")
        saved = f" (checkpoint {checkpoint}: gateway rollback undoes it)" if checkpoint else ""
        approved = f" (approved by a person: {approval['id']})" if approval.get("answer") == "approved" else ""
        return answer("allow", f"{said}{approved}{saved}")
    if call.outcome == "asked":
        ident = approval.get("id")
        return answer(
            "deny",
            f"{said}. NOT RUN: it needs a person's approval ({ident}, pending).{not_used_note(call)} Next step: a "
            f"person runs 'gateway approvals approve {ident}' (or uses /ui/approvals); then retry exactly the same "
            "call.",
        )
    return answer("deny", said)


def decide(config: GatewayConfig, raw: str, role: str, agent: str) -> JSONObject:
    """The command hook: answer one hook input (the JSON Claude Code writes to the hook's stdin), judged in
    this process as GATEWAY_TOKEN's principal, or as ``role`` and ``agent`` without one."""
    import anyio

    from gateway.runtime import Gateway

    gateway = Gateway(config, isolated=False)  # one decision: in this process
    token = os.environ.get("GATEWAY_TOKEN")
    return answer_for(anyio.run(judge_command_hook, gateway.stacks.hook, raw, token, role, agent))


async def judge_command_hook(hook: Pipeline, raw: str | bytes, token: str | None, role: str, agent: str) -> Call:
    """The command hook's event judged by the ``hook`` stack: as ``token``'s principal when there is one
    (verified: a bad one is refused), else as the ``--role`` and ``--agent`` it was given."""
    call = hook_call("inprocess", raw, token=token or None)
    call.principal = Principal(agent=agent, role=role)
    return await hook.run(call)


def decide_or_deny(load: Callable[[], GatewayConfig], raw: str, role: str, agent: str) -> JSONObject:
    """``decide``, and a deny when anything at all goes wrong (a locked store, a missing config, a bug).

    Claude Code blocks a call only on a "deny" it can read (or exit code 2); a traceback and exit 1 would
    let the call through, so every failure is answered here.
    """
    try:
        return decide(load(), raw, role=role, agent=agent)
    except Exception as exc:
        return could_not_decide(exc)


def could_not_decide(exc: Exception) -> JSONObject:
    """The deny for a hook call the gateway failed to judge (here, or when a running gateway answers the
    command hook): Claude Code must read a deny, whatever broke."""
    message = exc.message if isinstance(exc, GatewayError) else f"{type(exc).__name__}: {str(exc)[:200]}"
    return answer("deny", f"the gateway could not decide, so the call is refused: {message}")
