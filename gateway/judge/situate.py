"""Situate: where a call happens. The task it is judged against and the intent it names (what the policy
sees as input.task and input.intent), its workspace (a worker's task worktree, or the workspace), its trace
(the task's, else the session's: the Claude Code session whose hook announced the call, else the MCP
session's) and the sandbox its commands will run in.

The task a call is judged against is the task it names: its ``task_id`` (or the task of the record or
manifest it hands off), or the task of the intent it names. A credential bound to another task is refused,
saying so: separation of duty (policies/duty.rego) judges the task the call acts on, whatever task its
token is bound to. A call that names no task is judged against the caller's: the one its token is bound to,
else the one it last claimed.

    situate = Situate(board, intents, workspace, confinements, joins)
    situate(call)          # call.workspace, call.task, call.intent, call.trace_id, call.confinement
"""

from __future__ import annotations

import hashlib

from gateway.commit.intents import Intents
from gateway.effects.paths import Workspace
from gateway.judge.call import Call, CallKind
from gateway.judge.confine import Confinements
from gateway.session_joins import TOOL_USE_META, SessionJoins
from gateway.tasks.board import TaskBoard
from gateway.tasks.records import bound_to
from gateway.tools.spec import GATEWAY
from gateway.types import JSONObject

__all__ = ["Situate", "named_task", "session_trace"]

INTENT_FACTS = ("id", "task_id", "action", "state", "proposed_by", "approved_by", "attempt")


def session_trace(session_id: str) -> str:
    """The trace of a session without a task: stable for the session, unlinkable to its id."""
    return hashlib.sha256(f"session:{session_id}".encode()).hexdigest()[:32]


def named_task(tool: str, arguments: JSONObject) -> str | None:
    """The task a call's arguments name: ``task_id``, or the task of the record or manifest it hands off."""
    for value in (arguments.get("task_id"), *(arguments.get(k) for k in ("record", "manifest"))):
        if isinstance(value, dict):
            value = value.get("task_id")
        if isinstance(value, str) and value:
            return value[:200]
    return None


class Situate:
    """Fills in where a call happens. Calls the gateway makes itself (verification commands) arrive with
    their workspace set."""

    def __init__(
        self,
        board: TaskBoard,
        intents: Intents,
        workspace: Workspace,
        confinements: Confinements,
        joins: SessionJoins,
    ) -> None:
        self.board = board
        self.intents = intents
        self.workspace = workspace
        self.confinements = confinements
        self.joins = joins

    def __call__(self, call: Call) -> None:
        if call.workspace is None:
            self._locate(call)
        # a hooked call runs in Claude Code, outside any sandbox of the gateway's: it has none to describe
        call.confinement = None if call.kind == CallKind.HOOK else self.confinements.for_call(call)

    def _locate(self, call: Call) -> None:
        assert call.principal is not None
        named = self._named(call)
        task = self.board.task_for(call.principal) if named is None else self.board.find(named)
        if call.kind == CallKind.CHECK:
            pass  # a dry run keeps a trace of its own: never one of the agent's real calls in its task's trace
        elif task is not None:
            call.trace_id = task["trace_id"]
        elif joined := self._joined(call):
            call.trace_id = joined
        elif call.origin.session_id:
            call.trace_id = session_trace(call.origin.session_id)
        if named is not None:
            bound_to(call.principal, named)  # refused in the trace of the task it named
        call.workspace = (self.board.workspace(task) if task else None) or self.workspace
        call.task = self.board.policy_section(task) if task else None

    def _joined(self, call: Call) -> str | None:
        """The trace of the Claude Code session whose hook announced this call (its _meta names the tool use),
        if the hook spoke for the same principal; the id is kept with the call either way."""
        tool_use = (call.origin.meta or {}).get(TOOL_USE_META)
        if call.kind != CallKind.CALL or not isinstance(tool_use, str):
            return None
        assert call.principal is not None
        call.detail["tool_use_id"] = tool_use[:200]
        return self.joins.trace_for(tool_use, call.principal, call.tool)

    def _named(self, call: Call) -> str | None:
        """The task a call of one of the gateway's own tools names (an upstream's ``task_id`` is its own
        business); the intent it names, as ``call.intent``."""
        if call.spec is None or call.spec.provider != GATEWAY:
            return None
        intent_ref = call.arguments.get("intent_id")
        if isinstance(intent_ref, str) and call.tool.startswith("intent_"):
            intent = self.intents.find(intent_ref)
            if intent is not None:
                call.intent = {k: intent[k] for k in INTENT_FACTS}
                if intent["action"] == "merge":  # the merge's shape: the policy holds a mass deletion
                    call.intent["diff"] = self.board.merge_shape(intent["task_id"])
                return str(intent["task_id"])
        return named_task(call.tool, call.arguments)
