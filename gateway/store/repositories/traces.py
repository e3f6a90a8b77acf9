"""The review index read back: every SQL string of gateway/traces.py (the one read model of the ledger).

Reads only: the review index (``calls``, ``call_rules``, ``call_counts``, ``trace_summaries``, ``trace_steps``:
review_index.py writes them with each ledger row), the ledger rows a page or a trace shows, and the approvals
whose requests hold a call's arguments. Filters become SQL conditions here, and nowhere else.

    rows = traces.summaries(store, Filters(denied=True), limit=50, offset=0)   # refused first, then asked
    counted = traces.outcome_counts(store, Filters(agent="w1"), at=traces.newest_call(store))
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar, Protocol

from gateway.store.interface import Row, Store
from gateway.store.repositories.review_index import BLOCK_SHIFT
from gateway.types import JSONObject

__all__ = [
    "CallFilter",
    "CallRow",
    "Participant",
    "SummaryRow",
    "approval_requests",
    "approval_states",
    "bodies",
    "call",
    "call_where",
    "calls",
    "known",
    "newest_call",
    "noise",
    "outcome_counts",
    "participants",
    "prefixed",
    "refused_credentials",
    "summaries",
    "trace_bodies",
]

CHUNK = 500  # bound parameters per statement: SQLite allows few


class CallFilter(Protocol):
    """Which calls to count or show (gateway/traces.py's ``Filters``, a dataclass)."""

    __dataclass_fields__: ClassVar[dict[str, Any]]
    role: str | None
    agent: str | None
    task: str | None
    tier: int | None
    rule: str | None
    outcome: str | None
    denied: bool
    tool: str | None
    since: datetime | None
    until: datetime | None
    checks: bool

    def active(self) -> bool: ...


@dataclass(frozen=True, slots=True)
class SummaryRow:
    """A trace's index row: its extent, counts and side effects (``kind:words``)."""

    trace_id: str
    first_seq: int
    last_seq: int
    first: str
    last: str
    calls: int
    refused: int
    asked: int
    errors: int
    dry_runs: int
    unknown: int
    checkpoints: int
    side_effects: list[str]

    @classmethod
    def of(cls, row: Row) -> SummaryRow:
        return cls(
            trace_id=str(row["trace_id"]),
            first_seq=row["first_seq"],
            last_seq=row["last_seq"],
            first=row["first"],
            last=row["last"],
            calls=row["calls"],
            refused=row["refused"],
            asked=row["asked"],
            errors=row["errors"],
            dry_runs=row["dry_runs"],
            unknown=row["unknown"],
            checkpoints=row["checkpoints"],
            side_effects=json.loads(row["side_effects"] or "[]"),
        )


@dataclass(frozen=True, slots=True)
class Participant:
    """Who made calls of one tool in a trace: how many, and the first one's ledger row."""

    agent: str | None
    role: str | None
    tool: str | None
    n: int
    first_seq: int


@dataclass(frozen=True, slots=True)
class CallRow:
    """A call's index row: its first ledger row, its final one (None while it runs), its task."""

    call_id: str
    seq: int
    final_seq: int | None
    task: str | None


# --- traces ---------------------------------------------------------------------------------------


def summaries(store: Store, filters: CallFilter, limit: int | None, offset: int) -> list[SummaryRow]:
    """Traces with a matching call (with no filter: every trace but those of only unknown-tool calls, and of
    only dry runs unless asked for): refused first, then asked, then the rest; newest first in each."""
    if filters.active():
        where, params = call_where(filters, None)
        where = f"trace_id IN (SELECT trace_id FROM calls WHERE {where}{_grouped(store, where, params)})"
    else:
        shown = "(calls = 0 OR unknown < calls)"
        where, params = (shown if filters.checks else f"{shown} AND (calls = 0 OR dry_runs < calls)"), []
    sql = f"SELECT * FROM trace_summaries WHERE {where} ORDER BY (refused = 0), (asked = 0), last_seq DESC"
    if limit:
        sql, params = sql + " LIMIT ? OFFSET ?", [*params, limit, offset]
    return [SummaryRow.of(row) for row in store.query(sql, params)]


FEW_CALLS = 50_000  # matching calls under which a filtered trace list gathers their traces first


def _grouped(store: Store, where: str, params: list[Any]) -> str:
    """A GROUP BY for the calls' trace ids when fewer than FEW_CALLS calls match (counted up to there): their
    traces are then gathered first and sorted, where walking every trace in order and probing its calls took
    0.4 s of PostgreSQL's CPU at a million calls for an agent's 375 traces (and gathering is what costs for a
    filter most calls match: the walk finds its page early)."""
    probe = f"SELECT count(*) AS n FROM (SELECT 1 FROM calls WHERE {where} LIMIT ?) AS matching"
    return " GROUP BY trace_id" if int(store.query(probe, [*params, FEW_CALLS])[0]["n"]) < FEW_CALLS else ""


def noise(store: Store, checks: bool) -> tuple[int, int]:
    """(traces, calls) of traces whose every call named no tool there is (and was no dry run, unless ``checks``)."""
    row = store.query(
        "SELECT count(*) AS traces, COALESCE(sum(calls), 0) AS calls FROM trace_summaries "
        "WHERE calls > 0 AND unknown = calls" + ("" if checks else " AND dry_runs < calls")
    )[0]
    return int(row["traces"]), int(row["calls"])


def participants(store: Store, trace_ids: Sequence[str]) -> dict[str, list[Participant]]:
    """Who made calls of each tool in each of these traces: one query a chunk, not one a trace (a trace list of
    500 on PostgreSQL paid 500 round trips)."""
    found: dict[str, list[Participant]] = {}
    for i in range(0, len(trace_ids), CHUNK):
        chunk = list(trace_ids[i : i + CHUNK])
        rows = store.query(
            "SELECT trace_id, agent, role, tool, count(*) AS n, min(seq) AS first_seq FROM calls "
            f"WHERE trace_id IN ({', '.join('?' * len(chunk))}) GROUP BY trace_id, agent, role, tool",
            chunk,
        )
        for r in rows:
            found.setdefault(str(r["trace_id"]), []).append(
                Participant(r["agent"], r["role"], r["tool"], r["n"], r["first_seq"])
            )
    return found


def trace_bodies(store: Store, trace_id: str) -> list[str]:
    """The ledger rows of a trace, in order: those carrying its id, its steps, and its calls' first and last."""
    # one UNION of index lookups, not ORs: PostgreSQL does not combine ORs across tables and scanned the whole
    # ledger, parsing each row's JSON (26 s at a million calls; bench/README.md)
    rows = store.query(
        "SELECT body FROM ledger WHERE seq IN (SELECT seq FROM ledger WHERE json_extract(body, '$.trace_id') = ? "
        "UNION SELECT seq FROM trace_steps WHERE trace_id = ? UNION SELECT seq FROM calls WHERE trace_id = ? "
        "UNION SELECT final_seq FROM calls WHERE trace_id = ?) ORDER BY seq",
        (trace_id, trace_id, trace_id, trace_id),
    )
    return [str(r["body"]) for r in rows]


def known(store: Store, trace_id: str) -> bool:
    return bool(store.query("SELECT 1 FROM trace_summaries WHERE trace_id = ?", (trace_id,)))


def prefixed(store: Store, prefix: str, limit: int = 2) -> list[str]:
    """Trace ids that begin with ``prefix``, at most ``limit``."""
    rows = store.query(
        "SELECT trace_id FROM trace_summaries WHERE trace_id >= ? AND trace_id < ? ORDER BY trace_id LIMIT ?",
        (prefix, prefix + "\U0010ffff", limit),
    )
    return [str(r["trace_id"]) for r in rows]


# --- calls ----------------------------------------------------------------------------------------


def newest_call(store: Store) -> int:
    """The ledger row the newest call began at (0: none yet)."""
    return int(store.query("SELECT COALESCE(max(seq), 0) AS s FROM calls")[0]["s"])


def calls(store: Store, filters: CallFilter, at: int, before: int | None, size: int, skip: int) -> list[CallRow]:
    """Matching calls that began at or before ``at`` (and before ``before``), newest first, ``size`` from ``skip``."""
    where, params = call_where(filters, at)
    if before is not None:
        where, params = f"{where} AND seq < ?", [*params, before]
    rows = store.query(
        f"SELECT call_id, seq, final_seq, task FROM calls WHERE {where} ORDER BY seq DESC LIMIT ? OFFSET ?",
        [*params, size, skip],
    )
    return [_call(r) for r in rows]


def call(store: Store, call_id: str) -> CallRow | None:
    rows = store.query("SELECT call_id, seq, final_seq, task FROM calls WHERE call_id = ?", (call_id,))
    return _call(rows[0]) if rows else None


def bodies(store: Store, seqs: Sequence[int]) -> dict[int, str]:
    """The ledger rows at ``seqs``, by seq."""
    found: dict[int, str] = {}
    for i in range(0, len(seqs), CHUNK):
        chunk = list(seqs[i : i + CHUNK])
        marks = ", ".join("?" * len(chunk))
        for r in store.query(f"SELECT seq, body FROM ledger WHERE seq IN ({marks})", chunk):
            found[int(r["seq"])] = str(r["body"])
    return found


def refused_credentials(store: Store, limit: int) -> list[str]:
    """The ledger rows of requests refused before any principal existed (kind "auth"), newest first."""
    rows = store.query(
        "SELECT body FROM ledger WHERE json_extract(body, '$.kind') = 'auth' ORDER BY seq DESC LIMIT ?", (limit,)
    )
    return [str(r["body"]) for r in rows]


def _call(row: Row) -> CallRow:
    return CallRow(row["call_id"], row["seq"], row["final_seq"], row["task"])


# --- counting -------------------------------------------------------------------------------------


def outcome_counts(store: Store, filters: CallFilter, at: int) -> Counter[str]:
    """The calls that match ``filters`` and began at or before ledger row ``at``, by outcome, "allowed",
    "approved" and "any". Unless filtered by task or by a rule prefix ending in a dot, from ``call_counts``
    (``rule_counts`` for a rule: the groups of each rule and its dot-prefixes), whole UTC days, plus the calls
    of the part-days a time range cuts, less the calls after ``at``: exact, at the cost of the groups."""
    counted: Counter[str] = Counter()
    if filters.task or (filters.rule and filters.rule.endswith(".")):  # no groups: call by call, by index
        _tally(store, counted, *call_where(filters, at))
        return counted
    full, windows = _days(filters.since, filters.until)
    if full is not None:
        clauses, params = _common_where(filters)
        table = "call_counts"
        if filters.rule:
            table = "rule_counts"
            clauses.append("rule = ?")
            params.append(filters.rule)
        for column, bound, value in (("day", ">=", full[0]), ("day", "<=", full[1])):
            if value is not None:
                clauses.append(f"{column} {bound} ?")
                params.append(value)
        for row in store.query(
            "SELECT outcome, sum(n) AS n, sum(CASE WHEN action = 'allow' THEN n ELSE 0 END) AS allowed, "
            f"sum(CASE WHEN approved = 1 THEN n ELSE 0 END) AS approved FROM {table} "
            f"WHERE {' AND '.join(clauses) or '1 = 1'} GROUP BY outcome",
            params,
        ):
            _add(counted, row, 1)
    for since, until in windows:
        _tally(store, counted, *call_where(replace(filters, since=since, until=until), None))
    newest = newest_call(store)
    if newest > at:  # calls after ``at`` are in the groups, not in the view
        where, params = call_where(filters, newest)
        _tally(store, counted, f"{where} AND seq > ?", [*params, at], -1)
    return counted


SEEK_FROM = 1 << BLOCK_SHIFT  # a page by number this deep or deeper skips whole blocks (``seek_block``)
CALLS_IN_TOP_BLOCK = "SELECT count(*) AS n FROM calls WHERE seq >= ? AND seq <= ?"
CALLS_PER_BLOCK = "SELECT block, sum(n) AS n FROM call_blocks WHERE block < ? {dry} GROUP BY block ORDER BY block DESC"


def seek_block(store: Store, checks: bool, at: int, offset: int) -> tuple[int, int]:
    """Where the unfiltered page at ``offset`` (newest first, calls up to ledger row ``at``) begins: (a seq it lies
    below, the offset left from there), from the calls counted per block (``call_blocks``), so a page 500,000
    calls deep walks at most a block's calls, not 500,000. (0, 0): past the last call."""
    top = at >> BLOCK_SHIFT
    dry = "" if checks else " AND kind != 'check'"
    in_top = int(store.query(CALLS_IN_TOP_BLOCK + dry, (top << BLOCK_SHIFT, at))[0]["n"])
    if offset < in_top:
        return at + 1, offset
    left = offset - in_top
    for block in store.query(CALLS_PER_BLOCK.format(dry="" if checks else "AND dry = 0"), (top,)):
        if left < int(block["n"]):
            return (int(block["block"]) + 1) << BLOCK_SHIFT, left
        left -= int(block["n"])
    return 0, 0


def _tally(store: Store, counted: Counter[str], where: str, params: list[Any], sign: int = 1) -> None:
    """Add (``sign`` 1) or take away (-1) the calls of ``where``, by outcome, allowed, approved and any."""
    for row in store.query(
        "SELECT outcome, count(*) AS n, sum(CASE WHEN action = 'allow' THEN 1 ELSE 0 END) AS allowed, "
        f"sum(approved) AS approved FROM calls WHERE {where} GROUP BY outcome",
        params,
    ):
        _add(counted, row, sign)


def _add(counted: Counter[str], row: Row, sign: int) -> None:
    counted[str(row["outcome"])] += sign * int(row["n"])
    counted["allowed"] += sign * int(row["allowed"] or 0)
    counted["approved"] += sign * int(row["approved"] or 0)
    counted["any"] += sign * int(row["n"])


def _days(since: datetime | None, until: datetime | None) -> tuple[tuple[str | None, str | None] | None, Any]:
    """A time range as whole UTC days (first, last; None: open) and the part-days at its ends [(from, to)]; no
    whole days (None) when the range lies within one day or two."""
    if since is None and until is None:
        return (None, None), []
    start = since.astimezone(UTC) if since is not None else None
    end = until.astimezone(UTC) if until is not None else None
    first = _midnight(start, up=True) if start is not None else None  # where the whole days begin
    stop = _midnight(end, up=False) if end is not None else None  # and end (not included)
    if first is not None and stop is not None and first >= stop:
        return None, [(start, end)]
    windows = []
    if start is not None and first is not None and start < first:
        windows.append((start, first))
    if end is not None and stop is not None and stop < end:
        windows.append((stop, end))
    last = (stop - timedelta(days=1)).date().isoformat() if stop is not None else None
    return (first.date().isoformat() if first is not None else None, last), windows


def _midnight(when: datetime, up: bool) -> datetime:
    """The UTC midnight at or before ``when`` (``up``: at or after)."""
    down = when.replace(hour=0, minute=0, second=0, microsecond=0)
    return down + timedelta(days=1) if up and down != when else down


def _common_where(filters: CallFilter) -> tuple[list[str], list[Any]]:
    """The conditions ``calls`` and ``call_counts`` share: kind, agent, role, tool, tier, refused."""
    clauses: list[str] = []
    params: list[Any] = []
    if not filters.checks:
        clauses.append("kind != 'check'")
    for column, value in (("agent", filters.agent), ("role", filters.role), ("tool", filters.tool)):
        if value:
            clauses.append(f"{column} = ?")
            params.append(value)
    if filters.tier is not None:
        clauses.append("tier = ?")
        params.append(filters.tier)
    if filters.denied:
        clauses.append("outcome IN ('denied', 'invalid')")
    return clauses, params


def call_where(filters: CallFilter, at: int | None) -> tuple[str, list[Any]]:
    """The SQL condition on the ``calls`` index that ``filters`` set (and ``seq <= at``), with its parameters."""
    clauses, params = _common_where(filters)
    if at is not None:
        clauses.append("seq <= ?")
        params.append(at)
    if filters.task:
        clauses.append("task = ?")
        params.append(filters.task)
    times: list[str] = []
    if filters.since is not None:
        times.append(filters.since.astimezone(UTC).isoformat(timespec="microseconds"))
        clauses.append("time >= ?")
    if filters.until is not None:
        times.append(filters.until.astimezone(UTC).isoformat(timespec="microseconds"))
        clauses.append("time < ?")
    if times:
        # the range's first and last seq bound the walk down ``seq`` (exact: its calls lie between them), so the
        # page does not read every newer call first (PostgreSQL's plan, 0.95 s for one day at a million calls);
        # ``seq + 0``: found over the range by the time index, not by walking ``seq`` until the time matches
        within = " AND ".join(clauses[-len(times) :])
        clauses.append(f"seq >= (SELECT min(seq + 0) FROM calls WHERE {within})")
        clauses.append(f"seq <= (SELECT max(seq + 0) FROM calls WHERE {within})")
        params += [*times, *times, *times]
    if filters.rule:
        prefix = filters.rule.rstrip(".") + "."
        clauses.append("seq IN (SELECT seq FROM call_rules WHERE rule = ? OR (rule >= ? AND rule < ?))")
        params += [filters.rule, prefix, prefix[:-1] + "/"]  # "/" follows "." in code point order
    if filters.outcome == "allowed":
        clauses.append("action = 'allow'")
    elif filters.outcome == "approved":
        clauses.append("approved = 1")
    elif filters.outcome:
        clauses.append("outcome = ?")
        params.append(filters.outcome)
    return " AND ".join(clauses) or "1 = 1", params


# --- where a call's arguments are kept ------------------------------------------------------------


def approval_states(store: Store, ids: list[str]) -> dict[str, str]:
    """The state of each of these approvals."""
    return {r["id"]: r["state"] for r in _approvals(store, "id, state", "id", ids)}


def approval_requests(store: Store, digests: list[str]) -> list[tuple[str, JSONObject]]:
    """(arguments digest, request) of the approvals asked for calls with these arguments, oldest first."""
    rows = _approvals(store, "arguments_digest, request", "arguments_digest", digests)
    return [(str(r["arguments_digest"]), json.loads(r["request"] or "{}")) for r in rows]


def _approvals(store: Store, columns: str, key: str, values: list[str]) -> list[Row]:
    """Approval rows whose ``key`` is one of ``values``, oldest first (in chunks: bound parameters are few)."""
    rows: list[Row] = []
    for i in range(0, len(values), CHUNK):
        chunk = values[i : i + CHUNK]
        marks = ", ".join("?" * len(chunk))
        rows += store.query(f"SELECT {columns} FROM approvals WHERE {key} IN ({marks}) ORDER BY created", chunk)
    return rows
