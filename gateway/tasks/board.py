"""The task board: manifests, claims with a TTL, reports checked against the real diff, verification runs.

States: open -> claimed -> reported -> verified -> committed, with three exits: quarantined (the diff
left allowed_paths; never merged), blocked (max_attempts failed attempts; a blocker report instead of
another retry), and back to open after a failed attempt. Every transition is one transaction that also
appends its ledger event, so the state and its record never disagree.

    board = TaskBoard(db, ledger, scope, config, verification)   # scope: ask_scope on the judge's scope stack
    await board.submit(manifest, by="planner", trace_id=trace)
    claim = await board.claim("T1", principal)          # one owner at a time; a worktree on task/T1
    outcome = await board.report(record, principal)     # commits, diffs, quarantines on a scope violation
    result = await board.verify("T1", verifier, progress)

Its parts, one concern each: records.py (a task's row and ledger events), views.py (reading), planning.py
(submit, amend, requeue, abandon), claims.py, worktree_records.py, reports.py, verifying.py, attempts.py (how
an attempt fails or blocks), merges.py (what the merge ceremony records); the SQL is in
gateway/store/repositories/tasks.py.
"""

from __future__ import annotations

from gateway.tasks.merges import MergeOutcomes
from gateway.tasks.planning import Planning
from gateway.tasks.reports import Reports
from gateway.tasks.verifying import Verifying

__all__ = ["TaskBoard"]


class TaskBoard(Planning, Reports, Verifying, MergeOutcomes):
    """The whole board: each part adds the steps of its concern to the shared records."""
