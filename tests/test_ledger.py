"""The ledger: append-only, hash-chained; any edit is found and named."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gateway.config import GatewayConfig
from gateway.digests import canonical_json
from gateway.ledger.chain import GENESIS, Ledger, Seal, chain_hash
from gateway.store import Store, open_store

pytestmark = pytest.mark.both_stores

Opener = Callable[[], Store]


@pytest.fixture
def open_db(tmp_path: Path, store: str | None) -> Opener:
    """A new handle on the test's store at each call, as another process would open it: the SQLite file in
    tmp_path/state, or the test's PostgreSQL database."""
    raw = {"state_dir": "state", **({"store": store} if store else {})}
    config = GatewayConfig.from_mapping(raw, base=tmp_path)
    config.state.mkdir()  # the ledger's head file lives there on either store
    return lambda: open_store(config)


def ledger_at(open_db: Opener) -> Ledger:
    return Ledger(open_db())


def test_events_chain_from_genesis(open_db: Opener) -> None:
    ledger = ledger_at(open_db)
    first = ledger.append({"tool": "fs_read", "outcome": "ok"})
    second = ledger.append({"tool": "fs_write", "outcome": "denied"})
    assert first.seq == 1 and first.prev_hash == GENESIS
    assert second.seq == 2 and second.prev_hash == first.hash
    assert ledger.verify().ok


def test_edited_row_is_found(open_db: Opener) -> None:
    ledger = ledger_at(open_db)
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


def test_deleted_row_is_found(open_db: Opener) -> None:
    ledger = ledger_at(open_db)
    for _ in range(3):
        ledger.append({"outcome": "ok"})
    with ledger.db.transaction() as tx:
        tx.execute("DELETE FROM ledger WHERE seq = 2")
    report = ledger.verify()
    assert not report.ok and report.first_bad == 3


def test_rehashed_row_breaks_the_link(open_db: Opener) -> None:
    """Recomputing one row's hash after an edit still breaks the next row's prev_hash link."""
    ledger = ledger_at(open_db)
    for _ in range(3):
        ledger.append({"outcome": "ok"})
    body = json.loads(ledger.db.query("SELECT body FROM ledger WHERE seq = 2")[0]["body"])
    body["outcome"] = "error"
    with ledger.db.transaction() as tx:
        tx.execute("UPDATE ledger SET body = ?, hash = ? WHERE seq = 2", (canonical_json(body), chain_hash(body)))
    report = ledger.verify()
    assert not report.ok and report.first_bad == 3


def test_concurrent_appends_keep_one_chain(open_db: Opener) -> None:
    open_db()

    def writer() -> None:
        ledger = Ledger(open_db())
        for _ in range(25):
            ledger.append({"outcome": "ok"})

    threads = [threading.Thread(target=writer) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    report = Ledger(open_db()).verify()
    assert report.ok and report.checked == 100


# --- authentication: a ledger an agent cannot rewrite ------------------------------------------------


def sealed_at(open_db: Opener, tmp_path: Path, key: bytes = b"k" * 32) -> Ledger:
    """A ledger with a key, its head made as when the key is made (a second call finds it made)."""
    ledger = Ledger(open_db(), Seal(key, tmp_path / "state" / "ledger.head"))
    ledger.begin_authentication()
    return ledger


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


def test_a_rewritten_and_rehashed_ledger_fails_authentication(open_db: Opener, tmp_path: Path) -> None:
    ledger = sealed_at(open_db, tmp_path)
    for outcome in ["ok", "denied", "ok", "ok"]:
        ledger.append({"tool": "shell_run", "outcome": outcome})
    assert ledger.verify().ok and ledger.verify().authenticated

    def hide_denial(body: dict[str, Any]) -> None:
        if body["outcome"] == "denied":
            body["outcome"] = "ok"

    rewrite(ledger, keep=lambda body: True, edit=hide_denial)
    report = ledger.verify()
    assert not report.ok and report.first_bad == 2 and "HMAC" in (report.reason or "")


def test_deleted_and_renumbered_rows_fail_authentication(open_db: Opener, tmp_path: Path) -> None:
    ledger = sealed_at(open_db, tmp_path)
    for outcome in ["ok", "denied", "ok", "ok"]:
        ledger.append({"tool": "shell_run", "outcome": outcome})
    rewrite(ledger, keep=lambda body: body["outcome"] != "denied", edit=lambda body: None)
    report = ledger.verify()
    assert not report.ok and report.first_bad == 2 and "HMAC" in (report.reason or "")


def test_cutting_off_the_newest_rows_is_found(open_db: Opener, tmp_path: Path) -> None:
    ledger = sealed_at(open_db, tmp_path)
    for outcome in ["ok", "ok", "denied", "denied"]:
        ledger.append({"tool": "shell_run", "outcome": outcome})
    with ledger.db.transaction() as tx:
        tx.execute("DELETE FROM ledger WHERE seq > 2")
    report = ledger.verify()
    assert not report.ok and "cut off" in (report.reason or "") and report.first_bad == 3


def test_a_forged_head_or_a_wrong_key_fails(open_db: Opener, tmp_path: Path) -> None:
    ledger = sealed_at(open_db, tmp_path)
    for _ in range(3):
        ledger.append({"outcome": "ok"})
    assert not sealed_at(open_db, tmp_path, key=b"x" * 32).verify().ok
    head = json.loads((tmp_path / "state" / "ledger.head").read_text())
    (tmp_path / "state" / "ledger.head").write_text(json.dumps({**head, "seq": 1}))
    report = ledger.verify()
    assert not report.ok and "fails authentication" in (report.reason or "")


def test_rows_written_before_authentication_stay_readable(open_db: Opener, tmp_path: Path) -> None:
    """An older store (no HMACs) verifies as a plain chain; rows appended since are authenticated."""
    plain = Ledger(open_db())
    for _ in range(3):
        plain.append({"outcome": "ok"})
    sealed = sealed_at(open_db, tmp_path)
    before = sealed.verify()
    assert before.ok and not before.authenticated and before.legacy == 3
    sealed.append({"outcome": "ok"})
    after = sealed.verify()
    assert after.ok and after.authenticated and after.legacy == 3 and after.checked == 4
    with sealed.db.transaction() as tx:  # a legacy row set to look authenticated changes nothing ...
        tx.execute("UPDATE ledger SET mac = NULL WHERE seq = 4")  # ... but stripping a new row's HMAC is found
    assert not sealed.verify().ok


def test_the_head_moves_forward_only_across_processes(open_db: Opener, tmp_path: Path) -> None:
    sealed_at(open_db, tmp_path)

    def writer() -> None:
        ledger = Ledger(open_db(), Seal(b"k" * 32, tmp_path / "state" / "ledger.head"))
        for _ in range(25):
            ledger.append({"outcome": "ok"})

    threads = [threading.Thread(target=writer) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    report = sealed_at(open_db, tmp_path).verify()
    assert report.ok and report.authenticated and report.checked == 100
    assert json.loads((tmp_path / "state" / "ledger.head").read_text())["seq"] == 100


# --- downgrades: what someone who can write the store and the head file (not read the key) tries -----


def strip_macs(ledger: Ledger, keep: Callable[[dict[str, Any]], bool] = lambda body: True) -> None:
    """Drop rows, re-hash the rest and set every HMAC to NULL: the ledger of a gateway before authentication."""
    rewrite(ledger, keep=keep, edit=lambda body: None)
    with ledger.db.transaction() as tx:
        tx.execute("UPDATE ledger SET mac = NULL")


def written(open_db: Opener, tmp_path: Path) -> Ledger:
    ledger = sealed_at(open_db, tmp_path)
    for outcome in ["ok", "denied", "ok", "ok", "denied", "ok"]:
        ledger.append({"tool": "fs_write", "outcome": outcome})
    assert ledger.verify().ok and ledger.verify().authenticated
    return ledger


def cut_and_remove_the_head(ledger: Ledger) -> Path:
    """What one who can write the state dir does to hide the newest rows: delete them and the head file."""
    with ledger.db.transaction() as tx:
        tx.execute("DELETE FROM ledger WHERE seq > 3")
    assert ledger.seal is not None
    ledger.seal.head_path.unlink()
    return ledger.seal.head_path


def test_cutting_rows_off_and_removing_the_head_is_found(open_db: Opener, tmp_path: Path) -> None:
    ledger = written(open_db, tmp_path)
    cut_and_remove_the_head(ledger)
    report = ledger.verify()
    assert not report.ok and "head" in (report.reason or "") and "missing" in (report.reason or "")


def test_stripping_every_hmac_and_removing_the_head_is_found(open_db: Opener, tmp_path: Path) -> None:
    ledger = written(open_db, tmp_path)
    strip_macs(ledger, keep=lambda body: body["outcome"] != "denied")
    assert ledger.seal is not None
    ledger.seal.head_path.unlink()
    report = ledger.verify()
    assert not report.ok and "missing" in (report.reason or "")


def test_stripping_hmacs_with_the_head_kept_is_found(open_db: Opener, tmp_path: Path) -> None:
    ledger = written(open_db, tmp_path)
    strip_macs(ledger)
    report = ledger.verify()
    assert not report.ok and report.first_bad == 1 and "HMAC" in (report.reason or "")


@pytest.mark.parametrize("head", ["kept", "removed"])
def test_a_wiped_ledger_is_found(open_db: Opener, tmp_path: Path, head: str) -> None:
    ledger = written(open_db, tmp_path)
    with ledger.db.transaction() as tx:
        tx.execute("DELETE FROM ledger")
    assert ledger.seal is not None
    if head == "removed":
        ledger.seal.head_path.unlink()
    report = ledger.verify()
    assert not report.ok and report.checked == 0
    assert ("cut off" if head == "kept" else "missing") in (report.reason or "")


def test_a_removed_head_is_not_remade_by_the_next_append(open_db: Opener, tmp_path: Path) -> None:
    """Remade on append, the head would vouch for a ledger cut short (or stripped) just before."""
    ledger = written(open_db, tmp_path)
    head = cut_and_remove_the_head(ledger)
    ledger.append({"tool": "fs_read", "outcome": "ok"})
    assert not head.exists()
    assert not ledger.verify().ok


def test_the_head_is_made_with_the_key_and_only_then(tmp_path: Path, store: str | None) -> None:
    """``for_config``: a new key begins authentication (older rows stay legacy); an existing key never
    makes a head again, so deleting the head cannot restart authentication over a rewritten store."""
    raw = {"state_dir": "state", **({"store": store} if store else {})}
    config = GatewayConfig.from_mapping(raw, base=tmp_path)
    config.state.mkdir()
    plain = Ledger(open_store(config))
    for _ in range(2):
        plain.append({"outcome": "ok"})  # a store from before authentication
    ledger = Ledger.for_config(config)
    assert ledger.seal is not None and ledger.seal.head_path.exists()
    report = ledger.verify()
    assert report.ok and report.legacy == 2 and not report.authenticated
    ledger.append({"outcome": "ok"})
    assert Ledger.for_config(config).verify().authenticated
    ledger.seal.head_path.unlink()
    again = Ledger.for_config(config)
    assert again.seal is not None and not again.seal.head_path.exists()
    assert not again.verify().ok
