"""Scope: which of a task's files lie outside its globs (its allowed paths, its acceptance files), asked of
the policy (``gateway.scope.violations``, policies/scope.rego) and recorded like every call (kind "scope").
A scope that cannot be checked (an engine error, an undefined answer) is ScopeUnchecked: every caller fails
closed on it (a manifest is refused, a report's files are quarantined).

    outside = await ask_scope(stacks.scope, ScopeQuestion("allowed_paths", ["src/**"], files, by="w1", ...))
"""

from __future__ import annotations

from dataclasses import dataclass

from gateway.errors import ToolFailed
from gateway.judge.call import Call, CallKind
from gateway.judge.pipeline import Pipeline
from gateway.origin import Origin
from gateway.policy.engine import PolicyEngine
from gateway.types import Principal

__all__ = ["SCOPE_RULE", "Scope", "ScopeQuestion", "ScopeUnchecked", "ask_scope"]

SCOPE_RULE = "gateway.scope.violations"
LISTED = 100  # files outside named in the ledger row (its count is always there)


class ScopeUnchecked(ToolFailed):
    """The policy could not say which files lie outside a scope: nothing may be taken as inside it."""

    code = "scope_unchecked"


@dataclass(frozen=True)
class ScopeQuestion:
    """Which of ``files`` match none of ``globs``. ``what`` names the question (allowed_paths, acceptance,
    manifest: a manifest's allowed paths against paths that any real scope leaves out); ``by`` who asks
    (the caller's principal, or a person at the command line)."""

    what: str
    globs: list[str]
    files: list[str]
    by: Principal | str
    task_id: str | None = None
    trace_id: str | None = None


class Scope:
    """The scope stack's stage: the policy's answer, as ``call.answer``; ScopeUnchecked when it has none."""

    def __init__(self, engine: PolicyEngine) -> None:
        self.engine = engine

    async def __call__(self, call: Call) -> None:
        query = {"allowed_paths": call.arguments["globs"], "files": call.arguments["files"]}
        try:
            found = await self.engine.query(SCOPE_RULE, query)
        except Exception as exc:  # fail closed: an unanswered scope check leaves nothing inside the scope
            raise ScopeUnchecked(f"the scope check failed: {str(exc)[:200]}") from None
        if not isinstance(found, list):
            raise ScopeUnchecked(f"the scope check gave no answer: {SCOPE_RULE} is undefined")
        call.answer = [str(f) for f in found]
        call.detail["outside"] = call.answer[:LISTED]
        call.detail["outside_count"] = len(call.answer)
        call.outcome = "ok"


async def ask_scope(stack: Pipeline, question: ScopeQuestion) -> list[str]:
    """The files of ``question`` outside its globs, asked through the scope stack (and so recorded);
    ScopeUnchecked when the policy could not say."""
    call = Call(
        tool=f"scope.{question.what}",
        arguments={"globs": question.globs, "files": question.files},
        origin=Origin(transport="inprocess", protocol_version="scope"),
        kind=CallKind.SCOPE,
        principal=question.by if isinstance(question.by, Principal) else None,
        detail={"task_id": question.task_id} | ({"by": question.by} if isinstance(question.by, str) else {}),
    )
    if question.trace_id:
        call.trace_id = question.trace_id
    done = await stack.run(call)
    if done.error is not None:
        raise done.error if isinstance(done.error, ScopeUnchecked) else ScopeUnchecked(done.error.message)
    assert done.answer is not None
    return done.answer
