"""``gateway hook claude-code``: Claude Code's PreToolUse hook, answered by the gateway's own policy.

For teams that keep Claude Code's built-in tools (Bash, Read, Write, Edit, ...) instead of routing all work
through the gateway's MCP tools. Each built-in call is translated to the gateway tool with the same effects
(Bash -> shell_run, Edit -> fs_edit, ...), described and decided exactly as ``gateway check`` would, recorded
in the ledger (kind "hook"), and answered in Claude Code's vocabulary, which is also the policy's:

    allow  the policy allows it (tier 1 or 2)
    ask    tier 3: Claude Code asks the person at the keyboard
    deny   the policy denies it; the reason is shown to the model

Fail closed: unreadable input, a tool the hook cannot translate, a bad GATEWAY_TOKEN or an engine error is
never "allow". A tier-2 "allow" takes its checkpoint before answering, so ``gateway rollback`` undoes what
Claude Code then does.

    echo '{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"cwd":"/repo"}' \\
        | gateway --config /repo/gateway.yaml hook claude-code --role worker
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

from gateway.config import GatewayConfig
from gateway.errors import GatewayError, InvalidRequest
from gateway.types import JSONObject, Principal

# Claude Code's vocabulary is the policy's own; anything else is answered "deny".
ANSWERS = frozenset({"allow", "ask", "deny"})


class Untranslatable(InvalidRequest):
    """A tool the hook cannot describe (WebFetch, another MCP server's tool): tier 3, so a person decides."""

    code = "hook_untranslatable"


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
    raise Untranslatable(f"the gateway cannot analyse Claude Code's {tool_name!r} tool: a person decides (tier 3)")


def answer(decision: str, reason: str) -> JSONObject:
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": decision,
            "permissionDecisionReason": reason,
        }
    }


def principal_for(gateway: Any, role: str, agent: str) -> Principal:
    """The token in GATEWAY_TOKEN when there is one (verified: a bad one is refused), else the --role given."""
    token = os.environ.get("GATEWAY_TOKEN")
    if token:
        return gateway.tokens.verify(token)  # type: ignore[no-any-return]
    return Principal(agent=agent, role=role)


def hook_trace(task: JSONObject | None, session_id: Any) -> str | None:
    """The task's trace for a worker on a task, else one trace per Claude Code session."""
    from gateway.runtime import session_trace

    if task is not None:
        return str(task["trace_id"])
    return session_trace(f"claude-code:{session_id}") if isinstance(session_id, str) and session_id else None


def working_root(gateway: Any, task: JSONObject | None) -> Path:
    workspace = gateway.board.workspace(task) if task else None
    return Path(workspace.root) if workspace else Path(gateway.config.workspace)


def decide(config: GatewayConfig, raw: str, role: str, agent: str) -> JSONObject:
    """Answer one PreToolUse hook input (the JSON Claude Code writes to the hook's stdin).

    The call is judged by the gateway's own stages (the same as a tools/call and ``gateway check``) and
    recorded by them: a ledger row of kind "hook" and a decision log entry. A tier-2 "allow" takes its
    checkpoint before answering, since Claude Code runs the tool right after."""
    from gateway.pipeline import Call
    from gateway.runtime import Gateway, decision_report
    from gateway.types import Decision, Origin

    gateway = Gateway(config, isolated=False)  # one decision: in this process
    call = Call(tool="?", arguments={}, origin=Origin(transport="inprocess", protocol_version="hook"), kind="hook")
    call.detail = {"client": "claude-code"}
    try:
        event = json.loads(raw)
        if not isinstance(event, dict) or not isinstance(event.get("tool_input"), dict):
            raise InvalidRequest("hook input is not a PreToolUse event with a tool_input object")
        call.tool = call.detail["claude_tool"] = str(event.get("tool_name"))
        call.principal = principal_for(gateway, role, agent)
        task = gateway.board.task_for(call.principal)
        call.trace_id = hook_trace(task, event.get("session_id")) or call.trace_id
        # Paths are judged where the gateway would act: a worker's task worktree, else the workspace. Claude
        # Code working anywhere else (the main checkout, say) is then outside, and refused.
        root = working_root(gateway, task)
        cwd = Path(event["cwd"]) if isinstance(event.get("cwd"), str) else root
        call.tool, call.arguments = translate(call.tool, event["tool_input"], root, cwd)
    except (GatewayError, ValueError) as exc:
        error = exc if isinstance(exc, GatewayError) else InvalidRequest(f"hook input is not JSON: {exc}")
        call.stop(error)
        if isinstance(exc, Untranslatable):  # cannot be analysed: a person decides, in Claude Code
            call.decision = Decision(action="ask", tier=3, reasons=[error.message], rules=[f"gateway.{error.code}"])
            call.outcome = "asked"
        anyio.run(gateway.hook_judge.finish, call)
    else:
        anyio.run(gateway.hook_judge.run, call)
    checked = decision_report(call)
    decision = str(checked.get("action"))
    decision = decision if decision in ANSWERS else "deny"
    reason = "; ".join(checked.get("reasons") or []) or f"policy: {decision}"
    rules = ", ".join(checked.get("rules") or [])
    checkpoint = (call.safeguard or {}).get("id")
    saved = f" (checkpoint {checkpoint}: gateway rollback undoes it)" if checkpoint else ""
    return answer(decision, f"gateway policy (tier {checked.get('tier')}, {rules}): {reason}{saved}")


def decide_or_deny(load: Callable[[], GatewayConfig], raw: str, role: str, agent: str) -> JSONObject:
    """``decide``, and a deny when anything at all goes wrong (a locked store, a missing config, a bug).

    Claude Code blocks a call only on a "deny" it can read (or exit code 2); a traceback and exit 1 would
    let the call through, so every failure is answered here.
    """
    try:
        return decide(load(), raw, role=role, agent=agent)
    except Exception as exc:
        message = exc.message if isinstance(exc, GatewayError) else f"{type(exc).__name__}: {str(exc)[:200]}"
        return answer("deny", f"the gateway could not decide, so the call is refused: {message}")
