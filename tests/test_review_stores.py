"""The review on either store: the same ledger gives the same index and the same answer to every query
bench/bench_review.py times (each page and filter, the deep pages, the counts, the export, the trace list, a
trace, a call), on SQLite and on PostgreSQL. Not timed: bench/ measures; here only the rows are compared."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any

import pytest
from pg import PostgresServer

import gateway.store.repositories.review_index as review_index
from gateway.store import SqliteStore

BENCH = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH))

import bench_review  # noqa: E402

CALLS = 1_500  # sessions of 200 calls: agents 0 to 7 (the bench's agent-07 has 100), every outcome of the mix


def plain(result: Any) -> Any:
    """A query's answer as plain data: pages, traces and calls by what they show."""
    if hasattr(result, "as_dict"):
        return result.as_dict()
    if is_dataclass(result) and not isinstance(result, type):
        return {k: plain(getattr(result, k)) for k in asdict(result)}
    if isinstance(result, list | tuple):
        return [plain(r) for r in result]
    if isinstance(result, dict):
        return {k: plain(v) for k, v in result.items()}
    return result


def index_tables(target: Path | str) -> dict[str, list[tuple[Any, ...]]]:
    store = bench_review.open_store(target)
    return {t: sorted((tuple(r) for r in store.query(f"SELECT * FROM {t}")), key=repr) for t in review_index.DERIVED}


def test_every_bench_query_answers_the_same_on_sqlite_and_postgresql(postgres: PostgresServer, tmp_path: Path) -> None:
    """The bench's ledger on both stores, indexed both ways a gateway indexes it: a batch of rows a transaction in
    the store (SQLite) and built apart and swapped in (``review_index.rebuild``, PostgreSQL's): the same index
    rows, and every query of the bench the same answer, row for row."""
    lite, url = tmp_path / "gateway.db", postgres.url(postgres.fresh_database())
    bench_review.load(lite, CALLS)  # SQLite: a batch of rows a transaction
    row_at_a_time = index_tables(lite)
    bench_review.load(url, CALLS, rebuild_from=1)  # the rebuild, on a ledger this small
    assert index_tables(url) == row_at_a_time
    answers = {str(t): [(name, plain(query())) for name, query in bench_review.queries(t)] for t in (lite, url)}
    ours, theirs = answers.values()
    assert [name for name, _ in ours] == [name for name, _ in theirs]
    for (name, sqlite_answer), (_, postgresql_answer) in zip(ours, theirs, strict=True):
        assert sqlite_answer == postgresql_answer, name
    shown = dict(ours)
    assert shown["calls page 1 (100, no filter)"]["total"] > 1_000 and shown["export: agent-07, one day, CSV"]
    pages = {k: v["total"] for k, v in shown.items() if isinstance(v, dict) and "total" in v}
    assert all(pages[k] for k in pages if k != "outcome=approved (none)"), pages


def test_rows_appended_while_the_index_is_built_apart_are_in_the_index_swapped_in(tmp_path: Path) -> None:
    """A rebuild reads the ledger up to its newest row, builds apart, then swaps; a call's final row appended
    meanwhile (its started row was built apart, its final row indexed by the append into the tables the swap
    empties) ends up indexed as a row-at-a-time catch-up indexes it; and a rebuild another process beat to the
    swap (the cursor moved) is dropped, changing nothing."""
    lite = tmp_path / "gateway.db"
    bench_review.load(lite, 300)
    store = SqliteStore(lite)
    seq = int(store.query("SELECT max(seq) AS s FROM ledger")[0]["s"])
    started, final = bench_review.call_rows(303, seq + 1)[0]  # call 303: a started row, then its final row
    append(store, started)
    real = review_index.index_row

    def appending(tx: Any, row: Any, advance: bool = True) -> None:
        if row["seq"] == 1:  # while the rebuild builds apart: another process appends the call's final row
            append(store, final)
        real(tx, row, advance)

    empty_index(store)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(review_index, "index_row", appending)
        review_index.catch_up(store, rebuild_from=1)
    apart = index_tables(lite)
    empty_index(store)
    review_index.catch_up(store)  # a batch a transaction, the same ledger
    assert index_tables(lite) == apart
    assert store.query("SELECT outcome FROM calls WHERE call_id = ?", (final["call_id"],))[0]["outcome"] == "ok"

    def beaten(tx: Any, row: Any, advance: bool = True) -> None:
        if row["seq"] == 1:
            with store.transaction() as other:
                other.execute("UPDATE cursors SET seq = 5 WHERE name = ?", (review_index.CURSOR,))
        real(tx, row, advance)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(review_index, "index_row", beaten)
        assert review_index.rebuild(store, seq) == 0
    assert index_tables(lite) == apart


def append(store: SqliteStore, row: dict[str, Any]) -> None:
    """A ledger row and its index, in one transaction, as ``Ledger.append_in`` writes them."""
    with store.transaction() as tx:
        tx.execute(
            "INSERT INTO ledger (seq, body, prev_hash, hash, mac) VALUES (?, ?, ?, ?, ?)",
            (row["seq"], json.dumps(row), "x", "x", None),
        )
        review_index.index_row(tx, row)


def empty_index(store: SqliteStore) -> None:
    with store.transaction() as tx:
        for table in review_index.DERIVED:
            tx.execute(f"DELETE FROM {table}")
        tx.execute("UPDATE cursors SET seq = 0 WHERE name = ?", (review_index.CURSOR,))
