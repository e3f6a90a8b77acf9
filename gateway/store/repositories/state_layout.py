"""The paths the store records under the worktrees directory, moved with it (``gateway migrate``)."""

from __future__ import annotations

from gateway.store.interface import Transaction

__all__ = ["move_worktrees"]


def move_worktrees(tx: Transaction, old: str, new: str) -> None:
    """Every task's worktree and checkpoint's workspace under ``old`` now under ``new``."""
    for table, column in (("tasks", "worktree"), ("checkpoints", "workspace")):
        tx.execute(
            f"UPDATE {table} SET {column} = ? || substr({column}, ?) WHERE {column} LIKE ? || '%'",
            (new, len(old) + 1, old),
        )
