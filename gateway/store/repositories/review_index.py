"""The review index: one row per call and one per trace, written in the transaction that writes the ledger row.

The review pages, their exports and `gateway trace list` read these tables, never the whole ledger, so a page
costs what it shows (docs/review.md). The index is derived: every fact in it comes from ledger rows, and it can
be rebuilt from them at any time.

- ``calls``: a call's first row (``seq``, its time and kind), its newest final row (``final_seq``: outcome,
  decision, approval), and what the review filters by (agent, role, task, tool, tier, action, outcome).
- ``call_rules``: (rule, seq) for each rule a call's decision names: the rule filter, by prefix.
- ``call_counts``: how many calls there are per UTC day and kind, agent, role, tool, tier, outcome, action and
  approval: the outcome tabs' counts are sums over these groups, not over the calls.
- ``rule_counts``: the same groups per rule key (each rule a call's decision names and each of its dot-prefixes,
  once per call): the rule filter's counts (``paths`` matches ``paths.out_of_scope``) are sums too.
- ``call_blocks``: how many calls (dry runs apart) began in each block of BLOCK_ROWS ledger rows: a page by
  number jumps to its block by these sums and walks at most a block (``traces.seek_block``).
- ``trace_summaries``: per trace, its time span and its counts (calls, refused, asked, errors, dry runs,
  unknown-tool calls, checkpoints) and its side effects, kept current row by row.
- ``trace_steps``: (trace, seq) of the rows that carry no trace id of their own but belong to one: approvals
  (through the call that asked) and rollbacks (through the call that took the checkpoint).

``index_row`` merges one ledger row and is idempotent: indexing a row again changes nothing, and a call's
started row indexed after its final row (a backfill) still gives the same call. The cursor ``review-index``
says every row up to it is indexed; an append moves it when it was caught up, and ``catch_up`` indexes what
lies past it (a ledger from before this index, rows a tool wrote directly), a batch per transaction, so a
crash mid-way resumes where the last batch committed.

A whole index to build on PostgreSQL (the cursor at 0 and REBUILD_FROM rows or more: a ledger from before the
index, or a migration that emptied it) is built apart (``rebuild``): the same ``index_row`` over the ledger in
order, into a scratch SQLite file where every statement is local, then swapped into the store in one transaction
(multi-row INSERTs) with the cursor moved to the last row it holds; ``catch_up`` goes on from there. Row at a
time, PostgreSQL pays a round trip per statement (about 16 a row: 49-81 rows/s on a loaded 2-core machine, hours
for a million calls); apart, the statements are SQLite's (20x faster at 5,000 calls). SQLite itself gains
nothing from it (its statements are local already) and would hold its write lock through the whole swap, so
it indexes a batch a transaction (bench/README.md has both). Rows appended meanwhile were indexed by their
appends: the swap empties the tables first and ``catch_up`` indexes those rows again, so the index is the one a
row-at-a-time catch-up gives.

    with store.transaction() as tx:
        ledger.append(tx, stored)    # the ledger row (gateway/store/repositories/ledger.py), then
        index_row(tx, body)          # its index: Ledger.append_in does both
    catch_up(store)                  # the review pages call this before they read
"""

from __future__ import annotations

import json
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import structlog

from gateway.store.interface import Row, Store, Transaction, one_row
from gateway.store.repositories import cursors
from gateway.types import JSONObject

__all__ = [
    "BLOCK_SHIFT",
    "CALL_KINDS",
    "CURSOR",
    "DERIVED",
    "REFUSED",
    "UNKNOWN_TOOL",
    "catch_up",
    "index_row",
    "rebuild",
    "side_effect",
]

CALL_KINDS = ("call", "hook", "check", "verify", "ceremony_check", "scope")  # ledger rows of calls (CallKind)
REFUSED = ("denied", "invalid")  # refused before anything ran: by identity/scope/policy, or as malformed
UNKNOWN_TOOL = "gateway.unknown_tool"  # the rule of a call naming no tool there is
CURSOR = "review-index"
BATCH = 2000  # rows a catch-up transaction indexes
REBUILD_FROM = 50_000  # rows to index from the cursor at 0 at or past which the index is built apart (rebuild)
READ_ROWS = 20_000  # ledger rows a rebuild reads at once
PARAMETERS = 999  # bound parameters per statement of the swap (SQLite's oldest limit)
log = structlog.get_logger("gateway.store")
DERIVED = ("calls", "call_rules", "call_counts", "rule_counts", "call_blocks", "trace_summaries", "trace_steps")
BLOCK_SHIFT = 12  # call_blocks: a block is the calls whose first row's seq >> BLOCK_SHIFT is the same
BLOCK_ROWS = 1 << BLOCK_SHIFT

# the group tables: a call counts in one call_counts row and, per rule key, one rule_counts row
COUNT_COLUMNS = "day, kind, agent, role, tool, tier, outcome, action, approved"
ADD_COUNT = (
    f"INSERT INTO call_counts ({COUNT_COLUMNS}, n) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
    f"ON CONFLICT ({COUNT_COLUMNS}) DO UPDATE SET n = call_counts.n + excluded.n"
)
ADD_RULE_COUNT = (
    f"INSERT INTO rule_counts (rule, {COUNT_COLUMNS}, n) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
    f"ON CONFLICT (rule, {COUNT_COLUMNS}) DO UPDATE SET n = rule_counts.n + excluded.n"
)
ADD_BLOCK = (
    "INSERT INTO call_blocks (block, dry, n) VALUES (?, ?, ?) "
    "ON CONFLICT (block, dry) DO UPDATE SET n = call_blocks.n + excluded.n"
)
RULES_OF = "SELECT rule FROM call_rules WHERE seq = ?"


def catch_up(store: Store, batch: int = BATCH, rebuild_from: int | None = None) -> int:
    """Index the ledger rows past the cursor, ``batch`` rows a transaction (a whole index of ``rebuild_from`` rows
    or more, by default REBUILD_FROM on PostgreSQL and never on SQLite: built apart, ``rebuild``); answers how many
    were indexed. Cheap when caught up: two indexed lookups."""
    from gateway.store.sqlite import SqliteStore

    if rebuild_from is None:
        rebuild_from = sys.maxsize if isinstance(store, SqliteStore) else REBUILD_FROM
    done = 0
    while True:
        state = store.query(
            "SELECT (SELECT seq FROM cursors WHERE name = ?) AS at, (SELECT max(seq) FROM ledger) AS newest", (CURSOR,)
        )[0]
        if (state["newest"] or 0) <= (state["at"] or 0) and state["at"] is not None:
            return done
        if not state["at"] and state["newest"] >= rebuild_from and not done:
            done += rebuild(store, int(state["newest"]))
            continue
        with store.transaction() as tx:
            position = cursors.position_in(tx, CURSOR)
            at = position.seq if position is not None else 0
            if position is None:
                cursors.place(tx, CURSOR, 0)
            rows = tx.execute("SELECT body FROM ledger WHERE seq > ? ORDER BY seq LIMIT ?", (at, batch)).fetchall()
            for body in rows:
                index_row(tx, json.loads(body["body"]), advance=False)
                done += 1
            if rows:
                cursors.move(tx, CURSOR, json.loads(rows[-1]["body"])["seq"])
        if not rows:
            return done


def rebuild(store: Store, upto: int) -> int:
    """Index ledger rows 1 to ``upto`` apart (a scratch SQLite file, its own transactions: the store's write lock
    is not held), then swap them in with the cursor at ``upto``, in one transaction, unless the cursor moved
    from 0 meanwhile (another process's rebuild came first: ours is dropped). Answers the rows indexed (0 when
    dropped)."""
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="gateway-review-index-") as scratch:
        apart = _scratch_index(store, Path(scratch) / "index.db")
        try:
            done = last = 0
            while rows := store.query(
                "SELECT seq, body FROM ledger WHERE seq > ? AND seq <= ? ORDER BY seq LIMIT ?", (last, upto, READ_ROWS)
            ):
                apart.execute("BEGIN")
                for found in rows:
                    index_row(apart, json.loads(found["body"]), advance=False)
                apart.execute("COMMIT")
                done, last = done + len(rows), int(rows[-1]["seq"])
            built = time.monotonic()
            with store.transaction() as tx:
                position = cursors.position_in(tx, CURSOR)
                if position is not None and position.seq != 0:
                    return 0
                for table in DERIVED:
                    tx.execute(f"DELETE FROM {table}")  # rows appends indexed meanwhile: catch_up indexes them again
                    _copy(apart, tx, table)
                cursors.move(tx, CURSOR, upto)
            swapped = time.monotonic()
            took = {"built_s": round(built - began, 1), "swap_s": round(swapped - built, 1)}
            log.info("review index rebuilt", rows=done, **took)
            return done
        finally:
            apart.close()


def _scratch_index(store: Store, path: Path) -> sqlite3.Connection:
    """A scratch SQLite database with the gateway's schema for ``index_row`` to write: the tasks and checkpoints it
    reads copied in, no journal, no fsync, and ``calls`` keyed by call id only (the filters' indexes are the
    store's business, not the build's)."""
    from gateway.store.sqlite import SqliteStore

    SqliteStore.open(path).close()
    apart = sqlite3.connect(path, isolation_level=None)
    apart.row_factory = sqlite3.Row
    for pragma in ("journal_mode=OFF", "synchronous=OFF", "cache_size=-262144"):
        apart.execute(f"PRAGMA {pragma}")
    dropped = "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'calls' AND sql IS NOT NULL"
    for (name,) in apart.execute(dropped).fetchall():
        apart.execute(f"DROP INDEX {name}")
    for table in ("tasks", "checkpoints"):  # what index_row reads besides the index (rows in order: no ledger)
        rows = store.query(f"SELECT * FROM {table}")
        if rows:
            columns = list(rows[0].keys())
            apart.executemany(
                f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
                [tuple(r[c] for c in columns) for r in rows],
            )
    return apart


def _copy(apart: sqlite3.Connection, tx: Transaction, table: str) -> None:
    """A table of the scratch index into the store's, as many rows a statement as bound parameters allow."""
    rows = apart.execute(f"SELECT * FROM {table}")
    columns = [d[0] for d in rows.description]
    each = "(" + ", ".join("?" * len(columns)) + ")"
    insert = f"INSERT INTO {table} ({', '.join(columns)}) VALUES "
    while chunk := rows.fetchmany(PARAMETERS // len(columns)):
        tx.execute(insert + ", ".join([each] * len(chunk)), [value for row in chunk for value in row])


def index_row(tx: Transaction, row: JSONObject, advance: bool = True) -> None:
    """Merge one ledger row (its parsed body) into the index; ``advance``: move the cursor past it if the
    cursor stood just before it (an append; a catch-up moves the cursor itself)."""
    kind = row.get("kind")
    trace_id: str | None = row.get("trace_id")
    if kind in CALL_KINDS and row.get("call_id"):
        trace_id = _index_call(tx, row)
    elif kind == "approval":
        trace_id = _approval_trace(tx, row)
    elif kind == "rollback":
        trace_id = _rollback_trace(tx, row)
    if trace_id:
        _touch_trace(tx, trace_id, row)
    submitted_in = (row.get("detail") or {}).get("submitted_in") if kind == "task" else None
    if submitted_in:  # the session a task was submitted from shows the submission as a link
        tx.execute(
            "INSERT INTO trace_steps (trace_id, seq) VALUES (?, ?) ON CONFLICT DO NOTHING",
            (submitted_in, row["seq"]),
        )
    if advance:
        cursors.step(tx, CURSOR, row["seq"])


def _rules(row: JSONObject) -> list[str]:
    """A call row's rules as the review shows them: its decision's, else the gateway's refusal code."""
    decision = row.get("decision")
    if decision:
        return [str(r) for r in decision.get("rules") or []]
    code = ((row.get("detail") or {}).get("error") or {}).get("code")
    return [f"gateway.{code}"] if code else []


def _index_call(tx: Transaction, row: JSONObject) -> str | None:
    select = "SELECT * FROM calls WHERE call_id = ?"
    before = tx.execute(select, (row["call_id"],)).fetchone()
    was = _counted_as(before), _rule_keys(tx, before), _block_of(before)
    trace_id = _merge_call(tx, row, before)
    after = tx.execute(select, (row["call_id"],)).fetchone()
    now = _counted_as(after), _rule_keys(tx, after), _block_of(after)
    if was != now:  # the call counts elsewhere now (it ended, or its first row came in late)
        _add_counts(tx, *was, -1)
        _add_counts(tx, *now, 1)
    if (row.get("detail") or {}).get("safeguard"):  # the call took a checkpoint: counted once
        took = tx.execute("UPDATE calls SET checkpoint = 1 WHERE call_id = ? AND checkpoint = 0", (row["call_id"],))
        if took.rowcount and trace_id:
            tx.execute("UPDATE trace_summaries SET checkpoints = checkpoints + 1 WHERE trace_id = ?", (trace_id,))
    return trace_id


def _counted_as(call: Row | None) -> tuple[Any, ...] | None:
    """The ``call_counts`` group a call counts in: its UTC day and what the review filters by (none: NULL)."""
    if call is None:
        return None
    return (
        str(call["time"])[:10],
        call["kind"],
        call["agent"] or "",
        call["role"] or "",
        call["tool"] or "",
        call["tier"] or 0,
        call["outcome"],
        call["action"] or "",
        call["approved"],
    )


def _rule_keys(tx: Transaction, call: Row | None) -> list[str]:
    """What the rule filter matches a call by: each rule its decision names and each rule's dot-prefixes, once
    (``tiers.create`` and ``tiers.read`` give ``tiers``, ``tiers.create``, ``tiers.read``)."""
    if call is None:
        return []
    keys: dict[str, None] = {}
    for found in tx.execute(RULES_OF, (call["seq"],)).fetchall():
        rule = str(found["rule"])
        keys.update((rule[:i], None) for i, ch in enumerate(rule) if ch == "." and i)
        keys[rule] = None
    return sorted(keys)


def _block_of(call: Row | None) -> tuple[int, int] | None:
    """The ``call_blocks`` row a call counts in: its first row's block, and whether it is a dry run."""
    return None if call is None else (int(call["seq"]) >> BLOCK_SHIFT, int(call["kind"] == "check"))


def _add_counts(
    tx: Transaction, group: tuple[Any, ...] | None, rule_keys: list[str], block: tuple[int, int] | None, n: int
) -> None:
    """Add a call (``n`` 1) to, or take it (-1) from, its group, its rule keys' groups and its block."""
    if group is not None:
        tx.execute(ADD_COUNT, (*group, n))
        for key in rule_keys:
            tx.execute(ADD_RULE_COUNT, (key, *group, n))
    if block is not None:
        tx.execute(ADD_BLOCK, (*block, n))


def _merge_call(tx: Transaction, row: JSONObject, old: Row | None) -> str | None:
    seq, call_id = row["seq"], row["call_id"]
    final = row.get("outcome") != "started"
    if old is None:
        principal = row.get("principal") or {}
        trace_id = row.get("trace_id")
        task = principal.get("task") or _task_of(tx, trace_id)
        values: dict[str, Any] = (
            _final_values(row) if final else {"outcome": "started", "action": None, "tier": None, "approved": 0}
        )
        tx.execute(
            "INSERT INTO calls (call_id, seq, final_seq, time, kind, trace_id, agent, role, task, tool, outcome, "
            "action, tier, approved, unknown) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                call_id,
                seq,
                seq if final else None,
                row["time"],
                str(row.get("kind") or "call"),
                trace_id,
                principal.get("agent"),
                principal.get("role"),
                task,
                row.get("tool"),
                values["outcome"],
                values["action"],
                values["tier"],
                values["approved"],
                int(UNKNOWN_TOOL in _rules(row)),
            ),
        )
        if not final and row.get("decision"):
            decision = row["decision"]
            tx.execute(
                "UPDATE calls SET action = ?, tier = ? WHERE call_id = ?",
                (decision.get("action"), decision.get("tier"), call_id),
            )
        _set_rules(tx, seq, _rules(row))
        if trace_id:
            _adopt(tx, call_id, trace_id)
            _ensure_trace(tx, trace_id, row)
            _count(tx, trace_id, row.get("kind") == "check", None, str(values["outcome"]), UNKNOWN_TOOL in _rules(row))
        return trace_id
    trace_id = str(old["trace_id"]) if old["trace_id"] else None
    if final and (old["final_seq"] is None or seq > old["final_seq"]):
        values = _final_values(row)
        rules = _rules(row)
        if not row.get("decision") and old["action"] is not None:  # decided on its first row: keep that
            values["action"], values["tier"] = old["action"], old["tier"]
            rules = rules or [r["rule"] for r in tx.execute("SELECT rule FROM call_rules WHERE seq = ?", (old["seq"],))]
        tx.execute(
            "UPDATE calls SET final_seq = ?, outcome = ?, action = ?, tier = ?, approved = ?, unknown = ?, "
            "tool = COALESCE(?, tool) WHERE call_id = ?",
            (
                seq,
                values["outcome"],
                values["action"],
                values["tier"],
                values["approved"],
                int(UNKNOWN_TOOL in rules),
                row.get("tool"),
                call_id,
            ),
        )
        _set_rules(tx, old["seq"], rules)
        if trace_id:
            _ensure_trace(tx, trace_id, row)
            _recount(tx, trace_id, old["outcome"], str(values["outcome"]), bool(old["unknown"]), UNKNOWN_TOOL in rules)
    elif seq < old["seq"]:  # its first row, indexed after a later one (a catch-up behind an append)
        tx.execute("DELETE FROM call_rules WHERE seq = ?", (old["seq"],))
        tx.execute(
            "UPDATE calls SET seq = ?, time = ?, kind = ? WHERE call_id = ?",
            (seq, row["time"], str(row.get("kind") or "call"), call_id),
        )
        rules = _rules(row) if old["final_seq"] is None else []
        _set_rules(tx, seq, rules or _rules_of_final(tx, old["final_seq"]))
    return trace_id


def _rules_of_final(tx: Transaction, final_seq: int | None) -> list[str]:
    if final_seq is None:
        return []
    body = tx.execute("SELECT body FROM ledger WHERE seq = ?", (final_seq,)).fetchone()
    return _rules(json.loads(body["body"])) if body else []


def _final_values(row: JSONObject) -> dict[str, Any]:
    decision = row.get("decision") or {}
    approval = (row.get("detail") or {}).get("approval") or {}
    return {
        "outcome": str(row.get("outcome")),
        "action": decision.get("action"),
        "tier": decision.get("tier"),
        "approved": int(approval.get("answer") == "approved"),
    }


def _set_rules(tx: Transaction, seq: int, rules: list[str]) -> None:
    tx.execute("DELETE FROM call_rules WHERE seq = ?", (seq,))
    for rule in dict.fromkeys(rules):
        tx.execute("INSERT INTO call_rules (rule, seq) VALUES (?, ?)", (rule, seq))


def _task_of(tx: Transaction, trace_id: str | None) -> str | None:
    if not trace_id:
        return None
    found = tx.execute("SELECT id FROM tasks WHERE trace_id = ?", (trace_id,)).fetchone()
    return str(found["id"]) if found else None


def _approval_trace(tx: Transaction, row: JSONObject) -> str | None:
    """An approval row's trace: its request's call's (the request is written just before the call's own row, so
    it may wait, under trace '', for that call to be indexed: ``_adopt``), and the settlement follows the
    request by approval id."""
    detail = row.get("detail") or {}
    approval_id, call_id = detail.get("approval_id"), detail.get("call_id")
    if detail.get("action") == "request" and call_id:
        found = tx.execute("SELECT trace_id FROM calls WHERE call_id = ?", (call_id,)).fetchone()
    else:
        found = tx.execute(
            "SELECT trace_id FROM trace_steps WHERE approval_id = ? ORDER BY seq LIMIT 1", (approval_id,)
        ).fetchone()
        call_id = None
    trace_id = (found["trace_id"] if found else None) or ""
    tx.execute(
        "INSERT INTO trace_steps (trace_id, seq, approval_id, call_id) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
        (trace_id, row["seq"], approval_id, call_id),
    )
    return trace_id or None


def _adopt(tx: Transaction, call_id: str, trace_id: str) -> None:
    """Approval rows written before their call was indexed join its trace."""
    waiting = tx.execute(
        "SELECT seq, approval_id FROM trace_steps WHERE trace_id = '' AND call_id = ?", (call_id,)
    ).fetchall()
    for step in waiting:
        tx.execute(
            "UPDATE trace_steps SET trace_id = ? WHERE trace_id = '' AND (seq = ? OR approval_id = ?)",
            (trace_id, step["seq"], step["approval_id"]),
        )


def _rollback_trace(tx: Transaction, row: JSONObject) -> str | None:
    """A rollback's trace: that of the call that took its checkpoint."""
    checkpoint = (row.get("detail") or {}).get("checkpoint")
    found = tx.execute(
        "SELECT c.trace_id FROM checkpoints k JOIN calls c ON c.call_id = k.call_id WHERE k.id = ?", (checkpoint,)
    ).fetchone()
    if found and found["trace_id"]:
        tx.execute(
            "INSERT INTO trace_steps (trace_id, seq) VALUES (?, ?) ON CONFLICT DO NOTHING",
            (found["trace_id"], row["seq"]),
        )
        return str(found["trace_id"])
    return None


def _ensure_trace(tx: Transaction, trace_id: str, row: JSONObject) -> None:
    tx.execute(
        "INSERT INTO trace_summaries (trace_id, first_seq, last_seq, first, last) VALUES (?, ?, ?, ?, ?) "
        "ON CONFLICT DO NOTHING",
        (trace_id, row["seq"], row["seq"], row["time"], row["time"]),
    )


def _touch_trace(tx: Transaction, trace_id: str, row: JSONObject) -> None:
    """A row of the trace: its span grows to it; a side effect (a merge, a rollback) is added to its list."""
    _ensure_trace(tx, trace_id, row)
    tx.execute(
        "UPDATE trace_summaries SET first_seq = CASE WHEN ? < first_seq THEN ? ELSE first_seq END, "
        "last_seq = CASE WHEN ? > last_seq THEN ? ELSE last_seq END, "
        "first = CASE WHEN ? < first THEN ? ELSE first END, last = CASE WHEN ? > last THEN ? ELSE last END "
        "WHERE trace_id = ?",
        (*[row["seq"]] * 4, *[row["time"]] * 4, trace_id),
    )
    effect = side_effect(_step_name(row), row.get("detail") or {})
    if effect:
        kept = one_row(tx.execute("SELECT side_effects FROM trace_summaries WHERE trace_id = ?", (trace_id,)))
        effects = json.loads(kept["side_effects"] or "[]")
        marked = f"{row['seq']}:{effect}"
        if marked not in effects:
            effects.append(marked)
            tx.execute(
                "UPDATE trace_summaries SET side_effects = ? WHERE trace_id = ?", (json.dumps(effects), trace_id)
            )


def _step_name(row: JSONObject) -> str:
    kind = row.get("kind")
    detail = row.get("detail") or {}
    if kind == "rollback":
        return "rollback"
    if kind in ("task", "intent"):
        return str(row.get("tool") or kind)
    return f"{kind}.{detail.get('action')}"


def _count(tx: Transaction, trace_id: str, dry: bool, old: str | None, new: str, unknown: bool) -> None:
    """A new call of the trace."""
    tx.execute(
        "UPDATE trace_summaries SET calls = calls + 1, dry_runs = dry_runs + ?, unknown = unknown + ? "
        "WHERE trace_id = ?",
        (int(dry), int(unknown), trace_id),
    )
    _recount(tx, trace_id, old, new, False, False)


def _recount(tx: Transaction, trace_id: str, old: str | None, new: str, was_unknown: bool, unknown: bool) -> None:
    """A call of the trace that ended otherwise than it stood: its counts follow."""
    delta = {
        column: int(new in outcomes) - int(old in outcomes)
        for column, outcomes in (("refused", REFUSED), ("asked", ("asked",)), ("errors", ("error",)))
    }
    delta["unknown"] = int(unknown) - int(was_unknown)
    if any(delta.values()):
        tx.execute(
            "UPDATE trace_summaries SET refused = refused + ?, asked = asked + ?, errors = errors + ?, "
            "unknown = unknown + ? WHERE trace_id = ?",
            (delta["refused"], delta["asked"], delta["errors"], delta["unknown"], trace_id),
        )


def side_effect(name: str, detail: JSONObject) -> str | None:
    """A step's lasting effect in a few words (a merge commit, a tag, a push, a revert, a quarantine, a
    rollback), or None."""
    outcome = detail.get("outcome") or {}
    if name == "intent.committed":
        if outcome.get("merge_commit"):
            return f"merge {str(outcome['merge_commit'])[:12]}"
        if outcome.get("tag"):
            return f"tag {str(outcome['tag'])[:60]}"
        if outcome.get("pushed"):
            return f"push {str(outcome['pushed'])[:60]}"
        return "upstream commit"
    if name == "intent.compensated":
        return f"revert {str(outcome.get('revert_commit') or '?')[:12]}"
    if name == "intent.failed":
        return "commit failed"
    if name == "task.quarantine":
        return f"quarantined {str(detail.get('task_id'))[:40]}"
    if name == "rollback":
        return f"rollback {str(detail.get('checkpoint'))[:40]}"
    return None
