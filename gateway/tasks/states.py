"""Task, intent and approval states as enums, with the transitions each may make: an illegal move raises
instead of being written.

    check_move(TASK_MOVES, "task T1", TaskState.COMMITTED, TaskState.OPEN)   # raises IllegalTransition
"""

from __future__ import annotations

from enum import StrEnum

from gateway.errors import InvalidRequest


class TaskState(StrEnum):
    OPEN = "open"  # ready for a worker (once its dependencies are committed)
    CLAIMED = "claimed"  # one worker holds it, until its claim expires
    REPORTED = "reported"  # the worker's report was taken; its diff stayed in scope
    VERIFIED = "verified"  # red on the base, green on the task branch
    COMMITTED = "committed"  # merged into the base branch
    QUARANTINED = "quarantined"  # the diff left its scope, touched its acceptance files or a frozen interface
    BLOCKED = "blocked"  # out of attempts (or the check cannot grade it): a person or the planner acts
    ABANDONED = "abandoned"  # a person gave it up; its dependents are blocked


class IntentState(StrEnum):
    PROPOSED = "proposed"
    APPROVED = "approved"
    EXECUTING = "executing"
    COMMITTED = "committed"
    FAILED = "failed"
    COMPENSATED = "compensated"  # recorded by earlier versions (merged, then reverted); no longer produced


class ApprovalState(StrEnum):
    PENDING = "pending"  # waiting for a person
    APPROVED = "approved"  # a person said yes; the agent's retry of the same call takes it
    DENIED = "denied"  # a person said no; the retry takes the refusal
    EXPIRED = "expired"  # nobody answered within approvals.ttl_s
    USED = "used"  # an approval one call consumed: never again
    DENIED_USED = "denied-used"  # a refusal one call consumed


TASK_MOVES: dict[StrEnum, frozenset[StrEnum]] = {
    TaskState.OPEN: frozenset({TaskState.CLAIMED, TaskState.BLOCKED, TaskState.ABANDONED, TaskState.OPEN}),
    TaskState.CLAIMED: frozenset(
        {
            TaskState.CLAIMED,
            TaskState.REPORTED,
            TaskState.QUARANTINED,
            TaskState.OPEN,
            TaskState.BLOCKED,
            TaskState.ABANDONED,
        }
    ),
    TaskState.REPORTED: frozenset({TaskState.VERIFIED, TaskState.OPEN, TaskState.BLOCKED, TaskState.ABANDONED}),
    TaskState.VERIFIED: frozenset(
        {TaskState.VERIFIED, TaskState.COMMITTED, TaskState.OPEN, TaskState.BLOCKED, TaskState.ABANDONED}
    ),
    TaskState.COMMITTED: frozenset(),
    TaskState.QUARANTINED: frozenset({TaskState.OPEN, TaskState.ABANDONED}),
    TaskState.BLOCKED: frozenset({TaskState.BLOCKED, TaskState.OPEN, TaskState.ABANDONED}),
    TaskState.ABANDONED: frozenset(),
}

INTENT_MOVES: dict[StrEnum, frozenset[StrEnum]] = {
    IntentState.PROPOSED: frozenset({IntentState.APPROVED}),
    IntentState.APPROVED: frozenset({IntentState.APPROVED, IntentState.EXECUTING}),
    IntentState.EXECUTING: frozenset(
        {IntentState.COMMITTED, IntentState.FAILED, IntentState.APPROVED, IntentState.COMPENSATED}
    ),
    IntentState.COMMITTED: frozenset(),
    IntentState.FAILED: frozenset(),
    IntentState.COMPENSATED: frozenset(),
}


APPROVAL_MOVES: dict[StrEnum, frozenset[StrEnum]] = {
    ApprovalState.PENDING: frozenset({ApprovalState.APPROVED, ApprovalState.DENIED, ApprovalState.EXPIRED}),
    ApprovalState.APPROVED: frozenset({ApprovalState.USED}),
    ApprovalState.DENIED: frozenset({ApprovalState.DENIED_USED}),
    ApprovalState.EXPIRED: frozenset(),
    ApprovalState.USED: frozenset(),
    ApprovalState.DENIED_USED: frozenset(),
}


class IllegalTransition(InvalidRequest):
    code = "illegal_transition"


def check_move(moves: dict[StrEnum, frozenset[StrEnum]], what: str, old: str, new: str) -> None:
    """Raise unless ``old -> new`` is in ``moves`` (both given as enum values or their strings)."""
    member = _member(moves, old)
    allowed = {str(state) for state in moves.get(member, frozenset())} if member is not None else set()
    if new not in allowed:
        raise IllegalTransition(f"{what} is {old}: it cannot become {new}")


def _member(moves: dict[StrEnum, frozenset[StrEnum]], value: str) -> StrEnum | None:
    return next((state for state in moves if state == value), None)
