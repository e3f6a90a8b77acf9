"""The ledger: append-only, hash-chained; any edit is found and named."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from gateway.ledger.chain import GENESIS, Ledger
from gateway.ledger.store import Database


def ledger_at(tmp_path: Path) -> Ledger:
    return Ledger(Database.open(tmp_path / "state" / "gateway.db"))


def test_events_chain_from_genesis(tmp_path: Path) -> None:
    ledger = ledger_at(tmp_path)
    first = ledger.append({"tool": "fs_read", "outcome": "ok"})
    second = ledger.append({"tool": "fs_write", "outcome": "denied"})
    assert first.seq == 1 and first.prev_hash == GENESIS
    assert second.seq == 2 and second.prev_hash == first.hash
    assert ledger.verify().ok


def test_edited_row_is_found(tmp_path: Path) -> None:
    ledger = ledger_at(tmp_path)
    for outcome in ["ok", "denied", "ok", "ok"]:
        ledger.append({"tool": "shell_run", "outcome": outcome})
    row = ledger.db.query("SELECT body FROM ledger WHERE seq = 2")[0]
    body = json.loads(row["body"])
    body["outcome"] = "ok"  # hide a denial
    with ledger.db.transaction() as tx:
        tx.execute("UPDATE ledger SET body = ? WHERE seq = 2", (json.dumps(body),))
    report = ledger.verify()
    assert not report.ok and report.first_bad == 2
    assert "hash" in (report.reason or "")


def test_deleted_row_is_found(tmp_path: Path) -> None:
    ledger = ledger_at(tmp_path)
    for _ in range(3):
        ledger.append({"outcome": "ok"})
    with ledger.db.transaction() as tx:
        tx.execute("DELETE FROM ledger WHERE seq = 2")
    report = ledger.verify()
    assert not report.ok and report.first_bad == 3


def test_rehashed_row_breaks_the_link(tmp_path: Path) -> None:
    """Recomputing one row's hash after an edit still breaks the next row's prev_hash link."""
    from gateway.ledger.chain import canonical_json, chain_hash

    ledger = ledger_at(tmp_path)
    for _ in range(3):
        ledger.append({"outcome": "ok"})
    body = json.loads(ledger.db.query("SELECT body FROM ledger WHERE seq = 2")[0]["body"])
    body["outcome"] = "error"
    with ledger.db.transaction() as tx:
        tx.execute("UPDATE ledger SET body = ?, hash = ? WHERE seq = 2", (canonical_json(body), chain_hash(body)))
    report = ledger.verify()
    assert not report.ok and report.first_bad == 3


def test_concurrent_appends_keep_one_chain(tmp_path: Path) -> None:
    path = tmp_path / "state" / "gateway.db"
    Database.open(path)

    def writer() -> None:
        ledger = Ledger(Database(path))
        for _ in range(25):
            ledger.append({"outcome": "ok"})

    threads = [threading.Thread(target=writer) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    report = Ledger(Database(path)).verify()
    assert report.ok and report.checked == 100
