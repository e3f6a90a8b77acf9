"""Information-flow labels of a session, kept in the store: what the agent has read, as two labels that only rise.

    integrity        "trusted" until the session receives untrusted content (a network fetch, an upstream tool
                     or resource gateway.yaml does not declare trusted, a file the session itself downloaded or
                     decoded, Claude Code's WebFetch or WebSearch), then "untrusted"
    confidentiality  "public" until it reads what the secrets policy recognises or a file outside the
                     workspace, then "confidential"

A session is the task a call is judged against (workers share their task's labels; a new task starts clean),
else the caller's credential (its jti), else the agent a command hook named. Each label keeps its sources (what
raised it, by which call), which the policy names in its reasons (``input.flow``). Only a person lowers them
(``gateway flow lower``, /ui/flow), recorded in the ledger; no tool, argument or ``_meta`` can.

    labels = FlowLabels(store, ledger)
    flow = labels.read("task:T1")            # Flow(integrity=..., confidentiality=..., sources=..., files=...)
    labels.raise_("task:T1", [Source(...)], files=["dl.sh"])
    labels.lower("task:T1", by="alice", reason="reviewed the page")
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from gateway.errors import Denied, InvalidRequest
from gateway.ledger.chain import Ledger, utc_now
from gateway.store import Store
from gateway.store.repositories import labels
from gateway.types import JSONObject, Principal

__all__ = [
    "FLOW_META",
    "MAX_FILES",
    "MAX_SOURCES",
    "Flow",
    "FlowLabels",
    "ForgedLabels",
    "Source",
    "forged_labels",
    "session_of",
]

GATEWAY_META_PREFIX = "io.github.mcp-policy-gateway/"
FLOW_META = GATEWAY_META_PREFIX + "flow"  # a result's labels, as the agent sees them (_meta)
MAX_SOURCES = 20  # per label: the first ones raised it; later ones add nothing the policy needs
MAX_FILES = 200  # files the session downloaded or decoded, re-labelled when read again

Label = Literal["untrusted", "confidential"]


class ForgedLabels(Denied):
    """A request that carries flow labels of its own: labels are the gateway's to set, never the caller's."""

    code = "forged_labels"


@dataclass(frozen=True)
class Source:
    """What raised a label: ``what`` names it for people and the policy (``WebFetch https://x``, ``upstream:web``)."""

    label: Label
    what: str
    tool: str
    call_id: str

    def as_dict(self) -> JSONObject:
        return {"label": self.label, "what": self.what, "tool": self.tool, "call_id": self.call_id}


@dataclass
class Flow:
    """A session's labels and their sources, as ``input.flow`` carries them."""

    session: str
    sources: list[JSONObject] = field(default_factory=list)
    files: list[str] = field(default_factory=list)  # workspace paths the session downloaded or decoded

    @property
    def integrity(self) -> str:
        return "untrusted" if any(s["label"] == "untrusted" for s in self.sources) else "trusted"

    @property
    def confidentiality(self) -> str:
        return "confidential" if any(s["label"] == "confidential" for s in self.sources) else "public"

    def as_input(self) -> JSONObject:
        return {
            "session": self.session,
            "integrity": self.integrity,
            "confidentiality": self.confidentiality,
            "untrusted": [s for s in self.sources if s["label"] == "untrusted"],
            "confidential": [s for s in self.sources if s["label"] == "confidential"],
        }

    def summary(self) -> JSONObject:
        """What the agent is told (a result's ``_meta``): the labels, not the sources' details."""
        return {"session": self.session, "integrity": self.integrity, "confidentiality": self.confidentiality}


def session_of(principal: Principal, task: JSONObject | None) -> str:
    """The session a call's labels belong to: its task's, else its credential's, else its agent's."""
    if task is not None and task.get("id"):
        return f"task:{task['id']}"
    if principal.jti:
        return f"token:{principal.jti}"
    return f"agent:{principal.role}/{principal.agent}"


def forged_labels(arguments: JSONObject, meta: JSONObject | None) -> list[str]:
    """The keys by which a request claims labels of its own: the gateway's ``_meta`` namespace in its ``_meta``
    or its arguments (at the top or in an argument's ``_meta``)."""
    found = [k for k in (meta or {}) if k.startswith(GATEWAY_META_PREFIX)]
    found += [k for k in arguments if k.startswith(GATEWAY_META_PREFIX)]
    inner = arguments.get("_meta")
    if isinstance(inner, dict):
        found += [f"_meta.{k}" for k in inner if isinstance(k, str) and k.startswith(GATEWAY_META_PREFIX)]
    return found


class FlowLabels:
    """The store's ``flow_labels`` table: one row per labelled session (a clean session has none)."""

    def __init__(self, store: Store, ledger: Ledger | None = None) -> None:
        self.store = store
        self.ledger = ledger

    def read(self, session: str) -> Flow:
        row = labels.labelled(self.store, session)
        return _flow(row) if row is not None else Flow(session)

    def raise_(self, session: str, sources: Sequence[Source], files: Iterable[str] = ()) -> Flow:
        """Add what a call's result brought; labels only rise. Answers the session's labels after it."""
        new_files = list(dict.fromkeys(files))
        with self.store.transaction() as tx:
            row = labels.labelled_in(tx, session)
            flow = _flow(row) if row is not None else Flow(session)
            before = (list(flow.sources), list(flow.files))
            known = {(s["label"], s["what"]) for s in flow.sources}
            for source in sources:
                per_label = sum(1 for s in flow.sources if s["label"] == source.label)
                if (source.label, source.what) not in known and per_label < MAX_SOURCES:
                    flow.sources.append(source.as_dict())
                    known.add((source.label, source.what))
            flow.files = list(dict.fromkeys([*flow.files, *new_files]))[-MAX_FILES:]
            if row is not None and before == (flow.sources, flow.files):
                return flow
            labels.write(tx, labels.Labelled(session, json.dumps(flow.sources), json.dumps(flow.files)), utc_now())
        return flow

    def lower(self, session: str, by: str, reason: str, label: Label | None = None) -> Flow:
        """A person lowers a session's labels (one, or both), recorded in the ledger in the same transaction.
        The files it downloaded stay marked: reading them again raises the label again."""
        if not by.strip() or not reason.strip():
            raise InvalidRequest("lowering labels needs who (--by) and why (--reason)")
        with self.store.transaction() as tx:
            row = labels.labelled_in(tx, session)
            if row is None:
                raise InvalidRequest(f"session {session!r} has no labels to lower")
            before = _flow(row)
            kept = [s for s in before.sources if label is not None and s["label"] != label]
            labels.lower(tx, session, json.dumps(kept), utc_now())
            if self.ledger is not None:
                self.ledger.append_in(
                    tx,
                    {
                        "kind": "flow_lowered",
                        "tool": "flow_lower",
                        "outcome": "ok",
                        "detail": {
                            "session": session,
                            "label": label or "all",
                            "by": by,
                            "reason": reason,
                            "before": before.summary(),
                            "lowered": [s for s in before.sources if s not in kept],
                        },
                    },
                )
        return Flow(session, kept, before.files)

    def sessions(self) -> list[Flow]:
        return [_flow(row) for row in labels.sessions(self.store)]


def _flow(row: labels.Labelled) -> Flow:
    return Flow(row.session, json.loads(row.sources), json.loads(row.files))
