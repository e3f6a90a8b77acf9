"""The in-toto Statement (v1) of a merge: what the gateway attests about a commit it publishes.

The subject is the merge commit and its tree (digests ``gitCommit`` and ``gitTree``); the predicate
(``PREDICATE_TYPE``) says how the work got there, from the store's own records: the task's manifest version
and its digest, the policy revision in force, the pinned upstream definitions, each step's agent, role and
credential id (claim, report, verification red and green with output digests, approval, commit), the tier-3
approvals of the task's calls with who approved them, and the ledger head before the attestation's own row.
The gateway is the builder; no agent writes any of it.
"""

from __future__ import annotations

import json
from typing import Any

from gateway import __version__
from gateway.digests import digest
from gateway.store import Transaction
from gateway.store.repositories import approvals, ledger
from gateway.types import JSONObject, Principal

__all__ = ["PREDICATE_TYPE", "STATEMENT_TYPE", "merge_predicate", "merge_statement"]

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://mcp-policy-gateway.dev/attestations/merge/v1"
BUILDER = "https://mcp-policy-gateway.dev/gateway"
# the protocol's steps, by the tool whose successful call took each (the task's trace has them)
STEP_TOOLS = {
    "task_claim": "claim",
    "task_report": "report",
    "verify_run": "verification",
    "intent_approve": "approval",
}


def merge_statement(commit: str, tree: str, predicate: JSONObject) -> JSONObject:
    return {
        "_type": STATEMENT_TYPE,
        "subject": [
            {"name": "commit", "digest": {"gitCommit": commit}},
            {"name": "tree", "digest": {"gitTree": tree}},
        ],
        "predicateType": PREDICATE_TYPE,
        "predicate": predicate,
    }


def merge_predicate(
    tx: Transaction,
    *,
    intent: JSONObject,
    task: JSONObject,
    committer: Principal,
    base: str,
    ref: str,
    policy_revision: str,
    pins: list[JSONObject],
    lockfile_digest: str | None,
) -> JSONObject:
    """What the merge of ``intent`` attests, read inside the transaction that records the attestation (so the
    ledger head it names is the row just before the attestation's own)."""
    head = ledger.head_in(tx)
    steps = _steps(tx, task)
    steps.append({"step": "commit", **_who(committer.model_dump()), "intent": intent["id"]})
    return {
        "builder": {"id": BUILDER, "version": __version__},
        "intent": {"id": intent["id"], "action": intent["action"], "attempt": intent.get("attempt")},
        "task": {
            "id": task["id"],
            "attempt": task["attempt"],
            "manifest": {"version": task.get("manifest_version", 1), "digest": digest(task["manifest"])},
            "base": {"ref": ref, "commit": base},
            "verified_commit": task["verification"]["commit"],
        },
        "policy": {"revision": policy_revision},
        "upstreams": {
            "lockfile": lockfile_digest,
            "pins": [{k: p[k] for k in ("upstream", "kind", "name", "digest", "fingerprint") if k in p} for p in pins],
        },
        "steps": steps,
        "approvals": _approvals(tx, task["trace_id"]),
        "ledger": {"seq": head.seq, "hash": head.hash} if head is not None else None,
    }


def _who(principal: JSONObject | None) -> JSONObject:
    principal = principal or {}
    return {"agent": principal.get("agent"), "role": principal.get("role"), "credential": principal.get("jti")}


def _steps(tx: Transaction, task: JSONObject) -> list[JSONObject]:
    """The last successful call of each protocol step in the task's trace, with the verification's red and
    green runs (their exit codes and output digests, as the task board recorded them)."""
    last: dict[str, JSONObject] = {}
    for text in ledger.calls_in_trace(tx, task["trace_id"]):
        body = json.loads(text)
        if body.get("tool") in STEP_TOOLS and body.get("outcome") == "ok":
            last[STEP_TOOLS[body["tool"]]] = body
    steps: list[JSONObject] = []
    for name in ("claim", "report"):
        if name in last:
            steps.append({"step": name, **_who(last[name].get("principal")), "call": last[name].get("call_id")})
    verifier = _who((last.get("verification") or {}).get("principal"))
    red, green = task.get("red"), task["verification"]
    if red:
        steps.append(
            {
                "step": "verification.red",
                **verifier,
                "commit": red.get("base"),
                "exit_codes": red.get("exit_codes"),
                "output_digests": red.get("output_digests"),
            }
        )
    else:
        steps.append({"step": "verification.red", "skipped": task["manifest"].get("no_red_phase")})
    steps.append(
        {
            "step": "verification.green",
            **verifier,
            "commit": green.get("commit"),
            "exit_codes": green.get("exit_codes"),
            "output_digests": green.get("output_digests"),
        }
    )
    if "approval" in last:
        steps.append(
            {"step": "approval", **_who(last["approval"].get("principal")), "call": last["approval"].get("call_id")}
        )
    return steps


def _approvals(tx: Transaction, trace_id: str) -> list[JSONObject]:
    """Tier-3 approvals people gave to calls in the task's trace: what was approved and by whom."""
    found: list[JSONObject] = []
    for row in approvals.granted(tx):
        request: dict[str, Any] = json.loads(row.request)
        if request.get("trace_id") != trace_id:
            continue
        found.append(
            {
                "id": row.id,
                "tool": row.tool,
                "arguments_digest": row.arguments_digest,
                "approved_by": row.settled_by,
                "approved_at": row.settled_at,
                "state": row.state,
            }
        )
    return found
