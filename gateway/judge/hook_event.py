"""Read hook event: the first stage of the Claude Code hook's stack (gateway/hook.py). Claude Code's hook input
becomes a call of the gateway tool with the same effects, as the caller's principal, in its task's trace."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from gateway.effects.paths import Workspace
from gateway.hook import Untranslatable, hook_trace, parse_event, result_of, translate
from gateway.judge.authenticate import Authenticate, Verifier
from gateway.judge.call import Call, CallKind, Stage
from gateway.session_joins import MCP_TOOL, SessionJoins, hooked_name
from gateway.tasks.board import TaskBoard
from gateway.tools.catalog import Catalog
from gateway.types import Decision

__all__ = ["ReadHookEvent", "UnlessDecided"]


class ReadHookEvent:
    """Reads ``call.event``: the event is checked (anything malformed is an InvalidRequest), the caller
    authenticated (its token, or the role the command hook was given), and the Claude Code tool translated
    (Bash -> shell_run, Edit -> fs_edit, ...) with its paths where the gateway would act: a worker's task
    worktree, else the workspace, so Claude Code working anywhere else is outside and refused. A tool the
    gateway cannot describe arrives decided: a person decides (tier 3). A PostToolUse event is settled here:
    recorded (kind "hook_result": the size and digest of what the tool returned), never judged. So is a
    PreToolUse of one of the gateway's own MCP tools (kind "hook_join"): no decision given, unrecorded. For a
    verified credential, the tool_use_id of any MCP tool's PreToolUse is remembered in the store with the session's
    trace, for the MCP call to join wherever it arrives (another server's tool is still judged: held for a person)."""

    def __init__(
        self,
        tokens: Verifier,
        board: TaskBoard,
        workspace: Workspace,
        joins: SessionJoins,
        catalog: Catalog,
        servers: Sequence[str],
    ) -> None:
        self.authenticate = Authenticate(tokens, declared=True)
        self.board = board
        self.workspace = workspace
        self.joins = joins
        # the gateway's own tools, as Claude Code names them: mcp__<the name its config gives the gateway>__<tool>
        self.catalog = catalog
        self.own_prefixes = tuple(f"{MCP_TOOL}{server}__" for server in servers)

    async def __call__(self, call: Call) -> None:
        assert call.event is not None
        event = parse_event(call.event)
        call.tool = call.detail["claude_tool"] = event["tool_name"]
        if isinstance(event.get("tool_use_id"), str):
            call.detail["tool_use_id"] = event["tool_use_id"][:200]
        await self.authenticate(call)
        assert call.principal is not None
        task = self.board.task_for(call.principal)
        call.task = self.board.policy_section(task) if task else None  # whose labels: the task's (situate agrees)
        hooked_trace = hook_trace(task, event.get("session_id"))
        call.trace_id = hooked_trace or call.trace_id
        pre = event["hook_event_name"] == "PreToolUse"
        # an MCP server's tool, whatever Claude Code calls the server: if its call reaches a gateway on this store,
        # it joins the session; only a verified credential's word joins (the command hook's --agent is anyone's)
        tool_use_id = call.detail.get("tool_use_id")
        if pre and call.tool.startswith(MCP_TOOL) and hooked_trace and call.origin.token is not None and tool_use_id:
            self.joins.remember(tool_use_id, call.principal, call.tool, hooked_trace)
        if pre and self._own(call.tool):
            call.kind, call.outcome = CallKind.HOOK_JOIN, "allowed"
            return
        worktree = self.board.workspace(task) if task else None
        root = (worktree or self.workspace).root
        cwd = Path(event["cwd"]) if isinstance(event.get("cwd"), str) else root
        try:
            call.tool, call.arguments = translate(call.tool, event["tool_input"], root, cwd)
        except Untranslatable as exc:
            if event["hook_event_name"] == "PreToolUse":  # a person decides: held for approval by HookVerdict
                call.arguments = event["tool_input"]
                call.detail["untranslatable"] = exc.message
                call.decision = Decision(action="ask", tier=3, reasons=[exc.message], rules=[f"gateway.{exc.code}"])
                return
        if event["hook_event_name"] == "PostToolUse":
            call.kind = CallKind.HOOK_RESULT
            call.detail = result_of(event)
            call.outcome = "ok"

    def _own(self, tool: str) -> bool:
        """Whether Claude Code's name is one of the gateway's own tools: mcp__<a name gateway.yaml gives the
        gateway>__<a tool it serves, as Claude Code spells it>. A server someone named "gateway__x" in Claude
        Code's config has tools mcp__gateway__x__*: they name no tool of the gateway's, and are held as any other."""
        prefix = next((p for p in self.own_prefixes if tool.startswith(p)), None)
        if prefix is None:
            return False
        rest = "__" + tool[len(prefix) :]
        return any(hooked_name(spec.name) == rest for spec in self.catalog.all())


class UnlessDecided:
    """The stages that describe and decide a call, skipped for a call that arrives decided (a hook event the
    gateway cannot translate: a person decides, with no description to judge)."""

    def __init__(self, stages: Sequence[Stage]) -> None:
        self.stages = list(stages)

    async def __call__(self, call: Call) -> None:
        if call.decision is not None:
            return
        for stage in self.stages:
            await stage(call)
