"""The review at scale: a ledger of N recorded calls, then every kind of page, filter, export and trace query on it.

    .venv/bin/python bench/bench_review.py 1000000                  # load a million calls, then time the queries
    .venv/bin/python bench/bench_review.py 1000000 --store /tmp/big.db --keep    # keep the store for another run
    .venv/bin/python bench/bench_review.py 0 --store /tmp/big.db    # time the queries on a kept store again
    .venv/bin/python bench/bench_review.py 0 --store /tmp/big.db --reindex   # build the index again, then time
    .venv/bin/python bench/bench_review.py 1000000 --postgresql     # the same on PostgreSQL (a new cluster, kept)
    .venv/bin/python bench/bench_review.py 0 --postgresql DIR       # time the queries on that cluster again
    .venv/bin/python bench/bench_review.py 0 --postgresql --from-sqlite /tmp/big.db   # COPY a loaded store in

The loader (``load``) writes the ledger rows of N calls in bulk (SQLite: executemany, 20,000 rows a transaction;
PostgreSQL: COPY; not hash-chained: the review reads, it does not verify), then builds the review index over them
with the code a gateway runs on a ledger from before the index (``review_index.catch_up``: at 50,000 rows or more
``rebuild`` on PostgreSQL, ``index_row`` over the ledger into a scratch SQLite file then swapped in; else 2,000
rows a transaction in the store; ``--rebuild-from`` chooses), and says how fast each went. ``--from-sqlite``
copies a loaded SQLite store's ledger and index into PostgreSQL by COPY instead (the tables ``catch_up`` wrote).
The PostgreSQL server is tests/pg.py's (Debian's binaries, PostgreSQL's default durability, a database ``review``),
its cluster under /dev/shm like the scratch SQLite store, VACUUM ANALYZE run after a load (as autovacuum would).
The calls: 40 agents in 5 roles, sessions of 200 calls, tools and outcomes in a fixed mix (reads allowed, writes
outside the task denied, commands asking, malformed calls invalid), one call in ten with a write-ahead "started"
row before its final row, 1 % unknown-tool calls each in a trace of its own (grouped as noise), 2 % dry runs
(kind "check"), one call every 2.5 s from 2026-10-01.

Then each query runs ``--repeat`` times, interleaved (query A, B, ... then again), on one ``Traces`` as the web
app keeps it (the code /ui and ``gateway trace list`` run), and the median and the slowest wall time are printed
with the median CPU time of this process and, on PostgreSQL, of the server's: the calls page with each filter,
deep pages by offset and by keyset, the outcome tabs' counts, an export (the rows and their CSV), the trace list,
one trace, one call. Run by hand: no test asserts on these numbers (tests/test_traces.py checks plans and rows
read; tests/test_review_stores.py that both stores answer every query here alike).
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import structlog

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from gateway.store.interface import Store  # noqa: E402
from gateway.store.repositories.review_index import DERIVED  # noqa: E402

SHM = Path("/dev/shm")  # memory, not the disk: the figures are the queries' cost, not the disk's

AGENTS = [f"agent-{i:02d}" for i in range(40)]
ROLES = ["developer", "worker", "reviewer", "headless", "planner"]
START = datetime(2026, 10, 1, tzinfo=UTC)
SESSION = 200  # calls a session trace holds
# (weight, tool, action, tier, outcome, rule, reason): what one call of the mix decided and how it ended
MIX: list[tuple[int, str, str | None, int | None, str, str, str]] = [
    (35, "fs_read", "allow", 1, "ok", "tiers.read", "reads inside the workspace"),
    (8, "fs_edit", "allow", 2, "ok", "tiers.write", "modifies files inside the workspace"),
    (6, "fs_write", "deny", 3, "denied", "paths.out_of_scope", "writes outside the task's allowed paths"),
    (16, "shell_run", "allow", 2, "ok", "tiers.command", "runs a command inside the sandbox"),
    (4, "shell_run", "allow", 2, "error", "tiers.command", "runs a command inside the sandbox"),
    (5, "shell_run", "ask", 3, "asked", "tiers.network", "contacts other hosts: example.com (curl)"),
    (3, "shell_run", "deny", 3, "denied", "secrets.env_file", "touches secrets or credentials: .env"),
    (6, "git_status", "allow", 1, "ok", "tiers.read", "reads the repository"),
    (3, "fs_read", None, None, "invalid", "gateway.invalid_arguments", "path escapes the workspace"),
]
WEIGHTS = [m[0] for m in MIX]


def call_rows(i: int, seq: int) -> tuple[list[dict[str, Any]], str]:
    """The ledger rows of call ``i`` (from ``seq``) and its trace id: deterministic, no randomness."""
    agent = AGENTS[(i // SESSION) % len(AGENTS)]
    role = ROLES[AGENTS.index(agent) % len(ROLES)]
    trace_id = f"s{i // SESSION:031x}"
    kind = "call"
    if i % 100 == 37:  # an unknown tool, in a trace of its own
        tool, action, tier, outcome, rule, reason = "fs_raed", None, None, "invalid", "gateway.unknown_tool", ""
        trace_id = f"u{i:031x}"
    else:
        pick = (i * 7919) % sum(WEIGHTS)
        for weight, *chosen in MIX:
            if pick < weight:
                tool, action, tier, outcome, rule, reason = chosen  # type: ignore[assignment]
                break
            pick -= weight
        if i % 50 == 11:  # a dry run: gateway check, a trace of its own
            kind, trace_id = "check", f"c{i:031x}"
    time_ = (START + timedelta(seconds=2.5 * i)).isoformat(timespec="microseconds")
    decision = {"action": action, "tier": tier, "rules": [rule], "reasons": [reason]} if action else None
    detail = {} if decision else {"error": {"code": rule.split(".", 1)[1], "message": reason or "no such tool"}}
    final = {
        "seq": seq,
        "time": time_,
        "kind": kind,
        "call_id": f"{i:032x}",
        "trace_id": trace_id,
        "span_id": f"{i:016x}",
        "principal": {"agent": agent, "role": role, "task": None},
        "tool": tool,
        "arguments_digest": f"sha256:{i:064x}",
        "effects": {"reads": ["README.md"]} if tool == "fs_read" else {},
        "decision": decision,
        "outcome": outcome,
        "detail": detail,
        "intent_id": None,
        "prev_hash": "x",
    }
    if i % 10 == 3 and kind == "call" and decision:  # the write-ahead row of a call that ran
        return [{**final, "outcome": "started", "detail": {}}, {**final, "seq": seq + 1}], trace_id
    return [final], trace_id


LEDGER_COLUMNS = "seq, body, prev_hash, hash, mac"


def ledger_rows(first: int, calls: int, seq: int) -> Iterator[tuple[int, str, str, str, None]]:
    """The ledger rows of calls ``first`` .. ``first + calls - 1``, the first at ``seq + 1``, as stored."""
    for i in range(first, first + calls):
        rows, _ = call_rows(i, seq + 1)
        for row in rows:
            yield row["seq"], json.dumps(row, separators=(",", ":")), "x", "x", None
        seq += len(rows)


def load(target: Path | str, calls: int, rebuild_from: int | None = None) -> None:
    """N calls' ledger rows in bulk (SQLite: executemany, 20,000 rows a transaction; PostgreSQL: COPY), then the
    review index built over them as a gateway builds it."""
    began = time.perf_counter()
    if isinstance(target, Path):
        from gateway.store import SqliteStore

        SqliteStore.open(target)  # the schema, at this gateway's version
        conn = sqlite3.connect(target)
        seq = start = conn.execute("SELECT COALESCE(max(seq), 0) FROM ledger").fetchone()[0]
        first = conn.execute("SELECT count(*) FROM calls").fetchone()[0]
        rows = ledger_rows(first, calls, seq)
        while batch := list(itertools.islice(rows, 20_000)):
            conn.executemany(f"INSERT INTO ledger ({LEDGER_COLUMNS}) VALUES (?, ?, ?, ?, ?)", batch)
            conn.commit()
        seq = conn.execute("SELECT COALESCE(max(seq), 0) FROM ledger").fetchone()[0]
        conn.close()
    else:
        import psycopg

        with psycopg.connect(target) as conn:
            seq = start = conn.execute("SELECT COALESCE(max(seq), 0) FROM ledger").fetchone()[0]  # type: ignore[index]
            first = conn.execute("SELECT count(*) FROM calls").fetchone()[0]  # type: ignore[index]
            with conn.cursor().copy(f"COPY ledger ({LEDGER_COLUMNS}) FROM STDIN") as copy:
                for row in ledger_rows(first, calls, seq):
                    copy.write_row(row)
            seq = conn.execute("SELECT COALESCE(max(seq), 0) FROM ledger").fetchone()[0]  # type: ignore[index]
    wrote = time.perf_counter() - began
    print(f"ledger: {calls:,} calls ({seq - start:,} rows) written in {wrote:.1f} s", file=sys.stderr)
    reindex(target, rebuild_from)


def open_store(target: Path | str, **sqlite: Any) -> Store:
    from gateway.store import SqliteStore
    from gateway.store.postgres import PostgresStore

    return SqliteStore(target, **sqlite) if isinstance(target, Path) else PostgresStore(target)


def reindex(target: Path | str, rebuild_from: int | None = None) -> None:
    """The review index built again from the store's ledger rows (the derived tables emptied, the cursor at 0), as
    a gateway builds it (``review_index.catch_up``: apart and swapped in from ``rebuild_from`` rows, by default on
    PostgreSQL only; else a batch of rows a transaction in the store)."""
    import structlog

    from gateway.store.repositories.review_index import CURSOR, catch_up

    structlog.configure(logger_factory=structlog.PrintLoggerFactory(sys.stderr))  # the rebuild's phases
    db = open_store(target, synchronous="OFF")
    with db.transaction() as tx:
        for table in DERIVED:
            tx.execute(f"DELETE FROM {table}")
        tx.execute("UPDATE cursors SET seq = 0 WHERE name = ?", (CURSOR,))
    began = time.perf_counter()
    indexed = catch_up(db, rebuild_from=rebuild_from)
    took = time.perf_counter() - began
    print(f"index: {indexed:,} rows indexed in {took:.1f} s ({indexed / max(took, 1e-9):,.0f} rows/s)", file=sys.stderr)
    if not isinstance(target, Path):
        vacuum(target)


def vacuum(url: str) -> None:
    """VACUUM ANALYZE, as autovacuum leaves a table that grew a row at a time: planner statistics and the
    visibility map (index-only scans) of a store loaded in bulk."""
    import psycopg

    began = time.perf_counter()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")
    print(f"vacuum analyze: {time.perf_counter() - began:.1f} s", file=sys.stderr)


def copy_from_sqlite(source: Path, url: str) -> None:
    """A loaded SQLite store's ledger and review index (rows as that store's catch_up wrote them) into an empty
    PostgreSQL store, by COPY: the same index as catch_up on PostgreSQL would write, in minutes, not hours."""
    import psycopg

    began = time.perf_counter()
    lite = sqlite3.connect(source)
    with psycopg.connect(url) as conn:
        conn.execute("DELETE FROM cursors WHERE name = 'review-index'")
        for table in ("ledger", *DERIVED, "cursors"):
            conn.execute(f"DELETE FROM {table}")  # type: ignore[arg-type]
            rows = lite.execute(f"SELECT * FROM {table}")
            columns = ", ".join(d[0] for d in rows.description)
            with conn.cursor().copy(f"COPY {table} ({columns}) FROM STDIN") as copy:  # type: ignore[arg-type]
                for row in rows:
                    copy.write_row(row)
    lite.close()
    print(f"copied from {source} in {time.perf_counter() - began:.1f} s", file=sys.stderr)
    vacuum(url)


def queries(target: Path | str) -> list[tuple[str, Callable[[], Any]]]:
    from gateway.traces import Filters, Traces
    from gateway.web.export import as_csv, decision_entry

    traces = Traces(open_store(target))
    newest = traces.page(size=1)
    calls = newest.outcomes.get("any", 0)
    deep = max(0, min(calls - 100, 500_000))
    before = traces.page(size=1, offset=deep, at=newest.at).calls[0].seq + 1 if calls else None
    first = START + timedelta(days=10 if calls > 500_000 else 0)  # a day the ledger covers (a call each 2.5 s)
    day = (first, first + timedelta(days=1))
    last = max(0, traces.page(Filters(agent="agent-07"), size=1).total - 100)  # agent-07's last page
    labels = {"app": "bench", "version": "0", "source": "bench"}
    session = "s" + f"{(calls // 2) // SESSION:031x}"

    def export() -> str:
        page = traces.page(Filters(agent="agent-07", since=day[0], until=day[1]), size=10_000)
        return as_csv([decision_entry(c, labels) for c in page.calls])

    return [
        ("calls page 1 (100, no filter)", lambda: traces.page(size=100)),
        ("agent=agent-07", lambda: traces.page(Filters(agent="agent-07"), size=100)),
        ("role=worker", lambda: traces.page(Filters(role="worker"), size=100)),
        ("tool=shell_run", lambda: traces.page(Filters(tool="shell_run"), size=100)),
        ("tier=3", lambda: traces.page(Filters(tier=3), size=100)),
        ("rule=paths (a prefix)", lambda: traces.page(Filters(rule="paths"), size=100)),
        ("outcome=denied", lambda: traces.page(Filters(outcome="denied"), size=100)),
        ("outcome=allowed", lambda: traces.page(Filters(outcome="allowed"), size=100)),
        ("outcome=approved (none)", lambda: traces.page(Filters(outcome="approved"), size=100)),
        ("from/to: one day", lambda: traces.page(Filters(since=day[0], until=day[1]), size=100)),
        (
            "agent+tool+outcome+day",
            lambda: traces.page(
                Filters(agent="agent-07", tool="shell_run", outcome="asked", since=day[0], until=day[1]), size=100
            ),
        ),
        ("dry runs shown (checks=1)", lambda: traces.page(Filters(checks=True), size=100)),
        (f"page at offset {deep:,} (page numbers)", lambda: traces.page(size=100, offset=deep, at=newest.at)),
        (f"the same page by keyset (before={before})", lambda: traces.page(size=100, at=newest.at, before=before)),
        ("last page of agent=agent-07", lambda: traces.page(Filters(agent="agent-07"), size=100, offset=last)),
        ("500 rows (the largest page)", lambda: traces.page(size=500)),
        ("export: agent-07, one day, CSV", export),
        ("export refused: count only (all calls)", lambda: traces.count(Filters())),
        ("trace list: first 500", lambda: traces.list(limit=500)),
        ("trace list: agent=agent-07, 500", lambda: traces.list(Filters(agent="agent-07"), limit=500)),
        ("trace list: unknown-tool noise count", traces.noise),
        ("one trace (200 calls)", lambda: traces.get(session)),
        ("one call", lambda: traces.call(f"{calls // 3:032x}")),
    ]


def answer(result: Any) -> Any:
    """What a query answered, in brief: a count, or how many rows."""
    if isinstance(result, int | tuple):
        return result
    return len(result.calls()) if hasattr(result, "calls") else len(result) if hasattr(result, "__len__") else "1"


Figure = tuple[str, float, float, float, float | None, Any]


def measure(target: Path | str, repeat: int) -> list[Figure]:
    """Each query's median wall ms, slowest wall ms, median CPU ms of this process and of the PostgreSQL server
    (its processes are this one's only children; None on SQLite; bench/proc_cpu.py, 10 ms ticks): what the query
    costs, whatever else the machine runs; and its answer."""
    from proc_cpu import descendants_seconds

    server = None if isinstance(target, Path) else functools.partial(descendants_seconds, os.getpid())
    timed = queries(target)
    walls: dict[str, list[float]] = {name: [] for name, _ in timed}
    cpus: dict[str, list[float]] = {name: [] for name, _ in timed}
    served: dict[str, list[float]] = {name: [] for name, _ in timed}
    shown: dict[str, Any] = {}
    for _ in range(repeat):
        for name, query in timed:
            used = server() if server else 0.0
            began, cpu = time.perf_counter(), time.process_time()
            result = query()
            walls[name].append((time.perf_counter() - began) * 1000)
            cpus[name].append((time.process_time() - cpu) * 1000)
            served[name].append(((server() if server else 0.0) - used) * 1000)
            shown[name] = result.total if hasattr(result, "total") else answer(result)
    return [
        (n, statistics.median(w), max(w), statistics.median(cpus[n]), server and statistics.median(served[n]), shown[n])
        for n, w in walls.items()
    ]


def postgres_cluster(root: Path | None) -> tuple[Any, str]:
    """A PostgreSQL server (tests/pg.py, durable: PostgreSQL's own defaults) and the URL of its database
    ``review`` at this gateway's schema: the cluster in ``root`` when it holds one, else a new one (under
    /dev/shm, like the SQLite store), its directory printed to be passed again."""
    sys.path.insert(0, str(ROOT / "tests"))
    from pg import PostgresServer, server_binaries

    from gateway.process import free_port
    from gateway.store.postgres import PostgresStore

    binaries = server_binaries()
    if binaries is None:
        sys.exit("PostgreSQL's server binaries are not installed (Debian: apt-get install postgresql)")
    if root is not None and (root / "data").is_dir():
        server = PostgresServer(binaries, root, free_port(), (root / "bench-password").read_text(), durable=True)
        server.restart()
    else:
        tempfile.tempdir = str(SHM) if SHM.is_dir() else None
        server = PostgresServer.start(binaries, durable=True)
        tempfile.tempdir = None  # the rebuild's scratch file goes where a gateway's would
        (server.root / "bench-password").write_text(server.password)
        server.admin("CREATE DATABASE review TEMPLATE gateway_template")
    print(f"postgresql: {server.root} (pass --postgresql {server.root} to use it again)", file=sys.stderr)
    url = server.url("review")
    PostgresStore(url).upgrade()
    return server, url


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("calls", type=int, help="calls to load (0: time the queries on the store as it is)")
    parser.add_argument("--store", type=Path, help="the SQLite store to load into (default: a scratch one)")
    parser.add_argument(
        "--postgresql",
        type=Path,
        nargs="?",
        const=Path(),
        metavar="DIR",
        help="PostgreSQL instead of SQLite: the cluster in DIR (kept), or a new one (without DIR)",
    )
    parser.add_argument("--from-sqlite", type=Path, help="with --postgresql: COPY this loaded SQLite store in")
    parser.add_argument("--keep", action="store_true", help="keep the scratch store (its path is printed)")
    parser.add_argument("--reindex", action="store_true", help="build the review index of the store again first")
    parser.add_argument(
        "--rebuild-from",
        type=int,
        metavar="ROWS",
        help="build the index apart from this many rows (the gateway's: 50,000 on PostgreSQL, never on SQLite; "
        "0: always; 10**12: never, a batch a transaction in the store)",
    )
    parser.add_argument("--repeat", type=int, default=5, help="timed runs of each query, interleaved")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    structlog.configure(logger_factory=structlog.PrintLoggerFactory(sys.stderr))  # the rebuild's phases
    server, scratch = None, None
    if args.postgresql is not None:
        server, target = postgres_cluster(args.postgresql if args.postgresql != Path() else None)
    else:
        scratch = (
            None if args.store else Path(tempfile.mkdtemp(prefix="bench-review-", dir=SHM if SHM.is_dir() else None))
        )
        target = args.store or Path(str(scratch)) / "gateway.db"
    try:
        if args.from_sqlite and isinstance(target, str):
            copy_from_sqlite(args.from_sqlite, target)
        if args.calls:
            load(target, args.calls, args.rebuild_from)
        elif args.reindex:
            reindex(target, args.rebuild_from)
        figures = measure(target, args.repeat)
    finally:
        if server is not None:
            server.stop()  # its cluster is kept
    if args.json:
        keys = ("query", "median_ms", "max_ms", "cpu_ms", "server_cpu_ms")
        print(json.dumps([{**dict(zip(keys, f[:5], strict=True)), "answer": str(f[5])} for f in figures]))
    else:
        print(
            f"{'query':48} {'median ms':>10} {'max ms':>8} {'CPU ms':>8} {'server':>8}  answer: calls matching, or rows"
        )
        for name, median, slowest, cpu, served, shown in figures:
            server_ms = "" if served is None else f"{served:.0f}"
            print(f"{name:48} {median:10.1f} {slowest:8.1f} {cpu:8.1f} {server_ms:>8}  {shown}")
    if args.keep or args.store:
        print(f"store: {target}", file=sys.stderr)
    elif scratch is not None:
        shutil.rmtree(scratch)


if __name__ == "__main__":
    main()
