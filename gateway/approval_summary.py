"""A pending approval in a few words, as a person triages it: the command the call runs and why it asks.

The approvals table (/ui/approvals) and `gateway approvals list` show these beside the agent, the channel and
where the call runs, so a reviewer reads what would run, not a digest. Both are masked (``clean``: credential-
looking values become ***) and cut to a line.

    command_of(approval)   # "rm -rf build/"  (a command's text), else the arguments as compact JSON
    reason_of(approval)    # "tiers.recursive_delete: deletes recursively: build/"  (each rule with its reason)
"""

from __future__ import annotations

from typing import Any

from gateway.traces import clean
from gateway.types import JSONObject

__all__ = ["command_of", "reason_of"]


def command_of(approval: JSONObject, limit: int = 300) -> str:
    """What the call would run: its ``command`` argument (shell_run, Claude Code's Bash), else its arguments."""
    arguments: Any = (approval.get("request") or {}).get("arguments")
    if not isinstance(arguments, dict):
        return "(arguments not stored)"
    command = arguments.get("command")
    if isinstance(command, str):
        return clean(command, limit)
    return clean(arguments, limit)


def reason_of(approval: JSONObject, limit: int = 300) -> str:
    """Why the call waits for a person: each rule of its decision with that rule's reason."""
    decision = (approval.get("request") or {}).get("decision") or {}
    rules, reasons = list(decision.get("rules") or []), list(decision.get("reasons") or [])
    pairs = [f"{rule}: {reasons[i]}" if i < len(reasons) else str(rule) for i, rule in enumerate(rules)]
    return clean("; ".join(pairs + [str(r) for r in reasons[len(rules) :]]) or "-", limit)
