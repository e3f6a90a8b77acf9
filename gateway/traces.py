"""Traces: the ledger read back as one story per task or session (``gateway trace``, the /ui review pages).

A trace is every ledger row that shares a trace id: a task's trace (ARCHITECTURE.md section 5: from the
manifest's submission to its merge commit) or a session's trace (calls outside any task). Tool calls come
first-class (the write-ahead "started" row and the final row joined by call id); task, intent, approval,
rollback, egress and dead-letter rows become steps, nested under the call that caused them when the ledger
shows which one did (a dead letter names its call: the refused handoff, or the replay that settled it).
Approval and rollback rows carry no trace id of their own: they are joined through the call they belong to
(approval request -> call id; settlement -> approval id; rollback -> the checkpoint a call took).

This module is the one read model: the CLI and the web pages only format what it answers.

    traces = Traces(gateway.db)
    for summary in traces.list(Filters(denied=True)):        # refused first, then asked, then the rest
        print(summary.trace_id, summary.denied)
    trace = traces.get("T1")                                # a trace id, a unique prefix, or a task id
    render_trace(trace, Console())                          # the rich tree; trace.as_dict() is the JSON form

The ledger keeps only a digest of each call's arguments. Arguments come from the decision log (its entry
holds the policy input, secrets masked; named by the ledger row's ``detail.decision_id``), else from a tier-3
approval request, else rebuilt from the task and intent records for the commit-protocol tools. The decision
log is not hash-chained, so an unmasked copy is checked against the ledger's digest and the source says
whether it matches. Every copy is masked (``gateway.decision_log.redact``) before anyone sees it.
"""

from __future__ import annotations

import builtins
import json
import shlex
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gateway.decision_log import DecisionLogIndex, mask_text, redact
from gateway.digests import digest
from gateway.errors import GatewayError
from gateway.store import Store, open_store
from gateway.store.repositories import intents as intent_rows
from gateway.store.repositories import tasks as task_rows
from gateway.store.repositories import traces as trace_rows
from gateway.store.repositories.review_index import CALL_KINDS, REFUSED, catch_up, side_effect
from gateway.types import FILTER_OUTCOMES, JSONObject

if TYPE_CHECKING:
    from rich.console import Console

    from gateway.config import GatewayConfig

BAD_STEPS = ("denied", "error", "invalid")  # steps shown in red: a refusal, a failure, a dead letter
PROTOCOL_TOOLS = ("task_", "intent_", "verify_run")  # gateway tools whose work appears as task/intent steps
MAX_LISTED = 8  # paths or commands shown per effect kind before "+N more"


class UnknownTrace(GatewayError):
    code = "unknown_trace"
    outcome = "invalid"


def clean(value: Any, limit: int | None = None) -> str:
    """Text fit for a terminal or a page: credential-looking values masked (``mask_text``), and control and
    format characters (ESC, bidi overrides, newlines) made visible escapes, so a hostile argument can
    neither drive the terminal nor disguise itself."""
    text = value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)
    text = mask_text(text)
    out = []
    for ch in text:
        if ch.isprintable() or ch == " ":
            out.append(ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x100:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(f"\\u{ord(ch):04x}")
    result = "".join(out)
    if limit is not None and len(result) > limit:
        result = result[: limit - 1] + "…"
    return result


# --- the model ------------------------------------------------------------------------------------


@dataclass
class Filters:
    """Which calls to show. A trace matches when any of its calls does.

    Filters(agent="w1", outcome="denied", since=datetime(2026, 11, 23, tzinfo=UTC)).matches(call)
    """

    role: str | None = None
    agent: str | None = None
    task: str | None = None
    tier: int | None = None
    rule: str | None = None  # exact, or a prefix ending at a dot: "paths" matches "paths.out_of_scope"
    outcome: str | None = None  # one of FILTER_OUTCOMES
    denied: bool = False  # only refused calls (outcome denied or invalid)
    tool: str | None = None
    since: datetime | None = None  # calls started at or after (aware)
    until: datetime | None = None  # calls started before (aware)
    checks: bool = False  # dry runs (gateway check) too: never an agent's real calls, so hidden unless asked for

    def active(self) -> bool:
        """Whether any filter narrows the calls (showing dry runs too widens them)."""
        return any(v not in (None, "", False) for k, v in asdict(self).items() if k != "checks")

    def matches(self, call: CallView) -> bool:
        if call.dry_run and not self.checks:
            return False
        if self.denied and call.outcome not in REFUSED:
            return False
        if self.role and call.role != self.role:
            return False
        if self.agent and call.agent != self.agent:
            return False
        if self.task and call.task != self.task:
            return False
        if self.tool and call.tool != self.tool:
            return False
        if self.tier is not None and call.tier != self.tier:
            return False
        if self.outcome and not outcome_is(call, self.outcome):
            return False
        if self.since is not None and call.started < self.since:
            return False
        if self.until is not None and call.started >= self.until:
            return False
        return not self.rule or any(r == self.rule or r.startswith(self.rule.rstrip(".") + ".") for r in call.rules)


def outcome_is(call: CallView, outcome: str) -> bool:
    """Whether a call counts as ``outcome`` (FILTER_OUTCOMES): "allowed" and "approved" say what was decided,
    the others how the call ended."""
    if outcome == "allowed":
        return call.action == "allow"
    if outcome == "approved":
        return (call.approval or {}).get("answer") == "approved"
    return call.outcome == outcome


@dataclass
class Step:
    """A task, intent, approval or rollback row: something that happened to the work, not a tool call."""

    seq: int
    time: str
    kind: str
    name: str  # task.claim, intent.committed, approval.approved, rollback, ...
    outcome: str
    principal: JSONObject | None
    summary: str
    detail: JSONObject
    intent_id: str | None = None
    trace_id: str | None = None
    links: list[JSONObject] = field(default_factory=list)  # {"trace_id", "why"}: another trace this one touches

    @property
    def actor(self) -> str | None:
        if self.principal:
            return f"{self.principal.get('agent')} ({self.principal.get('role')})"
        by = self.detail.get("by") or self.detail.get("owner")
        return str(by) if by else None

    def as_dict(self) -> JSONObject:
        return {"type": "step", **asdict(self), "actor": self.actor}


@dataclass
class CallView:
    """One tool call: its write-ahead row and its final row joined, with the decision and what it did."""

    call_id: str
    trace_id: str | None
    span_id: str | None
    kind: str  # the ledger's kind (CallKind): "call", or a decision without a run ("check": a dry run, ...)
    seq: int  # the first row's seq; ``final_seq`` is the last row's (None while no final row exists)
    final_seq: int | None
    time: str
    end_time: str
    principal: JSONObject | None
    tool: str | None
    # ok | error | denied | invalid | asked | cancelled (its client went away, a timeout, a shutdown) | interrupted
    # (its gateway stopped), or started: in flight
    outcome: str
    decision: JSONObject | None
    rules: list[str]
    reasons: list[str]
    decided_by: str  # "policy", or "gateway" when the call stopped before the policy was asked
    error: JSONObject | None
    effects: JSONObject
    effects_summary: list[str]
    arguments_digest: str | None
    arguments: JSONObject | None = None  # masked; None when no record proves them
    arguments_source: str | None = None
    decision_id: str | None = None
    approval: JSONObject | None = None  # as recorded with the call: {id, answer: pending|approved|denied, by?}
    approval_state: str | None = None  # the approval's state now: pending, approved, denied, used, expired, ...
    safeguard: JSONObject | None = None
    sandbox: JSONObject | None = None  # {"mode", "writable"} of a call that ran commands; mode "off": unconfined
    intent_id: str | None = None
    duration_ms: float | None = None
    task: str | None = None
    steps: list[Step] = field(default_factory=list)
    links: list[JSONObject] = field(default_factory=list)

    @property
    def role(self) -> str | None:
        return (self.principal or {}).get("role")

    @property
    def started(self) -> datetime:
        return datetime.fromisoformat(self.time)

    @property
    def agent(self) -> str | None:
        return (self.principal or {}).get("agent")

    @property
    def action(self) -> str | None:
        return (self.decision or {}).get("action")

    @property
    def tier(self) -> int | None:
        return (self.decision or {}).get("tier")

    @property
    def refused(self) -> bool:
        return self.outcome in REFUSED

    @property
    def dry_run(self) -> bool:
        """A `gateway check`: decided and recorded, never run; nobody's real call."""
        return self.kind == "check"

    @property
    def unconfined(self) -> bool:
        """Its commands ran (or would run) outside the sandbox: the operator turned it off."""
        return (self.sandbox or {}).get("mode") == "off"

    def as_dict(self) -> JSONObject:
        data = asdict(self)
        data["steps"] = [s.as_dict() for s in self.steps]
        return {
            "type": "call",
            **data,
            "unconfined": self.unconfined,
            "role": self.role,
            "agent": self.agent,
            "action": self.action,
            "tier": self.tier,
            "dry_run": self.dry_run,
        }


@dataclass
class TraceSummary:
    trace_id: str
    kind: str  # "task", "session", or "dry run": only `gateway check` calls (hidden unless asked for)
    task_id: str | None
    first: str
    last: str
    calls: int
    denied: int  # refused calls: outcome denied or invalid
    asked: int  # calls left waiting for a person (their final outcome is "asked")
    errors: int
    agents: list[str]
    roles: list[str]
    tools: list[str]  # the tools its calls named, most used first
    side_effects: list[str]  # merge commits, tags, pushes, reverts, quarantines, rollbacks
    checkpoints: int

    def as_dict(self) -> JSONObject:
        return asdict(self)


@dataclass
class CallPage:
    """One page of calls (``Traces.page``): the calls shown, how many match in all, where the page starts, and
    how many of the calls matching every other filter ended each way (FILTER_OUTCOMES, and "any": all of
    them), for the outcome tabs."""

    calls: list[CallView]
    total: int
    offset: int
    size: int
    at: int  # the newest ledger row counted
    outcomes: dict[str, int]


@dataclass
class Trace:
    summary: TraceSummary
    entries: list[CallView | Step]  # top level, in ledger order; steps caused by a call are nested in it

    @property
    def trace_id(self) -> str:
        return self.summary.trace_id

    def calls(self) -> list[CallView]:
        return [e for e in self.entries if isinstance(e, CallView)]

    def as_dict(self) -> JSONObject:
        # reasons and step details quote argv and paths: masked here as they are on the page and in the tree
        entries, _ = redact([e.as_dict() for e in self.entries])
        return {**self.summary.as_dict(), "entries": entries}


# --- reading the ledger ---------------------------------------------------------------------------


class Traces:
    """The read model over one store. Pages, counts, exports and the trace list read the review index
    (gateway/store/repositories/review_index.py: a row per call and per trace, written with each ledger row), so each
    costs what it shows: the calls of a page are found by index, newest first, and only their own ledger rows
    are read, masked and get their arguments read back. A trace is read by its trace id (the ledger's index)."""

    def __init__(self, db: Store, decision_log: Path | None = None) -> None:
        self.db = db
        self.decision_log = decision_log
        self._proofs = _Proofs(db, DecisionLogIndex(decision_log) if decision_log is not None else None)

    @classmethod
    def for_config(cls, config: GatewayConfig, db: Store | None = None) -> Traces:
        """The traces of a configured gateway: its store, and its decision log when it writes one."""
        decisions = config.decision_log_path if config.telemetry.decision_log else None
        return cls(db or open_store(config), decisions)

    def _ready(self) -> None:
        """Index what the ledger holds past the index's cursor (nothing, once caught up: two lookups)."""
        catch_up(self.db)

    def list(
        self, filters: Filters | None = None, limit: int | None = None, offset: int = 0
    ) -> builtins.list[TraceSummary]:
        """Traces with at least one matching call (all traces when no filter is set; with no filter, dry runs
        only when asked for and never traces of only unknown-tool calls: ``noise`` counts those): refused
        first, then asked, then the rest; newest first within each group."""
        self._ready()
        rows = trace_rows.summaries(self.db, filters or Filters(), limit, offset)
        people = trace_rows.participants(self.db, [row.trace_id for row in rows])
        tasks = {trace: task for task, trace in sorted(task_rows.trace_ids(self.db).items(), reverse=True)}
        return [self._summary(row, people.get(row.trace_id, []), tasks.get(row.trace_id)) for row in rows]

    def noise(self, checks: bool = False) -> tuple[int, int]:
        """(traces, calls) of traces whose every call named no tool there is: left out of ``list``."""
        self._ready()
        return trace_rows.noise(self.db, checks)

    def _summary(
        self, row: trace_rows.SummaryRow, people: builtins.list[trace_rows.Participant], task_id: str | None
    ) -> TraceSummary:
        """A trace's summary from its index row; its agents, roles and tools from its calls' index rows."""
        trace_id = row.trace_id
        tools: dict[str, tuple[int, int]] = {}  # tool -> (calls, the first call's seq)
        for p in people:
            if p.tool:
                n, first = tools.get(p.tool, (0, p.first_seq))
                tools[p.tool] = (n + p.n, min(first, p.first_seq))
        dry = row.calls > 0 and row.dry_runs == row.calls
        return TraceSummary(
            trace_id=trace_id,
            kind="task" if task_id else "dry run" if dry else "session",
            task_id=task_id,
            first=row.first,
            last=row.last,
            calls=row.calls,
            denied=row.refused,
            asked=row.asked,
            errors=row.errors,
            agents=sorted({p.agent for p in people if p.agent}),
            roles=sorted({p.role for p in people if p.role}),
            tools=_most_used(tools),
            side_effects=[clean(e.split(":", 1)[1]) for e in row.side_effects],
            checkpoints=row.checkpoints,
        )

    def get(self, ref: str) -> Trace:
        self._ready()
        trace_id = self._resolve(ref)
        rows = [_decode(body) for body in trace_rows.trace_bodies(self.db, trace_id)]
        tasks = task_rows.trace_ids(self.db, trace_id)
        index = _Index.build(rows, tasks)
        entries = [_shown(e) if isinstance(e, CallView) else e for e in index.traces.get(trace_id, [])]
        self._proofs.attach(_calls(entries), self._tasks(_calls(entries)))
        return Trace(index.summary(trace_id), entries)

    def _resolve(self, ref: str) -> str:
        ref = ref.strip()
        if trace_rows.known(self.db, ref):
            return ref
        task_trace = task_rows.trace_id_of(self.db, ref)
        if task_trace is not None and trace_rows.known(self.db, task_trace):
            return task_trace
        if len(ref) >= 4:
            matches = trace_rows.prefixed(self.db, ref.lower(), limit=2)
            if len(matches) == 1:
                return matches[0]
            if len(matches) > 1:
                raise UnknownTrace(f"trace prefix {clean(ref, 80)!r} is ambiguous: more than one trace matches")
        raise UnknownTrace(f"no trace {clean(ref, 80)!r}: give a trace id (or a unique prefix) or a task id")

    def count(self, filters: Filters | None = None, at: int | None = None) -> tuple[int, int, dict[str, int]]:
        """(at, calls matching every filter, calls matching every other filter by outcome: FILTER_OUTCOMES
        plus "any"), counting only calls that began at or before ledger row ``at`` (default: the newest)."""
        self._ready()
        filters = filters or Filters()
        if at is None:
            at = trace_rows.newest_call(self.db)
        counted = trace_rows.outcome_counts(self.db, replace(filters, outcome=None), at)
        outcomes = {o: counted[o] for o in (*FILTER_OUTCOMES, "any") if counted[o]}
        total = counted[filters.outcome] if filters.outcome else counted["any"]
        return at, total, outcomes

    def page(
        self,
        filters: Filters | None = None,
        offset: int = 0,
        size: int = 50,
        at: int | None = None,
        before: int | None = None,
    ) -> CallPage:
        """Matching calls newest first (ledger order, which is time order), ``size`` from ``offset`` (or, given
        ``before``, the ``size`` calls that began before that ledger row: keyset paging), counting only calls
        that began at or before ledger row ``at`` (default: the newest), so the pages hold still while new calls
        arrive. Only the page's calls are read from the ledger, masked and get their arguments read back."""
        filters = filters or Filters()
        at, total, outcomes = self.count(filters, at)
        skip = 0 if before is not None else offset  # below ``before``, ``offset`` only says where the page stands
        if before is None and offset >= trace_rows.SEEK_FROM and filters == Filters(checks=filters.checks):
            before, skip = trace_rows.seek_block(self.db, filters.checks, at, offset)  # deep, by number: by blocks
        found = trace_rows.calls(self.db, filters, at, before, size, skip)
        return CallPage(self._views(found), total, offset, size, at, outcomes)

    def _views(self, found: Sequence[trace_rows.CallRow]) -> builtins.list[CallView]:
        """The shown calls of these index rows: their first and final ledger rows read, masked, proven."""
        seqs = sorted({s for r in found for s in (r.seq, r.final_seq) if s is not None})
        bodies = {seq: _decode(body) for seq, body in trace_rows.bodies(self.db, seqs).items()}
        shown = []
        for r in found:
            rows = [bodies[s] for s in (r.seq, r.final_seq) if s is not None and s in bodies]
            if rows and r.final_seq == r.seq:
                rows = rows[:1]
            view = _call_view(r.call_id, rows)
            view.task = r.task
            shown.append(_shown(view))
        self._proofs.attach(shown, self._tasks(shown))
        return shown

    def _tasks(self, calls: builtins.list[CallView]) -> dict[str, str]:
        """Task id -> trace id, read only when a shown call's arguments may be rebuilt from a task record."""
        if not any((c.tool or "").startswith(("task_", "verify_run")) for c in calls):
            return {}
        return task_rows.trace_ids(self.db)

    def call(self, call_id: str) -> CallView:
        """One call by its id, arguments attached; UnknownTrace if there is none."""
        self._ready()
        found = trace_rows.call(self.db, call_id)
        if found is None:
            raise UnknownTrace(f"no call {clean(call_id, 80)!r}")
        return self._views([found])[0]

    def refused_credentials(self, limit: int = 50) -> builtins.list[JSONObject]:
        """Requests refused before any principal existed (kind "auth"): newest first."""
        return [_decode(body) for body in trace_rows.refused_credentials(self.db, limit)]


def _most_used(tools: dict[str, tuple[int, int]]) -> builtins.list[str]:
    """Tools most used first, then the first used first (as ``Counter.most_common`` orders a trace's calls)."""
    return [name for name, _ in sorted(tools.items(), key=lambda item: (-item[1][0], item[1][1]))]


def _decode(body: str) -> JSONObject:
    """One ledger row's body (a function of its own so a test can count the rows read)."""
    return json.loads(body)


def _shown(view: CallView) -> CallView:
    """A call as anyone sees it: a copy with its error, reasons and effects masked (``redact``, ``mask_text``)."""
    effects = redact({k: v for k, v in view.effects.items() if v})[0]
    return replace(
        view,
        error=redact(view.error)[0] if view.error else view.error,
        reasons=[mask_text(str(r)) for r in view.reasons],
        effects=effects,
        effects_summary=effects_summary(effects),
    )


def _calls(entries: builtins.list[CallView | Step]) -> builtins.list[CallView]:
    return [e for e in entries if isinstance(e, CallView)]


class _Index:
    """The traces: calls (copies of the snapshot's views) and steps, grouped by trace and nested."""

    def __init__(self) -> None:
        self.calls: dict[str, CallView] = {}
        self.traces: dict[str, list[CallView | Step]] = {}
        self.task_traces: dict[str, str] = {}  # trace id -> task id
        self.tasks: dict[str, str] = {}  # task id -> trace id

    @classmethod
    def build(cls, rows: list[JSONObject], tasks: dict[str, str]) -> _Index:
        """The traces these ledger rows (in seq order) tell: their calls joined by call id, their steps."""
        index = cls()
        index.tasks = dict(tasks)
        index.task_traces = {trace: task for task, trace in tasks.items()}
        by_call: dict[str, list[JSONObject]] = {}
        for row in rows:
            if row.get("kind") in CALL_KINDS and row.get("call_id"):
                by_call.setdefault(row["call_id"], []).append(row)
        for call_id, call_rows in by_call.items():
            view = _call_view(call_id, call_rows)
            view.task = (view.principal or {}).get("task") or index.task_traces.get(view.trace_id or "")
            index.calls[call_id] = view
        index._build(rows)
        return index

    def _build(self, rows: list[JSONObject]) -> None:
        approval_trace: dict[str, str] = {}
        approval_calls: dict[str, list[CallView]] = {}
        checkpoint_trace: dict[str, str] = {}
        for view in self.calls.values():
            if view.approval and view.approval.get("id") and view.trace_id:
                approval_calls.setdefault(view.approval["id"], []).append(view)
            if view.safeguard and view.safeguard.get("id") and view.trace_id:
                checkpoint_trace[view.safeguard["id"]] = view.trace_id
        for row in rows:  # an approval belongs to the trace of the call that asked for it
            detail = row.get("detail") or {}
            if row.get("kind") == "approval" and detail.get("action") == "request":
                asked = self.calls.get(detail.get("call_id") or "")
                if asked is not None and asked.trace_id:
                    approval_trace[detail["approval_id"]] = asked.trace_id
        for approval_id, users in approval_calls.items():
            approval_trace.setdefault(approval_id, users[0].trace_id or "")
        for view in self.calls.values():
            if view.trace_id:
                self.traces.setdefault(view.trace_id, []).append(view)
        protocol: dict[str, list[CallView]] = {}
        for view in self.calls.values():
            if view.trace_id and (view.tool or "").startswith(PROTOCOL_TOOLS):
                protocol.setdefault(view.trace_id, []).append(view)
        for row in rows:
            kind = row.get("kind")
            if kind not in (
                "task",
                "intent",
                "approval",
                "rollback",
                "egress",
                "deadletter",
                "artifact",
                "attestation",
            ):
                continue
            detail = row.get("detail") or {}
            trace_id = row.get("trace_id")
            if kind == "approval":
                trace_id = approval_trace.get(detail.get("approval_id") or "")
            elif kind == "rollback":
                trace_id = checkpoint_trace.get(detail.get("checkpoint") or "")
            if not trace_id:
                continue
            step = _step(row, trace_id)
            parent = self._parent(step, protocol.get(trace_id, []), approval_calls)
            if step.name == "task.submit" and detail.get("submitted_in"):
                session = detail["submitted_in"]
                step.links.append({"trace_id": session, "why": "submitted from this trace"})
                submitter = _covering(step, protocol.get(session, []), "task_submit")
                if submitter is not None:
                    submitter.links.append({"trace_id": trace_id, "why": f"opened task {detail.get('task_id')}"})
            if parent is not None:
                parent.steps.append(step)
            else:
                self.traces.setdefault(trace_id, []).append(step)
        for entries in self.traces.values():
            entries.sort(key=lambda e: e.seq)

    def _parent(
        self, step: Step, protocol: list[CallView], approval_calls: dict[str, list[CallView]]
    ) -> CallView | None:
        detail = step.detail
        if step.kind == "approval":
            if detail.get("action") == "request":
                return self.calls.get(detail.get("call_id") or "")
            for user in approval_calls.get(detail.get("approval_id") or "", []):  # answered in-band
                if user.seq <= step.seq <= (user.final_seq or step.seq):
                    return user
            return None
        if step.kind in ("task", "intent", "artifact", "attestation"):
            return _covering(step, protocol)
        if step.kind == "deadletter":  # kept by the call it names (or settled by the replay that names it)
            return self.calls.get(detail.get("call_id") or "")
        return None

    def summary(self, trace_id: str) -> TraceSummary:
        entries = self.traces[trace_id]
        calls = _calls(entries)
        steps = [s for e in entries for s in ([e] if isinstance(e, Step) else e.steps)]
        times = [e.time for e in entries] + [c.end_time for c in calls] + [s.time for s in steps]
        task_id = self.task_traces.get(trace_id)
        dry_runs = bool(calls) and all(c.dry_run for c in calls)
        return TraceSummary(
            trace_id=trace_id,
            kind="task" if task_id else "dry run" if dry_runs else "session",
            task_id=task_id,
            first=min(times),
            last=max(times),
            calls=len(calls),
            denied=sum(1 for c in calls if c.refused),
            asked=sum(1 for c in calls if c.outcome == "asked"),
            errors=sum(1 for c in calls if c.outcome == "error"),
            agents=sorted({c.agent for c in calls if c.agent}),
            roles=sorted({c.role for c in calls if c.role}),
            tools=[tool for tool, _ in Counter(c.tool for c in calls if c.tool).most_common()],
            side_effects=[effect for s in steps if (effect := _side_effect(s))],
            checkpoints=sum(1 for c in calls if c.safeguard),
        )


def _covering(step: Step, candidates: list[CallView], tool: str | None = None) -> CallView | None:
    """The protocol call whose rows bracket this step (the step was written while the call ran)."""
    inside = [
        c
        for c in candidates
        if (tool is None or c.tool == tool) and c.seq < step.seq and (c.final_seq is None or step.seq < c.final_seq)
    ]
    if not inside:
        return None
    agent = (step.principal or {}).get("agent") or step.detail.get("by") or step.detail.get("owner")
    same = [c for c in inside if c.agent == agent]
    return (same or inside)[-1]


def _call_view(call_id: str, rows: list[JSONObject]) -> CallView:
    first = rows[0]
    finals = [r for r in rows if r.get("outcome") != "started"]
    last = finals[-1] if finals else rows[-1]
    detail = last.get("detail") or {}
    decision = last.get("decision") or first.get("decision")
    error = detail.get("error")  # unmasked, like the reasons and effects: ``_shown`` masks what is shown
    if decision:
        rules, reasons, decided_by = list(decision.get("rules") or []), list(decision.get("reasons") or []), "policy"
    else:
        code = (error or {}).get("code")
        rules = [f"gateway.{code}"] if code else []
        reasons = [error["message"]] if error and error.get("message") else []
        decided_by = "gateway"
    effects = last.get("effects") or first.get("effects") or {}
    return CallView(
        call_id=call_id,
        trace_id=last.get("trace_id") or first.get("trace_id"),
        span_id=last.get("span_id"),
        kind=str(first.get("kind") or "call"),
        seq=first["seq"],
        final_seq=last["seq"] if finals else None,
        time=first["time"],
        end_time=last["time"],
        principal=last.get("principal") or first.get("principal"),
        tool=last.get("tool"),
        outcome=str(last.get("outcome")) if finals else "started",
        decision=decision,
        rules=rules,
        reasons=reasons,
        decided_by=decided_by,
        error=error,
        effects=effects,
        effects_summary=[],  # made by ``_shown``, from the masked effects
        arguments_digest=last.get("arguments_digest"),
        decision_id=detail.get("decision_id"),
        approval=detail.get("approval"),
        safeguard=detail.get("safeguard"),
        sandbox=detail.get("sandbox"),
        intent_id=last.get("intent_id"),
        duration_ms=detail.get("duration_ms"),
    )


def _step(row: JSONObject, trace_id: str) -> Step:
    detail = row.get("detail") or {}
    kind = row["kind"]
    if kind == "approval":
        name = f"approval.{detail.get('action', '?')}"
    elif kind in ("rollback", "egress"):
        name = kind
    elif kind == "deadletter":
        name = f"deadletter.{detail.get('action', 'kept')}"
    else:
        name = row.get("tool") or kind
    step = Step(
        seq=row["seq"],
        time=row["time"],
        kind=kind,
        name=name,
        outcome=row.get("outcome", "ok"),
        principal=row.get("principal"),
        summary="",
        detail=detail,
        intent_id=row.get("intent_id"),
        trace_id=trace_id,
    )
    step.summary = step_summary(step)
    return step


# --- arguments: shown only where a record proves them ---------------------------------------------


class _Proofs:
    """Where a call's arguments can be read back from, since the ledger keeps only their digest. Reads only
    what the calls given need: their decision log entries (through the log's index), their approvals, and
    the intents only when a shown call proposed one."""

    def __init__(self, db: Store, decision_log: DecisionLogIndex | None) -> None:
        self.db = db
        self.decision_log = decision_log

    def attach(self, calls: list[CallView], tasks: dict[str, str]) -> None:
        """Set ``arguments``, ``arguments_source`` and ``approval_state`` of these (shown, masked) calls."""
        if not calls:
            return
        logged = (
            self.decision_log.find({c.decision_id for c in calls if c.decision_id}, {c.call_id for c in calls})
            if self.decision_log is not None
            else {}
        )
        approval_ids = sorted({str(c.approval["id"]) for c in calls if c.approval and c.approval.get("id")})
        digests = sorted({c.arguments_digest for c in calls if c.arguments_digest})
        states = trace_rows.approval_states(self.db, approval_ids)
        approvals: dict[str, JSONObject] = {}
        for arguments_digest, request in trace_rows.approval_requests(self.db, digests):
            if isinstance(request.get("arguments"), dict):
                approvals.setdefault(arguments_digest, request["arguments"])
        intents = [
            {"task_id": r.task_id, "action": r.action, "arguments": r.arguments}
            for r in (intent_rows.every(self.db) if any(c.tool == "intent_propose" for c in calls) else [])
        ]
        for call in calls:
            if call.approval and call.approval.get("id") in states:
                call.approval_state = states[call.approval["id"]]
            entry = logged.get(call.decision_id or "") or logged.get(call.call_id)
            if entry is not None:
                call.arguments, call.arguments_source = self._from_log(call, entry)
                continue
            recorded = call.arguments_digest
            if not recorded:
                continue
            if recorded in approvals:
                call.arguments = redact(approvals[recorded])[0]
                call.arguments_source = "stored with the approval request"
                continue
            candidates: list[JSONObject] = [{"intent_id": call.intent_id}] if call.intent_id else []
            tool = call.tool or ""
            if tool.startswith("task_") or tool == "verify_run":
                candidates += [{"task_id": t} for t in {call.task, *tasks} if t]
            if tool == "intent_propose":
                candidates += intents
            for candidate in candidates:
                if digest(candidate) == recorded:
                    call.arguments = redact(candidate)[0]
                    call.arguments_source = "rebuilt from the task and intent records; matches the recorded digest"
                    break

    def _from_log(self, call: CallView, entry: JSONObject) -> tuple[JSONObject | None, str | None]:
        arguments = entry["input"].get("arguments")
        if not isinstance(arguments, dict):
            return None, None
        masked = [p for p in entry.get("masked") or [] if str(p).startswith("/input/arguments")]
        if masked:
            return redact(arguments)[0], f"the decision log ({len(masked)} secret values masked)"
        if call.arguments_digest and digest(arguments) != call.arguments_digest:
            return redact(arguments)[0], "the decision log; DOES NOT MATCH the digest in the ledger"
        return redact(arguments)[0], "the decision log; matches the recorded digest"


# --- words ----------------------------------------------------------------------------------------


def _listed(items: list[Any]) -> str:
    shown = [clean(i, 200) for i in items[:MAX_LISTED]]
    more = f" (+{len(items) - MAX_LISTED} more)" if len(items) > MAX_LISTED else ""
    return ", ".join(shown) + more


def effects_summary(effects: JSONObject) -> list[str]:
    """Effects as short phrases: "modifies src/app.py", "runs `rm -rf /`", "contacts example.com (curl)"."""
    lines = []
    for key, verb in (
        ("reads", "reads"),
        ("writes", "modifies"),
        ("creates", "creates"),
        ("deletes", "deletes"),
        ("recursive_deletes", "deletes recursively"),
    ):
        if effects.get(key):
            lines.append(f"{verb} {_listed(effects[key])}")
    for command in (effects.get("commands") or [])[:MAX_LISTED]:
        text = clean(shlex.join(str(a) for a in command.get("argv") or []), 300)
        redirects = " ".join(f"{r.get('op')} {clean(r.get('target'), 100)}" for r in command.get("redirects") or [])
        via = command.get("via")
        lines.append(
            f"runs `{text}{' ' + redirects if redirects else ''}`"
            + (f" (via {via})" if via and via != "direct" else "")
        )
    if len(effects.get("commands") or []) > MAX_LISTED:
        lines.append(f"(+{len(effects['commands']) - MAX_LISTED} more commands)")
    for net in (effects.get("network") or [])[:MAX_LISTED]:
        lines.append(f"contacts {clean(net.get('host'), 200)} ({clean(net.get('via'), 60)})")
    if effects.get("privileged"):
        lines.append("asks for privilege")
    for package in effects.get("packages") or []:
        names = _listed(package.get("names") or [])
        lines.append(f"installs {names} ({package.get('manager')}, {package.get('scope')})")
    if effects.get("opaque"):
        lines.append(f"cannot analyse: {_listed(effects['opaque'])}")
    return lines


def _short(sha: Any) -> str:
    return clean(sha)[:12] if sha else "?"


def step_summary(step: Step) -> str:
    d = step.detail
    action = step.name.split(".", 1)[-1]
    if step.kind == "task":
        manifest = d.get("manifest") or {}
        said = {
            "submit": lambda: (
                f"task {clean(d.get('task_id'))} submitted by {clean(d.get('by'))}: "
                f'"{clean(manifest.get("objective"), 160)}"'
                f"; allowed paths {_listed(manifest.get('allowed_paths') or [])}"
                f"; verification {_listed(manifest.get('verification') or []) or '(none)'}"
            ),
            "claim": lambda: f"claimed by {clean(d.get('owner'))} (attempt {d.get('attempt')})",
            "renew": lambda: f"claim renewed by {clean(d.get('owner'))}",
            "claim_expired": lambda: f"claim of {clean(d.get('owner'))} expired (attempt {d.get('attempt')})",
            "report": lambda: (
                f"reported: task branch commit {_short(d.get('commit'))}"
                + (f"; changed but not reported: {_listed(d['unreported'])}" if d.get("unreported") else "")
                + (f"; reported but unchanged: {_listed(d['phantom'])}" if d.get("phantom") else "")
                + _drift_words(d.get("drift"))
            ),
            "quarantine": lambda: (
                f"QUARANTINED ({', '.join(sorted({_violation_code(v) for v in d.get('violations') or []}))}): "
                f"commit {_short(d.get('commit'))} {_listed([_violation_words(v) for v in d.get('violations') or []])}"
                + _drift_words(d.get("drift"))
            ),
            "verify": lambda: (
                f"verification {'passed' if d.get('passed') else 'FAILED'} on {_short(d.get('commit'))}"
                f" (by {clean(d.get('by'))})"
            ),
            "committed": lambda: f"merged into the base branch: merge commit {clean(d.get('merge_commit'))}",
            "block": lambda: f"BLOCKED after {d.get('failures')} failed attempts" + _why(d),
            "attempt_failed": lambda: f"attempt failed ({d.get('failures')} so far)" + _why(d),
            "blocker_report": lambda: (
                f"BLOCKER REPORT written by {clean(d.get('by'))}: {clean(d['blocker'].get('why'), 300)}"
                if isinstance(d.get("blocker"), dict)
                else f"blocker reported by {clean(d.get('by'))}: {clean(d.get('blocker'), 300)}"
            ),
            "merge_failed": lambda: "NOT MERGED (nothing published)" + _why(d),
            "dependency_failed": lambda: (
                f"its dependency {clean(d.get('dependency'))} did not merge and is {clean(d.get('state'))}" + _why(d)
            ),
            "attempt_saved": lambda: f"attempt {d.get('attempt')}'s work kept as {clean(d.get('ref'))}",
            "worktree_repaired": lambda: (
                f"worktree made again (attempt {d.get('attempt')}): {clean(d.get('why') or 'it was missing')}"
            ),
            "locks_removed": lambda: f"removed git locks a stopped process left: {clean(d.get('removed'), 300)}",
            "strategy_shift": lambda: f"STRATEGY SHIFT: {clean(d.get('approach'))} (because {clean(d.get('reason'))})",
            "red_phase": lambda: (
                f"red phase on base {_short(d.get('base'))}: "
                + (
                    f"NOT RUN ({clean('; '.join(map(str, d['not_run'])), 300)})"
                    if d.get("not_run")
                    else ("fails as it must" if d.get("failed") else "PASSES WITHOUT THE WORK")
                    + f" (exit codes {d.get('exit_codes')})"
                )
            ),
            "verification_timeout": lambda: f"verification TIMED OUT: {clean(d.get('command'), 200)}",
            "requeue": lambda: f"requeued by {clean(d.get('by'))} (was {clean(d.get('was'))})" + _why(d),
            "amend": lambda: (
                f"manifest amended to version {d.get('version')} by {clean(d.get('by'))}: "
                f"{', '.join(map(str, d.get('changed') or []))}" + _why(d)
            ),
            "abandon": lambda: f"ABANDONED by {clean(d.get('by'))}" + _why(d),
            "escalation_refused": lambda: (
                f"{clean(d.get('asked'))} by {clean(d.get('by'))} REFUSED: "
                f"{clean((d.get('error') or {}).get('message'), 300)}"
                + (f" (asked because: {clean(d.get('why'), 200)})" if d.get("why") else "")
            ),
            "ceremony": lambda: f"merge ceremony {clean(d.get('ceremony_id'))}: {clean(d.get('status'))}" + _why(d),
        }.get(action)
        return said() if said else _generic(d, skip=("task_id", "action"))
    if step.kind == "intent":
        ident = _short(step.intent_id)
        outcome = d.get("outcome") or {}
        said = {
            "propose": lambda: f"intent {ident} proposed: {clean(d.get('action'))} for task {clean(d.get('task_id'))}",
            "approve": lambda: f"intent {ident} approved (verified commit {_short(d.get('verified_commit'))})",
            "execute": lambda: f"intent {ident} executing: {clean(d.get('action'))}",
            "committed": lambda: f"intent {ident} committed: {_outcome_words(outcome)}",
            "failed": lambda: f"intent {ident} FAILED: {clean(_failure(outcome), 300)}",
            "compensated": lambda: f"intent {ident} COMPENSATED: {_outcome_words(outcome)}",
            "requeue": lambda: f"intent {ident} back to approved: {clean(d.get('why'))}",
        }.get(action)
        return said() if said else _generic(d, skip=("step",))
    if step.kind == "approval":
        ident = clean(d.get("approval_id"))
        if action == "request":
            return f"approval {ident} requested: waits for a person"
        comment = f': "{clean(d["comment"], 500)}"' if d.get("comment") else ""
        return f"approval {ident} {clean(action)} by {clean(d.get('by'))}{comment}"
    if step.kind == "egress":
        allowed = _listed(d.get("allowed") or [])
        if step.outcome == "ok":
            return f"network egress to {clean(d.get('target'))} (allowed: {allowed})"
        return f"network egress REFUSED: {clean(d.get('refused'), 300)}"
    if step.kind == "deadletter":
        ident = clean(d.get("deadletter_id"))
        if action == "replayed":
            ended = clean(d.get("replay_outcome"))
            return f"dead letter {ident} replayed by {clean(d.get('by'))}: the call ended {ended}"
        again = f" (its replay of {clean(d.get('replay_of'))} was refused again)" if d.get("replay_of") else ""
        return (
            f"dead letter {ident} kept: {clean(d.get('kind'))} refused: {clean(d.get('error'), 400)}{again}; "
            f"replay with `gateway deadletters replay {ident}`"
        )
    if step.kind == "artifact":
        key = clean(d.get("key"))
        said = {
            "staged": lambda: f"artifact {key} put on base r{d.get('base')}: staged on the task until its merge",
            "revision": lambda: f"artifact {key} r{d.get('revision')} (on r{d.get('base')}) {_short(d.get('digest'))}",
            "stale": lambda: (
                f"artifact {key}: stale base r{d.get('base')}, the current revision is r{d.get('current')}"
            ),
            "conflict": lambda: (
                f"artifact {key} CONFLICT {clean(d.get('conflict'))}: the task's put on r{d.get('base')}, "
                f"the key at r{d.get('current')}"
            ),
        }.get(action)
        return said() if said else _generic(d, skip=("action",))
    if step.kind == "attestation" and action == "signed":
        return f"attestation of {_short(d.get('commit'))} signed by key {clean(d.get('kid'))}"
    if step.kind == "rollback":
        removed = d.get("removed") or []
        return f"rolled back to checkpoint {clean(d.get('checkpoint'))}" + (
            f"; removed {_listed(removed)}" if removed else ""
        )
    return _generic(d)


# what each kind of violation a report can be quarantined for did, in words (board.report names them)
VIOLATION_WORDS = {
    "SCOPE_VIOLATION": "changed {path} outside the allowed paths",
    "ACCEPTANCE_EDITED": "edited {path}, which grades the task (acceptance)",
    "FROZEN_PATH": "changed {path}, which the manifest froze",
    "SCOPE_UNCHECKED": "changed {path}, whose scope the policy could not check (quarantined to be safe)",
}


def _violation_code(violation: Any) -> str:
    # rows written before violations carried their kind list bare paths outside the allowed paths
    return clean(violation.get("code")) if isinstance(violation, dict) else "SCOPE_VIOLATION"


def _violation_words(violation: Any) -> str:
    """'changed src/x.py outside the allowed paths', 'FROZEN_SIGNATURE src/a.py:f: (x) became (x, y)'."""
    code = _violation_code(violation)
    path = clean(violation.get("path") if isinstance(violation, dict) else violation, 200)
    if code in VIOLATION_WORDS:
        return VIOLATION_WORDS[code].format(path=path)
    detail = str(violation.get("detail") or path) if isinstance(violation, dict) else path
    return f"{code} {clean(detail.removeprefix(code + ' '), 300)}"


def _drift_words(figures: Any) -> str:
    """An attempt's drift figures (gateway/tasks/drift.py) as one phrase: '; drift: 2 files (+12 -3), ...'."""
    if not isinstance(figures, dict):
        return ""
    words = [f"{figures.get('files_changed')} files (+{figures.get('lines_added')} -{figures.get('lines_removed')})"]
    if figures.get("files_outside_scope"):
        words.append(f"{figures['files_outside_scope']} outside the allowed paths")
    if figures.get("churn_vs_previous") is not None:
        words.append(f"{figures['churn_vs_previous']} lines of churn against the previous attempt")
    if figures.get("public_symbols_removed"):
        words.append(f"public symbols removed: {_listed(figures['public_symbols_removed'])}")
    renamed = [r for r in figures.get("public_symbols_renamed") or [] if isinstance(r, dict)]
    if renamed:
        pairs = [f"{r.get('from')} -> {r.get('to')}" for r in renamed]
        words.append(f"renamed: {_listed(pairs)}")
    if figures.get("files_unparsable"):
        words.append(f"unparsable: {_listed(figures['files_unparsable'])}")
    return "; drift: " + ", ".join(words)


def _why(d: JSONObject) -> str:
    return f": {clean(d.get('why'), 200)}" if d.get("why") else ""


def _outcome_words(outcome: JSONObject) -> str:
    parts = []
    if outcome.get("merge_commit"):
        parts.append(f"merge commit {clean(outcome['merge_commit'])}")
    if outcome.get("revert_commit"):
        parts.append(f"reverted by {clean(outcome['revert_commit'])}")
    if outcome.get("failed_command"):
        parts.append(f"post-merge check failed: {clean(outcome['failed_command'], 200)}")
    if outcome.get("tag"):
        parts.append(
            f"tag {clean(outcome['tag'])}" + (f" at {_short(outcome.get('commit'))}" if outcome.get("commit") else "")
        )
    if outcome.get("pushed"):
        parts.append(f"pushed {clean(outcome['pushed'])} to {clean(outcome.get('remote'))}")
    if "result" in outcome:
        parts.append(f"upstream result {clean(outcome['result'], 200)}")
    if outcome.get("reconciled"):
        parts.append("(reconciled after a restart)")
    return "; ".join(parts) or clean(outcome, 300)


def _failure(outcome: JSONObject) -> str:
    """Why an intent failed, in words: the error, the conflicting files, or the check that failed on the base."""
    if outcome.get("conflicts"):
        return f"conflicts in {', '.join(map(str, outcome['conflicts'][:10]))}"
    if outcome.get("failed_command"):
        return f"verification on the base failed: {outcome['failed_command']} (exit {outcome.get('exit_code')})"
    return str(outcome.get("error") or outcome)


def _side_effect(step: Step) -> str | None:
    effect = side_effect(step.name, step.detail)
    return clean(effect) if effect else None


def _generic(detail: JSONObject, skip: tuple[str, ...] = ()) -> str:
    return "; ".join(f"{k}={clean(v, 120)}" for k, v in detail.items() if k not in skip) or "(no detail)"


def short_time(iso: str) -> str:
    """10:36:20.491 from an ISO timestamp."""
    return iso[11:23] if len(iso) >= 23 else iso


def day_time(iso: str) -> str:
    """2026-11-23 10:36:20 from an ISO timestamp."""
    return iso[:19].replace("T", " ")


# --- the terminal ---------------------------------------------------------------------------------

OUTCOME_STYLE = {
    "ok": "green",
    "error": "red",
    "denied": "bold red",
    "invalid": "bold red",
    "asked": "bold yellow",
    "started": "yellow",
    "cancelled": "magenta",
    "interrupted": "bold magenta",
}


def call_label(call: CallView) -> Any:
    from rich.text import Text

    text = Text()
    text.append(f"{short_time(call.time)} ", style="dim")
    if call.dry_run:
        text.append("DRY RUN ", style="bold blue")  # gateway check: decided, never run
    text.append(clean(call.tool or "?", 80), style="bold")
    text.append(f"  {clean(call.agent or '?', 64)} ({clean(call.role or '?', 32)})", style="cyan")
    if call.decision:
        text.append(f"  {call.action} tier {call.tier}", style="magenta")
    text.append(f"  [{', '.join(clean(r, 80) for r in call.rules) or 'no rule'}]", style="dim")
    text.append(f"  → {call.outcome}", style=OUTCOME_STYLE.get(call.outcome, ""))
    if call.unconfined:
        text.append("  UNCONFINED (sandbox off)", style="bold red")
    return text


def call_tree(call: CallView) -> Any:
    from rich.text import Text
    from rich.tree import Tree

    node = Tree(call_label(call))
    for reason in call.reasons:
        node.add(Text(f"reason: {clean(reason, 500)}"))
    if call.error and call.decided_by == "policy" and call.error.get("message") not in call.reasons:
        node.add(Text(f"error: {clean(call.error.get('code'))}: {clean(call.error.get('message'), 500)}"))
    for line in call.effects_summary:
        node.add(Text(f"effect: {line}"))
    if call.decision and call.decision.get("revision"):
        node.add(Text(f"policy revision: {clean(call.decision['revision'], 80)}", style="dim"))
    if call.arguments is not None:
        node.add(Text(f"arguments: {clean(call.arguments, 600)}  [{call.arguments_source}]"))
    if call.approval:
        ap = call.approval
        by = f" by {clean(ap['by'])}" if ap.get("by") else ""
        now = f" (now {clean(call.approval_state)})" if call.approval_state not in (None, ap.get("answer")) else ""
        node.add(Text(f"approval {clean(ap.get('id'))}: {clean(ap.get('answer'))}{by}{now}", style="yellow"))
    if call.safeguard:
        node.add(
            Text(
                f"checkpoint {clean(call.safeguard.get('id'))} (undo: {clean(call.safeguard.get('rollback'))})",
                style="dim",
            )
        )
    for link in call.links:
        node.add(Text(f"→ trace {link['trace_id']} ({clean(link['why'])})", style="blue"))
    for step in call.steps:
        node.add(step_label(step))
    return node


def step_label(step: Step) -> Any:
    from rich.text import Text

    text = Text()
    text.append(f"{short_time(step.time)} ", style="dim")
    text.append(step.name, style="bold red" if step.outcome in BAD_STEPS else "bold blue")
    text.append(f"  {step.summary}")
    if step.actor and step.kind != "approval":
        text.append(f"  ({clean(step.actor, 100)})", style="cyan")
    for link in step.links:
        text.append(f"  → trace {link['trace_id']} ({clean(link['why'])})", style="blue")
    return text


def trace_heading(summary: TraceSummary) -> str:
    what = f"task {clean(summary.task_id)}" if summary.task_id else summary.kind
    parts = [
        f"trace {summary.trace_id} · {what} · {day_time(summary.first)} → {day_time(summary.last)}",
        f"{summary.calls} calls · {summary.denied} denied · {summary.asked} asked · {summary.errors} errors",
    ]
    if summary.side_effects:
        parts.append("side effects: " + ", ".join(summary.side_effects))
    return " · ".join(parts)


def terminal() -> Console:
    """A rich Console on stdout; when stdout is not a terminal (a pipe, a file, a test), lines are not cut."""
    from rich.console import Console

    console = Console()
    return console if console.is_terminal else Console(width=400, soft_wrap=True)


def render_trace(trace: Trace, console: Console | None = None) -> None:
    """Print one trace as a rich tree: the trace, its calls in order (principal, tool, decision, outcome,
    effects) with the task, intent and approval steps they caused. ``console``: a rich Console (default:
    a new one on stdout)."""
    from rich.text import Text
    from rich.tree import Tree

    console = console or terminal()
    tree = Tree(Text(trace_heading(trace.summary), style="bold"))
    for entry in trace.entries:
        if isinstance(entry, CallView):
            tree.add(call_tree(entry))
        else:
            tree.add(step_label(entry))
    console.print(tree)


def listed_names(names: list[str], width: int) -> str:
    """Names in a column ``width`` wide: as many as fit, then "+N" for the rest ("w1,w2+3")."""
    shown: list[str] = []
    for i, name in enumerate(names):
        more = f"+{len(names) - i - 1}" if i < len(names) - 1 else ""
        candidate = ",".join([*shown, clean(name, width)])
        if len(candidate) + len(more) > width and shown:
            return ",".join(shown) + f"+{len(names) - i}"
        shown.append(clean(name, width))
    return ",".join(shown)[:width] or "-"


def noise_words(noise: tuple[int, int]) -> str:
    """The traces ``Traces.list`` leaves out as noise, in words ('' when none)."""
    traces, calls = noise
    if not traces:
        return ""
    return (
        f"{traces} session{'s' if traces != 1 else ''} of only unknown-tool calls ({calls} calls) not listed: "
        "filter by rule gateway.unknown_tool to see them"
    )


def render_trace_list(
    summaries: list[TraceSummary], console: Console | None = None, noise: tuple[int, int] = (0, 0)
) -> None:
    """One line per trace: id, task or session, its agents, roles and tools, first and last time, calls,
    denied, asked, side effects; then how many traces of only unknown-tool calls were left out."""
    from rich.text import Text

    console = console or terminal()
    if noise[0]:
        console.print(noise_words(noise), style="dim")
    if not summaries:
        console.print("no traces match", style="dim")
        return
    console.print(
        Text(
            f"{'TRACE':32}  {'TASK/SESSION':14}  {'AGENT':16}  {'ROLE':12}  {'TOOL':24}  {'FIRST (UTC)':19}  "
            f"{'LAST (UTC)':19}  CALLS DENIED ASKED  SIDE EFFECTS"
        ),
        style="bold",
    )
    for s in summaries:
        what = clean(s.task_id, 14) if s.task_id else s.kind
        line = Text(f"{s.trace_id:32}  {what:14}  ")
        line.append(f"{listed_names(s.agents, 16):16}  ", style="cyan")
        line.append(f"{listed_names(s.roles, 12):12}  {listed_names(s.tools, 24):24}  ")
        line.append(f"{day_time(s.first):19}  {day_time(s.last):19}  {s.calls:5} ")
        line.append(f"{s.denied:6}", style="bold red" if s.denied else "")
        line.append(f" {s.asked:5}", style="bold yellow" if s.asked else "")
        line.append(f"  {', '.join(s.side_effects) or '-'}")
        console.print(line)
