"""The ledger: append-only, hash-chained; any edit is found and named."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gateway.ledger.chain import GENESIS, Ledger, Seal, canonical_json, chain_hash
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


# --- authentication: a ledger an agent cannot rewrite ------------------------------------------------


def sealed_at(tmp_path: Path, key: bytes = b"k" * 32) -> Ledger:
    state = tmp_path / "state"
    return Ledger(Database.open(state / "gateway.db"), Seal(key, state / "ledger.head"))


def rewrite(ledger: Ledger, keep: Callable[[dict[str, Any]], bool], edit: Callable[[dict[str, Any]], None]) -> None:
    """What someone with write access to the store but not the key can do: edit or drop rows, renumber
    them and recompute every hash so the chain links up again."""
    rows = [json.loads(r["body"]) for r in ledger.db.query("SELECT body FROM ledger ORDER BY seq")]
    kept = [body for body in rows if keep(body)]
    macs = {r["seq"]: r["mac"] for r in ledger.db.query("SELECT seq, mac FROM ledger")}
    with ledger.db.transaction() as tx:
        tx.execute("DELETE FROM ledger")
        prev = GENESIS
        for seq, body in enumerate(kept, start=1):
            original = body["seq"]
            body.update(seq=seq, prev_hash=prev)
            edit(body)
            digest_ = chain_hash(body)
            tx.execute(
                "INSERT INTO ledger (seq, body, prev_hash, hash, mac) VALUES (?, ?, ?, ?, ?)",
                (seq, canonical_json(body), prev, digest_, macs[original]),
            )
            prev = digest_


def test_a_rewritten_and_rehashed_ledger_fails_authentication(tmp_path: Path) -> None:
    ledger = sealed_at(tmp_path)
    for outcome in ["ok", "denied", "ok", "ok"]:
        ledger.append({"tool": "shell_run", "outcome": outcome})
    assert ledger.verify().ok and ledger.verify().authenticated

    def hide_denial(body: dict[str, Any]) -> None:
        if body["outcome"] == "denied":
            body["outcome"] = "ok"

    rewrite(ledger, keep=lambda body: True, edit=hide_denial)
    report = ledger.verify()
    assert not report.ok and report.first_bad == 2 and "HMAC" in (report.reason or "")


def test_deleted_and_renumbered_rows_fail_authentication(tmp_path: Path) -> None:
    ledger = sealed_at(tmp_path)
    for outcome in ["ok", "denied", "ok", "ok"]:
        ledger.append({"tool": "shell_run", "outcome": outcome})
    rewrite(ledger, keep=lambda body: body["outcome"] != "denied", edit=lambda body: None)
    report = ledger.verify()
    assert not report.ok and report.first_bad == 2 and "HMAC" in (report.reason or "")


def test_cutting_off_the_newest_rows_is_found(tmp_path: Path) -> None:
    ledger = sealed_at(tmp_path)
    for outcome in ["ok", "ok", "denied", "denied"]:
        ledger.append({"tool": "shell_run", "outcome": outcome})
    with ledger.db.transaction() as tx:
        tx.execute("DELETE FROM ledger WHERE seq > 2")
    report = ledger.verify()
    assert not report.ok and "cut off" in (report.reason or "") and report.first_bad == 3


def test_a_forged_head_or_a_wrong_key_fails(tmp_path: Path) -> None:
    ledger = sealed_at(tmp_path)
    for _ in range(3):
        ledger.append({"outcome": "ok"})
    assert not sealed_at(tmp_path, key=b"x" * 32).verify().ok
    head = json.loads((tmp_path / "state" / "ledger.head").read_text())
    (tmp_path / "state" / "ledger.head").write_text(json.dumps({**head, "seq": 1}))
    report = ledger.verify()
    assert not report.ok and "fails authentication" in (report.reason or "")


def test_rows_written_before_authentication_stay_readable(tmp_path: Path) -> None:
    """An older store (no HMACs) verifies as a plain chain; rows appended since are authenticated."""
    path = tmp_path / "state" / "gateway.db"
    plain = Ledger(Database.open(path))
    for _ in range(3):
        plain.append({"outcome": "ok"})
    sealed = sealed_at(tmp_path)
    before = sealed.verify()
    assert before.ok and not before.authenticated and before.legacy == 3
    sealed.append({"outcome": "ok"})
    after = sealed.verify()
    assert after.ok and after.authenticated and after.legacy == 3 and after.checked == 4
    with sealed.db.transaction() as tx:  # a legacy row set to look authenticated changes nothing ...
        tx.execute("UPDATE ledger SET mac = NULL WHERE seq = 4")  # ... but stripping a new row's HMAC is found
    assert not sealed.verify().ok


def test_the_head_moves_forward_only_across_processes(tmp_path: Path) -> None:
    path = tmp_path / "state" / "gateway.db"
    Database.open(path)

    def writer() -> None:
        ledger = Ledger(Database(path), Seal(b"k" * 32, tmp_path / "state" / "ledger.head"))
        for _ in range(25):
            ledger.append({"outcome": "ok"})

    threads = [threading.Thread(target=writer) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    report = sealed_at(tmp_path).verify()
    assert report.ok and report.authenticated and report.checked == 100
    assert json.loads((tmp_path / "state" / "ledger.head").read_text())["seq"] == 100
