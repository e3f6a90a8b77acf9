"""Export of what the calls page shows: JSON lines in the decision log's shape, or CSV.

Each call becomes one entry shaped like a decision log entry (gateway/decision_log.py, OPA's decision logs):
the policy's result, the call's input (who, which tool, its arguments as recorded and its effects), its trace
and call ids, and how it ended. Everything passes ``redact``, the one masking the page uses, and ``masked`` lists
the JSON pointers it masked. CSV cells that a spreadsheet would run as a formula are quoted with a leading ``'``
(agents choose their arguments).

    entries = [decision_entry(call, labels) for call in page.calls]
    body = as_jsonl(entries)          # one entry a line
    body = as_csv(entries)            # a header, then one row a call

``decision_id`` is the decision log's id of the call's decision (null when the gateway stopped the call before
the policy was asked); ``input`` holds the call's fields, not the whole policy input document, which stays in
``decisions.jsonl``.
"""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from gateway.decision_log import DECISION_PATH, redact
from gateway.traces import CallView
from gateway.types import JSONObject

CSV_COLUMNS = (
    "timestamp",
    "call_id",
    "trace_id",
    "agent",
    "role",
    "task",
    "tool",
    "outcome",
    "action",
    "tier",
    "rules",
    "reasons",
    "arguments",
    "arguments_digest",
    "approval",
    "decision_id",
)
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def decision_entry(call: CallView, labels: JSONObject) -> JSONObject:
    """One call as a decision-log-shaped entry, masked."""
    principal = call.principal or {}
    entry: JSONObject = {
        "decision_id": call.decision_id,
        "timestamp": call.time.replace("+00:00", "Z"),
        "path": DECISION_PATH,
        "input": {
            "principal": {"agent": principal.get("agent"), "role": principal.get("role"), "task": call.task},
            "tool": call.tool,
            "arguments": call.arguments,
            "arguments_digest": call.arguments_digest,
            "effects": call.effects,
        },
        "result": {
            "action": call.action,
            "tier": call.tier,
            "reasons": call.reasons,
            "rules": call.rules,
            "decided_by": call.decided_by,
        },
        "outcome": call.outcome,
        "dry_run": call.dry_run,  # gateway check: decided, never run (exported only when the view shows them)
        "error": call.error,
        "approval": {**call.approval, "state": call.approval_state} if call.approval else None,
        "labels": labels,
        "trace_id": call.trace_id,
        "span_id": call.span_id,
        "call_id": call.call_id,
    }
    masked_entry, masked = redact(entry)
    if masked:
        masked_entry["masked"] = masked
    return masked_entry


def as_jsonl(entries: list[JSONObject]) -> str:
    return "".join(json.dumps(e, ensure_ascii=False, separators=(",", ":"), default=str) + "\n" for e in entries)


def as_csv(entries: list[JSONObject]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(CSV_COLUMNS)
    for e in entries:
        principal, result = e["input"]["principal"], e["result"]
        approval = e["approval"] or {}
        row = (
            e["timestamp"],
            e["call_id"],
            e["trace_id"],
            principal["agent"],
            principal["role"],
            principal["task"],
            e["input"]["tool"],
            e["outcome"],
            result["action"],
            result["tier"],
            " ".join(result["rules"]),
            " | ".join(result["reasons"]),
            json.dumps(e["input"]["arguments"], ensure_ascii=False) if e["input"]["arguments"] is not None else "",
            e["input"]["arguments_digest"],
            f"{approval.get('id')} {approval.get('answer')}" if approval else "",
            e["decision_id"],
        )
        writer.writerow([_cell(v) for v in row])
    return out.getvalue()


def _cell(value: Any) -> str:
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(FORMULA_START) else text
