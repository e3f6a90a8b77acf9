"""The ledger: an append-only, hash-chained, authenticated record of every decision and outcome.

Each event's hash covers its canonical JSON and the previous event's hash, so editing, inserting or
deleting any row breaks the chain from that row on; ``verify`` names the first bad one. A chain alone can
be recomputed by whoever can write the store, so each row also carries an HMAC under a key in the state
dir (``Seal``), which no command an agent runs can read: rewriting rows and recomputing their hashes is
found too. The seal also keeps the newest row's seq and hash in a head file beside the store, updated
after every commit, so cutting rows off the end of the ledger is found as well. The head is made once,
together with the key (``begin_authentication``), and never remade: with the key there, a missing head is
a removed head, so stripping every HMAC, wiping the ledger or cutting it short and deleting the head all
fail verification. What the head cannot show is a copy of an older head put back together with a ledger
cut back to that point: keep the head (or its seq) where whoever can write the state dir cannot, if that
matters (docs/sandbox.md).

    ledger = Ledger(db, Seal(key, state_dir / "ledger.head"))
    ledger.begin_authentication()   # once, when the key is made: rows before it stay legacy (unauthenticated)
    event = ledger.append({"kind": "call", "tool": "fs_read", "outcome": "ok", ...})
    report = ledger.verify()   # VerifyReport(ok=True, checked=..., first_bad=None, reason=None)
"""

from __future__ import annotations

import fcntl
import hashlib
import hmac
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from gateway.digests import canonical_json
from gateway.store import Store, Transaction, open_store
from gateway.store.repositories import ledger as rows
from gateway.store.repositories.review_index import index_row
from gateway.types import JSONObject
from gateway.unicode import escaped_value

if TYPE_CHECKING:
    from gateway.config import GatewayConfig

GENESIS = "0" * 64
HEAD_BYTES = 512  # the head file's one record, padded with spaces


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


class LedgerEvent(BaseModel):
    """One ledger row. ``kind`` says what it records: a tool call, an approval, a task or intent step."""

    model_config = ConfigDict(extra="forbid")

    seq: int
    time: str
    kind: str = "call"
    call_id: str | None = None
    trace_id: str | None = None
    span_id: str | None = None
    principal: JSONObject | None = None
    tool: str | None = None
    arguments_digest: str | None = None
    effects: JSONObject | None = None
    decision: JSONObject | None = None
    outcome: str
    detail: JSONObject = Field(default_factory=dict)
    intent_id: str | None = None
    prev_hash: str
    hash: str

    def body(self) -> JSONObject:
        return self.model_dump(exclude={"hash"})


def chain_hash(body: JSONObject) -> str:
    return hashlib.sha256(canonical_json(body).encode()).hexdigest()


@dataclass(frozen=True)
class VerifyReport:
    ok: bool
    checked: int
    first_bad: int | None = None
    reason: str | None = None
    authenticated: bool = False  # every row after the legacy ones carried a valid HMAC, and the head matched
    legacy: int = 0  # rows written before the ledger was authenticated (hash-chained only)


@dataclass(frozen=True)
class Head:
    seq: int
    hash: str
    legacy_through: int  # rows up to this seq were written before authentication: no HMAC


class Seal:
    """The ledger's authentication: HMACs under a key agents cannot reach, and the authenticated head.

    The head file holds the newest committed row (seq, hash) and its own HMAC; it only moves forward, under
    a file lock, so several gateway processes appending to one store keep it right.
    """

    def __init__(self, key: bytes, head_path: Path) -> None:
        self.key = key
        self.head_path = head_path

    def mac(self, seq: int, row_hash: str) -> str:
        return hmac.new(self.key, f"row:{seq}:{row_hash}".encode(), hashlib.sha256).hexdigest()

    def head(self) -> Head | None:
        """The authenticated head, None when there is none yet; raises ValueError when it was tampered with."""
        try:
            raw = json.loads(self.head_path.read_text())
        except FileNotFoundError:
            return None
        except (OSError, json.JSONDecodeError) as exc:
            raise ValueError(f"the ledger head {self.head_path} is unreadable: {exc}") from None
        head = Head(int(raw["seq"]), str(raw["hash"]), int(raw["legacy_through"]))
        if not hmac.compare_digest(str(raw.get("mac", "")), self._head_mac(head)):
            raise ValueError(f"the ledger head {self.head_path} fails authentication")
        return head

    def begin(self, seq: int, row_hash: str, legacy_through: int) -> bool:
        """Make the head at (seq, hash), the rows up to ``legacy_through`` unauthenticated; False when there
        is one already (another process began first)."""
        try:
            fd = os.open(self.head_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            self._write(fd, Head(seq, row_hash, legacy_through))
        finally:
            os.close(fd)
        return True

    def advance(self, seq: int, row_hash: str) -> None:
        """Move the head to (seq, hash) unless it already stands further on. A missing head stays missing:
        remade here, it would vouch for whatever the store holds now (``verify`` reports it instead)."""
        try:
            fd = os.open(self.head_path, os.O_RDWR)
        except FileNotFoundError:
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                stored = json.loads(os.read(fd, 4096))
                if int(stored["seq"]) >= seq:
                    return
                legacy_through = int(stored["legacy_through"])
            except (ValueError, KeyError, TypeError):
                return  # unreadable: verify reports it; writing over it would hide what was there
            self._write(fd, Head(seq, row_hash, legacy_through))
        finally:
            os.close(fd)  # closing releases the lock

    def _write(self, fd: int, head: Head) -> None:
        data = json.dumps({**head.__dict__, "mac": self._head_mac(head)}).encode()
        # one fixed-size record written in place: no truncation (a metadata update on every append)
        os.pwrite(fd, data.ljust(HEAD_BYTES), 0)

    def _head_mac(self, head: Head) -> str:
        message = f"head:{head.seq}:{head.hash}:{head.legacy_through}".encode()
        return hmac.new(self.key, message, hashlib.sha256).hexdigest()


class Ledger:
    def __init__(self, db: Store, seal: Seal | None = None) -> None:
        self.db = db
        self.seal = seal

    def append(self, fields: JSONObject) -> LedgerEvent:
        """Append one event; the write is committed before this returns."""
        with self.db.transaction() as tx:
            return self.append_in(tx, fields)

    def append_in(self, tx: Transaction, fields: JSONObject) -> LedgerEvent:
        """Append inside a caller's transaction, so a state change and its event commit together. Text that
        is not valid Unicode (a lone surrogate a request carried) is recorded escaped, never dropped."""
        try:
            return self._append_in(tx, fields)
        except UnicodeEncodeError:  # raised by the hash, before anything is written
            return self._append_in(tx, escaped_value(fields))

    def _append_in(self, tx: Transaction, fields: JSONObject) -> LedgerEvent:
        last = rows.head_in(tx)
        seq, prev = (last.seq + 1, last.hash) if last is not None else (1, GENESIS)
        body = {"time": utc_now(), **fields, "seq": seq, "prev_hash": prev}
        unhashed = LedgerEvent.model_validate({**body, "hash": ""})
        body = unhashed.body()
        # the body is validated already: adding its hash needs no second validation
        event = unhashed.model_copy(update={"hash": chain_hash(body)})
        mac = self.seal.mac(seq, event.hash) if self.seal is not None else None
        rows.append(tx, rows.Stored(seq, canonical_json(body), prev, event.hash, mac))
        index_row(tx, body)  # the review's index of calls and traces commits with the row
        if self.seal is not None:
            self.db.after_commit(lambda: self._advance(seq, event.hash))
        return event

    def _advance(self, seq: int, row_hash: str) -> None:
        assert self.seal is not None
        self.seal.advance(seq, row_hash)

    def begin_authentication(self) -> bool:
        """Make the authenticated head at the newest row: the rows so far without an HMAC (written before
        the ledger had a key) stay legacy. Called once, when the key is made; False if a head exists."""
        assert self.seal is not None, "a ledger without a key has nothing to authenticate with"
        last = rows.head(self.db)
        seq, row_hash = (last.seq, last.hash) if last is not None else (0, GENESIS)
        return self.seal.begin(seq, row_hash, rows.legacy_through(self.db))

    def verify(self) -> VerifyReport:
        """Recompute the whole chain and every HMAC; report the first row whose content, link or
        authentication does not match, and a ledger cut short of its authenticated head."""
        try:
            head = self.seal.head() if self.seal is not None else None
        except ValueError as exc:
            return VerifyReport(False, 0, None, str(exc))
        if self.seal is not None and head is None:
            # made with the key, never remade: without it, HMACs stripped or rows cut off cannot be ruled out
            why = (
                f"the ledger key exists but its authenticated head {self.seal.head_path} is missing (removed?): "
                "rows stripped of their HMAC, wiped or cut off could not be found"
            )
            return VerifyReport(False, 0, None, why)
        legacy = head.legacy_through if head is not None else 0
        prev, checked, head_seen = GENESIS, 0, head is None or head.seq == 0
        for row in self._in_order():
            checked += 1
            bad = self._bad_row(row, checked, prev, head, legacy)
            if bad is not None:
                return VerifyReport(False, checked, row.seq, bad)
            head_seen = head_seen or (head is not None and row.seq == head.seq)
            prev = row.hash
        if not head_seen:
            assert head is not None
            why = f"the ledger ends at seq {checked}, before its authenticated head {head.seq}: rows were cut off"
            return VerifyReport(False, checked, checked + 1, why)
        authenticated = head is not None and (legacy == 0 or checked > legacy)
        return VerifyReport(True, checked, authenticated=authenticated, legacy=min(legacy, checked))

    def _in_order(self, page: int = 5000) -> Iterator[rows.Stored]:
        """Every row, oldest first, a page at a time: a long ledger is never held whole."""
        seq = 0
        while found := rows.page(self.db, seq, page):
            yield from found
            seq = found[-1].seq

    def _bad_row(self, row: rows.Stored, expected_seq: int, prev: str, head: Head | None, legacy: int) -> str | None:
        """Why one row breaks the chain or its authentication, or None."""
        seq = row.seq
        if seq != expected_seq:
            return f"sequence gap: expected {expected_seq}, found {seq}"
        try:
            body = json.loads(row.body)
        except json.JSONDecodeError:
            return "body is not valid JSON"
        if body.get("seq") != seq or body.get("prev_hash") != row.prev_hash:
            return "row columns disagree with the hashed body"
        if row.prev_hash != prev:
            return "prev_hash does not match the previous event's hash"
        if chain_hash(body) != row.hash:
            return "hash does not match the event's content"
        if (
            self.seal is not None
            and seq > legacy
            and not hmac.compare_digest(row.mac or "", self.seal.mac(seq, row.hash))
        ):
            return "HMAC does not authenticate the row (rewritten without the key)"
        if head is not None and seq == head.seq and row.hash != head.hash:
            return "the row at the authenticated head was replaced"
        return None

    def close_interrupted(self, alive: Callable[[str], bool]) -> list[str]:
        """Calls whose "started" row has no end, whose process is gone (``alive(process)`` is False): each
        gets an "interrupted" row, so a trace never shows a call running forever. Answers their call ids."""
        closed = []
        for body in rows.open_calls(self.db):
            started = json.loads(body)
            process = (started.get("detail") or {}).get("process")
            if process and alive(process):
                continue
            why = "the gateway stopped while this call ran; whether it took effect is not known"
            fields = {k: started.get(k) for k in ("kind", "call_id", "trace_id", "span_id", "principal", "tool")}
            fields.update(
                arguments_digest=started.get("arguments_digest"),
                decision=started.get("decision"),
                intent_id=started.get("intent_id"),
                outcome="interrupted",
                detail={"why": why, "started_seq": started["seq"], "process": process},
            )
            self.append(fields)
            closed.append(str(started.get("call_id")))
        return closed

    @classmethod
    def for_config(cls, config: GatewayConfig, db: Store | None = None) -> Ledger:
        """The ledger of a configured gateway: its store, sealed with the key in its state dir."""
        from gateway.identity.keys import KeyRing

        keys = KeyRing(config.keys_dir)
        new_key = not keys.has_secret("ledger")
        ledger = cls(db or open_store(config), Seal(keys.secret("ledger"), config.state / "ledger.head"))
        if new_key:
            ledger.begin_authentication()
        return ledger

    def since(self, seq: int, limit: int = 500) -> list[LedgerEvent]:
        """Events after ``seq``, oldest first: how a reader follows the ledger from its cursor."""
        return [_event(row) for row in rows.since(self.db, seq, limit)]

    def head_seq(self) -> int:
        return rows.head_seq(self.db)

    def events(self, where: str = "1=1", params: tuple[Any, ...] = (), limit: int = 1000) -> list[LedgerEvent]:
        """Events meeting ``where`` (a condition over the ledger's columns, as tests write it), newest first."""
        return [_event(row) for row in rows.matching(self.db, where, params, limit)]

    def of_kind(
        self, kind: str, trace_id: str | None = None, containing: str | None = None, limit: int = 1000
    ) -> list[LedgerEvent]:
        """Events of one kind, newest first: in one trace, and/or whose JSON contains a text (no % or _)."""
        return [_event(row) for row in rows.of_kind(self.db, kind, trace_id, containing, limit)]


def _event(row: rows.Stored) -> LedgerEvent:
    return LedgerEvent.model_validate({**json.loads(row.body), "hash": row.hash})
